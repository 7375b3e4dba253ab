import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  NoeticConfigError, durableTaskState, fileReference, historyWindow, observationalMemory, planMemory, staticContent,
  steering, temporalMemory, workingMemory,
} from '../js/index.mjs';

test('every built-in layer object carries upstream\'s metadata keys in upstream\'s order', () => {
  const shapes = [
    [workingMemory(), ['id', 'name', 'slot', 'scope', 'budget', 'hooks', 'provides']],
    [observationalMemory(), ['id', 'name', 'slot', 'scope', 'budget', 'timeouts', 'hooks']],
    [durableTaskState(), ['id', 'name', 'slot', 'scope', 'budget', 'timeouts', 'hooks']],
    [staticContent({ load: async () => 'x' }), ['id', 'slot', 'scope', 'hooks']],
    [historyWindow(), ['id', 'name', 'slot', 'scope', 'hooks']],
    [planMemory(), ['id', 'name', 'slot', 'scope', 'budget', 'provides', 'hooks']],
    [steering({ rules: [] }), ['id', 'name', 'slot', 'scope', 'budget', 'timeouts', 'hooks']],
    [temporalMemory(), ['id', 'name', 'slot', 'scope', 'budget', 'timeouts', 'provides', 'hooks']],
    [fileReference(), ['id', 'name', 'slot', 'scope', 'budget', 'rerenderTiming', 'timeouts', 'hooks']],
  ];
  for (const [layer, keys] of shapes) assert.deepEqual(Object.keys(layer), keys, layer.id);
  assert.deepEqual(durableTaskState().timeouts, { store: 30_000 });
  assert.deepEqual(temporalMemory({ injectLedger: true }).budget, { min: 0, max: 800 });
  assert.equal(workingMemory({ scope: 'resource' }).scope, 'resource');
  assert.equal(observationalMemory().scope, 'resource');
});

test('numbers JSON cannot carry are named in the config error instead of failing to cross', () => {
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => steering({ rules: [], maxRetries: bad }), (e) => e instanceof NoeticConfigError && e.code === 'INVALID_STEERING_CONFIG' && e.message.endsWith(`got ${bad}`));
  }
  assert.throws(() => staticContent({ load: async () => '', scope: Number.NaN }), (e) => e instanceof NoeticConfigError && e.code === 'INVALID_LAYER_SCOPE');
  const rule = { id: 'r', appliesTo: ['beforeToolCall'], llmEval: { mode: () => 'sync', prompt: 'p' } };
  assert.throws(() => steering({ rules: [rule] }), /llmEval\.mode must be 'sync' or 'async', got a function/);
});
