// onSpawn / onReturn (issue 10, spec §15.3): a spawn child that inherits its parent's layers gets their states and
// first items through onSpawn; onReturn hands the child's state back and may transform its output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, step, spawn, workingMemory, observationalMemory } from '../js/index.mjs';

const layer = (id, slot, hooks, extra = {}) => ({ id, slot, scope: 'execution', hooks, ...extra });
const note = (text) => ({ type: 'message', role: 'developer', content: text });

function harnessWith(memory, diagnostics = []) {
  return new AgentHarness({ name: 'spawner', params: {}, memory, llm: { provider: 'scripted', script: [{ text: 'ok' }] }, onDiagnostic: (d) => diagnostics.push(d) });
}

test('onSpawn seeds the child state and first items in slot order; onReturn merges back and pipes the result', async () => {
  const calls = [];
  const tally = layer('tally', 20, {
    init: async () => ({ state: { count: 1 } }),
    onSpawn: async ({ parentState, childCtx }) => {
      calls.push(['tally.onSpawn', parentState.count, childCtx.depth]);
      return { childState: { count: parentState.count * 10 }, items: [note('from tally')] };
    },
    onReturn: async ({ childState, parentState, result, childLog }) => {
      calls.push(['tally.onReturn', childState.count, parentState.count, result, childLog.items.length]);
      return { parentState: { count: parentState.count + childState.count }, result: `${result}+tally` };
    },
  });
  const tag = layer('tag', 10, {
    onSpawn: async () => ({ childState: 'tagged', items: [note('from tag')] }),
    onReturn: async ({ result, childState }) => ({ parentState: childState, result: `${result}+tag` }),
  });
  const h = harnessWith([tally, tag]);
  let seen;
  const child = step.run({
    id: 'child',
    execute: async (input, ctx) => {
      seen = { items: ctx.itemLog.items.map((i) => i.content), depth: ctx.depth };
      return `${input}!`;
    },
  });
  const ctx = h.createContext();
  // Both spawns in one execution of the parent, whose state the first one's onReturn merges into.
  let out;
  const calls2 = [];
  const twice = step.run({ id: 'twice', execute: async (_input, c) => {
    out = await c.harness.run(spawn({ id: 'sp', child }), 'go', c);
    calls2.push(...calls);
    calls.length = 0;
    await c.harness.run(spawn({ id: 'sp2', child }), 'again', c);
    return out;
  } });
  await h.run(twice, '', ctx);
  const second = calls.slice();
  calls.length = 0;
  calls.push(...calls2);
  assert.deepEqual(seen, { items: ['from tag', 'from tally'], depth: 1 });
  assert.equal(out, 'go!+tag+tally', 'the result pipes through onReturn in slot order');
  assert.deepEqual(calls, [
    ['tally.onSpawn', 1, 1],
    ['tally.onReturn', 10, 1, 'go!+tag', 2],
  ]);
  // The parent's state was merged: a second spawn sees count 11.
  assert.equal(second[0][1], 11);
});

test('a child inherits a layer with init only through onSpawn; null leaves it inert, a throw is a diagnostic', async () => {
  const recalled = [];
  const recaller = (id, slot, onSpawn) =>
    layer(id, slot, {
      init: async () => ({ state: id }),
      recall: async ({ state }) => (recalled.push(`${id}:${state}`), null),
      ...(onSpawn ? { onSpawn } : {}),
    });
  const diagnostics = [];
  const h = harnessWith(
    [
      recaller('copied', 1, async ({ parentState }) => ({ childState: `${parentState}-child` })),
      recaller('declined', 2, async () => null),
      recaller('failing', 3, async () => { throw new Error('cannot copy'); }),
      recaller('silent', 4),
    ],
    diagnostics,
  );
  const ctx = h.createContext();
  await h.run(spawn({ id: 'sp', child: step.llm({ id: 'ask', model: 'm' }) }), 'hi', ctx);
  assert.deepEqual(recalled, ['copied:copied-child'], 'only the layer onSpawn gave a state recalls in the child');
  assert.deepEqual(diagnostics.map((d) => [d.layerId, d.hook, d.message]), [['failing', 'onSpawn', 'cannot copy']]);
});

test('built-in layers hand their state to the child: observationalMemory always, workingMemory when resource-scoped', async () => {
  const h = new AgentHarness({
    name: 'b',
    params: {},
    memory: [workingMemory({ scope: 'resource' }), observationalMemory()],
    llm: { provider: 'scripted', script: [{ text: 'a' }] },
  });
  let childMemory;
  const child = step.run({ id: 'c', execute: async (input, ctx) => ((childMemory = ctx.memory['working-memory'].snapshot), input) });
  const ctx = h.createContext({ resourceId: 'user-1' });
  await h.run(step.run({ id: 'w', execute: async (i, c) => (await c.memory['working-memory'].update({ name: 'Ada' }), i) }), 'x', ctx);
  await h.run(spawn({ id: 'sp', child }), 'y', ctx);
  assert.deepEqual(childMemory, { name: 'Ada' });

  const threadScoped = new AgentHarness({ name: 't', params: {}, memory: [workingMemory()], llm: { provider: 'scripted', script: [{ text: 'a' }] } });
  const tctx = threadScoped.createContext();
  await threadScoped.run(step.run({ id: 'w', execute: async (i, c) => (await c.memory['working-memory'].update({ name: 'Ada' }), i) }), 'x', tctx);
  childMemory = 'unread';
  await threadScoped.run(spawn({ id: 'sp', child }), 'y', tctx);
  assert.equal(childMemory, undefined, 'a thread-scoped workingMemory is inert in the child (onSpawn gives null)');
});

test('a spawn with memory of its own initialises it in the child, and onSpawn is not asked', async () => {
  const seen = [];
  const own = layer('own', 1, {
    init: async () => (seen.push('init'), { state: 0 }),
    onSpawn: async () => (seen.push('onSpawn'), { childState: 5 }),
    recall: async ({ state }) => (seen.push(`recall:${state}`), null),
  });
  const h = harnessWith([]);
  await h.run(spawn({ id: 'sp', memory: [own], child: step.llm({ id: 'ask', model: 'm' }) }), 'hi');
  assert.deepEqual(seen, ['init', 'recall:0']);
});

test("a step in a spawn's child that runs another step in the child's context joins the child's execution", async () => {
  const calls = [];
  const counter = layer('counter', 10, {
    init: async () => (calls.push(['init']), { state: { n: 0 } }),
    onSpawn: async ({ parentState }) => (calls.push(['onSpawn', parentState.n]), { childState: { n: parentState.n + 1 } }),
    onReturn: async ({ childState, parentState, result }) => (calls.push(['onReturn', childState.n, parentState.n]), { parentState: { n: childState.n }, result }),
    onComplete: async () => void calls.push(['onComplete']),
  });
  const h = harnessWith([counter]);
  const leaf = step.run({ id: 'leaf', execute: async (input) => `${input}.` });
  // The outer child runs a second spawn in its own context, as a workflow step or a pattern does.
  const middle = step.run({ id: 'middle', execute: async (input, ctx) => ctx.harness.run(spawn({ id: 'inner', child: leaf }), input, ctx) });
  const out = await h.run(spawn({ id: 'outer', child: middle }), 'x');
  assert.equal(out, 'x.');
  assert.deepEqual(calls, [
    ['init'],
    ['onSpawn', 0],
    // The inner spawn hands on the state the outer one gave its child: the child's layers were not initialised again.
    ['onSpawn', 1],
    ['onReturn', 2, 1],
    // The outer spawn still hands its child's state back: the inner run did not end the child's execution.
    ['onReturn', 2, 0],
    ['onComplete'],
  ]);
});
