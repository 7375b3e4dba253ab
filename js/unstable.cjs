'use strict';
// @noetic-tools/core/unstable: the budget and projection functions the runtime itself uses.
const native = require('./native.cjs');
const { callNative } = require('./errors.cjs');
const { sketch, sketchText, checkArgs } = require('./sketch.cjs');
const { estimateTokens } = require('./items.cjs');

// The arguments are sketched: the runtime checks them (memory/unstable.rs) with the messages users see.
function allocateBudgets({ layers, totalBudget, systemPromptTokens, responseReserve }) {
  const out = callNative(() => native.allocateBudgetsNative(sketch({ layers, totalBudget, systemPromptTokens, responseReserve }, [], 5)));
  return { allocations: layers.map((l, i) => ({ layerId: l.id, allocated: out.allocated[i] })), historyBudget: out.historyBudget };
}

// Measured once per item object.
const measured = new WeakMap();
function costOf(item) {
  const cached = typeof item === 'object' && item !== null ? measured.get(item) : undefined;
  if (cached !== undefined) return cached;
  const cost = estimateTokens(JSON.stringify(item) ?? '');
  if (typeof item === 'object' && item !== null) measured.set(item, cost);
  return cost;
}

const LINK_CALL = 1;
const LINK_OUTPUT = 2;
const linkOf = (item) =>
  typeof item?.callId !== 'string' ? 0 : item.type === 'function_call' ? LINK_CALL : item.type === 'function_call_output' ? LINK_OUTPUT : 0;

// History is measured newest first only as far as could fit (tokenBudget - responseReserve), once per item (issue 8).
function assembleView({ systemPromptItems, layerOutputItems, historyItems, policy }) {
  if (!policy) return [...systemPromptItems, ...layerOutputItems, ...historyItems];
  // Numbers the runtime has not checked yet measure nothing: its call below refuses them.
  const bound = typeof policy.tokenBudget === 'number' && typeof policy.responseReserve === 'number' ? Math.max(0, policy.tokenBudget - policy.responseReserve) : 0;
  // Only sliding_window (the default) keeps to windowSize (D10).
  const sliding = policy.overflow !== 'truncate' && policy.overflow !== 'summarize';
  const window = sliding && policy.windowSize > 0 ? Math.min(policy.windowSize, historyItems.length) : historyItems.length;
  let first = historyItems.length;
  for (let used = 0; first > historyItems.length - window && used <= bound; ) used += costOf(historyItems[--first]);
  const suffix = historyItems.length - first;
  const costs = new Uint32Array(suffix);
  const kinds = new Uint8Array(suffix);
  const callIds = [];
  for (let i = 0; i < suffix; i++) {
    const item = historyItems[first + i];
    costs[i] = costOf(item);
    kinds[i] = linkOf(item);
    if (kinds[i]) callIds.push(item.callId);
  }
  const kept = callNative(() =>
    native.assembleViewCosts(
      Uint32Array.from(systemPromptItems, costOf),
      Uint32Array.from(layerOutputItems, costOf),
      costs,
      kinds,
      callIds.join('\0'),
      sketchText({ tokenBudget: policy.tokenBudget, responseReserve: policy.responseReserve, overflow: policy.overflow, windowSize: policy.windowSize }, []),
    ),
  );
  return [...systemPromptItems, ...kept.layers.map((i) => layerOutputItems[i]), ...kept.history.map((i) => historyItems[first + i])];
}

function checkBudget(ctx, limits) {
  const { maxCost, maxSteps, maxDuration } = limits;
  callNative(() => native.checkBudgetNative(sketch({ cost: ctx.cost, steps: ctx.stepCount, duration: ctx.elapsed, maxCost, maxSteps, maxDuration }, [])));
}

// Upstream's typed cast at framework boundaries.
const frameworkCast = (value) => value;

const { retargetCwdForSpawn } = require('./cwd.cjs');
const { scopedView, layerPrefix } = require('./storage.cjs');
const { createLayerStateStore } = require('./layer-state.cjs');

// Keys are not escaped, as upstream's: a layer `a/b` in scope `c` and a layer `a` in scope `b/c` share a prefix.
function createScopedStorage(storage, layerId, scopeKey) {
  checkArgs('createScopedStorage', [storage, layerId, scopeKey]);
  return scopedView(storage, layerPrefix(layerId, scopeKey));
}

module.exports = { allocateBudgets, assembleView, checkBudget, createLayerStateStore, createScopedStorage, frameworkCast, retargetCwdForSpawn };
