'use strict';
// What keeps Node alive for the native side: a ref'd timer stands for Rust's own work, let go while a run waits on JS,
// so that only the user's own pending work keeps Node alive then, as in plain JS (a hook that never settles exits).

let held = 0;
let timer;

function hold() {
  if (held++ === 0) (timer ??= setInterval(() => {}, 0x7fffffff)).ref();
}

function release() {
  if (--held === 0) timer.unref();
}

// The dispatcher holds harnesses weakly, so one awaited but no longer referenced is kept here until its runs end.
const busy = new Set();

// Captured at load, so that a test's fake timers cannot stall it.
const { setImmediate: immediate, setTimeout: timeout } = require('node:timers');
// Under Node a zero-delay timer: an immediate lost the other sessions a round (DECISIONS S15); Bun's loop is the reverse.
const nextTurn = globalThis.Bun ? immediate : (turned) => timeout(turned, 0);
const now = performance.now.bind(performance);
const STARVED_MS = 10;
// Native objects are freed only between macrotasks, so once the loop has starved a settlement waits for its next turn.
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

function settleSoon(resolve, value) {
  loop.settle(resolve, value);
}

module.exports = { hold, release, busy, settleSoon };
