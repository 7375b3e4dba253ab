// Sessions (issue 7): execute, responses, delivery modes, aborts, history, memory across turns, streams, and the
// process's life while turns run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AgentHarness, NoeticConfigError, createMessage, loop, seedFromItems, step, until } from '../js/index.mjs';
import { slow } from './helpers.mjs';

const chat = step.llm({ id: 'chat', model: 'test/model' });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function reply(text) {
  return { items: [{ id: `m-${Math.random()}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }], usage: { inputTokens: 2, outputTokens: 1 } };
}

// A test model that answers `<n>:<items it saw>` and can hold each call until released.
function model({ gated = false } = {}) {
  const seen = [];
  const gates = [];
  const call = async (request) => {
    seen.push(request.items);
    if (gated) await new Promise((resolve) => gates.push(resolve));
    return reply(`${seen.length}:${request.items.length}`);
  };
  const waitForCalls = async (n) => {
    for (let i = 0; i < 200 && seen.length < n; i++) await sleep(5);
    assert.ok(seen.length >= n, `expected ${n} model calls, saw ${seen.length}`);
  };
  return { call, seen, waitForCalls, release: () => gates.shift()?.() };
}

const harnessWith = (testModel, opts = {}) =>
  new AgentHarness({ name: 'agent', params: {}, initialStep: chat, _testCallModel: testModel.call, ...opts });

async function idle(harness, scope) {
  for (let i = 0; i < 200 && harness.getStatus(scope).kind !== 'idle'; i++) await sleep(5);
  assert.equal(harness.getStatus(scope).kind, 'idle');
}

test('execute takes a string, an item or items; the response carries text, items and usage', async () => {
  const m = model();
  const h = harnessWith(m);
  await h.execute('hello');
  const first = await h.getAgentResponse();
  assert.equal(first.text, '1:1');
  assert.equal(first.items.length, 2);
  assert.equal(first.items[0].content[0].text, 'hello');
  assert.equal(first.items[0].role, 'user');
  assert.deepEqual(first.usage, { inputTokens: 2, outputTokens: 1, cachedTokens: undefined });
  const item = createMessage('as an item', 'user');
  await h.execute(item);
  assert.equal((await h.getAgentResponse()).items[2], item, 'an item handed to execute is itself in the log');
  await h.execute([createMessage('one', 'user'), createMessage('two', 'user')]);
  const third = await h.getAgentResponse();
  // The history grew turn by turn: 2 + 2 + 3 items, the model seeing all but its own reply each time.
  assert.deepEqual(m.seen.map((items) => items.length), [1, 3, 6]);
  assert.equal(third.items.length, 7);
  assert.equal(third.usage.inputTokens, 2, "the usage is the turn's own, as upstream's (each turn is an execution)");
});

test('bad calls are clear errors: no initial step, a bad input, an unknown delivery mode', async () => {
  const none = new AgentHarness({ name: 'a', params: {} });
  await assert.rejects(none.execute('x'), (e) => e instanceof NoeticConfigError && e.code === 'NO_STEP_CONFIGURED');
  const h = harnessWith(model());
  for (const bad of [42, null, { no: 'type' }, [createMessage('ok', 'user'), 7]]) {
    await assert.rejects(h.execute(bad), (e) => e instanceof NoeticConfigError && e.code === 'INVALID_EXECUTE_INPUT');
  }
  await assert.rejects(h.execute('x', { deliveryMode: 'soon' }), (e) => e.code === 'INVALID_DELIVERY_MODE' && /"soon"/.test(e.message));
  assert.throws(() => harnessWith(model(), { defaultDeliveryMode: 'later' }), (e) => e.code === 'INVALID_DELIVERY_MODE');
  assert.equal(h.getQueueSize(), 0, 'nothing was queued by the failed calls');
});

test("execute's checks name what they were given, in order, and queue nothing", async () => {
  const h = harnessWith(model());
  const refusal = (code, message) => (e) => e instanceof NoeticConfigError && e.code === code && e.message === message;
  const got = (what) => `execute(input): input must be a string, an item or an array of items; got ${what}.`;
  await assert.rejects(h.execute('x', null), refusal('INVALID_EXECUTE_OPTIONS', 'execute(input, options): options must be an object, got null.'));
  await assert.rejects(h.execute('x', 'A'), refusal('INVALID_EXECUTE_OPTIONS', 'execute(input, options): options must be an object, got string.'));
  await assert.rejects(h.execute(42, { threadId: () => 'A' }), refusal('INVALID_THREAD_ID', 'execute: threadId must be a string, got function.'));
  await assert.rejects(h.execute(42, { messageId: 7 }), refusal('INVALID_EXECUTE_OPTIONS', 'execute: messageId must be a string, got number.'));
  await assert.rejects(h.execute(undefined), refusal('INVALID_EXECUTE_INPUT', got('undefined')));
  await assert.rejects(h.execute(Symbol('s')), refusal('INVALID_EXECUTE_INPUT', got('symbol')));
  await assert.rejects(h.execute([createMessage('ok', 'user'), () => {}]), refusal('INVALID_EXECUTE_INPUT', got('an array holding a non-item')));
  const none = new AgentHarness({ name: 'a', params: {} });
  await assert.rejects(none.execute(42, null), (e) => e.code === 'NO_STEP_CONFIGURED', 'no initial step is told first');
  assert.equal(h.getQueueSize(), 0);
  // An array of items, a lone item and a null threadId (the default session) are taken.
  await h.execute([createMessage('one', 'user')], { threadId: null, messageId: 'mine' });
  assert.equal((await h.getAgentResponse()).items[0].content[0].text, 'one');
});

test('sessions are isolated by threadId, and status and queue size never create one', async () => {
  const m = model();
  const h = harnessWith(m);
  await h.execute('for A', { threadId: 'A' });
  await h.execute('for B', { threadId: 'B' });
  const [a, b] = await Promise.all([h.getAgentResponse({ threadId: 'A' }), h.getAgentResponse({ threadId: 'B' })]);
  assert.equal(a.items[0].content[0].text, 'for A');
  assert.equal(b.items[0].content[0].text, 'for B');
  assert.equal(b.items.length, 2, 'B does not see A');
  assert.deepEqual(h.getStatus({ threadId: 'nobody' }), { kind: 'idle' });
  assert.equal(h.getQueueSize({ threadId: 'nobody' }), 0);
});

test('messages sent during a turn run together next; interrupt aborts and goes first; abort keeps the queue', async () => {
  const m = model({ gated: true });
  const h = harnessWith(m);
  const events = [];
  const reading = (async () => {
    for await (const event of h.getFullStream()) {
      events.push(event);
      if (events.filter((e) => e.type === 'agent:turn_completed' || e.type === 'agent:turn_aborted').length === 2) break;
    }
  })();
  await h.execute('first', { messageId: 'm1' });
  await m.waitForCalls(1);
  assert.equal(h.getStatus().kind, 'generating');
  await h.execute('queued', { messageId: 'm2' });
  await h.execute('urgent', { messageId: 'm3', deliveryMode: 'interrupt' });
  assert.equal(h.getStatus().kind, 'aborting');
  m.release();
  await m.waitForCalls(2);
  m.release();
  await idle(h);
  assert.equal((await h.getAgentResponse()).text, '2:4');
  await reading;
  const started = events.filter((e) => e.type === 'agent:turn_started').map((e) => e.data.messageIds);
  assert.deepEqual(started, [['m1'], ['m3', 'm2']]);
  assert.ok(events.some((e) => e.type === 'agent:turn_aborted'));

  // abort: the queued message drives a fresh turn.
  await h.execute('next');
  await m.waitForCalls(3);
  await h.execute('follow-up');
  assert.equal(h.getQueueSize(), 1);
  const aborting = h.abort({ reason: 'user' });
  m.release();
  await aborting;
  await m.waitForCalls(4);
  m.release();
  await idle(h);
  assert.equal(h.getQueueSize(), 0);
  assert.equal((await h.getAgentResponse()).items.at(-2).content[0].text, 'follow-up');
});

test('a failed turn rejects its waiters and leaves no history; the session keeps working and nothing queued is lost', async () => {
  let calls = 0;
  const diagnostics = [];
  const flaky = { id: 'flaky', slot: 1, scope: 'thread', hooks: { recall: async () => { throw new Error('recall broke'); } } };
  const h = new AgentHarness({
    name: 'agent',
    params: {},
    initialStep: chat,
    memory: [flaky],
    onDiagnostic: (d) => diagnostics.push(d),
    _testCallModel: async () => {
      calls++;
      if (calls === 1) throw new Error('first-turn-boom');
      return reply('fine');
    },
  });
  await h.execute('a');
  await assert.rejects(h.getAgentResponse(), /first-turn-boom/);
  await assert.rejects(h.getAgentResponse(), /first-turn-boom/, 'idle after a failure: the failure answers at once');
  await h.execute('b');
  const response = await h.getAgentResponse();
  assert.equal(response.text, 'fine');
  // As upstream's session: only a turn whose step returned adds to the history, so 'a' went with its turn.
  assert.deepEqual(response.items.filter((i) => i.role === 'user').map((i) => i.content[0].text), ['b']);
  assert.ok(diagnostics.every((d) => d.layerId === 'flaky' && d.hook === 'recall'), 'a throwing hook is a diagnostic, not a failed turn');
});

test("a turn that fails part-way takes all it added out of the history: its messages and the rounds it got through", async () => {
  const seen = [];
  let failNext = false;
  const twice = loop({ id: 'twice', steps: [chat], until: until.maxSteps(2) });
  const h = new AgentHarness({
    name: 'agent', params: {}, initialStep: twice,
    _testCallModel: async (request) => {
      seen.push(request.items.map((item) => item.content[0].text));
      if (failNext && seen.length % 2 === 0) throw new Error('second round broke');
      return reply(`r${seen.length}`);
    },
  });
  const textOf = (item) => item.content[0].text;
  await h.execute('one');
  const history = (await h.getAgentResponse()).items.map(textOf);
  failNext = true;
  await h.execute('two');
  await assert.rejects(h.getAgentResponse(), /second round broke/);
  assert.ok(seen[3].length > history.length + 1, 'the failed turn got through a round before it broke');
  failNext = false;
  await h.execute('three');
  const response = await h.getAgentResponse();
  assert.deepEqual(seen[4], [...history, 'three'], "nothing of the failed turn reaches the next one's model");
  assert.deepEqual(response.items.map(textOf).slice(0, history.length + 1), [...history, 'three']);
  assert.equal((await h.previewRequestItems()).length, response.items.length);
});

test('a history seeded while a turn runs stands if that turn fails, and gives way to it if it succeeds (as upstream)', async () => {
  const m = model({ gated: true });
  let fail = true;
  const h = harnessWith({ call: async (request) => { const answer = await m.call(request); if (fail) throw new Error('broke'); return answer; } });
  await h.execute('first', { threadId: 'T' });
  await m.waitForCalls(1);
  h.seedSessionHistory('T', [createMessage('seeded', 'user')]);
  m.release();
  await assert.rejects(h.getAgentResponse({ threadId: 'T' }), /broke/);
  fail = false;
  await h.execute('second', { threadId: 'T' });
  await m.waitForCalls(2);
  h.seedSessionHistory('T', [createMessage('seeded again', 'user')]);
  m.release();
  await h.getAgentResponse({ threadId: 'T' });
  assert.deepEqual(m.seen[1].map((item) => item.content[0].text), ['seeded', 'second'], 'the seed stood after the failed turn');
  await h.execute('third', { threadId: 'T' });
  await m.waitForCalls(3);
  m.release();
  await h.getAgentResponse({ threadId: 'T' });
  assert.deepEqual(m.seen[2].map((item) => item.content[0].text), ['seeded', 'second', '2:2', 'third'], 'the turn that succeeded replaced the later seed');
});

test("previewRequestItems while a turn runs shows the history before it: the turn's own items are not history yet", async () => {
  const m = model({ gated: true });
  const h = harnessWith(m);
  await h.execute('first');
  await m.waitForCalls(1);
  m.release();
  await h.getAgentResponse();
  await h.execute('second');
  await m.waitForCalls(2);
  assert.deepEqual((await h.previewRequestItems()).map((item) => item.content[0].text), ['first', '1:1']);
  m.release();
  await h.getAgentResponse();
  assert.deepEqual((await h.previewRequestItems()).map((item) => item.content[0].text), ['first', '1:1', 'second', '2:3']);
});

test('memory layers see one thread across turns: each turn inits, reloading the state the last one stored', async () => {
  let inits = 0;
  const counter = {
    id: 'counter',
    slot: 300,
    scope: 'thread',
    hooks: {
      init: async ({ storage }) => (inits++, { state: (await storage.get('state')) ?? { turns: 0 } }),
      recall: async ({ state }) => `turns so far: ${state.turns}`,
      store: async ({ state }) => ({ state: { turns: state.turns + 1 } }),
    },
  };
  const m = model();
  const h = harnessWith(m, { memory: [counter] });
  for (let i = 0; i < 3; i++) {
    await h.execute(`turn ${i}`);
    await h.getAgentResponse();
  }
  assert.equal(inits, 3);
  const recalled = m.seen.map((items) => items.find((item) => item.role === 'developer')?.content?.[0]?.text);
  assert.deepEqual(recalled, ['turns so far: 0', 'turns so far: 1', 'turns so far: 2']);
});

test('seedSessionHistory and seedFromItems give the next turn a history, per thread, replacing any before', async () => {
  const m = model();
  const h = harnessWith(m);
  const old = [createMessage('earlier question', 'user'), reply('earlier answer').items[0]];
  h.seedSessionHistory('T', old);
  seedFromItems(h, 'T', []); // nothing to seed: a no-op
  await h.execute('now', { threadId: 'T' });
  const response = await h.getAgentResponse({ threadId: 'T' });
  assert.equal(response.items[0], old[0], 'seeded objects are the history');
  assert.equal(m.seen[0].length, 3);
  seedFromItems(h, 'T', [createMessage('only this', 'user')]);
  await h.execute('again', { threadId: 'T' });
  await h.getAgentResponse({ threadId: 'T' });
  assert.equal(m.seen[1].length, 2, 'seeding replaced the history');
  assert.throws(() => h.seedSessionHistory('T', 'not an array'), (e) => e.code === 'INVALID_SEED_ITEMS');
});

test('a seed is a copy, checked when a turn first reads it: a bad one fails that turn, whole, and the session goes on', async () => {
  const m = model();
  const h = harnessWith(m);
  const seed = [createMessage('kept', 'user')];
  h.seedSessionHistory('T', seed);
  seed.push(createMessage('pushed after seeding', 'user'));
  await h.execute('first', { threadId: 'T' });
  await h.getAgentResponse({ threadId: 'T' });
  assert.deepEqual(m.seen[0].map((item) => item.content[0].text), ['kept', 'first'], 'the caller\'s later change is not seen');

  h.seedSessionHistory('T', [createMessage('fine', 'user'), null, createMessage('after', 'user')]);
  await h.execute('second', { threadId: 'T' });
  await assert.rejects(h.getAgentResponse({ threadId: 'T' }), (e) => e.code === 'INVALID_SEED_ITEMS' && /seedSessionHistory: items\[1\] is not an item/.test(e.message));
  assert.equal(m.seen.length, 1, 'the refused history reached no model');
  await h.execute('third', { threadId: 'T' });
  const response = await h.getAgentResponse({ threadId: 'T' });
  assert.deepEqual(m.seen[1].map((item) => item.content[0].text), ['third'], 'none of the refused seed entered the history');
  assert.equal(response.items.length, 2);
});

// A seeded history of known item types is held in JS (as createContext's items are) until a turn reads it.
const seededContext = (h, threadId) => [...h._runtime.contexts.values()].find((c) => c.threadId === threadId);

test('a seeded history stays in JS until a turn or a preview reads it, then arrives whole, in order, once', async () => {
  const m = model();
  const h = harnessWith(m);
  const seed = Array.from({ length: 300 }, (_, i) => i % 2 ? reply(`seeded ${i}`).items[0] : createMessage(`seeded ${i}`, 'user'));
  h.seedSessionHistory('T', seed);
  const ctx = seededContext(h, 'T');
  const converted = () => h._runtime.native.itemsJson(ctx.id, 0, 2 ** 31).length;
  assert.equal(converted(), 0, 'seeding converted nothing');
  assert.equal(h._runtime.native.logLength(ctx.id), 300, 'the runtime counts the held items');
  const preview = await h.previewRequestItems({ threadId: 'T' });
  assert.deepEqual(preview, seed);
  assert.equal(converted(), 300);
  assert.equal(ctx.itemLog.items[299], seed[299], 'the caller\'s objects stand for the history');
  await h.execute('now', { threadId: 'T' });
  const response = await h.getAgentResponse({ threadId: 'T' });
  assert.equal(m.seen[0].length, 301);
  assert.equal(response.items.length, 302);
  assert.equal(response.items[0], seed[0]);
  // A second seed replaces the first before any turn reads it; the next turn sees only it.
  const again = [createMessage('fresh start', 'user')];
  h.seedSessionHistory('T', again);
  await h.execute('next', { threadId: 'T' });
  assert.equal((await h.getAgentResponse({ threadId: 'T' })).items.length, 3);
  assert.equal(m.seen[1].length, 2);
});

test('a seed item with no JSON form fails the turn that reads it; the session goes on without the seed', async () => {
  const m = model();
  const h = harnessWith(m);
  h.seedSessionHistory('T', [createMessage('fine', 'user'), { ...createMessage('bad', 'user'), n: 1n }, createMessage('after', 'user')]);
  await h.execute('first', { threadId: 'T' });
  await assert.rejects(h.getAgentResponse({ threadId: 'T' }), /seedSessionHistory: items\[1\] has no JSON form.*BigInt/s);
  await h.execute('second', { threadId: 'T' });
  const response = await h.getAgentResponse({ threadId: 'T' });
  assert.deepEqual(response.items.map((item) => item.content[0].text), ['second', `${m.seen.length}:1`]);
});

test('several readers each get every event; a reader that stops reading stalls nothing', async () => {
  const h = harnessWith(model());
  // A reader that asks once and never again. (Awaiting it here would wait for a turn: a reader waiting on a quiet
  // session keeps Node alive no more than any pending promise does.)
  const stalled = h.getFullStream()[Symbol.asyncIterator]();
  const once = stalled.next();
  const collect = async () => {
    const types = [];
    for await (const event of h.getFullStream()) {
      types.push(event.type);
      if (types.filter((t) => t === 'agent:turn_completed').length === 3) return types;
    }
  };
  const readers = [collect(), collect()];
  for (let i = 0; i < 3; i++) {
    await h.execute(`m${i}`);
    await h.getAgentResponse();
  }
  const [a, b] = await Promise.all(readers);
  assert.deepEqual(a, b);
  assert.deepEqual(a.slice(0, 4), ['agent:turn_started', 'agent:step_started', 'agent:step_completed', 'agent:turn_completed']);
  assert.equal((await once).value.type, 'agent:turn_started');
  await stalled.return();
  // Text and reasoning streams carry provider deltas only: a test model has none, and they end on return().
  const text = h.getTextStream()[Symbol.asyncIterator]();
  const pending = text.next();
  await text.return();
  assert.deepEqual(await pending, { done: true, value: undefined });
});

const entry = fileURLToPath(new URL('../js/index.cjs', import.meta.url));
function child(source) {
  return spawnSync(process.execPath, ['-e', source], { encoding: 'utf8', timeout: slow(20_000) });
}

test('from CommonJS: a turn nobody awaits keeps Node alive until it ends, and then Node exits', () => {
  const result = child(`
    const { AgentHarness, step } = require(${JSON.stringify(entry)});
    const h = new AgentHarness({ name: 'a', params: {}, initialStep: step.llm({ id: 'c', model: 'm' }),
      _testCallModel: async () => { await new Promise((r) => setTimeout(r, 100));
        console.log('model answered');
        return { items: [], usage: { inputTokens: 0, outputTokens: 0 } }; } });
    h.execute('hi');`);
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /model answered/);
});

test("harness tools are offered in a session to a step without tools of its own, and a tool gets upstream's ToolExecutionContext", async () => {
  const { z } = await import('zod');
  const { tool } = await import('../js/index.mjs');
  const seenContexts = [];
  const states = [];
  const lookup = tool({ name: 'lookup', description: 'look a thing up', input: z.object({ q: z.string() }), execute: async (args, toolCtx) => {
    seenContexts.push(toolCtx);
    // The layer states of the turn's execution, read and written while it runs.
    states.push(toolCtx.memory.get('notes'));
    toolCtx.memory.set('notes', { n: 2 });
    states.push(toolCtx.memory.get('notes'));
    return `found ${args.q}`;
  } });
  const notes = { id: 'notes', slot: 1, scope: 'thread', hooks: { init: async () => ({ state: { n: 1 } }) } };
  const script = [{ toolCalls: [{ name: 'lookup', arguments: { q: 'tea' } }] }, { text: 'done' }];
  const h = new AgentHarness({ name: 'agent', params: {}, initialStep: chat, tools: [lookup], memory: [notes], llm: { provider: 'scripted', script } });
  await h.execute('find tea');
  const response = await h.getAgentResponse();
  assert.equal(response.text, 'done');
  assert.equal(response.items.find((i) => i.type === 'function_call_output').output, 'found tea');
  const toolCtx = seenContexts[0];
  assert.equal(toolCtx.harness, h);
  assert.equal(toolCtx.ctx.threadId, '__default__');
  assert.equal(h._runtime.inputs.size, 0, 'nothing handed to execute is held once its turn has it');
  assert.deepEqual(states, [{ n: 1 }, { n: 2 }]);
  // The log as it stood when the tool ran: the turn's input (round items enter it when the model call returns).
  assert.equal(toolCtx.assembledView[0].content[0].text, 'find tea');
  assert.ok('lastStepMeta' in toolCtx && 'fs' in toolCtx && 'shell' in toolCtx);
  // Outside a session (harness.run) a step without tools is offered only its layers' tools, as upstream.
  assert.throws(() => new AgentHarness({ name: 'a', params: {}, tools: [{ name: 'x' }] }), (e) => e.code === 'INVALID_TOOLS');
});

test("a fork's paths in a session are not offered the session's tools (as upstream: only the session's own context is)", async () => {
  const { z } = await import('zod');
  const { fork, tool } = await import('../js/index.mjs');
  const lookup = tool({ name: 'lookup', description: 'look a thing up', input: z.object({ q: z.string() }), execute: async () => 'x' });
  const offered = [];
  // No tools: the request has none (its `tools` is undefined, as upstream's).
  const _testCallModel = async (request) => (offered.push(request.tools?.map((t) => t.name) ?? []), reply('ok'));
  const paths = fork({ id: 'paths', mode: 'all', paths: () => [step.llm({ id: 'a', model: 'm' }), step.llm({ id: 'b', model: 'm' })], merge: (r) => r.join() });
  const fh = new AgentHarness({ name: 'forked', params: {}, initialStep: paths, tools: [lookup], _testCallModel });
  await fh.execute('go');
  await fh.getAgentResponse();
  assert.deepEqual(offered, [[], []]);
  offered.length = 0;
  const ch = new AgentHarness({ name: 'chat', params: {}, initialStep: chat, tools: [lookup], _testCallModel });
  await ch.execute('go');
  await ch.getAgentResponse();
  assert.deepEqual(offered, [['lookup']]);
});

test("a session's context and its tools reach the harness's adapters", async () => {
  const { createInMemoryFsAdapter } = await import('../js/index.mjs');
  const fs = createInMemoryFsAdapter();
  await fs.writeFile('/notes.txt', 'tea');
  let seen;
  const peek = step.run({ id: 'peek', execute: async (_input, ctx) => ((seen = ctx), 'ok') });
  const h = new AgentHarness({ name: 'agent', params: {}, initialStep: peek, fs });
  await h.execute('look');
  assert.equal((await h.getAgentResponse()).text, 'ok');
  assert.equal(seen.fs, fs);
  assert.equal(await seen.fs.readFileText('/notes.txt'), 'tea');
  assert.equal(seen.shell, h.shell);
  assert.equal(seen.subprocess, h.subprocess);
});

test('previewRequestItems: layer recalls before the session history, read-only, failures a diagnostic', async () => {
  const diagnostics = [];
  const hint = { id: 'hint', slot: 1, scope: 'execution', hooks: { recall: async () => 'be brief' } };
  const broken = { id: 'broken', slot: 2, scope: 'execution', hooks: { recall: async () => { throw new Error('no recall'); } } };
  const h = new AgentHarness({ name: 'agent', params: {}, memory: [hint, broken], onDiagnostic: (d) => diagnostics.push(d) });
  assert.deepEqual((await h.previewRequestItems({ threadId: 'empty' })).map((i) => i.content[0].text), ['be brief']);
  h.seedSessionHistory('T', [createMessage('earlier', 'user')]);
  const preview = await h.previewRequestItems({ threadId: 'T' });
  assert.deepEqual(preview.map((i) => [i.role, i.content[0].text]), [['developer', 'be brief'], ['user', 'earlier']]);
  assert.deepEqual(diagnostics.map((d) => `${d.layerId}:${d.hook}`), ['broken:recall', 'broken:recall']);
  assert.equal(h.getQueueSize({ threadId: 'never' }), 0);
  const bare = new AgentHarness({ name: 'bare', params: {} });
  assert.deepEqual(await bare.previewRequestItems({ threadId: 'never' }), []);
  assert.equal(bare.createContext().layers, undefined, 'a context without layers has none');
  assert.deepEqual(h.createContext().layers.map((l) => l.id), ['hint', 'broken']);
});

test("between-rounds: a message sent during a turn's tool round joins that turn before its next round", async () => {
  const { z } = await import('zod');
  const { tool } = await import('../js/index.mjs');
  let h;
  const ask = tool({
    name: 'ask_user',
    description: 'ask',
    input: z.object({}),
    execute: async () => {
      await h.execute('also: green tea', { deliveryMode: 'between-rounds', messageId: 'extra' });
      await h.execute('a separate question', { messageId: 'later' });
      return 'asked';
    },
  });
  const script = [{ toolCalls: [{ name: 'ask_user', arguments: {} }] }, { text: 'noted both' }, { text: 'second turn' }];
  h = new AgentHarness({ name: 'agent', params: {}, initialStep: step.llm({ id: 'chat', model: 'm', tools: [ask] }), llm: { provider: 'scripted', script } });
  const events = [];
  const reading = (async () => {
    for await (const event of h.getFullStream()) {
      events.push(event);
      if (events.filter((e) => e.type === 'agent:turn_completed').length === 2) return;
    }
  })();
  await h.execute('what do I like?', { messageId: 'first' });
  const response = await h.getAgentResponse();
  await reading;
  assert.equal(response.text, 'second turn');
  const injected = events.find((e) => e.type === 'agent:inbox_injected');
  assert.deepEqual(injected.data, { round: 1, count: 1, messageIds: ['extra'] });
  const started = events.filter((e) => e.type === 'agent:turn_started').map((e) => e.data.messageIds);
  assert.deepEqual(started, [['first'], ['later']], 'the between-rounds message started no turn of its own');
  const kinds = response.items.map((i) => (i.type === 'message' ? `${i.role}:${i.content[0].text}` : i.type));
  assert.deepEqual(kinds.slice(0, 5), ['user:what do I like?', 'user:also: green tea', 'function_call', 'function_call_output', 'assistant:noted both']);
  assert.equal(h._runtime.inputs.size, 0, 'an injected message holds nothing back');
});

test('ExecuteOptions.state is the turn’s ctx.state, the very value, set by the first message of each turn', async () => {
  const seen = [];
  const peek = step.run({ id: 'peek', execute: async (_input, ctx) => (seen.push(ctx.state), 'ok') });
  const h = new AgentHarness({ name: 'agent', params: {}, initialStep: peek });
  const mine = { user: 'ada' };
  await h.execute('one', { state: mine });
  await h.getAgentResponse();
  await h.execute('two', { state: { user: 'bob' } });
  await h.getAgentResponse();
  assert.equal(seen[0], mine);
  assert.deepEqual(seen[1], { user: 'bob' });
});

const gc = globalThis.gc ?? (globalThis.Bun ? () => globalThis.Bun.gc(true) : undefined);

test('a stream outlives its harness: read after the harness is dropped, it still yields what the session said', { skip: !gc }, async () => {
  let h = harnessWith(model());
  const stream = h.getFullStream();
  await h.execute('hello');
  await h.getAgentResponse();
  h = undefined;
  for (let i = 0; i < 3; i++) {
    gc();
    await sleep(10);
  }
  const types = [];
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'agent:turn_completed') break;
  }
  assert.deepEqual(types, ['agent:turn_started', 'agent:step_started', 'agent:step_completed', 'agent:turn_completed']);
});

test('from CommonJS: the whole session API', () => {
  const result = child(`
    const { AgentHarness, step } = require(${JSON.stringify(entry)});
    const h = new AgentHarness({ name: 'cjs', params: {}, initialStep: step.llm({ id: 'c', model: 'm' }),
      llm: { provider: 'scripted', script: [{ text: 'one' }, { text: 'two' }] } });
    (async () => {
      const seen = [];
      const reading = (async () => { for await (const e of h.getFullStream({ threadId: 'T' })) { seen.push(e.type); if (seen.filter((t) => t === 'cjs:turn_completed').length === 2) return; } })();
      await h.execute('first', { threadId: 'T' });
      const a = await h.getAgentResponse({ threadId: 'T' });
      await h.execute('second', { threadId: 'T' });
      const b = await h.getAgentResponse({ threadId: 'T' });
      await reading;
      console.log(JSON.stringify({ a: a.text, b: b.text, items: b.items.length, status: h.getStatus({ threadId: 'T' }).kind, events: seen.length }));
    })();`);
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), { a: 'one', b: 'two', items: 4, status: 'idle', events: 14 });
});

test('harnesses a program drops are collected even when it never yields to the event loop', () => {
  // Everything here runs on promises alone (a test model answering at once), so the microtask queue never drains
  // until the end. Each harness holds a megabyte of history; none of it may outlive the harness.
  const flags = globalThis.Bun ? [] : ['--expose-gc'];
  const result = spawnSync(process.execPath, [...flags, '-e', `
    const { AgentHarness, step } = require(${JSON.stringify(entry)});
    const big = 'x'.repeat(1 << 20);
    const reply = { items: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }], usage: { inputTokens: 1, outputTokens: 1 } };
    (async () => {
      const heap = [];
      for (let i = 0; i < 16; i++) {
        const h = new AgentHarness({ name: 'a', params: {}, initialStep: step.llm({ id: 'c', model: 'm' }), _testCallModel: async () => reply });
        await h.execute(big + i);
        await h.getAgentResponse();
        globalThis.gc ? gc() : Bun.gc(true);
        heap.push(process.memoryUsage().heapUsed);
      }
      console.log(JSON.stringify({ grew: (heap[15] - heap[3]) / (1 << 20) }));
    })();`], { encoding: 'utf8', timeout: slow(20_000) });
  assert.equal(result.status, 0, result.stderr);
  const { grew } = JSON.parse(result.stdout);
  assert.ok(grew < 6, `the heap grew by ${grew.toFixed(1)} MB over 12 dropped harnesses`);
});

test('awaiting turn after turn still lets the event loop turn, where Node frees the native side of what was dropped', async () => {
  // Each turn settles in microtasks alone; without a pause now and then, an immediate (and Node's finalizers of
  // dropped native objects, which run between macrotasks) would wait until the loop below ends.
  const h = harnessWith(model());
  let turned = false;
  setImmediate(() => (turned = true));
  const started = performance.now();
  let turns = 0;
  while (!turned && performance.now() - started < 5_000) {
    await h.execute(`turn ${turns++}`);
    await h.getAgentResponse();
  }
  assert.ok(turned, `the event loop never turned in ${turns} turns`);
});

// Node only: there the wait for the loop's turn is a timer (js/liveness.cjs, DECISIONS S15, S18).
test('under load, no turn loses its place among the other sessions for long', { skip: Boolean(globalThis.Bun) }, () => {
  // A thousand sessions whose model answers from a timer keep Node's timers phase busy for longer than the 10 ms
  // after which an answer waits for the loop to turn. Counted in model calls, one turn of a session spans about one
  // round of the others', some two (an answer that waited behind a round of expired timers). How many span two moves
  // with the machine, and no longer tells the rule from an immediate's (0-21% of turns in seventeen runs here, with
  // either), so the test bounds the widest span (DECISIONS S18): no turn loses more than a round.
  const fixture = fileURLToPath(new URL('./fixtures/session-order.mjs', import.meta.url));
  const result = spawnSync(process.execPath, [fixture], { encoding: 'utf8', timeout: slow(60_000) });
  assert.equal(result.status, 0, result.stderr);
  const { widest, p99, over } = JSON.parse(result.stdout);
  assert.ok(widest < 2.5, `a turn spanned ${widest.toFixed(2)} rounds of the other sessions' model calls (p99 ${p99.toFixed(2)}, ${(100 * over).toFixed(1)}% over 1.5)`);
});

test("each response keeps its own turn's lastLayerUsage, read in any order, once or many times", async () => {
  const counter = {
    id: 'counter',
    slot: 300,
    scope: 'thread',
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { turns: 0 } }),
      recall: async ({ state }) => `turn ${state.turns}`,
      store: async ({ state }) => ({ state: { turns: state.turns + 1 } }),
    },
  };
  const h = harnessWith(model(), { memory: [counter] });
  const responses = [];
  for (let i = 0; i < 3; i++) {
    await h.execute(`turn ${i}`);
    responses.push(await h.getAgentResponse());
  }
  const recalled = (r) => r.lastLayerUsage.layers[0].items[0].content[0].text;
  assert.deepEqual([2, 0, 1].map((i) => recalled(responses[i])), ['turn 2', 'turn 0', 'turn 1']);
  assert.equal(responses[0].lastLayerUsage, responses[0].lastLayerUsage, 'read twice, the same object');
  assert.deepEqual(Object.keys(responses[1]).sort(), ['cost', 'items', 'lastLayerUsage', 'text', 'usage']);
  responses[2].lastLayerUsage = 'mine';
  assert.equal(responses[2].lastLayerUsage, 'mine');
  // Without layers the usage holds no items and comes with the response: reading it or letting it go asks
  // nothing of the native side.
  const noLayers = harnessWith(model());
  const native = noLayers._runtime.native;
  const crossings = [];
  for (const name of ['takeLayerUsage', 'dropLayerUsage']) {
    const original = native[name].bind(native);
    native[name] = (...args) => (crossings.push(name), original(...args));
  }
  await noLayers.execute('hi');
  const plain = await noLayers.getAgentResponse();
  assert.deepEqual(Object.keys(plain), ['items', 'usage', 'cost', 'text', 'lastLayerUsage']);
  const usage = plain.lastLayerUsage;
  assert.deepEqual(usage.layers, []);
  assert.equal(usage.modelId, 'test/model');
  assert.equal(usage.totalUsedTokens, usage.systemPromptTokens + usage.toolsTokens + usage.historyTokens);
  assert.ok(usage.historyTokens > 0);
  assert.equal(plain.lastLayerUsage, usage, 'read twice, the same object');
  await noLayers.execute('again');
  (await noLayers.getAgentResponse()).lastLayerUsage = 'mine';
  assert.deepEqual(crossings, []);
});

test('two queued messages that share a messageId each put their own item objects in the log', async () => {
  const m = model();
  const h = harnessWith(m);
  const first = createMessage('first', 'user');
  const second = createMessage('second', 'user');
  // Both are queued before the first turn takes its input.
  const queued = [h.execute(first, { messageId: 'same' }), h.execute(second, { messageId: 'same' })];
  await Promise.all(queued);
  await m.waitForCalls(2);
  await idle(h);
  const items = (await h.getAgentResponse()).items;
  assert.deepEqual(items.map((item) => item.content[0].text), ['first', '1:1', 'second', '2:3']);
  assert.equal(items[0], first, "the first message's own object");
  assert.equal(items[2], second, "the second message's own object");
});

test('the usages of responses a program lets go unread are dropped natively, many in one call', () => {
  const flags = globalThis.Bun ? [] : ['--expose-gc'];
  const result = spawnSync(process.execPath, [...flags, '-e', `
    const { AgentHarness, step } = require(${JSON.stringify(entry)});
    const reply = { items: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }], usage: { inputTokens: 1, outputTokens: 1 } };
    const note = { id: 'note', slot: 300, scope: 'thread', hooks: { recall: async () => 'remember this' } };
    const h = new AgentHarness({ name: 'a', params: {}, memory: [note], initialStep: step.llm({ id: 'c', model: 'm' }), _testCallModel: async () => reply });
    const native = h._runtime.native;
    const single = [];
    const batches = [];
    const drop = native.dropLayerUsage.bind(native);
    const dropMany = native.dropLayerUsages.bind(native);
    native.dropLayerUsage = (key) => (single.push(key), drop(key));
    native.dropLayerUsages = (keys) => (batches.push([...keys]), dropMany(keys));
    const collect = () => (globalThis.gc ? gc() : Bun.gc(true));
    (async () => {
      // One response is kept: its usage must still read after the others are collected.
      await h.execute('kept', { threadId: 'kept' });
      const kept = await h.getAgentResponse({ threadId: 'kept' });
      await (async () => {
        for (let i = 0; i < 40; i++) {
          await h.execute('turn ' + i, { threadId: 't' + i });
          await h.getAgentResponse({ threadId: 't' + i });
        }
      })();
      for (let round = 0; round < 50 && batches.flat().length < 40; round++) {
        collect();
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const dropped = batches.flat();
      console.log(JSON.stringify({
        single: single.length,
        calls: batches.length,
        dropped: dropped.length,
        distinct: new Set(dropped).size,
        gone: dropped.every((key) => native.takeLayerUsage(key) == null),
        kept: kept.lastLayerUsage.layers[0].items.length,
      }));
    })();`], { encoding: 'utf8', timeout: slow(20_000) });
  assert.equal(result.status, 0, result.stderr);
  const seen = JSON.parse(result.stdout);
  // A collector may keep a few responses alive (Bun's scans the stack conservatively); most must go.
  assert.ok(seen.dropped >= 30, `only ${seen.dropped} of 40 unread usages were dropped`);
  assert.equal(seen.distinct, seen.dropped, 'each usage is dropped once');
  assert.ok(seen.calls < seen.dropped / 2, `${seen.dropped} usages took ${seen.calls} calls`);
  assert.equal(seen.single, 0, 'none was dropped through the call for one');
  assert.equal(seen.gone, true, 'a dropped usage is no longer held natively');
  assert.equal(seen.kept, 1, 'the response still referenced reads its usage');
});

test('turns of different sessions reach the model in the order of their execute calls, as upstream', async () => {
  for (let round = 0; round < 20; round++) {
    const order = [];
    const h = new AgentHarness({
      name: 'agent', params: {}, initialStep: chat,
      _testCallModel: async (request) => (order.push(request.items[0].content[0].text), reply('ok')),
    });
    await h.execute('from A', { threadId: 'A' });
    await h.execute('from B', { threadId: 'B' });
    await Promise.all([h.getAgentResponse({ threadId: 'A' }), h.getAgentResponse({ threadId: 'B' })]);
    assert.deepEqual(order, ['from A', 'from B'], `round ${round}`);
  }
});

test('a test model is handed the same history objects turn after turn: no item is converted for it twice', async () => {
  const m = model();
  const h = harnessWith(m);
  h.seedSessionHistory('T', [createMessage('seeded', 'user')]);
  for (const text of ['one', 'two', 'three']) {
    await h.execute(text, { threadId: 'T' });
    await h.getAgentResponse({ threadId: 'T' });
  }
  assert.deepEqual(m.seen.map((items) => items.length), [2, 4, 6]);
  for (let turn = 1; turn < m.seen.length; turn++) {
    const before = m.seen[turn - 1];
    // The user messages made from text, the seed and the model's own replies: each the object it was the turn before.
    before.forEach((item, i) => assert.equal(m.seen[turn][i], item, `turn ${turn}, item ${i}`));
  }
});

test("a test model's reply items are the very objects in the log and in store hooks' newItems (nothing converted back)", async () => {
  const answer = reply('as given');
  let stored;
  const watcher = { id: 'w', slot: 1, scope: 'execution', hooks: { store: async ({ newItems }) => void (stored = newItems) } };
  const h = new AgentHarness({ name: 'agent', params: {}, _testCallModel: async () => answer });
  const ctx = h.createContext({ memory: [watcher] });
  await h.run(chat, 'hi', ctx);
  assert.equal(stored[0], answer.items[0]);
  assert.equal(ctx.itemLog.items.at(-1), answer.items[0]);
  // The reply was placed in the log, and the context holds it no longer.
  assert.equal(ctx._modelReply, undefined);
});

test("a test model receives the very objects a recall hook returned, and nothing is kept for them once the step is done", async () => {
  const recalled = [];
  const notes = {
    id: 'notes', slot: 1, scope: 'thread',
    hooks: { recall: async () => { const item = createMessage(`note ${recalled.length}`, 'developer'); recalled.push(item); return { items: [item], tokenCount: 5 }; } },
  };
  const broken = { id: 'broken', slot: 2, scope: 'thread', hooks: { recall: async () => ({ items: [{ type: '' }], tokenCount: 1 }) } };
  let calls = 0;
  const seen = [];
  const h = new AgentHarness({
    name: 'agent', params: {}, initialStep: chat, memory: [notes, broken], onDiagnostic: () => {},
    _testCallModel: async (request) => {
      seen.push(request.items);
      if (++calls === 2) throw new Error('model down');
      return reply('ok');
    },
  });
  await h.execute('one', { threadId: 'T' });
  await h.getAgentResponse({ threadId: 'T' });
  assert.equal(seen[0][0], recalled[0]);
  assert.equal(h._runtime.recalled.size, 0);
  // A step whose model call fails lets go of what it kept too.
  await h.execute('two', { threadId: 'T' });
  await assert.rejects(h.getAgentResponse({ threadId: 'T' }), /model down/);
  assert.equal(seen[1][0], recalled[1]);
  assert.equal(h._runtime.recalled.size, 0);
});

test('a seeded history of over a megabyte crosses as UTF-8 and keeps every character', async () => {
  const h = harnessWith(model(), { strictItemSchemas: false });
  const texts = ['plain ascii', 'café 北京 😀', 'lone \ud800 surrogate', 'quote " backslash \\ tab \t', '\u0000\u001f'];
  const seed = Array.from({ length: 6_000 }, (_, i) => createMessage(`${i} ${texts[i % texts.length]} ${'x'.repeat(200)}`, 'user'));
  assert.ok(JSON.stringify(seed).length > 1 << 20, 'past the size that crosses as UTF-8');
  h.seedSessionHistory('T', seed);
  const back = await h.previewRequestItems({ threadId: 'T' });
  const ctx = seededContext(h, 'T');
  // Read from the native log: each item's text as the native side holds it.
  const native = h._runtime.native.itemsJson(ctx.id, 0, seed.length).map((text) => JSON.parse(text));
  assert.equal(back.length, seed.length);
  assert.deepStrictEqual(native, JSON.parse(JSON.stringify(seed)));
});

test("a response's items are the history at its turn's end, read then or after later turns", async () => {
  const m = model();
  const h = harnessWith(m);
  await h.execute('one', { threadId: 'T' });
  const first = await h.getAgentResponse({ threadId: 'T' });
  await h.execute('two', { threadId: 'T' });
  const second = await h.getAgentResponse({ threadId: 'T' });
  // Read after the second turn: still the first turn's two items.
  assert.deepEqual(first.items.map((item) => item.content[0].text), ['one', '1:1']);
  assert.equal(first.items, first.items, 'one array, kept');
  assert.deepEqual(second.items.map((item) => item.content[0].text), ['one', '1:1', 'two', '2:3']);
  assert.equal(second.items[0], first.items[0], 'the same objects');
  assert.deepEqual(Object.keys(second), ['items', 'usage', 'cost', 'text', 'lastLayerUsage']);
  assert.equal(JSON.parse(JSON.stringify(second)).items.length, 4);
  second.items = [];
  assert.deepEqual(second.items, []);
  // A store that freezes what it keeps (immer, Redux) freezes a response before reading it.
  await h.execute('frozen', { threadId: 'T' });
  const frozen = Object.freeze(await h.getAgentResponse({ threadId: 'T' }));
  assert.equal(frozen.items.at(-2).content[0].text, 'frozen');
  assert.equal(frozen.items, frozen.items, 'the same array on every read');
  assert.equal(typeof frozen.lastLayerUsage, 'object');
  assert.throws(() => {
    frozen.items = [];
  }, TypeError);
  assert.equal(frozen.items.at(-2).content[0].text, 'frozen');
  // A response whose context a later turn replaced (other options) keeps its items.
  await h.execute('three', { threadId: 'T', resourceId: 'someone' });
  const third = await h.getAgentResponse({ threadId: 'T' });
  await h.execute('four', { threadId: 'T' });
  await h.getAgentResponse({ threadId: 'T' });
  assert.equal(third.items.length, frozen.items.length + 2);
  assert.equal(third.items.at(-2).content[0].text, 'three');
});

test("getAgentResponse's text is whatever the turn's step returned, the very object included, as upstream's", async () => {
  const { z } = await import('zod');
  const answer = { list: [1, 'two'], when: new Date(0) };
  const jsonReply = async () => reply('{"n":3}');
  const turnValue = async (initialStep) => {
    const h = new AgentHarness({ name: 'p', params: {}, initialStep, _testCallModel: jsonReply });
    await h.execute('hi');
    const first = (await h.getAgentResponse()).text;
    await h.execute('again');
    return [first, (await h.getAgentResponse()).text];
  };
  const returning = (value) => step.run({ id: 'turn', execute: async () => value });
  assert.deepEqual(await turnValue(returning(undefined)), [undefined, undefined]);
  assert.deepEqual(await turnValue(returning(null)), [null, null]);
  assert.deepEqual(await turnValue(returning(42)), [42, 42]);
  const [object, again] = await turnValue(returning(answer));
  assert.equal(object, answer, 'the same object, not a copy');
  assert.equal(again, answer);
  assert.deepEqual(await turnValue(step.llm({ id: 'turn', model: 'm', output: z.object({ n: z.number() }) })), [{ n: 3 }, { n: 3 }]);
  assert.deepEqual(await turnValue(step.llm({ id: 'turn', model: 'm' })), ['{"n":3}', '{"n":3}']);
});

test('items a turn made natively (its input rewritten by onItemAppend, a tool round) come with its end: its response has them, read after later turns', async () => {
  const { z } = await import('zod');
  const { tool } = await import('../js/index.mjs');
  // Native reads of the log since the last tool ran (a tool's context reads the log as it stands).
  let reads = 0;
  const lookup = tool({ name: 'lookup', description: 'look a thing up', input: z.object({ q: z.string() }), execute: async ({ q }) => ((reads = 0), `found ${q}`) });
  // The input the log keeps is not the object the caller gave, but one the layer made.
  const shout = {
    id: 'shout',
    slot: 1,
    scope: 'execution',
    hooks: { onItemAppend: async ({ items }) => ({ items: items.map((item) => ({ ...item, content: [{ type: 'input_text', text: item.content[0].text.toUpperCase() }] })) }) },
  };
  const script = [{ toolCalls: [{ name: 'lookup', arguments: { q: 'tea' } }] }, { text: 'one' }, { toolCalls: [{ name: 'lookup', arguments: { q: 'milk' } }] }, { text: 'two' }];
  const h = new AgentHarness({ name: 'agent', params: {}, initialStep: chat, tools: [lookup], memory: [shout], llm: { provider: 'scripted', script } });
  const native = h._runtime.native;
  const itemsJson = native.itemsJson.bind(native);
  native.itemsJson = (...args) => (reads++, itemsJson(...args));
  await h.execute('first', { threadId: 'N' });
  const first = await h.getAgentResponse({ threadId: 'N' });
  assert.equal(reads, 0, 'the tool output and the answer came with the turn, unasked');
  await h.execute('second', { threadId: 'N' });
  const second = await h.getAgentResponse({ threadId: 'N' });
  assert.equal(reads, 0);
  const described = (items) => items.map((item) => (item.type === 'message' ? `${item.role}:${item.content[0].text}` : item.type === 'function_call_output' ? `output:${item.output}` : item.type));
  // Read only now, after the second turn moved the log on.
  const turnOne = ['user:FIRST', 'function_call', 'output:found tea', 'assistant:one'];
  assert.deepEqual(described(first.items), turnOne);
  assert.deepEqual(described(second.items), [...turnOne, 'user:SECOND', 'function_call', 'output:found milk', 'assistant:two']);
  assert.equal(second.items[2], first.items[2], 'one object per position, shared by the responses');
  assert.equal(reads, 0);
});
