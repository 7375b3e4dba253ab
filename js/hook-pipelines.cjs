'use strict';
// A piped batch (`order: 'piped'`): each hook gets what the one before passed on; `pipe` names what is piped.
const { messageOf } = require('./errors.cjs');
const { parseJson } = require('./json.cjs');

const PIPES = {
  // Only the last list crosses, put to the item schemas: on a rejection the native check fails the append.
  items: {
    start: (batch) => batch.items.map((text) => parseJson(text)),
    args: (_batch, items) => ({ items }),
    taken(reply) {
      if (reply.status !== 'ok') return NOTHING;
      const items = reply.items;
      reply.items = undefined;
      reply.itemCount = items.length;
      return items;
    },
    finish(last, items, log) {
      last.items = items.map((item) => JSON.stringify(item));
      try {
        last.itemsChecked = log._admit(items);
      } catch {
        last.itemsChecked = false;
      }
    },
  },
  // The last list crosses as log positions of the log's own items, so the log is not sent back.
  history: {
    start: (batch, log) => (batch.history ? historyOf(batch.history, log) : log.items),
    args: (_batch, items) => ({ items }),
    taken(reply) {
      const history = reply.history;
      reply.history = undefined;
      return reply.status === 'ok' ? history : NOTHING;
    },
    finish(last, items, log) {
      try {
        last.projected = projectedOf(items, log);
      } catch (e) {
        Object.assign(last, { status: 'threw', message: `projectHistory returned an item that cannot be sent: ${messageOf(e)}` });
      }
    },
  },
  result: {
    start: (batch, _log, runtime) => runtime.fromRef(batch.args.result),
    args: (batch, result) => ({ ...batch.args, result }),
    taken(reply, runtime) {
      if (!('piped' in reply)) return NOTHING;
      const result = reply.piped;
      reply.piped = undefined;
      reply.result = runtime.toRef(result);
      return result;
    },
    finish() {},
  },
};
const NOTHING = Symbol('nothing passed on');

async function piped(batch, calls, call, apply, log, runtime) {
  const pipe = PIPES[batch.pipe];
  let current = pipe.start(batch, log, runtime);
  const replies = [];
  let last;
  for (const c of calls) {
    // Once nothing is left to pass on, the rest are not asked when the batch says so (onItemAppend's emptied list).
    if (batch.skipWhenEmpty && current.length === 0) {
      replies.push({ status: 'skipped' });
      continue;
    }
    const reply = apply(c, await call(c, pipe.args(batch, current)));
    const taken = pipe.taken(reply, runtime);
    if (taken !== NOTHING) {
      current = taken;
      last = reply;
    }
    replies.push(reply);
  }
  if (last) pipe.finish(last, current, log);
  return replies;
}

function historyOf(entries, log) {
  const objects = entries.some((entry) => typeof entry === 'number') ? log._all() : [];
  return entries.map((entry) => (typeof entry === 'number' ? objects[entry] : parseJson(entry)));
}

// Extended as the log grows (it only appends), so a projection matches in time proportional to it, not to the log.
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

module.exports = { piped };
