// Bad input is rejected with a NoeticConfigError that names what the caller passed (issue 6, defects 8-10):
// never a TypeError from the internals, never silent acceptance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, NoeticConfigError, createInMemoryStorage, createMessage, loop, memory, react, spawn, step, until, workingMemory } from '../js/index.mjs';
import { allocateBudgets, assembleView } from '../js/unstable.mjs';
import { recordingModel } from './helpers.mjs';

const harness = (opts = {}) => new AgentHarness({ name: 't', params: {}, ...opts });
const layer = (extra = {}) => ({ id: 'notes', slot: 1, scope: 'thread', hooks: {}, ...extra });
const echo = step.run({ id: 'echo', execute: async (input) => input });
const ask = step.llm({ id: 'ask', model: 'm' });
const reply = (text) => ({ id: 'r1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] });
const answering = (response) => async () => response;

// `fn` throws or rejects with a NoeticConfigError of `code` whose message contains every fragment.
async function rejects(fn, code, ...fragments) {
  await assert.rejects(
    async () => fn(),
    (e) => {
      assert.ok(e instanceof NoeticConfigError, `expected a NoeticConfigError, got ${e?.stack ?? e}`);
      assert.equal(e.code, code, e.message);
      for (const fragment of fragments) assert.ok(e.message.includes(fragment), `'${e.message}' names ${fragment}`);
      assert.ok(e.hint.length > 0, 'a hint says what to pass instead');
      return true;
    },
  );
}

test('layer timeouts that would fire at once or never are rejected where the layer is registered', async () => {
  const withTimeouts = (timeouts) => [layer({ timeouts })];
  await rejects(() => harness({ memory: withTimeouts({ recall: Number.NaN }) }), 'INVALID_LAYER_TIMEOUT', "'notes'", "'recall'", 'NaN');
  await rejects(() => harness({ memory: withTimeouts({ store: -5 }) }), 'INVALID_LAYER_TIMEOUT', "'store'", '-5');
  await rejects(() => harness({ memory: withTimeouts({ init: 'soon' }) }), 'INVALID_LAYER_TIMEOUT', "'init'", '"soon"');
  await rejects(() => harness({ memory: withTimeouts(5000) }), 'INVALID_LAYER_TIMEOUT', '5000', 'object');
  await rejects(() => react({ model: 'm', memory: withTimeouts({ recall: 'soon' }) }), 'INVALID_LAYER_TIMEOUT', '"soon"');
  await rejects(() => harness().createContext({ memory: withTimeouts({ recall: -1 }) }), 'INVALID_LAYER_TIMEOUT', '-1');
  // 0 (no timeout, as upstream), Infinity, long timeouts, unset entries and names that are no hook are accepted.
  harness({ memory: withTimeouts({ recall: 0, store: Number.POSITIVE_INFINITY, init: 30 * 24 * 3600 * 1000, dispose: undefined, onInit: 'x' }) });
});

test('a timeout of 2^31 ms or more, or Infinity, does not fire early', async () => {
  for (const ms of [2 ** 31, 30 * 24 * 3600 * 1000, Number.POSITIVE_INFINITY]) {
    const diagnostics = [];
    const { model, requests } = recordingModel();
    const slow = layer({ timeouts: { recall: ms }, hooks: { recall: () => new Promise((resolve) => setTimeout(() => resolve('remembered'), 30)) } });
    const h = harness({ memory: [slow], _testCallModel: model, onDiagnostic: (d) => diagnostics.push(d) });
    await h.run(ask, 'hi');
    assert.deepEqual(diagnostics, [], `timeout ${ms}`);
    assert.equal(requests[0].items[0].content[0].text, 'remembered');
  }
});

test('memory must be an array of layers or memory([...]) everywhere it is accepted', async () => {
  const single = layer();
  const code = 'INVALID_MEMORY_CONFIG';
  await rejects(() => harness({ memory: single }), code, 'AgentHarness', "single layer object (id 'notes')");
  await rejects(() => harness({ memory: { layers: single } }), code, 'AgentHarness', '{ layers: an object }');
  await rejects(() => harness({ memory: 'notes' }), code, '"notes"');
  await rejects(() => react({ model: 'm', memory: single }), code, 'react');
  await rejects(() => spawn({ id: 'child', child: echo, memory: single }), code, "spawn 'child'");
  await rejects(() => harness().createContext({ memory: single }), code, 'createContext');
  await rejects(() => harness().run(echo, 'x', { memory: single }), code, 'harness.run');
  // The two accepted forms.
  harness({ memory: [single] });
  harness({ memory: memory([single]) });
  react({ model: 'm', memory: memory([workingMemory()]) });
});

test('tokenizer: anything but the estimate and the two real vocabularies is rejected, and named', async () => {
  await rejects(() => harness({ tokenizer: 'bogus' }), 'INVALID_TOKENIZER', '"bogus"', "'o200k'");
  await rejects(() => harness({ tokenizer: 42 }), 'INVALID_TOKENIZER', '42');
  harness({ tokenizer: 'estimate' });
  harness({ tokenizer: 'o200k' });
  harness({ tokenizer: 'cl100k' });
});

test('storage must be a storage adapter, and the error says what is missing', async () => {
  await rejects(() => harness({ storage: 42 }), 'INVALID_STORAGE', '42');
  await rejects(() => harness({ storage: { get() {}, set() {} } }), 'INVALID_STORAGE', "'delete'", "'list'");
  harness({ storage: createInMemoryStorage() });
  harness({ storage: { get: async () => undefined, set: async () => {}, delete: async () => {}, list: async () => [] } });
});

test('native storage names a key or value it cannot hold', async () => {
  const storage = createInMemoryStorage();
  await rejects(() => storage.set('k', () => 1), 'INVALID_STORAGE_VALUE', "'k'", 'function has no JSON form');
  await rejects(() => storage.set('k', { n: 1n }), 'INVALID_STORAGE_VALUE', "'k'", 'BigInt');
  await rejects(() => storage.get(42), 'INVALID_STORAGE_KEY', 'storage.get', '42');
  // What JSON.stringify drops or turns into null is stored that way (DECISIONS B2).
  await storage.set('k', { entries: [1, undefined, () => 1], at: () => 1 });
  assert.deepEqual(await storage.get('k'), { entries: [1, null, null] });
  await storage.set('k', { fine: [1, 'two', null] });
  assert.deepEqual(await storage.get('k'), { fine: [1, 'two', null] });
});

test('the in-memory store reads back keys of any length and text, as it wrote them', async () => {
  const storage = createInMemoryStorage();
  // Keys around the reader's 256-byte buffer, with a multi-byte character across its end, and a lone surrogate
  // (kept as U+FFFD both ways).
  const keys = [
    '',
    'plain',
    'k'.repeat(254),
    'k'.repeat(255),
    'k'.repeat(256),
    `${'k'.repeat(253)}é€𝄞`,
    `${'k'.repeat(250)}𝄞𝄞`,
    'ü'.repeat(5000),
    'lone \ud800 surrogate',
  ];
  for (const [i, key] of keys.entries()) await storage.set(key, { i, text: `värde ${i} 𝄞` });
  for (const [i, key] of keys.entries()) assert.deepEqual(await storage.get(key), { i, text: `värde ${i} 𝄞` }, `key of ${key.length} units`);
  assert.deepEqual(await storage.get('lone \ufffd surrogate'), { i: 8, text: 'värde 8 𝄞' });
  assert.equal(await storage.get('k'.repeat(257)), null);
  assert.equal(await storage.get(`${'k'.repeat(253)}é€`), null, 'a key cut short is not found');
});

test('strictItemSchemas: false lets extension item types into the log; strict (the default) rejects them', async () => {
  const note = { id: 'n1', type: 'acme:note', text: 'kept' };
  const model = answering({ items: [note, reply('ok')], usage: { inputTokens: 1, outputTokens: 1 } });
  const seen = step.run({ id: 'seen', execute: async (_input, ctx) => ctx.itemLog.items.map((item) => item.type) });
  const body = loop({ id: 'l', steps: [ask, seen], until: until.maxSteps(1) });
  assert.deepEqual(await harness({ _testCallModel: model, strictItemSchemas: false }).run(body, 'hi'), ['message', 'acme:note', 'message']);
  await assert.rejects(harness({ _testCallModel: model }).run(body, 'hi'), (e) => e.noeticError?.kind === 'item_schema_mismatch');
  const open = harness({ strictItemSchemas: false }).createContext({ items: [note] });
  open.itemLog.append({ id: 'n2', type: 'acme:note', text: 'also' });
  assert.equal(open.itemLog.items.length, 2);
});

test('itemSchemas must list zod schemas per category; strictItemSchemas must be a boolean', async () => {
  const schema = { safeParse: () => ({ success: true }) };
  harness({ itemSchemas: { items: [schema], toolResults: [schema] } });
  await rejects(() => harness({ itemSchemas: { items: schema } }), 'INVALID_ITEM_SCHEMAS', 'itemSchemas.items', 'an array');
  await rejects(() => harness({ itemSchemas: { developerMessages: [schema, 'x'] } }), 'INVALID_ITEM_SCHEMAS', 'developerMessages[1]', '"x"');
  await rejects(() => harness({ itemSchemas: 'strict' }), 'INVALID_ITEM_SCHEMAS', '"strict"');
  await rejects(() => harness({ strictItemSchemas: 'no' }), 'INVALID_ITEM_SCHEMAS', '"no"');
  harness({ itemSchemas: { items: [] }, strictItemSchemas: true });
});

test('a throwing until predicate stops the loop, as upstream, and is reported as a diagnostic', async () => {
  const diagnostics = [];
  const body = loop({ id: 'l', steps: [echo], until: () => { throw new Error('predicate broke'); } });
  assert.equal(await harness({ onDiagnostic: (d) => diagnostics.push(d) }).run(body, 'out'), 'out');
  assert.equal(diagnostics.length, 1);
  assert.equal(diagnostics[0].stepId, 'l');
  assert.equal(diagnostics[0].hook, 'until');
  assert.match(diagnostics[0].message, /predicate broke/);
});

test("a _testCallModel reply that is not an LLM response names the field", async () => {
  const run = (response) => harness({ _testCallModel: answering(response) }).run(ask, 'hi');
  const code = 'INVALID_MODEL_RESPONSE';
  await rejects(() => run({ items: [reply('x')], cost: '0.01' }), code, '_testCallModel', 'cost "0.01"', 'a number');
  await rejects(() => run({ items: 'nope' }), code, 'items "nope"', 'an array');
  await rejects(() => run({ items: [reply('x')], usage: { inputTokens: '3', outputTokens: 1 } }), code, 'usage.inputTokens "3"');
  await rejects(() => run({ items: ['text'] }), code, 'items[0] "text"');
  await rejects(() => run(undefined), code, 'undefined');
  await rejects(() => run([reply('x')]), code, 'items undefined');
  // Fields are read as code reads them: a reply whose items are a getter of its class is a reply.
  class Reply {
    get items() {
      return [reply('got')];
    }
  }
  assert.equal(await run(new Reply()), 'got');
});

test('createContext, run and callModel options of the wrong shape are named', async () => {
  const h = harness({ _testCallModel: answering({ items: [reply('x')] }) });
  await rejects(() => h.createContext({ items: { 0: createMessage('hi', 'user') } }), 'INVALID_CONTEXT_OPTIONS', 'items', 'an object');
  await rejects(() => h.createContext('thread-1'), 'INVALID_CONTEXT_OPTIONS', '"thread-1"');
  await rejects(() => h.run(echo, 'x', null), 'INVALID_RUN_OPTIONS', 'null');
  await rejects(() => h.run(echo, 'x', { threadId: 7 }), 'INVALID_RUN_OPTIONS', 'threadId', '7');
  await rejects(() => h.createContext({ resourceId: {} }), 'INVALID_CONTEXT_OPTIONS', 'resourceId', 'an object');
  await rejects(() => h.run(echo, 'x', harness().createContext()), 'INVALID_RUN_OPTIONS', 'another harness');
  await rejects(() => h.callModel({ model: 'm', items: 'hi' }), 'INVALID_MODEL_REQUEST', 'items', '"hi"');
  await rejects(() => harness({ llm: { provider: 'scripted', script: [] } }).callModel({ model: 'm', items: {} }), 'INVALID_MODEL_REQUEST', 'an object');
  // As upstream, createContext(null) means no options.
  assert.equal(h.createContext(null).itemLog.items.length, 0);
  await rejects(() => h.createContext().abort(42), 'INVALID_ABORT_REASON', '42');
});

test('numbers where the native side needs them are checked at the boundary', async () => {
  await rejects(() => harness({ projection: { tokenBudget: '1000', responseReserve: 10, overflow: 'truncate' } }), 'INVALID_PROJECTION_POLICY', 'tokenBudget', '"1000"');
  await rejects(() => harness({ projection: { tokenBudget: 1000, responseReserve: 10, overflow: 'shrink' } }), 'INVALID_PROJECTION_POLICY', '"shrink"');
  await rejects(() => step.llm({ id: 's', model: 'm', projection: { tokenBudget: 1000 } }), 'INVALID_PROJECTION_POLICY', "step.llm 's'", 'responseReserve');
  await rejects(() => allocateBudgets({ layers: [], totalBudget: '100', systemPromptTokens: 0, responseReserve: 0 }), 'INVALID_BUDGET_INPUT', 'totalBudget', '"100"');
  await rejects(() => allocateBudgets({ layers: [{ id: 'a', budget: { min: '1', max: 5 } }], totalBudget: 100, systemPromptTokens: 0, responseReserve: 0 }), 'INVALID_LAYER_BUDGET', "'a'", 'budget.min');
  await rejects(() => assembleView({ systemPromptItems: [], layerOutputItems: [], historyItems: [], policy: { tokenBudget: '9', responseReserve: 0 } }), 'INVALID_PROJECTION_POLICY', 'policy.tokenBudget');
  // Checked before any arithmetic: a BigInt budget is named, not a TypeError about mixing types.
  await rejects(() => assembleView({ systemPromptItems: [], layerOutputItems: [], historyItems: [createMessage('a', 'user')], policy: { tokenBudget: 10n, responseReserve: 0 } }), 'INVALID_PROJECTION_POLICY', 'policy.tokenBudget', '10n');
  await rejects(() => allocateBudgets({ totalBudget: 100, systemPromptTokens: 0, responseReserve: 0 }), 'INVALID_BUDGET_INPUT', 'layers is undefined');
  // An overflow the runtime does not know is the sliding window, for the view as for the policy JS measured.
  const history = ['a', 'b', 'c'].map((text) => createMessage(text, 'user'));
  const view = assembleView({ systemPromptItems: [], layerOutputItems: [], historyItems: history, policy: { tokenBudget: 1e6, responseReserve: 0, overflow: 7, windowSize: 2 } });
  assert.deepEqual(view, history.slice(1));
});

test('a built-in hook called directly names a value that is not JSON', async () => {
  await rejects(() => workingMemory().hooks.store({ state: '', newItems: [() => 1] }), 'INVALID_HOOK_PARAMS', 'working-memory', 'params.items[0] is a function');
  await rejects(() => workingMemory().hooks.store({ state: '', newItems: [{ type: 'message', content: [{ at: () => 1 }] }] }), 'INVALID_HOOK_PARAMS', 'params.items[0].content[0].at is a function');
});

test('a loop written as a plain object without a steps array is named', async () => {
  await rejects(() => harness().run({ kind: 'loop', id: 'plain', until: until.maxSteps(1) }, 'x'), 'INVALID_STEP', "loop 'plain'", 'undefined');
});

test('a malformed item in a 100k-item history is named by its index', async () => {
  const { NoeticConfigError: ConfigError } = await import('../js/index.mjs');
  const h = harness();
  const items = Array.from({ length: 100_000 }, (_, i) => ({ id: `m${i}`, type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }));
  items[54_321] = { id: 'bad', kind: 'no type' };
  assert.throws(() => h.createContext({ items }), (e) => /items\[54321\]/.test(e.message));
  // Something with no JSON form at all is named too, not lost in the array the items cross in.
  items[54_321] = () => {};
  assert.throws(() => h.createContext({ items }), (e) => /createContext items\[54321\]: not an item/.test(e.message));
  // A seeded history is checked when a turn first reads it (DECISIONS I3): that turn fails, naming the item.
  items[54_321] = 42;
  const { model, requests } = recordingModel();
  const seeded = harness({ initialStep: step.llm({ id: 'chat', model: 'm' }), _testCallModel: model });
  seeded.seedSessionHistory('T', items);
  await seeded.execute('go', { threadId: 'T' });
  await assert.rejects(seeded.getAgentResponse({ threadId: 'T' }), (e) => e instanceof ConfigError && e.code === 'INVALID_SEED_ITEMS' && /seedSessionHistory: items\[54321\]/.test(e.message));
  assert.equal(requests.length, 0, 'no model call saw the refused history');
});

test('a hook result that is not what the hook returns fails that hook alone, named by layer and field, never in the bridge’s words', async () => {
  const diagnostics = [];
  const bad = (id, hooks) => ({ id, slot: 10, scope: 'thread', hooks });
  const good = { id: 'good', slot: 20, scope: 'thread', hooks: { recall: async () => ({ items: [createMessage('from the good layer', 'developer')] }) } };
  const { requests, model } = recordingModel();
  const h = harness({ onDiagnostic: (d) => diagnostics.push(d), _testCallModel: model });
  const layers = [
    bad('holes', { recall: async () => ({ items: [undefined] }) }),
    bad('counted', { recall: async () => ({ items: [createMessage('x', 'developer')], tokenCount: 'many' }) }),
    bad('appender', { onItemAppend: async () => ({ items: [createMessage('kept', 'user'), undefined] }) }),
    good,
  ];
  await h.run(ask, 'hello', { threadId: 'T', memory: layers });
  const said = Object.fromEntries(diagnostics.map((d) => [`${d.layerId}:${d.hook}`, d.message]));
  assert.equal(said['holes:recall'], 'recall returned items[0] = undefined; expected an item (an object whose "type" is a non-empty string)');
  assert.equal(said['counted:recall'], 'recall returned tokenCount "many"; expected a number of tokens, or none to have the items counted');
  assert.equal(said['appender:onItemAppend'], 'onItemAppend returned items[1] = undefined; expected an item (an object whose "type" is a non-empty string)');
  for (const message of Object.values(said)) assert.doesNotMatch(message, /malformed reply|line \d+ column/);
  // The other layer's recall and the user's message were not spoilt by their neighbours' replies.
  const sent = JSON.stringify(requests[0].items);
  assert.ok(sent.includes('from the good layer') && sent.includes('hello'), sent);

  // onSpawn's items, the same way.
  const spawner = bad('spawner', { onSpawn: async () => ({ childState: {}, items: [null] }) });
  await h.run(spawn({ id: 'child', child: ask }), 'hi', { threadId: 'T', memory: [spawner] });
  assert.ok(diagnostics.some((d) => d.layerId === 'spawner' && d.message === 'onSpawn returned items[0] = null; expected an item (an object whose "type" is a non-empty string)'));
});

test('ctx.itemLog.append names a value that is not an item, or has no JSON form', async () => {
  const h = harness();
  // Thrown in a step.run, it is the step_failed error's cause, as any error a step throws.
  const appending = (value) => async () => {
    try {
      await h.run(step.run({ id: 'appends', execute: async (_input, ctx) => ctx.itemLog.append(value) }), 'x');
    } catch (e) {
      throw e.noeticError?.cause ?? e;
    }
  };
  for (const [value, said] of [[undefined, 'undefined'], [5, '5'], [{ role: 'user' }, 'an object']]) {
    await rejects(appending(value), 'INVALID_ITEM', `ctx.itemLog.append: ${said} is not an item`);
  }
  await rejects(appending({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x' }], big: 1n }), 'INVALID_ITEM', 'no JSON form', 'BigInt');
});

// The checks run natively on a description of what was passed (DECISIONS R9): an adapter's methods may be
// inherited from its class, a class instance is named by its class, and a value JSON cannot carry is named as JS
// names it.
test('option checks see inherited methods and name class instances, functions, NaN and Infinity', () => {
  class Store {
    async get() {}
    async set() {}
    async delete() {}
  }
  const refuses = (opts, code, message) =>
    assert.throws(() => harness(opts), (e) => e instanceof NoeticConfigError && e.code === code && e.message === message && Boolean(e.hint));
  refuses({ storage: new Store() }, 'INVALID_STORAGE', "AgentHarness storage has no 'list' method.");
  class Full extends Store {
    async list() {
      return [];
    }
  }
  assert.ok(harness({ storage: new Full() }));
  refuses({ traceExporter: new Store() }, 'INVALID_TRACE_EXPORTER', 'AgentHarness traceExporter is a Store; expected an object with an export(spans) method.');
  refuses({ projection: { tokenBudget: NaN, responseReserve: () => 1 } }, 'INVALID_PROJECTION_POLICY', 'AgentHarness projection.responseReserve is a function; expected a number.');
  refuses({ sessionIdleMs: -Infinity }, 'INVALID_SESSION_OPTIONS', 'AgentHarness sessionIdleMs is -Infinity; expected a positive number of milliseconds.');
  refuses({ tools: [{ name: 't', execute: 'no' }] }, 'INVALID_TOOLS', 'AgentHarness tools[0] is not a tool (it needs a string name and an execute function).');
  assert.ok(harness({ persistSessions: true, sessionIdleMs: Infinity, tools: [{ name: 't', execute: async () => 1 }] }));
  assert.throws(() => spawn({ id: 's', child: echo, contextOut: { strategy: 'schema', schema: new Store() } }), (e) => e.code === 'INVALID_CONTEXT_OUT');
  assert.throws(() => step.llm({ id: 'l', model: 'm', projection: { tokenBudget: 1, responseReserve: 1, overflow: 'drop' } }), (e) => e.code === 'INVALID_PROJECTION_POLICY' && e.message.startsWith("step.llm 'l' projection.overflow is \"drop\""));
});
