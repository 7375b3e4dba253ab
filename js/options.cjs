'use strict';
// The options users pass to AgentHarness's methods, and a model request, checked natively (harness/options.rs,
// harness/api_checks.rs); a test model's reply is checked here, where a crossing would cost a session turn 5-25%.
const native = require('./native.cjs');
const { NoeticConfigError, describeValue, callNative } = require('./errors.cjs');
const { sketchText, checkArgs } = require('./sketch.cjs');
const { noteThreadId } = require('./thread-ids.cjs');

// createContext's options (undefined or null mean none, as upstream) and run's third argument, checked natively
// (harness/options.rs); their thread ids are noted as given.
function callOptionsOf(call, options) {
  if (options !== undefined) callNative(() => native.checkCallOptions(call, sketchText(options, [], 1)));
  noteThreadId(options?.threadId);
  return options ?? {};
}

const contextOptionsOf = (opts) => callOptionsOf('createContext', opts);

// run's third argument, when it is not a context of this harness.
function runOptionsOf(options, isContext) {
  if (isContext) checkArgs('foreignContext', ['run', options], 1);
  return callOptionsOf('run', options);
}

// harness.callModel / ctx.callModel's request.
const checkModelRequest = (request) => checkArgs('callModel', [request]);

const USAGE_COUNTS = ['inputTokens', 'outputTokens', 'cachedTokens'];

// A `_testCallModel` reply, checked where it arrives, so that a mistake names the field instead of failing in
// the runtime.
function checkModelResponse(response) {
  const bad = (what, expected) => {
    const hint = 'Return { items: Item[], usage?: { inputTokens, outputTokens, cachedTokens? }, cost?: number }.';
    throw new NoeticConfigError({ code: 'INVALID_MODEL_RESPONSE', message: `_testCallModel returned ${what}; expected ${expected}.`, hint });
  };
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
