'use strict';
// Memory builders, the description of a layer the native side registers, and what the built-in layers' JS faces
// share (js/builtin-layers.cjs).
const native = require('./native.cjs');
const { callNative, describeValue, NoeticConfigError } = require('./errors.cjs');
const { sketch } = require('./sketch.cjs');

// Marks a built-in layer: the harness runs it in Rust, with no crossing; its `hooks` stay callable from JS.
const NATIVE = Symbol.for('noetic.nativeLayer');

const SteeringAction = Object.freeze({ Allow: 'allow', Deny: 'deny', Guide: 'guide' });
const LedgerEntryKind = Object.freeze({ ToolCall: 'tool_call', ModelTurn: 'model_turn', Custom: 'custom' });

const Slot = Object.freeze({
  REMINDER: 80,
  STEERING: 90,
  WORKING_MEMORY: 100,
  ENTITY: 150,
  OBSERVATIONS: 200,
  PROCEDURAL: 250,
  EPISODIC: 300,
  RAG: 350,
  SEMANTIC_RECALL: 400,
});

const memory = (layers) => ({ layers });
const layerData = ({ read }) => ({ kind: 'data', read });
const layerFn = ({ description, input, output, execute }) => ({ kind: 'function', description, input, output, execute });

let zod;
function z() {
  zod ??= require('zod');
  return zod.z ?? zod;
}

// A zod schema's JSON Schema, or any object where zod cannot write one.
function jsonSchemaOf(schema, options) {
  try {
    return z().toJSONSchema(schema, options);
  } catch {
    return { type: 'object' };
  }
}

// The JSON Schema models see for a tool's input (a step's tools and layer functions alike): draft 7 with zod's own
// `~`-keys left out, as upstream's OpenRouter SDK sends it.
function toolInputSchema(schema) {
  return withoutTildeKeys(jsonSchemaOf(schema, { target: 'draft-7' }));
}

function withoutTildeKeys(value) {
  if (Array.isArray(value)) return value.map(withoutTildeKeys);
  if (typeof value !== 'object' || value === null) return value;
  const kept = {};
  for (const key of Object.keys(value)) if (!key.startsWith('~')) kept[key] = withoutTildeKeys(value[key]);
  return kept;
}

// The JSON Schema a structured output is asked for with: zod's default (draft 2020-12), as upstream asks.
function outputJsonSchema(schema) {
  return jsonSchemaOf(schema);
}

// JSON cannot carry NaN or Infinity; the native side reads them back from these strings.
const num = (x) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : x);

function describeBudget(budget) {
  if (budget === undefined) return { kind: 'omitted' };
  if (budget === 'auto') return { kind: 'auto' };
  if (typeof budget === 'number') return { kind: 'number', value: num(budget) };
  if (typeof budget === 'object' && budget !== null) return { kind: 'range', min: num(budget.min), max: num(budget.max) };
  return { kind: 'invalid', what: `${typeof budget} ${JSON.stringify(budget)}` };
}

// `timeouts` for the native validation (D1): numbers as numbers, anything else described so that the error can
// name it; a value that is not an object arrives as that description. Unset entries (null too) keep the default.
function describeTimeouts(timeouts) {
  if (timeouts === undefined || timeouts === null) return undefined;
  if (typeof timeouts !== 'object' || Array.isArray(timeouts)) return describeValue(timeouts);
  const entries = Object.entries(timeouts).filter(([, ms]) => ms !== undefined && ms !== null);
  return Object.fromEntries(entries.map(([hook, ms]) => [hook, typeof ms === 'number' ? num(ms) : { invalid: describeValue(ms) }]));
}

function describeLayer(layer, keep) {
  if (typeof layer !== 'object' || layer === null) return { id: null };
  if (layer[NATIVE]) {
    const { timeouts, onInitError, recallMode, placement } = layer;
    return { native: layer[NATIVE], handle: keep(layer), recallMode, placement, timeouts: describeTimeouts(timeouts), onInitError };
  }
  const hooks = {};
  for (const [name, hook] of Object.entries(layer.hooks ?? {})) hooks[name] = typeof hook;
  const provides = [];
  for (const [name, decl] of Object.entries(layer.provides ?? {})) {
    if (decl?.kind === 'function') provides.push({ name, description: decl.description ?? '', inputSchema: toolInputSchema(decl.input) });
  }
  return {
    id: typeof layer.id === 'string' ? layer.id : null,
    slot: typeof layer.slot === 'number' ? num(layer.slot) : null,
    scope: typeof layer.scope === 'string' ? layer.scope : null,
    budget: describeBudget(layer.budget),
    hooks,
    timeouts: describeTimeouts(layer.timeouts),
    onInitError: layer.onInitError,
    recallMode: layer.recallMode,
    placement: layer.placement,
    provides,
    handle: keep(layer),
  };
}

function describeMemory(mem) {
  if (typeof mem === 'object' && typeof mem.id === 'string') return `a single layer object (id '${mem.id}')`;
  if (typeof mem === 'object' && 'layers' in mem) return `{ layers: ${describeValue(mem.layers)} }`;
  return describeValue(mem);
}

// A `memory` option, as upstream types it: an array of layers, or the `{layers}` that memory([...]) returns.
// `where` names the option in the error.
function layersOf(mem, where) {
  if (mem === undefined || mem === null) return [];
  if (Array.isArray(mem)) return mem;
  if (Array.isArray(mem?.layers)) return mem.layers;
  throw new NoeticConfigError({
    code: 'INVALID_MEMORY_CONFIG',
    message: `${where}: memory is ${describeMemory(mem)}; expected an array of memory layers.`,
    hint: 'Pass `memory: [layer]` or `memory: memory([layer])`.',
  });
}

// Registration-time validation (DECISIONS D1), decided by the runtime.
function validateLayers(layers, where) {
  const descriptions = layersOf(layers, where).map((layer) => describeLayer(layer, () => 0));
  callNative(native.validateLayers, JSON.stringify(descriptions));
}

// A step of a built-in layer's hook, run natively with the face's settings; params it cannot take (a function in an
// item, say) are named.
function builtinHook(kind, name, params, settings, schema) {
  try {
    return callNative(native.builtinHook, kind, name, params, settings, schema);
  } catch (e) {
    if (e?.code === 'InvalidArg') callNative(() => native.checkHookParams(kind, name, sketch(params, [], Infinity, Infinity)));
    throw e;
  }
}

module.exports = {
  NATIVE,
  Slot,
  SteeringAction,
  LedgerEntryKind,
  memory,
  layerData,
  layerFn,
  z,
  builtinHook,
  describeLayer,
  validateLayers,
  layersOf,
  num,
  toolInputSchema,
  outputJsonSchema,
};
