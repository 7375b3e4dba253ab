// createInMemorySubprocessAdapter, serializeError and harness.subprocess, typed as upstream's.

import {
  AgentHarness,
  createInMemoryStorage,
  createInMemorySubprocessAdapter,
  serializeError,
  type CreateInMemorySubprocessAdapterOptions,
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
