import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, loop, step, tool, until } from '../js/index.mjs';
import { probe, recordingModel, slow } from './helpers.mjs';

test('ctx.stepCount, tokens and lastLayerUsage reflect the steps and model calls that ran', async () => {
  const { model } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, memory: [probe('p', 1, [])], _testCallModel: model });
  const seen = await harness.run(
    loop({
      id: 'l',
      steps: [
        step.llm({ id: 'ask', model: 'test-model', instructions: 'be nice' }),
        step.run({
          id: 'look',
          execute: async (_input, ctx) => ({
            steps: ctx.stepCount,
            tokens: ctx.tokens,
            usage: ctx.lastLayerUsage,
            meta: ctx.lastStepMeta,
            logCost: ctx.itemLog.items.reduce((sum, item) => sum + Math.ceil(JSON.stringify(item).length / 4), 0),
          }),
        }),
      ],
      until: until.maxSteps(1),
    }),
    'hi',
  );
  // loop, llm, run: three dispatches so far.
  assert.equal(seen.steps, 3);
  // `cached` appears with the first model call counted, as upstream's trackUsage adds it.
  assert.deepEqual(seen.tokens, { input: 10, output: 2, total: 12, cached: 0 });
  assert.equal(seen.usage.modelId, 'test-model');
  assert.equal(seen.usage.systemPromptTokens, 2);
  assert.deepEqual(seen.usage.layers.map((l) => [l.layerId, l.tokenCount]), [['p', 3]]);
  // History is the JSON cost of every log item (the user message and the reply), none of the layer's items (D17).
  assert.equal(seen.usage.historyTokens, seen.logCost);
  assert.equal(seen.usage.totalUsedTokens, seen.usage.systemPromptTokens + seen.usage.toolsTokens + seen.usage.historyTokens + 3);
  assert.deepEqual(seen.meta.toolCalls, []);
});

test('ctx.complete ends a loop with its value; ctx.abort cancels the rest of the run', async () => {
  const harness = new AgentHarness({ name: 't', params: {} });
  let turns = 0;
  const completing = loop({
    id: 'l',
    steps: [step.run({ id: 'r', execute: async (_input, ctx) => { turns++; if (turns === 3) ctx.complete({ done: turns }); return turns; } })],
    until: until.maxSteps(100),
  });
  assert.deepEqual(await harness.run(completing, ''), { done: 3 });
  const aborting = loop({
    id: 'l',
    steps: [step.run({ id: 'r', execute: async (_input, ctx) => { ctx.abort('user left'); assert.equal(ctx.aborted, true); return 1; } })],
    until: until.never(),
  });
  await assert.rejects(harness.run(aborting, ''), (e) => e.noeticError?.kind === 'cancelled' && e.noeticError.reason === 'user left');
});

test('a JS until predicate sees the loop snapshot', async () => {
  const harness = new AgentHarness({ name: 't', params: {} });
  const snapshots = [];
  const body = loop({
    id: 'l',
    steps: [step.run({ id: 'r', execute: async (input) => `${input}!` })],
    until: (snapshot) => {
      snapshots.push([snapshot.stepCount, snapshot.lastOutput, snapshot.history.length]);
      return { stop: snapshot.stepCount >= 2 };
    },
  });
  assert.equal(await harness.run(body, 'go'), 'go!!');
  assert.deepEqual(snapshots, [[1, 'go!', 1], [2, 'go!!', 2]]);
});

test('harness.run(step, input, ctx) runs in a context from createContext, which keeps its log; each run inits from storage', async () => {
  const { AgentHarness: Harness, step: s, createInMemoryStorage } = await import('../js/index.mjs');
  const storage = createInMemoryStorage();
  const counter = {
    id: 'counter',
    slot: 1,
    scope: 'thread',
    hooks: {
      init: async ({ storage: scoped }) => ({ state: (await scoped.get('state')) ?? { n: 0 } }),
      store: async ({ state }) => ({ state: { n: state.n + 1 } }),
    },
  };
  const inits = [];
  counter.hooks.init = ((init) => async (params) => {
    inits.push(params.scopeKey);
    return init(params);
  })(counter.hooks.init);
  const harness = new Harness({ name: 't', params: {}, storage, memory: [counter], llm: { provider: 'scripted', script: [] } });
  const seed = { id: 'seed', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: 'earlier' }] };
  const ctx = harness.createContext({ threadId: 'T', items: [seed], state: { mine: true } });
  assert.equal(ctx.itemLog.items[0], seed);
  assert.deepEqual(ctx.state, { mine: true });
  const ask = s.llm({ id: 'ask', model: 'scripted' });
  assert.equal(await harness.run(ask, 'one', ctx), 'You said: one');
  assert.equal(await harness.run(ask, 'two', ctx), 'You said: two');
  // The log grew across both runs; each run is an execution, whose init reloaded what the last one stored.
  assert.deepEqual(ctx.itemLog.items.map((item) => item.content[0].text), ['earlier', 'one', 'You said: one', 'two', 'You said: two']);
  assert.deepEqual(inits, ['T', 'T']);
  assert.deepEqual(await storage.get('layers/counter/T/state'), { n: 2 });
  assert.equal(ctx.stepCount, 2);
});

test('a context the caller drops is forgotten natively once collected', async () => {
  const { spawnSync } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const script = fileURLToPath(new URL('./fixtures/collected-context.mjs', import.meta.url));
  const result = spawnSync(process.execPath, ['--expose-gc', script], { encoding: 'utf8', timeout: slow(60_000) });
  assert.equal(result.status, 0, result.stderr);
  // Its layer states ended with each run; the context itself goes once the caller lets go of it.
  assert.deepEqual(JSON.parse(result.stdout), { before: 1, after: 0, states: 0 });
});

test('hooks get ctx.callModel exactly when the harness has a model (D8)', async () => {
  const { AgentHarness: Harness, step: s, createMessage } = await import('../js/index.mjs');
  const seen = [];
  const summariser = {
    id: 'summariser',
    slot: 1,
    scope: 'execution',
    hooks: {
      recall: async ({ ctx }) => {
        seen.push(typeof ctx.callModel);
        if (!ctx.callModel) return null;
        const response = await ctx.callModel({ model: 'm', items: [createMessage('summarise please', 'user')] });
        return response.items.at(-1).content[0].text;
      },
    },
  };
  const scripted = new Harness({ name: 't', params: {}, memory: [summariser], llm: { provider: 'scripted', script: [{ text: 'a summary' }, { text: 'the answer' }] } });
  assert.equal(await scripted.run(s.llm({ id: 'ask', model: 'm' }), 'hi'), 'the answer');
  // The hook's call took the first scripted turn; its usage stayed out of the step's tokens.
  const ctx = scripted.createContext();
  await scripted.run(s.run({ id: 'noop', execute: async () => 1 }), '', ctx);
  assert.equal(ctx.tokens.input, 0);
  const direct = await scripted.callModel({ model: 'm', items: [createMessage('hello', 'user')] });
  assert.equal(direct.items[0].content[0].text, 'You said: hello');

  const noModel = new Harness({ name: 't', params: {}, memory: [summariser] });
  await assert.rejects(noModel.run(s.llm({ id: 'ask', model: 'm' }), 'hi'), (e) => e.code === 'NO_LLM_PROVIDER');
  assert.deepEqual(seen, ['function', 'undefined']);
});

test('steps built anew for every run do not grow the handle table; a collected context releases its layers', async () => {
  const harness = new AgentHarness({ name: 't', params: {}, llm: { provider: 'scripted' } });
  const handles = () => harness._runtime.handles.size;
  const freshAgent = () =>
    loop({
      id: 'l',
      steps: [step.run({ id: 'r', execute: async (input) => input }), step.llm({ id: 'ask', model: () => 'm' })],
      until: async () => ({ stop: true }),
    });
  await harness.run(freshAgent(), 'warm up', { memory: [probe('p', 1, [])] });
  const before = handles();
  for (let i = 0; i < 50; i++) await harness.run(freshAgent(), `turn ${i}`, { memory: [probe('p', 1, [])] });
  assert.equal(handles(), before);

  // In a function of its own, so that no suspended frame of this test keeps the context alive.
  const useContext = async () => {
    const ctx = harness.createContext({ memory: [probe('q', 1, [])] });
    await harness.run(freshAgent(), 'in a context', ctx);
    return handles();
  };
  assert.ok((await useContext()) > before);
  for (let i = 0; i < 20 && handles() > before; i++) {
    global.gc?.();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (global.gc) assert.equal(handles(), before);
});

test("a loop's predicate sees the latest maxHistorySize outputs (100 by default), oldest first", async () => {
  const harness = new AgentHarness({ name: 't', params: {} });
  const seenBy = async (extra, iterations) => {
    const lengths = [];
    let last;
    const body = loop({
      id: 'l',
      steps: [step.run({ id: 'inc', execute: (n) => n + 1 })],
      until: (snapshot) => {
        lengths.push(snapshot.history.length);
        last = snapshot.history;
        return { stop: snapshot.stepCount >= iterations };
      },
      maxIterations: iterations + 1,
      ...extra,
    });
    assert.equal(await harness.run(body, 0), iterations);
    return { lengths, last };
  };
  const byDefault = await seenBy({}, 150);
  assert.equal(Math.max(...byDefault.lengths), 100);
  assert.deepEqual(byDefault.last, Array.from({ length: 100 }, (_, i) => 51 + i));
  const three = await seenBy({ maxHistorySize: 3 }, 10);
  assert.deepEqual(three.lengths, [1, 2, 3, 3, 3, 3, 3, 3, 3, 3]);
  assert.deepEqual(three.last, [8, 9, 10]);
});

// Appends to a createContext context with no run in flight are held in JS and sent when a run needs the log.
const note = (id, text) => ({ id, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] });
const readLog = step.run({ id: 'read', execute: async (_input, ctx) => ctx.itemLog.items.map((item) => item.id) });

test('appends between runs are read at once, in order, and the next run finds every one in its log', async () => {
  const harness = new AgentHarness({ name: 't', params: {} });
  const ctx = harness.createContext({ items: [note('a', 'first')] });
  const b = note('b', 'second');
  ctx.itemLog.append(b);
  ctx.itemLog.append(note('c', 'third'));
  assert.deepEqual(ctx.itemLog.items.map((item) => item.id), ['a', 'b', 'c']);
  assert.equal(ctx.itemLog.items[1], b);
  assert.deepEqual(await harness.run(readLog, 'x', ctx), ['a', 'b', 'c']);
  // An append inside a run goes straight in; one after it is held again, and both are in the log of the run after.
  const appendInRun = step.run({ id: 'add', execute: async (_input, inner) => (inner.itemLog.append(note('d', 'in run')), 'ok') });
  await harness.run(appendInRun, 'x', ctx);
  ctx.itemLog.append(note('e', 'after'));
  assert.deepEqual(await harness.run(readLog, 'x', ctx), ['a', 'b', 'c', 'd', 'e']);
  assert.equal(ctx.itemLog.items.length, 5);
});

test('a held item with no JSON form is named when the log is next needed, and taken out with the ones after it', async () => {
  const harness = new AgentHarness({ name: 't', params: {} });
  const ctx = harness.createContext({ items: [note('a', 'first')] });
  ctx.itemLog.append(note('b', 'fine'));
  ctx.itemLog.append({ ...note('c', 'bad'), size: 10n });
  ctx.itemLog.append(note('d', 'after'));
  assert.equal(ctx.itemLog.items.length, 4);
  await assert.rejects(harness.run(readLog, 'x', ctx), /position 2 has no JSON form.*BigInt.*1 appended after it/s);
  assert.deepEqual(ctx.itemLog.items.map((item) => item.id), ['a', 'b']);
  assert.deepEqual(await harness.run(readLog, 'x', ctx), ['a', 'b']);
});

test('held items with unusual JSON reach the native log as the very text JSON.stringify gives them', async () => {
  const unusual = [
    { id: 'u1', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: `half ${'\ud83d'} emoji, ${'x'.repeat(20_000)}` }] },
    { id: 'u2', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: 'numbers' }], meta: { big: 1e21, negZero: -0, tiny: 5e-324, nested: [[1, [2, [3]]], {}] } },
    { id: 'u3', type: 'reasoning', summary: [{ type: 'summary_text', text: 'é😀\u2028\u0000' }] },
  ];
  const harness = new AgentHarness({ name: 't', params: {}, llm: { provider: 'scripted', script: [{ text: 'ok' }] } });
  const ctx = harness.createContext({ items: unusual.slice(0, 2) });
  ctx.itemLog.append(unusual[2]);
  await harness.run(step.llm({ id: 'ask', model: 'scripted' }), 'go', ctx);
  // The native log costs each item from its text; the sum is exactly upstream's estimate of what JS holds.
  const items = ctx.itemLog.items;
  const estimate = items.reduce((sum, item) => sum + Math.ceil(JSON.stringify(item).length / 4), 0);
  assert.equal(ctx.lastLayerUsage.historyTokens, estimate);
  assert.deepEqual(items.slice(0, 3), unusual);
  assert.equal(items[1].meta.negZero, -0);
});

// Held items are sent only when a step reads the log natively: a run of JS steps alone converts none of them.
// How many items the runtime has been sent (its texts), the held ones not counted.
const nativeLength = (ctx) => ctx.itemLog._rt.native.itemsJson(ctx.id, 0, 2 ** 31).length;

test('a run that never reads the log natively leaves the held items in JS; the first model step takes them all', async () => {
  const seed = Array.from({ length: 50 }, (_, i) => note(`s${i}`, `seeded ${i}`));
  const { model, requests } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, _testCallModel: model });
  const ctx = harness.createContext({ items: seed });
  assert.equal(await harness.run(step.run({ id: 'js', execute: async () => 'done' }), 'x', ctx), 'done');
  assert.equal(nativeLength(ctx), 0, 'nothing was converted for a JS step');
  ctx.itemLog.append(note('late', 'held after the run'));
  await harness.run(step.llm({ id: 'ask', model: 'm' }), 'question', ctx);
  // The model saw the seed, the late append and the input, in order; the native log holds them and the answer.
  const seen = requests.at(-1).items.map((item) => item.id ?? item.role);
  assert.deepEqual(seen.slice(0, 51), [...seed.map((item) => item.id), 'late']);
  assert.equal(nativeLength(ctx), 53);
  const items = ctx.itemLog.items;
  assert.equal(items.length, 53);
  assert.equal(items[0], seed[0], 'the held objects keep their identity');
  const estimate = items.reduce((sum, item) => sum + Math.ceil(JSON.stringify(item).length / 4), 0);
  assert.equal(ctx.lastLayerUsage.historyTokens, estimate);
});

test('two runs started together in a context with held items both see every item once', async () => {
  const seed = Array.from({ length: 20 }, (_, i) => note(`s${i}`, `seeded ${i}`));
  const { model, requests } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, _testCallModel: model });
  const ctx = harness.createContext({ items: seed });
  const ask = step.llm({ id: 'ask', model: 'm' });
  await Promise.all([harness.run(ask, 'one', ctx), harness.run(ask, 'two', ctx)]);
  for (const request of requests) {
    const ids = request.items.map((item) => item.id).filter((id) => id?.startsWith('s'));
    assert.deepEqual(ids, seed.map((item) => item.id));
  }
  // The seed, then each run's input and answer.
  assert.equal(nativeLength(ctx), 24);
  assert.equal(ctx.itemLog.items.length, 24);
});

test('a held item with no JSON form fails the model step that needed the log, and the context keeps working', async () => {
  const { model } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, _testCallModel: model });
  const ctx = harness.createContext({ items: [note('a', 'first')] });
  ctx.itemLog.append({ ...note('b', 'bad'), size: 10n });
  ctx.itemLog.append(note('c', 'after'));
  const ask = step.llm({ id: 'ask', model: 'm' });
  await assert.rejects(harness.run(ask, 'x', ctx), /position 1 has no JSON form.*BigInt.*1 appended after it/s);
  assert.deepEqual(ctx.itemLog.items.map((item) => item.id), ['a']);
  await harness.run(ask, 'again', ctx);
  assert.equal(ctx.itemLog.items.length, 3);
});

test('cwd helpers: a cd moves the context and keeps where it was; a cd to the same place keeps the history; a snapshot is a copy', async () => {
  const { AgentHarness, getToolCwd, setToolCwd, snapshotCwdState } = await import('../js/index.mjs');
  const { retargetCwdForSpawn } = await import('../js/unstable.mjs');
  const ctx = new AgentHarness({ name: 'cwd', params: {}, initialCwd: '/work' }).createContext();
  assert.equal(getToolCwd(ctx), '/work');
  assert.equal(getToolCwd(undefined, '/fallback'), '/fallback');
  assert.equal(getToolCwd(undefined), process.cwd());
  assert.deepEqual(setToolCwd(ctx, '/work/src'), { previousCwd: '/work', newCwd: '/work/src' });
  assert.deepEqual(setToolCwd(ctx, '/work/src'), { previousCwd: '/work', newCwd: '/work/src' });
  assert.deepEqual(ctx.cwdState, { cwd: '/work/src', previousCwd: '/work' });
  const copy = snapshotCwdState(ctx);
  copy.cwd = '/elsewhere';
  assert.equal(ctx.cwdState.cwd, '/work/src');
  const restore = retargetCwdForSpawn(ctx, '/child');
  assert.deepEqual(ctx.cwdState, { cwd: '/child', previousCwd: '/work' });
  restore();
  assert.deepEqual(ctx.cwdState, { cwd: '/work/src', previousCwd: '/work' });
});

test('asking for a layer state of a context whose items are still held in JS does not lose them', async () => {
  const { model, requests } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, memory: [probe('p', 1, [])], _testCallModel: model });
  const hello = { id: 'u0', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: 'hello' }] };
  const ctx = harness.createContext({ items: [hello] });
  // Looked up by id only: it must find this very context, whose log holds `hello` until a run needs it.
  harness.getLayerState(ctx.id, 'p');
  await harness.run(step.llm({ id: 'ask', model: 'm' }), 'next', ctx);
  const texts = requests[0].items.filter((i) => i.type === 'message').map((i) => i.content[0].text);
  assert.ok(texts.includes('hello') && texts.includes('next'), JSON.stringify(texts));
});

test("a step's context has upstream's state, abortSignal and channelStore", async () => {
  const { AgentHarness: Harness, step: s } = await import('../js/index.mjs');
  const seen = [];
  const look = s.run({ id: 'look', execute: async (_input, ctx) => {
    seen.push({ state: ctx.state, signal: ctx.abortSignal, store: ctx.channelStore });
    ctx.state.touched = true;
    return 'done';
  } });
  const harness = new Harness({ name: 'c', params: {}, initialStep: look });
  await harness.run(look, '', { threadId: 'T' });
  await harness.execute('hi', { threadId: 'T' });
  await harness.getAgentResponse({ threadId: 'T' });
  await harness.execute('again', { threadId: 'T' });
  await harness.getAgentResponse({ threadId: 'T' });
  // A context given no state starts with an object of its own, every turn (each is an execution).
  assert.deepEqual(seen.map((s) => s.state), [{ touched: true }, { touched: true }, { touched: true }]);
  assert.notEqual(seen[1].state, seen[2].state);
  for (const { signal, store } of seen) {
    assert.ok(signal instanceof AbortSignal);
    assert.equal(signal.aborted, false);
    assert.equal(typeof store.recv, 'function');
  }
  assert.equal(seen[0].store, seen[1].store, "every context shares the harness's channel store");
  const ctx = harness.createContext();
  const signal = ctx.abortSignal;
  ctx.abort('stop');
  assert.equal(signal.aborted, true, 'the signal aborts with the context');
});

test("lastStepMeta names the last LLM step's function calls and usage, as a loop's predicate and a step read it", async () => {
  const { z } = await import('zod');
  const lookup = tool({ name: 'lookup', description: 'look a thing up', input: z.object({ q: z.string() }), execute: async ({ q }) => `found ${q}` });
  const seen = [];
  const chat = step.llm({ id: 'chat', model: 'test/model', tools: [lookup] });
  const read = step.run({ id: 'read', execute: async (_input, ctx) => ctx.lastStepMeta });
  const agent = loop({ id: 'agent', steps: [chat, read], until: (s) => (seen.push(s.lastStepMeta), { stop: true }) });
  const script = [{ toolCalls: [{ name: 'lookup', arguments: { q: 'tea' } }] }, { text: 'done' }];
  const h = new AgentHarness({ name: 'a', params: {}, llm: { provider: 'scripted', script } });
  const fromStep = await h.run(agent, 'hi');
  for (const meta of [seen[0], fromStep]) {
    assert.deepEqual(meta.toolCalls.map((call) => [call.type, call.name, JSON.parse(call.arguments).q]), [['function_call', 'lookup', 'tea']]);
    assert.ok(meta.usage.inputTokens > 0 && meta.usage.outputTokens > 0);
    assert.equal(meta.cost, 0);
  }
  // A value a step sets is what is read back.
  const ctx = h.createContext();
  const set = step.run({ id: 'set', execute: async (_input, c) => ((c.lastStepMeta = { mine: true }), c.lastStepMeta) });
  assert.deepEqual(await h.run(set, 'x', ctx), { mine: true });
});

test("ctx.tokens has upstream's keys: `cached` from the first model call counted, in a loop's snapshot too", async () => {
  const answer = (cachedTokens) => ({ items: [{ type: 'message', id: `m${cachedTokens}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }], usage: { inputTokens: 5, outputTokens: 1, ...(cachedTokens ? { cachedTokens } : {}) } });
  let calls = 0;
  const harness = new AgentHarness({ name: 't', params: {}, _testCallModel: async () => answer(calls++ === 0 ? 0 : 4) });
  const ctx = harness.createContext({ threadId: 'T' });
  assert.deepEqual({ ...ctx.tokens }, { input: 0, output: 0, total: 0 }, 'no model call yet: no cached');
  await harness.run(step.run({ id: 'plain', execute: async () => 'no model' }), 'x', ctx);
  assert.equal('cached' in ctx.tokens, false);
  await harness.run(step.llm({ id: 'first', model: 'm' }), 'x', ctx);
  assert.deepEqual({ ...ctx.tokens }, { input: 5, output: 1, total: 6, cached: 0 });
  const snapshots = [];
  await harness.run(
    loop({ id: 'again', steps: [step.llm({ id: 'second', model: 'm' })], until: (snapshot) => (snapshots.push(snapshot.tokens), { stop: true }) }),
    'y',
    ctx,
  );
  assert.deepEqual(snapshots, [{ input: 10, output: 2, total: 12, cached: 4 }], "a loop's predicate sees the same tokens");
  assert.equal(ctx.tokens.cached, 4);
});

test('a context looked at as an object shows its public fields as its own, live, and none of the machinery', async () => {
  const { model } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, _testCallModel: model });
  const ctx = harness.createContext({ threadId: 'T', state: { n: 1 } });
  const fields = ['id', 'stepCount', 'tokens', 'cost', 'state', 'parent', 'depth', 'span', 'threadId', 'resourceId', 'itemLog', 'lastStepMeta', 'lastLayerUsage', 'harness', 'layers', 'unifiedTools', 'itemSchemas', 'cwdState', 'channelStore'];
  assert.deepEqual(Object.keys(ctx), fields);
  assert.ok(Object.hasOwn(ctx, 'threadId') && 'threadId' in ctx && 'elapsed' in ctx && !Object.hasOwn(ctx, 'elapsed'));
  const { threadId, depth, state } = ctx;
  assert.deepEqual([threadId, depth, state], ['T', 0, { n: 1 }]);
  const copy = { ...ctx };
  assert.equal(copy.threadId, 'T');
  assert.ok(Object.keys(copy).every((key) => !key.startsWith('_')));
  // JSON.stringify does not meet a cycle, and writes what user code reads.
  const json = JSON.parse(JSON.stringify(ctx));
  assert.deepEqual([json.threadId, json.depth, json.state, json.stepCount], ['T', 0, { n: 1 }, 0]);
  assert.deepEqual(Object.keys(json.itemLog), ['itemSchemas', '_items', '_frozenCache']);
  // A step's own context is the same shape, with live counters; a property the user sets is listed after the fields.
  const seen = await harness.run(step.run({ id: 'look', execute: async (_input, c) => ({ keys: Object.keys(c), count: { ...c }.stepCount }) }), 'x', ctx);
  assert.deepEqual(seen, { keys: fields, count: 1 });
  ctx.mine = 42;
  assert.deepEqual(Object.keys(ctx), [...fields, 'mine']);
  assert.equal(JSON.parse(JSON.stringify(ctx)).mine, 42);
});

test("what user code puts on a context reads back as from a plain object: its getter sees the context it was read from, an underscore key is kept but never listed", async () => {
  const { model } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, _testCallModel: model });
  const ctx = harness.createContext({ threadId: 'T' });
  Object.defineProperty(ctx, 'self', { get() { return this; }, enumerable: true, configurable: true });
  assert.equal(ctx.self, ctx, 'a getter the user defined is called with the context as its receiver');
  let written;
  Object.defineProperty(ctx, 'sink', { set(v) { written = [this, v]; }, configurable: true });
  ctx.sink = 7;
  assert.deepEqual(written, [ctx, 7], 'a setter the user defined too');
  ctx._mine = { n: 1 };
  assert.deepEqual(ctx._mine, { n: 1 });
  assert.ok(!Object.keys(ctx).includes('_mine') && !('_mine' in { ...ctx }), 'an underscore key is the package’s namespace: never listed');
  // The package's own fields still work through the same face: a run places its items in the log the caller holds.
  await harness.run(step.run({ id: 'r', execute: async () => 'done' }), 'x', ctx);
  assert.equal(ctx.threadId, 'T');
  assert.equal(ctx.stepCount, 1);
  delete ctx.self;
  assert.ok(!('self' in ctx));
});
