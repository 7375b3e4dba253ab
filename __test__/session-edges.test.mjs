// Persisted sessions at their edges (issue 53): a response read long after its turn, storage adapters that answer
// wrongly or late, seeds that must be stored when they are made and ordered with other processes' turns, a damaged
// history repaired through the API, and errors in words a user reads. Each test here failed before its fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn as spawnProcess, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AgentHarness, createInMemoryStorage, createMessage, createPostgresStorage, createSqliteStorage, step } from '../js/index.mjs';
import { startInspector } from '../js/inspector.mjs';
import { sharedServerUrl } from '../scripts/pg-test-server.mjs';
import { recorder, scratchDb, slow } from './helpers.mjs';

const pg = sharedServerUrl();
const pgSkip = pg.skip ?? false;
let tables = 0;
const pgStore = () => createPostgresStorage(pg.url, { table: `edges_${process.pid}_${Date.now() % 1e6}_${tables++}` });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const harnessOn = (storage, model, extra = {}) =>
  new AgentHarness({ name: 'p', params: {}, storage, persistSessions: true, initialStep: step.llm({ id: 'ask', model: 'm' }), _testCallModel: model, onDiagnostic: () => {}, ...extra });

async function turn(harness, text, threadId = 'T') {
  await harness.execute(text, { threadId });
  return harness.getAgentResponse({ threadId });
}

// The outcome of a turn, never a throw: `{text}` or `{code, message}`.
const outcomeOf = (harness, text, threadId = 'T') =>
  turn(harness, text, threadId).then((r) => ({ text: r.text }), (e) => ({ code: e.code, message: e.message }));

// Rejects when `promise` has not settled within `ms`: a wait that would otherwise never end fails the test instead.
function within(promise, ms, what) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

async function until(condition, what) {
  for (let i = 0; i < 2000; i++) {
    if (condition()) return;
    await sleep(10);
  }
  assert.fail(`${what} never happened`);
}

// A JS adapter over a native store, with any of its methods replaced.
const adapterOver = (inner, overrides = {}) => ({
  get: (k) => inner.get(k),
  set: (k, v) => inner.set(k, v),
  delete: (k) => inner.delete(k),
  list: (p) => inner.list(p),
  ...overrides,
});

const seedItem = (text) => createMessage(text, 'user');

// 1. A response asked for after sessionIdleMs.

async function responseAfterIdle(storage) {
  const harness = harnessOn(storage, recorder().model, { sessionIdleMs: 10 });
  const live = () => harness._runtime.native.liveContexts;
  await harness.execute('unread', { threadId: 'T' });
  // A second thread whose response is read at once: once it has left memory, T's idle time has passed too (its
  // turn ended first).
  await turn(harness, 'read', 'U');
  await until(() => live() <= 1, "thread U's session leaving memory");
  assert.equal(harness.evictSession('T'), false, 'a session whose response nobody has read stays');
  const response = await within(harness.getAgentResponse({ threadId: 'T' }), slow(10_000), "T's response");
  assert.equal(response.text, 're: unread');
  assert.deepEqual(response.items.map((i) => i.content[0].text), ['unread', 're: unread']);
  // Read, it leaves like any idle session, and a later turn reads its history back.
  await until(() => live() === 0, "T's session leaving memory once its response was read");
  const { model, shown } = recorder();
  await turn(harnessOn(storage, model), 'next');
  assert.deepEqual(shown[0], ['unread', 're: unread', 'next']);
}

test('a response read long after sessionIdleMs still comes: an unread response keeps its session', { timeout: slow(60_000) }, async () => {
  await responseAfterIdle(createInMemoryStorage());
});

test('a response read long after sessionIdleMs still comes (PostgreSQL)', { skip: pgSkip, timeout: slow(60_000) }, async () => {
  const storage = pgStore();
  try {
    await responseAfterIdle(storage);
  } finally {
    await storage.close();
  }
});

test('previewRequestItems shows the stored history of a thread that left memory, and what another harness stored since', async () => {
  const storage = createInMemoryStorage();
  const harness = harnessOn(storage, recorder().model, { sessionIdleMs: 10 });
  await turn(harness, 'one');
  await until(() => harness._runtime.native.liveContexts === 0, 'the session leaving memory');
  const texts = async () => (await harness.previewRequestItems({ threadId: 'T' })).map((i) => i.content[0].text);
  assert.deepEqual(await texts(), ['one', 're: one']);
  await turn(harnessOn(storage, recorder().model), 'two');
  assert.deepEqual(await texts(), ['one', 're: one', 'two', 're: two']);
  assert.equal(harness._runtime.native.liveContexts, 0, 'a preview makes no session');
});

// 2. A `get` that answers a default for a missing key.

test('an adapter whose get answers [] for a missing key fails the turn with a code naming the key, and never hangs the process', { timeout: slow(60_000) }, async () => {
  const fixture = fileURLToPath(new URL('./fixtures/default-get-adapter.mjs', import.meta.url));
  const child = spawnProcess(process.execPath, [fixture], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.on('data', (chunk) => (err += chunk));
  // Before the fix its first turn read entry after entry on the microtask queue, forever, so no timer in it fired.
  const killer = setTimeout(() => child.kill('SIGKILL'), slow(20_000));
  const [code, signal] = await new Promise((resolve) => child.on('exit', (...args) => resolve(args)));
  clearTimeout(killer);
  assert.equal(signal, null, `the process had to be killed: ${err}`);
  assert.equal(code, 0, err);
  const result = JSON.parse(out);
  assert.equal(result.code, 'STORAGE_ADAPTER_INCONSISTENT', result.message);
  assert.match(result.message, /get\('sessions\/T\/000000000001'\)/);
  assert.ok(result.gets < 50, `it asked get ${result.gets} times`);
});

// 6. A `get` that answers nothing for a key `list` named.

test("an adapter whose get answers undefined for a listed entry fails the turn before it runs, and the stored turn stays", async () => {
  const inner = createInMemoryStorage();
  await turn(harnessOn(inner, recorder().model), 'kept');
  const stored = await inner.get('sessions/T/000000000001');
  const forgetful = adapterOver(inner, { get: async (k) => (k.startsWith('sessions/') ? undefined : inner.get(k)) });
  const { model, shown } = recorder();
  const result = await outcomeOf(harnessOn(forgetful, model), 'next');
  assert.equal(result.code, 'STORAGE_ADAPTER_INCONSISTENT', result.message);
  assert.match(result.message, /sessions\/T\/000000000001/);
  assert.equal(shown.length, 0, 'the model was never shown a shortened history');
  assert.deepEqual(await inner.get('sessions/T/000000000001'), stored, 'the acknowledged turn is untouched');
  assert.deepEqual(await inner.list('sessions/'), ['sessions/T/000000000001']);
});

// 8. A `list` that answers something other than an array of keys.

test('an adapter whose list answers anything but an array of keys fails the turn with a code naming list and the answer', async () => {
  const cases = [[null, 'null'], ['sessions/T/000000000001', '"sessions/T/000000000001"'], [{ keys: [] }, '{"keys":[]}'], [[1, 2], '[1,2]'], [['elsewhere'], 'elsewhere']];
  for (const [answer, named] of cases) {
    const inner = createInMemoryStorage();
    await turn(harnessOn(inner, recorder().model), 'kept');
    const { model, shown } = recorder();
    const odd = adapterOver(inner, { list: async () => answer });
    const result = await outcomeOf(harnessOn(odd, model), 'next');
    assert.equal(result.code, 'STORAGE_ADAPTER_INVALID', `${JSON.stringify(answer)}: ${result.message}`);
    assert.ok(result.message.includes("list('sessions/T/')") && result.message.includes(named), result.message);
    assert.equal(shown.length, 0, `${JSON.stringify(answer)}: the model was never shown a shortened history`);
  }
});

// 3 and 4. Seeds: stored when made, awaitable, ordered with other processes' turns.

async function seedThenOthersTurn(storage) {
  const [a, b] = [recorder(), recorder()];
  const [first, second] = [harnessOn(storage, a.model), harnessOn(storage, b.model)];
  await turn(first, 'old');
  await first.seedSessionHistory('T', [seedItem('seeded')]);
  await turn(second, 'from b');
  assert.deepEqual(b.shown.at(-1), ['seeded', 'from b'], 'the other harness reads the seed from storage');
  await turn(first, 'from a');
  assert.deepEqual(a.shown.at(-1), ['seeded', 'from b', 're: from b', 'from a'], "the seeding harness sees the other's acknowledged turn");
  const c = recorder();
  await turn(harnessOn(storage, c.model), 'later');
  assert.deepEqual(c.shown[0], ['seeded', 'from b', 're: from b', 'from a', 're: from a', 'later']);
}

test("a seed is stored when it is made and ordered with another harness's turns, never wiping one", async () => {
  await seedThenOthersTurn(createInMemoryStorage());
});

test("a seed is ordered with another harness's turns (PostgreSQL)", { skip: pgSkip, timeout: slow(60_000) }, async () => {
  const storage = pgStore();
  try {
    await seedThenOthersTurn(storage);
  } finally {
    await storage.close();
  }
});

test('seedSessionHistory returns a promise that settles once the seed is stored; without persistSessions it resolves at once', async () => {
  const storage = createInMemoryStorage();
  const seeding = harnessOn(storage, recorder().model).seedSessionHistory('T', [seedItem('imported')]);
  assert.ok(seeding instanceof Promise);
  assert.equal(await seeding, undefined);
  assert.deepEqual(await storage.list('sessions/'), ['sessions/T/000000000001']);
  const { model, shown } = recorder();
  await turn(harnessOn(storage, model), 'hello');
  assert.deepEqual(shown[0], ['imported', 'hello']);

  const plain = createInMemoryStorage();
  const upstreamLike = new AgentHarness({ name: 'p', params: {}, storage: plain, initialStep: step.llm({ id: 'ask', model: 'm' }), _testCallModel: recorder().model });
  assert.equal(await upstreamLike.seedSessionHistory('T', [seedItem('x')]), undefined);
  assert.deepEqual(await plain.list(''), []);
});

test('seeds not awaited are stored in the order they were made, before a turn sent right after them', async () => {
  const storage = createInMemoryStorage();
  const { model, shown } = recorder();
  const harness = harnessOn(storage, model);
  const first = harness.seedSessionHistory('T', [seedItem('first seed')]);
  const second = harness.seedSessionHistory('T', [seedItem('second seed')]);
  await harness.execute('hello', { threadId: 'T' });
  assert.equal((await harness.getAgentResponse({ threadId: 'T' })).text, 're: hello');
  await Promise.all([first, second]);
  assert.deepEqual(shown[0], ['second seed', 'hello']);
  const c = recorder();
  await turn(harnessOn(storage, c.model), 'elsewhere');
  assert.deepEqual(c.shown[0], ['second seed', 'hello', 're: hello', 'elsewhere']);
});

test("a seed the store cannot take rejects, stays this process's history, and its next turn stores it first", async () => {
  const inner = createInMemoryStorage();
  let down = false;
  const adapter = adapterOver(inner, { set: (k, v) => (down ? Promise.reject(new Error('connection refused')) : inner.set(k, v)) });
  const { model, shown } = recorder();
  const harness = harnessOn(adapter, model);
  await turn(harness, 'old');
  down = true;
  await assert.rejects(harness.seedSessionHistory('T', [seedItem('seeded')]), (e) => e.code === 'STORAGE_UNAVAILABLE' && /could not be written/.test(e.message));
  assert.equal(harness.evictSession('T'), false, 'a seed not stored keeps its session');
  // Not awaited, a failing seed is no unhandled rejection (the test runner would report one).
  harness.seedSessionHistory('T', [seedItem('seeded')]);
  await sleep(20);
  down = false;
  await turn(harness, 'after');
  assert.deepEqual(shown.at(-1), ['seeded', 'after']);
  const c = recorder();
  await turn(harnessOn(inner, c.model), 'elsewhere');
  assert.deepEqual(c.shown[0], ['seeded', 'after', 're: after', 'elsewhere']);
});

// A model that waits, from `hold()` on, until `release()`: a turn kept in flight while a test seeds its thread.
function heldModel() {
  const { model: reply, shown } = recorder();
  let gate = null;
  let asked = 0;
  let fail = false;
  const model = async (request) => {
    asked++;
    if (gate) await gate.promise;
    if (fail) {
      fail = false;
      throw new Error('model down');
    }
    return reply(request);
  };
  return {
    model,
    shown,
    asked: () => asked,
    hold() {
      gate = {};
      gate.promise = new Promise((resolve) => (gate.resolve = resolve));
    },
    release({ failing = false } = {}) {
      fail = failing;
      gate.resolve();
      gate = null;
    },
  };
}

async function seedDuringTurn({ othersTurn = false, failing = false } = {}) {
  const storage = createInMemoryStorage();
  const held = heldModel();
  const harness = harnessOn(storage, held.model);
  await turn(harness, 'before');
  held.hold();
  await harness.execute('during', { threadId: 'T' });
  await until(() => held.asked() === 2, 'the turn asking its model');
  await harness.seedSessionHistory('T', [seedItem('seeded')]);
  const stored = await storage.list('sessions/T/');
  assert.equal(stored.length, 2, 'the seed was stored while the turn ran');
  assert.ok('replace' in (await storage.get(stored[1])));
  if (othersTurn) await turn(harnessOn(storage, recorder().model), 'from b');
  held.release({ failing });
  const outcome = await harness.getAgentResponse({ threadId: 'T' }).then((r) => r.text, (e) => e.message);
  const c = recorder();
  await turn(harnessOn(storage, c.model), 'later');
  // The seeding harness's next turn is shown the same history as another's.
  await turn(harness, 'again');
  assert.deepEqual(held.shown.at(-1), [...c.shown[0], 're: later', 'again']);
  return { outcome, elsewhere: c.shown[0] };
}

test("a seed made while a turn runs is stored at once, and the turn's history replaces it when its step returns, as upstream", async () => {
  const { outcome, elsewhere } = await seedDuringTurn();
  assert.equal(outcome, 're: during');
  assert.deepEqual(elsewhere, ['before', 're: before', 'during', 're: during', 'later']);
});

test("a seed made while a turn runs stands when that turn's step fails", async () => {
  const { outcome, elsewhere } = await seedDuringTurn({ failing: true });
  assert.match(outcome, /model down/);
  assert.deepEqual(elsewhere, ['seeded', 'later']);
});

test("a turn that outlasts a seed never replaces another harness's turn taken after the seed: its items go after it", async () => {
  const { outcome, elsewhere } = await seedDuringTurn({ othersTurn: true });
  assert.equal(outcome, 're: during');
  assert.deepEqual(elsewhere, ['seeded', 'from b', 're: from b', 'during', 're: during', 'later']);
});

function seedAndExit(where, env = {}) {
  const fixture = fileURLToPath(new URL('./fixtures/seed-and-exit.mjs', import.meta.url));
  const ran = spawnSync(process.execPath, [fixture, where], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: slow(60_000) });
  assert.equal(ran.status, 0, ran.stderr);
}

test('a program that seeds without awaiting and exits leaves the seed stored (SQLite)', { timeout: slow(90_000) }, async () => {
  const db = scratchDb('seeded.db');
  seedAndExit(db);
  const { model, shown } = recorder();
  await turn(harnessOn(createSqliteStorage(db), model), 'after');
  assert.deepEqual(shown[0], ['migrated 1', 'migrated 2', 'after']);
});

test('a program that seeds without awaiting and exits leaves the seed stored (PostgreSQL)', { skip: pgSkip, timeout: slow(90_000) }, async () => {
  const table = `edges_exit_${process.pid}_${Date.now() % 1e6}`;
  seedAndExit(pg.url, { FIXTURE_PG_TABLE: table });
  const storage = createPostgresStorage(pg.url, { table });
  try {
    const { model, shown } = recorder();
    await turn(harnessOn(storage, model), 'after');
    assert.deepEqual(shown[0], ['migrated 1', 'migrated 2', 'after']);
  } finally {
    await storage.close();
  }
});

// 5. A write that lands after storageTimeoutMs.

test('a turn whose write outlasts storageTimeoutMs is reported as unknown, and the late write never lands over a later turn', { timeout: slow(60_000) }, async () => {
  const inner = createInMemoryStorage();
  // While `held`, a write of a session entry waits until the test lets it land: no timing decides the order.
  let held = null;
  const slowSet = adapterOver(inner, {
    set: (k, v) => {
      if (!held || !k.startsWith('sessions/')) return inner.set(k, v);
      return held.promise.then(() => inner.set(k, v));
    },
  });
  const { model } = recorder();
  // A limit far above what an ordinary write takes, even on a loaded machine.
  const harness = harnessOn(slowSet, model, { storageTimeoutMs: slow(1000) });
  await turn(harness, 'one');
  held = {};
  held.promise = new Promise((resolve) => (held.land = resolve));
  const unknown = await outcomeOf(harness, 'two');
  assert.equal(unknown.code, 'STORAGE_OUTCOME_UNKNOWN', unknown.message);
  assert.match(unknown.message, /may still have been stored/);
  // Sent again while that write is still on its way: refused, with nothing written where the late write will land.
  const refused = await outcomeOf(harness, 'three');
  assert.equal(refused.code, 'STORAGE_UNAVAILABLE', refused.message);
  assert.deepEqual(await inner.list('sessions/'), ['sessions/T/000000000001']);
  // The late write lands; the turn sent again goes in after it.
  const landing = held;
  held = null;
  landing.land();
  await landing.promise;
  let three;
  for (let i = 0; i < 100 && !three?.text; i++) {
    three = await outcomeOf(harness, 'three');
    if (!three.text) await sleep(10);
  }
  assert.equal(three.text, 're: three');
  const c = recorder();
  await turn(harnessOn(inner, c.model), 'four');
  // The late turn is in the history (its outcome was unknown, not "not saved"), and the acknowledged one after it.
  assert.deepEqual(c.shown[0], ['one', 're: one', 'two', 're: two', 'three', 're: three', 'four']);
});

// 7. A sessionIdleMs too large for a duration.

test('sessionIdleMs too large for a timer keeps idle sessions, as Infinity does, and never panics', async () => {
  for (const sessionIdleMs of [1e300, Number.MAX_VALUE]) {
    const harness = harnessOn(createInMemoryStorage(), recorder().model, { sessionIdleMs });
    assert.equal((await turn(harness, 'hi')).text, 're: hi');
    assert.equal(harness.evictSession('T'), true, 'the session was still in memory');
  }
});

// 9. Errors in words a user reads, and a damaged history repaired through the API.

test('a thread id PostgreSQL cannot hold is refused at execute and seed, in words without the NUL', { skip: pgSkip, timeout: slow(30_000) }, async () => {
  const storage = pgStore();
  try {
    const { model, shown } = recorder();
    const harness = harnessOn(storage, model);
    const refused = (e) => e.code === 'INVALID_THREAD_ID' && !e.message.includes('\u0000') && e.message.includes('\\u0000');
    await assert.rejects(harness.execute('hi', { threadId: 'a\u0000b' }), refused);
    await assert.rejects(async () => harness.seedSessionHistory('a\u0000b', [seedItem('x')]), refused);
    assert.equal(shown.length, 0);
    assert.equal((await turn(harness, 'fine', 'ab')).text, 're: fine');
  } finally {
    await storage.close();
  }
});

test('a storage outage says what could not be stored in plain words', async () => {
  const inner = createInMemoryStorage();
  let down = false;
  const adapter = adapterOver(inner, { set: (k, v) => (down ? Promise.reject(new Error('connection refused')) : inner.set(k, v)) });
  const harness = harnessOn(adapter, recorder().model);
  await turn(harness, 'kept');
  down = true;
  const result = await outcomeOf(harness, 'lost');
  assert.equal(result.code, 'STORAGE_UNAVAILABLE');
  assert.match(result.message, /could not be written to storage/);
  assert.doesNotMatch(result.message, /be write|be read in/);
});

async function repairedBySeed(storage, damage) {
  await turn(harnessOn(storage, recorder().model), 'one');
  await turn(harnessOn(storage, recorder().model), 'two');
  await damage();
  const { model, shown } = recorder();
  const harness = harnessOn(storage, model);
  const broken = await outcomeOf(harness, 'three');
  assert.equal(broken.code, 'SESSION_HISTORY_CORRUPT', broken.message);
  assert.match(broken.message, /sessions\/T\/000000000002/);
  assert.doesNotMatch(broken.message, /Invalid column type|rusqlite/);
  assert.equal(shown.length, 0);
  await harness.seedSessionHistory('T', [seedItem('repaired')]);
  await turn(harness, 'three');
  assert.deepEqual(shown.at(-1), ['repaired', 'three']);
  const c = recorder();
  await turn(harnessOn(storage, c.model), 'four');
  assert.deepEqual(c.shown[0], ['repaired', 'three', 're: three', 'four']);
}

test('a damaged entry fails the turn as SESSION_HISTORY_CORRUPT, and seedSessionHistory repairs the thread', async () => {
  const storage = createInMemoryStorage();
  await repairedBySeed(storage, () => storage.set('sessions/T/000000000002', { not: 'items' }));
});

test('a damaged entry on PostgreSQL is SESSION_HISTORY_CORRUPT, and seedSessionHistory repairs the thread', { skip: pgSkip, timeout: slow(30_000) }, async () => {
  const storage = pgStore();
  try {
    await repairedBySeed(storage, () => storage.set('sessions/T/000000000002', { not: 'items' }));
  } finally {
    await storage.close();
  }
});

const python = spawnSync('python3', ['-c', 'import sqlite3']).status === 0;

test('a SQLite entry that is a BLOB is SESSION_HISTORY_CORRUPT in our words, and a seed repairs it', { skip: python ? false : 'python3 with sqlite3 is not installed', timeout: slow(30_000) }, async () => {
  const db = scratchDb('blob.db');
  const storage = createSqliteStorage(db);
  await repairedBySeed(storage, () => {
    const script = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE noetic_kv SET value=? WHERE key='sessions/T/000000000002'\", (b'\\x00\\xff',)); c.commit()";
    const ran = spawnSync('python3', ['-c', script, db], { encoding: 'utf8' });
    assert.equal(ran.status, 0, ran.stderr);
  });
});

// 10. The inspector and a thread id holding a lone surrogate.

test('the inspector names a thread whose id holds a lone surrogate as given, and reads its layer state', { timeout: slow(30_000) }, async () => {
  const counter = { id: 'counter', slot: 1, scope: 'thread', hooks: { init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { n: 0 } }), store: async ({ state }) => ({ state: { n: state.n + 1 } }) } };
  const harness = new AgentHarness({ name: 'i', params: {}, memory: [counter], initialStep: step.llm({ id: 'ask', model: 'm' }), _testCallModel: recorder().model });
  const inspector = await startInspector(harness);
  try {
    const thread = 'odd \ud800 id';
    const url = (path, params = {}) => {
      const u = new URL(inspector.url);
      u.pathname = path;
      for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
      return u;
    };
    const feed = await fetch(url('/api/events'));
    const reader = feed.body.getReader();
    await turn(harness, 'hi', thread);
    const snapshot = JSON.parse(await (await fetch(url('/api/snapshot'))).text());
    assert.deepEqual(snapshot.recorder.threads.map((t) => t.threadId), [thread]);
    // The live feed names it as given too.
    let text = '';
    while (!text.includes('event: calls')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    const data = JSON.parse(text.slice(text.indexOf('data: ') + 6).split('\n')[0]);
    assert.deepEqual([...new Set(data.map((c) => c.threadId))], [thread]);
    // The page asks for the thread's state by the id it was given (a URL cannot carry a lone surrogate: the page
    // sends it as it must, and the server finds the state the runtime stored).
    const states = await (await fetch(url('/api/state', { thread }))).json();
    assert.deepEqual(states.map((s) => [s.id, s.state]), [['counter', { n: 1 }]]);
  } finally {
    await inspector.close();
  }
});
