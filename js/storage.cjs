'use strict';
// The native stores as JS sees them: what JSON.stringify keeps, else refused naming the key (DECISIONS, Storage).
const native = require('./native.cjs');
const { NoeticConfigError, describeValue, messageOf, rethrowNative } = require('./errors.cjs');
const { parseJson } = require('./json.cjs');

const NATIVE_STORE = Symbol('noetic.nativeStore');
const AT_ONCE = Symbol('noetic.answersAtOnce');
const READ_NOW = Symbol('noetic.readNow');

const HINT = 'Storage keys are strings; values are JSON: plain objects, arrays, strings, finite numbers, booleans and null (Dates become ISO strings). Use delete(key) to remove a key.';

function checkKey(method, key) {
  if (typeof key === 'string') return key;
  const what = method === 'list' ? 'the prefix' : 'the key';
  throw new NoeticConfigError({ code: 'INVALID_STORAGE_KEY', message: `storage.${method}: ${what} is ${describeValue(key)}; expected a string.`, hint: HINT });
}

function jsonOf(key, value) {
  let text;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw unstorable(key, messageOf(e));
  }
  if (text === undefined) throw unstorable(key, `${value === undefined ? 'undefined' : typeof value} has no JSON form`);
  return text;
}

function unstorable(key, why) {
  return new NoeticConfigError({ code: 'INVALID_STORAGE_VALUE', message: `storage.set('${key}'): the value cannot be stored: ${why}.`, hint: HINT });
}

class NativeStore {
  constructor(inner) {
    Object.defineProperty(this, NATIVE_STORE, { value: inner });
    // The in-memory store answers at once: no hop to the runtime's thread and back.
    Object.defineProperty(this, AT_ONCE, { value: inner.answersAtOnce() });
    // Its reads, the most frequent call (every layer's init), through a plain function rather than a method.
    Object.defineProperty(this, READ_NOW, { value: this[AT_ONCE] ? inner.readerNow() : undefined });
  }

  // Async, so that a bad key rejects rather than throws, as any adapter's would.
  async get(key) {
    checkKey('get', key);
    const text = this[AT_ONCE] ? this[READ_NOW](key) : await this[NATIVE_STORE].get(key).catch(rethrowNative);
    return text == null ? null : parseJson(text);
  }

  async set(key, value) {
    const text = jsonOf(checkKey('set', key), value);
    try {
      if (this[AT_ONCE]) this[NATIVE_STORE].setNow(key, text);
      else await this[NATIVE_STORE].set(key, text);
    } catch (e) {
      // JSON the native side refuses (nested too deep): a value error like the ones above.
      if (e?.code === 'InvalidArg') throw unstorable(key, messageOf(e));
      rethrowNative(e);
    }
  }

  async delete(key) {
    checkKey('delete', key);
    if (this[AT_ONCE]) this[NATIVE_STORE].deleteNow(key);
    else await this[NATIVE_STORE].delete(key).catch(rethrowNative);
  }

  async list(prefix = '') {
    checkKey('list', prefix);
    return this[AT_ONCE] ? this[NATIVE_STORE].listNow(prefix) : this[NATIVE_STORE].list(prefix).catch(rethrowNative);
  }
}

// Only the PostgreSQL store has `close()`: the types promise only what runs.
class PostgresStore extends NativeStore {
  async close() {
    await this[NATIVE_STORE].close().catch(rethrowNative);
  }
}

// A native store of ours is used with no crossing.
const nativeStoreOf = (storage) => storage?.[NATIVE_STORE];

const createInMemoryStorage = () => new NativeStore(new native.NativeStorage());
const openSqliteStore = (path) => new NativeStore(native.NativeStorage.sqlite(path));
const openPostgresStore = (url, optionsJson) => new PostgresStore(native.NativeStorage.postgres(url, optionsJson));

// As the runtime lays storage out (`scoped_prefix`).
function layerPrefix(layerId, scopeKey) {
  return `layers/${layerId}/${scopeKey}/`;
}

// As a layer's hooks see theirs; `list` gives keys relative to `prefix`.
function scopedView(storage, prefix) {
  return {
    get: (key) => storage.get(prefix + key),
    set: (key, value) => storage.set(prefix + key, value),
    delete: (key) => storage.delete(prefix + key),
    list: async (keyPrefix) => {
      const keys = await storage.list(prefix + (keyPrefix ?? ''));
      return keys.map((key) => (key.startsWith(prefix) ? key.slice(prefix.length) : key));
    },
  };
}

module.exports = { nativeStoreOf, createInMemoryStorage, openSqliteStore, openPostgresStore, scopedView, layerPrefix };
