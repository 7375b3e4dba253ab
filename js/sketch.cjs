'use strict';
// A user's value described for the runtime's checks (crates/noetic-runtime/src/js_sketch.rs reads it): JSON where
// JSON can say it, a tagged description where it cannot. Nothing here decides whether a value is right.
const native = require('./native.cjs');
const { describeValue, callNative } = require('./errors.cjs');

const TAG = '$sketch';
const isPlain = (value) => {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
};

// `methods`: the method names the checks ask about. Objects `depth` levels down, and instances of classes below
// the first, are described without their fields.
function sketch(value, methods, depth = Infinity, instances = 1, seen = new Set()) {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  const tagged = { [TAG]: describeValue(value), type: typeof value };
  if (typeof value !== 'object' && typeof value !== 'function') return tagged;
  const plain = typeof value === 'object' && (Array.isArray(value) || isPlain(value));
  if (!plain) tagged.methods = methods.filter((name) => typeof value[name] === 'function');
  if (typeof value === 'function' || seen.has(value) || depth === 0 || (!plain && instances === 0)) {
    if (plain) tagged.methods = [];
    return tagged;
  }
  seen.add(value);
  const below = (v) => sketch(v, methods, depth - 1, plain ? instances : instances - 1, seen);
  let fields;
  if (Array.isArray(value)) fields = value.map(below);
  else {
    fields = {};
    for (const key of Object.keys(value)) if (value[key] !== undefined) fields[key] = below(value[key]);
  }
  seen.delete(value);
  if (plain) return fields;
  tagged.fields = fields;
  return tagged;
}

// Only `keys` of an options object; anything else whole, so that the check names it.
function sketchOptions(options, keys, methods) {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return sketch(options, methods);
  const picked = {};
  for (const key of keys) if (options[key] !== undefined) picked[key] = options[key];
  return sketch(picked, methods);
}

// A sketch as JSON text, for a call made often: napi converts an object several times slower than JSON crosses.
const sketchText = (value, methods, depth) => JSON.stringify(sketch(value, methods, depth));

// A public call's arguments, checked by the runtime (harness/api_checks.rs); `depth` bounds how far they are sketched.
const ARG_METHODS = native.harnessOptionNames().argMethods;
const checkArgs = (call, args, depth = 2) => callNative(() => native.checkArgs(call, sketchText(args, ARG_METHODS, depth)));

module.exports = { sketch, sketchOptions, sketchText, checkArgs };
