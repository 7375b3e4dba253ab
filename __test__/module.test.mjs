import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import * as esm from '../js/index.mjs';
import { AgentHarness, step } from '../js/index.mjs';

const require = createRequire(import.meta.url);

test('the package loads as ESM and as CommonJS, with the same objects', () => {
  const cjs = require('../js/index.cjs');
  for (const name of ['AgentHarness', 'step', 'react', 'memory', 'workingMemory', 'estimateTokens', 'NoeticConfigError']) {
    assert.equal(esm[name], cjs[name], name);
  }
  assert.equal(require('../js/unstable.cjs').allocateBudgets.name, 'allocateBudgets');
  // The CommonJS entry spreads whole modules: none of their internal names may leak past the ESM entry's list.
  const named = Object.keys(esm).filter((name) => name !== 'default');
  assert.deepEqual(Object.keys(cjs).sort(), named.sort());
});

test('ctx.itemLog: appended items are read back as the same objects; reads never copy the log and are read-only', async () => {
  const harness = new AgentHarness({ name: 't', params: {} });
  const n = 2000;
  const result = await harness.run(
    step.run({
      id: 'append',
      execute: async (_input, ctx) => {
        const mine = [];
        let lengths = 0;
        for (let i = 0; i < n; i++) {
          const item = { id: `i${i}`, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: `m${i}` }] };
          mine.push(item);
          ctx.itemLog.append(item);
          lengths += ctx.itemLog.items.length;
        }
        const items = ctx.itemLog.items;
        const before = items.length;
        ctx.itemLog.append(mine[0]);
        return {
          lengths,
          same: items.every((item, i) => item === mine[i]),
          snapshotUnchanged: items.length === before,
          spread: [...items].length,
          json: JSON.parse(JSON.stringify(items)).length,
          frozen: Reflect.set(items, 0, null) === false && items[0] === mine[0],
        };
      },
    }),
    '',
  );
  assert.deepEqual(result, { lengths: (n * (n + 1)) / 2, same: true, snapshotUnchanged: true, spread: n, json: n, frozen: true });
});

test('appending an unknown item type is an item_schema_mismatch error', async () => {
  const harness = new AgentHarness({ name: 't', params: {} });
  const run = harness.run(step.run({ id: 'bad', execute: async (_i, ctx) => ctx.itemLog.append({ type: 'noetic:unknown' }) }), '');
  // The append's error fails the step, as its cause.
  await assert.rejects(run, (e) => e.noeticError?.kind === 'step_failed' && e.noeticError.cause.noeticError?.kind === 'item_schema_mismatch');
});
