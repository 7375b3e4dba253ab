import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLayerStateStore, createScopedStorage } from '../js/unstable.mjs';
import { AgentHarness, createInMemoryStorage, step } from '../js/index.mjs';

// A storage target whose writes wait until released, recording what each was asked to do.
function gatedTarget() {
  const writes = [];
  const gates = [];
  const write = (op, value) => {
    writes.push([op, value]);
    return new Promise((resolve) => gates.push(resolve));
  };
  return {
    writes,
    release: () => gates.splice(0).forEach((open) => open()),
    target: { get: async () => null, set: (key, value) => write('set', value), delete: () => write('delete'), list: async () => [] },
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('createLayerStateStore keeps state per execution and layer, with has, disable and cleanup', () => {
  const store = createLayerStateStore();
  store.set('e1', 'notes', { n: 1 });
  store.set('e1', 'cleared', undefined);
  store.set('e2', 'notes', { n: 2 });
  assert.deepEqual(store.get('e1', 'notes'), { n: 1 });
  assert.deepEqual(store.get('e2', 'notes'), { n: 2 });
  assert.equal(store.has('e1', 'cleared'), true, 'an explicit undefined is an entry');
  assert.equal(store.has('e1', 'other'), false);
  store.disable('e1', 'notes');
  assert.equal(store.isDisabled('e1', 'notes'), true);
  assert.equal(store.isDisabled('e2', 'notes'), false);
  store.cleanup('e1');
  assert.equal(store.get('e1', 'notes'), undefined);
  assert.equal(store.has('e1', 'cleared'), false);
  assert.equal(store.isDisabled('e1', 'notes'), false);
  assert.deepEqual(store.get('e2', 'notes'), { n: 2 }, 'other executions are untouched');
});

test('durable write-through coalesces writes made while one is in flight, the latest winning', async () => {
  const store = createLayerStateStore();
  const { writes, release, target } = gatedTarget();
  store.set('e', 'notes', { n: 0 });
  assert.equal(writes.length, 0, 'nothing is mirrored before the layer is registered');
  store.registerDurable('e', 'notes', target);
  store.set('e', 'notes', { n: 1 });
  store.set('e', 'notes', { n: 2 });
  store.set('e', 'notes', { n: 3 });
  assert.deepEqual(writes, [['set', { n: 1 }]], 'one write in flight per key');
  let flushed = false;
  const flush = store.flush('e').then(() => (flushed = true));
  release();
  await tick();
  assert.deepEqual(writes, [['set', { n: 1 }], ['set', { n: 3 }]], 'the values set meanwhile become one write of the last');
  assert.equal(flushed, false, 'flush waits for the pending write');
  release();
  await flush;
  store.set('e', 'notes', undefined);
  release();
  await store.flush('e');
  assert.deepEqual(writes.at(-1), ['delete', undefined], 'undefined deletes the durable copy');
  assert.deepEqual(store.get('e', 'notes'), undefined);
});

test('a failing mirror write is a persist diagnostic, and later writes still go through', async () => {
  const reported = [];
  const store = createLayerStateStore((layerId, hook, error) => reported.push([layerId, hook, error.message]));
  const storage = createInMemoryStorage();
  let failNext = true;
  const flaky = createScopedStorage(storage, 'notes', 't1');
  const target = { ...flaky, set: (key, value) => (failNext ? ((failNext = false), Promise.reject(new Error('disk full'))) : flaky.set(key, value)) };
  store.registerDurable('e', 'notes', target);
  store.set('e', 'notes', 'first');
  await store.flush('e');
  assert.deepEqual(reported, [['notes', 'persist', 'disk full']]);
  assert.equal(store.get('e', 'notes'), 'first', 'the in-memory state is kept whatever the mirror did');
  store.set('e', 'notes', 'second');
  await store.flush('e');
  assert.equal(await storage.get('layers/notes/t1/state'), 'second');
  assert.equal(store.diagnostic, store.diagnostic, 'the sink is exposed as upstream');
});

// A store that records every call the harness makes of it.
function recordingStore() {
  const inner = createLayerStateStore();
  const calls = [];
  const store = {};
  for (const name of ['get', 'set', 'has', 'cleanup', 'disable', 'isDisabled', 'registerDurable', 'flush']) {
    store[name] = (...args) => {
      calls.push([name, ...args]);
      return inner[name](...args);
    };
  }
  store.diagnostic = inner.diagnostic;
  return { store, calls, inner };
}

test('the layerStateStore option holds the JS layers’ state: hooks read and write it, executions clean it up', async () => {
  const { store, calls, inner } = recordingStore();
  const seen = [];
  const counter = {
    id: 'counter',
    slot: 10,
    scope: 'thread',
    hooks: {
      init: async () => ({ state: { n: 0 } }),
      recall: async ({ state }) => {
        seen.push(state.n);
        return null;
      },
      store: async ({ state }) => ({ state: { n: state.n + 1 } }),
    },
  };
  const h = new AgentHarness({ name: 'lss', params: {}, layerStateStore: store, memory: [counter], llm: { provider: 'scripted', script: [{ text: 'a' }, { text: 'b' }] } });
  const ctx = h.createContext({ threadId: 't' });
  const ask = (id) => step.llm({ id, model: 'm' });
  const work = step.run({ id: 'work', execute: async (_input, c) => {
    await c.harness.run(ask('one'), 'hi', c);
    // Something outside the harness changes the state in the store: the next hook sees it.
    inner.set(c.id, 'counter', { n: 41 });
    await c.harness.run(ask('two'), 'again', c);
    assert.deepEqual(inner.get(c.id, 'counter'), { n: 42 });
    assert.deepEqual(h.getLayerState(c.id, 'counter'), { n: 42 }, 'getLayerState reads the store');
    return 'done';
  } });
  await h.run(work, '', ctx);
  assert.deepEqual(seen, [0, 41]);
  assert.ok(calls.some(([name, exec, layer]) => name === 'set' && exec === ctx.id && layer === 'counter'));
  assert.ok(calls.some(([name, id]) => name === 'cleanup' && id === ctx.id), "a kept context's execution ends with its run");
  assert.equal(inner.get(ctx.id, 'counter'), undefined);

  // A one-off run ends its execution, which the store is told of.
  calls.length = 0;
  await h.run(step.llm({ id: 'three', model: 'm' }), 'once');
  const execs = new Set(calls.filter(([name]) => name === 'set').map(([, exec]) => exec));
  assert.equal(execs.size, 1);
  const [exec] = execs;
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(calls.some(([name, id]) => name === 'cleanup' && id === exec), 'the ended execution is cleaned up');
  assert.equal(inner.get(exec, 'counter'), undefined);
});

test('a layer disabled by its failed init is reported to the layerStateStore', async () => {
  const { store, calls } = recordingStore();
  const fragile = { id: 'fragile', slot: 5, scope: 'execution', onInitError: 'disable', hooks: { init: async () => { throw new Error('no backend'); }, recall: async () => 'never' } };
  const h = new AgentHarness({ name: 'lss', params: {}, layerStateStore: store, memory: [fragile], onDiagnostic: () => {}, llm: { provider: 'scripted', script: [{ text: 'ok' }] } });
  const out = await h.run(step.llm({ id: 'one', model: 'm' }), 'hi');
  assert.equal(out, 'ok');
  const disabled = calls.filter(([name]) => name === 'disable');
  assert.equal(disabled.length, 1);
  assert.equal(disabled[0][2], 'fragile');
});

test('a layerStateStore without the methods the harness calls is a config error', () => {
  for (const bad of [42, {}, { get() {}, set() {} }]) {
    assert.throws(
      () => new AgentHarness({ name: 'bad', params: {}, layerStateStore: bad }),
      (e) => e.code === 'INVALID_LAYER_STATE_STORE' && typeof e.hint === 'string',
    );
  }
});
