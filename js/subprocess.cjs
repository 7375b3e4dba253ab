'use strict';
// `createInMemorySubprocessAdapter`, upstream's default SubprocessAdapter. The runtime decides what each call does
// (adapters/subprocess/): handle states, what runs a request, the layout of handles, metadata, manifests and errors,
// the storage keys. JS holds the JS values, calls the user's functions and storage, and builds what it is told to.
const native = require('./native.cjs');
const { NativeSubprocessRegistry } = native;
const { messageOf, callNative } = require('./errors.cjs');
const { sketchText } = require('./sketch.cjs');

// Read by the harness out of users' sight: INLINE (no storage, so nothing another caller can observe), waiting, replaying.
const INLINE = Symbol('noetic.subprocess.inline');
const SETTLED = Symbol('noetic.subprocess.settled');
const REPLAYER = Symbol('noetic.subprocess.replayer');
// An adapter as the runtime reads it (`StepAdapter`): its handle, and whether it runs steps in place.
const adapterRef = (adapter, keep) => (adapter == null ? undefined : { handle: keep(adapter), inline: adapter[INLINE] === true });

// An object as a runtime layout says (js_layout.rs), key by key in order, out of `source`'s values.
function shaped(layout, source) {
  let out = {};
  for (const { op, key, from, value } of layout) {
    if (op === 'spread') out = { ...out, ...source[from] };
    else if (op === 'value') out[key] = value;
    else if (op === 'text') out[key] = String(source);
    else if (op === 'copyOr') out[key] = source[from] ?? structuredClone(value);
    else if (op === 'copy' || (op === 'copyIfIn' ? from in source : typeof source[from] === 'string')) out[key] = source[from];
  }
  return out;
}

// The layouts that depend on nothing but their source (adapters/subprocess/shapes.rs, Layouts).
const LAYOUTS = native.subprocessLayouts();
const serializeError = (err) => shaped(err instanceof Error ? LAYOUTS.error : LAYOUTS.value, err);

// As `serializeError`, for a value whose getters throw too: a run's failure must always be recorded (B6).
function serializedOrDescribed(err) {
  try {
    return serializeError(err);
  } catch {
    return shaped(LAYOUTS.value, messageOf(err));
  }
}

// The methods of a storage the options check asks about, as the runtime lists them.
const STORAGE_METHODS = native.harnessOptionNames().storageMethods;

function createInMemorySubprocessAdapter(options = {}) {
  const registry = callNative(() => new NativeSubprocessRegistry(sketchText(options, STORAGE_METHODS, 2)));
  const storage = options.storage ?? undefined;
  // Each handle as `get` returns it, replaced (never mutated) at every transition, as upstream's are.
  const handles = new Map();
  const waiting = new Map();
  let replayer;
  // What could run a step, for the registry to choose from; and each choice, called.
  const runners = (executor) => ({ executor, stepRunner: options.stepRunner, replayer });
  const RUNS = {
    executor: (request) => request._localExecutor(),
    stepRunner: (request, handle) => options.stepRunner(request, handle),
    replayer: (request, handle) => replayer(request, handle),
    run: (request, handle) => options.run?.(request, handle),
    nothing: (request, handle, message) => Promise.reject(new Error(message)),
  };

  // A handle in the state an answer gives, `value` under the key it names. Async, like upstream's, so that a run's
  // steps take the same turns of the microtask queue.
  async function save({ handle, adds, ended }, metadata, value) {
    handle.metadata = adds == null ? metadata : { ...metadata, [adds]: value };
    handles.set(handle.id, handle);
    if (ended) {
      for (const wake of waiting.get(handle.id) ?? []) wake(handle);
      waiting.delete(handle.id);
    }
    return handle;
  }

  // A handle of this adapter once it has ended (SETTLED); null for one it does not know.
  function settled(handleId) {
    const handle = handles.get(handleId);
    if (!handle || registry.hasEnded(handleId)) return Promise.resolve(handle ?? null);
    return new Promise((resolve) => waiting.set(handleId, [...(waiting.get(handleId) ?? []), resolve]));
  }

  // A manifest that cannot be written or cleared must not fail the run: it is warned of, as the runtime words it.
  async function guarded(write, warning) {
    try {
      await write();
    } catch (err) {
      console.warn(warning, err);
    }
  }

  const forget = async (plan) => plan && guarded(() => storage.delete(plan.key), plan.warning);

  // Runs a request as the registry chose (`plan.runs`); its end settles the handle, the run's value (a step's result,
  // or the serialized error) under the key the registry names.
  async function run(request, handle, plan) {
    let [ok, value] = [true, undefined];
    try {
      value = await RUNS[plan.runs](request, handle, plan.fails);
    } catch (err) {
      [ok, value] = [false, serializedOrDescribed(err)];
    }
    const answer = JSON.parse(registry.settle(handle.id, ok, ok ? undefined : value.code));
    if (answer == null) return;
    await save(answer, handles.get(handle.id).metadata, value);
    await forget(answer.forget);
  }

  function unsupported(handleId, what) {
    const handle = handles.get(handleId);
    return handle ? { kind: 'unsupported', handle, message: registry.unsupported(what) } : { kind: 'not_found', handleId };
  }

  const adapter = {
    // A process request launches nothing: it only runs the `run` option (upstream's test double).
    async spawn(request) {
      const facts = { request, kind: request?.kind, stepId: request?.stepId, ...runners(request?._localExecutor) };
      const plan = JSON.parse(callNative(() => registry.spawn(sketchText(facts, [], 1))));
      let metadata;
      try {
        metadata = shaped(LAYOUTS[plan.kind], request);
        if (options.metadataInjector) metadata = { ...metadata, ...options.metadataInjector(request) };
      } catch (err) {
        registry.abandon(plan.handle.id);
        throw err;
      }
      const handle = await save(plan, metadata);
      if (plan.manifest) {
        const manifest = shaped(plan.manifest.layout, request);
        await guarded(() => storage.set(plan.manifest.key, manifest), plan.manifest.warning);
      }
      void run(request, handle, plan);
      return handle;
    },
    async get(handleId) {
      return handles.get(handleId) ?? null;
    },
    async stop(handleId, reason) {
      const handle = handles.get(handleId);
      if (!handle) return { kind: 'not_found', handleId };
      const answer = JSON.parse(registry.stop(handleId));
      await forget(answer.forget);
      return { kind: 'stopped', handleId, handle: await save(answer, handle.metadata, reason) };
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
      const key = registry.manifestKey(sketchText(handleId, [], 0));
      if (key == null) return null;
      const manifest = await storage.get(key);
      const plan = JSON.parse(registry.reattach(sketchText({ manifest, ...runners() }, [], 2)));
      if (plan == null) return null;
      const handle = await save(plan, shaped(LAYOUTS.manifestMetadata, manifest));
      if (plan.runs) void run(shaped(LAYOUTS.replayRequest, manifest), handle, plan);
      return handle;
    },
    // This adapter's live handles, then those of earlier adapters whose manifests are still in the storage.
    async listLive() {
      const listing = JSON.parse(registry.listing());
      const live = listing.live.map((id) => handles.get(id)).filter(Boolean);
      if (listing.prefix === undefined) return live;
      const manifests = [];
      for (const key of await storage.list(listing.prefix)) manifests.push(await storage.get(key));
      const found = JSON.parse(registry.listed(sketchText(manifests, [], 2), listing.live));
      for (const { at, handle } of found) live.push({ ...handle, metadata: shaped(LAYOUTS.manifestMetadata, manifests[at]) });
      return live;
    },
  };
  Object.defineProperties(adapter, {
    [INLINE]: { value: registry.runsInline },
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

module.exports = { createInMemorySubprocessAdapter, serializeError, shaped, adapterRef, SETTLED, REPLAYER };
