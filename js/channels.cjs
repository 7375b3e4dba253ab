'use strict';
// Channels (value, queue with back-pressure, topic): the runtime's store decides (harness/channels.rs, DECISIONS R16).
// JS keeps what only it can: the values (by identity, under ids the store hands out), the promises user code
// awaits, their timers and abort listeners, and the wake callbacks.
const native = require('./native.cjs');
const { NoeticErrorImpl } = require('./errors.cjs');
const { clearLongTimeout, setLongTimeout } = require('./timers.cjs');

// A description only; as upstream's, the schema types the values and is not enforced.
function channel(name, opts = {}) {
  return { name, schema: opts.schema, mode: opts.mode, capacity: opts.capacity, ...(opts.external ? { external: true } : {}) };
}

const cancelled = (signal) => new NoeticErrorImpl({ kind: 'cancelled', reason: typeof signal?.reason === 'string' ? signal.reason : undefined });
const timedOut = (name, timeout) => new NoeticErrorImpl({ kind: 'channel_timeout', channelName: name, timeout });

// Anything but a string (a channel's name, an execution id, a wake callback) is keyed by identity, as a Map keys it.
const keys = { weak: new WeakMap(), strong: new Map(), last: 0 };
function keyOf(value) {
  if (typeof value === 'string') return value;
  const map = Object(value) === value ? keys.weak : keys.strong;
  if (!map.has(value)) map.set(value, (keys.last = (keys.last + 1) >>> 0));
  return map.get(value);
}
// A number as JS's comparisons read it; undefined for the runtime's default.
const numeric = (n) => (n === undefined ? undefined : Number(n));
// A channel object as the runtime reads it (`JsChannel` in src/channels.rs).
const describeChannel = (ch) => ({
  name: keyOf(ch.name),
  label: typeof ch.name === 'string' ? undefined : String(ch.name),
  mode: typeof ch.mode === 'string' ? ch.mode : undefined,
  capacity: numeric(ch.capacity ?? undefined),
});

class ChannelStore {
  constructor() {
    this._native = new native.NativeChannels();
    this._values = new Map();
    // What settles each waiter the runtime registered, and each wake callback, by the runtime's ids.
    this._pending = new Map();
  }

  // What upstream's store writes of itself (a Map and a Set, which JSON writes as empty objects).
  toJSON() {
    return { channels: {}, closedExecutions: {} };
  }

  // Lets go of the values the runtime released, then settles the waiters it named; false if it released nothing.
  _apply(release, settled = [], ...value) {
    if (release == null) return false;
    for (const id of release) this._values.delete(id);
    for (const id of settled) {
      const settle = this._pending.get(id);
      if (this._pending.delete(id)) settle(...value);
    }
    return true;
  }

  // A one-shot callback on the next send to `ch`; returns the unsubscribe, true while the callback is in the set of
  // its send (the same function twice before a send is one subscription; it stays in that set after the send).
  subscribeWake(ch, callback) {
    const id = this._native.subscribeWake(describeChannel(ch), keyOf(callback));
    const entry = this._pending.get(id) ?? { wake: callback, subscribed: true };
    this._pending.set(id, entry);
    return () => {
      if (this._pending.get(id) === entry && this._pending.delete(id)) this._apply(this._native.cancel(id));
      return entry.subscribed && !(entry.subscribed = false);
    };
  }

  send(ch, value, opts = {}) {
    return this._send(ch, value, opts?.timeout, opts?.signal, false);
  }

  // A sender outside any run: it never waits; a full queue drops its oldest value instead.
  sendExternal(ch, value) {
    void this._send(ch, value, undefined, undefined, true);
  }

  // Keeps the value if the runtime holds it, settles whom it chose, parks the sender, then calls the wakes.
  _send(ch, value, timeout, signal, external, execution) {
    const plan = this._native.send(describeChannel(ch), numeric(timeout), Boolean(signal?.aborted), external, execution);
    if (plan.closed) throw new NoeticErrorImpl({ kind: 'channel_closed', channelName: ch.name });
    if (plan.warning != null) console.warn(plan.warning);
    if (plan.kept != null) this._values.set(plan.kept, value);
    this._apply(plan.release, plan.resolve, value);
    const result = plan.cancelled ? Promise.reject(cancelled(signal)) : plan.waiter == null ? Promise.resolve() : this._wait(plan, ch.name, timeout, signal);
    for (const id of plan.wakes) {
      const entry = this._pending.get(id);
      this._pending.delete(id);
      if (entry?.subscribed) entry.wake();
    }
    return result;
  }

  // Until the runtime settles it, or its timer or `signal` ends it while the runtime still has it pending.
  _wait({ waiter, timer, timerGiven }, name, timeout, signal) {
    return new Promise((resolve, reject) => {
      const limit = timerGiven ? timeout : (timer ?? undefined);
      const drop = (error) => this._apply(this._native.cancel(waiter)) && this._pending.delete(waiter) && (done(), reject(error()));
      const onAbort = () => drop(() => cancelled(signal));
      const clock = limit === undefined ? undefined : setLongTimeout(() => drop(() => timedOut(name, limit)), limit);
      const done = () => (clearLongTimeout(clock), signal?.removeEventListener('abort', onAbort));
      this._pending.set(waiter, (value) => (done(), resolve(value)));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  // Registered at call time, so a send right after counts.
  async recv(ch, timeout, signal) {
    const plan = this._native.recv(describeChannel(ch), numeric(timeout), Boolean(signal?.aborted));
    if (plan.cancelled) throw cancelled(signal);
    if (plan.warning != null) console.warn(plan.warning);
    const taken = this._took(plan);
    return plan.waiter == null ? taken : this._wait(plan, ch.name, timeout, signal);
  }

  tryRecv(ch) {
    return this._took(this._native.tryRecv(describeChannel(ch)));
  }

  // The value a receive took (null for none), read before its release; then the parked senders it let through are
  // resolved. Without `release`: a value the runtime took for a loop's inbox.
  _took({ value, release = this._native.release(value), resolve }) {
    const taken = value == null ? null : this._values.get(value);
    this._apply(release, resolve);
    return taken;
  }

  getHandle(ch, executionId) {
    const store = this;
    return {
      get closed() {
        return store._native.isClosed(keyOf(executionId));
      },
      channel: ch,
      send: (value) => void store._send(ch, value, undefined, undefined, true, keyOf(executionId)),
    };
  }

  closeExecution(executionId) {
    this._native.closeExecution(keyOf(executionId));
  }
}

module.exports = { channel, ChannelStore, describeChannel };
