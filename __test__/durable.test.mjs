// Runner helpers (issue 12): the one-shot signal, runnableLoop driving a real harness session, and the two-strike
// stall nudge.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  AgentHarness,
  DEFAULT_NUDGE_MESSAGE_TEXT,
  createDetachedSignal,
  createNudgeMessage,
  createStallNudgeHook,
  isNoeticConfigError,
  runnableLoop,
  step,
  tool,
} from '../js/index.mjs';
import { recordingModel } from './helpers.mjs';

const user = (id, text) => ({ id, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] });
const code = (expected) => (e) => isNoeticConfigError(e) && e.code === expected && e.hint.length > 0;

test('a detached signal settles once: later resolves and rejects are dropped', async () => {
  const first = createDetachedSignal();
  first.resolve(1);
  first.resolve(2);
  first.reject(new Error('late'));
  assert.equal(await first.done, 1);
  const second = createDetachedSignal();
  const boom = new Error('boom');
  second.reject(boom);
  second.resolve(3);
  await assert.rejects(second.done, (e) => e === boom);
});

test('a signal rejected before anyone awaits it is not an unhandled rejection', async () => {
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    createDetachedSignal().reject(new Error('nobody listens'));
    await new Promise((resolve) => setTimeout(resolve, 20));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  assert.deepEqual(unhandled, []);
});

test('runnableLoop runs the first turn of a real session; a terminal tool settles the signal and no nudge goes', async () => {
  const signal = createDetachedSignal();
  const finish = tool({ name: 'finish', description: 'Report the outcome.', input: z.object({ outcome: z.string() }), execute: async ({ outcome }) => (signal.resolve(outcome), 'ok') });
  const script = [{ toolCalls: [{ name: 'finish', arguments: { outcome: 'shipped' } }] }, { text: 'Done.' }];
  const harness = new AgentHarness({ name: 'runner', params: {}, tools: [finish], initialStep: step.llm({ id: 'work', model: 'm', tools: [finish] }), llm: { provider: 'scripted', script } });
  let stalls = 0;
  const afterFirstTurn = createStallNudgeHook({
    harness,
    threadId: 'T',
    signal,
    nudgeMessage: createNudgeMessage({ id: 'nudge-1' }),
    hasPendingExternal: () => false,
    onStall: async () => void stalls++,
    buildStalledOutcome: () => 'stalled',
  });
  const outcome = await runnableLoop({ harness, threadId: 'T', signal, initialMessage: 'ship it', afterFirstTurn });
  assert.equal(outcome, 'shipped');
  assert.equal(stalls, 0);
  const response = await harness.getAgentResponse({ threadId: 'T' });
  assert.ok(!response.items.some((item) => item.id === 'nudge-1'));
});

test('a first turn and a nudged turn that both end without an outcome escalate once and settle as stalled', async () => {
  const { model, requests } = recordingModel('thinking...');
  const harness = new AgentHarness({ name: 'runner', params: {}, initialStep: step.llm({ id: 'work', model: 'm' }), _testCallModel: model });
  const signal = createDetachedSignal();
  const events = [];
  const afterFirstTurn = createStallNudgeHook({
    harness,
    threadId: 'T',
    signal,
    nudgeMessage: createNudgeMessage({ id: 'nudge-1' }),
    hasPendingExternal: () => false,
    onStall: async () => void events.push(`stall after ${requests.length} turns`),
    buildStalledOutcome: () => ({ status: 'stalled' }),
  });
  const outcome = await runnableLoop({ harness, threadId: 'T', signal, initialMessage: 'go', afterFirstTurn });
  assert.deepEqual(outcome, { status: 'stalled' });
  assert.deepEqual(events, ['stall after 2 turns']);
  // The second turn was the nudge, with upstream's text, after the whole first turn.
  const nudge = requests[1].items.find((item) => item.id === 'nudge-1');
  assert.equal(nudge.role, 'developer');
  assert.equal(nudge.content[0].text, DEFAULT_NUDGE_MESSAGE_TEXT);
  assert.ok(requests[1].items.some((item) => item.content?.[0]?.text === 'thinking...'));
});

test('pending external input suppresses the nudge; prior items seed the session and only wait', async () => {
  const { model, requests } = recordingModel();
  const harness = new AgentHarness({ name: 'runner', params: {}, initialStep: step.llm({ id: 'work', model: 'm' }), _testCallModel: model });
  const signal = createDetachedSignal();
  const hook = createStallNudgeHook({ harness, threadId: 'T', signal, nudgeMessage: createNudgeMessage({ id: 'n', text: 'wake up' }), hasPendingExternal: () => true, onStall: async () => assert.fail('no stall'), buildStalledOutcome: () => 'x' });
  const waiting = runnableLoop({ harness, threadId: 'T', signal, initialMessage: 'ask me', afterFirstTurn: hook });
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(requests.length, 1, 'no nudge while the agent waits for the user');
  signal.resolve('answered');
  assert.equal(await waiting, 'answered');

  const resumed = createDetachedSignal();
  const seeded = runnableLoop({ harness, threadId: 'U', signal: resumed, priorItems: [user('p1', 'earlier')], initialMessage: 'ignored' });
  resumed.resolve('later');
  assert.equal(await seeded, 'later');
  assert.equal(requests.length, 1, 'a resume runs no turn of its own');
  await harness.execute('next', { threadId: 'U' });
  await harness.getAgentResponse({ threadId: 'U' });
  assert.ok(requests[1].items.some((item) => item.id === 'p1'), 'the prior items were seeded');
  assert.equal(createNudgeMessage({ id: 'n', text: 'custom' }).content[0].text, 'custom');
});

test('bad runner options are config errors', async () => {
  const signal = createDetachedSignal();
  await assert.rejects(runnableLoop({ harness: {}, threadId: 'T', signal }), code('INVALID_RUNNABLE_OPTIONS'));
  await assert.rejects(runnableLoop({ harness: new AgentHarness({ name: 'h', params: {} }), threadId: 7, signal }), code('INVALID_RUNNABLE_OPTIONS'));
  assert.throws(() => createStallNudgeHook({ harness: {}, signal }), code('INVALID_RUNNABLE_OPTIONS'));
  assert.throws(() => createNudgeMessage({}), code('INVALID_NUDGE_MESSAGE'));
});
