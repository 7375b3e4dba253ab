'use strict';
// The session surface of AgentHarness (execute, responses, status, streams); queue, turns and history are native.
const { randomId } = require('./ids.cjs');
const { NoeticConfigError, callNative } = require('./errors.cjs');
const liveness = require('./liveness.cjs');
const { layersOf } = require('./memory.cjs');
const { noteThreadId } = require('./thread-ids.cjs');
const { checkArgs, sketch } = require('./sketch.cjs');
const { parseJson } = require('./json.cjs');

const DEFAULT_THREAD_ID = '__default__';

function fail(code, message, hint) {
  return new NoeticConfigError({ code, message, hint });
}

const isItem = (value) => typeof value === 'object' && value !== null && !Array.isArray(value) && typeof value.type === 'string';

// As upstream's runner: a string is one user message ('' is none).
const textItems = (text) => (text.length === 0 ? [] : [{ id: `user-${randomId()}`, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] }]);

function threadOf(scope, where) {
  const thread = scope?.threadId ?? DEFAULT_THREAD_ID;
  // Asked only of a thread that is no string: a read per turn stays one crossing (the runtime words the refusal).
  if (typeof thread !== 'string') checkArgs('sessionScope', [where, thread], 1);
  noteThreadId(thread);
  return thread;
}

// Unread `lastLayerUsage`s are dropped in one call per harness per collection (under Bun a call each cost more).
let unread = new Map();
const unreadUsages = new FinalizationRegistry(({ native, key }) => {
  if (unread.size === 0) queueMicrotask(dropUnread);
  const keys = unread.get(native);
  if (keys) keys.push(key);
  else unread.set(native, [key]);
});

function dropUnread() {
  const byHarness = unread;
  unread = new Map();
  for (const [native, keys] of byHarness) {
    try {
      native.dropLayerUsages(Uint32Array.from(keys));
    } catch {
      // Nothing to tell anyone: a usage that cannot be let go stays until its harness goes.
    }
  }
}

// A lazy field becomes a data property once read, as upstream's are; false on a frozen response (it keeps the accessor).
const own = (self, name, value) => Reflect.defineProperty(self, name, { value, writable: true, enumerable: true, configurable: true });
const readOnly = (name) => new TypeError(`Cannot assign to read only property '${name}' of object`);

// Upstream's HarnessResponse.
function toResponse(runtime, value) {
  // Copied out only when first read: most callers read only the text, and a copy costs O(history) a turn.
  let backing;
  let text = value.text;
  try {
    const ctx = runtime.context(value.contextId);
    if (value.textKept) text = ctx._turnValue;
    backing = ctx.itemLog._settled(value.logLen);
  } catch {
    // Its context is gone: the turn failed before the host could take its items.
  }
  const logLen = value.logLen;
  let items;
  const native = runtime.native;
  const key = value.usageKey;
  // It carries every recalled item, so it crosses only when first read (most never are).
  let taken = key === undefined;
  let usage = value.lastLayerUsage;
  const settle = (self, v) => {
    if (key !== undefined) unreadUsages.unregister(response);
    own(self, 'lastLayerUsage', v);
  };
  const response = {
    get items() {
      items ??= backing === undefined ? [] : backing.slice(0, logLen);
      backing = undefined;
      own(this, 'items', items);
      return items;
    },
    set items(v) {
      if (!own(this, 'items', v)) throw readOnly('items');
      backing = undefined;
      items = v;
    },
    usage: { inputTokens: value.usage.inputTokens, outputTokens: value.usage.outputTokens, cachedTokens: value.usage.cachedTokens },
    cost: value.cost,
    text,
    get lastLayerUsage() {
      if (!taken) {
        taken = true;
        const text = native.takeLayerUsage(key);
        usage = text == null ? undefined : parseJson(text);
      }
      settle(this, usage);
      return usage;
    },
    set lastLayerUsage(v) {
      if (Object.isFrozen(this)) throw readOnly('lastLayerUsage');
      if (key !== undefined && !taken) native.dropLayerUsage(key);
      taken = true;
      usage = v;
      settle(this, v);
    },
  };
  if (key !== undefined) unreadUsages.register(response, { native, key }, response);
  return response;
}

// True when the item schemas were asked.
function seedCheck(harness) {
  const origin = 'seedSessionHistory';
  const admit = (items) => {
    for (let i = 0; i < items.length; i++) {
      if (!isItem(items[i])) {
        throw fail('INVALID_SEED_ITEMS', `${origin}: items[${i}] is not an item (an object whose type is a string).`, 'Pass items such as createMessage(text, role).');
      }
    }
    return harness._admitItems(items, undefined, (i) => `${origin} items[${i}]`);
  };
  return { origin, admit };
}

// Upstream's durable-resume helper.
function seedFromItems(harness, threadId, items) {
  if (items.length === 0) return;
  harness.seedSessionHistory(threadId, items);
}

// A reader's batches: the event log from a cursor (`deltas`: only the text or reasoning deltas, picked natively).
function eventSource(native, thread, deltas) {
  let cursor = native.eventsOpen(thread);
  return {
    read: (waiter) => native.eventsRead(thread, cursor, waiter, deltas),
    take(text) {
      const batch = parseJson(text);
      cursor = batch.next;
      return batch.events;
    },
    close: () => native.eventsClose(thread),
  };
}

function itemSource(native, thread) {
  const reader = native.itemsOpen(thread);
  const items = new Map();
  return {
    read: (waiter) => native.itemsRead(thread, reader, waiter),
    take: (text) => parseJson(text).map((change) => snapshotAfter(items, change)),
    close: () => native.itemsClose(thread, reader),
  };
}

// Applies a change (items.rs) and yields a copy, so a caller that changes a snapshot changes nothing else.
function snapshotAfter(items, change) {
  let item = change.item ?? items.get(change.key);
  if (change.text !== undefined) {
    const content = item.content.slice();
    const last = content.length - 1;
    content[last] = { ...content[last], text: content[last].text + change.text };
    item = { ...item, content };
  } else if (change.arguments !== undefined) {
    item = { ...item, arguments: item.arguments + change.arguments };
  } else if (change.complete) {
    item = { ...item, isComplete: true };
  }
  items.set(change.key, item);
  return Array.isArray(item.content) ? { ...item, content: item.content.map((part) => ({ ...part })) } : { ...item };
}

// Holds nothing open: waiting keeps Node alive only as long as a turn that will produce the event does.
class EventReader {
  constructor(runtime, thread, reads) {
    this._runtime = runtime;
    this._source = reads === 'items' ? itemSource(runtime.native, thread) : eventSource(runtime.native, thread, reads);
    this._buffer = [];
    this._done = false;
    this._wake = undefined;
  }

  async next() {
    while (this._buffer.length === 0) {
      if (this._done) return { done: true, value: undefined };
      const text = await this._runtime.waitFor((id) => this._source.read(id), { hold: false, raw: true, onWait: (cancel) => (this._wake = cancel) });
      this._wake = undefined;
      if (text == null || this._done) continue;
      // One by one: a batch spread into push's arguments could outgrow the stack.
      for (const value of this._source.take(text)) this._buffer.push(value);
    }
    return { done: false, value: this._buffer.shift() };
  }

  async return(value) {
    if (!this._done) {
      this._done = true;
      this._source.close();
      this._wake?.();
    }
    return { done: true, value };
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}

// A reader per `[Symbol.asyncIterator]()`, so several readers each get every event.
function eventStream(harness, scope, reads) {
  const runtime = harness._runtime;
  const thread = threadOf(scope, 'stream');
  return { [Symbol.asyncIterator]: () => new EventReader(runtime, thread, reads) };
}


// AgentHarness's session methods (upstream's execute API), put on its prototype as they are (harness.cjs): `this` is
// the harness. One queue and one growing history per threadId.
class SessionMethods {
  // Resolves once the message is queued, as upstream. The runtime checks the call (session/given.rs) by `given`, what
  // the options are, and `input`, a non-string input described.
  execute(input, options) {
    if (options === undefined) options = {};
    try {
      const runtime = this._runtime;
      const thread = options?.threadId ?? DEFAULT_THREAD_ID;
      noteThreadId(thread);
      const text = typeof input === 'string';
      const items = text ? textItems(input) : Array.isArray(input) ? input : [input];
      const layers = options?.memory == null ? undefined : layersOf(options.memory, 'execute');
      const message = {
        id: options?.messageId ?? `msg-${randomId()}`,
        given: [options === null ? 'null' : typeof options, sketch(options?.threadId, []), typeof options?.messageId],
        input: text ? undefined : sketch(input, [], 2),
        items,
        checked: this._admitItems(items, layers, (i) => `execute input[${i}]`),
        mode: options?.deliveryMode,
        resourceId: options?.resourceId,
        memory: layers && this._describeMemory(layers),
        state: options?.state === undefined ? undefined : runtime.keepValue(options.state),
      };
      runtime.pendingInput(thread, message.id, items);
      let started;
      try {
        started = callNative(() => runtime.native.execute(JSON.stringify(message)));
      } catch (e) {
        runtime.takeInput(thread, [message.id]);
        throw e;
      }
      if (started) runtime.sessionStarted();
      runtime.kick();
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e);
    }
  }

  getAgentResponse(scope) {
    const runtime = this._runtime;
    const thread = threadOf(scope, 'getAgentResponse');
    // Settled on arrival: the next turn may move the log on right after, and a hook's error goes once turns drain.
    const settle = (result) => (result.ok ? { ok: true, response: toResponse(runtime, result.value) } : { ok: false, error: runtime.errorOf(result.error) });
    return runtime.waitFor((id) => runtime.native.sessionResponse(thread, id), { settle }).then((result) => {
      if (!result.ok) throw result.error;
      return result.response;
    });
  }

  getFullStream(scope) {
    return eventStream(this, scope);
  }

  getItemStream(scope) {
    return eventStream(this, scope, 'items');
  }

  getTextStream(scope) {
    return eventStream(this, scope, 'text');
  }

  getReasoningStream(scope) {
    return eventStream(this, scope, 'reasoning');
  }

  async abort(scope) {
    const runtime = this._runtime;
    const thread = threadOf(scope, 'abort');
    const ended = runtime.waitFor((id) => runtime.native.sessionAbort(thread, scope?.reason ?? 'aborted', id));
    runtime.kick();
    await ended;
  }

  getStatus(scope) {
    return parseJson(this._runtime.native.sessionStatus(threadOf(scope, 'getStatus')));
  }

  // The items the next turn's model would be sent, as far as memory decides: layer recalls before the history.
  async previewRequestItems(scope) {
    const runtime = this._runtime;
    const result = parseJson(await runtime.native.previewRequest(threadOf(scope, 'previewRequestItems')));
    if (!result.ok) throw runtime.errorOf(result.error);
    return result.value;
  }

  getQueueSize(scope) {
    return this._runtime.native.sessionQueueSize(threadOf(scope, 'getQueueSize'));
  }

  seedSessionHistory(threadId, items) {
    checkArgs('seedSessionHistory', [threadId, items], 1);
    noteThreadId(threadId);
    // A copy, checked when a turn first reads the history: a bad item fails that turn (DECISIONS I3).
    const runtime = this._runtime;
    const id = callNative(() => runtime.native.seedSession(threadId, items.length));
    runtime.context(id).itemLog._hold(items.slice(), true, seedCheck(this));
    // Held busy so an unreferenced this still stores it; a failed store is retried next turn: no unhandled rejection.
    runtime.beginRun();
    const storing = runtime.startRun((run) => runtime.native.sessionStoreSeed(threadId, run)).finally(() => runtime.endRun());
    const stored = storing.then((result) => {
      if (!result.ok) throw runtime.errorOf(result.error);
    });
    stored.catch(() => {});
    return stored;
  }
}

module.exports = { SessionMethods, seedFromItems };
