'use strict';
// The hook phases whose hooks pass their results on, one call at a time: onItemAppend (the items), projectHistory
// (the history) and onReturn (the output). Each gets the batch, its calls, a way to call one hook and to apply its
// reply (hooks.cjs), and returns the replies in order.
const { messageOf } = require('./errors.cjs');

// onItemAppend: each hook gets what the one before passed on; once nothing is left the rest are not asked.
// A hook that fails, or answers without an `items` array, passes its input on unchanged.
async function appendPipeline(batch, calls, call, apply, log) {
  let current = batch.items.map((text) => JSON.parse(text));
  const replies = [];
  let last;
  for (const c of calls) {
    if (current.length === 0) {
      replies.push({ status: 'skipped' });
      continue;
    }
    const reply = apply(c, await call(c, { items: current }));
    if (reply.status === 'ok') {
      current = reply.items;
      // Only what the last hook passed on crosses (below); the others are counted, for their spans.
      reply.items = undefined;
      reply.itemCount = current.length;
      last = reply;
    }
    replies.push(reply);
  }
  // What the last hook passed on enters the log, so it is put to the context's item schemas. When they reject an
  // item, the native check (which admits no unknown type) fails the append with item_schema_mismatch.
  if (last) {
    last.items = current.map((item) => JSON.stringify(item));
    try {
      last.itemsChecked = log._admit(current);
    } catch {
      last.itemsChecked = false;
    }
  }
  return replies;
}

// projectHistory: each hook gets what the one before returned, the first the log as JS holds it. The last list is
// sent as the log positions of the log's own items and the JSON of the others, so the log is not sent back.
async function projectPipeline(batch, calls, call, apply, log) {
  // The log's items, or what an earlier (built-in) layer projected or ctx.harness.projectHistory was given: log
  // positions and the JSON of other items.
  let current = batch.history ? historyOf(batch.history, log) : log.items;
  const replies = [];
  let last;
  for (const c of calls) {
    const reply = apply(c, await call(c, { items: current }));
    if (reply.status === 'ok') {
      current = reply.history;
      last = reply;
    }
    reply.history = undefined;
    replies.push(reply);
  }
  if (last) {
    try {
      last.projected = projectedOf(current, log);
    } catch (e) {
      Object.assign(last, { status: 'threw', message: `projectHistory returned an item that cannot be sent: ${messageOf(e)}` });
    }
  }
  return replies;
}

function historyOf(entries, log) {
  const objects = entries.some((entry) => typeof entry === 'number') ? log._all() : [];
  return entries.map((entry) => (typeof entry === 'number' ? objects[entry] : JSON.parse(entry)));
}

// onReturn: each hook gets the output as the one before left it; the last change crosses back as a step value.
async function returnPipeline(batch, calls, call, apply, runtime) {
  let current = runtime.fromRef(batch.args.result);
  const replies = [];
  for (const c of calls) {
    const reply = apply(c, await call(c, { ...batch.args, result: current }));
    if ('piped' in reply) {
      current = reply.piped;
      reply.piped = undefined;
      reply.result = runtime.toRef(current);
    }
    replies.push(reply);
  }
  return replies;
}

// Each log's item positions, by item object, extended as the log grows (positions never move: it only appends), so
// a projection that starts mid-log is matched in time proportional to it, not to the log.
const positions = new WeakMap();

function positionOf(log, item) {
  let index = positions.get(log);
  if (!index || index.upTo > log._length) positions.set(log, (index = { map: new Map(), upTo: 0 }));
  const objects = log._objects;
  for (; index.upTo < log._length; index.upTo++) {
    const object = objects[index.upTo];
    if (object !== undefined) index.map.set(object, index.upTo);
  }
  const at = index.map.get(item);
  // A position whose object was replaced (a log rebuilt in place) is no match.
  return at !== undefined && objects[at] === item ? at : undefined;
}

// A projected history as the native side reads it: positions of the log's own items, JSON of the others.
function projectedOf(items, log) {
  const objects = log._objects;
  const length = log._length;
  let cursor = 0;
  return items.map((item, i) => {
    if (cursor >= length || objects[cursor] !== item) {
      const at = positionOf(log, item);
      if (at === undefined) {
        const text = JSON.stringify(item);
        if (typeof text !== 'string' || typeof item?.type !== 'string') throw new TypeError(`items[${i}] is not an item`);
        return text;
      }
      cursor = at;
    }
    return String(cursor++);
  });
}

module.exports = { appendPipeline, projectPipeline, returnPipeline };
