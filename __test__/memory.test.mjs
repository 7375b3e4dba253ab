import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, createInMemoryStorage, react, step, loop, until, memory, workingMemory, observationalMemory } from '../js/index.mjs';
import { myCustomLayer, probe, recordingModel } from './helpers.mjs';

test("seed 002's layer runs unchanged: ctx.memory data and functions, and its tool called by the model", async () => {
  const storage = createInMemoryStorage();
  const mem = memory([workingMemory(), myCustomLayer()]);
  const harness = new AgentHarness({
    name: 'my-agent',
    params: {},
    storage,
    memory: mem.layers,
    llm: { provider: 'scripted', script: [{ toolCalls: [{ name: 'my-custom-layer/addEntry', arguments: { text: 'likes tea' } }] }, { text: 'Noted.' }] },
  });
  const useMemory = step.run({
    id: 'use-memory',
    execute: async (input, ctx) => {
      const count = ctx.memory['my-custom-layer'].entryCount;
      await ctx.memory['my-custom-layer'].addEntry({ text: input });
      return [count, ctx.memory['my-custom-layer'].entryCount];
    },
  });
  assert.deepEqual(await harness.run(useMemory, 'hello'), [0, 1]);
  // The model calls `my-custom-layer/addEntry`; the state it writes is mirrored and rehydrated next run.
  await harness.run(react({ model: 'scripted/test' }), 'I like tea');
  const saved = await storage.get('layers/my-custom-layer/__default__/state');
  assert.deepEqual(saved.entries, ['hello', 'likes tea']);
});

test('the layer tool is offered to the model with its input schema', async () => {
  const { model, requests } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, memory: [myCustomLayer()], _testCallModel: model });
  await harness.run(step.llm({ id: 'ask', model: 'm' }), 'hi');
  const names = requests[0].tools.map((t) => t.name);
  assert.deepEqual(names, ['my-custom-layer/addEntry']);
});

test('hooks run in slot order, not array order, and every execution ends with onComplete then dispose', async () => {
  const log = [];
  const { model } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, memory: [probe('late', 300, log), probe('early', 100, log)], _testCallModel: model });
  await harness.run(step.llm({ id: 'ask', model: 'm' }), 'hi');
  assert.deepEqual(log, [
    'init:early', 'init:late', 'recall:early', 'recall:late', 'store:early', 'store:late',
    'onComplete:early', 'onComplete:late', 'dispose:late', 'dispose:early',
  ]);
  assert.equal(harness.liveExecutions, 0);
});

test("store sees the model's response as newItems, the same objects the context's log then holds", async () => {
  const seen = [];
  const layer = {
    id: 'watcher', slot: 10, scope: 'execution',
    hooks: { store: async ({ newItems, response, log }) => { seen.push({ newItems, response, log: log.items }); } },
  };
  const harness = new AgentHarness({ name: 't', params: {}, memory: [layer], llm: { provider: 'scripted', script: [{ text: 'first' }, { text: 'second' }] } });
  const ctx = harness.createContext();
  await harness.run(loop({ id: 'l', steps: [step.llm({ id: 'ask', model: 'scripted' })], until: until.maxSteps(2) }), 'hi', ctx);
  assert.deepEqual(seen.map((s) => s.newItems.map((i) => i.content[0].text)), [['first'], ['second']]);
  assert.equal(seen[0].response.items, seen[0].newItems);
  const items = ctx.itemLog.items;
  // hi, first, then the loop feeds 'first' back as the next input, then second.
  assert.equal(items.length, 4);
  assert.equal(seen[0].newItems[0], items[1]);
  assert.equal(seen[1].newItems[0], items[3]);
  assert.equal(seen[1].log.length, 4);
});

test('recalled layer items reach the model before the conversation, in slot order', async () => {
  const log = [];
  const { model, requests } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, memory: [probe('b', 300, log), probe('a', 100, log)], _testCallModel: model });
  await harness.run(step.llm({ id: 'ask', model: 'm' }), 'hi');
  const texts = requests[0].items.map((item) => item.content[0].text);
  assert.deepEqual(texts, ['a recalled', 'b recalled', 'hi']);
});

test('store state is mirrored for thread, resource and global scopes and rehydrated by the next init; never for execution', async () => {
  const storage = createInMemoryStorage();
  const counter = (id, scope) => ({
    id,
    slot: 100,
    scope,
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { n: 0 } }),
      store: async ({ state }) => ({ state: { n: state.n + 1 } }),
    },
  });
  const layers = [counter('t', 'thread'), counter('r', 'resource'), counter('g', 'global'), counter('e', 'execution')];
  const { model } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, storage, memory: layers, _testCallModel: model });
  const ask = step.llm({ id: 'ask', model: 'm' });
  await harness.run(ask, 'one', { threadId: 'T1', resourceId: 'R1' });
  await harness.run(ask, 'two', { threadId: 'T1', resourceId: 'R1' });
  assert.deepEqual(await storage.get('layers/t/T1/state'), { n: 2 });
  assert.deepEqual(await storage.get('layers/r/R1/state'), { n: 2 });
  assert.deepEqual(await storage.get('layers/g/__global__/state'), { n: 2 });
  assert.deepEqual((await storage.list('layers/e/')), []);
  // Another thread starts from scratch for the thread layer, but shares the resource and global ones.
  await harness.run(ask, 'three', { threadId: 'T2', resourceId: 'R1' });
  assert.deepEqual(await storage.get('layers/t/T2/state'), { n: 1 });
  assert.deepEqual(await storage.get('layers/r/R1/state'), { n: 3 });
});

test('a hook that mutates its state in place keeps the mutation (the JS state object is not rebuilt)', async () => {
  const seen = [];
  const layer = {
    id: 'm',
    slot: 1,
    scope: 'execution',
    hooks: {
      init: async () => ({ state: { hits: 0 } }),
      recall: async ({ state }) => {
        state.hits += 1;
        seen.push(state.hits);
        return null;
      },
    },
  };
  const { model } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, memory: [layer], _testCallModel: model });
  const ask = step.llm({ id: 'ask', model: 'm' });
  await harness.run(step.run({ id: 'twice', execute: async (input, ctx) => input }), 'x');
  const { loop, until } = await import('../js/index.mjs');
  await harness.run(loop({ id: 'l', steps: [ask], until: until.maxSteps(3) }), 'go');
  assert.deepEqual(seen, [1, 2, 3]);
});

test('built-in layers run natively and keep JS-callable hooks', async () => {
  const wm = workingMemory();
  const recalled = await wm.hooks.recall({ state: { name: 'Ada' }, budget: 100 });
  assert.equal(recalled.items[0].content[0].text, '<working_memory>\n{\n  "name": "Ada"\n}\n</working_memory>');
  assert.equal(recalled.tokenCount, Math.ceil(recalled.items[0].content[0].text.length / 4));
  const om = observationalMemory({ bufferThreshold: 5, maxObservations: 3 });
  const out = await om.hooks.store({ state: undefined, newItems: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'one two three four five six' }] }] });
  assert.deepEqual(out.state, { observations: ['Processed 1 items'], buffer: [], bufferTokens: 0, version: 1 });
});

test('toolMemoryLayer: one layer per memory id; tools sharing an id share the state their recall renders', async () => {
  const { tool, toolMemoryLayer, Slot } = await import('../js/index.mjs');
  const { z } = await import('zod');
  const todos = { id: 'todos', init: () => ({ items: [] }), recall: (state) => (state.items.length === 0 ? null : `<todos>${state.items.join(',')}</todos>`) };
  const add = tool({ name: 'add_todo', description: 'add', input: z.object({ text: z.string() }), memory: todos, execute: async ({ text }, toolCtx) => {
    const state = toolCtx.memory.get('todos');
    toolCtx.memory.set('todos', { items: [...state.items, text] });
    return 'added';
  } });
  const list = tool({ name: 'list_todos', description: 'list', input: z.object({}), memory: todos, execute: async (_args, toolCtx) => toolCtx.memory.get('todos').items.join(',') });
  const scratch = tool({ name: 'scratch', description: 's', input: z.object({}), memory: { init: () => 0, recall: () => null }, execute: async () => 'x' });
  const plain = tool({ name: 'plain', description: 'p', input: z.object({}), execute: async () => 'p' });
  const layers = toolMemoryLayer([add, list, scratch, plain]);
  assert.deepEqual(layers.map((l) => [l.id, l.slot, l.scope]), [['todos', Slot.WORKING_MEMORY + 10, 'execution'], ['scratch', Slot.WORKING_MEMORY + 10, 'execution']]);
  assert.equal(toolMemoryLayer([add], { slot: 7 })[0].slot, 7);
  assert.throws(() => toolMemoryLayer('add'), (e) => e.code === 'INVALID_TOOLS');

  const seen = [];
  const script = [{ toolCalls: [{ name: 'add_todo', arguments: { text: 'tea' } }] }, { text: 'one' }, { toolCalls: [{ name: 'list_todos', arguments: {} }] }, { text: 'two' }];
  const h = new AgentHarness({ name: 't', params: {}, memory: layers, llm: { provider: 'scripted', script } });
  const ctx = h.createContext();
  const ask = step.llm({ id: 'ask', model: 'scripted', tools: [add, list] });
  // Both model steps in one execution: the layers are execution-scoped.
  const outputs = () => ctx.itemLog.items.filter((i) => i.type === 'function_call_output').map((i) => i.output);
  const both = step.run({ id: 'both', execute: async (_input, c) => {
    await c.harness.run(ask, 'add tea', c);
    seen.push(outputs());
    await c.harness.run(ask, 'what is left?', c);
    seen.push(outputs());
    return '';
  } });
  await h.run(both, '', ctx);
  assert.deepEqual(seen, [['added'], ['added', 'tea']]);
  // The second step's recall rendered the state the first step's tool wrote.
  const todosUsage = ctx.lastLayerUsage.layers.find((l) => l.layerId === 'todos');
  assert.equal(todosUsage.items[0].content[0].text, '<todos>tea</todos>');
});

test("a hook's params hold upstream's keys as their own, and signal (D5) is read through them", async () => {
  const seen = {};
  const layer = {
    id: 'keys',
    slot: 300,
    scope: 'thread',
    hooks: {
      init: async (params) => ((seen.init = Object.keys(params)), { state: {} }),
      recall: async (params) => {
        seen.recall = Object.keys(params);
        const { signal } = params;
        seen.signal = signal instanceof AbortSignal && !signal.aborted && params.signal === signal;
        seen.spread = Object.keys({ ...params });
        return null;
      },
      store: async (params) => ((seen.store = Object.keys(params)), undefined),
    },
  };
  const { model } = recordingModel('ok');
  const harness = new AgentHarness({ name: 'keys', params: {}, memory: [layer], _testCallModel: model });
  await harness.run(step.llm({ id: 'llm', model: 'm' }), 'hi', { threadId: 'T' });
  assert.deepEqual(seen.init, ['storage', 'scopeKey', 'ctx']);
  assert.deepEqual(seen.recall, ['log', 'query', 'ctx', 'state', 'budget']);
  assert.deepEqual(seen.spread, seen.recall);
  assert.deepEqual(seen.store, ['newItems', 'log', 'response', 'ctx', 'state']);
  assert.equal(seen.signal, true, 'the signal is an AbortSignal, the same on every read');
});

test('hooks whose promises are settled when they return, rejected or still pending, each count as their outcome', async () => {
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const layer = (id, slot, recall) => ({
      id,
      slot,
      scope: 'thread',
      hooks: {
        init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { n: 0 } }),
        recall,
        // Fulfilled as it returns: the new state is applied and seen by the next turn's recall.
        store: async ({ state }) => ({ state: { n: state.n + 1 } }),
      },
    });
    const layers = [
      layer('now', 10, async ({ state }) => `now ${state.n}`),
      layer('fails', 20, async () => {
        throw new Error('recall broke at once');
      }),
      layer('later', 30, async ({ state }) => {
        await new Promise((resolve) => setTimeout(resolve, 2));
        return `later ${state.n}`;
      }),
    ];
    const { model, requests } = recordingModel();
    const harness = new AgentHarness({ name: 't', params: {}, storage: createInMemoryStorage(), memory: layers, _testCallModel: model });
    const ask = step.llm({ id: 'ask', model: 'm' });
    await harness.run(ask, 'one', { threadId: 'T' });
    await harness.run(ask, 'two', { threadId: 'T' });
    const texts = requests.map((request) => request.items.map((item) => item.content[0].text));
    // The failed layer contributes nothing; the others recall the state their store left, mirrored and read back
    // by the next run's init.
    assert.deepEqual(texts, [
      ['now 0', 'later 0', 'one'],
      ['now 1', 'later 1', 'two'],
    ]);
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(unhandled, [], 'a hook that rejects as it returns leaves no unhandled rejection');
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
