'use strict';
// `createInMemorySubprocessAdapter`, upstream's default SubprocessAdapter: handle states are native
// (NativeSubprocessRegistry); JS keeps what is JS values or calls (metadata, handles, user functions, manifests).
const native = require('./native.cjs');
const { NativeSubprocessRegistry } = native;
const { NoeticConfigError, describeValue, messageOf, callNative } = require('./errors.cjs');
const { sketch } = require('./sketch.cjs');

// Upstream's key layout, so that a storage shared with upstream's adapter reads the same.
const MANIFEST_PREFIX = 'inMemorySubprocess:manifest:';
const manifestKey = (handleId) => `${MANIFEST_PREFIX}${handleId}`;

// Read by the harness out of users' sight: INLINE (no storage, so nothing another caller can observe), waiting, replaying.
const INLINE = Symbol('noetic.subprocess.inline');
const SETTLED = Symbol('noetic.subprocess.settled');
const REPLAYER = Symbol('noetic.subprocess.replayer');
const runsInline = (adapter) => adapter?.[INLINE] === true;
const TERMINAL = new Set(['completed', 'failed', 'stopped', 'stale']);

const isRecord = (value) => typeof value === 'object' && value !== null;

// A NoeticError keeps its structured payload so that it can be rebuilt with its kind.
function serializeError(err) {
  if (err instanceof Error) {
    const payload = { message: err.message, name: err.name, stack: err.stack };
    if ('noeticError' in err) payload.noeticError = err.noeticError;
    if (typeof err.code === 'string') payload.code = err.code;
    if (typeof err.hint === 'string') payload.hint = err.hint;
    return payload;
  }
  return { message: typeof err === 'string' ? err : String(err) };
}

// As `serializeError`, for a value whose getters throw too: a run's failure must always be recorded (B6).
function serializedOrDescribed(err) {
  try {
    return serializeError(err);
  } catch {
    return { message: messageOf(err) };
  }
}

const stepMetadata = (request) => ({
  ...(request.metadata ?? {}),
  runtime: 'in-memory',
  kind: 'step',
  stepId: request.stepId,
  executionId: request.executionId,
});

const processMetadata = (request) => ({
  ...(request.metadata ?? {}),
  runtime: 'in-memory',
  command: request.command,
  args: request.args ?? [],
  cwd: request.cwd,
});

const manifestMetadata = (manifest) => ({
  runtime: 'in-memory',
  kind: 'step',
  stepId: manifest.stepId,
  executionId: manifest.executionId,
  reattachMode: manifest.reattachMode,
});

// What a manifest must hold to be read back; anything else under the prefix is ignored.
function isStepManifest(value) {
  return (
    isRecord(value) &&
    value.kind === 'step' &&
    typeof value.handleId === 'string' &&
    typeof value.stepId === 'string' &&
    typeof value.executionId === 'string' &&
    typeof value.startedAt === 'string' &&
    isRecord(value.overrides)
  );
}

const handleOf = (state, metadata) => ({
  id: state.id,
  status: state.status,
  startedAt: state.startedAt,
  updatedAt: state.updatedAt,
  metadata,
});

// Checked natively (adapters/subprocess.rs); a storage adapter's methods are the ones looked up.
const STORAGE_METHODS = ['get', 'set', 'delete', 'list'];
const checkOptions = (options) => callNative(() => native.checkSubprocessOptions(sketch(options, STORAGE_METHODS, 2)));

function createInMemorySubprocessAdapter(options = {}) {
  checkOptions(options);
  const registry = new NativeSubprocessRegistry();
  // Each handle as `get` returns it, replaced (never mutated) at every transition, as upstream's are.
  const handles = new Map();
  const waiting = new Map();
  const storage = options.storage ?? undefined;
  let replayer;

  // Async, like upstream's, so that a run's steps take the same turns of the microtask queue.
  async function save(handle) {
    handles.set(handle.id, handle);
    if (TERMINAL.has(handle.status)) {
      for (const wake of waiting.get(handle.id) ?? []) wake(handle);
      waiting.delete(handle.id);
    }
    return handle;
  }

  function settled(handleId) {
    const handle = handles.get(handleId);
    if (!handle) return Promise.resolve(null);
    if (TERMINAL.has(handle.status)) return Promise.resolve(handle);
    return new Promise((resolve) => {
      if (!waiting.has(handleId)) waiting.set(handleId, []);
      waiting.get(handleId).push(resolve);
    });
  }

  function withInjected(request, intrinsic) {
    return options.metadataInjector ? { ...intrinsic, ...options.metadataInjector(request) } : intrinsic;
  }

  // A manifest that cannot be written must not fail the spawn: the step still runs, only not durably.
  async function persist(request, handle) {
    if (!storage) return;
    const manifest = {
      kind: 'step',
      handleId: handle.id,
      stepId: request.stepId,
      executionId: request.executionId,
      serializedInput: request.serializedInput,
      overrides: request.overrides,
      startedAt: handle.startedAt,
      // A reattached in-memory handle can only be run again from its input; there is no process to rebind to.
      reattachMode: 'replay',
    };
    try {
      await storage.set(manifestKey(handle.id), manifest);
    } catch (err) {
      console.warn(`createInMemorySubprocessAdapter: failed to persist manifest for "${handle.id}":`, err);
    }
  }

  // Once a handle has ended its manifest goes, or every later adapter would list it as live.
  async function forget(handleId) {
    if (!storage) return;
    try {
      await storage.delete(manifestKey(handleId));
    } catch (err) {
      console.warn(`createInMemorySubprocessAdapter: failed to clear manifest for "${handleId}":`, err);
    }
  }

  async function loadManifest(handleId) {
    const raw = await storage.get(manifestKey(handleId));
    return isStepManifest(raw) ? raw : null;
  }

  async function listManifests() {
    const manifests = [];
    for (const key of await storage.list(MANIFEST_PREFIX)) {
      const raw = await storage.get(key);
      if (isStepManifest(raw)) manifests.push(raw);
    }
    return manifests;
  }

  // `outcome` is `{ result }` for a step; a process has none, and its metadata object is then kept as it is.
  async function succeed(handle, outcome) {
    const state = registry.settle(handle.id, true);
    if (state == null) return;
    const { metadata } = handles.get(handle.id);
    await save(handleOf(state, outcome === undefined ? metadata : { ...(metadata ?? {}), ...outcome }));
    await forget(handle.id);
  }

  // A replay whose step is not registered here keeps its manifest, so another process or a later reattach can run it.
  async function fail(handle, err, { keepManifest = false } = {}) {
    const state = registry.settle(handle.id, false);
    if (state == null) return;
    const { metadata } = handles.get(handle.id) ?? handle;
    await save(handleOf(state, { ...(metadata ?? {}), error: serializedOrDescribed(err) }));
    if (!keepManifest) await forget(handle.id);
  }

  async function runStep(request, handle) {
    const runner = options.stepRunner ?? replayer;
    try {
      let result;
      if (request._localExecutor) result = await request._localExecutor();
      else if (runner) result = await runner(request, handle);
      else {
        throw new Error(
          `In-memory subprocess adapter has no executor for step "${request.stepId}". ` +
            'Provide a stepRunner option or dispatch via AgentHarness.',
        );
      }
      await succeed(handle, { result });
    } catch (err) {
      await fail(handle, err, { keepManifest: err?.code === 'STEP_NOT_REGISTERED' });
    }
  }

  async function runProcess(request, handle) {
    try {
      await options.run?.(request, handle);
      await succeed(handle);
    } catch (err) {
      await fail(handle, err);
    }
  }

  // A process request launches nothing: it only runs the `run` option (upstream's test double).
  async function spawnAs(request, intrinsic, run) {
    const metadata = withInjected(request, intrinsic);
    const handle = handleOf(registry.spawn(), metadata);
    await save(handle);
    if (run === runStep) await persist(request, handle);
    void run(request, handle);
    return handle;
  }

  const notFound = (handleId) => ({ kind: 'not_found', handleId });

  function unsupported(handleId, what) {
    const handle = handles.get(handleId);
    if (!handle) return notFound(handleId);
    return { kind: 'unsupported', handle, message: `In-memory subprocess adapter does not support ${what}.` };
  }

  const adapter = {
    async spawn(request) {
      if (!isRecord(request)) {
        throw new NoeticConfigError({
          code: 'INVALID_SUBPROCESS_REQUEST',
          message: `subprocess.spawn(request): the request is ${describeValue(request)}; expected an object.`,
          hint: "Pass { kind: 'step', stepId, serializedInput, executionId, overrides } or { command, args?, cwd? }.",
        });
      }
      // Anything but a step request is a process request, as upstream reads `kind`.
      return request.kind === 'step' ? spawnAs(request, stepMetadata(request), runStep) : spawnAs(request, processMetadata(request), runProcess);
    },
    async get(handleId) {
      return handles.get(handleId) ?? null;
    },
    async stop(handleId, reason) {
      const handle = handles.get(handleId);
      if (!handle) return notFound(handleId);
      const state = registry.stop(handleId);
      await forget(handleId);
      const next = await save(handleOf(state, { ...(handle.metadata ?? {}), stopReason: reason }));
      return { kind: 'stopped', handleId, handle: next };
    },
    async pause(handleId) {
      return unsupported(handleId, 'pause');
    },
    async resume(handleId) {
      return unsupported(handleId, 'resume');
    },
    async isAlive(handle) {
      return typeof handle?.id === 'string' && registry.isAlive(handle.id);
    },
    // Replayed from the manifest's input when someone can run it (`stepRunner`, else the harness); else the caller's.
    async reattach(handleId) {
      if (!storage) return null;
      const manifest = await loadManifest(handleId);
      if (!manifest) return null;
      const handle = handleOf(registry.reattach(manifest.handleId, manifest.startedAt), manifestMetadata(manifest));
      await save(handle);
      if (options.stepRunner || replayer) {
        const { stepId, serializedInput, executionId, overrides } = manifest;
        void runStep({ kind: 'step', stepId, serializedInput, executionId, overrides }, handle);
      }
      return handle;
    },
    // This adapter's live handles, then those of earlier adapters whose manifests are still in the storage.
    async listLive() {
      const live = new Map();
      for (const id of registry.liveIds()) {
        const handle = handles.get(id);
        if (handle) live.set(id, handle);
      }
      if (storage) {
        for (const manifest of await listManifests()) {
          if (live.has(manifest.handleId)) continue;
          const state = NativeSubprocessRegistry.fromManifest(manifest.handleId, manifest.startedAt);
          live.set(manifest.handleId, handleOf(state, manifestMetadata(manifest)));
        }
      }
      return [...live.values()];
    },
  };
  Object.defineProperties(adapter, {
    [INLINE]: { value: !storage },
    [SETTLED]: { value: settled },
    // The first harness given this adapter replays its reattached steps, unless a `stepRunner` does.
    [REPLAYER]: {
      get: () => replayer,
      set: (run) => {
        replayer ??= run;
      },
    },
  });
  return adapter;
}

module.exports = { createInMemorySubprocessAdapter, serializeError, runsInline, SETTLED, REPLAYER, TERMINAL };
