// Model answers under load (DECISIONS S27): while several runs are active, answers that models give from separate
// timer or I/O callbacks reach the native side together, at the event loop's check phase, not one crossing each;
// every session still gets its own answer, and a model's failure its own error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, step } from '../js/index.mjs';
import { slow } from './helpers.mjs';

const SESSIONS = 8;

function answer(text) {
  return { items: [{ id: `m-${text}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }], usage: { inputTokens: 1, outputTokens: 1 } };
}

// Counts what crosses to the native side through the two reply methods, from `since()` on: calls and answers.
function countReplies(harness) {
  const native = harness._runtime.native;
  const calls = [];
  const reply = native.reply;
  const replyMany = native.replyMany;
  native.reply = function (id, ok, text) {
    calls.push(1);
    return reply.call(this, id, ok, text);
  };
  native.replyMany = function (ids, oks, texts) {
    calls.push(ids.length);
    return replyMany.call(this, ids, oks, texts);
  };
  let from = 0;
  return {
    since: () => {
      from = calls.length;
    },
    crossings: () => calls.slice(from),
  };
}

test('model answers given from separate timer callbacks cross together while many sessions run, each to its own session', async () => {
  const waiting = [];
  let allCalled;
  const called = new Promise((resolve) => {
    allCalled = resolve;
  });
  const harness = new AgentHarness({
    name: 'gathered',
    params: {},
    initialStep: step.llm({ id: 'chat', model: 'test/model' }),
    _testCallModel: (request) =>
      new Promise((resolve, reject) => {
        const said = JSON.stringify(request.items).match(/session \d+/)[0];
        waiting.push({ said, resolve, reject });
        if (waiting.length === SESSIONS) allCalled();
      }),
  });
  const replies = countReplies(harness);
  for (let s = 0; s < SESSIONS; s++) await harness.execute(`session ${s}`, { threadId: `t${s}` });
  await called;
  replies.since();
  // One timer per call, all set in this tick with one delay: Node runs them in one timers phase, with the microtasks
  // after each callback in between.
  for (const call of waiting) {
    setTimeout(() => {
      if (call.said === 'session 3') call.reject(new Error('the model for session 3 is down'));
      else call.resolve(answer(`answer to ${call.said}`));
    }, 5);
  }
  const outcomes = await Promise.allSettled(Array.from({ length: SESSIONS }, (_, s) => harness.getAgentResponse({ threadId: `t${s}` })));
  for (let s = 0; s < SESSIONS; s++) {
    if (s === 3) {
      assert.equal(outcomes[s].status, 'rejected');
      assert.match(String(outcomes[s].reason?.message), /the model for session 3 is down/);
    } else {
      assert.equal(outcomes[s].status, 'fulfilled', String(outcomes[s].reason));
      assert.equal(outcomes[s].value.text, `answer to session ${s}`);
    }
  }
  const crossings = replies.crossings();
  assert.equal(
    crossings.reduce((a, b) => a + b, 0),
    SESSIONS,
    'every model answer crossed once',
  );
  assert.ok(crossings.length <= 2, `${SESSIONS} answers from ${SESSIONS} timer callbacks crossed in ${crossings.length} calls`);
});

test("fake timers that never run an immediate do not hold back the gathered model answers", { timeout: slow(60_000) }, async () => {
  const realImmediate = globalThis.setImmediate;
  // A test framework's fake timers: immediates are queued and never run unless the test advances them.
  globalThis.setImmediate = () => ({ ref() {}, unref() {}, hasRef: () => false });
  try {
    const harness = new AgentHarness({
      name: 'faked',
      params: {},
      initialStep: step.llm({ id: 'chat', model: 'test/model' }),
      _testCallModel: (request) => new Promise((resolve) => setTimeout(() => resolve(answer(JSON.stringify(request.items).match(/session \d+/)[0])), 2)),
    });
    for (let s = 0; s < SESSIONS; s++) await harness.execute(`session ${s}`, { threadId: `f${s}` });
    const texts = await Promise.all(Array.from({ length: SESSIONS }, (_, s) => harness.getAgentResponse({ threadId: `f${s}` }).then((r) => r.text)));
    assert.deepEqual(texts, Array.from({ length: SESSIONS }, (_, s) => `session ${s}`));
  } finally {
    globalThis.setImmediate = realImmediate;
  }
});
