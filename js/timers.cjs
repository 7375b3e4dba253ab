'use strict';
// Node and Bun fire a `setTimeout` of more than 2^31 - 1 ms (Infinity included) at once, so long waits are chained.
const { NoeticConfigError, describeValue } = require('./errors.cjs');

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

// `null` is none too, as upstream takes it.
function checkedTimeout(value, what) {
  if (value == null || (typeof value === 'number' && value >= 0)) return value;
  throw new NoeticConfigError({
    code: 'INVALID_TIMEOUT',
    message: `${what}: the timeout is ${describeValue(value)}; expected a number of milliseconds, 0 or more.`,
    hint: 'Pass a number of milliseconds, Infinity (or 0) to wait without a limit, or nothing for the default.',
  });
}

module.exports = { MAX_TIMER_MS, setLongTimeout, clearLongTimeout, checkedTimeout };
