import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, createInMemoryStorage, createMessage, step } from '../js/index.mjs';
import { allocateBudgets } from '../js/unstable.mjs';

const assistant = (text) => ({ id: `a-${text}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] });
const textOf = (item) => item.content[0].text;
const harness = (opts = {}) => new AgentHarness({ name: 'layers', params: {}, llm: { provider: 'scripted', script: [{ text: 'ok' }] }, ...opts });

test('ctx.harness runs init, recall, store and dispose over layers the caller names, in its context', async () => {
  const order = [];
  const counter = (id, slot) => ({
    id,
    slot,
    scope: 'execution',
    hooks: {
      init: async () => ({ state: { n: 0 } }),
      recall: async ({ state, query, budget }) => `${id}:${state.n}:${query}:${budget}`,
      store: async ({ state, response }) => ({ state: { n: state.n + response.items.length } }),
      dispose: async ({ state }) => void order.push(`${id}@${state.n}`),
    },
  });
  const layers = [counter('b', 20), counter('a', 10)];
  const h = harness();
  const ctx = h.createContext({});
  await h.initLayers(layers, ctx);
  assert.deepEqual(h.getLayerState(ctx.id, 'a'), { n: 0 });

  const { allocations } = allocateBudgets({ layers, totalBudget: 128000, systemPromptTokens: 0, responseReserve: 4000 });
  const recalled = await h.recallLayers(layers, 'hi', ctx);
  assert.deepEqual(recalled.map((r) => r.layerId), ['a', 'b'], 'slot order, whatever the array order');
  const budgetOf = (id) => allocations.find((a) => a.layerId === id).allocated;
  assert.equal(textOf(recalled[0].items[0]), `a:0:hi:${budgetOf('a')}`, "each layer's budget is the harness policy's");
  assert.equal(recalled[0].items[0].role, 'developer');
  assert.ok(recalled[0].tokenCount > 0);

  await h.storeLayers(layers, { items: [assistant('x'), assistant('y')], usage: { inputTokens: 3, outputTokens: 2 } }, ctx);
  assert.deepEqual(h.getLayerState(ctx.id, 'b'), { n: 2 }, "store hooks see the caller's response, not the log");
  assert.equal(ctx.itemLog.items.length, 0, 'the response is not appended');

  await h.disposeLayers(layers, ctx);
  assert.deepEqual(order, ['b@2', 'a@2'], 'dispose runs in reverse slot order');
  assert.equal(h.getLayerState(ctx.id, 'a'), undefined, "the execution's state is dropped");
});

test("a step reaches its own run's layers through ctx.harness, with their state as it stands", async () => {
  const notes = {
    id: 'notes',
    slot: 10,
    scope: 'execution',
    hooks: {
      init: async () => ({ state: ['seeded'] }),
      recall: async ({ state }) => state.join(','),
    },
  };
  const h = harness({ memory: [notes] });
  const out = await h.run(
    step.run({
      id: 'peek',
      execute: async (input, ctx) => {
        const recalled = await ctx.harness.recallLayers(ctx.layers, input, ctx);
        return recalled.map((r) => `${r.layerId}=${textOf(r.items[0])}`).join(';');
      },
    }),
    'q',
  );
  assert.equal(out, 'notes=seeded');
});

test('steering through ctx.harness: the most restrictive decision wins, and no steering layer means allow', async () => {
  const voter = (id, slot, decide) => ({ id, slot, scope: 'execution', hooks: { beforeToolCall: async (p) => ({ decision: decide(p) }), afterModelCall: async (p) => ({ decision: decide(p) }) } });
  const layers = [
    voter('guide', 10, () => ({ action: 'guide', guidance: 'careful' })),
    voter('guard', 20, ({ toolName }) => (toolName === 'rm' ? { action: 'deny', guidance: 'never rm' } : { action: 'allow' })),
  ];
  const h = harness();
  const ctx = h.createContext({});
  assert.deepEqual(await h.beforeToolCall(layers, 'rm', { path: '/' }, ctx), { action: 'deny', guidance: 'never rm' });
  assert.deepEqual(await h.beforeToolCall(layers, 'ls', {}, ctx), { action: 'guide', guidance: 'careful' });
  assert.deepEqual(await h.afterModelCall(layers, { items: [assistant('done')] }, ctx), { action: 'guide', guidance: 'careful' });
  const quiet = [{ id: 'quiet', slot: 1, scope: 'execution', hooks: { recall: async () => null } }];
  assert.deepEqual(await h.beforeToolCall(quiet, 'rm', {}, ctx), { action: 'allow' });
  assert.deepEqual(await h.afterModelCall([], { items: [] }, ctx), { action: 'allow' });
});

test('runAppendPipeline chains onItemAppend in slot order and reports re-render requests with their timing', async () => {
  const tagger = {
    id: 'tagger',
    slot: 20,
    scope: 'execution',
    rerenderTiming: 'immediate',
    hooks: { onItemAppend: async ({ items }) => ({ items: items.map((i) => createMessage(`${textOf(i)}+tag`, 'user')), rerender: true, scope: 'self' }) },
  };
  const dropper = {
    id: 'dropper',
    slot: 10,
    scope: 'execution',
    hooks: { onItemAppend: async ({ items }) => ({ items: items.filter((i) => textOf(i) !== 'drop me') }) },
  };
  const h = harness();
  const ctx = h.createContext({});
  const given = [createMessage('keep', 'user'), createMessage('drop me', 'user')];
  const { items, rerenderRequests } = await h.runAppendPipeline([tagger, dropper], given, ctx);
  assert.deepEqual(items.map(textOf), ['keep+tag']);
  assert.deepEqual(rerenderRequests, [{ layerId: 'tagger', slot: 20, timing: 'immediate', scope: 'self' }]);
  assert.equal(given.length, 2, "the caller's array is left alone");
  assert.equal(ctx.itemLog.items.length, 0, 'nothing is appended');
  const untouched = await h.runAppendPipeline([], given, ctx);
  assert.equal(untouched.items, given, 'with no onItemAppend layer the very items come back');
});

test('projectHistory projects the given items through every layer in turn, leaving them unchanged', async () => {
  const lastTwo = { id: 'last-two', slot: 10, scope: 'execution', hooks: { projectHistory: async ({ items }) => ({ items: items.slice(-2) }) } };
  const marker = { id: 'marker', slot: 20, scope: 'execution', hooks: { projectHistory: async ({ items }) => ({ items: [createMessage('summary', 'developer'), ...items] }) } };
  const h = harness();
  const ctx = h.createContext({});
  const history = ['one', 'two', 'three'].map((t) => createMessage(t, 'user'));
  const projected = await h.projectHistory([marker, lastTwo], history, ctx);
  assert.deepEqual(projected.map(textOf), ['summary', 'two', 'three']);
  assert.equal(history.length, 3);
  assert.equal(await h.projectHistory([], history, ctx), history);
});

test('executeRerender recalls the layers the requests select, with the budgets and query given', async () => {
  const layer = (id, slot) => ({ id, slot, scope: 'execution', hooks: { recall: async ({ query, budget }) => `${id}:${query}:${budget}` } });
  const layers = [layer('early', 5), layer('mid', 10), layer('late', 30)];
  const h = harness();
  const ctx = h.createContext({});
  const budgets = new Map([['early', 1], ['mid', 2], ['late', 3]]);
  const after = await h.executeRerender([{ layerId: 'mid', slot: 10, timing: 'batched', scope: 'slot-after' }], layers, ctx, budgets, 'why');
  assert.deepEqual(after.map((r) => textOf(r.items[0])), ['mid:why:2', 'late:why:3']);
  const self = await h.executeRerender([{ layerId: 'early', slot: 5, timing: 'immediate', scope: 'self' }], layers, ctx, budgets);
  assert.deepEqual(self.map((r) => textOf(r.items[0])), ['early::1']);
  assert.deepEqual(await h.executeRerender([], layers, ctx, budgets), []);
});

test('recallLayersAtomic and recallLayersEventual split the layers by recallMode, unless recall is forced atomic', async () => {
  let eventualCalls = 0;
  const atomic = { id: 'atomic', slot: 10, scope: 'execution', hooks: { recall: async ({ budget }) => `atomic:${budget}` } };
  const eventual = {
    id: 'eventual',
    slot: 20,
    scope: 'execution',
    recallMode: 'eventual',
    hooks: { recall: async () => `eventual:${++eventualCalls}` },
  };
  const budgets = new Map([['atomic', 9], ['eventual', 9]]);
  const h = harness();
  const ctx = h.createContext({});
  const first = await h.recallLayersAtomic([atomic, eventual], '', ctx, budgets);
  assert.deepEqual(first.map((r) => textOf(r.items[0])), ['atomic:9']);
  // D6: a cold cache serves nothing and starts a refresh; the next call finds what it recalled.
  assert.deepEqual(await h.recallLayersEventual([atomic, eventual], '', ctx, budgets), []);
  let served = [];
  for (let i = 0; i < 50 && served.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    served = await h.recallLayersEventual([atomic, eventual], '', ctx, budgets);
  }
  assert.deepEqual(served.map((r) => r.layerId), ['eventual']);
  assert.match(textOf(served[0].items[0]), /^eventual:\d+$/);

  const forced = harness({ forceAtomicRecall: true });
  const fctx = forced.createContext({});
  assert.deepEqual((await forced.recallLayersAtomic([atomic, eventual], '', fctx, budgets)).map((r) => r.layerId), ['atomic', 'eventual']);
  assert.deepEqual(await forced.recallLayersEventual([atomic, eventual], '', fctx, budgets), []);
});

test('ctx.harness layer calls reject what they cannot run with clear errors', async () => {
  const h = harness();
  const other = harness();
  const ctx = h.createContext({});
  const layer = { id: 'l', slot: 1, scope: 'execution', hooks: { recall: async () => 'x', init: async () => { throw new Error('backend down'); } } };
  await assert.rejects(h.recallLayers([layer], '', other.createContext({})), (e) => e.code === 'INVALID_CONTEXT');
  await assert.rejects(h.recallLayers([layer], '', { id: 'fake' }), (e) => e.code === 'INVALID_CONTEXT');
  await assert.rejects(h.recallLayers('not layers', '', ctx), (e) => e.name === 'NoeticConfigError');
  await assert.rejects(h.initLayers([layer], ctx, createInMemoryStorage()), (e) => e.code === 'UNSUPPORTED_STORAGE');
  await assert.rejects(h.initLayers([layer], ctx), /backend down/, 'an init that throws fails the call (onInitError defaults to throw)');
  await assert.rejects(h.runAppendPipeline([{ ...layer, hooks: { onItemAppend: async ({ items }) => ({ items }) } }], [{ nope: true }], ctx), (e) => /items\[0\]/.test(e.message));
});
