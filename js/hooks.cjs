'use strict';
// Runs one hook phase for the JS layers the runtime selected and reports each outcome; the batch's options decide
// order, timeouts, state writes and early stops (the runtime's decisions): this only calls.
const { describeValue, messageOf, NoeticConfigError } = require('./errors.cjs');
const { createMessage } = require('./items.cjs');
const { gateOf, admit, checkCategory } = require('./item-schemas.cjs');
const { HookGuard, HookTimeout, awaitHook } = require('./hook-deadlines.cjs');
const { piped } = require('./hook-pipelines.cjs');
const { sketchText } = require('./sketch.cjs');
const { parseJson } = require('./json.cjs');

// Which new state a result carries under the runtime's rule; `NONE` when it carries none.
const NONE = Symbol('none');
function stateOf(rule, result) {
  switch (rule) {
    case 'always':
      if (result === null || result === undefined) throw new TypeError(`Cannot read properties of ${result} (reading 'state')`);
      return typeof result === 'object' ? result.state : undefined;
    case 'ifDefined':
      return typeof result === 'object' && result !== null && result.state !== undefined ? result.state : NONE;
    case 'ifKeyPresent':
      if (!result) return NONE;
      if (typeof result !== 'object') throw new TypeError(`Cannot use 'in' operator to search for 'state' in ${result}`);
      return 'state' in result ? result.state : NONE;
    // onSpawn: a `childState` of undefined still gives the child an (undefined) state; null gives it none.
    case 'childState':
      return result && result.childState !== null ? result.childState : NONE;
    case 'parentState':
      return typeof result === 'object' && result !== null && result.parentState !== undefined ? result.parentState : NONE;
    default:
      return NONE;
  }
}

// Put to the item schemas (spec §9.1), a string as the developer message it becomes; a rejection fails the hook.
function recallOf(result, schemas, layer) {
  if (!result) return { kind: 'nothing' };
  if (typeof result === 'string') {
    checkCategory(schemas, [layer], 'developerMessages', () => createMessage(result, 'developer'));
    return { kind: 'text', text: result };
  }
  if (typeof result !== 'object' || !Array.isArray(result.items)) {
    throw new TypeError('recall must return { items, tokenCount }, a string, or null');
  }
  checkItems(result.items, 'recall');
  const count = result.tokenCount;
  if (count != null && typeof count !== 'number') {
    throw new TypeError(`recall returned tokenCount ${describeValue(count)}; expected a number of tokens, or none to have the items counted`);
  }
  const checked = admit(gateOf(schemas, [layer]), result.items);
  return { kind: 'items', items: result.items.map((item) => JSON.stringify(item)), tokenCount: result.tokenCount, checked };
}

// A non-item fails that hook alone, by position, where its JSON would have spoilt the whole batch's reply.
function checkItems(items, hook) {
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (typeof item !== 'object' || item === null || typeof item.type !== 'string' || item.type === '') {
      throw new TypeError(`${hook} returned items[${i}] = ${describeValue(item)}; expected an item (an object whose "type" is a non-empty string)`);
    }
  }
}

// `signal` (D5) is a prototype getter: one per object cost more than the rest of a hook call, and own keys stay upstream's.
class HookParams {
  #guard;

  constructor(guard) {
    this.#guard = guard;
  }

  get signal() {
    return this.#guard.signal;
  }
}

function paramsFor(phase, args, state, layerId, { log, exec, runtime, given }, guard) {
  const p = new HookParams(guard);
  switch (phase) {
    case 'init':
      return Object.assign(p, { storage: runtime.scopedStorage(layerId, args.scopeKey), scopeKey: args.scopeKey, ctx: exec });
    case 'recall':
      p.log = log;
      p.query = args.query;
      p.ctx = exec;
      p.state = state;
      p.budget = args.budget;
      return p;
    case 'store': {
      const newItems = given ?? log._objects.slice(args.responseFrom, args.responseTo);
      p.newItems = newItems;
      p.log = log;
      p.response = { items: newItems, usage: args.usage };
      p.ctx = exec;
      p.state = state;
      return p;
    }
    // Less frequent phases: one object's keys, in upstream's order.
    case 'onItemAppend':
      return Object.assign(p, { items: args.items, log, ctx: exec, state });
    case 'beforeToolCall':
      return Object.assign(p, { toolName: args.toolName, toolArgs: args.toolArgs, ctx: exec, state });
    case 'afterModelCall':
      return Object.assign(p, { response: args.response, ctx: exec, state });
    case 'projectHistory':
      return Object.assign(p, { items: args.items, ctx: exec, state });
    case 'onSpawn':
      return Object.assign(p, { parentState: runtime.statesOf(args.parentExec).get(layerId), childCtx: exec });
    case 'onReturn': {
      const { childExec, result } = args;
      return Object.assign(p, { childState: runtime.statesOf(childExec).get(layerId), childLog: runtime.context(childExec).itemLog, parentState: state, result });
    }
    case 'renderDelta':
      return Object.assign(p, { prev: args.prev, next: args.next, prevState: undefined, state, ctx: exec, budget: args.budget });
    case 'onComplete':
      return Object.assign(p, { log, ctx: exec, state, outcome: args.outcome });
    default:
      p.state = state;
      return p;
  }
}

function failed(e, runtime) {
  if (e instanceof HookTimeout) return { status: 'timeout', ms: e.ms };
  return { status: 'threw', message: messageOf(e), error: runtime.keepValue(e) };
}

const STEERING = new Set(['beforeToolCall', 'afterModelCall']);
const RERENDER_SCOPES = new Set(['self', 'slot-after', 'all']);

// §13.2: an unknown scope asks for nothing; `timing` is only reported: all are met before the next model call (DECISIONS M5).
function rerenderOf(result, layer) {
  const scope = result.scope ?? 'slot-after';
  return RERENDER_SCOPES.has(scope) ? { scope, timing: result.timing ?? layer.rerenderTiming ?? 'batched' } : undefined;
}

// Flat `[layer, layerId, ...]` pairs (plus `own` options): objects made here cost far less than JSON.parse making them.
function callsOf(pairs, own) {
  const calls = [];
  for (let i = 0; i < pairs.length; i += 2) {
    const call = { layer: pairs[i], layerId: pairs[i + 1] };
    calls.push(own ? Object.assign(call, own[i >> 1]) : call);
  }
  return calls;
}

function runHooks(runtime, batch) {
  const calls = callsOf(batch.calls, batch.own);
  const phase = batch.phase;
  const ctx = runtime.context(batch.context);
  const exec = runtime.execContext(batch.exec);
  const states = runtime.statesOf(exec.executionId);
  const log = ctx.itemLog;
  if (batch.newItems) log._receive(batch.newItems.from, batch.newItems.items);
  // `given`: items not in the log that a store is about (ctx.harness.storeLayers' own response).
  const shared = { log, exec, runtime, given: phase === 'store' && batch.items ? batch.items.map((text) => parseJson(text)) : undefined };
  // The batch's call options when every call has the same.
  const each = batch.each && { timeoutMs: batch.each[0], write: batch.each[1], persist: batch.each[2], stopOnError: batch.each[3] };

  const replyOf = (c, layer, ok, result, started) => {
    let reply;
    try {
      if (!ok) throw result;
      reply = { status: 'ok', next: stateOf((each ?? c).write, result) };
      if (phase === 'recall') {
        reply.recall = recallOf(result, runtime.harness.itemSchemas, layer);
        // Kept for the model call of this step, which names them instead of sending them back (released after it).
        if (batch.keepRecalled && reply.recall.kind === 'items') reply.recall.key = runtime.keepRecalled(result.items);
      }
      if (phase === 'onItemAppend') {
        if (!Array.isArray(result?.items)) throw new TypeError('onItemAppend must return { items }');
        checkItems(result.items, 'onItemAppend');
        reply.items = result.items;
        if (result.rerender) reply.rerender = rerenderOf(result, layer);
      }
      if (STEERING.has(phase)) reply.decision = result.decision;
      if (phase === 'onSpawn' && Array.isArray(result?.items) && result.childState !== null) {
        checkItems(result.items, 'onSpawn');
        reply.itemsChecked = admit(gateOf(runtime.harness.itemSchemas, [layer]), result.items);
        reply.items = result.items.map((item) => JSON.stringify(item));
      }
      if (phase === 'onReturn' && typeof result === 'object' && result !== null && result.result !== undefined) {
        reply.piped = result.result;
      }
      if (phase === 'renderDelta' && typeof result === 'string') reply.result = { t: 'text', v: result };
      if (phase === 'projectHistory') {
        if (!Array.isArray(result?.items)) throw new TypeError('projectHistory must return { items }');
        reply.history = result.items;
      }
    } catch (e) {
      reply = failed(e, runtime);
      // The native gate keeps such a layer out from now on; a user's layerStateStore hears of it too.
      if (phase === 'init' && layer.onInitError === 'disable') runtime.layerStates.disable(exec.executionId, c.layerId);
      // A steering hook fails open, except on a configuration error, which propagates (§14.1).
      if (STEERING.has(phase) && e instanceof NoeticConfigError) reply.rethrow = true;
    }
    if (batch.timed) reply.elapsedUs = Math.round((performance.now() - started) * 1000);
    return reply;
  };

  // `done(reply)` is called once, synchronously when the hook answers without a promise; `args`: a pipeline's.
  const invoke = (c, args, done) => {
    const layer = runtime.handles.get(c.layer);
    const guard = new HookGuard((each ?? c).timeoutMs);
    const params = paramsFor(phase, args ?? c.args ?? batch.args, states.get(c.layerId), c.layerId, shared, guard);
    const started = batch.timed ? performance.now() : 0;
    let result;
    try {
      result = layer.hooks[phase](params);
      if (typeof result?.then !== 'function') return done(replyOf(c, layer, true, result, started));
    } catch (e) {
      return done(replyOf(c, layer, false, e, started));
    }
    awaitHook(guard, result, (ok, value) => done(replyOf(c, layer, ok, value, started)));
  };

  // In the runtime's order; `next` stays on the reply, as replyJson writes only the fields it names.
  const apply = (c, reply) => {
    if (!('next' in reply)) return reply;
    const next = reply.next;
    if (next === NONE) return reply;
    states.set(c.layerId, next);
    reply.state = next === undefined ? 'clear' : 'set';
    if ((each ?? c).persist && next !== undefined) reply.persist = runtime.serializable(next, c.layerId);
    return reply;
  };
  // Every afterModelCall hook of the batch sees the one response (its args are the batch's).
  if (phase === 'afterModelCall') batch.args = { response: { items: batch.items.map((text) => parseJson(text)), usage: batch.args.usage } };
  switch (batch.order) {
    case 'piped':
      return piped(batch, calls, (c, args) => new Promise((resolve) => invoke(c, args, resolve)), apply, log, runtime);
    case 'together':
      return allAtOnce(calls, invoke, apply);
    default:
      return inOrder(calls, invoke, apply, each, batch.stopOnDeny === true);
  }
}

// No promise per call: a hook that answers at once is followed in the same loop; one that answers later resumes it.
function inOrder(calls, invoke, apply, each, stopOnDeny) {
  return new Promise((resolve, reject) => {
    const replies = [];
    let looping = false;
    let stopped = false;
    const answered = (reply) => {
      try {
        const c = calls[replies.length];
        const applied = apply(c, reply);
        replies.push(applied);
        stopped = (applied.status !== 'ok' && ((each ?? c).stopOnError || applied.rethrow)) || (stopOnDeny && applied.decision?.action === 'deny');
        if (stopped) resolve(replies);
        else if (!looping) loop();
      } catch (e) {
        reject(e);
      }
    };
    const loop = () => {
      looping = true;
      while (!stopped && replies.length < calls.length) {
        const before = replies.length;
        invoke(calls[before], undefined, answered);
        // Not answered yet: `answered` resumes the loop.
        if (replies.length === before) {
          looping = false;
          return;
        }
      }
      looping = false;
      if (!stopped) resolve(replies);
    };
    try {
      loop();
    } catch (e) {
      reject(e);
    }
  });
}

// The calls all started at once; the replies are applied in the calls' order once every one has answered.
function allAtOnce(calls, invoke, apply) {
  return new Promise((resolve, reject) => {
    const replies = new Array(calls.length);
    let left = calls.length;
    const applyAll = () => {
      try {
        resolve(calls.map((c, i) => apply(c, replies[i])));
      } catch (e) {
        reject(e);
      }
    };
    if (left === 0) return resolve([]);
    for (let i = 0; i < calls.length; i++) {
      invoke(calls[i], undefined, (reply) => {
        replies[i] = reply;
        if (--left === 0) applyAll();
      });
    }
  });
}

// Items and persisted states are JSON texts already: they go in as they are, not escaped here to be unescaped natively.
function repliesJson(replies) {
  return `[${commaList(replies.map(replyJson))}]`;
}

// By concatenation, not join: V8 keeps a rope the native call flattens once, where join would copy everything here.
function commaList(texts) {
  let text = texts.length > 0 ? texts[0] : '';
  for (let i = 1; i < texts.length; i++) text = `${text},${texts[i]}`;
  return text;
}

// Field by field, with no JSON.stringify for our own words: spreading or stringifying cost more than the writing.
function replyJson(reply) {
  let text = `{"status":"${reply.status}"`;
  if (reply.state !== undefined) text += `,"state":"${reply.state}"`;
  if (reply.message !== undefined) text += `,"message":${JSON.stringify(reply.message)}`;
  if (reply.ms !== undefined) text += `,"ms":${JSON.stringify(reply.ms)}`;
  if (reply.error !== undefined) text += `,"error":${JSON.stringify(reply.error)}`;
  // In a one-element array, so that a state of null is a write of null, not no write.
  if (reply.persist !== undefined) text += `,"persist":[${reply.persist}]`;
  if (reply.recall !== undefined) text += `,"recall":${recallJson(reply.recall)}`;
  if (reply.items !== undefined) text += `,"items":[${commaList(reply.items)}]`;
  if (reply.itemCount !== undefined) text += `,"itemCount":${reply.itemCount}`;
  if (reply.itemsChecked !== undefined) text += `,"itemsChecked":${reply.itemsChecked === true}`;
  // Read natively (lifecycle/steering.rs), as a sketch: a decision of the wrong shape is named there.
  if (reply.decision !== undefined) text += `,"decision":${sketchText(reply.decision, [], 1)}`;
  if (reply.rethrow) text += ',"rethrow":true';
  if (reply.projected !== undefined) text += `,"projected":[${commaList(reply.projected)}]`;
  if (reply.rerender !== undefined) text += `,"rerender":${JSON.stringify(reply.rerender)}`;
  if (reply.elapsedUs !== undefined) text += `,"elapsedUs":${reply.elapsedUs}`;
  if (reply.result !== undefined) text += `,"result":${JSON.stringify(reply.result)}`;
  return `${text}}`;
}

function recallJson(recall) {
  if (recall.kind !== 'items') return JSON.stringify(recall);
  let text = `{"kind":"items","items":[${commaList(recall.items)}]`;
  // A count that is not finite is written as null, as JSON would.
  const count = recall.tokenCount;
  if (count !== undefined) text += `,"tokenCount":${Number.isFinite(count) ? count : 'null'}`;
  if (recall.key !== undefined) text += `,"key":${recall.key}`;
  return `${text},"checked":${recall.checked === true}}`;
}

module.exports = { runHooks, repliesJson };
