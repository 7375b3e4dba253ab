'use strict';
// @noetic-tools/core/unstable: the budget and projection functions the runtime itself uses.
const native = require('./native.cjs');
const { callNative, describeValue, NoeticConfigError } = require('./errors.cjs');

// The native functions take numbers; anything else is named here, not in the binding's conversion terms.
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

function assembleView({ systemPromptItems, layerOutputItems, historyItems, policy }) {
  const text = (list) => list.map((item) => JSON.stringify(item));
  if (policy) {
    needNumber(policy.tokenBudget, 'assembleView: policy.tokenBudget', 'INVALID_PROJECTION_POLICY');
    needNumber(policy.responseReserve, 'assembleView: policy.responseReserve', 'INVALID_PROJECTION_POLICY');
    needNumber(policy.windowSize, 'assembleView: policy.windowSize', 'INVALID_PROJECTION_POLICY', true);
  }
  const kept = native.assembleViewNative(
    text(systemPromptItems),
    text(layerOutputItems),
    text(historyItems),
    policy ? { tokenBudget: policy.tokenBudget, responseReserve: policy.responseReserve, overflow: policy.overflow, windowSize: policy.windowSize } : undefined,
  );
  return [...systemPromptItems, ...kept.layers.map((i) => layerOutputItems[i]), ...kept.history.map((i) => historyItems[i])];
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

// Upstream's typed cast at framework boundaries: the value itself, typed as the caller says.
const frameworkCast = (value) => value;

module.exports = { allocateBudgets, assembleView, checkBudget, frameworkCast };
