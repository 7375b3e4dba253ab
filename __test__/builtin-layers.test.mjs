// The built-in layers' host functions: workingMemory's zod `schema` gate and observationalMemory's `observer`,
// both in a harness (the native layer calls into JS) and through the layers' JS-callable hooks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { AgentHarness, createInMemoryStorage, loop, step, until, workingMemory, observationalMemory } from '../js/index.mjs';
import { recordingModel, runAndRead } from './helpers.mjs';

const profile = z.object({ name: z.string(), age: z.number().optional() });

test('workingMemory schema: a failing update is an error the model sees, a passing one is stored and recalled', async () => {
  const wm = workingMemory({ schema: profile });
  const harness = new AgentHarness({
    name: 't',
    params: {},
    memory: [wm],
    llm: {
      provider: 'scripted',
      script: [
        { toolCalls: [{ name: 'working-memory/update', arguments: { age: 'old' } }] },
        { toolCalls: [{ name: 'working-memory/update', arguments: { name: 'Ada', age: 36 } }] },
        { text: 'noted' },
      ],
    },
  });
  const ctx = harness.createContext({ threadId: 'wm' });
  const { seen } = await runAndRead(harness, step.llm({ id: 'ask', model: 'scripted' }), 'remember me', ctx, (c) => c.memory['working-memory'].snapshot);
  const outputs = ctx.itemLog.items.filter((item) => item.type === 'function_call_output').map((item) => item.output);
  assert.equal(outputs.length, 2);
  assert.match(outputs[0], /^Error: working-memory update rejected by schema: /);
  // A void result has no output, as upstream's (JSON.stringify(undefined)).
  assert.equal(outputs[1], undefined);
  assert.deepEqual(seen, { name: 'Ada', age: 36 });
});

test('workingMemory schema: saved state the schema rejects starts over as {}; valid saved state is kept', async () => {
  const storage = createInMemoryStorage();
  await storage.set('layers/working-memory/bad/state', { name: 42 });
  await storage.set('layers/working-memory/good/state', { name: 'Ada' });
  const seen = {};
  const harness = new AgentHarness({ name: 't', params: {}, storage, memory: [workingMemory({ schema: profile })] });
  for (const threadId of ['bad', 'good']) {
    const look = step.run({ id: 'look', execute: async (_input, ctx) => (seen[threadId] = ctx.memory['working-memory'].snapshot) });
    await harness.run(look, 'x', { threadId });
  }
  assert.deepEqual(seen, { bad: {}, good: { name: 'Ada' } });
});

test('observationalMemory observer: distils the buffer when it passes the threshold, and the model sees it next turn', async () => {
  const buffers = [];
  const om = observationalMemory({
    bufferThreshold: 5,
    observer: async (buffer) => {
      buffers.push(buffer);
      return [`saw ${buffer.length} texts`];
    },
  });
  const { model, requests } = recordingModel('a long enough answer to pass the threshold');
  const harness = new AgentHarness({ name: 't', params: {}, memory: [om], _testCallModel: model });
  await harness.run(loop({ id: 'l', steps: [step.llm({ id: 'ask', model: 'm' })], until: until.maxSteps(2) }), 'hello there, observer', { resourceId: 'r' });
  assert.ok(buffers.length >= 1);
  assert.deepEqual(buffers[0], ['hello there, observer']);
  const secondView = requests[1].items.map((item) => item.content?.[0]?.text ?? '');
  assert.ok(secondView.some((text) => text.startsWith('<observations>') && text.includes('- saw 1 texts')), secondView.join('\n'));
});

test('an observer that throws is a diagnostic; the layer keeps its state', async () => {
  const diagnostics = [];
  const om = observationalMemory({ bufferThreshold: 1, observer: async () => { throw new Error('observer down'); } });
  const { model } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, memory: [om], _testCallModel: model, onDiagnostic: (d) => diagnostics.push(d) });
  const look = step.run({ id: 'look', execute: async (_input, ctx) => ctx.itemLog.items.length });
  await harness.run(loop({ id: 'l', steps: [step.llm({ id: 'ask', model: 'm' }), look], until: until.maxSteps(1) }), 'hello');
  assert.ok(diagnostics.some((d) => d.layerId === 'observational-memory' && /observer down/.test(d.message)), JSON.stringify(diagnostics));
});

test("the built-ins' JS hooks use the schema and the observer too", async () => {
  const wm = workingMemory({ schema: profile });
  assert.deepEqual((await wm.hooks.init({ storage: { get: async () => ({ name: 7 }) } })).state, {});
  assert.deepEqual((await wm.hooks.init({ storage: { get: async () => null } })).state, {});
  await assert.rejects(wm.provides.update.execute({ age: 'x' }, { name: 'Ada' }), /rejected by schema/);
  assert.deepEqual((await wm.provides.update.execute({ age: 3 }, { name: 'Ada' })).state, { name: 'Ada', age: 3 });

  const om = observationalMemory({ bufferThreshold: 5, maxObservations: 3, observer: async (buffer) => buffer.map((text) => text.toUpperCase()) });
  const reply = { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'one two three four five six' }] };
  const out = await om.hooks.store({ state: undefined, newItems: [reply] });
  assert.deepEqual(out.state, { observations: ['ONE TWO THREE FOUR FIVE SIX'], buffer: [], bufferTokens: 0, version: 1 });
});
