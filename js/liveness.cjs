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
// harness it drops stays in memory until it stops. So once the microtask queue has gone 10 ms without draining, a
// settlement waits for the event loop's next turn, and the run of microtasks ends there.
// Whether the queue has drained is told by a nextTick: one queued from a microtask runs only once the queue is empty
// (in Node and in Bun). A loop busy with many macrotasks (a thousand sessions whose model replies arrive by timer)
// drains between them, so no settlement of theirs waits: waiting for the loop's turn instead, as this did before,
// made a settlement lose a whole round of the other sessions' timers (DECISIONS S15, S18).
// The turn waited for is a zero-delay timer under Node (the immediates and Node's finalizers run on the way to it)
// and an immediate under Bun.
// Captured at load, so that a test's fake timers cannot stall it.
const { setImmediate: immediate, setTimeout: timeout } = require('node:timers');
const nextTurn = globalThis.Bun ? immediate : (turned) => timeout(turned, 0);
const nextTick = process.nextTick.bind(process);
const now = performance.now.bind(performance);
const STARVED_MS = 10;
const loop = {
  // A nextTick is queued and has not run: the microtask queue has not drained since `probedAt`.
  probing: false,
  probedAt: 0,
  // The loop's turn the waiting settlements wait for.
  tick: undefined,
  deferred: [],
  settle(resolve, value) {
    if (!this.probing) {
      this.probing = true;
      this.probedAt = now();
      nextTick(drained);
    } else if (now() - this.probedAt >= STARVED_MS) {
      this.deferred.push(() => resolve(value));
      // Ref'd (Bun would never run it otherwise): it runs at the loop's next turn, so it holds nothing open.
      this.tick ??= nextTurn(turned);
      return;
    }
    resolve(value);
  },
};

function drained() {
  loop.probing = false;
}

function turned() {
  loop.tick = undefined;
  const deferred = loop.deferred;
  loop.deferred = [];
  for (const resume of deferred) resume();
}

// Resolves `resolve` with `value` now, or after the event loop's next turn if it has gone without one (see above).
function settleSoon(resolve, value) {
  loop.settle(resolve, value);
}

module.exports = { hold, release, busy, settleSoon };
