// Checkpoints typed as upstream's: the store, the snapshot schemas and their inferred shapes, the harness's
// checkpoint / restore and ctx.checkpoint.

import {
  AgentHarness,
  CheckpointKeys,
  CheckpointSchemaVersion,
  CheckpointSnapshotSchema,
  CwdSnapshotSchema,
  FrontierFrameSchema,
  ItemLogSnapshotSchema,
  PendingAskUserSnapshotSchema,
  createCheckpointStore,
  createSqliteStorage,
  step,
  type CheckpointSnapshot,
  type CheckpointStore,
  type Context,
  type CreateCheckpointStoreOptions,
  type CwdSnapshot,
  type FrontierFrame,
} from '@noetic-tools/core';

const options: CreateCheckpointStoreOptions = { storage: createSqliteStorage(':memory:') };
const store: CheckpointStore = createCheckpointStore(options);
const harness = new AgentHarness({ name: 'h', params: {}, checkpointStore: store });
const maybeStore: CheckpointStore | undefined = harness.checkpointStore;

async function roundTrip(ctx: Context): Promise<string | undefined> {
  await harness.checkpoint(ctx);
  await ctx.checkpoint();
  const restored: Context | null = await harness.restore(ctx.id);
  const loaded: CheckpointSnapshot | null = await store.load(ctx.id);
  const ids: ReadonlyArray<{ executionId: string }> = await store.list();
  await store.clear(ids[0]?.executionId ?? '');
  return restored?.threadId ?? loaded?.capturedAt;
}

const parsed: CheckpointSnapshot = CheckpointSnapshotSchema.parse({});
const version: 1 = CheckpointSchemaVersion;
const frame: FrontierFrame = { stepId: 's', input: FrontierFrameSchema.parse({}).input };
const cwd: CwdSnapshot = CwdSnapshotSchema.parse({});
const prefix: 'execution:' = CheckpointKeys.ExecPrefix;
const items: unknown[] = ItemLogSnapshotSchema.parse({}).items;
const created: number = PendingAskUserSnapshotSchema.parse({}).createdAt;
const saved = store.save({ ...parsed, frontier: [frame], cwd, usage: { stepCount: 1, tokens: { input: 1, output: 1 }, cost: 0 } });

// @ts-expect-error the schema version is the literal 1
const wrong: CheckpointSnapshot = { ...parsed, schemaVersion: 2 };

const inStep = step.run({ id: 'save', execute: async (input: string, ctx) => (await ctx.checkpoint(), input) });

export { roundTrip, version, prefix, items, created, saved, wrong, inStep, maybeStore };

// Runner helpers.
import {
  DEFAULT_NUDGE_MESSAGE_TEXT,
  createDetachedSignal,
  createNudgeMessage,
  createStallNudgeHook,
  runnableLoop,
  type AfterFirstTurnContext,
  type DetachedSignal,
  type InputMessageItem,
  type RunnableLoopHarness,
  type RunnableLoopOpts,
  type StallNudgeOpts,
} from '@noetic-tools/core';

const signal: DetachedSignal<{ ok: boolean }> = createDetachedSignal<{ ok: boolean }>();
const loopHarness: RunnableLoopHarness = harness;
const nudge: InputMessageItem = createNudgeMessage({ id: 'n', text: DEFAULT_NUDGE_MESSAGE_TEXT });
const stall: StallNudgeOpts<{ ok: boolean }> = {
  harness: loopHarness,
  threadId: 't',
  signal,
  nudgeMessage: nudge,
  hasPendingExternal: () => false,
  onStall: async () => {},
  buildStalledOutcome: () => ({ ok: false }),
};
const hook: (ctx: AfterFirstTurnContext) => Promise<void> = createStallNudgeHook(stall);
const loopOpts: RunnableLoopOpts<{ ok: boolean }> = { harness, threadId: 't', signal, initialMessage: 'go', afterFirstTurn: hook };
const outcome: Promise<{ ok: boolean }> = runnableLoop(loopOpts);
// @ts-expect-error the outcome type is the signal's
signal.resolve('done');

export { outcome };

// Persisted sessions: the options and evictSession are typed; a wrong type is an error.
const persisted = new AgentHarness({ name: 'p', params: {}, persistSessions: true, sessionIdleMs: 60_000 });
const dropped: boolean = persisted.evictSession('thread-1');
void dropped;
// @ts-expect-error persistSessions is a boolean
new AgentHarness({ name: 'p', params: {}, persistSessions: 'yes' });
// @ts-expect-error evictSession takes a thread id
persisted.evictSession(42);
