'use strict';
// Helpers for runners that drive a harness from outside a run: a one-shot signal, the session loop, a stall nudge.
const { checkArgs } = require('./sketch.cjs');

// Settled at most once; a rejection before anyone reads `done` is not unhandled, yet whoever awaits it still sees it.
function createDetachedSignal() {
  let settle = null;
  const done = new Promise((resolve, reject) => {
    settle = { resolve, reject };
  });
  done.catch(() => {});
  const once = (kind) => (value) => {
    if (settle === null) return;
    const fn = settle[kind];
    settle = null;
    fn(value);
  };
  return { done, resolve: once('resolve'), reject: once('reject') };
}

// Neither failing fails the wait.
function turnOrSignal(harness, threadId, signal) {
  const ignore = () => undefined;
  return Promise.race([harness.getAgentResponse({ threadId }).then(ignore, ignore), signal.done.then(ignore, ignore)]);
}

// With prior items the next turn comes from outside; the first turn is waited for, as execute only queues it.
async function runnableLoop(opts) {
  checkArgs('runnableLoop', [opts], 3);
  const { harness, threadId, signal, priorItems, initialMessage, afterFirstTurn } = opts;
  if (priorItems !== undefined && priorItems.length > 0) {
    harness.seedSessionHistory(threadId, priorItems);
    return signal.done;
  }
  if (initialMessage === undefined) return signal.done;
  let settled = false;
  const mark = () => {
    settled = true;
  };
  signal.done.then(mark, mark);
  await harness.execute(initialMessage, { threadId });
  await turnOrSignal(harness, threadId, signal);
  if (afterFirstTurn !== undefined) await afterFirstTurn({ signalSettled: () => settled });
  return signal.done;
}

// The developer message a stalled runner is sent; the model reads it, so it is upstream's wording exactly.
const DEFAULT_NUDGE_MESSAGE_TEXT =
  'You finished a turn without calling a terminal tool or AskUserQuestion. If you need user input or instruction to continue, call AskUserQuestion now. Otherwise call your terminal tool to complete this phase.';

function createNudgeMessage(opts) {
  checkArgs('createNudgeMessage', [opts?.id], 1);
  return {
    id: opts.id,
    type: 'message',
    role: 'developer',
    status: 'completed',
    content: [{ type: 'input_text', text: opts.text ?? DEFAULT_NUDGE_MESSAGE_TEXT }],
  };
}

// An `afterFirstTurn` hook: one nudge, and if that turn too ends without an outcome, the stalled outcome.
function createStallNudgeHook(opts) {
  checkArgs('createStallNudgeHook', [opts], 3);
  const { harness, threadId, signal, nudgeMessage } = opts;
  const waiting = (ctx) => ctx.signalSettled() || opts.hasPendingExternal();
  return async (ctx) => {
    if (waiting(ctx)) return;
    await harness.execute(nudgeMessage, { threadId });
    await turnOrSignal(harness, threadId, signal);
    if (waiting(ctx)) return;
    await opts.onStall();
    signal.resolve(opts.buildStalledOutcome());
  };
}

module.exports = { createDetachedSignal, runnableLoop, createStallNudgeHook, createNudgeMessage, DEFAULT_NUDGE_MESSAGE_TEXT };
