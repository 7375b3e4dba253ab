'use strict';
// The two public error classes, and the conversion of errors the native side reports as values.
const native = require('./native.cjs');

// Both classes have upstream's own enumerable properties, in its order (what `Object.keys`, a spread, `JSON.stringify`
// and `console.log` show): the fields it declares, defined as soon as `super` returns, then `name`. So a config error
// always has its own `docsUrl`, undefined when none was given.
class NoeticConfigError extends Error {
  code;
  hint;
  docsUrl;

  constructor({ code, message, hint, docsUrl }) {
    super(message);
    this.code = code;
    this.hint = hint;
    this.docsUrl = docsUrl;
    this.name = 'NoeticConfigError';
  }
}

class NoeticErrorImpl extends Error {
  noeticError;

  constructor(noeticError, message) {
    super(message ?? describe(noeticError));
    this.noeticError = noeticError;
    this.name = 'NoeticError';
  }
}

// Upstream's message for each kind of NoeticError: the runtime's templates (crates/noetic-runtime/src/error/
// messages.rs), filled as a template literal would be, each field read with `?.`.
const MESSAGES = JSON.parse(native.noeticErrorMessages());
const TEMPLATES = new Map(Object.entries(MESSAGES.kinds));

function fill(parts, e) {
  const text = (part) => {
    if (typeof part === 'string') return part;
    const value = part.path.reduce((v, key) => v?.[key], e);
    return part.then ? fill(value ? part.then : part.else, e) : `${value}`;
  };
  return parts.map(text).join('');
}

const describe = (e) => fill(TEMPLATES.get(e.kind) ?? MESSAGES.unknown, e);

// A value as error messages show it, so that they name what the caller passed.
function describeValue(value) {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object' && value !== null) {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return name && name !== 'Object' ? `a ${name}` : 'an object';
  }
  if (typeof value === 'bigint') return `${value}n`;
  return String(value);
}

function isNoeticError(e) {
  if (e instanceof NoeticErrorImpl) return true;
  // As upstream: only an Error carries one (a plain object shaped like one is not).
  return e instanceof Error && typeof e.noeticError === 'object' && e.noeticError !== null && typeof e.noeticError.kind === 'string';
}

function isNoeticConfigError(e) {
  return e instanceof NoeticConfigError;
}

// The message of anything a user function threw. A thrown value may be unprintable (a `toString` or a `message`
// getter that throws, a null-prototype object, a Symbol); describing it must never throw in turn.
function messageOf(e) {
  try {
    if (e instanceof Error) {
      const { message } = e;
      if (typeof message === 'string') return message;
    }
    if (typeof e === 'string') return e;
    return String(e);
  } catch {
    try {
      return `a thrown ${Object.prototype.toString.call(e).slice(8, -1)} that cannot be printed`;
    } catch {
      return 'a thrown value that cannot be printed';
    }
  }
}

// `{kind: 'config'|'noetic'|'thrown', ...}` from the native side into the error to throw. `thrown` carries the
// handle of the very object a user function threw, so callers get it back unchanged.
function fromNative(error, lookup) {
  switch (error.kind) {
    case 'config':
      return new NoeticConfigError(error);
    case 'noetic':
      return new NoeticErrorImpl(revivePayload(error.payload, lookup), error.message);
    default: {
      const original = error.handle != null ? lookup(error.handle) : undefined;
      return original !== undefined ? original : new Error(error.message);
    }
  }
}

// A NoeticError payload from the native side with its JS values back: a `cause` becomes the very object thrown
// (when JS kept it) or an Error with its message, and a `$stepValue` (a fork path's value) the value it names.
function revivePayload(value, lookup) {
  if (Array.isArray(value)) return value.map((v) => revivePayload(v, lookup));
  if (value === null || typeof value !== 'object') return value;
  if ('$stepValue' in value) {
    const ref = value.$stepValue;
    return ref?.t === 'host' ? lookup(ref.v) : ref?.v;
  }
  const out = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = key === 'cause' && typeof v?.message === 'string' ? reviveCause(v, lookup) : revivePayload(v, lookup);
  }
  return out;
}

function reviveCause(cause, lookup) {
  const original = cause.handle != null ? lookup(cause.handle) : undefined;
  if (original !== undefined) return original;
  if (cause.noeticError) return new NoeticErrorImpl(revivePayload(cause.noeticError, lookup), cause.message);
  if (cause.config) return new NoeticConfigError(cause.config);
  return new Error(cause.message);
}

// Sync native functions report errors as `NOETIC_ERROR:{json}` messages.
function rethrowNative(e) {
  const text = e instanceof Error ? e.message : '';
  if (text.startsWith('NOETIC_ERROR:')) throw fromNative(JSON.parse(text.slice('NOETIC_ERROR:'.length)), () => undefined);
  throw e;
}

function callNative(fn, ...args) {
  try {
    return fn(...args);
  } catch (e) {
    rethrowNative(e);
  }
}

// What JS reports to the native side about an error a user function threw.
// Marks an error to come back to the caller as the very object, its payload never crossing as JSON (one that
// holds JS objects: an llm_parse_error's schema and zodError).
const KEEP_IDENTITY = Symbol('noetic.keepIdentity');

function withCauseKept(payload, keep) {
  const cause = payload?.cause;
  if (!(cause instanceof Error)) return payload;
  return { ...payload, cause: { message: messageOf(cause), handle: keep(cause) } };
}

function toFailure(e, keep) {
  const message = messageOf(e);
  if (e?.[KEEP_IDENTITY]) return { message, handle: keep(e) };
  try {
    if (e instanceof NoeticConfigError) {
      return { message, handle: keep(e), config: { code: String(e.code), message, hint: String(e.hint ?? '') } };
    }
    if (isNoeticError(e)) {
      // The payload crosses as JSON; one that cannot (a cycle, a BigInt) is reported as a plain throw. Its cause
      // crosses as a handle, which JS revives as the very object: a chain of causes (steps that run steps) stays
      // one level deep.
      const payload = withCauseKept(e.noeticError, keep);
      JSON.stringify(payload);
      return { message, handle: keep(e), noetic: { payload, message } };
    }
  } catch {
    // Getters that throw: fall through to a plain throw, which still hands back the very object.
  }
  return { message, handle: keep(e) };
}

module.exports = {
  KEEP_IDENTITY,
  NoeticConfigError,
  describeValue,
  NoeticErrorImpl,
  isNoeticError,
  isNoeticConfigError,
  fromNative,
  revivePayload,
  rethrowNative,
  callNative,
  toFailure,
  messageOf,
};
