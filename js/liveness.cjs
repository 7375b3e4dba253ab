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

module.exports = { hold, release, busy };
