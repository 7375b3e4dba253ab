'use strict';
// Thread ids as their callers wrote them. The runtime holds text as UTF-8, so a lone UTF-16 surrogate in a thread id
// reaches it as U+FFFD (DECISIONS B1); what JS shows of a thread (the inspector) names it as it was given. Only ids
// that are not well-formed are remembered, the newest MOST of them.
const MOST = 10_000;
const given = new Map();

// Called with every thread id JS hands the runtime.
function noteThreadId(id) {
  if (typeof id !== 'string' || id.isWellFormed()) return;
  const native = id.toWellFormed();
  given.delete(native);
  given.set(native, id);
  if (given.size > MOST) given.delete(given.keys().next().value);
}

// The id a thread was given as, from the runtime's spelling of it.
const givenThreadId = (id) => given.get(id) ?? id;

// A JSON text from the runtime with every `threadId` field as it was given: the text itself when no thread id was
// ever ill-formed.
function withGivenThreadIds(text) {
  if (given.size === 0) return text;
  return JSON.stringify(JSON.parse(text, (key, value) => (key === 'threadId' && typeof value === 'string' ? givenThreadId(value) : value)));
}

module.exports = { noteThreadId, withGivenThreadIds };
