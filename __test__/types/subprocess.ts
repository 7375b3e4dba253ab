// createInMemorySubprocessAdapter, serializeError and harness.subprocess, typed as upstream's.

import {
  AgentHarness,
  DetachedStatus,
  step,
  createInMemoryStorage,
  createInMemorySubprocessAdapter,
  serializeError,
  type Context,
  type CreateInMemorySubprocessAdapterOptions,
  type DetachedHandle,
  type DetachedSpawnHandle,
  type SubprocessHandleMetadata,
  type SerializedError,
  type StepSubprocessRequest,
  type SubprocessAdapter,
  type SubprocessControlResult,
  type SubprocessHandle,
  type SubprocessStatus,
  type SubprocessStopResult,
} from '@noetic-tools/core';

const options: CreateInMemorySubprocessAdapterOptions = {
  storage: createInMemoryStorage(),
  run: async (_request, handle) => {
    const status: SubprocessStatus = handle.status;
    void status;
  },
  stepRunner: async (request: StepSubprocessRequest) => request.serializedInput,
  metadataInjector: (request) => (request.kind === 'step' ? { stepInjected: true } : { pid: 4242 }),
};
const adapter: SubprocessAdapter = createInMemorySubprocessAdapter(options);
const plain: SubprocessAdapter = createInMemorySubprocessAdapter();

async function use(): Promise<void> {
  const handle: SubprocessHandle = await adapter.spawn({ command: 'planner', cwd: '/repo', metadata: { role: 'planner' } });
  await adapter.spawn({
    kind: 'step',
    stepId: 'greet',
    serializedInput: 'hi',
    executionId: 'exec-1',
    overrides: {},
  });
  const current: SubprocessHandle | null = await adapter.get(handle.id);
  const stopped: SubprocessStopResult = await adapter.stop(handle.id, 'done');
  const paused: SubprocessControlResult = await adapter.pause(handle.id);
  const alive: boolean = await adapter.isAlive(handle);
  const again: SubprocessHandle | null = await adapter.reattach(handle.id);
  const live: ReadonlyArray<SubprocessHandle> = await adapter.listLive();
  const error: SerializedError | undefined = current?.metadata?.error;
  const result: unknown = current?.metadata?.result;
  void [stopped, paused, alive, again, live, error, result];
}
void use;

const serialized: SerializedError = serializeError(new Error('boom'));
const harness = new AgentHarness({ name: 't', params: {}, subprocess: plain });
const fromHarness: SubprocessAdapter = harness.subprocess;
void [serialized, fromHarness];

// Detached runs: the handle's output type follows the step's, and the overrides take an adapter.
async function detached(ctx: Context): Promise<number> {
  const doubler = step.run({ id: 'double', execute: async (n: number) => n * 2 });
  const handle: DetachedSpawnHandle<number> = harness.detachedSpawn(doubler, 2, ctx, { threadId: 't', subprocess: plain });
  const status: DetachedStatus = handle.status;
  const running: boolean = status === DetachedStatus.Running;
  const last: number | undefined = handle.result;
  const metadata: SubprocessHandleMetadata | undefined = handle.metadata;
  const stopped: SubprocessStopResult = await handle.stop('enough');
  void [running, last, metadata, stopped, handle.done, handle.error];
  // Through ctx.harness (upstream's contract) the handle is a DetachedHandle, whose extras may be missing.
  const viaCtx: DetachedHandle<number> = ctx.harness.detachedSpawn(doubler, 3, ctx);
  const stoppedViaCtx: SubprocessStopResult | undefined = await viaCtx.stop?.('enough');
  void stoppedViaCtx;
  await harness.cancel(ctx, 'why');
  const child: Context = harness.createContext({ parent: ctx });
  void child;
  return handle.await(1_000);
}
void detached;
