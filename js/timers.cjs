'use strict';
// Node and Bun fire a `setTimeout` of more than 2^31 - 1 ms (Infinity included) at once, so long waits are chained.
const MAX_TIMER_MS = 2 ** 31 - 1;

function setLongTimeout(fire, ms) {
  const timer = { id: undefined };
  if (ms === Infinity) return timer;
  const due = performance.now() + ms;
  const arm = () => {
    const left = due - performance.now();
    timer.id = left > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(fire, Math.max(left, 0));
  };
  arm();
  return timer;
}

function clearLongTimeout(timer) {
  if (timer) clearTimeout(timer.id);
}

module.exports = { MAX_TIMER_MS, setLongTimeout, clearLongTimeout };
