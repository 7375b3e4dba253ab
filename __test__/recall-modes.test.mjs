import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, createInMemoryStorage, step, workingMemory } from '../js/index.mjs';
import { describeLayer } from '../js/memory.cjs';
import { recordingModel } from './helpers.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const ask = step.llm({ id: 'ask', model: 'm' });

// A thread layer that remembers every reply; its recall reports that state, slowly, and logs when it runs.
function notes(events, extra = {}) {
  return {
    id: 'notes',
    slot: 100,
    scope: 'thread',
    recallMode: 'eventual',
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { notes: ['seeded'] } }),
      recall: async ({ state }) => {
        events.push('recall:start');
        await sleep(150);
        events.push('recall:end');
        return `notes: ${state.notes.join(', ')}`;
      },
      store: async ({ state, newItems }) => ({ state: { notes: [...state.notes, newItems.at(-1).content[0].text] } }),
    },
    ...extra,
  };
}

// A recording model that also logs when it is called.
function loggingModel(events, reply) {
  const recording = recordingModel(reply);
  const model = (request) => {
    events.push('model');
    return recording.model(request);
  };
  return { model, requests: recording.requests };
}

const developerTexts = (request) => request.items.filter((item) => item.role === 'developer').map((item) => item.content[0].text);

test("an eventual layer is not waited for: turn 1 sees nothing of it, the next turn sees its refresh after store", async () => {
  const events = [];
  const { model, requests } = loggingModel(events, 'first reply');
  const harness = new AgentHarness({ name: 't', params: {}, memory: [notes(events)], _testCallModel: model });
  await harness.run(ask, 'hi', { threadId: 'T' });
  assert.deepEqual(developerTexts(requests[0]), []);
  // The model was called while the refresh after init was still recalling.
  assert.ok(events.indexOf('model') < events.indexOf('recall:end'), events.join(' '));
  await harness.run(ask, 'again', { threadId: 'T' });
  assert.deepEqual(developerTexts(requests[1]), ['notes: seeded, first reply']);
  assert.equal(harness.liveExecutions, 0);
});

test('forceAtomicRecall recalls an eventual layer before the model call: turn 1 sees it', async () => {
  const events = [];
  const { model, requests } = loggingModel(events);
  const harness = new AgentHarness({ name: 't', params: {}, memory: [notes(events)], forceAtomicRecall: true, _testCallModel: model });
  await harness.run(ask, 'hi', { threadId: 'T' });
  assert.deepEqual(developerTexts(requests[0]), ['notes: seeded']);
  // One recall, in the hot path, and none in the background.
  assert.deepEqual(events, ['recall:start', 'recall:end', 'model']);
  assert.equal(harness.config.forceAtomicRecall, true);
});

test('execution-scoped eventual layers leave nothing behind and their runs do not wait for refreshes', async () => {
  const events = [];
  const { model } = recordingModel();
  const layer = notes(events, { scope: 'execution' });
  const harness = new AgentHarness({ name: 't', params: {}, memory: [layer], _testCallModel: model });
  const started = Date.now();
  for (let i = 0; i < 20; i++) {
    await harness.run(ask, 'hi');
    assert.equal(harness.liveExecutions, 0);
  }
  // Each refresh takes 150 ms; twenty runs that waited for theirs would take at least 3 s.
  assert.ok(Date.now() - started < 1500, `${Date.now() - started} ms`);
});

test('a built-in layer can be made eventual, and the next turn sees the state its store wrote', async () => {
  const storage = createInMemoryStorage();
  const wm = { ...workingMemory(), recallMode: 'eventual' };
  assert.equal(describeLayer(wm, () => 1).recallMode, 'eventual');
  const requests = [];
  const model = async (request) => {
    requests.push(request);
    const n = requests.length;
    return {
      items: [
        { id: `fc${n}`, type: 'function_call', callId: `c${n}`, name: 'updateWorkingMemory', arguments: JSON.stringify({ turn: n }) },
        { id: `m${n}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] },
      ],
      usage: { inputTokens: 1, outputTokens: 1 },
    };
  };
  const harness = new AgentHarness({ name: 't', params: {}, storage, memory: [wm], _testCallModel: model });
  await harness.run(ask, 'one', { threadId: 'T' });
  await harness.run(ask, 'two', { threadId: 'T' });
  assert.match(developerTexts(requests[1]).join('\n'), /"turn": 1/);
  assert.equal(harness.liveExecutions, 0);
});

test('recalled items are kept in JS only for a JS model in the step that recalled them: not for a native model, not for background recalls', async () => {
  const itemsLayer = (recallMode) => ({
    id: `items-${recallMode}`, slot: 10, scope: 'thread', recallMode,
    hooks: { recall: async () => ({ items: [{ type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'kept?' }] }], tokenCount: 3 }) },
  });
  // A native (scripted) model: nothing is kept.
  const scripted = new AgentHarness({ name: 't', params: {}, memory: [itemsLayer('atomic')], llm: { provider: 'scripted', script: [{ text: 'a' }] } });
  await scripted.run(ask, 'hi', { threadId: 'T' });
  assert.equal(scripted._runtime.recalled.size, 0);
  assert.equal(scripted._runtime.recalled.values.length, 0, 'nothing was ever kept');
  // A JS model: the eventual layer's background recall keeps nothing; the atomic one's are let go after the step.
  const { model } = recordingModel();
  const js = new AgentHarness({ name: 't', params: {}, memory: [itemsLayer('eventual'), itemsLayer('atomic')], _testCallModel: model });
  let keeps = 0;
  const keep = js._runtime.keepRecalled.bind(js._runtime);
  js._runtime.keepRecalled = (items) => (keeps++, keep(items));
  const ctx = js.createContext({ threadId: 'T' });
  for (let i = 0; i < 3; i++) await js.run(ask, `turn ${i}`, ctx);
  await sleep(50);
  assert.equal(js._runtime.recalled.size, 0);
  assert.equal(keeps, 3, 'one keep a step, for the atomic layer only');
  // Each step let go of its key before the next kept one, so the one slot served all three.
  assert.equal(js._runtime.recalled.values.length, 1);
});
