// createSqliteStorage: the embedded durable store, as an agent uses it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createSqliteStorage, isNoeticConfigError } from '../js/index.mjs';
import { scratchDb } from './helpers.mjs';

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

test('state written by an agent survives the process being killed, and another harness rehydrates it', () => {
  const path = scratch();
  const writer = fileURLToPath(new URL('./fixtures/sqlite-writer.mjs', import.meta.url));
  for (const turns of [3, 2]) {
    const result = spawnSync(process.execPath, [writer, path, String(turns)], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(result.signal, 'SIGKILL', result.stderr);
  }
  const check = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', `import { createSqliteStorage } from ${JSON.stringify(new URL('../js/index.mjs', import.meta.url).href)};
      console.log(JSON.stringify(await createSqliteStorage(${JSON.stringify(path)}).get('layers/counter/T/state')));`],
    { encoding: 'utf8', timeout: 30_000 },
  );
  assert.equal(check.status, 0, check.stderr);
  assert.deepEqual(JSON.parse(check.stdout), { n: 5 });
});

test('a path that cannot be opened is a NoeticConfigError', () => {
  for (const path of ['/nonexistent-dir/for/sure/agent.db', '']) {
    assert.throws(() => createSqliteStorage(path), (e) => isNoeticConfigError(e) && e.code === 'STORAGE_OPEN_FAILED' && Boolean(e.hint));
  }
});
