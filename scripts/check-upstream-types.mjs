// Compiles __test__/types/upstream/mix.ts, which checks this package's types against upstream's `@noetic-tools/types`
// both ways, against a checkout of upstream's packages/types (built: dist/index.d.ts, and its dependencies installed),
// and fails when a name both packages export is not compared there.
//
//   node scripts/check-upstream-types.mjs <upstream>/packages/types     (or NOETIC_UPSTREAM_TYPES=<that directory>)
//
// Without either it says so and succeeds: upstream's types package is not on npm, so CI has no copy of it (DECISIONS X1).
// The check runs in a scratch directory whose node_modules links upstream's package, its @openrouter/agent and
// @openrouter/sdk, and this package's zod, as one install of a program using both packages would have them.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const given = process.argv[2] ?? process.env.NOETIC_UPSTREAM_TYPES;
if (!given) {
  console.log('upstream types: not checked (pass the path of upstream\'s packages/types, or set NOETIC_UPSTREAM_TYPES)');
  process.exit(0);
}
const upstream = realpathSync(resolve(given));
const fail = (message) => {
  console.error(`upstream types: ${message}`);
  process.exit(1);
};
const manifest = JSON.parse(readFileSync(join(upstream, 'package.json'), 'utf8'));
if (manifest.name !== '@noetic-tools/types') fail(`${upstream} holds ${manifest.name}, not @noetic-tools/types`);
if (!existsSync(join(upstream, 'dist/index.d.ts'))) fail(`${upstream}/dist/index.d.ts is missing: build upstream's types package first`);

// Where a package resolves from a directory, as Node would find it.
function packageDir(from, name) {
  try {
    return dirname(realpathSync(createRequire(join(from, 'package.json')).resolve(`${name}/package.json`)));
  } catch {
    return fail(`${name} does not resolve from ${from}: install upstream's dependencies`);
  }
}
const agent = packageDir(upstream, '@openrouter/agent');
const sdk = packageDir(agent, '@openrouter/sdk');
const zod = packageDir(repo, 'zod');

const scratch = mkdtempSync(join(tmpdir(), 'noetic-upstream-types-'));
try {
  const modules = join(scratch, 'node_modules');
  for (const [name, target] of [['@noetic-tools/types', upstream], ['@openrouter/agent', agent], ['@openrouter/sdk', sdk], ['zod', zod]]) {
    mkdirSync(dirname(join(modules, name)), { recursive: true });
    symlinkSync(target, join(modules, name), 'dir');
  }
  const test = join(repo, '__test__/types/upstream/mix.ts');
  writeFileSync(
    join(scratch, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'es2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        // Upstream's declarations and the SDK's are not ours to check; ours are checked by `tsc -p __test__/types`.
        skipLibCheck: true,
        // Keeps upstream's files at their linked paths, so their imports resolve from the scratch node_modules.
        preserveSymlinks: true,
        types: [],
        paths: {
          '@noetic-tools/core': [join(repo, 'index.d.ts')],
          '@noetic-tools/core/unstable': [join(repo, 'js/unstable.d.ts')],
          '@noetic-tools/types': [join(modules, '@noetic-tools/types/dist/index.d.ts')],
          zod: [join(modules, 'zod/index.d.cts')],
        },
      },
      files: [test],
    }),
  );

  // Every name exported by both packages must be compared in mix.ts (as `Up.<name>`).
  const ts = createRequire(join(repo, 'package.json'))('typescript');
  const entries = {
    upstream: join(modules, '@noetic-tools/types/dist/index.d.ts'),
    ours: [join(repo, 'index.d.ts'), join(repo, 'js/unstable.d.ts'), join(repo, 'js/portable.d.ts')],
  };
  const program = ts.createProgram([entries.upstream, ...entries.ours], {
    noEmit: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    preserveSymlinks: true,
    paths: { '@noetic-tools/core': [join(repo, 'index.d.ts')] },
  });
  const checker = program.getTypeChecker();
  const exported = (file) => checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file))).map((s) => s.name);
  const ours = new Set(entries.ours.flatMap(exported));
  const shared = exported(entries.upstream).filter((name) => ours.has(name));
  const source = readFileSync(test, 'utf8');
  const missing = shared.filter((name) => !new RegExp(`\\bUp\\.${name}\\b`).test(source));
  if (shared.length < 100) fail(`only ${shared.length} names are exported by both packages: is ${upstream} upstream's 1.0 types package?`);
  if (missing.length) fail(`${test} compares none of ${missing.join(', ')}, which both packages export`);

  const tsc = join(repo, 'node_modules/typescript/bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '-p', join(scratch, 'tsconfig.json')], { stdio: 'inherit' });
  if (run.status !== 0) fail(`this package's types and upstream's (${upstream}) do not fit each other (above)`);
  console.log(`upstream types: ${shared.length} shared names fit both ways (${upstream}, @openrouter/sdk ${JSON.parse(readFileSync(join(sdk, 'package.json'), 'utf8')).version})`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
