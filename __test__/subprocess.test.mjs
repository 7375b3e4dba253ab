// createInMemorySubprocessAdapter and harness.subprocess: upstream's in-memory SubprocessAdapter, its handles,
// their lifecycle, and the manifests through which a second adapter on the same storage sees the first's handles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AgentHarness,
  NoeticConfigError,
  NoeticErrorImpl,
  createInMemoryStorage,
  createInMemorySubprocessAdapter,
  serializeError,
} from '../js/index.mjs';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MANIFEST_PREFIX = 'inMemorySubprocess:manifest:';
const never = () => new Promise(() => {});

// Polls until `check` holds, so that tests wait for background completions without fixed sleeps.
async function until(check, what) {
  const deadline = Date.now() + 2000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const stepRequest = (extra = {}) => ({
  kind: 'step',
  stepId: 'greet',
  serializedInput: { name: 'Ada' },
  executionId: 'exec-1',
  overrides: { threadId: 't-1' },
  ...extra,
});

const statusOf = async (adapter, id) => (await adapter.get(id))?.status;

async function configErrorOf(promiseOrFn) {
  try {
    await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn);
  } catch (e) {
    assert.ok(e instanceof NoeticConfigError, `expected NoeticConfigError, got ${e}`);
    assert.ok(e.hint.length > 0, 'a config error carries a hint');
    return e.code;
  }
  assert.fail('expected a NoeticConfigError');
}

// A storage that records its calls and keeps values by reference, as a user's Map-backed adapter would.
function mapStorage() {
  const map = new Map();
  return {
    map,
    async get(key) {
      return map.has(key) ? map.get(key) : null;
    },
    async set(key, value) {
      map.set(key, value);
    },
    async delete(key) {
      map.delete(key);
    },
    async list(prefix) {
      return [...map.keys()].filter((key) => key.startsWith(prefix));
    },
  };
}

async function withWarnings(fn) {
  const warnings = [];
  const original = console.warn;
  console.warn = (...args) => warnings.push(args);
  try {
    await fn();
  } finally {
    console.warn = original;
  }
  return warnings;
}

test('a process request: a running handle with in-memory metadata, completed at once without a run option', async () => {
  const adapter = createInMemorySubprocessAdapter();
  const tag = { team: 'planning' };
  const handle = await adapter.spawn({ command: 'planner', args: ['--fast'], cwd: '/repo', metadata: { role: 'planner', tag, runtime: 'mine' } });

  assert.match(handle.id, /^subprocess-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(handle.status, 'running', 'the handle spawn returns is a snapshot taken at spawn');
  assert.match(handle.startedAt, ISO);
  assert.equal(handle.updatedAt, handle.startedAt);
  // The request's metadata first, the adapter's own fields over it.
  assert.deepEqual(handle.metadata, { role: 'planner', tag, runtime: 'in-memory', command: 'planner', args: ['--fast'], cwd: '/repo' });
  assert.equal(handle.metadata.tag, tag, 'metadata values are the very values given');

  const current = await adapter.get(handle.id);
  assert.equal(current.status, 'completed');
  assert.equal(current.metadata, handle.metadata, 'a process completion keeps the metadata object');
  assert.equal(await adapter.get(handle.id), current, 'get returns the same object until the next transition');
  assert.equal(await adapter.isAlive(handle), false);

  const bare = await adapter.spawn({ kind: 'process', command: 'noop' });
  assert.deepEqual(bare.metadata, { runtime: 'in-memory', command: 'noop', args: [], cwd: undefined });
});

test('the run option runs a process request; the handle stays running and live until it settles', async () => {
  let finish;
  const calls = [];
  const adapter = createInMemorySubprocessAdapter({
    run: (request, handle) => {
      calls.push([request, handle]);
      return new Promise((resolve) => {
        finish = resolve;
      });
    },
  });
  const request = { command: 'worker' };
  const handle = await adapter.spawn(request);
  assert.equal(calls.length, 1);
  assert.equal(calls[0][0], request);
  assert.equal(calls[0][1], handle);
  assert.equal(await statusOf(adapter, handle.id), 'running');
  assert.equal(await adapter.isAlive(handle), true);
  assert.deepEqual((await adapter.listLive()).map((h) => h.id), [handle.id]);

  finish();
  await until(async () => (await statusOf(adapter, handle.id)) === 'completed', 'completion');
  const done = await adapter.get(handle.id);
  assert.ok(done.updatedAt >= done.startedAt);
  assert.equal(await adapter.isAlive(handle), false);
  assert.deepEqual(await adapter.listLive(), []);
});

test('a run option that throws fails the handle with the serialized error', async () => {
  const adapter = createInMemorySubprocessAdapter({
    run: async () => {
      throw new TypeError('no such binary');
    },
  });
  const handle = await adapter.spawn({ command: 'missing' });
  await until(async () => (await statusOf(adapter, handle.id)) === 'failed', 'failure');
  const { error } = (await adapter.get(handle.id)).metadata;
  assert.equal(error.message, 'no such binary');
  assert.equal(error.name, 'TypeError');
  assert.match(error.stack, /no such binary/);
  assert.equal('noeticError' in error, false);
});

test('metadataInjector: its fields win over the adapter\'s own, on the handle spawn returns', async () => {
  const seen = [];
  const adapter = createInMemorySubprocessAdapter({
    metadataInjector: (request) => {
      seen.push(request.kind ?? 'process');
      return request.kind === 'step' ? { stepInjected: true } : { pid: 4242, runtime: 'simulated' };
    },
    run: never,
    stepRunner: never,
  });
  const process = await adapter.spawn({ kind: 'process', command: 'bun', metadata: { taskRole: 'planner' } });
  assert.equal(process.metadata.pid, 4242);
  assert.equal(process.metadata.runtime, 'simulated');
  assert.equal(process.metadata.taskRole, 'planner');
  const step = await adapter.spawn(stepRequest());
  assert.equal(step.metadata.stepInjected, true);
  assert.deepEqual(seen, ['process', 'step']);

  const throwing = createInMemorySubprocessAdapter({
    metadataInjector: () => {
      throw new Error('injector broke');
    },
  });
  await assert.rejects(throwing.spawn({ command: 'x' }), /injector broke/);
  assert.deepEqual(await throwing.listLive(), [], 'a spawn that failed registers nothing');
});

test('a step request runs its _localExecutor in-process; the result is kept on the handle as the very value', async () => {
  const result = { answer: 42, at: new Date(0), fn: () => 1 };
  let ran = 0;
  const adapter = createInMemorySubprocessAdapter({ stepRunner: async () => 'not used' });
  const handle = await adapter.spawn(
    stepRequest({
      metadata: { origin: 'test' },
      _localExecutor: async () => {
        ran += 1;
        return result;
      },
    }),
  );
  assert.equal(ran, 1, 'the executor has started by the time spawn resolves');
  assert.deepEqual(handle.metadata, { origin: 'test', runtime: 'in-memory', kind: 'step', stepId: 'greet', executionId: 'exec-1' });
  await until(async () => (await statusOf(adapter, handle.id)) === 'completed', 'completion');
  const done = await adapter.get(handle.id);
  assert.equal(done.metadata.result, result);
  assert.equal(done.metadata.origin, 'test');
  assert.equal(handle.metadata.result, undefined, 'earlier snapshots are never mutated');
});

test('a step request without an executor uses stepRunner, else fails saying so', async () => {
  const calls = [];
  const adapter = createInMemorySubprocessAdapter({
    stepRunner: async (request, handle) => {
      calls.push([request, handle]);
      return `hello ${request.serializedInput.name}`;
    },
  });
  const request = stepRequest();
  const handle = await adapter.spawn(request);
  await until(async () => (await statusOf(adapter, handle.id)) === 'completed', 'completion');
  assert.equal((await adapter.get(handle.id)).metadata.result, 'hello Ada');
  assert.equal(calls[0][0], request);
  assert.equal(calls[0][1], handle);

  const bare = createInMemorySubprocessAdapter();
  const orphan = await bare.spawn(stepRequest({ stepId: 'lonely' }));
  await until(async () => (await statusOf(bare, orphan.id)) === 'failed', 'failure');
  assert.equal(
    (await bare.get(orphan.id)).metadata.error.message,
    'In-memory subprocess adapter has no executor for step "lonely". Provide a stepRunner option or dispatch via AgentHarness.',
  );

  const undefinedResult = await bare.spawn(stepRequest({ _localExecutor: async () => undefined }));
  await until(async () => (await statusOf(bare, undefinedResult.id)) === 'completed', 'completion');
  const { metadata } = await bare.get(undefinedResult.id);
  assert.ok('result' in metadata && metadata.result === undefined, 'an undefined result is still recorded');
});

test('a failing step keeps a NoeticError payload; strings and unprintable values are recorded too', async () => {
  const adapter = createInMemorySubprocessAdapter();
  const failWith = async (thrown) => {
    const handle = await adapter.spawn(
      stepRequest({
        _localExecutor: async () => {
          throw thrown;
        },
      }),
    );
    await until(async () => (await statusOf(adapter, handle.id)) === 'failed', 'failure');
    return (await adapter.get(handle.id)).metadata.error;
  };

  const payload = { kind: 'step_failed', stepId: 'greet', cause: { message: 'sync boom' }, retriesExhausted: true };
  const noetic = await failWith(new NoeticErrorImpl(payload, 'step greet failed'));
  assert.equal(noetic.name, 'NoeticError');
  assert.equal(noetic.message, 'step greet failed');
  assert.equal(noetic.noeticError, payload);

  assert.deepEqual(await failWith('plain string'), { message: 'plain string' });
  assert.deepEqual(await failWith(7), { message: '7' });
  const unprintable = await failWith({
    toString() {
      throw new Error('no');
    },
  });
  assert.equal(typeof unprintable.message, 'string');
});

test('serializeError: upstream\'s SerializedError shapes', () => {
  const error = new RangeError('out of range');
  assert.deepEqual(serializeError(error), { message: 'out of range', name: 'RangeError', stack: error.stack });
  const noetic = new NoeticErrorImpl({ kind: 'cancelled', reason: 'user' });
  assert.deepEqual(serializeError(noetic), { message: 'Cancelled: user', name: 'NoeticError', stack: noetic.stack, noeticError: { kind: 'cancelled', reason: 'user' } });
  const tagged = Object.assign(new Error('tagged'), { noeticError: undefined });
  assert.ok('noeticError' in serializeError(tagged), 'anything exposing noeticError keeps the key');
  assert.deepEqual(serializeError('text'), { message: 'text' });
  assert.deepEqual(serializeError(null), { message: 'null' });
  assert.deepEqual(serializeError({ message: 'not an Error' }), { message: '[object Object]' });
});

test('stop: any known handle becomes stopped with its reason, and a late result does not undo it', async () => {
  let finish;
  const adapter = createInMemorySubprocessAdapter({
    stepRunner: () =>
      new Promise((resolve) => {
        finish = resolve;
      }),
  });
  const handle = await adapter.spawn(stepRequest());
  const stopped = await adapter.stop(handle.id, 'cancelled by user');
  assert.equal(stopped.kind, 'stopped');
  assert.equal(stopped.handleId, handle.id);
  assert.equal(stopped.handle.status, 'stopped');
  assert.equal(stopped.handle.metadata.stopReason, 'cancelled by user');
  assert.equal(stopped.handle.metadata.stepId, 'greet');
  assert.equal(await adapter.get(handle.id), stopped.handle);
  assert.equal(await adapter.isAlive(handle), false);

  finish('too late');
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(await statusOf(adapter, handle.id), 'stopped');
  assert.equal((await adapter.get(handle.id)).metadata.result, undefined);

  // A completed handle can be stopped too; a missing reason is recorded as undefined.
  const done = await adapter.spawn({ command: 'quick' });
  const again = await adapter.stop(done.id);
  assert.equal(again.handle.status, 'stopped');
  assert.ok('stopReason' in again.handle.metadata && again.handle.metadata.stopReason === undefined);

  assert.deepEqual(await adapter.stop('subprocess-unknown', 'x'), { kind: 'not_found', handleId: 'subprocess-unknown' });
});

test('get, pause, resume and isAlive on known and unknown handles', async () => {
  const adapter = createInMemorySubprocessAdapter({ run: never });
  const handle = await adapter.spawn({ command: 'long' });
  assert.equal(await adapter.get('nope'), null);
  assert.equal(await adapter.get(undefined), null);
  assert.deepEqual(await adapter.pause(handle.id), { kind: 'unsupported', handle, message: 'In-memory subprocess adapter does not support pause.' });
  assert.deepEqual(await adapter.resume(handle.id), { kind: 'unsupported', handle, message: 'In-memory subprocess adapter does not support resume.' });
  assert.deepEqual(await adapter.pause('nope'), { kind: 'not_found', handleId: 'nope' });
  assert.deepEqual(await adapter.resume('nope'), { kind: 'not_found', handleId: 'nope' });
  assert.equal(await adapter.isAlive({ id: 'nope' }), false);
  assert.equal(await adapter.isAlive(null), false);
  // Methods need no `this`, as upstream's object literal's do.
  const { get, isAlive } = adapter;
  assert.equal((await get(handle.id)).id, handle.id);
  assert.equal(await isAlive(handle), true);
});

test('listLive lists live handles in the order they were spawned; ended ones leave it', async () => {
  const adapter = createInMemorySubprocessAdapter({ run: never, stepRunner: never });
  const a = await adapter.spawn({ command: 'a' });
  const b = await adapter.spawn(stepRequest());
  const c = await adapter.spawn({ command: 'c' });
  assert.deepEqual((await adapter.listLive()).map((h) => h.id), [a.id, b.id, c.id]);
  await adapter.stop(b.id);
  assert.deepEqual((await adapter.listLive()).map((h) => h.id), [a.id, c.id]);
  assert.equal((await adapter.listLive())[0], await adapter.get(a.id));
});

test('without storage: reattach returns null and nothing outlives the adapter', async () => {
  const adapter = createInMemorySubprocessAdapter({ stepRunner: never });
  const handle = await adapter.spawn(stepRequest());
  assert.equal(await adapter.reattach(handle.id), null);
  assert.equal(await createInMemorySubprocessAdapter().reattach(handle.id), null);
  assert.deepEqual(await createInMemorySubprocessAdapter().listLive(), []);
});

test('with storage: a running step\'s manifest lets a second adapter listLive and reattach it', async () => {
  const storage = createInMemoryStorage();
  const first = createInMemorySubprocessAdapter({ storage, stepRunner: never });
  const spawned = await first.spawn(stepRequest({ metadata: { notPersisted: true } }));

  assert.deepEqual(await storage.list(MANIFEST_PREFIX), [`${MANIFEST_PREFIX}${spawned.id}`]);
  assert.deepEqual(await storage.get(`${MANIFEST_PREFIX}${spawned.id}`), {
    kind: 'step',
    handleId: spawned.id,
    stepId: 'greet',
    executionId: 'exec-1',
    serializedInput: { name: 'Ada' },
    overrides: { threadId: 't-1' },
    startedAt: spawned.startedAt,
    reattachMode: 'replay',
  });

  const second = createInMemorySubprocessAdapter({ storage });
  const live = await second.listLive();
  assert.equal(live.length, 1);
  assert.equal(live[0].id, spawned.id);
  assert.equal(live[0].status, 'running');
  assert.equal(live[0].startedAt, spawned.startedAt);
  assert.match(live[0].updatedAt, ISO);
  assert.deepEqual(live[0].metadata, { runtime: 'in-memory', kind: 'step', stepId: 'greet', executionId: 'exec-1', reattachMode: 'replay' });
  assert.equal(await second.get(spawned.id), null, 'listing does not take a handle in');
  assert.equal(await second.isAlive(spawned), false);

  const reattached = await second.reattach(spawned.id);
  assert.deepEqual({ ...reattached, updatedAt: undefined }, { ...live[0], updatedAt: undefined });
  assert.equal(await second.get(spawned.id), reattached);
  assert.equal(await second.isAlive(spawned), true);
  // Listed once, though it is both live here and in the storage.
  assert.deepEqual((await second.listLive()).map((h) => h.id), [spawned.id]);
  assert.equal(await second.reattach('subprocess-unknown'), null);

  // Stopping it anywhere clears the manifest: a third adapter no longer sees it.
  const stopped = await second.stop(spawned.id, 'cleanup');
  assert.equal(stopped.handle.metadata.stopReason, 'cleanup');
  const third = createInMemorySubprocessAdapter({ storage });
  assert.deepEqual(await third.listLive(), []);
  assert.equal(await third.reattach(spawned.id), null);
  assert.equal(await statusOf(first, spawned.id), 'running', 'the first adapter is not told');
});

test('with storage: completed and failed steps clear their manifests; process handles never write one', async () => {
  const storage = createInMemoryStorage();
  let finish;
  const adapter = createInMemorySubprocessAdapter({
    storage,
    stepRunner: (request) => {
      if (request.stepId === 'fails') return Promise.reject(new Error('boom'));
      if (request.stepId === 'waits') {
        return new Promise((resolve) => {
          finish = resolve;
        });
      }
      return Promise.resolve('ok');
    },
  });
  const handles = [];
  for (let i = 0; i < 5; i++) handles.push(await adapter.spawn(stepRequest({ stepId: i === 2 ? 'fails' : `s${i}`, executionId: `e${i}` })));
  const waiting = await adapter.spawn(stepRequest({ stepId: 'waits' }));
  await adapter.spawn({ command: 'process' });

  await until(async () => (await storage.list(MANIFEST_PREFIX)).length === 1, 'manifests to clear');
  assert.equal(await statusOf(adapter, handles[2].id), 'failed');
  assert.equal(await statusOf(adapter, handles[4].id), 'completed');
  const live = await createInMemorySubprocessAdapter({ storage }).listLive();
  assert.deepEqual(live.map((h) => h.id), [waiting.id]);

  finish('done');
  await until(async () => (await storage.list(MANIFEST_PREFIX)).length === 0, 'the last manifest to clear');
  assert.deepEqual(await adapter.listLive(), []);
});

test('with a storage of the user\'s own: manifests hold the request\'s values; junk under the prefix is ignored', async () => {
  const storage = mapStorage();
  const input = { big: new Map([[1, 2]]) };
  const first = createInMemorySubprocessAdapter({ storage, stepRunner: never });
  const spawned = await first.spawn(stepRequest({ serializedInput: input }));
  assert.equal(storage.map.get(`${MANIFEST_PREFIX}${spawned.id}`).serializedInput, input);

  storage.map.set(`${MANIFEST_PREFIX}junk`, { kind: 'step', handleId: 'junk' });
  storage.map.set(`${MANIFEST_PREFIX}text`, 'not a manifest');
  const second = createInMemorySubprocessAdapter({ storage });
  assert.deepEqual((await second.listLive()).map((h) => h.id), [spawned.id]);
  assert.equal(await second.reattach('junk'), null);
  assert.equal(await second.reattach('missing'), null);
});

test('a manifest that cannot be written or cleared is a warning, never a failed spawn', async () => {
  const storage = {
    ...mapStorage(),
    async set() {
      throw new Error('disk full');
    },
    async delete() {
      throw new Error('read-only');
    },
  };
  const adapter = createInMemorySubprocessAdapter({ storage, stepRunner: async () => 'fine' });
  let handle;
  const warnings = await withWarnings(async () => {
    handle = await adapter.spawn(stepRequest());
    await until(async () => (await statusOf(adapter, handle.id)) === 'completed', 'completion');
    await new Promise((resolve) => setTimeout(resolve, 5));
  });
  assert.equal((await adapter.get(handle.id)).metadata.result, 'fine');
  assert.deepEqual(
    warnings.map(([message, error]) => [message, error.message]),
    [
      [`createInMemorySubprocessAdapter: failed to persist manifest for "${handle.id}":`, 'disk full'],
      [`createInMemorySubprocessAdapter: failed to clear manifest for "${handle.id}":`, 'read-only'],
    ],
  );

  // A step input JSON cannot hold, with a native storage: the step still runs.
  const native = createInMemorySubprocessAdapter({ storage: createInMemoryStorage() });
  const unstorable = await withWarnings(async () => {
    const h = await native.spawn(stepRequest({ serializedInput: 10n, _localExecutor: async () => 'ran' }));
    await until(async () => (await statusOf(native, h.id)) === 'completed', 'completion');
  });
  assert.equal(unstorable.length, 1);
  assert.equal(unstorable[0][1].code, 'INVALID_STORAGE_VALUE');
});

test('a storage that fails a read rejects reattach and listLive', async () => {
  const storage = {
    ...mapStorage(),
    async get() {
      throw new Error('offline');
    },
    async list() {
      throw new Error('offline');
    },
  };
  const adapter = createInMemorySubprocessAdapter({ storage });
  await assert.rejects(adapter.reattach('x'), /offline/);
  await assert.rejects(adapter.listLive(), /offline/);
});

test('bad options and requests are NoeticConfigErrors', async () => {
  assert.equal(await configErrorOf(() => createInMemorySubprocessAdapter(null)), 'INVALID_SUBPROCESS_OPTIONS');
  assert.equal(await configErrorOf(() => createInMemorySubprocessAdapter({ run: 'go' })), 'INVALID_SUBPROCESS_OPTIONS');
  assert.equal(await configErrorOf(() => createInMemorySubprocessAdapter({ stepRunner: 1 })), 'INVALID_SUBPROCESS_OPTIONS');
  assert.equal(await configErrorOf(() => createInMemorySubprocessAdapter({ metadataInjector: {} })), 'INVALID_SUBPROCESS_OPTIONS');
  assert.equal(await configErrorOf(() => createInMemorySubprocessAdapter({ storage: { get() {} } })), 'INVALID_SUBPROCESS_OPTIONS');
  const adapter = createInMemorySubprocessAdapter();
  assert.equal(await configErrorOf(adapter.spawn(null)), 'INVALID_SUBPROCESS_REQUEST');
  assert.equal(await configErrorOf(adapter.spawn('planner')), 'INVALID_SUBPROCESS_REQUEST');
});

test('harness.subprocess: an in-memory adapter of its own by default, or the one given', async () => {
  const a = new AgentHarness({ name: 'a', params: {} });
  const b = new AgentHarness({ name: 'b', params: {} });
  assert.notEqual(a.subprocess, b.subprocess);
  const handle = await a.subprocess.spawn({ command: 'noop' });
  assert.equal(handle.metadata.runtime, 'in-memory');
  assert.equal(await b.subprocess.get(handle.id), null);

  const mine = createInMemorySubprocessAdapter();
  assert.equal(new AgentHarness({ name: 'c', params: {}, subprocess: mine }).subprocess, mine);
  const custom = { spawn: async () => ({ id: 'x', status: 'running', startedAt: '' }), get: async () => null };
  assert.equal(new AgentHarness({ name: 'd', params: {}, subprocess: custom }).subprocess, custom);
  assert.equal(new AgentHarness({ name: 'e', params: {}, subprocess: null }).subprocess.spawn.name, 'spawn');
});

test('harness.subprocess that is not an adapter is INVALID_SUBPROCESS_ADAPTER', async () => {
  for (const subprocess of ['in-memory', 42, true, {}, { spawn() {} }, { get() {} }, { spawn: 1, get: 2 }]) {
    assert.equal(await configErrorOf(() => new AgentHarness({ name: 't', params: {}, subprocess })), 'INVALID_SUBPROCESS_ADAPTER', String(subprocess));
  }
});
