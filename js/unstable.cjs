'use strict';
// @noetic-tools/core/unstable: the budget and projection functions the runtime itself uses.
const native = require('./native.cjs');
const { callNative } = require('./errors.cjs');

function budgetOf(budget) {
  if (typeof budget === 'number') return { kind: 'number', value: budget };
  if (typeof budget === 'object' && budget !== null) return { kind: 'range', min: budget.min, max: budget.max };
  return { kind: 'auto' };
}

function allocateBudgets({ layers, totalBudget, systemPromptTokens, responseReserve }) {
  const out = callNative(() =>
    native.allocateBudgetsNative(layers.map((l) => l.id), layers.map((l) => budgetOf(l.budget)), totalBudget, systemPromptTokens, responseReserve),
  );
  return { allocations: layers.map((l, i) => ({ layerId: l.id, allocated: out.allocated[i] })), historyBudget: out.historyBudget };
}

function assembleView({ systemPromptItems, layerOutputItems, historyItems, policy }) {
  const text = (list) => list.map((item) => JSON.stringify(item));
  const kept = native.assembleViewNative(
    text(systemPromptItems),
    text(layerOutputItems),
    text(historyItems),
    policy ? { tokenBudget: policy.tokenBudget, responseReserve: policy.responseReserve, overflow: policy.overflow, windowSize: policy.windowSize } : undefined,
  );
  return [...systemPromptItems, ...kept.layers.map((i) => layerOutputItems[i]), ...kept.history.map((i) => historyItems[i])];
}

function checkBudget(ctx, limits) {
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

module.exports = { allocateBudgets, assembleView, checkBudget };
