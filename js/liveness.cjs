'use strict';
// What keeps Node alive for the native side, and what does not.
//
// The dispatcher is weak, so by itself a run would let Node exit while Rust still works (an HTTP call in flight).
// A ref'd timer stands for Rust's own work: it is held from a run's start to its end, and let go while the run waits
// on JS (a hook, a step function). Then only the user's own pending work (timers, sockets) keeps Node alive, exactly
// as it would in plain JS: a hook that never settles lets Node exit instead of hanging it.

let held = 0;
let timer;

function hold() {
  if (held++ === 0) (timer ??= setInterval(() => {}, 0x7fffffff)).ref();
}

function release() {
  if (--held === 0) timer.unref();
}

// Harnesses with runs in flight. The dispatcher reaches a harness only through a weak reference (so an unused harness can
// be collected), which means one that is awaited but no longer referenced must be kept here until its runs end.
const busy = new Set();

// Node frees a native object (a dropped harness with its sessions' history) in a finalizer it runs only between
// macrotasks. Our promises settle in microtasks, so a program awaiting turn after turn never gives it one, and every
// harness it drops stays in memory until it stops. So once the event loop has not turned for a while, a settlement
// waits for the next turn.
// Under Node that turn is a zero-delay timer, not an immediate. Under load, each expired timer (a model's reply)
// runs a session's whole turn in microtasks, and Node runs every expired timer before it reaches the immediates, so a
// settlement that waited for an immediate lost a whole round of the other sessions (DECISIONS S15). A timer waits its
// turn among theirs, and the immediates (with the finalizers) still run on the way to it. Bun's loop is the other
// way round: there an immediate keeps the sessions' order and a timer lost them a round.
// Captured at load, so that a test's fake timers cannot stall it.
const { setImmediate: immediate, setTimeout: timeout } = require('node:timers');
const nextTurn = globalThis.Bun ? immediate : (turned) => timeout(turned, 0);
const now = performance.now.bind(performance);
const STARVED_MS = 10;
const loop = {
  tick: undefined,
  turnedAt: 0,
  deferred: [],
  settle(resolve, value) {
    if (this.tick === undefined) {
      // No tick pending: the last one ran, so the loop has turned since it was scheduled.
      this.turnedAt = now();
      // Ref'd (Bun would never run it otherwise): it runs at the loop's next turn, so it holds nothing open.
      this.tick = nextTurn(() => this.turned());
    } else if (now() - this.turnedAt >= STARVED_MS) {
      this.deferred.push(() => resolve(value));
      return;
    }
    resolve(value);
  },
  turned() {
    this.tick = undefined;
    const deferred = this.deferred;
    this.deferred = [];
    for (const resume of deferred) resume();
  },
};

// Resolves `resolve` with `value` now, or after the event loop's next turn if it has gone without one (see above).
function settleSoon(resolve, value) {
  loop.settle(resolve, value);
}

module.exports = { hold, release, busy, settleSoon };
