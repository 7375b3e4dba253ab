// Adversarial (issue 10): a thousand executions in a row, every layer with every hook, must leave nothing behind:
// no live execution, no JS layer state, no handle of a finished run, and no growth of the retained heap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, createMessage, spawn, step } from '../js/index.mjs';
import { slow } from './helpers.mjs';

// Without a collector to call (node without --expose-gc, as `npm test` passes it), heap growth measures nothing.
const collect = globalThis.gc ?? (globalThis.Bun ? () => globalThis.Bun.gc(true) : undefined);

function everyHook(i) {
  return {
    id: `every-${i}`,
    slot: 10 + i,
    scope: i % 2 ? 'thread' : 'execution',
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { seen: 0, notes: [] } }),
      recall: async ({ state }) => (state.notes.length ? `notes: ${state.notes.join(', ')}` : null),
      store: async ({ state, newItems }) => ({ state: { ...state, notes: [...state.notes.slice(-3), newItems.length] } }),
      onItemAppend: async ({ items, state }) => ({ items, state: { ...state, seen: state.seen + items.length } }),
      projectHistory: async ({ items }) => ({ items }),
      beforeToolCall: async () => ({ decision: { action: 'allow' } }),
      afterModelCall: async () => ({ decision: { action: 'allow' } }),
      onSpawn: async ({ parentState }) => ({ childState: { ...parentState } }),
      onReturn: async ({ childState, result }) => ({ parentState: childState, result }),
      onComplete: async () => undefined,
      dispose: async () => {},
    },
  };
}

test('1,000 executions in a row retain nothing', { timeout: slow(60_000), skip: collect ? false : 'needs --expose-gc' }, async () => {
  let n = 0;
  const model = async () => ({ items: [{ id: `m${++n}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'x'.repeat(2000) }] }] });
  const harness = new AgentHarness({ name: 'soak', params: {}, memory: [0, 1, 2, 3].map(everyHook), _testCallModel: model, onDiagnostic: (d) => assert.fail(JSON.stringify(d)) });
  const runtime = harness._runtime;
  // A fresh step tree each time, as code that builds its steps per request does, with a spawn and a step function.
  const execution = (i) =>
    spawn({
      id: `delegate-${i}`,
      child: step.run({ id: 'child', execute: async (input, ctx) => (await ctx.harness.run(step.llm({ id: 'ask', model: 'm' }), input, ctx), createMessage(String(input), 'user').id) }),
    });
  const heapAfter = async (count, from) => {
    for (let i = from; i < from + count; i++) await harness.run(execution(i), `question ${i}`, { threadId: 'soak' });
    collect();
    await new Promise((resolve) => setImmediate(resolve));
    collect();
    return process.memoryUsage().heapUsed;
  };
  const warm = await heapAfter(200, 0);
  const after = await heapAfter(800, 200);
  assert.equal(harness.liveExecutions, 0, 'every execution released its layer state natively');
  assert.equal(runtime.layerStates.maps.size, 0, 'and in JS');
  assert.equal(runtime.contexts.size, 0, 'no context object is kept');
  assert.ok(runtime.handles.size < 200, `handles of finished runs are released (${runtime.handles.size} held)`);
  const grewMb = (after - warm) / (1 << 20);
  assert.ok(grewMb < 4, `the retained heap grew by ${grewMb.toFixed(1)} MB over 800 more executions`);
});
