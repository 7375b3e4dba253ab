'use strict';
// Memory builders, the description of a layer the native side registers, and what the built-in layers' JS faces
// share (js/builtin-layers.cjs).
const native = require('./native.cjs');
const { callNative } = require('./errors.cjs');
const { sketch, checkArgs } = require('./sketch.cjs');

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

function describeLayer(layer, keep) {
  if (typeof layer !== 'object' || layer === null) return { id: null };
  if (layer[NATIVE]) {
    const { timeouts, onInitError, recallMode, placement } = layer;
    return { native: layer[NATIVE], handle: keep(layer), recallMode, placement, timeouts: sketch(timeouts, [], 1), onInitError };
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
    // Sketched, so that the native check names what was given (a NaN, a function).
    budget: sketch(layer.budget, [], 1),
    hooks,
    timeouts: sketch(layer.timeouts, [], 1),
    onInitError: layer.onInitError,
    recallMode: layer.recallMode,
    placement: layer.placement,
    provides,
    handle: keep(layer),
  };
}

// A `memory` option's layers, checked natively (harness/api_checks.rs); `where` names the option in the error.
function layersOf(mem, where) {
  checkArgs('memoryOption', [where, mem], 2);
  return mem == null ? [] : Array.isArray(mem) ? mem : mem.layers;
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
