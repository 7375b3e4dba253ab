'use strict';
// Detached runs (upstream's `detachedSpawn` and `DetachedHandle`). The runtime's watch (adapters/detached.rs) says how
// an adapter's handle reads, when to ask the adapter again, and what an await or a stop gives; JS awaits, calls the
// adapter and keeps what user code reads (DECISIONS M21).
const native = require('./native.cjs');
const { NoeticConfigError, NoeticErrorImpl, callNative, fromNative } = require('./errors.cjs');
const { SETTLED, shaped } = require('./subprocess.cjs');
const { clearLongTimeout, setLongTimeout } = require('./timers.cjs');
const { sketchText } = require('./sketch.cjs');
const { parseJson } = require('./json.cjs');

const DetachedStatus = Object.freeze({ Running: 'running', Completed: 'completed', Failed: 'failed' });
const RUNNING = Symbol('running');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const none = () => undefined;
const textOf = (err) => (err instanceof Error ? err.message : String(err));

// What the watch reads of an adapter's handle, read as JS reads properties (an Error's message is no own key).
function factsOf(handle) {
  const status = handle.status;
  const error = handle.metadata?.error;
  const { message, name, stack, code, noeticError } = error ?? {};
  const stopReason = handle.metadata?.stopReason;
  return sketchText({ status, id: handle.id, stopReason, error, message, name, stack, code, noeticError, noeticKind: noeticError?.kind }, [], 1);
}

// The error a failed handle gives: made natively, or rebuilt from the error its adapter recorded as the watch says.
function errorOf({ made, rebuild }, payload) {
  if (made) return fromNative(made, none);
  if (rebuild.from === 'noeticError') return new NoeticErrorImpl(payload.noeticError);
  if (rebuild.from === 'configError') return new NoeticConfigError({ code: payload.code, message: String(payload.message), hint: payload.hint });
  if (rebuild.from === 'text') return new Error(String(payload));
  return Object.assign(new Error(rebuild.message ?? payload.message), shaped(rebuild.fields, payload));
}

class DetachedHandleImpl {
  // `spawned` is awaited here so that the handle is usable before it settles; `onStop` aborts the child context.
  constructor({ id, stepId, adapter, spawned, onStop }) {
    this.id = id;
    Object.defineProperties(this, {
      _watch: { value: new native.NativeDetachedWatch(sketchText(stepId, [], 0), Date.now()) },
      _adapter: { value: adapter },
      _spawned: { value: spawned },
      _onStop: { value: onStop },
      _settlement: { value: undefined, writable: true },
      _status: { value: DetachedStatus.Running, writable: true },
      _result: { value: undefined, writable: true },
      _error: { value: undefined, writable: true },
      _last: { value: undefined, writable: true },
      _waiting: { value: 0, writable: true },
      _wake: { value: undefined, writable: true },
    });
    // A spawn that fails shows as failed even to a caller who never awaits; `await()` throws it.
    spawned.then((handle) => void (this._last ??= handle), (err) => this._failed(err));
  }

  get status() {
    return this._status;
  }
  get result() {
    return this._result;
  }
  get error() {
    return this._error;
  }
  get done() {
    return this._status !== DetachedStatus.Running;
  }
  get metadata() {
    return this._last?.metadata;
  }

  // A timeout leaves the run going: a later `await()` can still see it end.
  async await(timeout) {
    const late = callNative(() => this._watch.awaiting(sketchText(timeout, [], 0)));
    this._waiting += 1;
    this._wake?.();
    this._settlement ??= this._follow().catch((err) => {
      throw this._failed(err);
    });
    let timer;
    try {
      if (late == null) return await this._settlement;
      const timedOut = new Promise((_, reject) => (timer = setLongTimeout(() => reject(fromNative(parseJson(late), none)), timeout)));
      return await Promise.race([this._settlement, timedOut]);
    } finally {
      clearLongTimeout(timer);
      this._waiting -= 1;
    }
  }

  async stop(reason) {
    const fallback = callNative(() => this._watch.stopping(sketchText(reason, [], 0)));
    const handle = await this._spawned;
    const answer = await this._adapter.stop(handle.id, reason);
    this._onStop?.(reason ?? fallback);
    return answer;
  }

  // Our in-memory adapter says when a handle ends; any other's handle is read, then asked about until it ends.
  async _follow() {
    const first = await this._spawned;
    const ended = typeof this._adapter[SETTLED] === 'function' ? await this._adapter[SETTLED](first.id) : null;
    if (ended) return this._finish(ended);
    const now = this._finish(first);
    return now === RUNNING ? this._finish(await this._poll(first.id)) : now;
  }

  // Asks the adapter until the watch says the handle has ended, or throws that it is gone. An answer of the watch
  // holds for the turns it gives while the adapter answers the same status, so the microtask turns ask it once.
  async _poll(handleId) {
    let [next, status, repeats] = [{ turns: 0 }, undefined, 0];
    for (;;) {
      const handle = await this._adapter.get(handleId);
      const [found, seen] = [handle != null, handle?.status];
      if (found) this._last = handle;
      if (found && seen === status && repeats + 1 < next.turns) repeats += 1;
      else [next, status, repeats] = [callNative(() => this._watch.observe(Date.now(), found, sketchText(seen, [], 0), repeats)), seen, 0];
      if (next.ended) return handle;
      if (next.turns > 0) await Promise.resolve();
      else {
        // Nobody waits any more (their awaits timed out): asking again would only keep the process alive.
        if (this._waiting === 0) await new Promise((resolve) => (this._wake = resolve));
        this._wake = undefined;
        await sleep(next.sleepMs);
      }
    }
  }

  // How `handle` reads to the watch: RUNNING, or its end, kept for the getters: the result, or the error thrown.
  _finish(handle) {
    this._last = handle;
    const ending = parseJson(this._watch.ending(factsOf(handle)));
    if (ending.status === DetachedStatus.Running) return RUNNING;
    this._status = ending.status;
    if (ending.status !== DetachedStatus.Completed) throw this._failed(errorOf(ending, handle.metadata?.error));
    return (this._result = handle.metadata?.result);
  }

  // A failed spawn, wait or run reads failed, with the first error's message.
  _failed(err) {
    this._status = DetachedStatus.Failed;
    this._error ??= textOf(err);
    return err;
  }
}

// Hands step `stepId` to `adapter` (upstream's request, `run` its local executor); the handle follows it.
function dispatch({ adapter, stepId, input, executionId, overrides, run, onStop }) {
  const request = { kind: 'step', stepId, serializedInput: input, executionId, overrides, _localExecutor: run };
  // A spawn that throws synchronously is a rejected spawn, as an async one's would be.
  let spawned;
  try {
    spawned = Promise.resolve(adapter.spawn(request));
  } catch (err) {
    spawned = Promise.reject(err);
  }
  return new DetachedHandleImpl({ id: executionId, stepId, adapter, spawned, onStop });
}

module.exports = { DetachedStatus, dispatch };
