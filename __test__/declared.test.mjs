// The types promise only what runs: every member index.d.ts declares on AgentHarness exists on an instance, and
// every function and class it exports is exported by the entry points.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as esm from '../js/index.mjs';

const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8');

function classMembers(name) {
  const start = dts.indexOf(`export declare class ${name}`);
  assert.ok(start >= 0, `index.d.ts declares ${name}`);
  const body = dts.slice(dts.indexOf('{', start) + 1, dts.indexOf('\n}', start));
  return [...body.matchAll(/^ {2}(?:readonly |get |static )?([A-Za-z_$][\w$]*)\s*[(<:?]/gm)].map((m) => m[1]).filter((n) => n !== 'constructor');
}

test('every AgentHarness member index.d.ts declares exists at run time', () => {
  const harness = new esm.AgentHarness({ name: 'declared', params: {} });
  const missing = classMembers('AgentHarness').filter((member) => !(member in harness));
  assert.deepEqual(missing, []);
});

test('every required member index.d.ts declares on Context exists at run time', () => {
  const start = dts.indexOf('export interface Context<');
  const body = dts.slice(dts.indexOf('{', start) + 1, dts.indexOf('\n}', start));
  const required = [...body.matchAll(/^ {2}(?:readonly )?([A-Za-z_$][\w$]*)\s*[(<:]/gm)].map((m) => m[1]);
  const ctx = new esm.AgentHarness({ name: 'declared', params: {} }).createContext();
  assert.ok(required.length > 20, `found ${required.length} members`);
  assert.deepEqual(required.filter((member) => !(member in ctx)), []);
});

test('every function and class index.d.ts exports is exported, and nothing internal is', async () => {
  const declared = [...dts.matchAll(/^export declare (?:function|class|const) ([A-Za-z_$][\w$]*)/gm)].map((m) => m[1]);
  const cjs = (await import('node:module')).createRequire(import.meta.url)('../js/index.cjs');
  for (const entry of [esm, cjs]) {
    assert.deepEqual(declared.filter((name) => !(name in entry)), []);
    assert.equal('NativeHarness' in entry || 'NativeStorage' in entry, false);
  }
});
