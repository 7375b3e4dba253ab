'use strict';
// `AgentHarness`: configuration in, runs out. Everything a run decides happens in the native harness.
const { Runtime, native } = require('./runtime.cjs');
const { fromNative, callNative, NoeticConfigError } = require('./errors.cjs');
const { describeLayer, layersOf } = require('./memory.cjs');
const { describeStep } = require('./steps.cjs');
const { ContextImpl } = require('./context.cjs');
const { checkHarnessOptions, contextOptionsOf, runOptionsOf, isNativeStorage, explainNativeStorageErrors } = require('./options.cjs');

explainNativeStorageErrors(native.NativeStorage);

function createInMemoryStorage() {
  return new native.NativeStorage();
}

// The embedded durable store (DECISIONS, Storage): one SQLite file, safe for several processes.
function createSqliteStorage(path) {
  if (typeof path !== 'string' || path.length === 0) {
    throw new NoeticConfigError({ code: 'STORAGE_OPEN_FAILED', message: 'createSqliteStorage(path) needs a file path.', hint: "Pass a path such as './agent.db', or ':memory:'." });
  }
  return callNative(() => native.NativeStorage.sqlite(path));
}

// As upstream's createClient: the OpenRouter key is `llm.apiKey`, else OPENROUTER_API_KEY, and without one there
// is no provider (an LLM step then fails with NO_LLM_PROVIDER). The key goes to the native client only.
function modelOf(opts) {
  if (typeof opts._testCallModel === 'function') return { kind: 'host' };
  const llm = opts.llm;
  if (llm?.provider === 'scripted') return { kind: 'scripted', script: llm.script ?? [] };
  const env = globalThis.process?.env ?? {};
  const apiKey = llm?.apiKey ?? env.OPENROUTER_API_KEY;
  if (!apiKey) return { kind: 'none' };
  return { kind: 'openrouter', apiKey, cache: Boolean(llm?.cache), baseUrl: llm?.baseUrl ?? env.OPENROUTER_BASE_URL };
}

class AgentHarness {
  constructor(opts) {
    checkHarnessOptions(opts);
    const params = opts.paramsSchema ? opts.paramsSchema.parse(opts.params) : opts.params;
    const storage = opts.storage ?? createInMemoryStorage();
    this.config = {
      name: opts.name,
      storage,
      hooks: opts.hooks,
      params,
      itemSchemas: opts.itemSchemas,
      strictItemSchemas: opts.strictItemSchemas ?? true,
      projection: opts.projection,
      forceAtomicRecall: opts.forceAtomicRecall,
    };
    const runtime = new Runtime({ storage, testModel: opts._testCallModel, onDiagnostic: opts.onDiagnostic });
    runtime.harness = this;
    runtime.initialState = undefined;
    // Layers are validated where the native harness registers them (D1).
    const memory = layersOf(opts.memory, 'AgentHarness');
    const config = {
      name: opts.name,
      layers: memory.map((layer) => describeLayer(layer, (v) => runtime.keep(v))),
      projection: opts.projection,
      model: modelOf(opts),
      // Truthy, as upstream tests it.
      forceAtomicRecall: Boolean(opts.forceAtomicRecall),
      jsStorage: !isNativeStorage(storage),
      strictItemSchemas: this.config.strictItemSchemas,
    };
    const dispatch = (id, text) => runtime.receive(id, text);
    runtime.native = callNative(
      () => new native.NativeHarness(JSON.stringify(config), dispatch, isNativeStorage(storage) ? storage : null),
    );
    Object.defineProperty(this, '_runtime', { value: runtime });
  }

  // A context that serves several runs, keeping its log and layer state between them (upstream's createContext).
  createContext(given) {
    const opts = contextOptionsOf(given);
    const runtime = this._runtime;
    const handles = runtime.scope();
    const keep = handles.keep;
    const options = {
      threadId: opts.threadId,
      resourceId: opts.resourceId,
      memory: opts.memory == null ? undefined : layersOf(opts.memory, 'createContext').map((l) => describeLayer(l, keep)),
      items: (opts.items ?? []).map((item) => JSON.stringify(item)),
    };
    let id;
    try {
      id = callNative(() => runtime.native.createContext(JSON.stringify(options)));
    } catch (e) {
      handles.release();
      throw e;
    }
    const ctx = runtime.context(id);
    ctx.itemLog._adopt(opts.items ?? []);
    if (opts.state !== undefined) ctx.state = opts.state;
    runtime.keepContext(ctx, handles);
    return ctx;
  }

  // Runs `step` with `input`. Given a context from createContext, the step runs in it (its layers initialise on
  // the first run). Otherwise the run is one execution: layers initialise, the step runs, then onComplete and
  // dispose; `options` may name its threadId, resourceId and memory.
  async run(step, input, contextOrOptions) {
    const runtime = this._runtime;
    const handles = runtime.scope();
    try {
      return await this._run(step, input, contextOrOptions, handles.keep);
    } finally {
      handles.release();
    }
  }

  _run(step, input, contextOrOptions, keep) {
    const runtime = this._runtime;
    const description = describeStep(step, keep, describeLayer);
    if (contextOrOptions instanceof ContextImpl && contextOrOptions._rt === runtime) {
      return this._settle(runtime.native.runInContext(contextOrOptions.id, JSON.stringify(description), JSON.stringify(runtime.toRef(input))));
    }
    const options = runOptionsOf(contextOrOptions, contextOrOptions instanceof ContextImpl);
    const runOptions = {
      threadId: options.threadId,
      resourceId: options.resourceId,
      memory: options.memory == null ? undefined : layersOf(options.memory, 'harness.run').map((l) => describeLayer(l, keep)),
    };
    return this._settle(runtime.native.run(JSON.stringify(description), JSON.stringify(runtime.toRef(input)), JSON.stringify(runOptions)));
  }

  // One model call with no tools and no context (upstream's harness.callModel, as memory hooks use it).
  callModel(request) {
    return this._runtime.callModel(request);
  }

  async _settle(pending) {
    const runtime = this._runtime;
    runtime.activeRuns++;
    try {
      const result = JSON.parse(await pending);
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

module.exports = { AgentHarness, createInMemoryStorage, createSqliteStorage };
