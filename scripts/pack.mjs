// Packs the root package and the platform packages into tarballs ready to publish (it publishes nothing):
//   node scripts/pack.mjs [--out DIR] [--binary PLATFORM=FILE]... [PLATFORM...]      (or: npm run pack:all)
// With no PLATFORM, every package in npm/ is packed, each with the binary scripts/build-platform.sh put in its folder;
// `--binary` packs another file instead (scripts/check-install.sh packs the one `npm run build` made). Tarballs go to
// DIR (default dist/). It first checks what npm would not: that the root names every platform package at its own
// exact version, that the versions agree, and that the root tarball carries no binary.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const root = resolve(import.meta.dirname, '..');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { out: { type: 'string', default: join(root, 'dist') }, binary: { type: 'string', multiple: true, default: [] } },
});
const out = resolve(values.out);
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));
const pkg = readJson(join(root, 'package.json'));
const prefix = `${pkg.napi.packageName}-`;
const all = readdirSync(join(root, 'npm')).sort();
const platforms = positionals.length ? positionals : all;
const binaries = new Map(values.binary.map((pair) => pair.split(/=(.*)/s).slice(0, 2)));

const problems = [];
const expected = Object.fromEntries(all.map((p) => [`${prefix}${p}`, pkg.version]));
if (JSON.stringify(pkg.optionalDependencies) !== JSON.stringify(expected)) {
  problems.push(`package.json: optionalDependencies must be exactly ${JSON.stringify(expected)}`);
}
for (const p of platforms) {
  if (!all.includes(p)) {
    problems.push(`no package npm/${p} (there are: ${all.join(', ')})`);
    continue;
  }
  const sub = readJson(join(root, 'npm', p, 'package.json'));
  if (sub.name !== `${prefix}${p}` || sub.version !== pkg.version) {
    problems.push(`npm/${p}/package.json: must be ${prefix}${p}@${pkg.version}, is ${sub.name}@${sub.version}`);
  }
  const binary = binaries.get(p) ?? join(root, 'npm', p, sub.main);
  if (!existsSync(binary)) problems.push(`${binary} is missing: build it with \`npm run build:platform -- ${p}\``);
}
if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}

// `npm pack` of one folder, without lifecycle scripts (packing never builds); returns what npm reports of it.
function npmPack(dir) {
  const [report] = JSON.parse(execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], { cwd: dir, encoding: 'utf8' }));
  return report;
}

mkdirSync(out, { recursive: true });
const packed = [];
const rootReport = npmPack(root);
const stray = rootReport.files.map((f) => f.path).filter((path) => path.endsWith('.node'));
if (stray.length) throw new Error(`the root tarball must carry no binary, but has ${stray.join(', ')}`);
packed.push(rootReport);

for (const p of platforms) {
  // Staged in a scratch folder, so that npm/ keeps only what is committed and the binary built there.
  const stage = mkdtempSync(join(tmpdir(), `noetic-pack-${p}-`));
  try {
    const sub = readJson(join(root, 'npm', p, 'package.json'));
    copyFileSync(join(root, 'npm', p, 'package.json'), join(stage, 'package.json'));
    copyFileSync(join(root, 'npm', p, 'README.md'), join(stage, 'README.md'));
    copyFileSync(join(root, 'LICENSE'), join(stage, 'LICENSE'));
    copyFileSync(binaries.get(p) ?? join(root, 'npm', p, sub.main), join(stage, sub.main));
    packed.push(npmPack(stage));
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
for (const report of packed) {
  const size = statSync(join(out, report.filename)).size;
  console.log(`${join(out, report.filename)}  ${mb(size)} (unpacked ${mb(report.unpackedSize)}, ${report.entryCount} files)`);
}
