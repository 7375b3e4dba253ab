'use strict';
// The layer lifecycle `ctx.harness` exposes (upstream's initLayers … executeRerender), run natively as a step's phase is.
const { ownContext } = require('./context.cjs');
const { checkArgs } = require('./sketch.cjs');
const { describeLayer, layersOf } = require('./memory.cjs');
const { nativeStoreOf } = require('./storage.cjs');

const ALLOW = Object.freeze({ action: 'allow' });

function itemsOf(items, phase) {
  checkArgs('layerCallItems', [phase, items], 1);
  return items;
}

const budgetsOf = (budgets) => (budgets instanceof Map ? Object.fromEntries(budgets) : (budgets ?? {}));
// Not an array: left to callLayers, which names the mistake.
const hasHook = (layers, hook) => !Array.isArray(layers) || layers.some((layer) => typeof layer?.hooks?.[hook] === 'function');

async function callLayers(harness, layers, ctx, call, items = []) {
  const context = ownContext(harness._runtime, ctx, call.phase);
  const runtime = harness._runtime;
  const checked = layersOf(layers, `ctx.harness.${call.phase}`);
  // An eventual recall's refresh outlives the call: its layers are kept as long as the harness (once per layer).
  const handles = call.phase === 'recallLayersEventual' ? { keep: (v) => runtime.keep(v), release() {} } : runtime.scope();
  try {
    const described = JSON.stringify(checked.map((layer) => describeLayer(layer, handles.keep)));
    const itemsText = JSON.stringify(items);
    return await harness._settle((run) => runtime.native.callLayers(run, context.id, JSON.stringify(call), described, itemsText));
  } finally {
    handles.release();
  }
}

// Another adapter would split the layers' durable state in two (DECISIONS M9).
function checkStorage(harness, storage) {
  const own = harness.config.storage;
  const native = storage == null ? undefined : nativeStoreOf(storage);
  if (!(storage == null || storage === own || (native !== undefined && native === nativeStoreOf(own)))) checkArgs('foreignStorage', [], 0);
}

const layerCalls = {
  async initLayers(layers, ctx, storage) {
    checkStorage(this, storage);
    await callLayers(this, layers, ctx, { phase: 'initLayers' });
  },
  recallLayers(layers, input, ctx) {
    return callLayers(this, layers, ctx, { phase: 'recallLayers', query: String(input ?? '') });
  },
  recallLayersAtomic(layers, input, ctx, budgets) {
    return callLayers(this, layers, ctx, { phase: 'recallLayersAtomic', query: String(input ?? ''), budgets: budgetsOf(budgets) });
  },
  recallLayersEventual(layers, input, ctx, budgets) {
    return callLayers(this, layers, ctx, { phase: 'recallLayersEventual', query: String(input ?? ''), budgets: budgetsOf(budgets) });
  },
  async storeLayers(layers, response, ctx) {
    await callLayers(this, layers, ctx, { phase: 'storeLayers', usage: response?.usage }, itemsOf(response?.items ?? [], 'storeLayers'));
  },
  // As upstream, the execution's layer state is dropped afterwards, every layer's.
  async disposeLayers(layers, ctx) {
    await callLayers(this, layers, ctx, { phase: 'disposeLayers' });
    this._runtime.layerStates.forget(ctx.id);
  },
  async beforeToolCall(layers, toolName, toolArgs, ctx) {
    if (!hasHook(layers, 'beforeToolCall')) return { ...ALLOW };
    return callLayers(this, layers, ctx, { phase: 'beforeToolCall', toolName: String(toolName), toolArgs: JSON.stringify(toolArgs ?? {}) });
  },
  async afterModelCall(layers, response, ctx) {
    if (!hasHook(layers, 'afterModelCall')) return { ...ALLOW };
    return callLayers(this, layers, ctx, { phase: 'afterModelCall', usage: response?.usage }, itemsOf(response?.items ?? [], 'afterModelCall'));
  },
  async projectHistory(layers, items, ctx) {
    if (!hasHook(layers, 'projectHistory')) return items;
    return callLayers(this, layers, ctx, { phase: 'projectHistory' }, itemsOf(items, 'projectHistory'));
  },
  async runAppendPipeline(layers, items, ctx) {
    if (!hasHook(layers, 'onItemAppend')) return { items, rerenderRequests: [] };
    return callLayers(this, layers, ctx, { phase: 'runAppendPipeline' }, itemsOf(items, 'runAppendPipeline'));
  },
  async executeRerender(requests, layers, ctx, budgets, query) {
    if (!Array.isArray(requests) || requests.length === 0) return [];
    return callLayers(this, layers, ctx, { phase: 'executeRerender', requests, budgets: budgetsOf(budgets), query: String(query ?? '') });
  },
};

module.exports = { layerCalls };
