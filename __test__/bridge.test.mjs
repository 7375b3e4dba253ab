// The bridge between JS and the native runtime under hostile but realistic use (issue 6): strings JS can hold and
// Rust cannot, harnesses dropped by the thousand, adapters and steps that never settle, unprintable throws, and
// values JSON cannot hold.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  AgentHarness,
  NoeticConfigError,
  createInMemoryStorage,
  createSqliteStorage,
  loop,
  step,
  until,
} from '../js/index.mjs';
import { recordingModel, scratchDb, slow } from './helpers.mjs';


const entry = fileURLToPath(new URL('../js/index.mjs', import.meta.url));
const LONE = '\ud83d'; // half of an emoji, as `'😀'.slice(0, 1)` leaves it
const REPLACED = '\ufffd';
const echo = step.run({ id: 'echo', execute: async (x) => x });
const gc = globalThis.gc ?? (globalThis.Bun ? () => globalThis.Bun.gc(true) : undefined);

function harness(opts = {}) {
  const diagnostics = [];
  const h = new AgentHarness({ name: 'bridge', params: {}, onDiagnostic: (d) => diagnostics.push(d), ...opts });
  return { h, diagnostics };
}

// A thread-scoped layer that saves what the step input said into its state.
function notes(id) {
  return {
    id,
    slot: 300,
    scope: 'thread',
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { said: [] } }),
      store: async ({ state, newItems }) => ({ state: { said: [...state.said, ...newItems.map((i) => i.content?.[0]?.text)] } }),
    },
  };
}

// Runs `source` (an ES module importing the package as `lib`) in a child process.
function child(source, timeout = slow(20_000)) {
  const program = `import * as lib from ${JSON.stringify(entry)};\n${source}`;
  const args = globalThis.Bun ? ['-e', program] : ['--input-type=module', '-e', program];
  return spawnSync(process.execPath, args, { encoding: 'utf8', timeout });
}

// ---- 1. Lone surrogates ------------------------------------------------------------------------------------------

test('a lone surrogate in a run input or a step output crosses as U+FFFD, the one documented replacement', async () => {
  const { h, diagnostics } = harness();
  assert.equal(await h.run(echo, `a${LONE}b`), `a${REPLACED}b`);
  const cut = step.run({ id: 'cut', execute: async () => '😀'.slice(0, 1) });
  assert.equal(await h.run(cut, 'x'), REPLACED);
  // Non-string values stay JS objects and come back untouched.
  const obj = { text: `a${LONE}` };
  assert.equal(await h.run(step.run({ id: 'obj', execute: async () => obj }), 'x'), obj);
  assert.deepEqual(diagnostics, []);
});

test('a model reply, scripted text and a thread id with a lone surrogate do not fail the run', async () => {
  const model = async () => ({
    items: [{ id: 'm', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `hi${LONE}` }] }],
    usage: { inputTokens: 1, outputTokens: 1 },
  });
  const llm = step.llm({ id: 'llm', model: 'm' });
  const viaTestModel = harness({ _testCallModel: model });
  assert.equal(await viaTestModel.h.run(llm, `q${LONE}`, { threadId: `t${LONE}` }), `hi${REPLACED}`);
  const scripted = harness({ llm: { provider: 'scripted', script: [{ text: `ok${LONE}` }] } });
  assert.equal(await scripted.h.run(llm, 'q'), `ok${REPLACED}`);
  assert.deepEqual([...viaTestModel.diagnostics, ...scripted.diagnostics], []);
});

test("a model's text with a lone surrogate becomes the next LLM step's input message exactly, costed as upstream's", async () => {
  const requests = [];
  const texts = [`cut ${LONE}`, 'done'];
  const model = async (request) => {
    requests.push(request.items);
    const text = texts[requests.length - 1];
    return { items: [{ id: `m${requests.length}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }], usage: { inputTokens: 1, outputTokens: 1 } };
  };
  const { h } = harness({ _testCallModel: model });
  const ctx = h.createContext();
  const twice = loop({ id: 'twice', steps: [step.llm({ id: 'llm', model: 'm' })], until: until.maxSteps(2) });
  await h.run(twice, 'go', ctx);
  const input = requests[1].at(-1);
  assert.equal(input.role, 'user');
  // The step's output value itself holds U+FFFD (B1); the message made of it keeps JS's text.
  assert.equal(input.content[0].text, `cut ${LONE}`);
  const { estimateTokens } = await import('../js/index.mjs');
  const expected = ctx.itemLog.items.reduce((sum, item) => sum + estimateTokens(JSON.stringify(item)), 0);
  assert.equal(ctx.lastLayerUsage.historyTokens, expected);
});

test('layer state and a layer id with a lone surrogate persist, with U+FFFD in the stored copy', async () => {
  const storage = createInMemoryStorage();
  const { model } = recordingModel(`said${LONE}`);
  const llm = step.llm({ id: 'llm', model: 'm' });
  const first = harness({ storage, memory: [notes(`notes${LONE}`)], _testCallModel: model });
  await first.h.run(llm, 'hello', { threadId: 'T' });
  assert.deepEqual(first.diagnostics, [], 'no persist diagnostic');
  const keys = await storage.list('layers/');
  assert.deepEqual(keys, [`layers/notes${REPLACED}/T/state`]);
  assert.deepEqual(await storage.get(keys[0]), { said: [`said${REPLACED}`] });
  // A new harness on the same storage rehydrates it.
  let seen;
  const reader = { ...notes(`notes${LONE}`), hooks: { ...notes('x').hooks, recall: async ({ state }) => ((seen = state), null) } };
  const second = harness({ storage, memory: [reader], _testCallModel: model });
  await second.h.run(llm, 'again', { threadId: 'T' });
  assert.deepEqual(seen, { said: [`said${REPLACED}`] });
});

test('texts JS replies with keep every character natively: astral, two-byte, Latin-1, escapes and controls', async () => {
  // Replies cross as UTF-16 and are transcoded natively, and texts going back are made as one-byte strings when ASCII
  // and as UTF-16 otherwise (src/js_string.rs); these exercise each width both ways.
  const text = `ascii é ß 中文 😀 "quoted" back\\slash \n\t\u0001 ${'x'.repeat(300)}😀`;
  const storage = createInMemoryStorage();
  const layer = {
    id: 'wide',
    slot: 300,
    scope: 'thread',
    hooks: {
      init: async () => ({ state: { said: [] } }),
      recall: async () => ({ items: [{ id: 'r', type: 'message', role: 'developer', content: [{ type: 'input_text', text }] }], tokenCount: 9 }),
      store: async ({ state }) => ({ state: { said: [...state.said, text] } }),
    },
  };
  const { model } = recordingModel(text);
  const { h, diagnostics } = harness({ storage, memory: [layer], _testCallModel: model, initialStep: step.llm({ id: 'llm', model: 'm' }) });
  await h.execute(text, { threadId: 'T' });
  const response = await h.getAgentResponse({ threadId: 'T' });
  assert.equal(response.text, text);
  assert.equal(response.lastLayerUsage.layers[0].items[0].content[0].text, text);
  assert.deepEqual(await storage.get('layers/wide/T/state'), { said: [text] });
  for (const value of ['plain ascii', 'Latin-1 only: café ß', '', '😀']) {
    await storage.set('k', { value });
    assert.deepEqual(await storage.get('k'), { value });
  }
  await assert.rejects(h.run(step.run({ id: 'boom', execute: async () => { throw new Error(text); } }), 'x'), { message: `Step 'boom' failed: ${text}` });
  assert.deepEqual(diagnostics, []);
});

// ---- 2. Harnesses are collected -----------------------------------------------------------------------------------

test('discarded harnesses are garbage-collected, with or without a finished run', { skip: !gc, timeout: slow(60_000) }, async () => {
  // WeakRefs, read after full collections: whether a harness is gone, not when the engine runs finalization callbacks
  // (Node 24 delivered a FinalizationRegistry's callbacks for as few as 760 of 2000 harnesses whose WeakRefs were all
  // cleared; the language lets an engine run them late or never).
  const count = 2000;
  const refs = [];
  for (let i = 0; i < count; i++) {
    const h = new AgentHarness({ name: `h${i}`, params: {}, memory: [notes('n')] });
    if (i % 20 === 0) await h.run(echo, 'x');
    refs.push(new WeakRef(h));
  }
  const alive = () => refs.filter((ref) => ref.deref() !== undefined).length;
  const tick = () => new Promise((resolve) => setTimeout(resolve, 25));
  // Reading a WeakRef keeps its target to the end of that task: collections and readings take turns in tasks of their own.
  for (let i = 0; i < 40; i++) {
    gc();
    await tick();
    if (alive() === 0) break;
    await tick();
  }
  // Bun's collector scans the native stack conservatively, so a few harnesses whose addresses linger in a stack slot
  // stay alive (CI saw 1998 of 2000). A leak in the bridge would keep every harness with a run (100) or all of them.
  const collected = count - alive();
  assert.ok(collected >= count - 10, `collected ${collected} of ${count}`);
});

test('a harness nobody references is kept until its run settles', { timeout: slow(20_000) }, async () => {
  const slow = step.run({ id: 'slow', execute: () => new Promise((resolve) => setTimeout(() => resolve('done'), 50)) });
  const pending = new AgentHarness({ name: 'temp', params: {} }).run(slow, 'x');
  gc?.();
  assert.equal(await pending, 'done');
});

test('harnesses created and dropped by the thousand leave RSS flat after GC, once it has plateaued', { skip: !gc, timeout: slow(180_000) }, async () => {
  const settle = async () => {
    for (let i = 0; i < 10; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const batch = async () => {
    for (let i = 0; i < 5000; i++) new AgentHarness({ name: 'leak', params: {}, memory: [notes('n')] });
    await settle();
  };
  // Allocator pools and the JIT grow to their steady size over the first batches; how many depends on the engine
  // (Node 20 one, Node 24 three: 195, 214, 240, 259 MB, then 259 MB for ten more). So the test looks for a plateau:
  // three batches in a row (15,000 harnesses) that add under 20 MB, within twelve batches. Leaking ~8 KB per
  // harness would add 40 MB every batch and never plateau.
  const rss = [];
  for (let i = 0; i < 12; i++) {
    await batch();
    rss.push(process.memoryUsage().rss / 1e6);
    if (rss.length >= 4 && rss.at(-1) - rss.at(-4) < 20) return;
  }
  assert.fail(`RSS after each batch of 5,000 harnesses never plateaued: ${rss.map((mb) => mb.toFixed(0)).join(', ')} MB`);
});

// ---- 3. Storage adapters that hang ----------------------------------------------------------------------------------

test('a storage adapter whose set never settles cannot hang a run; the write in doubt is reported', { timeout: slow(20_000) }, async () => {
  const saved = new Map();
  const stuck = {
    get: async (key) => saved.get(key) ?? null,
    set: () => new Promise(() => {}),
    delete: async (key) => void saved.delete(key),
    list: async () => [...saved.keys()],
  };
  const { h, diagnostics } = harness({ storage: stuck, storageTimeoutMs: 100, memory: [notes('n')], _testCallModel: recordingModel().model });
  const started = Date.now();
  assert.equal(await h.run(step.llm({ id: 'llm', model: 'm' }), 'hello', { threadId: 'T' }), 'ok');
  assert.ok(Date.now() - started < 5000);
  const persist = diagnostics.filter((d) => d.hook === 'persist');
  assert.ok(persist.length >= 1, JSON.stringify(diagnostics));
  // Its outcome is unknown, not "not saved": a write still in flight may yet land.
  assert.match(persist[0].message, /set\('layers\/n\/T\/state'\) did not settle within 100ms \(storageTimeoutMs\): the change may still be saved/);
});

test('storageTimeoutMs must be a positive number', () => {
  for (const bad of [0, -1, Number.NaN, '100']) {
    assert.throws(() => harness({ storageTimeoutMs: bad }), (e) => e instanceof NoeticConfigError && e.code === 'INVALID_STORAGE_TIMEOUT');
  }
  harness({ storageTimeoutMs: Number.POSITIVE_INFINITY });
});

// ---- 5. Pending work never holds Node open ---------------------------------------------------------------------------

// Under Bun even plain JS never exits on a top-level await that cannot settle, so there is nothing to match there.
test('a step or hook that never settles lets Node exit as plain JS would (code 13), not hang', { skip: Boolean(globalThis.Bun) }, () => {
  const neverStep = child(`
    const h = new lib.AgentHarness({ name: 'h', params: {} });
    await h.run(lib.step.run({ id: 's', execute: () => new Promise(() => {}) }), 'x');
    console.log('unreachable');`);
  assert.equal(neverStep.error, undefined, 'the child exited by itself');
  assert.equal(neverStep.status, 13);
  assert.doesNotMatch(neverStep.stdout, /unreachable/);
  // A hook that never settles is bounded by its timeout instead: the run goes on when it fires.
  const neverHook = child(`
    const layer = { id: 'l', slot: 1, scope: 'thread', timeouts: { recall: 200 }, hooks: { recall: () => new Promise(() => {}) } };
    const h = new lib.AgentHarness({ name: 'h', params: {}, memory: [layer], onDiagnostic: (d) => console.log(d.hook, d.message),
      _testCallModel: async () => ({ items: [], usage: {} }) });
    await h.run(lib.step.llm({ id: 's', model: 'm' }), 'x');
    console.log('finished');`);
  assert.equal(neverHook.status, 0, neverHook.stderr);
  assert.match(neverHook.stdout, /recall Timeout after 200ms\nfinished/);
});

test('a run whose step awaits a timer keeps Node alive until it finishes', () => {
  const result = child(`
    const h = new lib.AgentHarness({ name: 'h', params: {} });
    const out = await h.run(lib.step.run({ id: 's', execute: () => new Promise((r) => setTimeout(() => r('late'), 200)) }), 'x');
    console.log('result', out);`);
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /result late/);
});

// ---- 6. Unprintable throws ---------------------------------------------------------------------------------------------

function unprintables() {
  const badToString = { toString() { throw new Error('no toString'); } };
  const badMessage = new Error('x');
  Object.defineProperty(badMessage, 'message', { get() { throw new Error('no message'); } });
  return [badToString, badMessage, Object.create(null), Symbol('thrown')];
}

test('an unprintable value thrown by a step, a hook, a tool or an until predicate is a clear error, never a crash', async () => {
  for (const thrown of unprintables()) {
    const raise = () => {
      throw thrown;
    };
    const { h, diagnostics } = harness({ _testCallModel: recordingModel().model });
    // A step: the run rejects with a step_failed whose cause is the very value.
    await assert.rejects(h.run(step.run({ id: 's', execute: raise }), 'x'), (e) => e.noeticError?.kind === 'step_failed' && e.noeticError.cause === thrown && typeof e.message === 'string');
    // A hook: a diagnostic that says what happened, and the run goes on.
    const layer = { id: 'l', slot: 1, scope: 'execution', hooks: { recall: raise, store: raise } };
    assert.equal(await h.run(step.llm({ id: 'llm', model: 'm', memory: undefined }), 'x', { memory: [layer] }), 'ok');
    assert.ok(diagnostics.length >= 2);
    for (const d of diagnostics) assert.equal(typeof d.message, 'string');
    // An until predicate: the loop's run rejects, with no crash.
    const looping = loop({ id: 'loop', steps: [step.run({ id: 'b', execute: async (x) => x })], until: raise });
    await h.run(looping, 'x').catch(() => {});
  }
});

test('the process survives unprintable throws everywhere (no unhandled rejection)', () => {
  const result = child(`
    const { z } = await import('zod');
    const bad = { toString() { throw new Error('no'); } };
    const raise = () => { throw bad; };
    const outcomes = [];
    const settle = (p) => p.then(() => outcomes.push('ok'), (e) => outcomes.push(e === bad ? 'same' : e?.noeticError?.cause === bad ? 'cause' : 'other'));
    const quiet = { onDiagnostic: () => {} };
    const h = new lib.AgentHarness({ name: 'h', params: {}, ...quiet, _testCallModel: async () => ({ items: [], usage: {} }) });
    const layer = { id: 'l', slot: 1, scope: 'execution', hooks: { init: async () => ({ state: {} }), recall: raise, store: raise, onComplete: raise, dispose: raise } };
    await settle(h.run(lib.step.run({ id: 's', execute: raise }), 'x'));
    await settle(h.run(lib.step.llm({ id: 'l', model: 'm' }), 'x', { memory: [layer] }));
    await settle(h.run(lib.loop({ id: 'lp', steps: [lib.step.run({ id: 'b', execute: async (x) => x })], until: raise }), 'x'));
    await settle(h.run(lib.step.llm({ id: 'g', model: () => raise() }), 'x'));
    // A tool, and a layer's provides function called by the model as a tool.
    const t = lib.tool({ name: 't', description: 'd', input: z.object({}), execute: raise });
    const fnLayer = { id: 'fns', slot: 2, scope: 'thread', hooks: { init: async () => ({ state: {} }) },
      provides: { boom: lib.layerFn({ description: 'd', input: z.object({}), output: z.void(), execute: raise }) } };
    const script = [{ toolCalls: [{ name: 't', arguments: {} }, { name: 'fns/boom', arguments: {} }] }, { text: 'done' }];
    const scripted = new lib.AgentHarness({ name: 's', params: {}, ...quiet, memory: [fnLayer], llm: { provider: 'scripted', script } });
    await settle(scripted.run(lib.step.llm({ id: 'l', model: 'm', tools: [t] }), 'x'));
    // The test model, a storage adapter, an observer and onDiagnostic itself.
    const throwingModel = new lib.AgentHarness({ name: 'm', params: {}, ...quiet, _testCallModel: raise });
    await settle(throwingModel.run(lib.step.llm({ id: 'l', model: 'm' }), 'x'));
    const storage = { get: raise, set: raise, delete: raise, list: raise };
    const kept = { id: 'k', slot: 1, scope: 'thread', hooks: { init: async () => ({ state: {} }), store: async () => ({ state: { n: 1 } }) } };
    const om = lib.observationalMemory({ bufferThreshold: 1, observer: raise });
    const stored = new lib.AgentHarness({ name: 'st', params: {}, storage, memory: [kept, om], onDiagnostic: raise, _testCallModel: async () => ({ items: [{ id: 'a', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'hello there' }] }], usage: {} }) });
    await settle(stored.run(lib.step.llm({ id: 'l', model: 'm' }), 'some words to observe', { threadId: 'T' }));
    await new Promise((r) => setTimeout(r, 100));
    console.log('alive', outcomes.join(','));`);
  assert.equal(result.status, 0, result.stderr);
  // A step's throw is the cause of its step_failed; a getter and the test model hand back the very value thrown;
  // hooks, tools and a throwing until predicate (a stop, as upstream) end normally; a storage adapter's throw, met
  // by a built-in layer's init in Rust, rejects the run with a readable Error.
  assert.match(result.stdout, /alive cause,ok,ok,same,ok,same,other/);
});

// ---- 7. Values in storage -----------------------------------------------------------------------------------------------

for (const [name, make] of [
  ['createInMemoryStorage', () => createInMemoryStorage()],
  ['createSqliteStorage', () => createSqliteStorage(scratchDb('values.db'))],
]) {
  test(`${name} keeps what JSON.stringify keeps and names the key of what it cannot hold`, async () => {
    const storage = make();
    const when = new Date('2026-01-02T03:04:05.000Z');
    await storage.set('date', when);
    assert.equal(await storage.get('date'), when.toISOString());
    await storage.set('nested', { when, list: [1, 'two', null, true], skip: undefined, fn() {} });
    assert.deepEqual(await storage.get('nested'), { when: when.toISOString(), list: [1, 'two', null, true] });
    await storage.set('custom', { toJSON: () => ({ custom: 1 }) });
    assert.deepEqual(await storage.get('custom'), { custom: 1 });
    assert.equal(await storage.get('missing'), null);
    const cyclic = {};
    cyclic.self = cyclic;
    for (const [key, value] of [['big', 10n], ['undef', undefined], ['fn', () => 1], ['cycle', cyclic], ['sym', Symbol('s')]]) {
      await assert.rejects(storage.set(key, value), (e) => {
        assert.ok(e instanceof NoeticConfigError, String(e));
        assert.equal(e.code, 'INVALID_STORAGE_VALUE');
        assert.ok(e.message.includes(`'${key}'`), e.message);
        return true;
      });
      assert.equal(await storage.get(key), null, 'nothing half-written');
    }
    await assert.rejects(storage.set(42, 'v'), (e) => e instanceof NoeticConfigError && e.code === 'INVALID_STORAGE_KEY');
    assert.deepEqual((await storage.list('')).sort(), ['custom', 'date', 'nested']);
    await storage.delete('date');
    assert.deepEqual((await storage.list('d')).sort(), []);
  });
}

test('a layer state holding a Date persists as its ISO string', async () => {
  const storage = createInMemoryStorage();
  const when = new Date('2026-05-06T07:08:09.000Z');
  const layer = { id: 'dated', slot: 1, scope: 'thread', hooks: { init: async () => ({ state: { when } }) , store: async ({ state }) => ({ state: { ...state } }) } };
  const { h, diagnostics } = harness({ storage, memory: [layer], _testCallModel: recordingModel().model });
  await h.run(step.llm({ id: 'llm', model: 'm' }), 'x', { threadId: 'T' });
  assert.deepEqual(diagnostics, []);
  assert.deepEqual(await storage.get('layers/dated/T/state'), { when: when.toISOString() });
});

// ---- 8. Runs polled on the JS thread ------------------------------------------------------------------------------------

test('run() and execute() return before any step or hook is called', async () => {
  const calls = [];
  const layer = { id: 'l', slot: 1, scope: 'thread', hooks: { init: () => (calls.push('init'), { state: {} }) } };
  const { h } = harness({
    memory: [layer],
    initialStep: step.run({ id: 's', execute: (x) => (calls.push('step'), x) }),
  });
  const running = h.run(step.run({ id: 'r', execute: (x) => (calls.push('run'), x) }), 'x');
  assert.deepEqual(calls, [], 'nothing ran inside run()');
  assert.equal(await running, 'x');
  calls.length = 0;
  const queued = h.execute('hi', { threadId: 'T' });
  assert.deepEqual(calls, [], 'nothing ran inside execute()');
  await queued;
  await h.getAgentResponse({ threadId: 'T' });
  assert.ok(calls.includes('step'));
});

test('a long run of steps that answer at once does not grow the stack', { timeout: slow(60_000) }, async () => {
  let n = 0;
  const body = loop({ id: 'l', steps: [step.run({ id: 'inc', execute: () => ++n })], until: () => ({ stop: n >= 20_000 }), maxIterations: 30_000 });
  const { h } = harness();
  await h.run(body, 0);
  assert.equal(n, 20_000);
});

test('a run woken off the JS thread (a storage timeout, a timer in a hook) goes on', { timeout: slow(20_000) }, async () => {
  const { h } = harness({ memory: [{ id: 'slow', slot: 1, scope: 'thread', timeouts: { recall: 50 }, hooks: { recall: () => new Promise(() => {}) } }], _testCallModel: recordingModel().model });
  const started = Date.now();
  assert.equal(await h.run(step.llm({ id: 'llm', model: 'm' }), 'hello'), 'ok');
  assert.ok(Date.now() - started < 5000);
});
