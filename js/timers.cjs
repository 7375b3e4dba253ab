'use strict';
// Timers for a caller's number of milliseconds. Node and Bun fire a `setTimeout` of more than 2^31 - 1 ms (about
// 24.8 days) at once, Infinity included, with only a TimeoutOverflowWarning: a long wait would end as it began.
const { NoeticConfigError, describeValue } = require('./errors.cjs');

const MAX_TIMER_MS = 2 ** 31 - 1;

// Calls `fire` once `ms` have passed, however many that is; Infinity never. `clearLongTimeout` cancels it.
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

// A timeout a caller gave: a number of milliseconds, 0 or more, Infinity included, or none (`undefined` or
// `null`, which upstream also takes for none). NaN, a negative number or anything else is a NoeticConfigError
// naming `what`.
function checkedTimeout(value, what) {
  if (value == null || (typeof value === 'number' && value >= 0)) return value;
  throw new NoeticConfigError({
    code: 'INVALID_TIMEOUT',
    message: `${what}: the timeout is ${describeValue(value)}; expected a number of milliseconds, 0 or more.`,
    hint: 'Pass a number of milliseconds, Infinity (or 0) to wait without a limit, or nothing for the default.',
  });
}

module.exports = { MAX_TIMER_MS, setLongTimeout, clearLongTimeout, checkedTimeout };
