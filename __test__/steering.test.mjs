// steering (issue 11, spec §20.4): rules voted on before tool calls and after model responses, run natively in a
// harness. The scripted model both drives the agent and answers LLM rules' questions, in script order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { AgentHarness, NoeticConfigError, createInMemoryStorage, loop, step, steering, tool } from '../js/index.mjs';
import { scratchDb, slow } from './helpers.mjs';

function toolsRecording(ran) {
  const mk = (name) => tool({ name, description: name, input: z.object({}).passthrough(), execute: async () => (ran.push(name), `${name} ran`) });
  return [mk('read'), mk('delete')];
}

function harnessWith(layer, script, storage = createInMemoryStorage()) {
  return new AgentHarness({ name: 'steer', params: {}, storage, memory: [layer], llm: { provider: 'scripted', script } });
}

const outputs = (ctx) => ctx.itemLog.items.filter((item) => item.type === 'function_call_output').map((item) => item.output);
const developerTexts = (ctx) => ctx.itemLog.items.filter((item) => item.role === 'developer').map((item) => item.content[0].text);

test('a predicate denies a tool call: the tool does not run, the model is told why, and the ledger records it', async () => {
  const ran = [];
  const seen = [];
  const noDeletes = {
    id: 'no-deletes',
    appliesTo: ['beforeToolCall'],
    predicate: ({ toolName, toolArgs, ctx }) => {
      seen.push({ toolName, toolArgs, thread: ctx.threadId });
      return toolName === 'delete' ? { action: 'deny', guidance: 'deleting is not allowed' } : null;
    },
  };
  const storage = createInMemoryStorage();
  const h = harnessWith(steering({ rules: [noDeletes], scope: 'thread' }), [
    { toolCalls: [{ name: 'delete', arguments: { path: '/tmp/x' } }, { name: 'read', arguments: {} }] },
    { text: 'gave up deleting' },
  ], storage);
  const ctx = h.createContext({ threadId: 't1' });
  const out = await h.run(step.llm({ id: 'agent', model: 'scripted', tools: toolsRecording(ran) }), 'clean up', ctx);
  assert.equal(out, 'gave up deleting');
  assert.deepEqual(outputs(ctx), ['Tool call denied: deleting is not allowed', 'read ran']);
  assert.deepEqual(ran, ['read']);
  // The predicate saw the call and a real execution context.
  assert.deepEqual(seen, [
    { toolName: 'delete', toolArgs: { path: '/tmp/x' }, thread: 't1' },
    { toolName: 'read', toolArgs: {}, thread: 't1' },
  ]);
  const { ledger } = await storage.get('layers/steering/t1/state');
  const tools = ledger.filter((entry) => entry.kind === 'tool_call');
  assert.deepEqual(
    tools.map(({ toolName, action, ruleId, guidance }) => ({ toolName, action, ruleId, guidance })),
    [
      { toolName: 'delete', action: 'deny', ruleId: 'steering', guidance: 'deleting is not allowed' },
      { toolName: 'read', action: 'allow', ruleId: undefined, guidance: undefined },
    ],
  );
  assert.deepEqual(tools[0].toolArgs, { path: '/tmp/x' });
  // The step's model response is recorded too (once per model attempt, after its tool loop), with its usage.
  const turns = ledger.filter((entry) => entry.kind === 'model_turn');
  assert.equal(turns.length, 1);
  assert.equal(typeof turns[0].tokenUsage.input, 'number');
});

test('a sync LLM rule asks the harness model; its DENY verdict stops the tool', async () => {
  const ran = [];
  const judge = { id: 'judge', appliesTo: ['beforeToolCall'], llmEval: { mode: 'sync', prompt: 'Is this call safe?' } };
  const h = harnessWith(steering({ rules: [judge] }), [
    { toolCalls: [{ name: 'delete', arguments: { all: true } }] },
    { text: 'Deny: it deletes everything' },
    { text: 'stopped' },
  ]);
  const ctx = h.createContext({ threadId: 't2' });
  const out = await h.run(step.llm({ id: 'agent', model: 'scripted', tools: toolsRecording(ran) }), 'clean up', ctx);
  assert.equal(out, 'stopped');
  assert.deepEqual(outputs(ctx), ['Tool call denied: it deletes everything']);
  assert.deepEqual(ran, []);
});

test('an unparseable verdict is asked again (maxRetries), then the call is allowed', async () => {
  const ran = [];
  const judge = { id: 'judge', appliesTo: ['beforeToolCall'], llmEval: { mode: 'sync', prompt: 'Safe?' } };
  const h = harnessWith(steering({ rules: [judge], maxRetries: 1 }), [
    { toolCalls: [{ name: 'read', arguments: {} }] },
    { text: 'hmm, hard to say' },
    { text: 'DENYING is tempting' },
    { text: 'read it' },
  ]);
  const ctx = h.createContext({ threadId: 't3' });
  const out = await h.run(step.llm({ id: 'agent', model: 'scripted', tools: toolsRecording(ran) }), 'look', ctx);
  assert.equal(out, 'read it');
  assert.deepEqual(ran, ['read']);
});

test('a guide after a model response makes the step ask again with the guidance', async () => {
  const brevity = {
    id: 'brevity',
    appliesTo: ['afterModelCall'],
    predicate: ({ response }) => {
      const text = response.items.find((item) => item.role === 'assistant')?.content[0].text ?? '';
      return text.length > 20 ? { action: 'guide', guidance: 'Answer in under 20 characters.' } : null;
    },
  };
  const h = harnessWith(steering({ rules: [brevity] }), [{ text: 'This answer is far too long to accept.' }, { text: 'Short.' }]);
  const ctx = h.createContext({ threadId: 't4' });
  const out = await h.run(step.llm({ id: 'agent', model: 'scripted' }), 'answer', ctx);
  assert.equal(out, 'Short.');
  assert.ok(developerTexts(ctx).some((text) => text.includes('Answer in under 20 characters.')));
});

test('an async rule does not hold the response up; its verdict is shown at the next model step, once', async () => {
  const later = { id: 'later', appliesTo: ['afterModelCall'], llmEval: { mode: 'async', prompt: 'Review this answer' } };
  const agentRequests = [];
  let questions = 0;
  const model = async (request) => {
    const last = request.items.at(-1);
    const asked = last?.role === 'user' && last.content?.[0]?.text?.startsWith('Review this answer');
    // The first review asks for a change; later ones are content.
    const text = asked ? (++questions === 1 ? 'GUIDE: cite your sources' : 'ALLOW') : `answer ${agentRequests.push(request.items)}`;
    return { items: [{ id: `m${Math.random()}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }], usage: { inputTokens: 1, outputTokens: 1 } };
  };
  const h = new AgentHarness({ name: 'async', params: {}, memory: [steering({ rules: [later] })], _testCallModel: model });
  const settle = step.run({ id: 'settle', execute: async (input) => (await new Promise((r) => setTimeout(r, 100)), input) });
  const ask = (id) => step.llm({ id, model: 'm' });
  const ctx = h.createContext({ threadId: 't5' });
  await h.run(loop({ id: 'steps', steps: [ask('one'), settle, ask('two'), settle, ask('three')], until: () => ({ stop: true }) }), 'go', ctx);
  const feedback = '<steering_feedback>\n[later] cite your sources\n</steering_feedback>';
  const shown = (items) => items.some((item) => item.role === 'developer' && item.content[0].text === feedback);
  assert.equal(agentRequests.length, 3);
  assert.deepEqual(agentRequests.map(shown), [false, true, false]);
  // Each response was reviewed; the last review may still be in flight when the run ends.
  assert.ok(questions >= 2);
});

test('state persists in SQLite across processes: the second process sees the first one\'s ledger', () => {
  const path = scratchDb('steering.db');
  const turn = fileURLToPath(new URL('./fixtures/steering-turn.mjs', import.meta.url));
  const runs = [1, 2].map(() => {
    const result = spawnSync(process.execPath, [turn, path], { encoding: 'utf8', timeout: slow(30_000) });
    assert.equal(result.status, 0, result.stderr);
    return JSON.parse(result.stdout);
  });
  assert.deepEqual(runs[0].output, 'deleted');
  assert.deepEqual(runs[1].output, 'Tool call denied: already deleted once');
  assert.ok(runs[1].ledger > runs[0].ledger);
});

test('the config is checked where steering() is called', () => {
  const cases = [
    [undefined, /rules must be an array/],
    [{ rules: 'all' }, /rules must be an array/],
    [{ rules: [{ appliesTo: ['beforeToolCall'] }] }, /rules\[0\]\.id/],
    [{ rules: [{ id: 'a', appliesTo: ['beforeStore'] }] }, /appliesTo/],
    [{ rules: [{ id: 'a', appliesTo: [], predicate: 'yes' }] }, /predicate must be a function/],
    [{ rules: [{ id: 'a', appliesTo: [], llmEval: { mode: 'eventually', prompt: 'p' } }] }, /mode/],
    [{ rules: [], maxLedgerEntries: -3 }, /maxLedgerEntries/],
    [{ rules: [], scope: 'forever' }, /scope/],
  ];
  for (const [config, message] of cases) {
    assert.throws(() => steering(config), (e) => e instanceof NoeticConfigError && e.code === 'INVALID_STEERING_CONFIG' && message.test(e.message), JSON.stringify(config));
  }
  const layer = steering({ rules: [] });
  assert.deepEqual([layer.id, layer.name, layer.slot, layer.scope], ['steering', 'Steering', 90, 'execution']);
  assert.deepEqual(layer.budget, { min: 0, max: 500 });
  assert.deepEqual(layer.timeouts, { beforeToolCall: 5000, afterModelCall: 10000 });
});

test('an LLM rule with no model to ask is MISSING_CALL_MODEL, natively and from JS', async () => {
  const judge = { id: 'judge', appliesTo: ['beforeToolCall'], llmEval: { mode: 'sync', prompt: 'Safe?' } };
  // A harness without a model, running the lifecycle through ctx.harness: the config error propagates.
  const layer = steering({ rules: [judge] });
  const h = new AgentHarness({ name: 'no-model', params: {} });
  const ctx = h.createContext({ threadId: 't6' });
  await ctx.harness.initLayers([layer], ctx);
  await assert.rejects(ctx.harness.beforeToolCall([layer], 'rm', {}, ctx), (e) => e instanceof NoeticConfigError && e.code === 'MISSING_CALL_MODEL');
  // Directly, as upstream's lifecycle would call the hook: no ctx.callModel.
  const state = { ledger: [], pendingAsync: [] };
  await assert.rejects(layer.hooks.beforeToolCall({ toolName: 't', toolArgs: {}, ctx: {}, state }), (e) => e instanceof NoeticConfigError && e.code === 'MISSING_CALL_MODEL');
  assert.deepEqual(state.ledger, []);
});

test('hooks called from JS: the ledger is kept in place and capped, and async verdicts are drained by recall', async () => {
  const layer = steering({ rules: [{ id: 'r', appliesTo: ['beforeToolCall', 'afterModelCall'], predicate: ({ toolName }) => (toolName === 'bad' ? { action: 'guide', guidance: 'careful' } : null) }], maxLedgerEntries: 2 });
  const { state } = await layer.hooks.init({ storage: { get: async () => undefined } });
  const first = await layer.hooks.beforeToolCall({ toolName: 'bad', toolArgs: { x: 1 }, ctx: {}, state });
  assert.deepEqual(first.decision, { action: 'guide', guidance: 'careful' });
  assert.equal(first.state, state);
  await layer.hooks.beforeToolCall({ toolName: 'ok', toolArgs: {}, ctx: {}, state });
  await layer.hooks.afterModelCall({ response: { items: [], usage: { inputTokens: 5, outputTokens: 1 } }, ctx: {}, state });
  assert.deepEqual(state.ledger.map((e) => e.kind), ['tool_call', 'model_turn']);
  assert.deepEqual(state.ledger[1].tokenUsage, { input: 5, output: 1 });
  assert.equal(await layer.hooks.recall({ state }), null);
  state.pendingAsync.push({ ruleId: 'r', guidance: 'slow down' });
  const held = state.pendingAsync;
  const recalled = await layer.hooks.recall({ state });
  assert.equal(recalled.items[0].content[0].text, '<steering_feedback>\n[r] slow down\n</steering_feedback>');
  assert.equal(held.length, 0);
  const child = await layer.hooks.onSpawn({ parentState: state });
  assert.deepEqual(child.childState, { ledger: state.ledger, pendingAsync: [] });
  assert.notEqual(child.childState.ledger, state.ledger);
});

test("a JS steering hook's decision of the wrong shape casts no vote but keeps the state it returned, as upstream", async () => {
  const ran = [];
  const seen = [];
  const diagnostics = [];
  const answers = [
    (state) => ({ state: { n: (state?.n ?? 0) + 1 } }),
    (state) => ({ state: { n: state.n + 1 }, decision: { action: 'maybe' } }),
    () => ({ decision: { action: 'deny', guidance: 42 } }),
  ];
  const gate = {
    id: 'gate', slot: 10, scope: 'execution',
    hooks: { beforeToolCall: async ({ toolName, state }) => (seen.push([toolName, state?.n]), answers[seen.length - 1](state)) },
  };
  const h = new AgentHarness({
    name: 'steer', params: {}, memory: [gate], onDiagnostic: (d) => diagnostics.push(d.message),
    llm: { provider: 'scripted', script: [{ toolCalls: [{ name: 'read', arguments: {} }, { name: 'read', arguments: {} }, { name: 'delete', arguments: {} }] }, { text: 'done' }] },
  });
  const ctx = h.createContext();
  assert.equal(await h.run(step.llm({ id: 'agent', model: 'scripted', tools: toolsRecording(ran) }), 'go', ctx), 'done');
  // Each hook saw the state the one before returned, whatever its decision.
  assert.deepEqual(seen, [['read', undefined], ['read', 1], ['delete', 2]]);
  assert.deepEqual(ran, ['read', 'read']);
  assert.equal(diagnostics.length, 2);
  assert.match(diagnostics[0], /got decision undefined$/);
  assert.match(diagnostics[1], /got decision \{"action":"maybe"\}$/);
  // A guidance that is not a string is none: the deny's own words stand.
  assert.match(outputs(ctx)[2], /steering rule violation/);
});
