// planMemory (issue 11, spec §20.5): the built-in plan-mode layer, run natively inside a harness. The scripted
// model calls the plan tools as a model would (`_testCallModel` answers whole steps, so no tool runs there).
import { test } from 'node:test';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { AgentHarness, NoeticConfigError, PlanPhase, createInMemoryStorage, planMemory, step, tool } from '../js/index.mjs';
import { runAndRead, scratchDb, slow } from './helpers.mjs';

const leaf = { kind: 'llm', id: 'build', instructions: 'Build it', tools: ['Write'] };
const tree = { kind: 'sequence', id: 'root', steps: [leaf] };

// User tools named like a coding agent's; `ran` records which ones actually ran.
function codingTools(ran) {
  const mk = (name) => tool({ name, description: name, input: z.object({}).passthrough(), execute: async () => (ran.push(name), `${name} ran`) });
  return [mk('Read'), mk('Bash')];
}

function harnessWith(layer, script, storage = createInMemoryStorage()) {
  return new AgentHarness({ name: 'plan', params: {}, storage, memory: [layer], llm: { provider: 'scripted', script } });
}

const outputs = (ctx) => ctx.itemLog.items.filter((item) => item.type === 'function_call_output').map((item) => item.output);

test('a whole plan through the model: read-only while planning, approved by onExit, completed when an execution succeeds', async () => {
  const ran = [];
  const exits = [];
  const layer = planMemory({
    onEnterSession: async () => ({ slug: 'amber-falcon' }),
    onExit: async (state) => (exits.push(state), { approved: true }),
  });
  const storage = createInMemoryStorage();
  const h = harnessWith(
    layer,
    [
      { toolCalls: [{ name: 'plan/enterPlanMode', arguments: { goal: 'Add a cache' } }] },
      { toolCalls: [{ name: 'Bash', arguments: { cmd: 'rm -rf /' } }, { name: 'Read', arguments: {} }] },
      { toolCalls: [{ name: 'plan/updatePrd', arguments: { content: '# Cache\nWhy and how.' } }] },
      { toolCalls: [{ name: 'plan/setPlanTree', arguments: { ...tree, note: 'unknown keys are dropped' } }] },
      { toolCalls: [{ name: 'plan/exitPlanMode', arguments: { action: 'execute' } }] },
      { toolCalls: [{ name: 'Bash', arguments: {} }] },
      { text: 'Planned and started.' },
    ],
    storage,
  );
  const ctx = h.createContext({ threadId: 't1' });
  await h.run(step.llm({ id: 'agent', model: 'scripted', tools: codingTools(ran) }), 'plan a cache', ctx);
  const out = outputs(ctx);
  assert.equal(out[0], 'Plan mode activated. Explore the codebase, then call plan/updatePrd.');
  assert.equal(
    out[1],
    'Tool call denied: Plan mode is active. "Bash" is not allowed during planning. Use read-only tools (Read, Grep, Find, Ls) to explore the codebase, then call plan/updatePrd to write your PRD.',
  );
  assert.equal(out[2], 'Read ran');
  assert.deepEqual(out.slice(3, 6), [
    'PRD updated successfully.',
    'Plan tree set successfully. Call plan/exitPlanMode to begin execution.',
    'Plan mode exited. Execution phase begun.',
  ]);
  // Executing: every tool is allowed again, so Bash runs only this second time.
  assert.equal(out[6], 'Bash ran');
  assert.deepEqual(ran, ['Read', 'Bash']);
  // onExit was handed the planning state, with the PRD and the tree as checked (unknown keys dropped).
  assert.equal(exits.length, 1);
  assert.equal(exits[0].phase, PlanPhase.Planning);
  assert.deepEqual(exits[0].planTree, tree);
  // The run was an execution of the thread, which succeeded: its end recorded the outcome (onComplete).
  const saved = await storage.get('layers/plan/t1/state');
  assert.equal(saved.phase, PlanPhase.Completed);
  assert.equal(saved.planSlug, 'amber-falcon');
  assert.equal(saved.prd, '# Cache\nWhy and how.');
  assert.deepEqual(saved.executionLog.map((entry) => [entry.version, entry.outcome]), [[1, 'success']]);
  assert.ok(Math.abs(saved.executionLog[0].timestamp - Date.now()) < 60_000);
});

test('the next execution of the thread starts from the saved plan and the model sees its outcome', async () => {
  const storage = createInMemoryStorage();
  await storage.set('layers/plan/t2/state', { phase: 'completed', prd: '# P', planTree: leaf, executionLog: [{ timestamp: 1, version: 3, outcome: 'success' }], version: 3 });
  const requests = [];
  const model = async (request) => {
    requests.push(request.items);
    return { items: [{ id: 'r', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }] };
  };
  const h = new AgentHarness({ name: 'plan', params: {}, storage, memory: [planMemory()], _testCallModel: model });
  await h.run(step.llm({ id: 'ask', model: 'm' }), 'what happened?', { threadId: 't2' });
  const texts = requests[0].map((item) => item.content?.[0]?.text);
  assert.ok(texts.includes('<plan_outcome>Plan v3 success.</plan_outcome>'), texts.join('\n'));
});

test('the plan tools by the names providers send (plan_updatePrd) are allowed while planning', async () => {
  const storage = createInMemoryStorage();
  await storage.set('layers/plan/t3/state', { phase: 'planning', prd: null, planTree: null, executionLog: [], version: 1 });
  const h = harnessWith(planMemory(), [{ toolCalls: [{ name: 'plan_updatePrd', arguments: { content: '# Wire' } }] }, { text: 'done' }], storage);
  const ctx = h.createContext({ threadId: 't3' });
  const { seen } = await runAndRead(h, step.llm({ id: 'agent', model: 'scripted' }), 'go', ctx, (c) => c.memory.plan.status);
  assert.deepEqual(outputs(ctx), ['PRD updated successfully.']);
  assert.equal(seen.hasPrd, true);
});

test('a plan tool in the wrong phase or with bad arguments is a tool output the model reads; the state is kept', async () => {
  const h = harnessWith(planMemory(), [
    { toolCalls: [{ name: 'plan/updatePrd', arguments: { content: '# too early' } }] },
    { toolCalls: [{ name: 'plan/exitPlanMode', arguments: { action: 'later' } }] },
    { toolCalls: [{ name: 'plan/enterPlanMode', arguments: {} }] },
    { toolCalls: [{ name: 'plan/setPlanTree', arguments: { kind: 'sequence', id: 'root', steps: [] } }] },
    { toolCalls: [{ name: 'plan/updatePrd', arguments: { content: 42 } }] },
    { text: 'stopping' },
  ]);
  const ctx = h.createContext({ threadId: 't4' });
  const { seen } = await runAndRead(h, step.llm({ id: 'agent', model: 'scripted' }), 'go', ctx, (c) => c.memory.plan.status);
  assert.deepEqual(outputs(ctx), [
    'Cannot update PRD: current phase is "idle". Enter plan mode first.',
    'Error: exitPlanMode: action must be "execute" or "cancel"',
    'Plan mode activated. Explore the codebase, then call plan/updatePrd.',
    'Error: plan tree.steps must be a list of at least one node',
    'Error: updatePrd: content must be a string',
  ]);
  assert.deepEqual(seen, { phase: 'planning', hasPrd: false, hasPlanTree: false, version: 1 });
});

test('a rejected onExit keeps planning; a throwing onEnterSession is a tool error and the layer stays idle', async () => {
  const storage = createInMemoryStorage();
  await storage.set('layers/plan/t5/state', { phase: 'planning', prd: '# P', planTree: leaf, executionLog: [], version: 2 });
  const rejecting = planMemory({ onExit: async () => ({ approved: false }) });
  const h = harnessWith(rejecting, [{ toolCalls: [{ name: 'plan/exitPlanMode', arguments: { action: 'execute' } }] }, { text: 'ok' }], storage);
  const ctx = h.createContext({ threadId: 't5' });
  await h.run(step.llm({ id: 'agent', model: 'scripted' }), 'go', ctx);
  assert.match(outputs(ctx)[0], /^User did not approve the plan\./);
  assert.equal((await storage.get('layers/plan/t5/state')).phase, 'planning');

  const failing = planMemory({ onEnterSession: async () => { throw new Error('no disk'); } });
  const h2 = harnessWith(failing, [{ toolCalls: [{ name: 'plan/enterPlanMode', arguments: {} }] }, { text: 'ok' }]);
  const ctx2 = h2.createContext({ threadId: 't6' });
  const { seen } = await runAndRead(h2, step.llm({ id: 'agent', model: 'scripted' }), 'go', ctx2, (c) => c.memory.plan.status);
  assert.match(outputs(ctx2)[0], /^Error: .*no disk/);
  assert.equal(seen.phase, 'idle');
});

test('a failed run records a failed plan', async () => {
  const storage = createInMemoryStorage();
  await storage.set('layers/plan/t7/state', { phase: 'executing', prd: '# P', planTree: leaf, executionLog: [], version: 4 });
  const h = new AgentHarness({ name: 'plan', params: {}, storage, memory: [planMemory()] });
  const boom = step.run({ id: 'boom', execute: async () => { throw new Error('boom'); } });
  await assert.rejects(h.run(boom, 'x', { threadId: 't7' }));
  const saved = await storage.get('layers/plan/t7/state');
  assert.equal(saved.phase, 'failed');
  assert.deepEqual(saved.executionLog.map((entry) => entry.outcome), ['failure']);
});

test('config of the wrong kind is refused when the layer is built', () => {
  const cases = [
    [{ maxPrdLength: 'big' }, /maxPrdLength must be a number of at least 0, got "big"/],
    [{ maxTreeDepth: Number.NaN }, /maxTreeDepth must be a number of at least 0, got NaN/],
    [{ additionalAllowedTools: 'Write' }, /additionalAllowedTools must be a list of tool names/],
    [{ onExit: true }, /onExit must be a function, got true/],
    [{ scope: 'session' }, /scope must be/],
  ];
  for (const [config, message] of cases) {
    assert.throws(() => planMemory(config), (e) => e instanceof NoeticConfigError && e.code === 'INVALID_PLAN_MEMORY_CONFIG' && message.test(e.message));
  }
  assert.equal(planMemory({ maxPrdLength: Number.POSITIVE_INFINITY, scope: 'resource' }).scope, 'resource');
});

test('the JS face: refusals and steering hand back the very state object; the callbacks are called as upstream', async () => {
  let entered = 0;
  const layer = planMemory({ onEnterSession: async (...args) => (entered++, assert.deepEqual(args, []), { slug: 's' }) });
  const planning = { phase: 'planning', prd: null, planTree: null, executionLog: [], version: 1 };
  const refused = await layer.provides.enterPlanMode.execute({}, planning);
  assert.equal(refused.state, planning);
  assert.equal(entered, 0, 'a refused entry never asks the host');
  const steered = await layer.hooks.beforeToolCall({ toolName: 'Write', toolArgs: {}, state: planning });
  assert.equal(steered.state, planning);
  assert.equal(steered.decision.action, 'deny');
  const idle = (await layer.hooks.init({ storage: { get: async () => undefined } })).state;
  const result = await layer.provides.enterPlanMode.execute({ goal: 'g' }, idle);
  assert.equal(entered, 1);
  assert.deepEqual(result.state, { ...planning, prd: '# Goal\n\ng\n', planSlug: 's' });
  assert.equal((await layer.hooks.onComplete({ state: planning, outcome: 'success' })), undefined);
  await assert.rejects(layer.provides.setPlanTree.execute({ kind: 'fork', id: 'f', mode: 'all', paths: [] }, planning), /paths must be a list of at least one node/);
});

test('steering votes in slot order across built-in and JS layers: the plan deny at 240 ends the vote before a JS layer at 300', async () => {
  const storage = createInMemoryStorage();
  await storage.set('layers/plan/t8/state', { phase: 'planning', prd: null, planTree: null, executionLog: [], version: 1 });
  const asked = [];
  const early = { id: 'early', slot: 10, scope: 'execution', hooks: { beforeToolCall: async ({ toolName }) => (asked.push(`early:${toolName}`), { decision: { action: 'allow' } }) } };
  const late = { id: 'late', slot: 300, scope: 'execution', hooks: { beforeToolCall: async ({ toolName }) => (asked.push(`late:${toolName}`), { decision: { action: 'allow' } }) } };
  const ran = [];
  const h = new AgentHarness({
    name: 'plan', params: {}, storage, memory: [late, planMemory(), early],
    llm: { provider: 'scripted', script: [{ toolCalls: [{ name: 'Bash', arguments: {} }, { name: 'Read', arguments: {} }] }, { text: 'ok' }] },
  });
  const ctx = h.createContext({ threadId: 't8' });
  await h.run(step.llm({ id: 'agent', model: 'scripted', tools: codingTools(ran) }), 'go', ctx);
  assert.deepEqual(asked, ['early:Bash', 'early:Read', 'late:Read']);
  assert.deepEqual(ran, ['Read']);
  assert.match(outputs(ctx)[0], /^Tool call denied: Plan mode is active\./);
});

test('the plan persists in SQLite across processes: a second process is still planning and refuses Bash', () => {
  const path = scratchDb('plan.db');
  const turn = fileURLToPath(new URL('./fixtures/plan-turn.mjs', import.meta.url));
  const [first, second] = [1, 2].map((n) => {
    const result = spawnSync(process.execPath, [turn, path, String(n)], { encoding: 'utf8', timeout: slow(30_000) });
    assert.equal(result.status, 0, result.stderr);
    return JSON.parse(result.stdout);
  });
  assert.deepEqual([first.phase, first.prd], ['planning', '# Cache']);
  assert.match(second.outputs[0], /^Tool call denied: Plan mode is active\. "Bash" is not allowed during planning/);
  assert.deepEqual([second.phase, second.prd], ['planning', '# Cache']);
});
