// createSqliteStorage: the embedded durable store, as an agent uses it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AgentHarness, createCheckpointStore, createSqliteStorage, isNoeticConfigError, step } from '../js/index.mjs';
import { scratchDb, slow } from './helpers.mjs';

const scratch = () => scratchDb('agent.db');

test('the adapter contract: get, set, delete and list by prefix, values as JSON', async () => {
  const storage = createSqliteStorage(scratch());
  assert.equal(await storage.get('missing'), null);
  await storage.set('layers/a/T/state', { entries: ['tea'], n: 1.5 });
  await storage.set('layers/a/U/state', 'text');
  await storage.set('layers/b/T/state', [1, 2]);
  assert.deepEqual(await storage.get('layers/a/T/state'), { entries: ['tea'], n: 1.5 });
  assert.deepEqual(await storage.list('layers/a/'), ['layers/a/T/state', 'layers/a/U/state']);
  await storage.delete('layers/a/U/state');
  assert.deepEqual(await storage.list('layers/'), ['layers/a/T/state', 'layers/b/T/state']);
});

test('state written by an agent survives the process being killed, and another harness rehydrates it', { timeout: slow(60_000) }, () => {
  const path = scratch();
  const writer = fileURLToPath(new URL('./fixtures/sqlite-writer.mjs', import.meta.url));
  for (const turns of [3, 2]) {
    const result = spawnSync(process.execPath, [writer, path, String(turns)], { encoding: 'utf8', timeout: slow(30_000) });
    assert.equal(result.signal, 'SIGKILL', result.stderr);
  }
  const check = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', `import { createSqliteStorage } from ${JSON.stringify(new URL('../js/index.mjs', import.meta.url).href)};
      console.log(JSON.stringify(await createSqliteStorage(${JSON.stringify(path)}).get('layers/counter/T/state')));`],
    { encoding: 'utf8', timeout: slow(30_000) },
  );
  assert.equal(check.status, 0, check.stderr);
  assert.deepEqual(JSON.parse(check.stdout), { n: 5 });
});

test('processes opening one new file at the same moment all get the store', { timeout: slow(60_000) }, async () => {
  // Their first transactions race to switch the file to WAL and make the table; SQLite refuses some of those with
  // SQLITE_BUSY without waiting, which the store tries again instead of failing to open.
  const { spawn } = await import('node:child_process');
  const entry = fileURLToPath(new URL('../js/index.cjs', import.meta.url));
  const code = `require(${JSON.stringify(entry)}).createSqliteStorage(process.argv[1]).set('k', process.pid).then(() => process.exit(0))`;
  for (let round = 0; round < 4; round++) {
    const path = scratchDb(`openers-${round}.db`);
    const results = await Promise.all(Array.from({ length: 8 }, () => new Promise((resolve) => {
      const child = spawn(process.execPath, ['-e', code, path], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.on('exit', (status) => resolve({ status, stderr }));
    })));
    for (const { status, stderr } of results) assert.equal(status, 0, stderr);
  }
});

test('a path that cannot be opened is a NoeticConfigError', () => {
  for (const path of ['/nonexistent-dir/for/sure/agent.db', '']) {
    assert.throws(() => createSqliteStorage(path), (e) => isNoeticConfigError(e) && e.code === 'STORAGE_OPEN_FAILED' && Boolean(e.hint));
  }
});

const coded = (code, ...parts) => (e) => {
  assert.ok(isNoeticConfigError(e), `a NoeticConfigError, got ${e?.stack ?? e}`);
  assert.equal(e.code, code, e.message);
  for (const part of parts) assert.ok(e.message.includes(part), `${e.message} names ${part}`);
  assert.ok(e.hint.length > 0);
  return true;
};

test('a database file deleted under a live store: its writes are refused, never acknowledged and then lost', async () => {
  const path = scratch();
  const storage = createSqliteStorage(path);
  await storage.set('layers/counter/T/state', { n: 1 });
  rmSync(path);
  await assert.rejects(storage.set('after', 2), coded('STORAGE_FILE_MOVED', "'after'", path));
  await assert.rejects(storage.delete('layers/counter/T/state'), coded('STORAGE_FILE_MOVED'));
  // What a restart (or another process) finds at the path: nothing the store said it wrote is missing.
  const restarted = createSqliteStorage(path);
  assert.equal(await restarted.get('after'), null);

  // An agent on the store goes on, and each state write it could not make is a persist diagnostic.
  rmSync(path);
  const diagnostics = [];
  const counter = {
    id: 'counter',
    slot: 300,
    scope: 'thread',
    hooks: {
      init: async ({ storage: scoped }) => ({ state: (await scoped.get('state')) ?? { n: 0 } }),
      store: async ({ state }) => ({ state: { n: state.n + 1 } }),
    },
  };
  const h = new AgentHarness({ name: 'a', params: {}, storage: restarted, onDiagnostic: (d) => diagnostics.push(d), llm: { provider: 'scripted', script: [{ text: 'ok' }] } });
  assert.equal(await h.run(step.llm({ id: 'l', model: 'm' }), 'hi', { threadId: 'T', memory: [counter] }), 'ok');
  // The state mirror writes behind the run.
  for (let i = 0; i < 500 && !diagnostics.some((d) => d.hook === 'persist'); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const persist = diagnostics.filter((d) => d.hook === 'persist');
  assert.ok(persist.length >= 1, JSON.stringify(diagnostics));
  assert.match(persist[0].message, /deleted or moved away/);
});

test("a stored value that is not JSON is STORAGE_CORRUPT naming the key; a checkpoint in it is CHECKPOINT_SCHEMA_MISMATCH", async () => {
  const path = scratch();
  const storage = createSqliteStorage(path);
  const checkpoints = createCheckpointStore({ storage });
  await checkpoints.save({ executionId: 'e1' });
  const [key] = await storage.list('');
  // Another program damages the row (python's sqlite3, as any other writer of the file could).
  execFileSync('python3', ['-c', 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE noetic_kv SET value = \'{not json\'"); c.commit()', path]);
  await assert.rejects(storage.get(key), coded('STORAGE_CORRUPT', `'${key}'`, path));
  await assert.rejects(checkpoints.load('e1'), coded('CHECKPOINT_SCHEMA_MISMATCH', 'e1', 'not JSON'));
});

test('a write past the file-size limit is STORAGE_IO_FAILED with a hint naming the limit, and the process lives on', { timeout: slow(60_000) }, () => {
  const path = scratch();
  const program = `import { createSqliteStorage } from ${JSON.stringify(new URL('../js/index.mjs', import.meta.url).href)};
    const storage = createSqliteStorage(${JSON.stringify(path)});
    await storage.set('small', 1);
    const error = await storage.set('large', 'x'.repeat(500_000)).catch((e) => e);
    console.log(JSON.stringify({ code: error?.code, message: error?.message, hint: error?.hint, small: await storage.get('small') }));`;
  // A limit of 200 blocks of 1 KB: the small value fits, the large one does not.
  const result = spawnSync('bash', ['-c', 'ulimit -f 200; exec "$0" --input-type=module -e "$1"', process.execPath, program], { encoding: 'utf8', timeout: slow(30_000) });
  assert.equal(result.status, 0, result.stderr);
  const outcome = JSON.parse(result.stdout);
  assert.equal(outcome.code, 'STORAGE_IO_FAILED', outcome.message);
  assert.match(outcome.message, /could not write 'large'/);
  assert.match(outcome.hint, /file-size limit/);
  assert.equal(outcome.small, 1);
});
