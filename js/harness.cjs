'use strict';
// `AgentHarness`: configuration in, runs out. Everything a run decides happens in the native harness.
const { Runtime, native } = require('./runtime.cjs');
const { fromNative, callNative } = require('./errors.cjs');
const { describeLayer, layersOf } = require('./memory.cjs');
const { describeStep, describeTool, lookupStep } = require('./steps.cjs');
const { ContextImpl, isHoldable, ownContext } = require('./context.cjs');
const { createInMemoryStorage, openSqliteStore, openPostgresStore, nativeStoreOf } = require('./storage.cjs');
const { SessionMethods } = require('./session.cjs');
const { createInMemorySubprocessAdapter, adapterRef, REPLAYER } = require('./subprocess.cjs');
const detached = require('./detached.cjs');
const { contextOptionsOf, runOptionsOf } = require('./options.cjs');
const { sketchOptions, checkArgs } = require('./sketch.cjs');
const { createInMemoryFsAdapter, createInMemoryShellAdapter, nativeFsOf } = require('./adapters.cjs');
const { ItemSchemaRegistry, gateOf, admit } = require('./item-schemas.cjs');
const { SpanImpl, NoopExporter, isTracing } = require('./observability.cjs');
const { layerCalls } = require('./layer-calls.cjs');
const checkpoints = require('./checkpoint.cjs');


// The embedded durable store (DECISIONS, Storage): one SQLite file, safe for several processes.
function createSqliteStorage(path) {
  checkArgs('createSqliteStorage', [path]);
  return callNative(() => openSqliteStore(path));
}

// The store shared by many processes on many machines (DECISIONS M19): one PostgreSQL table. Connects on first use;
// closes connections left idle, and all of them on `close()`.
function createPostgresStorage(url, options) {
  checkArgs('createPostgresStorage', [url, options], 1);
  return callNative(() => openPostgresStore(url, options === undefined ? undefined : JSON.stringify(options)));
}

// The option names the native checks read, and the method names they ask adapters about.
const OPTION_NAMES = native.harnessOptionNames();

// The harness's settings from its options, checked natively; the OpenRouter variables as this process has them.
function settingsOf(opts) {
  const env = globalThis.process?.env ?? {};
  const given = sketchOptions(opts, OPTION_NAMES.keys, OPTION_NAMES.methods);
  return callNative(() => native.harnessSettings(given, env.OPENROUTER_API_KEY, env.OPENROUTER_BASE_URL));
}

// The function the native side calls into, with the runtime it holds weakly (`undefined` once collected) and a
// batch of requests. It captures nothing: the native side holds it for as long as the harness lives.
function dispatchTo(runtime, batch) {
  runtime?.pump(batch);
}

class AgentHarness {
  constructor(opts) {
    const settings = settingsOf(opts);
    const params = opts.paramsSchema ? opts.paramsSchema.parse(opts.params) : opts.params;
    const storage = opts.storage ?? createInMemoryStorage();
    this.config = {
      name: opts.name,
      storage,
      hooks: opts.hooks,
      params,
      itemSchemas: opts.itemSchemas,
      strictItemSchemas: settings.strictItemSchemas,
      projection: opts.projection,
      forceAtomicRecall: opts.forceAtomicRecall,
    };
    this.traceExporter = opts.traceExporter ?? new NoopExporter();
    // An own accessor, so that a later assignment reaches the native side, where built-in layers read the fs.
    let fs = opts.fs ?? createInMemoryFsAdapter();
    Object.defineProperty(this, 'fs', {
      enumerable: true,
      configurable: true,
      get: () => fs,
      set: (value) => {
        fs = value;
        callNative(() => this._runtime.native.useFs(nativeFsOf(value) ?? null));
      },
    });
    this.shell = opts.shell ?? createInMemoryShellAdapter();
    // Items entering from JS are put to it (with their context's layers' schemas) where the native check alone
    // could decide otherwise; see item-schemas.cjs.
    this.itemSchemas = new ItemSchemaRegistry(opts.itemSchemas, { strictUnknownExtensions: this.config.strictItemSchemas });
    // Shared by every root context, so a `cd` in one run is seen by the next (as upstream).
    this.rootCwdState = { cwd: opts.initialCwd ?? '/' };
    const runtime = new Runtime({ storage, testModel: opts._testCallModel, onDiagnostic: opts.onDiagnostic, layerStateStore: opts.layerStateStore });
    runtime.harness = this;
    // Layers are validated where the native harness registers them (D1).
    const memory = layersOf(opts.memory, 'AgentHarness');
    const subprocess = opts.subprocess ?? createInMemorySubprocessAdapter();
    const config = {
      ...settings,
      name: opts.name,
      layers: memory.map((layer) => describeLayer(layer, (v) => runtime.keep(v))),
      projection: opts.projection,
      jsStorage: nativeStoreOf(storage) === undefined,
      // A scripted provider's turns (`llm: { provider: 'scripted', script }`), as JSON.
      script: opts.llm?.script,
      initialStep: opts.initialStep == null ? undefined : describeStep(opts.initialStep, (v) => runtime.keep(v), describeLayer),
      tools: (opts.tools ?? []).map((t) => describeTool(t, (v) => runtime.keep(v))),
      tracing: isTracing(this.traceExporter),
      // What a `step.run` without an adapter of its own is handed to (the runtime's choice, R15).
      subprocess: adapterRef(subprocess, (v) => runtime.keep(v)),
    };
    runtime.tracing = config.tracing;
    Object.defineProperty(this, '_initialStep', { value: opts.initialStep ?? undefined });
    Object.defineProperty(this, '_layers', { value: memory });
    runtime.native = callNative(
      () => new native.NativeHarness(JSON.stringify(config), runtime, dispatchTo, nativeStoreOf(storage) ?? null, nativeFsOf(fs) ?? null, runtime.channels._native),
    );
    Object.defineProperty(this, '_runtime', { value: runtime });
    // `ctx.tokenize` counts as the harness does: natively with a real tokenizer, upstream's estimate otherwise.
    if (config.tokenizer !== undefined) runtime.tokenize = (text) => runtime.native.countTokens(String(text));
    this.subprocess = subprocess;
    // An adapter of ours with storage can reattach a step another process started; this harness runs it again.
    if (REPLAYER in this.subprocess) this.subprocess[REPLAYER] = (request) => this._replay(request);
    this.checkpointStore = opts.checkpointStore ?? undefined;
  }

  // Saves a snapshot of `ctx` in `checkpointStore` (nothing without one); see checkpoint.cjs.
  checkpoint(ctx) {
    return checkpoints.checkpoint(this, ctx);
  }

  // The context saved under `executionId`, rebuilt in this harness; null without a store or a snapshot.
  restore(executionId) {
    return checkpoints.restore(this, executionId);
  }

  // A layer's state in an execution, as its hooks see it (a built-in layer's included), while the execution is
  // known here; undefined otherwise.
  getLayerState(executionId, layerId) {
    const runtime = this._runtime;
    const ctx = runtime.liveContext(executionId);
    if (ctx && runtime.layerOf(ctx, layerId)) return runtime.layerStateOf(ctx, layerId);
    return runtime.layerStates.get(executionId, layerId);
  }

  // Sets a JS layer's state in an execution, as a hook's write would (mirrored durably for non-execution scopes).
  setLayerState(executionId, layerId, state) {
    const runtime = this._runtime;
    const ctx = runtime.liveContext(executionId);
    if (ctx && runtime.layerOf(ctx, layerId)) return void runtime.setLayerStateOf(ctx, layerId, state);
    runtime.statesOf(executionId).set(layerId, state);
  }

  createSpan(name, parent) {
    return new SpanImpl(name, parent ?? null);
  }

  // Runs `step` beside the caller, through a subprocess adapter (the call's, the step's, else the harness's), in a
  // child of `parentCtx`; the handle follows it (upstream's detachedSpawn).
  detachedSpawn(step, input, parentCtx, overrides) {
    ownContext(this._runtime, parentCtx, 'detachedSpawn');
    checkArgs('detachedSpawn', [step, overrides], 2);
    const threadId = overrides?.threadId ?? parentCtx.threadId;
    const resourceId = overrides?.resourceId ?? parentCtx.resourceId;
    const cwdInit = overrides?.cwdInit;
    const child = this.createContext({ parent: parentCtx, threadId, resourceId, cwdInit });
    const chosen = native.detachedAdapter(overrides?.subprocess != null, step.kind, step.subprocess != null);
    return detached.dispatch({
      adapter: { call: overrides?.subprocess, step: step.subprocess, harness: this.subprocess }[chosen],
      stepId: step.id,
      input,
      executionId: child.id,
      overrides: { threadId, resourceId, cwdInit },
      run: () => this.run(step, input, child, true),
      onStop: (reason) => child.abort(reason),
    });
  }

  // A reattached step of an earlier process, run again from its input in a new context with its thread.
  _replay(request) {
    const step = lookupStep(request.stepId);
    if (step == null) checkArgs('unregisteredStep', [request.stepId, request.executionId], 1);
    const { threadId, resourceId, cwdInit } = request.overrides ?? {};
    const ctx = this._createContext(contextOptionsOf({ threadId, resourceId, cwdInit }));
    return this.run(step, request.serializedInput, ctx, true);
  }

  // Stops a context: its run in flight ends as cancelled, and what it parked (a channel receive) with it.
  // Upstream's does nothing.
  async cancel(ctx, reason) {
    ownContext(this._runtime, ctx, 'cancel').abort(reason ?? 'cancelled');
  }

  // The working directory of the next root context (and of the current ones, which share this state).
  setRootCwd(nextCwd) {
    if (nextCwd === this.rootCwdState.cwd) return;
    this.rootCwdState.previousCwd = this.rootCwdState.cwd;
    this.rootCwdState.cwd = nextCwd;
  }

  // A context that serves several runs, keeping its log between them (upstream's createContext); each run is an execution.
  createContext(given) {
    const opts = contextOptionsOf(given);
    const parent = opts.parent ?? undefined;
    if (parent === undefined) return this._createContext(opts);
    ownContext(this._runtime, parent, 'createContext');
    const ctx = this._createContext(opts, { parent: parent.id });
    ctx._parent = parent;
    // As upstream's createContext: the state given, else `{}`. Only the interpreter's children (a spawn's, a fork's
    // paths) start from a copy of their parent's.
    if (opts.state === undefined) ctx.state = {};
    return ctx;
  }

  // `lineage`: the id and parent upstream's ContextImpl may be given (only `/internal/test` passes them).
  _createContext(opts, lineage = {}) {
    const runtime = this._runtime;
    const layers = opts.memory == null ? undefined : layersOf(opts.memory, 'createContext');
    const items = opts.items ?? [];
    const checked = admit(gateOf(this.itemSchemas, layers ?? this._layers), items, (i) => `createContext items[${i}]`);
    const handles = runtime.scope();
    const keep = handles.keep;
    // Items of known types are held in JS until a run needs the log (as appends between runs are): making the
    // context converts nothing. Others go now, so that the native check names a bad one at once (an item with no
    // JSON form goes as null, which it names as not an item).
    const hold = items.every(isHoldable);
    const options = {
      threadId: opts.threadId,
      resourceId: opts.resourceId,
      memory: layers?.map((l) => describeLayer(l, keep)),
      checked,
      id: lineage.id,
      parent: lineage.parent,
      held: hold ? items.length : 0,
    };
    let id;
    try {
      id = callNative(() => runtime.native.createContext(JSON.stringify(options), hold ? '[]' : JSON.stringify(items)));
    } catch (e) {
      handles.release();
      throw e;
    }
    const ctx = runtime.context(id);
    if (hold) ctx.itemLog._hold(items);
    else ctx.itemLog._adopt(items);
    if (opts.state !== undefined) ctx.state = opts.state;
    if (opts.cwdInit !== undefined) ctx.cwdState = { cwd: opts.cwdInit };
    runtime.keepContext(ctx, handles);
    return ctx;
  }

  // Runs `step` with `input`. Given a context from createContext, the step runs in it (its layers initialise on
  // the first run). Otherwise the run is one execution: layers initialise, the step runs, then onComplete and
  // dispose; `options` may name its threadId, resourceId and memory. `inPlace` is ours, never a user's: the step is
  // one an adapter was handed, run here rather than handed over again (upstream's executeNoAdapter).
  async run(step, input, contextOrOptions, inPlace = false) {
    const runtime = this._runtime;
    const handles = runtime.scope();
    try {
      return await this._run(step, input, contextOrOptions, handles.keep, inPlace === true);
    } finally {
      handles.release();
    }
  }

  _run(step, input, contextOrOptions, keep, inPlace) {
    const runtime = this._runtime;
    const description = { ...describeStep(step, keep, describeLayer), inPlace };
    const inputRef = JSON.stringify(runtime.toRef(input));
    if (contextOrOptions instanceof ContextImpl && contextOrOptions._rt === runtime) {
      const ctx = contextOrOptions;
      runtime.enterContext(ctx);
      const settled = this._settle((run) => runtime.native.runInContext(run, ctx.id, JSON.stringify(description), inputRef));
      return settled.finally(() => runtime.leaveContext(ctx));
    }
    const options = runOptionsOf(contextOrOptions, contextOrOptions instanceof ContextImpl);
    const runOptions = {
      threadId: options.threadId,
      resourceId: options.resourceId,
      memory: options.memory == null ? undefined : layersOf(options.memory, 'harness.run').map((l) => describeLayer(l, keep)),
    };
    return this._settle((run) => runtime.native.run(run, JSON.stringify(description), inputRef, JSON.stringify(runOptions)));
  }

  // Drops an idle session from memory (not in upstream): with persistSessions its next turn reads its history back;
  // without, it starts afresh. False while a turn is running or queued, or a stream of it is open.
  evictSession(threadId) {
    checkArgs('evictSession', [threadId], 1);
    return callNative(() => this._runtime.native.evictSession(threadId));
  }

  // A per-message `memory` option, registered for as long as the harness lives.
  _describeMemory(layers) {
    const runtime = this._runtime;
    return layers.map((layer) => describeLayer(layer, (v) => runtime.keep(v)));
  }

  // Puts items entering a context whose layers are `layers` (the harness's own when undefined) to the item schemas,
  // when they could decide otherwise than the native check; true when it did (see item-schemas.cjs).
  _admitItems(items, layers, where) {
    return admit(gateOf(this.itemSchemas, layers ?? this._layers), items, where);
  }

  // The harness's channels, as a step's ctx reaches them (`ctx` only lends its abort signal).
  send(channel, value, ctx) {
    return this._runtime.channels.send(channel, value, { signal: ctx instanceof ContextImpl ? ctx._signal : undefined });
  }

  recv(channel, ctx, opts) {
    return this._runtime.channels.recv(channel, opts?.timeout, ctx instanceof ContextImpl ? ctx._signal : undefined);
  }

  tryRecv(channel, _ctx) {
    return this._runtime.channels.tryRecv(channel);
  }

  getChannelHandle(channel, executionId) {
    return this._runtime.channels.getHandle(channel, executionId);
  }

  // A model call beside any step (upstream's harness.callModel): with `tools` and `ctx`, the tools run round after
  // round as a step's do.
  callModel(request) {
    return this._runtime.callModel(request);
  }

  async _settle(start) {
    const runtime = this._runtime;
    runtime.beginRun();
    try {
      const result = await runtime.startRun(start);
      if (!result.ok) throw fromNative(result.error, (h) => runtime.handles.get(h));
      return runtime.fromRef(result.value);
    } finally {
      runtime.endRun();
    }
  }

  // Executions whose layer state is still held; flat across runs because every run disposes its own (D15).
  get liveExecutions() {
    return this._runtime.native.liveExecutions;
  }
}

// The layer lifecycle over layers the caller names (layer-calls.cjs: initLayers … executeRerender) and the session
// methods (session.cjs: execute … seedSessionHistory), put on the prototype as a class's own are: not enumerable.
for (const methods of [layerCalls, SessionMethods.prototype]) {
  for (const name of Object.getOwnPropertyNames(methods)) {
    if (name !== 'constructor') Object.defineProperty(AgentHarness.prototype, name, { value: methods[name], writable: true, configurable: true });
  }
}

// Runs `step` in a context a run is already in (from a step or a tool): the same interpreter, the same context,
// its layers as they are (upstream's `execute` export).
function execute(step, input, ctx) {
  if (!(ctx instanceof ContextImpl)) checkArgs('foreignContext', ['execute', ctx], 1);
  return ctx._rt.harness.run(step, input, ctx);
}

module.exports = { AgentHarness, createInMemoryStorage, createSqliteStorage, createPostgresStorage, execute };
