import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, loop, step, until } from '../js/index.mjs';
import { probe, recordingModel } from './helpers.mjs';

test('ctx.stepCount, tokens and lastLayerUsage reflect the steps and model calls that ran', async () => {
  const { model } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, memory: [probe('p', 1, [])], _testCallModel: model });
  const seen = await harness.run(
    loop({
      id: 'l',
      steps: [
        step.llm({ id: 'ask', model: 'test-model', instructions: 'be nice' }),
        step.run({
          id: 'look',
          execute: async (_input, ctx) => ({
            steps: ctx.stepCount,
            tokens: ctx.tokens,
            usage: ctx.lastLayerUsage,
            meta: ctx.lastStepMeta,
            logCost: ctx.itemLog.items.reduce((sum, item) => sum + Math.ceil(JSON.stringify(item).length / 4), 0),
          }),
        }),
      ],
      until: until.maxSteps(1),
    }),
    'hi',
  );
  // loop, llm, run: three dispatches so far.
  assert.equal(seen.steps, 3);
  assert.deepEqual(seen.tokens, { input: 10, output: 2, total: 12 });
  assert.equal(seen.usage.modelId, 'test-model');
  assert.equal(seen.usage.systemPromptTokens, 2);
  assert.deepEqual(seen.usage.layers.map((l) => [l.layerId, l.tokenCount]), [['p', 3]]);
  // History is the JSON cost of every log item (the user message and the reply), none of the layer's items (D17).
  assert.equal(seen.usage.historyTokens, seen.logCost);
  assert.equal(seen.usage.totalUsedTokens, seen.usage.systemPromptTokens + seen.usage.toolsTokens + seen.usage.historyTokens + 3);
  assert.deepEqual(seen.meta.toolCalls, []);
});

test('ctx.complete ends a loop with its value; ctx.abort cancels the rest of the run', async () => {
  const harness = new AgentHarness({ name: 't', params: {} });
  let turns = 0;
  const completing = loop({
    id: 'l',
    steps: [step.run({ id: 'r', execute: async (_input, ctx) => { turns++; if (turns === 3) ctx.complete({ done: turns }); return turns; } })],
    until: until.maxSteps(100),
  });
  assert.deepEqual(await harness.run(completing, ''), { done: 3 });
  const aborting = loop({
    id: 'l',
    steps: [step.run({ id: 'r', execute: async (_input, ctx) => { ctx.abort('user left'); assert.equal(ctx.aborted, true); return 1; } })],
    until: until.never,
  });
  await assert.rejects(harness.run(aborting, ''), (e) => e.noeticError?.kind === 'cancelled' && e.noeticError.reason === 'user left');
});

test('a JS until predicate sees the loop snapshot', async () => {
  const harness = new AgentHarness({ name: 't', params: {} });
  const snapshots = [];
  const body = loop({
    id: 'l',
    steps: [step.run({ id: 'r', execute: async (input) => `${input}!` })],
    until: (snapshot) => {
      snapshots.push([snapshot.stepCount, snapshot.lastOutput, snapshot.history.length]);
      return { stop: snapshot.stepCount >= 2 };
    },
  });
  assert.equal(await harness.run(body, 'go'), 'go!!');
  assert.deepEqual(snapshots, [[1, 'go!', 1], [2, 'go!!', 2]]);
});
