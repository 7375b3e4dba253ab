'use strict';
// @noetic-tools/core/unstable: the budget and projection functions the runtime itself uses.
const native = require('./native.cjs');
const { callNative, describeValue, NoeticConfigError } = require('./errors.cjs');
const { estimateTokens } = require('./items.cjs');

// Named here, not in the binding's conversion terms.
function needNumber(value, what, code, optional = false) {
  if (typeof value === 'number' || (optional && value === undefined)) return;
  throw new NoeticConfigError({ code, message: `${what} is ${describeValue(value)}; expected a number.`, hint: 'Pass a number (Infinity is allowed).' });
}

function budgetOf(budget, id) {
  if (typeof budget === 'number') return { kind: 'number', value: budget };
  if (typeof budget === 'object' && budget !== null) {
    needNumber(budget.min, `allocateBudgets: layer '${id}' budget.min`, 'INVALID_LAYER_BUDGET', true);
    needNumber(budget.max, `allocateBudgets: layer '${id}' budget.max`, 'INVALID_LAYER_BUDGET', true);
    return { kind: 'range', min: budget.min, max: budget.max };
  }
  return { kind: 'auto' };
}

function allocateBudgets({ layers, totalBudget, systemPromptTokens, responseReserve }) {
  const inputs = { totalBudget, systemPromptTokens, responseReserve };
  for (const [name, value] of Object.entries(inputs)) needNumber(value, `allocateBudgets: ${name}`, 'INVALID_BUDGET_INPUT');
  const out = callNative(() =>
    native.allocateBudgetsNative(layers.map((l) => l.id), layers.map((l) => budgetOf(l.budget, l.id)), totalBudget, systemPromptTokens, responseReserve),
  );
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
  needNumber(policy.tokenBudget, 'assembleView: policy.tokenBudget', 'INVALID_PROJECTION_POLICY');
  needNumber(policy.responseReserve, 'assembleView: policy.responseReserve', 'INVALID_PROJECTION_POLICY');
  needNumber(policy.windowSize, 'assembleView: policy.windowSize', 'INVALID_PROJECTION_POLICY', true);
  const bound = Math.max(0, policy.tokenBudget - policy.responseReserve);
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
      { tokenBudget: policy.tokenBudget, responseReserve: policy.responseReserve, overflow: policy.overflow, windowSize: policy.windowSize },
    ),
  );
  return [...systemPromptItems, ...kept.layers.map((i) => layerOutputItems[i]), ...kept.history.map((i) => historyItems[first + i])];
}

function checkBudget(ctx, limits) {
  for (const name of ['maxCost', 'maxSteps', 'maxDuration']) needNumber(limits[name], `checkBudget: limits.${name}`, 'INVALID_BUDGET_INPUT', true);
  callNative(() =>
    native.checkBudgetNative({
      cost: ctx.cost,
      steps: ctx.stepCount,
      duration: ctx.elapsed,
      maxCost: limits.maxCost,
      maxSteps: limits.maxSteps,
      maxDuration: limits.maxDuration,
    }),
  );
}

// Upstream's typed cast at framework boundaries.
const frameworkCast = (value) => value;

const { retargetCwdForSpawn } = require('./cwd.cjs');
const { scopedView, layerPrefix } = require('./storage.cjs');
const { createLayerStateStore } = require('./layer-state.cjs');

// Keys are not escaped, as upstream's: a layer `a/b` in scope `c` and a layer `a` in scope `b/c` share a prefix.
function createScopedStorage(storage, layerId, scopeKey) {
  const methods = ['get', 'set', 'delete', 'list'];
  if (typeof storage !== 'object' || storage === null || methods.some((m) => typeof storage[m] !== 'function')) {
    throw new NoeticConfigError({ code: 'INVALID_STORAGE', message: `createScopedStorage: storage is ${describeValue(storage)}; expected a StorageAdapter.`, hint: 'Pass createInMemoryStorage(), createSqliteStorage(path) or an object with get, set, delete and list.' });
  }
  for (const [name, value] of [['layerId', layerId], ['scopeKey', scopeKey]]) {
    if (typeof value !== 'string') throw new NoeticConfigError({ code: 'INVALID_STORAGE', message: `createScopedStorage: ${name} is ${describeValue(value)}; expected a string.`, hint: 'Pass the layer id and the scope key (for example the thread id) as strings.' });
  }
  return scopedView(storage, layerPrefix(layerId, scopeKey));
}

module.exports = { allocateBudgets, assembleView, checkBudget, createLayerStateStore, createScopedStorage, frameworkCast, retargetCwdForSpawn };
