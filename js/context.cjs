'use strict';
// The Context a step function receives: live fields read natively, log items kept as JS objects (DECISIONS A3b).
const { callNative, describeValue, NoeticConfigError } = require('./errors.cjs');
const { extendedBy, gateOf, admit, isItemLike, isKnownBaseType } = require('./item-schemas.cjs');
const { NoopSpan, spanWithIds } = require('./observability.cjs');
const { checkArgs } = require('./sketch.cjs');
const { parseJson } = require('./json.cjs');

const UNSET = Symbol('unset');

function indexOf(key) {
  if (typeof key !== 'string' || key.length === 0) return -1;
  const first = key.charCodeAt(0);
  if (first < 48 || first > 57) return -1;
  const n = Number(key);
  return Number.isInteger(n) && String(n) === key ? n : -1;
}

const reject = () => false;

const AFTER_END = { stepCount: 0, tokens: { input: 0, output: 0, total: 0 }, cost: 0, elapsed: 0, lastStepMeta: null, lastLayerUsage: null, completed: false, completionValue: null };
const isGone = (e) => e?.code === 'InvalidArg' && /is not running$/.test(e?.message ?? '');

// A read-only prefix view, O(1) per append, so reading `items` after every append stays linear (upstream copies).
class PrefixTraps {
  constructor(length) {
    this.length = length;
  }

  get(target, key, receiver) {
    if (key === 'length') return this.length;
    const i = indexOf(key);
    if (i >= 0) return i < this.length ? target[i] : undefined;
    return Reflect.get(target, key, receiver);
  }

  has(target, key) {
    const i = indexOf(key);
    return i >= 0 ? i < this.length : Reflect.has(target, key);
  }

  ownKeys() {
    return [...Array.from({ length: this.length }, (_, i) => String(i)), 'length'];
  }

  getOwnPropertyDescriptor(target, key) {
    if (key === 'length') return { value: this.length, writable: true, enumerable: false, configurable: false };
    const i = indexOf(key);
    if (i >= 0) return i < this.length ? { value: target[i], writable: false, enumerable: true, configurable: true } : undefined;
    return Reflect.getOwnPropertyDescriptor(target, key);
  }
}
PrefixTraps.prototype.set = reject;
PrefixTraps.prototype.defineProperty = reject;
PrefixTraps.prototype.deleteProperty = reject;

function prefixView(backing, length) {
  return new Proxy(backing, new PrefixTraps(length));
}

const isPlainItem = (item) => typeof item === 'object' && item !== null && !Array.isArray(item) && typeof item.type === 'string' && item.type !== '';
// An item that can be held in JS until a run needs it: a plain object of a type the native check admits as is.
const isHoldable = (item) => isPlainItem(item) && isKnownBaseType(item.type);

// Past about a megabyte, UTF-8 encoded here crosses faster than a string read as UTF-16; below, encoding costs more.
const UTF8_BATCH_CHARS = 1 << 20;
const utf8 = new TextEncoder();
const sendBatch = (native, id, batch, checked, origin) =>
  batch.length < UTF8_BATCH_CHARS ? native.appendItems(id, batch, checked, origin) : native.appendItemsUtf8(id, utf8.encode(batch), checked, origin);

class ItemLogImpl {
  // What upstream's ItemLogImpl writes of itself.
  toJSON() {
    return { itemSchemas: this._owner.itemSchemas, _items: this.items, _frozenCache: null };
  }

  constructor(runtime, contextId, owner) {
    this._rt = runtime;
    this._id = contextId;
    this._owner = owner;
    this._gate = UNSET;
    this._objects = [];
    this._filled = 0;
    this._view = undefined;
    // Whether it has held items since it last sent them: where and how many the runtime says (DECISIONS L1).
    this._holding = false;
  }

  // Items the caller already holds keep their identity; `owned`: the array is already a copy.
  _adopt(items, owned = false) {
    if (this._objects.length === 0) this._objects = owned ? items : items.slice();
    else items.forEach((item, i) => (this._objects[i] = item));
    this._filled = items.length;
  }

  // Held like appends between runs (the caller told the runtime how many); `check` (a seeded history's, DECISIONS
  // I3) is put to them when they are sent.
  _hold(items, owned = false, check = undefined) {
    this._adopt(items, owned);
    this._holding = items.length > 0;
    this._check = check;
  }

  // `read` (JSON.parse for texts) runs only where JS holds no object yet.
  _place(from, items, read = undefined) {
    items.forEach((item, i) => {
      if (this._objects[from + i] === undefined) this._objects[from + i] = read ? read(item) : item;
    });
    while (this._objects[this._filled] !== undefined) this._filled++;
  }

  // The array itself moves, so what was read of the old log (a response, a view) reads the same objects.
  _takeHistory(other) {
    this._objects = other._objects;
    this._filled = other._filled;
    this._view = undefined;
    other._objects = [];
    other._filled = 0;
    other._view = undefined;
  }

  // Without asking the native side, which may have moved the log on to the next turn's context by now.
  _settled(length) {
    return this._filled >= length ? this._objects : this._all();
  }

  _receive(from, texts) {
    this._place(from, texts, parseJson);
  }

  _admit(items) {
    if (this._gate === UNSET) this._gate = gateOf(this._rt.harness.itemSchemas, this._owner.layers ?? []);
    return admit(this._gate, items);
  }

  // With no run in flight only JS changes the log, so appends are held and sent in one batch when needed (issue 8).
  _idle() {
    return this._rt.kept.has(this._id) && !this._rt.active.has(this._id);
  }

  _put(pos, item) {
    this._objects[pos] = item;
    if (pos === this._filled) this._filled = pos + 1;
  }

  _dropFrom(pos) {
    this._objects.length = pos;
    this._filled = Math.min(this._filled, pos);
  }

  _cut(length) {
    this._dropFrom(length);
    this._view = undefined;
  }

  // An item JSON cannot carry (a BigInt, a cycle) is taken out with those held after it, and the error names it.
  _flush() {
    if (!this._holding) return;
    this._holding = false;
    const [base, count] = this._rt.native.takeHeld(this._id);
    if (count === 0) return;
    const held = base === 0 && count === this._objects.length ? this._objects : this._objects.slice(base, base + count);
    const check = this._check;
    this._check = undefined;
    let checked = false;
    let origin;
    if (check !== undefined) {
      try {
        checked = check.admit(held);
      } catch (e) {
        // Refused whole, as a bad seed given to an eager check would have been.
        this._dropFrom(base);
        throw e;
      }
      origin = check.origin;
    }
    let batch;
    try {
      batch = JSON.stringify(held);
    } catch {
      batch = undefined;
    }
    if (batch !== undefined) {
      try {
        callNative(() => sendBatch(this._rt.native, this._id, batch, checked, origin));
      } catch (e) {
        // The native check refused one (an object whose toJSON is not an item): none of them entered.
        this._dropFrom(base);
        throw e;
      }
      return;
    }
    // Some item has no JSON form: find the first, and send the ones before it.
    const texts = [];
    let failure;
    for (const item of held) {
      try {
        texts.push(JSON.stringify(item));
      } catch (e) {
        failure = e;
        break;
      }
    }
    if (origin !== undefined) {
      // A seeded history is refused whole (DECISIONS I3).
      this._dropFrom(base);
      throw new TypeError(`${origin}: items[${texts.length}] has no JSON form (${failure?.message ?? failure}); the history was refused.`);
    }
    if (texts.length > 0) callNative(() => this._rt.native.appendItems(this._id, `[${texts.join(',')}]`, checked));
    if (failure !== undefined) {
      const at = base + texts.length;
      this._dropFrom(at);
      throw new TypeError(
        `ctx.itemLog.append: the item at position ${at} has no JSON form (${failure?.message ?? failure}); it and the ${held.length - texts.length - 1} appended after it were taken out of the log.`,
      );
    }
  }

  append(item) {
    if (this._idle() && isHoldable(item)) {
      this._put(this._rt.native.holdItems(this._id, 1), item);
      this._holding = true;
      return;
    }
    this._flush();
    const hint = 'Append items such as createMessage(text, role): plain objects whose "type" names the item, with JSON values.';
    if (!isItemLike(item)) {
      throw new NoeticConfigError({ code: 'INVALID_ITEM', message: `ctx.itemLog.append: ${describeValue(item)} is not an item (an object whose "type" is a non-empty string).`, hint });
    }
    const checked = this._admit([item]);
    let text;
    try {
      text = JSON.stringify(item);
    } catch (e) {
      throw new NoeticConfigError({ code: 'INVALID_ITEM', message: `ctx.itemLog.append: the item has no JSON form (${e?.message ?? e}).`, hint });
    }
    this._put(callNative(() => this._rt.native.appendItem(this._id, text, checked)), item);
  }

  // Positions past the log's length may hold items appended since; callers read up to a length they know.
  _all() {
    if (!this._idle()) this._flush();
    const length = this._rt.native.logLength(this._id);
    const objects = this._objects;
    if (this._filled < length) {
      // Texts of the runtime's items up to its log's end; the held ones past it are JS's own objects.
      const from = this._filled;
      const texts = this._rt.native.itemsJson(this._id, from, length);
      for (let i = 0; i < texts.length; i++) if (objects[from + i] === undefined) objects[from + i] = parseJson(texts[i]);
      this._filled = length;
    }
    this._length = length;
    return objects;
  }

  // No native call when JS already holds them (a session's history and turn input usually are JS's own objects).
  _upTo(length) {
    return !this._holding && this._filled >= length ? this._objects : this._all();
  }

  get items() {
    const objects = this._all();
    const length = this._length;
    if (this._view?.length !== length) this._view = prefixView(objects, length);
    return this._view;
  }
}

function tokenTraps(ctx) {
  return {
    set(tokens, key, value) {
      tokens[key] = value;
      if (key === 'input' || key === 'output') ctx._setField('tokens', tokens);
      return true;
    },
  };
}

// A context's own keys as user code sees them, in upstream's ContextImpl order; never `_` machinery (private upstream).
const CONTEXT_FIELDS = ['id', 'stepCount', 'tokens', 'cost', 'state', 'parent', 'depth', 'span', 'threadId', 'resourceId', 'itemLog', 'lastStepMeta', 'lastLayerUsage', 'harness', 'layers', 'unifiedTools', 'itemSchemas', 'cwdState', 'channelStore'];
const IS_FIELD = new Set(CONTEXT_FIELDS);
const isMachinery = (key) => typeof key === 'string' && key.charCodeAt(0) === 95; // '_'

// Identity is the face's everywhere: every part of the package holds the Proxy.
const FACE_TRAPS = {
  ownKeys(target) {
    const keys = CONTEXT_FIELDS.slice();
    for (const key of Reflect.ownKeys(target)) if (!IS_FIELD.has(key) && !isMachinery(key)) keys.push(key);
    return keys;
  },
  getOwnPropertyDescriptor(target, key) {
    if (IS_FIELD.has(key)) return { value: Reflect.get(target, key, target._face$), writable: true, enumerable: true, configurable: true };
    return isMachinery(key) ? undefined : Reflect.getOwnPropertyDescriptor(target, key);
  },
  // The package's own fields (`_...`) are read and written on the context itself, so their getters run on it too:
  // without these traps each went through the engine's slow path for a Proxy (R25). Other keys keep the face as
  // their receiver, so a user's own getter sees the object it was read from.
  get(target, key, receiver) {
    return Reflect.get(target, key, isMachinery(key) ? target : receiver);
  },
  set(target, key, value, receiver) {
    return Reflect.set(target, key, value, isMachinery(key) ? target : receiver);
  },
};

class ContextImpl {
  // Everything lazy, so a step that never touches its context costs no crossing; `new` gives the face (FACE_TRAPS).
  constructor(runtime, id) {
    this._rt = runtime;
    this.id = id;
    this._info = undefined;
    this._parent = undefined;
    this._state = UNSET;
    this._cwdState = UNSET;
    this.itemLog = new ItemLogImpl(runtime, id, this);
    this._memory = undefined;
    this._itemSchemas = undefined;
    // Set by `/internal/test`: what `harness` shows and which channel store the context uses.
    this._face = undefined;
    this._store = undefined;
    this._span = undefined;
    this._turnValue = undefined;
    // A test model's items, until the native side says where in the log they went (`modelItems`).
    this._modelReply = undefined;
    const face = new Proxy(this, FACE_TRAPS);
    this._face$ = face;
    return face;
  }

  get _static() {
    this._info ??= parseJson(this._rt.native.contextStatic(this.id));
    return this._info;
  }
  get threadId() {
    return this._static.threadId;
  }
  get resourceId() {
    return this._static.resourceId ?? undefined;
  }
  get depth() {
    return this._static.depth;
  }
  get parent() {
    if (this._parent === undefined) {
      const parent = this._static.parent;
      this._parent = parent ? this._rt.context(parent) : null;
    }
    return this._parent;
  }
  // Asked for when first read: a session turn's note gives the other fields, not these (see turnInput).
  get _layers() {
    if (this._static.layers === undefined) this._info = parseJson(this._rt.native.contextStatic(this.id));
    return this._info.layers;
  }

  get state() {
    if (this._state === UNSET) this._state = this.parent ? structuredClone(this.parent.state) : {};
    return this._state;
  }
  set state(value) {
    this._state = value;
  }

  get cwdState() {
    if (this._cwdState === UNSET) {
      const parentCwd = this.parent?.cwdState;
      this._cwdState = parentCwd ? { cwd: parentCwd.cwd, previousCwd: parentCwd.previousCwd } : this._rt.harness.rootCwdState;
    }
    return this._cwdState;
  }
  set cwdState(value) {
    this._cwdState = value;
  }

  // Code may run past its context's end (a race's loser checking `ctx.aborted`): then the last read value answers.
  _field(name) {
    let value;
    try {
      value = parseJson(this._rt.native.contextField(this.id, name));
    } catch (e) {
      if (!isGone(e)) throw e;
      if (name === 'aborted') return this._abortedWith !== undefined;
      if (name === 'abortReason') return this._abortedWith ?? null;
      return this._lastRead?.[name] ?? AFTER_END[name];
    }
    (this._lastRead ??= {})[name] = value;
    return value;
  }

  // A context built on a stand-in harness shows it, and so do the children its runs make.
  get harness() {
    if (this._face !== undefined) return this._face;
    return this._rt.inheritsFaces ? (this.parent?.harness ?? this._rt.harness) : this._rt.harness;
  }
  // Named by the context's ids, so hook spans recorded natively hang under it.
  get span() {
    if (this._span === undefined) {
      const { root, parent } = this._static;
      this._span = this._rt.tracing ? spanWithIds('noetic.context', { traceId: root, spanId: this.id, parentSpanId: parent ?? null }) : new NoopSpan();
    }
    return this._span;
  }
  get fs() {
    return this.harness.fs;
  }
  get shell() {
    return this.harness.shell;
  }
  get subprocess() {
    return this.harness.subprocess;
  }
  get layers() {
    return this._layers.length === 0 ? undefined : this._layers.map(({ handle }) => this._rt.handles.get(handle));
  }
  // Holds only what user code puts here: the LLM step's tools are kept natively.
  get unifiedTools() {
    return this._unifiedTools;
  }
  set unifiedTools(value) {
    this._unifiedTools = value;
  }
  get itemSchemas() {
    return (this._itemSchemas ??= extendedBy(this._rt.harness.itemSchemas, this.layers ?? []));
  }
  // The counters are writable (the public Context type keeps them read-only).
  _setField(name, value) {
    callNative(() => this._rt.native.setContextField(this.id, name, JSON.stringify(value)));
  }
  get tokens() {
    return new Proxy(this._field('tokens'), (this._tokenTraps ??= tokenTraps(this)));
  }
  set tokens(value) {
    this._setField('tokens', value);
  }
  get lastStepMeta() {
    return this._field('lastStepMeta') ?? null;
  }
  set lastStepMeta(value) {
    this._setField('lastStepMeta', value ?? null);
  }
  get lastLayerUsage() {
    return this._field('lastLayerUsage') ?? undefined;
  }
  get completionValue() {
    const ref = this._field('completionValue');
    return ref ? this._rt.fromRef(ref) : undefined;
  }
  get abortReason() {
    return this._field('abortReason') ?? undefined;
  }
  checkpoint() {
    return this._rt.harness.checkpoint(this);
  }

  complete(value) {
    this._rt.native.complete(this.id, JSON.stringify(this._rt.toRef(value)));
    this._rt.kick();
  }
  abort(reason) {
    checkArgs('abort', [reason], 1);
    this._rt.native.abort(this.id, reason);
    this._aborted(reason ?? 'context aborted');
    this._rt.kick();
  }

  // A model call made for this context outside the interpreter counts in its tokens and cost (upstream's trackUsage).
  _trackUsage(response) {
    const usage = response?.usage ?? {};
    const n = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
    this._rt.native.addUsage(this.id, n(usage.inputTokens), n(usage.outputTokens), n(usage.cachedTokens), n(response?.cost));
  }

  _aborted(reason) {
    this._abortedWith ??= reason;
    this._abort?.abort(reason);
  }

  get abortSignal() {
    return this._signal;
  }

  get channelStore() {
    return this._store === undefined ? this._rt.channels : (this._store ?? undefined);
  }

  get _signal() {
    if (!this._abort) {
      this._abort = new AbortController();
      if (this.aborted) this._abort.abort(this.abortReason ?? 'context aborted');
    }
    return this._abort.signal;
  }

  get _channels() {
    const store = this._store === undefined ? this._rt.channels : this._store;
    if (store === null) throw new Error('No channel store configured');
    return store;
  }
  recv(ch, opts) {
    try {
      return this._channels.recv(ch, opts?.timeout, this._signal);
    } catch (e) {
      return Promise.reject(e);
    }
  }
  send(ch, value) {
    try {
      return this._channels.send(ch, value, { signal: this._signal });
    } catch (e) {
      return Promise.reject(e);
    }
  }
  tryRecv(ch) {
    return this._channels.tryRecv(ch);
  }

  get memory() {
    if (this._memory) return this._memory;
    const memory = {};
    for (const { id, handle } of this._layers) {
      const layer = this._rt.handles.get(handle);
      const face = {};
      for (const [name, decl] of Object.entries(layer?.provides ?? {})) {
        if (decl?.kind === 'data') {
          Object.defineProperty(face, name, { enumerable: true, get: () => decl.read(this._rt.layerState(this.id, layer)) });
        } else if (decl?.kind === 'function') {
          face[name] = (args) => this._rt.callLayerFn(this, layer, name, args);
        }
      }
      memory[id] = face;
    }
    this._memory = Object.freeze(memory);
    return this._memory;
  }
}

// The fields read natively as they are, as a class's getters; the counters are writable, as on upstream's ContextImpl.
for (const [name, writable] of [['stepCount', true], ['cost', true], ['elapsed'], ['completed'], ['aborted']]) {
  const set = writable ? function (value) { this._setField(name, value); } : undefined;
  Object.defineProperty(ContextImpl.prototype, name, { get() { return this._field(name); }, set, configurable: true });
}

// `ctx` when it is a context of `runtime` (identity is JS's to know); anything else is refused in the words of
// `call` (harness/api_checks.rs).
function ownContext(runtime, ctx, call) {
  if (ctx instanceof ContextImpl && ctx._rt === runtime) return ctx;
  checkArgs('foreignContext', [call, ctx], 1);
}

module.exports = { ContextImpl, ItemLogImpl, isHoldable, ownContext };
