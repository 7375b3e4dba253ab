// The package as npm sees it: the platform packages the root names, and what the loader says when none is there.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const root = new URL('..', import.meta.url).pathname;
const readJson = (path) => JSON.parse(readFileSync(join(root, path), 'utf8'));
const pkg = readJson('package.json');
const platforms = readdirSync(join(root, 'npm')).sort();

test('the root depends on every platform package, at its own exact version, and runs no install script', () => {
  assert.deepEqual(platforms, ['darwin-arm64', 'darwin-x64', 'linux-arm64-gnu', 'linux-arm64-musl', 'linux-x64-gnu', 'linux-x64-musl', 'win32-x64']);
  assert.deepEqual(pkg.optionalDependencies, Object.fromEntries(platforms.map((p) => [`@noetic-tools/core-${p}`, pkg.version])));
  for (const script of ['preinstall', 'install', 'postinstall', 'prepare', 'prepack']) assert.equal(pkg.scripts[script], undefined, script);
  assert.ok(!pkg.files.some((f) => f.endsWith('.node')));
});

test('each platform package is chosen by npm for its platform alone and ships one binary', () => {
  const expected = {
    'linux-x64-gnu': ['linux', 'x64', 'glibc'],
    'linux-arm64-gnu': ['linux', 'arm64', 'glibc'],
    'linux-x64-musl': ['linux', 'x64', 'musl'],
    'linux-arm64-musl': ['linux', 'arm64', 'musl'],
    'darwin-x64': ['darwin', 'x64', undefined],
    'darwin-arm64': ['darwin', 'arm64', undefined],
    'win32-x64': ['win32', 'x64', undefined],
  };
  for (const p of platforms) {
    const sub = readJson(`npm/${p}/package.json`);
    const [os, cpu, libc] = expected[p];
    assert.equal(sub.name, `@noetic-tools/core-${p}`);
    assert.equal(sub.version, pkg.version);
    assert.equal(sub.license, pkg.license);
    assert.deepEqual([sub.os, sub.cpu, sub.libc], [[os], [cpu], libc && [libc]], p);
    assert.equal(sub.main, `noetic-core.${p}.node`);
    assert.deepEqual(sub.files, [sub.main]);
  }
});

test('the loader asks for the one Windows x64 package, whichever toolchain built the running Node', () => {
  const loader = readFileSync(join(root, 'index.js'), 'utf8');
  assert.equal(loader.match(/require\('@noetic-tools\/core-win32-x64'\)/g)?.length, 2);
  assert.doesNotMatch(loader, /@noetic-tools\/core-win32-x64-(msvc|gnu)/);
});

test('with no binary, the first import names the platform and the package to install', () => {
  // The loader alone, away from the built binary and from any node_modules.
  const dir = mkdtempSync(join(tmpdir(), 'noetic-loader-'));
  try {
    copyFileSync(join(root, 'index.js'), join(dir, 'index.js'));
    const run = spawnSync(process.execPath, ['-e', "require('./index.js')"], { cwd: dir, encoding: 'utf8', env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: '' } });
    assert.notEqual(run.status, 0);
    const libc = process.platform !== 'linux' ? '' : process.report.getReport().header.glibcVersionRuntime ? '-gnu' : '-musl';
    const platform = `${process.platform}-${process.arch}${libc}`;
    assert.match(run.stderr, new RegExp(`cannot find its native binary for this platform \\(${platform}\\): install @noetic-tools/core-${platform}@${pkg.version.replaceAll('.', '\\.')}`));
    assert.doesNotMatch(run.stderr, /npm has a bug/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
