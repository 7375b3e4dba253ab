'use strict';
// Waiting for a hook's promise against its timeout, at as little cost per call as it can be done.
//
// Why this shape: every hook has a timeout, and a loaded harness calls hundreds of thousands of hooks a second.
// Racing each promise with a new Promise of its own (an executor, its resolving functions, three reactions) was the
// largest allocation of a hook call, about 740 bytes (DECISIONS S26). Here a waited-for hook costs one small record,
// linked into the list of pending hooks, and the one reaction that learns its outcome; one timer, armed for the
// earliest deadline, watches them all.

const { MAX_TIMER_MS } = require('./timers.cjs');

class HookTimeout extends Error {
  constructor(ms) {
    super(`Timeout after ${ms}ms`);
    this.ms = ms;
  }
}

// What a hook's `signal` reads: the AbortController is made only if the hook reads it.
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

// One hook being waited for: its promise or its deadline settles it, whichever comes first; the other is ignored
// (a hook that loses the race is not cancelled, but its `signal` aborts, and a late rejection is handled here, so it
// never becomes an unhandled one).
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

// The hooks with a deadline still pending, as a list linked through their records (added and removed in constant
// time, nothing left behind), and the timer for the earliest deadline. The timer holds Node open only while some
// hook is pending, as a hook's own timer would.
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

  // Expires the hooks whose deadline has passed, after arming for the next one: expiring one resumes its batch,
  // which may start (and add) the next hook at once.
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

// Calls `done(ok, value)` once `promise` settles, or `done(false, HookTimeout)` once the guard's timeout passes
// first (none when it is not above 0, or is Infinity, which arrives as null).
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
