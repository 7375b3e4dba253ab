'use strict';
// The options users pass to AgentHarness's methods, and a model request, checked natively (harness/options.rs,
// harness/api_checks.rs).
const native = require('./native.cjs');
const { callNative } = require('./errors.cjs');
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

module.exports = { contextOptionsOf, runOptionsOf, checkModelRequest };
