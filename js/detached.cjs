'use strict';
// Detached runs (upstream's `detachedSpawn` and `DetachedHandle`): promise plumbing around a JS adapter (DECISIONS M21).
const { NoeticConfigError, NoeticErrorImpl, describeValue } = require('./errors.cjs');
const { SETTLED, TERMINAL, runsInline } = require('./subprocess.cjs');
const { checkedTimeout, clearLongTimeout, setLongTimeout } = require('./timers.cjs');

const DetachedStatus = Object.freeze({ Running: 'running', Completed: 'completed', Failed: 'failed' });

// Upstream's polling cadence: microtask turns first (an in-process step often ends within a few), then timers.
const MICROTASK_TURNS = 64;
const FIRST_POLL_MS = 10;
const LATER_POLL_MS = 100;
const RAMP_AFTER_MS = 1_000;
// How long an adapter may answer `get` with null before the handle counts as evicted.
const EVICTED_AFTER_MS = 500;

const isRecord = (value) => typeof value === 'object' && value !== null;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function stepFailed(stepId, message) {
  return new NoeticErrorImpl({ kind: 'step_failed', stepId, cause: new Error(message), retriesExhausted: false });
}

function errorOf(handle, stepId) {
  const payload = handle.metadata?.error;
  if (payload === undefined) {
    const reason = handle.metadata?.stopReason;
    if (handle.status === 'stopped') return stepFailed(stepId, `Detached spawn was stopped${reason ? `: ${reason}` : ''}`);
    return stepFailed(stepId, 'Detached spawn failed without an error payload');
  }
  if (!isRecord(payload)) return new Error(String(payload));
  if (isRecord(payload.noeticError) && typeof payload.noeticError.kind === 'string') return new NoeticErrorImpl(payload.noeticError);
  if (payload.name === 'NoeticConfigError' && typeof payload.code === 'string') {
    return new NoeticConfigError({ code: payload.code, message: String(payload.message), hint: payload.hint });
  }
  const err = new Error(typeof payload.message === 'string' ? payload.message : 'unknown error');
  if (typeof payload.name === 'string') err.name = payload.name;
  if (typeof payload.stack === 'string') err.stack = payload.stack;
  return err;
}

class DetachedHandleImpl {
  // `spawned` is awaited here so that the handle is usable before it settles; `onStop` aborts the child context.
  constructor({ id, stepId, adapter, spawned, onStop }) {
    this.id = id;
    Object.defineProperties(this, {
      _stepId: { value: stepId },
      _adapter: { value: adapter },
      _spawned: { value: spawned },
      _onStop: { value: onStop },
      _startedAt: { value: Date.now() },
      _settlement: { value: undefined, writable: true },
      _status: { value: DetachedStatus.Running, writable: true },
      _result: { value: undefined, writable: true },
      _error: { value: undefined, writable: true },
      _last: { value: undefined, writable: true },
      _waiting: { value: 0, writable: true },
      _wake: { value: undefined, writable: true },
    });
    // A spawn that fails shows as failed even to a caller who never awaits; `await()` throws it.
    spawned.then(
      (handle) => {
        this._last ??= handle;
      },
      (err) => {
        this._status = DetachedStatus.Failed;
        this._error = err instanceof Error ? err.message : String(err);
      },
    );
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
    checkedTimeout(timeout, 'DetachedHandle.await');
    this._waiting += 1;
    this._wake?.();
    this._settlement ??= this._follow().catch((err) => {
      this._status = DetachedStatus.Failed;
      this._error ??= err instanceof Error ? err.message : String(err);
      throw err;
    });
    let timer;
    try {
      // As upstream, 0 (like no timeout) waits as long as the run takes; so does Infinity.
      if (timeout == null || timeout === 0 || timeout === Infinity) return await this._settlement;
      const late = new Promise((_, reject) => {
        timer = setLongTimeout(() => reject(stepFailed(this._stepId, `Detached spawn timed out after ${timeout}ms`)), timeout);
      });
      return await Promise.race([this._settlement, late]);
    } finally {
      clearLongTimeout(timer);
      this._waiting -= 1;
    }
  }

  async stop(reason) {
    if (reason !== undefined && typeof reason !== 'string') {
      throw new NoeticConfigError({ code: 'INVALID_STOP_REASON', message: `DetachedHandle.stop(reason): reason is ${describeValue(reason)}; expected a string.`, hint: "Pass a string such as 'no longer needed', or nothing." });
    }
    const handle = await this._spawned;
    const answer = await this._adapter.stop(handle.id, reason);
    this._onStop?.(reason ?? 'detached spawn stopped');
    return answer;
  }

  async _follow() {
    const first = await this._spawned;
    if (TERMINAL.has(first.status)) return this._finish(first);
    // Our in-memory adapter says when a handle ends; any other is asked until it does.
    if (typeof this._adapter[SETTLED] === 'function') {
      const ended = await this._adapter[SETTLED](first.id);
      if (ended) return this._finish(ended);
    }
    return this._finish(await this._poll(first.id));
  }

  async _poll(handleId) {
    let nullSince = null;
    const look = async () => {
      const handle = await this._adapter.get(handleId);
      if (handle == null) {
        nullSince ??= Date.now();
        if (Date.now() - nullSince >= EVICTED_AFTER_MS) {
          throw new NoeticErrorImpl({ kind: 'handle_evicted', handleId, stepId: this._stepId, gracePeriodMs: EVICTED_AFTER_MS });
        }
        return null;
      }
      nullSince = null;
      this._last = handle;
      return TERMINAL.has(handle.status) ? handle : null;
    };
    for (let turn = 0; turn < MICROTASK_TURNS; turn++) {
      const ended = await look();
      if (ended) return ended;
      await Promise.resolve();
    }
    for (let delay = FIRST_POLL_MS; ; ) {
      const ended = await look();
      if (ended) return ended;
      // Nobody waits any more (their awaits timed out): asking again would only keep the process alive.
      if (this._waiting === 0) await new Promise((resolve) => (this._wake = resolve));
      this._wake = undefined;
      await sleep(delay);
      if (Date.now() - this._startedAt >= RAMP_AFTER_MS) delay = LATER_POLL_MS;
    }
  }

  _finish(handle) {
    this._last = handle;
    if (handle.status === 'completed') {
      this._status = DetachedStatus.Completed;
      this._result = handle.metadata?.result;
      return this._result;
    }
    const err = errorOf(handle, this._stepId);
    this._status = DetachedStatus.Failed;
    this._error = err.message;
    throw err;
  }
}

function adapterFor(step, override, fallback) {
  if (override != null) return override;
  if ((step?.kind === 'run' || step?.kind === 'spawn') && step.subprocess != null) return step.subprocess;
  return fallback;
}

function dispatch({ adapter, step, input, executionId, overrides, run, onStop }) {
  const request = { kind: 'step', stepId: step.id, serializedInput: input, executionId, overrides, _localExecutor: run };
  // A spawn that throws synchronously is a rejected spawn, as an async one's would be.
  let spawned;
  try {
    spawned = Promise.resolve(adapter.spawn(request));
  } catch (err) {
    spawned = Promise.reject(err);
  }
  return new DetachedHandleImpl({ id: executionId, stepId: step.id, adapter, spawned, onStop });
}

// So that a step an adapter was just handed is not handed over again (upstream's executeNoAdapter).
const ROUTED = Symbol('noetic.step.routed');
const alreadyRouted = (step) => (step?.kind === 'run' ? { ...step, [ROUTED]: true } : step);

// Straight through when the adapter runs steps in place with nothing to observe, else handed over as upstream does.
function routedExecute(step) {
  const execute = step.execute;
  if (step[ROUTED]) return execute;
  return function execute_(input, ctx) {
    const adapter = adapterFor(step, undefined, ctx?.harness?.subprocess);
    if (adapter == null || runsInline(adapter)) return execute(input, ctx);
    const overrides = { threadId: ctx.threadId, resourceId: ctx.resourceId };
    return dispatch({ adapter, step, input, executionId: ctx.id, overrides, run: () => execute(input, ctx) }).await();
  };
}

module.exports = { DetachedStatus, adapterFor, dispatch, routedExecute, alreadyRouted };
