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
// the first, are described without their fields. `seen`, the objects on the path here, is made only where a cycle
// could be met (below depth 1); a plain object or array described by its fields builds no tag.
function sketch(value, methods, depth = Infinity, instances = 1, seen = undefined) {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  const object = typeof value === 'object';
  const plain = object && (Array.isArray(value) || isPlain(value));
  if (plain && depth !== 0 && !seen?.has(value)) return fieldsOf(value, methods, depth, instances, seen);
  const tagged = { [TAG]: describeValue(value), type: typeof value };
  if (!object && typeof value !== 'function') return tagged;
  tagged.methods = plain ? [] : methods.filter((name) => typeof value[name] === 'function');
  if (plain || typeof value === 'function' || seen?.has(value) || depth === 0 || instances === 0) return tagged;
  tagged.fields = fieldsOf(value, methods, depth, instances - 1, seen);
  return tagged;
}

// `value`'s fields sketched one level down.
function fieldsOf(value, methods, depth, instances, seen) {
  const path = seen ?? (depth > 1 ? new Set() : undefined);
  path?.add(value);
  let fields;
  if (Array.isArray(value)) {
    fields = new Array(value.length);
    // A hole stays a hole (JSON writes null), as `map` would leave it.
    for (let i = 0; i < value.length; i++) if (i in value) fields[i] = sketch(value[i], methods, depth - 1, instances, path);
  } else {
    fields = {};
    for (const key of Object.keys(value)) {
      const field = value[key];
      if (field !== undefined) fields[key] = sketch(field, methods, depth - 1, instances, path);
    }
  }
  path?.delete(value);
  return fields;
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
