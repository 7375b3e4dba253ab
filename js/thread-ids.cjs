'use strict';
// Thread ids as given: a lone surrogate reaches the UTF-8 runtime as U+FFFD (DECISIONS B1). Only ill-formed ids are kept.
const MOST = 10_000;
const given = new Map();

function noteThreadId(id) {
  if (typeof id !== 'string' || id.isWellFormed()) return;
  const native = id.toWellFormed();
  given.delete(native);
  given.set(native, id);
  if (given.size > MOST) given.delete(given.keys().next().value);
}

const givenThreadId = (id) => given.get(id) ?? id;

// The text itself when no thread id was ever ill-formed.
function withGivenThreadIds(text) {
  if (given.size === 0) return text;
  return JSON.stringify(JSON.parse(text, (key, value) => (key === 'threadId' && typeof value === 'string' ? givenThreadId(value) : value)));
}

module.exports = { noteThreadId, withGivenThreadIds };
