// createPostgresStorage against a real PostgreSQL server: NOETIC_TEST_POSTGRES_URL (CI exports one), else a
// throwaway server started here by scripts/pg-test-server.sh. Only where none can be started do these tests skip,
// and they say why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { AgentHarness, createCheckpointStore, createPostgresStorage, isNoeticConfigError, step } from '../js/index.mjs';
import { sharedServerUrl, startServer } from '../scripts/pg-test-server.mjs';
import { runFixture, slow } from './helpers.mjs';

const server = sharedServerUrl();
const skip = server.skip ?? false;
// Child processes and a server of its own take seconds (Bun's default limit is 5 s).
const multiProcess = { skip, timeout: slow(120_000) };
if (skip) console.warn(`SKIPPED PostgreSQL tests: ${skip}`);
const run = promisify(execFile);
const fixture = (name) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
// A table of each test's own, so that runs and tests never see each other's keys.
let tables = 0;
const freshTable = () => `node_${process.pid}_${Date.now() % 1e6}_${tables++}`;

// psql, for what a store cannot do: count its connections on the server and hold a lock its calls wait for.
function findPsql() {
  if (!spawnSync('psql', ['--version']).error) return { path: 'psql' };
  const dir = spawnSync('bash', [fileURLToPath(new URL('../scripts/pg-test-server.sh', import.meta.url)), 'bindir'], { encoding: 'utf8' }).stdout?.trim();
  if (dir && !spawnSync(`${dir}/psql`, ['--version']).error) return { path: `${dir}/psql` };
  return { skip: 'psql is not installed' };
}
const psql = skip ? { skip } : findPsql();
if (psql.skip && !skip) console.warn(`SKIPPED the PostgreSQL connection-count tests: ${psql.skip}`);
// These take well under a second, but wait up to seconds for the server on a loaded machine (Bun's default limit is 5 s).
const counted = { skip: psql.skip ?? false, timeout: slow(60_000) };

// One psql session: `query(sql)` resolves to its output (unaligned, tuples only), in the order asked.
function psqlSession(url) {
  const child = spawn(psql.path, [url, '-qAtX', '-v', 'ON_ERROR_STOP=1'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let asked = null;
  let n = 0;
  child.stdout.setEncoding('utf8').on('data', (text) => {
    out += text;
    const at = asked && out.indexOf(`${asked.marker}\n`);
    if (at === null || at < 0) return;
    const { resolve, marker } = asked;
    asked = null;
    resolve(out.slice(0, at).trim());
    out = out.slice(at + marker.length + 1);
  });
  child.stderr.setEncoding('utf8').on('data', (text) => { err += text; });
  child.on('exit', (code) => asked?.reject(new Error(`psql exited (${code}): ${err}`)));
  return {
    query: (sql) => new Promise((resolve, reject) => {
      asked = { marker: `-- done ${n++}`, resolve, reject };
      child.stdin.write(`${sql};\n\\echo '${asked.marker}'\n`);
    }),
    end: () => new Promise((resolve) => {
      child.once('exit', resolve);
      child.stdin.end();
    }),
  };
}

// `url` with connections named `name`, so that they can be told apart in pg_stat_activity.
const named = (url, name) => `${url}${url.includes('?') ? '&' : '?'}application_name=${name}`;
let names = 0;
const freshName = () => `noetic_js_${process.pid}_${names++}`;

// Waits until `check()` resolves to true, up to a deadline generous for a loaded machine (never a fixed sleep);
// resolves to whether it did.
async function eventually(check) {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
    if (await check()) return true;
  }
  return check();
}

// Waits until the server has `expected` connections named `name`; resolves to the last count seen.
async function connectionsReach(session, name, expected) {
  let seen;
  await eventually(async () => (seen = Number(await session.query(`SELECT count(*) FROM pg_stat_activity WHERE application_name = '${name}'`))) === expected);
  return seen;
}

const settledYet = (promise) => Promise.race([promise.then(() => true, () => true), new Promise((r) => setImmediate(() => r(false)))]);

// A session on thread 'T' whose counter layer keeps its state in `storage`; `turn(text)` runs one turn and gives its
// response, and `diagnostics` collects what the harness reports.
function counterSession(name, storage) {
  const diagnostics = [];
  const harness = new AgentHarness({
    name, params: {}, storage, memory: [counter()], initialStep: step.llm({ id: 'ask', model: 'scripted' }),
    llm: { provider: 'scripted' }, onDiagnostic: (d) => diagnostics.push(d),
  });
  const turn = async (text) => {
    await harness.execute(text, { threadId: 'T' });
    return harness.getAgentResponse({ threadId: 'T' });
  };
  return { turn, diagnostics };
}

const counter = () => ({
  id: 'counter',
  slot: 1,
  scope: 'thread',
  hooks: {
    init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { n: 0 } }),
    store: async ({ state }) => ({ state: { n: state.n + 1 } }),
  },
});

test('the adapter contract: values as JSON, list and delete by prefix', { skip }, async () => {
  const storage = createPostgresStorage(server.url, { table: freshTable() });
  assert.equal(await storage.get('missing'), null);
  const value = { z: 1, a: ['tea', 'é😀', null], when: new Date(0), gone: undefined, n: 1.5 };
  await storage.set('layers/a/T/state', value);
  assert.deepEqual(await storage.get('layers/a/T/state'), { z: 1, a: ['tea', 'é😀', null], when: '1970-01-01T00:00:00.000Z', n: 1.5 });
  assert.deepEqual(Object.keys(await storage.get('layers/a/T/state')), ['z', 'a', 'when', 'n']);
  for (const key of ['layers/a/U/state', 'layers/a/T/notes', 'layers/ab/T/state', 'other']) await storage.set(key, key.length);
  assert.deepEqual(await storage.list('layers/a/'), ['layers/a/T/notes', 'layers/a/T/state', 'layers/a/U/state']);
  assert.deepEqual(await storage.list('layers/a'), ['layers/a/T/notes', 'layers/a/T/state', 'layers/a/U/state', 'layers/ab/T/state']);
  // Deleting by prefix: every key listed under it, and nothing else.
  await Promise.all((await storage.list('layers/a/')).map((key) => storage.delete(key)));
  assert.deepEqual(await storage.list(''), ['layers/ab/T/state', 'other']);
  assert.equal(await storage.get('layers/a/T/state'), null);
  await assert.rejects(storage.set('k', () => 1), (e) => isNoeticConfigError(e) && e.code === 'INVALID_STORAGE_VALUE');
  await assert.rejects(storage.set('a\0b', 1), (e) => isNoeticConfigError(e) && e.code === 'INVALID_STORAGE_KEY' && Boolean(e.hint));
});

test("a thread-scoped layer's state persists through PostgreSQL and another process rehydrates it", multiProcess, async () => {
  const table = freshTable();
  const turns = async (n) => JSON.parse((await run(process.execPath, [fixture('postgres-turn.mjs'), server.url, table, String(n)], { timeout: slow(60_000) })).stdout);
  assert.deepEqual(await turns(3), { found: 0, saved: 3, pid: true });
  assert.deepEqual(await turns(2), { found: 3, saved: 5, pid: true });
  assert.equal((await createPostgresStorage(server.url, { table }).get('layers/counter/T/state')).n, 5);
});

test('8 processes writing one key at once: latest wins, every value read is whole', multiProcess, async () => {
  const table = freshTable();
  const rounds = 12;
  const writers = Array.from({ length: 8 }, (_, writer) =>
    run(process.execPath, [fixture('postgres-writer.mjs'), server.url, table, String(writer), String(rounds)], { timeout: slow(90_000) }));
  const checked = (await Promise.all(writers)).map(({ stdout }) => Number(stdout));
  assert.deepEqual(checked, Array(8).fill(rounds));
  const last = await createPostgresStorage(server.url, { table }).get('shared/state');
  assert.equal(last.round, rounds - 1, 'the value left is some writer\'s last write');
  assert.deepEqual(last, { writer: last.writer, round: last.round, body: `${last.writer}-${last.round}-`.repeat(5_000) });
});

test('concurrent writes from one process and two stores: the last to commit is read back whole', { skip }, async () => {
  const table = freshTable();
  const stores = [createPostgresStorage(server.url, { table }), createPostgresStorage(server.url, { table, maxConnections: 2 })];
  const valueOf = (i) => ({ i, body: String(i).repeat(20_000) });
  await Promise.all(Array.from({ length: 64 }, (_, i) => stores[i % 2].set('one/key', valueOf(i))));
  const last = await stores[1].get('one/key');
  assert.deepEqual(last, valueOf(last.i));
  await stores[0].set('one/key', valueOf(99));
  assert.deepEqual(await stores[1].get('one/key'), valueOf(99), 'a later write wins');
});

test('a bad URL or options are a NoeticConfigError when the store is made; a password never shows', () => {
  const refused = (...args) => assert.throws(() => createPostgresStorage(...args), (e) => {
    assert.ok(isNoeticConfigError(e), String(e));
    assert.equal(e.code, 'STORAGE_OPEN_FAILED');
    assert.ok(e.hint);
    assert.ok(!e.message.includes('s3cret'), e.message);
    return true;
  });
  refused('not a url');
  refused('postgres://me:s3cret@host:notaport/db');
  refused('');
  refused(undefined);
  refused('postgres://me:s3cret@localhost/db?sslmode=verify-full&sslrootcert=/no/such/ca.pem');
  refused('postgres://me:s3cret@localhost/db?sslmode=always');
  refused('postgres://localhost/db', { table: 'drop table x;' });
  refused('postgres://localhost/db', { maxConnections: 0 });
  refused('postgres://localhost/db', { timeoutMs: 'soon' });
  refused('postgres://localhost/db', { pool: 3 });
  refused('postgres://localhost/db', 'fast');
  for (const idleTimeoutMs of [-1, 1.5, 86_400_001, '10s', null, Infinity, NaN]) {
    assert.throws(() => createPostgresStorage('postgres://localhost/db', { idleTimeoutMs }), (e) => {
      assert.equal(e.code, 'STORAGE_OPEN_FAILED');
      assert.match(e.message, /idleTimeoutMs is .*; expected a whole number from 0 to 86400000/);
      assert.match(e.hint, /idleTimeoutMs/);
      return true;
    });
  }
  // Made, but not connected: nothing connects until the first call.
  for (const idleTimeoutMs of [0, 1, 86_400_000, undefined]) createPostgresStorage('postgres://localhost/db', { idleTimeoutMs, maxConnections: 1_000 });
});

test('a burst opens up to maxConnections connections, and they close once idle for idleTimeoutMs', counted, async () => {
  const table = freshTable();
  const [name, keeping] = [freshName(), freshName()];
  const storage = createPostgresStorage(named(server.url, name), { table, maxConnections: 20, idleTimeoutMs: 200 });
  const session = psqlSession(server.url);
  try {
    // Every call of the burst holds a connection while the first waits to create the table, so the burst opens 20.
    await session.query(`SELECT pg_advisory_lock(hashtext('noetic create ${table}'))`);
    const burst = Array.from({ length: 20 }, (_, i) => storage.set(`k/${i}`, i));
    assert.equal(await connectionsReach(session, name, 20), 20);
    await session.query(`SELECT pg_advisory_unlock(hashtext('noetic create ${table}'))`);
    await Promise.all(burst);
    assert.equal(await connectionsReach(session, name, 0), 0, 'idle connections stayed open');
    // With its connections closed the store still works (it opens one, closed again once idle); a store told to
    // keep idle connections keeps them past that idle time.
    const keeper = createPostgresStorage(named(server.url, keeping), { table, idleTimeoutMs: 0 });
    assert.deepEqual(await Promise.all([storage.get('k/3'), keeper.get('k/4')]), [3, 4]);
    assert.equal(await connectionsReach(session, name, 0), 0);
    assert.equal(await connectionsReach(session, keeping, 1), 1);
    await keeper.close();
  } finally {
    await session.end();
  }
});

test('close() closes idle connections at once and busy ones when their call ends; later calls reject with STORAGE_CLOSED', counted, async () => {
  const table = freshTable();
  const name = freshName();
  const storage = createPostgresStorage(named(server.url, name), { table, idleTimeoutMs: 0 });
  // The lock's holder is a session of its own: inside its transaction, pg_stat_activity would not change.
  const [session, holder] = [psqlSession(server.url), psqlSession(server.url)];
  try {
    await storage.set('k', 0);
    // A write waiting for a row lock keeps its connection busy; a read beside it leaves a second one idle.
    await holder.query(`BEGIN; SELECT 1 FROM "${table}" WHERE key = 'k' FOR UPDATE`);
    const write = storage.set('k', 1);
    const waitingForTheLock = `SELECT count(*) FROM pg_stat_activity WHERE application_name = '${name}' AND wait_event_type = 'Lock'`;
    assert.ok(await eventually(async () => (await session.query(waitingForTheLock)) === '1'), 'the write never waited for the lock');
    assert.equal(await storage.get('other'), null);
    assert.equal(await connectionsReach(session, name, 2), 2);

    const closing = storage.close();
    assert.equal(await connectionsReach(session, name, 1), 1, 'the idle connection stayed open');
    assert.equal(await settledYet(closing), false, 'close() resolved while a call was under way');
    await assert.rejects(storage.get('k'), (e) => isNoeticConfigError(e) && e.code === 'STORAGE_CLOSED');
    await holder.query('COMMIT');
    await write;
    await closing;
    assert.equal(await connectionsReach(session, name, 0), 0, 'the busy connection stayed open');
    assert.equal(await createPostgresStorage(server.url, { table }).get('k'), 1, 'the write under way was saved');

    await storage.close();
    const password = new URL(server.url).password;
    for (const call of [() => storage.get('k'), () => storage.set('k', 2), () => storage.delete('k'), () => storage.list(''), () => storage.list()]) {
      await assert.rejects(call(), (e) => {
        assert.ok(isNoeticConfigError(e), String(e));
        assert.equal(e.code, 'STORAGE_CLOSED');
        assert.ok(e.message.includes(`${new URL(server.url).host}/postgres`), e.message);
        assert.ok(!password || !e.message.includes(password), e.message);
        assert.match(e.hint, /createPostgresStorage/);
        return true;
      });
    }
    assert.equal(await connectionsReach(session, name, 0), 0, 'a refused call opened a connection');
  } finally {
    await Promise.all([session.end(), holder.end()]);
  }
});

test('a harness on a closed store: the next turn cannot reload its state, and fails saying so', { skip }, async () => {
  const storage = createPostgresStorage(server.url, { table: freshTable() });
  const { turn, diagnostics } = counterSession('closed', storage);
  await turn('one');
  assert.deepEqual(await storage.get('layers/counter/T/state'), { n: 1 });
  await storage.close();
  // Each turn is an execution whose init reloads the state from storage.
  await assert.rejects(turn('two'), (e) => e.code === 'STORAGE_CLOSED' && /was closed/.test(e.message));
  assert.equal(diagnostics[0]?.hook, 'init');
});

test('a store holding pooled connections lets the process exit', multiProcess, async () => {
  const table = freshTable();
  const { stdout } = await run(process.execPath, [fixture('postgres-idle-exit.mjs'), server.url, table], { timeout: slow(30_000) });
  assert.equal(stdout.trim(), 'saved');
});

test('an unreachable server is STORAGE_UNAVAILABLE within the connect timeout, never a hang', async () => {
  for (const url of ['postgres://me:s3cret@127.0.0.1:1/db', 'postgres://me:s3cret@10.255.255.1:5432/db']) {
    const storage = createPostgresStorage(url, { connectTimeoutMs: 500 });
    const started = Date.now();
    await assert.rejects(storage.get('k'), (e) => isNoeticConfigError(e) && e.code === 'STORAGE_UNAVAILABLE' && Boolean(e.hint) && !e.message.includes('s3cret'));
    assert.ok(Date.now() - started < 3_000, `${url}: ${Date.now() - started} ms`);
  }
  // A harness on it: the layer's init cannot read its state, and the run fails saying so.
  const diagnostics = [];
  const harness = new AgentHarness({
    name: 'down', params: {}, storage: createPostgresStorage('postgres://me@127.0.0.1:1/db'), memory: [counter()],
    llm: { provider: 'scripted' }, onDiagnostic: (d) => diagnostics.push(d),
  });
  await assert.rejects(harness.run(step.llm({ id: 'ask', model: 'scripted' }), 'hi', { threadId: 'T' }), /127\.0\.0\.1:1\/db is unavailable/);
  assert.equal(diagnostics[0]?.hook, 'init');
});

test('a server stopped mid-session: clear errors, nothing lost, and the store works again when it is back', multiProcess, async (t) => {
  const own = startServer(); // a private server: stopping the shared one would fail other tests
  if (own.skip) return t.skip(own.skip);
  try {
    const storage = createPostgresStorage(own.url);
    const { turn, diagnostics } = counterSession('restart', storage);
    await turn('one');
    assert.deepEqual(await storage.get('layers/counter/T/state'), { n: 1 });
    own.stop();
    // The next turn's init cannot reload the state: the turn fails saying so, and stores nothing.
    await assert.rejects(turn('two'), (e) => e.code === 'STORAGE_UNAVAILABLE' && /is unavailable/.test(e.message));
    assert.equal(diagnostics.length, 1, JSON.stringify(diagnostics));
    assert.equal(diagnostics[0].hook, 'init');
    await assert.rejects(storage.get('layers/counter/T/state'), (e) => e.code === 'STORAGE_UNAVAILABLE');
    own.resume();
    await turn('three');
    assert.deepEqual(await storage.get('layers/counter/T/state'), { n: 2 }, 'the turn after the outage goes on from what was stored');
    // And a new process starting on the thread picks it up.
    const { stdout } = await run(process.execPath, [fixture('postgres-turn.mjs'), own.url, 'noetic_kv', '1'], { timeout: slow(60_000) });
    assert.deepEqual(JSON.parse(stdout), { found: 2, saved: 3, pid: true });
    assert.equal(diagnostics.length, 1);
  } finally {
    own.destroy();
  }
});

test('a run checkpointed in one process and SIGKILLed between steps is restored and finished by another (PostgreSQL)', multiProcess, async () => {
  const table = freshTable();
  const started = await runFixture('checkpoint-run.mjs', ['start', server.url], { env: { FIXTURE_PG_TABLE: table }, killWhen: (line) => line.checkpointed === 2 });
  assert.equal(started.signal, 'SIGKILL', started.err);
  const { id } = started.lines[0];
  const resumed = await runFixture('checkpoint-run.mjs', ['resume', server.url, id], { env: { FIXTURE_PG_TABLE: table } });
  assert.equal(resumed.code, 0, resumed.err);
  const [{ frontier, restored }, { finished }] = resumed.lines;
  assert.deepEqual(frontier, [{ stepId: 'all', input: 1 }, { stepId: 'work', input: 2 }]);
  assert.deepEqual([restored.done, restored.tally, restored.tasks, restored.stepCount], [['done-1', 'done-2'], { done: [1, 2] }, 2, 5]);
  assert.deepEqual([finished.done.length, finished.tally, finished.tasks, finished.tokens], [5, { done: [1, 2, 3, 4, 5] }, 5, { input: 50, output: 10 }]);
});

test("a detached step's manifest in PostgreSQL outlives a SIGKILL and another process replays it", multiProcess, async () => {
  const table = freshTable();
  const spawned = await runFixture('detached-run.mjs', ['spawn', server.url], { env: { FIXTURE_PG_TABLE: table }, killWhen: (line) => line.handleId !== undefined });
  assert.equal(spawned.signal, 'SIGKILL', spawned.err);
  const [{ handleId }] = spawned.lines;
  const replayed = await runFixture('detached-run.mjs', ['reattach', server.url, handleId, 'register'], { env: { FIXTURE_PG_TABLE: table } });
  assert.equal(replayed.code, 0, replayed.err);
  const [done] = replayed.lines;
  assert.deepEqual([done.live, done.status, done.result.words, done.liveAfter], [[handleId], 'completed', 3, []]);
});

test('a durable run whose server goes away: its checkpoints and state writes fail with warnings, the run goes on, and the next ones carry everything once the server is back', multiProcess, async (t) => {
  const own = startServer();
  if (own.skip) return t.skip(own.skip);
  try {
    const storage = createPostgresStorage(own.url, { timeoutMs: 3_000, connectTimeoutMs: 1_000 });
    const checkpointStore = createCheckpointStore({ storage });
    const tally = { id: 'tally', slot: 1, scope: 'thread', hooks: { init: async ({ storage: s }) => ({ state: (await s.get('state')) ?? { done: [] } }) } };
    const diagnostics = [];
    const harness = new AgentHarness({ name: 'outage', params: {}, storage, checkpointStore, memory: [tally], onDiagnostic: (d) => diagnostics.push(d) });
    const work = step.run({
      id: 'work',
      execute: async (n, ctx) => {
        ctx.itemLog.append({ id: `done-${n}`, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: `done ${n}` }] });
        const { done } = ctx.harness.getLayerState(ctx.id, 'tally');
        ctx.harness.setLayerState(ctx.id, 'tally', { done: [...done, n] });
        await ctx.checkpoint();
        return n;
      },
    });
    const warnings = [];
    const warn = console.warn;
    console.warn = (...args) => warnings.push(args);
    const ctx = harness.createContext({ threadId: 'T' });
    // One execution (its init reads the state once), through the outage and after it.
    const durable = step.run({ id: 'durable', execute: async (_input, c) => {
      for (const n of [1, 2]) await c.harness.run(work, n, c);
      own.stop();
      await c.harness.run(work, 3, c);
      assert.equal(warnings.length, 1, 'the checkpoint that could not be saved says so');
      assert.match(String(warnings[0][0]), /failed to persist snapshot/);
      assert.equal(warnings[0][1].code, 'STORAGE_UNAVAILABLE');
      own.resume();
      for (const n of [4, 5]) await c.harness.run(work, n, c);
      return 'done';
    } });
    try {
      await harness.run(durable, '', ctx);
    } finally {
      console.warn = warn;
    }
    assert.equal(warnings.length, 1);
    // Another harness on the same server restores everything, the steps run during the outage included.
    const other = new AgentHarness({ name: 'outage', params: {}, storage: createPostgresStorage(own.url), checkpointStore: createCheckpointStore({ storage: createPostgresStorage(own.url) }), memory: [tally] });
    const restored = await other.restore(ctx.id);
    assert.deepEqual(restored.itemLog.items.map((i) => i.id), ['done-1', 'done-2', 'done-3', 'done-4', 'done-5']);
    assert.deepEqual(other.getLayerState(ctx.id, 'tally'), { done: [1, 2, 3, 4, 5] });
    assert.deepEqual(await createPostgresStorage(own.url).get('layers/tally/T/state'), { done: [1, 2, 3, 4, 5] });
  } finally {
    own.destroy();
  }
});

test("TLS: a harness's layer state through verify-full with the server's CA; a certificate not trusted is STORAGE_TLS_FAILED", { skip }, async (t) => {
  if (!server.ca) return t.skip('the test server has no TLS (openssl was not found when it started)');
  const table = freshTable();
  // The certificate names `localhost`, and its CA is the server's own.
  const byName = server.url.replace('@127.0.0.1:', '@localhost:');
  const trusted = `${byName}?sslmode=verify-full&sslrootcert=${encodeURIComponent(server.ca)}`;
  const storage = createPostgresStorage(trusted, { table });
  const harness = new AgentHarness({ name: 'tls', params: {}, storage, memory: [counter()], initialStep: step.llm({ id: 'ask', model: 'scripted' }), llm: { provider: 'scripted' } });
  await harness.execute('one', { threadId: 'T' });
  await harness.getAgentResponse({ threadId: 'T' });
  assert.deepEqual(await storage.get('layers/counter/T/state'), { n: 1 });
  await assert.rejects(createPostgresStorage(`${byName}?sslmode=verify-full`, { table }).get('k'), (e) => {
    assert.ok(isNoeticConfigError(e));
    assert.equal(e.code, 'STORAGE_TLS_FAILED');
    assert.match(e.message, /invalid peer certificate/);
    assert.match(e.hint, /sslrootcert/);
    return true;
  });
});
