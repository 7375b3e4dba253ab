'use strict';
// The JS half of one harness: user values by handle, the native dispatcher's answers, the objects user code receives.
const native = require('./native.cjs');
const { estimateTokens } = require('./items.cjs');
const { toFailure, callNative, fromNative, messageOf } = require('./errors.cjs');
const liveness = require('./liveness.cjs');
const { ContextImpl } = require('./context.cjs');
const { ChannelStore } = require('./channels.cjs');
const { runHooks, repliesJson } = require('./hooks.cjs');
const { callModelAside, callTestModel } = require('./model-calls.cjs');
const { memorySpan } = require('./observability.cjs');
const { NATIVE } = require('./memory.cjs');
const { scopedView, layerPrefix } = require('./storage.cjs');
const { LayerStates } = require('./layer-state.cjs');
const { Slab } = require('./slab.cjs');
const { answerRequest } = require('./run-requests.cjs');
const { parseJson } = require('./json.cjs');
// Captured at load, so that a test's fake timers cannot hold back the model answers it schedules.
const { setImmediate: checkPhase } = require('node:timers');

class Runtime {
  constructor({ storage, testModel, onDiagnostic, layerStateStore }) {
    this.storage = storage;
    this.testModel = testModel;
    this.onDiagnostic = onDiagnostic;
    this.recalled = new Slab();
    // What `ctx.tokenize` counts with (the harness sets a native count when it has a tokenizer).
    this.tokenize = estimateTokens;
    this.handles = new Map();
    this.values = new Map();
    // Answers settled since the last flush, sent together as the three lists `replyMany` takes (see `replyLater`).
    this.settledReplies = { ids: [], oks: [], texts: [] };
    // Model answers gathered until the event loop's check phase, while several runs are active (see `replyLater`).
    this.gatheredReplies = { ids: [], oks: [], texts: [] };
    this.flushReplies = () => this.sendReplies(this.settledReplies);
    this.flushGathered = () => this.sendReplies(this.gatheredReplies);
    this.channels = new ChannelStore();
    this.next = 1;
    this.lasting = this.scope();
    this.contexts = new Map();
    // createContext contexts by id, weakly (the caller keeps them); `active` holds those with a run in flight.
    this.kept = new Map();
    this.active = new Map();
    this.contextHandles = new Map();
    this.layerStates = new LayerStates(layerStateStore ?? undefined);
    this.activeRuns = 0;
    // Items handed to `execute`, by thread and message id, until their turn puts them in a log.
    this.inputs = new Map();
    this.runs = new Map();
    this.nextRun = 1;
    this.inbox = [];
    this.pumping = false;
    this.kicked = false;
    this.collected = new FinalizationRegistry((id) => this.forgetContext(id));
    this.native = undefined;
    this.harness = undefined;
  }

  // Values that live as long as the harness (its own layers): one handle per object.
  keep(value) {
    return this.lasting.keep(value);
  }

  // Handles released together when a run (or context) ends, so building new steps every run does not grow the table.
  scope() {
    const ids = new Map();
    return {
      keep: (value) => {
        let id = ids.get(value);
        if (id === undefined) {
          id = this.next++;
          ids.set(value, id);
          this.handles.set(id, value);
        }
        return id;
      },
      release: () => {
        for (const id of ids.values()) this.handles.delete(id);
        ids.clear();
      },
    };
  }

  // Values of a run (step outputs, thrown errors), dropped when no run is active.
  keepValue(value) {
    const id = this.next++;
    this.values.set(id, value);
    this.handles.set(id, value);
    return id;
  }

  toRef(value) {
    if (value === undefined) return { t: 'undefined' };
    if (typeof value === 'string') return { t: 'text', v: value };
    return { t: 'host', v: this.keepValue(value) };
  }

  fromRef(ref) {
    switch (ref?.t) {
      case 'text':
      case 'json':
        return ref.v;
      case 'host':
        return this.handles.get(ref.v);
      default:
        return undefined;
    }
  }

  // Freed on collection (FinalizationRegistry): a WeakRef's target lives until microtasks drain, which may never happen.
  keepContext(ctx, handles) {
    this.contexts.delete(ctx.id);
    this.kept.set(ctx.id, new WeakRef(ctx));
    this.contextHandles.set(ctx.id, handles);
    this.collected.register(ctx, ctx.id, ctx);
  }

  // At once (a failed restore), so its later collection cannot drop a context made since under the same id.
  releaseContext(ctx) {
    this.collected.unregister(ctx);
    this.forgetContext(ctx.id);
  }

  // Holds a kept context while a run names it.
  enterContext(ctx) {
    const entry = this.active.get(ctx.id);
    if (entry) entry.runs++;
    else this.active.set(ctx.id, { ctx, runs: 1 });
  }

  leaveContext(ctx) {
    const entry = this.active.get(ctx.id);
    if (entry && --entry.runs === 0) this.active.delete(ctx.id);
  }

  forgetContext(id) {
    this.contextHandles.get(id)?.release();
    this.contextHandles.delete(id);
    this.kept.delete(id);
    this.layerStates.forget(id);
    this.native.dropContext(id);
  }

  // `start(id)` answers JSON at once or null, then `{op: 'settled', run: id}`; `hold` keeps Node alive while Rust works.
  waitFor(start, { hold = false, raw = false, onWait, settle = (answer) => answer } = {}) {
    const id = this.nextRun++;
    if (this.nextRun > 0xffffffff) this.nextRun = 1;
    return new Promise((resolve, reject) => {
      let now;
      try {
        now = callNative(() => start(id));
      } catch (e) {
        return reject(e);
      }
      if (now != null) return liveness.settleSoon(resolve, settle(raw ? now : parseJson(now)));
      if (hold) liveness.hold();
      this.runs.set(id, { resolve, hold, settle });
      onWait?.(() => this.settled(id, null));
    });
  }

  // A native run; resolves to its outcome, `{ok, value}` or `{ok: false, error}`. It starts at the next drive.
  startRun(start) {
    const outcome = this.waitFor(start, { hold: true });
    this.kick();
    return outcome;
  }

  // A microtask later, so that `run()` and `execute()` return before any hook is called, as upstream's do.
  kick() {
    if (this.kicked) return;
    this.kicked = true;
    queueMicrotask(() => {
      this.kicked = false;
      this.drive();
    });
  }

  drive() {
    let requests;
    try {
      requests = this.native.drive();
    } catch (e) {
      console.error('[noetic] internal error while polling runs:', e);
      return;
    }
    this.pump(requests);
  }

  // `[id, foreground, message, ...]`, answered iteratively: a reply returns more, and a long chain must not grow the stack.
  pump(batch) {
    if (!batch) return;
    const requests = parseJson(batch);
    for (let i = 0; i < requests.length; i++) this.inbox.push(requests[i]);
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (let i = 0; i < this.inbox.length; i += 3) this.receive(this.inbox[i], this.inbox[i + 2], this.inbox[i + 1]);
    } finally {
      this.inbox.length = 0;
      this.pumping = false;
    }
  }

  settled(id, result) {
    const waiting = this.runs.get(id);
    if (!waiting) return;
    this.runs.delete(id);
    if (waiting.hold) liveness.release();
    liveness.settleSoon(waiting.resolve, waiting.settle(result));
  }

  // A list `[id, items, ...]` per thread, not a map: two messages queued under one id each place their own items.
  pendingInput(thread, id, items) {
    const pending = this.inputs.get(thread);
    if (pending) pending.push(id, items);
    else this.inputs.set(thread, [id, items]);
  }

  takeInput(thread, ids) {
    const pending = this.inputs.get(thread);
    if (!pending) return [];
    let taken = [];
    for (const id of ids) {
      // Only ids are strings in the list (the items are arrays), so the first match is the id's entry.
      const at = pending.indexOf(id);
      if (at < 0) continue;
      taken = taken.length === 0 ? pending[at + 1] : taken.concat(pending[at + 1]);
      pending.splice(at, 2);
    }
    if (pending.length === 0) this.inputs.delete(thread);
    return taken;
  }

  // The caller's own objects stand for the items a turn logged; the note carries the context's fixed fields.
  turnInput({ context, thread, from, messages, adopted, static: facts }) {
    const items = this.takeInput(thread, messages);
    const ctx = this.context(context);
    ctx._info ??= facts;
    if (adopted) ctx.itemLog._place(from, items);
  }

  sessionStarted() {
    liveness.hold();
    this.beginRun();
  }

  drained() {
    liveness.release();
    this.endRun();
  }

  errorOf(error) {
    return fromNative(error, (h) => this.handles.get(h));
  }

  beginRun() {
    if (this.activeRuns++ === 0) liveness.busy.add(this);
  }

  endRun() {
    if (--this.activeRuns > 0) return;
    liveness.busy.delete(this);
    for (const id of this.values.keys()) this.handles.delete(id);
    this.values.clear();
  }

  // Kept contexts too: a second JS object would have its own log mirror, without the first's items (DECISIONS L1).
  knownContext(id) {
    return this.contexts.get(id) ?? this.active.get(id)?.ctx ?? this.kept.get(id)?.deref();
  }

  context(id) {
    let ctx = this.knownContext(id);
    if (!ctx) {
      ctx = new ContextImpl(this, id);
      this.contexts.set(id, ctx);
    }
    return ctx;
  }

  statesOf(executionId) {
    return this.layerStates.of(executionId);
  }

  layerState(contextId, layer) {
    if (layer[NATIVE]) {
      const text = this.native.nativeState(contextId, layer.id);
      if (text == null) return undefined;
      // A built-in whose state upstream holds in JS-only shapes (fileReference's Map) gives them back.
      const revive = layer[NATIVE].revive;
      return revive ? revive(parseJson(text)) : parseJson(text);
    }
    return this.layerStates.get(contextId, layer.id);
  }

  // What gets persisted is serialized now (A4), to JSON text; a state JSON cannot hold is reported, not thrown.
  serializable(state, layerId) {
    try {
      return JSON.stringify(state) ?? 'null';
    } catch (e) {
      this.diagnostic({ layerId, hook: 'persist', message: `state is not JSON-serializable: ${messageOf(e)}` });
      return undefined;
    }
  }

  // `info`: `[executionId, threadId, resourceId | null, depth, stepNumber, inputTokens, outputTokens, cost, hasModel]`.
  execContext(info, layerFn = false, tokenUsage = undefined) {
    const executionId = info[0];
    const exec = {
      executionId,
      threadId: info[1],
      resourceId: info[2] ?? undefined,
      depth: info[3],
      stepNumber: info[4],
      tokenUsage: tokenUsage ?? { input: info[5], output: info[6] },
      cost: info[7],
      fs: this.harness.fs,
      shell: this.harness.shell,
    };
    // Present exactly when the harness has a model (D8); a `provides` function gets the key undefined, as upstream.
    // Written in place, not spread from an object made for it: one is made for every hook batch.
    if (info[8]) exec.callModel = (request) => this.callModel(request);
    else if (layerFn) exec.callModel = undefined;
    exec.tokenize = this.tokenize;
    exec.trace = { setAttribute() {}, addEvent() {} };
    exec.readLayerState = (id) => {
      const ctx = this.contexts.get(executionId);
      const layer = ctx && this.layerOf(ctx, id);
      return layer ? this.layerState(executionId, layer) : this.layerStates.get(executionId, id);
    };
    return exec;
  }

  callModel(request) {
    return callModelAside(this, request);
  }

  scopedStorage(layerId, scopeKey) {
    return scopedView(this.storage, layerPrefix(layerId, scopeKey));
  }

  // Input is validated synchronously, as upstream; a returned state cannot clear the layer's.
  callLayerFn(ctx, layer, name, args) {
    const decl = layer.provides[name];
    const parsed = decl.input ? decl.input.parse(args) : args;
    if (layer[NATIVE]) {
      return this.native.callNativeFn(ctx.id, layer.id, name, JSON.stringify(parsed ?? {})).then((text) => (text == null ? undefined : parseJson(text)));
    }
    const states = this.statesOf(ctx.id);
    const facts = [ctx.id, ctx.threadId, ctx.resourceId, ctx.depth, ctx.stepCount, undefined, undefined, ctx.cost, false];
    const tokens = ctx.tokens;
    const exec = this.execContext(facts, true, { input: tokens.input, output: tokens.output });
    return Promise.resolve(decl.execute(parsed, states.get(layer.id), exec)).then((out) => {
      if (out && out.state !== undefined) this.writeHostState(ctx, layer, out.state, states);
      return out?.result;
    });
  }

  // At once (an in-memory exporter has them before the run settles); a failing exporter loses spans, never the run.
  exportSpans(spans) {
    if (spans.length === 0) return;
    const report = (e) => process.emitWarning(`trace exporter failed: ${messageOf(e)}`);
    try {
      Promise.resolve(this.harness.traceExporter.export(spans)).catch(report);
    } catch (e) {
      report(e);
    }
  }

  endSpan(ctx) {
    const span = ctx._span;
    if (span && this.tracing) {
      span.end();
      this.exportSpans([span]);
    }
  }

  // Never on the console: a failing schedule at `ms: 0` wrote hundreds of lines a second (DECISIONS G5).
  everyFailed({ context, stepId, error }) {
    const failure = this.errorOf(error);
    const message = messageOf(failure);
    if (this.tracing) this.context(context).span.addEvent('every.iteration.error', { message, stack: failure instanceof Error && failure.stack ? failure.stack : '' });
    this.onDiagnostic?.({ layerId: '', stepId, hook: 'every', message: `every '${stepId}': an iteration failed: ${message}; the schedule goes on` });
  }

  diagnostic({ layerId, stepId, hook, message }) {
    const diagnostic = stepId === undefined ? { layerId, hook, message } : { layerId: '', stepId, hook, message };
    if (this.onDiagnostic) this.onDiagnostic(diagnostic);
    else if (stepId !== undefined) console.warn(`[noetic] loop '${stepId}' ${hook} error:`, message);
    else console.warn(`[noetic] memory layer '${layerId}' ${hook} error:`, message);
  }

  // Id 0 is a notification. Nothing thrown here, however unprintable, may escape into the native callback.
  receive(id, message, foreground) {
    let answer;
    try {
      answer = this.dispatch(message);
    } catch (e) {
      return this.replyNow(id, false, messageOf(e));
    }
    if (typeof answer?.then !== 'function') return this.replyNow(id, true, answer);
    if (foreground) liveness.release();
    const fromModel = message.op === 'model';
    answer.then(
      (value) => {
        if (foreground) liveness.hold();
        this.replyLater(id, true, value, fromModel);
      },
      (e) => {
        if (foreground) liveness.hold();
        this.replyLater(id, false, messageOf(e), fromModel);
      },
    );
  }

  replyNow(id, ok, answer) {
    if (id === 0) return;
    let next;
    try {
      next = this.native.reply(id, ok, answer);
    } catch (e) {
      // A reply Rust cannot take (not a string): say so rather than leave the request waiting.
      next = this.native.reply(id, false, `internal error: ${messageOf(e)}`);
    }
    this.pump(next);
  }

  // Batched to one crossing per microtask; model answers with several runs active, per check phase (DECISIONS S27).
  replyLater(id, ok, answer, fromModel = false) {
    if (id === 0) return;
    const gather = fromModel && this.activeRuns > 1;
    const settled = gather ? this.gatheredReplies : this.settledReplies;
    settled.ids.push(id);
    settled.oks.push(ok);
    settled.texts.push(typeof answer === 'string' ? answer : 'internal error: a reply that is not a string');
    if (settled.ids.length === 1) {
      if (gather) checkPhase(this.flushGathered);
      else queueMicrotask(this.flushReplies);
    }
  }

  // Sends the answers of `list` and empties it (new arrays: `replyMany` is handed these).
  sendReplies(list) {
    const { ids, oks, texts } = list;
    list.ids = [];
    list.oks = [];
    list.texts = [];
    this.pump(ids.length === 1 ? this.native.reply(ids[0], oks[0], texts[0]) : this.native.replyMany(ids, oks, texts));
  }

  dispatch(message) {
    switch (message.op) {
      case 'hooks':
        return runHooks(this, message.call).then(repliesJson);
      case 'release': {
        const ctx = this.knownContext(message.context);
        if (ctx) {
          this.endSpan(ctx);
          // A kept context lives on: a model reply its step never placed (it ended first) is let go.
          ctx._modelReply = undefined;
        }
        this.contexts.delete(message.context);
        if (!this.kept.has(message.context)) this.layerStates.forget(message.context);
        return '';
      }
      case 'diagnostic':
        this.diagnostic(message);
        return '';
      case 'everyFailed':
        this.everyFailed(message);
        return '';
      case 'traces':
        this.exportSpans(parseJson(this.native.takeTraces()).map((record) => memorySpan(record, this.knownContext(record.spanId)?._span)));
        return '';
      case 'settled':
        this.settled(message.run, message.result);
        return '';
      case 'drained':
        this.drained();
        return '';
      case 'poll':
        this.drive();
        return '';
      case 'releaseRecalled':
        for (const key of message.keys) this.recalled.delete(key);
        return '';
      case 'modelItems': {
        const ctx = this.context(message.context);
        const items = ctx._modelReply ?? [];
        ctx._modelReply = undefined;
        ctx.itemLog._place(message.from, items);
        return '';
      }
      case 'turnInput':
        this.turnInput(message);
        return '';
      case 'historySettled':
        // Natively made items of an ended turn: its response reads them here, after the log may have moved on.
        this.context(message.context).itemLog._place(message.from, message.items);
        return '';
      case 'executionEnded':
        this.layerStates.forget(message.execution);
        return '';
      case 'historyMoved': {
        // A session's next turn took the log of the last one's context, which is released next.
        const from = this.knownContext(message.from);
        if (from) this.context(message.to).itemLog._takeHistory(from.itemLog);
        return '';
      }
      case 'historyCut':
        // A session turn failed: its items leave the history, as upstream keeps a failed turn's out of it.
        this.knownContext(message.context)?.itemLog._cut(message.length);
        return '';
      case 'aborted': {
        const ctx = this.knownContext(message.context);
        // Its fixed facts too: code of the context may read them after it ends (a race's loser).
        if (ctx) ctx._info ??= message.static;
        ctx?._aborted(message.reason);
        return '';
      }
      case 'adoptState': {
        // A race's winner: its state becomes the fork's. A winner no JS code touched kept the fork's state as it was.
        const winner = this.knownContext(message.from);
        if (winner) this.context(message.into).state = winner.state;
        return '';
      }
      case 'turnValue':
        // A session turn's value that is not text: getAgentResponse answers it, for as long as the context is kept.
        this.context(message.context)._turnValue = this.handles.get(message.value);
        return '';
      case 'contextState':
        this.context(message.context).state = this.handles.get(message.state);
        return '';
      case 'model':
        return callTestModel(this, message.call).catch((e) => this.failureJson(e));
      default:
        return answerRequest(this, message).then(
          (value) => JSON.stringify({ ok: true, ...value }),
          (e) => this.failureJson(e),
        );
    }
  }

  // A recall hook's items, kept under a key the native side names in the step's model call, until it releases it.
  keepRecalled(items) {
    return this.recalled.keep(items);
  }

  failureJson(e) {
    return JSON.stringify({ ok: false, error: toFailure(e, (v) => this.keepValue(v)) });
  }

  // The context of an execution while the native side still has it (one it has ended is not revived).
  liveContext(id) {
    const ctx = this.knownContext(id);
    if (ctx) return ctx;
    try {
      this.native.contextStatic(id);
    } catch {
      return undefined;
    }
    return this.context(id);
  }

  layerOf(ctx, layerId) {
    const entry = ctx._layers.find((l) => l.id === layerId);
    return entry && this.handles.get(entry.handle);
  }

  layerStateOf(ctx, layerId) {
    const layer = this.layerOf(ctx, layerId);
    return layer ? this.layerState(ctx.id, layer) : undefined;
  }

  // A tool setting a layer's state, as a provides function's does.
  setLayerStateOf(ctx, layerId, state) {
    const layer = this.layerOf(ctx, layerId);
    if (!layer) throw new Error(`memory.set: the context has no layer '${layerId}'`);
    if (layer[NATIVE]) throw new Error(`memory.set: '${layerId}' is a built-in layer; change its state through its provides functions`);
    this.writeHostState(ctx, layer, state);
  }

  // Kept as the layer's state and mirrored durably.
  writeHostState(ctx, layer, state, states = this.statesOf(ctx.id)) {
    states.set(layer.id, state);
    const persist = layer.scope === 'execution' ? undefined : this.serializable(state, layer.id);
    callNative(() => this.native.hostStateWritten(ctx.id, layer.id, persist ?? null));
  }
}

module.exports = { Runtime, native };
