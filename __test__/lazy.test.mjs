// step.llm fields given as `(ctx) => value` getters: resolved with the live context every time the step runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, NoeticConfigError, loop, step, tool, until } from '../js/index.mjs';
import { recordingModel } from './helpers.mjs';

test('model and instructions getters run with the live context each time the step runs', async () => {
  const { model, requests } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: { tier: 'large' }, _testCallModel: model });
  const seen = [];
  const ask = step.llm({
    id: 'ask',
    model: (ctx) => {
      seen.push(ctx.stepCount);
      return `model-${ctx.harness.config.params.tier}-${ctx.stepCount}`;
    },
    instructions: async (ctx) => `you are on step ${ctx.stepCount}`,
  });
  await harness.run(loop({ id: 'l', steps: [ask], until: until.maxSteps(2) }), 'hi');
  assert.deepEqual(seen, [2, 3]);
  assert.deepEqual(requests.map((r) => r.model), ['model-large-2', 'model-large-3']);
  assert.deepEqual(requests.map((r) => r.instructions), ['you are on step 2', 'you are on step 3']);
});

test('a tools getter offers the tools it returns, and the model can call them', async () => {
  const calls = [];
  const lookup = tool({ name: 'lookup', description: 'Look a word up.', execute: async (args) => { calls.push(args); return 'a fruit'; } });
  const harness = new AgentHarness({
    name: 't',
    params: {},
    llm: { provider: 'scripted', script: [{ toolCalls: [{ name: 'lookup', arguments: { word: 'apple' } }] }, { text: 'done' }] },
  });
  const offered = [];
  const ask = step.llm({
    id: 'ask',
    model: 'scripted',
    tools: (ctx) => {
      offered.push(ctx.itemLog.items.length);
      return [lookup];
    },
  });
  const out = await harness.run(ask, 'what is an apple?');
  assert.equal(out, 'done');
  assert.deepEqual(calls, [{ word: 'apple' }]);
  // The getter ran before the input entered the log.
  assert.deepEqual(offered, [0]);
});

test('a model getter that returns nothing, or no model, is MISSING_MODEL when the step runs; a getter that throws fails the run with its error', async () => {
  const { model } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, _testCallModel: model });
  await assert.rejects(harness.run(step.llm({ id: 'ask', model: () => '  ' }), 'hi'), (e) => {
    assert.ok(e instanceof NoeticConfigError);
    assert.equal(e.code, 'MISSING_MODEL');
    assert.match(e.message, /step\.llm\("ask"\) resolved model to an empty string/);
    return true;
  });
  // With no model at all the step is built, as upstream's, and its run fails the same way.
  await assert.rejects(harness.run(step.llm({ id: 'bare' }), 'hi'), (e) => e.code === 'MISSING_MODEL' && e.message === 'step.llm("bare") resolved model to an empty string.' && /non-empty identifier/.test(e.hint));
  const boom = new Error('no model today');
  await assert.rejects(harness.run(step.llm({ id: 'ask', model: () => { throw boom; } }), 'hi'), (e) => e === boom);
  await assert.rejects(harness.run(step.llm({ id: 'ask', model: 'm', tools: () => 'not a list' }), 'hi'), /tools getter must return an array/);
});
