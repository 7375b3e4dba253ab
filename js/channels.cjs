'use strict';
// Channels (value, queue with back-pressure, topic): JS values handed over by identity, so the store is JS (DECISIONS C5).
const { NoeticErrorImpl } = require('./errors.cjs');
const { clearLongTimeout, setLongTimeout } = require('./timers.cjs');

const MAX_TOPIC_TIMEOUT = 300_000;
const DEFAULT_TIMEOUT = 30_000;

// A description only; as upstream's, the schema types the values and is not enforced.
function channel(name, opts = {}) {
  const built = { name, schema: opts.schema, mode: opts.mode, capacity: opts.capacity };
  if (opts.external) built.external = true;
  return built;
}

const cancelled = (signal) => new NoeticErrorImpl({ kind: 'cancelled', reason: typeof signal?.reason === 'string' ? signal.reason : undefined });
const timedOut = (name, timeout) => new NoeticErrorImpl({ kind: 'channel_timeout', channelName: name, timeout });

// True when `entry` was still in `list`, so that each waiter settles once.
function take(list, entry) {
  const at = list.indexOf(entry);
  if (at < 0) return false;
  list.splice(at, 1);
  return true;
}

class ChannelStore {
  constructor() {
    this._channels = new Map();
    this._closed = new Set();
  }

  // What upstream's store writes of itself (a Map and a Set, which JSON writes as empty objects).
  toJSON() {
    return { channels: {}, closedExecutions: {} };
  }

  // The first channel object seen under a name fixes its mode and capacity.
  _state(ch) {
    let state = this._channels.get(ch.name);
    if (!state) {
      state = { mode: ch.mode, hasValue: false, value: undefined, waiters: [], queue: [], capacity: ch.capacity ?? 1000, senders: [], subscribers: new Set(), wakes: new Set() };
      this._channels.set(ch.name, state);
    }
    return state;
  }

  // A one-shot callback on the next send to `ch`; returns the unsubscribe.
  subscribeWake(ch, callback) {
    const wakes = this._state(ch).wakes;
    wakes.add(callback);
    return () => wakes.delete(callback);
  }

  _fireWakes(state) {
    const wakes = state.wakes;
    state.wakes = new Set();
    for (const wake of wakes) wake();
  }

  send(ch, value, opts = {}) {
    const state = this._state(ch);
    let result = Promise.resolve();
    if (state.mode === 'value') {
      state.value = value;
      state.hasValue = true;
      for (const waiter of state.waiters.splice(0)) waiter.resolve(value);
    } else if (state.mode === 'queue') {
      const waiter = state.waiters.shift();
      if (waiter) waiter.resolve(value);
      else if (state.queue.length < state.capacity) state.queue.push(value);
      else result = this._park(ch.name, state, value, opts);
    } else {
      for (const subscriber of [...state.subscribers]) subscriber(value);
    }
    this._fireWakes(state);
    return result;
  }

  _park(name, state, value, { timeout = DEFAULT_TIMEOUT, signal } = {}) {
    if (signal?.aborted) return Promise.reject(cancelled(signal));
    return this._enqueue(state.senders, { value }, name, timeout, signal);
  }

  // Until `resolve`, `timeout` ms (0: no limit) or `signal`, whichever is first.
  _enqueue(list, entry, name, timeout, signal) {
    return new Promise((resolve, reject) => {
      let timer;
      const done = () => {
        clearLongTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => take(list, entry) && (done(), reject(cancelled(signal)));
      entry.resolve = (value) => (done(), resolve(value));
      list.push(entry);
      if (timeout > 0) timer = setLongTimeout(() => take(list, entry) && (done(), reject(timedOut(name, timeout))), timeout);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  _promote(state) {
    if (state.senders.length > 0 && state.queue.length < state.capacity) {
      const sender = state.senders.shift();
      state.queue.push(sender.value);
      sender.resolve();
    }
  }

  // Registered at call time, so a send right after counts; a topic waits at most 300 s even for timeout 0.
  async recv(ch, timeout = DEFAULT_TIMEOUT, signal) {
    if (signal?.aborted) throw cancelled(signal);
    const state = this._state(ch);
    if (state.mode === 'value') {
      if (state.hasValue) return state.value;
      return this._wait(ch.name, state, timeout, signal);
    }
    if (state.mode === 'queue') {
      if (state.queue.length > 0) {
        const head = state.queue.shift();
        this._promote(state);
        return head;
      }
      const sender = state.senders.shift();
      if (sender) {
        sender.resolve();
        return sender.value;
      }
      return this._wait(ch.name, state, timeout, signal);
    }
    let limit = timeout;
    if (!(limit > 0)) {
      console.warn(`[noetic] Channel '${ch.name}': topic recv with non-positive timeout, clamping to ${MAX_TOPIC_TIMEOUT}ms`);
      limit = MAX_TOPIC_TIMEOUT;
    }
    return new Promise((resolve, reject) => {
      const done = () => {
        clearLongTimeout(timer);
        state.subscribers.delete(deliver);
        signal?.removeEventListener('abort', onAbort);
      };
      const deliver = (value) => (done(), resolve(value));
      const onAbort = () => (done(), reject(cancelled(signal)));
      const timer = setLongTimeout(() => (done(), reject(timedOut(ch.name, limit))), limit);
      state.subscribers.add(deliver);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  _wait(name, state, timeout, signal) {
    return this._enqueue(state.waiters, {}, name, timeout, signal);
  }

  // Never waits: a topic has nothing to give outside a recv.
  tryRecv(ch) {
    const state = this._state(ch);
    if (state.mode === 'value') return state.hasValue ? state.value : null;
    if (state.mode === 'queue' && state.queue.length > 0) {
      const head = state.queue.shift();
      this._promote(state);
      return head;
    }
    return null;
  }

  // A sender outside any run: it never waits; a full queue drops its oldest value instead.
  sendExternal(ch, value) {
    const state = this._state(ch);
    if (state.mode === 'queue' && state.waiters.length === 0 && state.queue.length >= state.capacity) {
      console.warn(`[noetic] Channel '${ch.name}': queue at capacity (${state.capacity}), dropping oldest message (external sender).`);
      state.queue.shift();
      state.queue.push(value);
      this._fireWakes(state);
      return;
    }
    void this.send(ch, value);
  }

  getHandle(ch, executionId) {
    const store = this;
    return {
      get closed() {
        return store._closed.has(executionId);
      },
      channel: ch,
      send(value) {
        if (store._closed.has(executionId)) throw new NoeticErrorImpl({ kind: 'channel_closed', channelName: ch.name });
        store.sendExternal(ch, value);
      },
    };
  }

  closeExecution(executionId) {
    this._closed.add(executionId);
  }
}

module.exports = { channel, ChannelStore };
