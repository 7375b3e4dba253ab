'use strict';
// Checkpoints: snapshot schemas, the store (upstream's key layout), and `checkpoint(ctx)` / `restore(executionId)`.
const zod = require('zod');
const z = zod.z ?? zod;
const { NoeticConfigError, callNative, messageOf } = require('./errors.cjs');
const { checkArgs } = require('./sketch.cjs');
const native = require('./native.cjs');
const { parseJson } = require('./json.cjs');

const CheckpointSchemaVersion = 1;

const FrontierFrameSchema = z.object({
  stepId: z.string().describe('The id of a step that was running.'),
  input: z.unknown().describe('The input it was given.'),
  state: z.unknown().optional(),
});

const CwdSnapshotSchema = z.object({
  current: z.string().nullable(),
  previous: z.string().nullish(),
});

const PendingAskUserSnapshotSchema = z.object({
  id: z.string(),
  input: z.unknown(),
  createdAt: z.number(),
});

const ItemLogSnapshotSchema = z.object({
  items: z.array(z.unknown()),
});

// Not in upstream's snapshot: the counters a restored context goes on from (upstream's restarts them at zero).
const UsageSnapshotSchema = z.object({
  stepCount: z.number().int().nonnegative(),
  tokens: z.object({ input: z.number().nonnegative(), output: z.number().nonnegative(), cached: z.number().nonnegative().optional() }),
  cost: z.number().nonnegative(),
});

const CheckpointSnapshotSchema = z.object({
  schemaVersion: z.literal(CheckpointSchemaVersion),
  executionId: z.string(),
  threadId: z.string().optional(),
  resourceId: z.string().optional(),
  frontier: z.array(FrontierFrameSchema),
  layers: z.record(z.string(), z.unknown()),
  cwd: CwdSnapshotSchema.nullable(),
  askUser: z.array(PendingAskUserSnapshotSchema),
  itemLog: ItemLogSnapshotSchema,
  capturedAt: z.string().describe('When the snapshot was taken (ISO 8601).'),
  usage: UsageSnapshotSchema.optional(),
});

// Upstream's storage layout, so that a storage shared with upstream's runtime reads the same (harness/checkpoint/store.rs).
const CheckpointKeys = Object.freeze(parseJson(native.checkpointKeys()));
const snapshotKey = (executionId) => `${CheckpointKeys.ExecPrefix}${executionId}${CheckpointKeys.SnapshotSuffix}`;

// A checkpoint call refused (a snapshot that cannot be restored, say), in the runtime's words (harness/checkpoint/
// store.rs), with what refused it as its cause.
function refused(executionId, reason, cause) {
  const error = new NoeticConfigError(parseJson(native.checkpointRefusal(`${executionId}`, JSON.stringify(reason))));
  if (cause !== undefined) error.cause = cause;
  return error;
}

function createCheckpointStore(options) {
  checkArgs('createCheckpointStore', [options], 3);
  const { storage } = options;
  return {
    async save(snapshot) {
      checkArgs('checkpointSave', [snapshot?.executionId], 1);
      await storage.set(snapshotKey(snapshot.executionId), snapshot);
    },
    async load(executionId) {
      const raw = await storage.get(snapshotKey(executionId)).catch((e) => {
        throw e?.code === 'STORAGE_CORRUPT' ? refused(executionId, { notJson: messageOf(e) }, e) : e;
      });
      if (raw === null || raw === undefined) return null;
      const parsed = CheckpointSnapshotSchema.safeParse(raw);
      if (parsed.success) return parsed.data;
      const version = typeof raw === 'object' && 'schemaVersion' in raw ? String(raw.schemaVersion) : 'unknown';
      const [issue] = parsed.error.issues;
      throw refused(executionId, { schema: { version, path: issue.path, message: issue.message } }, parsed.error);
    },
    async list() {
      return parseJson(native.checkpointIds(JSON.stringify(await storage.list(CheckpointKeys.ExecPrefix))));
    },
    async clear(executionId) {
      await storage.delete(snapshotKey(executionId));
    },
  };
}

// The runtime writes the snapshot; JS puts in the values it holds, as upstream's snapshot holds them.
function snapshotOf(harness, ctx) {
  const runtime = harness._runtime;
  const { hostLayers, ...snapshot } = parseJson(callNative(() => runtime.native.checkpointSnapshot(ctx.id)));
  for (const frame of snapshot.frontier) frame.input = runtime.fromRef(frame.input);
  const states = runtime.statesOf(ctx.id);
  for (const id of hostLayers) {
    if (states.get(id) === undefined) delete snapshot.layers[id];
    else snapshot.layers[id] = states.get(id);
  }
  const { cwd, previousCwd } = ctx.cwdState;
  snapshot.cwd = { current: cwd ?? null, previous: previousCwd };
  snapshot.itemLog.items = [...ctx.itemLog.items];
  return snapshot;
}

// A failed save is a warning, as upstream's: a checkpoint must not fail the step that takes it.
async function checkpoint(harness, ctx) {
  const store = harness.checkpointStore;
  if (!store) return;
  if (ctx?._rt !== harness._runtime) throw refused('', { foreignContext: true });
  const snapshot = snapshotOf(harness, ctx);
  try {
    await store.save(snapshot);
  } catch (err) {
    console.warn(`AgentHarness.checkpoint: failed to persist snapshot for execution "${ctx.id}":`, err);
  }
}

// Its layers do not init again.
async function restore(harness, executionId) {
  const store = harness.checkpointStore;
  if (!store) return null;
  const snapshot = await store.load(executionId);
  if (!snapshot) return null;
  const runtime = harness._runtime;
  if (runtime.liveContext(executionId)) throw refused(executionId, { live: true });
  let ctx;
  try {
    ctx = harness._createContext(
      { items: snapshot.itemLog.items, threadId: snapshot.threadId, resourceId: snapshot.resourceId, cwdInit: snapshot.cwd?.current ?? undefined },
      { id: executionId },
    );
  } catch (err) {
    throw refused(executionId, { items: messageOf(err) }, err);
  }
  try {
    if (snapshot.cwd?.current != null && snapshot.cwd.previous != null) ctx.cwdState.previousCwd = snapshot.cwd.previous;
    const saved = JSON.stringify({ layers: Object.keys(snapshot.layers), usage: snapshot.usage });
    const stateOf = (id) => JSON.stringify(snapshot.layers[id]);
    const hostLayers = callNative(() => runtime.native.restoreCheckpoint(ctx.id, saved, stateOf));
    for (const id of hostLayers) runtime.statesOf(ctx.id).set(id, snapshot.layers[id]);
  } catch (err) {
    runtime.releaseContext(ctx);
    throw err;
  }
  return ctx;
}

module.exports = {
  CheckpointSchemaVersion,
  FrontierFrameSchema,
  CwdSnapshotSchema,
  PendingAskUserSnapshotSchema,
  ItemLogSnapshotSchema,
  CheckpointSnapshotSchema,
  CheckpointKeys,
  createCheckpointStore,
  checkpoint,
  restore,
};
