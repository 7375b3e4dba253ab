// Checkpoints (issue 12): the store over a StorageAdapter, snapshots of live contexts, restores in another harness
// or process (SQLite, and a SIGKILL between steps), and snapshots that cannot be restored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AgentHarness,
  CheckpointKeys,
  CheckpointSchemaVersion,
  CheckpointSnapshotSchema,
  FrontierFrameSchema,
  createCheckpointStore,
  createInMemoryStorage,
  durableTaskState,
  isNoeticConfigError,
  step,
} from '../js/index.mjs';
import { recordingModel, runFixture, scratchDb, slow } from './helpers.mjs';

const snapshot = (executionId, extra = {}) => ({
  schemaVersion: 1,
  executionId,
  frontier: [],
  layers: {},
  cwd: null,
  askUser: [],
  itemLog: { items: [] },
  capturedAt: new Date().toISOString(),
  ...extra,
});
const isCode = (code, fragment) => (e) => {
  assert.ok(isNoeticConfigError(e), `expected a NoeticConfigError, got ${e?.stack ?? e}`);
  assert.equal(e.code, code);
  if (fragment) assert.ok(e.message.includes(fragment), `'${e.message}' names ${fragment}`);
  assert.ok(e.hint.length > 0);
  return true;
};
const user = (id, text) => ({ id, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] });

// A JS layer counting its inits, and the built-in durableTaskState, whose state moves with each model step.
function layers(inits) {
  const notes = {
    id: 'notes',
    slot: 100,
    scope: 'execution',
    budget: 100,
    hooks: {
      init: async () => {
        inits.count++;
        return { state: { seen: [] } };
      },
      store: async ({ state, response }) => ({ state: { seen: [...state.seen, response.items.length] } }),
    },
  };
  return [notes, durableTaskState()];
}

test('the store keeps snapshots under upstream keys, lists them, clears them and loads null for none', async () => {
  const storage = createInMemoryStorage();
  const store = createCheckpointStore({ storage });
  await store.save(snapshot('a', { threadId: 't', frontier: [{ stepId: 's', input: 'hi' }], layers: { l: { x: 1 } } }));
  await store.save(snapshot('b'));
  await storage.set('execution:stray', { not: 'a snapshot key' });
  assert.deepEqual(await storage.list('execution:'), ['execution:a:snapshot', 'execution:b:snapshot', 'execution:stray']);
  assert.deepEqual(new Set((await store.list()).map((e) => e.executionId)), new Set(['a', 'b']));
  const loaded = await store.load('a');
  assert.deepEqual(loaded.frontier, [{ stepId: 's', input: 'hi' }]);
  assert.deepEqual(loaded.layers, { l: { x: 1 } });
  assert.equal(await store.load('missing'), null);
  await store.clear('a');
  assert.equal(await store.load('a'), null);
  assert.deepEqual(CheckpointKeys, {
    ExecPrefix: 'execution:',
    SnapshotSuffix: ':snapshot',
    FrontierSuffix: ':frontier',
    LayersSuffix: ':layers:',
    CwdSuffix: ':cwd',
    AskUserSuffix: ':askUser',
    ItemLogSuffix: ':itemLog',
  });
  assert.equal(CheckpointSchemaVersion, 1);
  assert.equal(FrontierFrameSchema.safeParse({ stepId: 3 }).success, false);
});

test('a snapshot of another version or shape loads as CHECKPOINT_SCHEMA_MISMATCH naming what is wrong', async () => {
  const storage = createInMemoryStorage();
  const store = createCheckpointStore({ storage });
  const key = (id) => `${CheckpointKeys.ExecPrefix}${id}${CheckpointKeys.SnapshotSuffix}`;
  await storage.set(key('v0'), { schemaVersion: 0, executionId: 'v0' });
  await storage.set(key('v2'), snapshot('v2', { schemaVersion: 2 }));
  await storage.set(key('broken'), { schemaVersion: 1 });
  await storage.set(key('text'), 'not a snapshot');
  await storage.set(key('bad-usage'), snapshot('bad-usage', { usage: { stepCount: -1, tokens: { input: 0, output: 0 }, cost: 0 } }));
  await assert.rejects(store.load('v0'), isCode('CHECKPOINT_SCHEMA_MISMATCH', 'schemaVersion=0'));
  await assert.rejects(store.load('v2'), isCode('CHECKPOINT_SCHEMA_MISMATCH', 'schemaVersion=2'));
  await assert.rejects(store.load('broken'), isCode('CHECKPOINT_SCHEMA_MISMATCH', '"broken"'));
  await assert.rejects(store.load('text'), isCode('CHECKPOINT_SCHEMA_MISMATCH', 'schemaVersion=unknown'));
  await assert.rejects(store.load('bad-usage'), isCode('CHECKPOINT_SCHEMA_MISMATCH', 'usage.stepCount'));
  assert.throws(() => createCheckpointStore({ storage: {} }), isCode('INVALID_CHECKPOINT_STORE', 'get, set, delete, list'));
  assert.throws(() => new AgentHarness({ name: 'h', params: {}, checkpointStore: { save() {} } }), isCode('INVALID_CHECKPOINT_STORE', 'load'));
});

test('without a checkpoint store, checkpoint does nothing and restore gives null', async () => {
  const h = new AgentHarness({ name: 'h', params: {} });
  const ctx = h.createContext();
  await h.checkpoint(ctx);
  await ctx.checkpoint();
  assert.equal(await h.restore(ctx.id), null);
});

test('a context restored by another harness has its items, layer states, counters and cwd, and goes on', async () => {
  const storage = createInMemoryStorage();
  const checkpointStore = createCheckpointStore({ storage });
  const inits = { count: 0 };
  const first = new AgentHarness({ name: 'h', params: {}, storage, checkpointStore, memory: layers(inits), _testCallModel: recordingModel().model, initialCwd: '/repo' });
  const ask = step.llm({ id: 'ask', model: 'm' });
  const ctx = first.createContext({ threadId: 'T', resourceId: 'R', items: [user('u0', 'hello')] });
  // One execution with two model calls, saved from inside it (its layer states end with it).
  const work = step.run({ id: 'work', execute: async (_input, c) => {
    await c.harness.run(ask, 'one', c);
    await c.harness.run(ask, 'two', c);
    await c.checkpoint();
    return 'saved';
  } });
  await first.run(work, '', ctx);
  assert.equal(inits.count, 1);
  assert.equal(first.getLayerState(ctx.id, 'notes'), undefined, 'the execution ended, and its states with it');

  const model = recordingModel();
  const second = new AgentHarness({ name: 'h', params: {}, storage, checkpointStore, memory: layers(inits), _testCallModel: model.model });
  const restored = await second.restore(ctx.id);
  assert.equal(restored.id, ctx.id);
  assert.equal(restored.threadId, 'T');
  assert.equal(restored.resourceId, 'R');
  assert.equal(restored.cwdState.cwd, '/repo');
  assert.deepEqual(restored.itemLog.items, ctx.itemLog.items);
  assert.deepEqual(second.getLayerState(ctx.id, 'notes'), { seen: [1, 1] });
  assert.equal(second.getLayerState(ctx.id, 'durable-task-state').checkpoints.length, 2);
  assert.equal(restored.stepCount, ctx.stepCount);
  assert.deepEqual({ ...restored.tokens }, { ...ctx.tokens });

  // The restored execution goes on: its layers do not init again, and see the states it saved.
  const during = {};
  const goOn = step.run({ id: 'go-on', execute: async (_input, c) => {
    const out = await c.harness.run(ask, 'three', c);
    during.notes = second.getLayerState(c.id, 'notes');
    during.checkpoints = second.getLayerState(c.id, 'durable-task-state').checkpoints.length;
    return out;
  } });
  await second.run(goOn, '', restored);
  assert.equal(inits.count, 1, 'the restored layers do not init again');
  assert.deepEqual(during.notes, { seen: [1, 1, 1] });
  assert.equal(during.checkpoints, 3);
  assert.equal(restored.stepCount, ctx.stepCount + 2);
  // The model was shown the whole restored history.
  const texts = model.requests[0].items.filter((i) => i.type === 'message').map((i) => i.content[0].text);
  assert.ok(['hello', 'one', 'two', 'three'].every((t) => texts.includes(t)), JSON.stringify(texts));
});

test('the frontier names the steps in flight; ctx.checkpoint() from a step saves it', async () => {
  const storage = createInMemoryStorage();
  const checkpointStore = createCheckpointStore({ storage });
  const h = new AgentHarness({ name: 'h', params: {}, storage, checkpointStore });
  const inner = step.run({ id: 'inner', execute: async (input, ctx) => (await ctx.checkpoint(), input) });
  const outer = step.run({ id: 'outer', execute: async (input, ctx) => ctx.harness.run(inner, { n: input }, ctx) });
  const ctx = h.createContext();
  await h.run(outer, 7, ctx);
  const saved = await checkpointStore.load(ctx.id);
  assert.deepEqual(saved.frontier, [
    { stepId: 'outer', input: 7 },
    { stepId: 'inner', input: { n: 7 } },
  ]);
  assert.equal(CheckpointSnapshotSchema.safeParse(saved).success, true);
  // After the run, nothing is in flight.
  await h.checkpoint(ctx);
  assert.deepEqual((await checkpointStore.load(ctx.id)).frontier, []);
});

test('a snapshot whose log holds a non-item, or an execution still live here, is refused clearly', async () => {
  const storage = createInMemoryStorage();
  const checkpointStore = createCheckpointStore({ storage });
  const h = new AgentHarness({ name: 'h', params: {}, storage, checkpointStore });
  await checkpointStore.save(snapshot('bad-items', { itemLog: { items: [user('u', 'fine'), { type: 'nonsense' }] } }));
  await assert.rejects(h.restore('bad-items'), isCode('CHECKPOINT_SCHEMA_MISMATCH', 'items[1]'));
  // Nothing of the refused restore stays: a good snapshot under that id restores afterwards.
  await checkpointStore.save(snapshot('bad-items', { itemLog: { items: [user('u', 'fine')] } }));
  const ctx = await h.restore('bad-items');
  assert.equal(ctx.itemLog.items.length, 1);
  await assert.rejects(h.restore('bad-items'), isCode('CHECKPOINT_EXECUTION_LIVE', 'bad-items'));
  await assert.rejects(h.checkpoint({ id: 'x' }), isCode('INVALID_CONTEXT'));
});

test('a checkpoint whose save fails warns and does not fail the step', async () => {
  const failing = { save: async () => Promise.reject(new Error('disk full')), load: async () => null, list: async () => [], clear: async () => {} };
  const h = new AgentHarness({ name: 'h', params: {}, checkpointStore: failing });
  const warnings = [];
  const warn = console.warn;
  console.warn = (...args) => warnings.push(args);
  try {
    const out = await h.run(step.run({ id: 's', execute: async (input, ctx) => (await ctx.checkpoint(), `${input}!`) }), 'go');
    assert.equal(out, 'go!');
  } finally {
    console.warn = warn;
  }
  assert.equal(warnings.length, 1);
  assert.match(String(warnings[0][0]), /failed to persist snapshot/);
  assert.equal(warnings[0][1].message, 'disk full');
});

test('a run checkpointed in one process and SIGKILLed between steps is restored and finished by another (SQLite)', { timeout: slow(60_000) }, async () => {
  const path = scratchDb('checkpoints.db');
  const started = await runFixture('checkpoint-run.mjs', ['start', path], { killWhen: (line) => line.checkpointed === 3 });
  assert.equal(started.signal, 'SIGKILL', started.err);
  assert.deepEqual(started.lines.map((l) => l.checkpointed), [1, 2, 3]);
  const { id } = started.lines[0];

  const resumed = await runFixture('checkpoint-run.mjs', ['resume', path, id]);
  assert.equal(resumed.code, 0, resumed.err);
  const [{ frontier, restored }, { finished }] = resumed.lines;
  // The snapshot was taken inside step 3, so it names it as the step in flight.
  assert.deepEqual(frontier, [{ stepId: 'all', input: 1 }, { stepId: 'work', input: 3 }]);
  // Nothing written before the kill is lost: three steps' items, the JS layer's tally, the built-in layer's state,
  // the counters, the cwd.
  assert.deepEqual(restored, {
    id,
    threadId: 'T',
    cwd: '/work/project',
    done: ['done-1', 'done-2', 'done-3'],
    items: 9,
    tally: { done: [1, 2, 3] },
    tasks: 3,
    // Each work step and its model step, and the step that ran them all.
    stepCount: 7,
    tokens: { input: 30, output: 6 },
  });
  assert.deepEqual(finished, {
    ...restored,
    done: ['done-1', 'done-2', 'done-3', 'done-4', 'done-5'],
    items: 15,
    tally: { done: [1, 2, 3, 4, 5] },
    tasks: 5,
    // The resumed execution's own outer step, then two more work steps and their model steps.
    stepCount: 12,
    tokens: { input: 50, output: 10 },
  });
});
