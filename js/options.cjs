'use strict';
// Checks of the options users pass to AgentHarness's methods (its constructor's are native: harness/options.rs):
// every option is applied or rejected with a NoeticConfigError that names what was passed.
const { NoeticConfigError, describeValue } = require('./errors.cjs');
const { noteThreadId } = require('./thread-ids.cjs');

function fail(code, message, hint) {
  throw new NoeticConfigError({ code, message, hint });
}

function checkObject(value, what, code, hint) {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(code, `${what} is ${describeValue(value)}; expected an object.`, hint);
  }
}

// threadId and resourceId key layer state; one that is not a string would be dropped.
function checkIds(options, where, code, hint) {
  for (const field of ['threadId', 'resourceId']) {
    const value = options[field];
    if (value != null && typeof value !== 'string') fail(code, `${where} ${field} is ${describeValue(value)}; expected a string.`, hint);
  }
  noteThreadId(options.threadId);
}

// createContext's options: undefined or null mean none, as upstream.
function contextOptionsOf(opts) {
  if (opts == null) return {};
  const hint = 'Pass { threadId?, resourceId?, memory?, items?, state?, parent?, cwdInit? } or nothing.';
  checkObject(opts, 'createContext(options)', 'INVALID_CONTEXT_OPTIONS', hint);
  checkIds(opts, 'createContext', 'INVALID_CONTEXT_OPTIONS', hint);
  if (opts.items != null && !Array.isArray(opts.items)) {
    fail('INVALID_CONTEXT_OPTIONS', `createContext items is ${describeValue(opts.items)}; expected an array of items.`, 'Pass `items: [createMessage(text, role), ...]`.');
  }
  return opts;
}

// run's third argument, when it is not a context of this harness.
function runOptionsOf(options, isContext) {
  const hint = 'Pass a context from this harness (harness.createContext()), { threadId?, resourceId?, memory? }, or nothing.';
  if (isContext) fail('INVALID_RUN_OPTIONS', 'harness.run was given a context made by another harness.', hint);
  if (options === undefined) return {};
  checkObject(options, "harness.run's third argument", 'INVALID_RUN_OPTIONS', hint);
  checkIds(options, 'harness.run', 'INVALID_RUN_OPTIONS', hint);
  return options;
}

// harness.callModel / ctx.callModel's request.
function checkModelRequest(request) {
  const hint = "Pass { model: 'provider/model', items: Item[], instructions?, params? }.";
  checkObject(request, 'callModel(request)', 'INVALID_MODEL_REQUEST', hint);
  if (request.items != null && !Array.isArray(request.items)) {
    fail('INVALID_MODEL_REQUEST', `callModel request.items is ${describeValue(request.items)}; expected an array of items.`, hint);
  }
}

const USAGE_COUNTS = ['inputTokens', 'outputTokens', 'cachedTokens'];

// A `_testCallModel` reply, checked where it arrives, so that a mistake names the field instead of failing in
// the runtime.
function checkModelResponse(response) {
  const bad = (what, expected) =>
    fail('INVALID_MODEL_RESPONSE', `_testCallModel returned ${what}; expected ${expected}.`, 'Return { items: Item[], usage?: { inputTokens, outputTokens, cachedTokens? }, cost?: number }.');
  if (typeof response !== 'object' || response === null) bad(describeValue(response), 'an object { items, usage?, cost? }');
  const { items, usage, cost } = response;
  if (!Array.isArray(items)) bad(`items ${describeValue(items)}`, 'an array of items');
  items.forEach((item, i) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) bad(`items[${i}] ${describeValue(item)}`, 'an item object');
  });
  if (usage != null) {
    if (typeof usage !== 'object') bad(`usage ${describeValue(usage)}`, 'an object');
    for (const field of USAGE_COUNTS) {
      if (usage[field] !== undefined && typeof usage[field] !== 'number') bad(`usage.${field} ${describeValue(usage[field])}`, 'a number');
    }
  }
  if (cost != null && typeof cost !== 'number') bad(`cost ${describeValue(cost)}`, 'a number');
  return response;
}

module.exports = { contextOptionsOf, runOptionsOf, checkModelResponse, checkModelRequest };
