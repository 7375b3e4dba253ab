// The harness's getLayerState / setLayerState (issue 10): a layer's state in an execution, read and written as its
// hooks see it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, step, workingMemory, createInMemoryStorage } from '../js/index.mjs';

test('getLayerState reads JS and built-in layer states; setLayerState writes what the next hook sees, durably', async () => {
  const storage = createInMemoryStorage();
  const seen = [];
  const counter = {
    id: 'counter',
    slot: 10,
    scope: 'thread',
    hooks: { init: async () => ({ state: { n: 1 } }), recall: async ({ state }) => (seen.push(state.n), null) },
  };
  const h = new AgentHarness({ name: 'ls', params: {}, storage, memory: [counter, workingMemory()], llm: { provider: 'scripted', script: [{ text: 'a' }, { text: 'b' }] } });
  const ctx = h.createContext({ threadId: 't1' });
  // Read and set from a step of the execution: its states end with it.
  const work = step.run({ id: 'w', execute: async (i, c) => {
    await c.memory['working-memory'].update({ city: 'Oslo' });
    assert.deepEqual(h.getLayerState(c.id, 'counter'), { n: 1 });
    assert.deepEqual(h.getLayerState(c.id, 'working-memory'), { city: 'Oslo' });
    assert.equal(h.getLayerState(c.id, 'nope'), undefined);
    assert.equal(h.getLayerState('no-such-execution', 'counter'), undefined);
    h.setLayerState(c.id, 'counter', { n: 42 });
    assert.throws(() => h.setLayerState(c.id, 'working-memory', {}), /built-in layer/);
    return c.harness.run(step.llm({ id: 'ask', model: 'm' }), 'hi', c);
  } });
  await h.run(work, 'x', ctx);
  assert.deepEqual(seen, [42], 'the next recall sees the state that was set');
  assert.equal(h.getLayerState(ctx.id, 'counter'), undefined, 'the execution ended, and its states with it');
  await new Promise((r) => setTimeout(r, 10));
  const keys = await storage.list('layers/counter/');
  const saved = await storage.get(keys.find((k) => k.endsWith('/state')));
  assert.deepEqual(saved, { n: 42 }, 'a thread-scoped state set this way is mirrored to storage');
});
