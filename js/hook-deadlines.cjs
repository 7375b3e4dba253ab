'use strict';
// Hook timeouts at one small linked record per hook and one shared timer: a Promise.race per hook was the largest
// allocation of a hook call (DECISIONS S26).
const { MAX_TIMER_MS } = require('./timers.cjs');

class HookTimeout extends Error {
  constructor(ms) {
    super(`Timeout after ${ms}ms`);
    this.ms = ms;
  }
}

// The AbortController is made only if the hook reads `signal`.
class HookGuard {
  constructor(ms) {
    this.ms = ms;
    this.controller = undefined;
    this.expired = undefined;
  }

  get signal() {
    return this.expired ? AbortSignal.abort(this.expired) : (this.controller ??= new AbortController()).signal;
  }
}

// Settled once; a late rejection is still handled here, so it never becomes an unhandled one.
class Waiting {
  constructor(at, guard, done) {
    this.at = at;
    this.guard = guard;
    this.done = done;
    this.prev = undefined;
    this.next = undefined;
  }

  settle(ok, value) {
    const done = this.done;
    if (done === undefined) return;
    this.done = undefined;
    if (this.at < Infinity) pending.remove(this);
    done(ok, value);
  }

  expire() {
    if (this.done === undefined) return;
    const guard = this.guard;
    guard.expired = new HookTimeout(guard.ms);
    guard.controller?.abort(guard.expired);
    this.settle(false, guard.expired);
  }
}

// The timer holds Node open only while some hook is pending, as a hook's own timer would.
const pending = {
  first: undefined,
  last: undefined,
  count: 0,
  timer: undefined,
  at: Infinity,

  add(waiting) {
    waiting.prev = this.last;
    if (this.last) this.last.next = waiting;
    else this.first = waiting;
    this.last = waiting;
    if (this.count++ === 0) this.timer?.ref();
    if (waiting.at < this.at) this.arm(waiting.at);
  },

  remove(waiting) {
    if (waiting.prev) waiting.prev.next = waiting.next;
    else this.first = waiting.next;
    if (waiting.next) waiting.next.prev = waiting.prev;
    else this.last = waiting.prev;
    waiting.prev = waiting.next = undefined;
    if (--this.count === 0) this.timer?.unref();
  },

  arm(at) {
    clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(() => this.fire(), Math.min(Math.max(0, at - performance.now()), MAX_TIMER_MS));
  },

  // Arms for the next deadline first: expiring a hook resumes its batch, which may add the next hook at once.
  fire() {
    this.timer = undefined;
    this.at = Infinity;
    const now = performance.now();
    const expired = [];
    let next = Infinity;
    for (let waiting = this.first; waiting !== undefined; waiting = waiting.next) {
      if (waiting.at <= now) expired.push(waiting);
      else if (waiting.at < next) next = waiting.at;
    }
    if (next < Infinity) this.arm(next);
    for (const waiting of expired) waiting.expire();
  },
};

// No deadline when the timeout is not above 0, or is Infinity (which arrives as null).
function awaitHook(guard, promise, done) {
  const ms = guard.ms;
  const waiting = new Waiting(ms > 0 && ms < Infinity ? performance.now() + ms : Infinity, guard, done);
  if (waiting.at < Infinity) pending.add(waiting);
  Promise.resolve(promise).then(
    (value) => waiting.settle(true, value),
    (error) => waiting.settle(false, error),
  );
}

module.exports = { HookGuard, HookTimeout, awaitHook };
