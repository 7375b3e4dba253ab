// durableTaskState and staticContent (issue 11, spec §20.8 and §20.9), run natively inside a harness.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AgentHarness, NoeticConfigError, createInMemoryStorage, durableTaskState, spawn, staticContent, step } from '../js/index.mjs';
import { scratchDb, slow } from './helpers.mjs';

const answer = (text) => ({ items: [{ type: 'message', role: 'assistant', id: `a-${text}`, status: 'completed', content: [{ type: 'output_text', text }] }] });
const developerTexts = (items) => items.filter((item) => item.role === 'developer').map((item) => item.content[0].text);

test('task state persists in SQLite across processes: each turn adds checkpoints (store, onComplete) the next process is shown', { timeout: slow(60_000) }, () => {
  const path = scratchDb('durable-task.db');
  const turn = fileURLToPath(new URL('./fixtures/durable-task-turn.mjs', import.meta.url));
  const runs = [1, 2, 3].map(() => {
    const result = spawnSync(process.execPath, [turn, path], { encoding: 'utf8', timeout: slow(30_000) });
    assert.equal(result.status, 0, result.stderr);
    return JSON.parse(result.stdout);
  });
  assert.deepEqual(runs, [
    { shown: 0, saved: 2 },
    { shown: 2, saved: 4 },
    { shown: 4, saved: 6 },
  ]);
});

test('a spawned child works on a copy; its checkpoints and data merge back into the parent', async () => {
  const storage = createInMemoryStorage();
  const h = new AgentHarness({ name: 'd', params: {}, storage, memory: [durableTaskState()], _testCallModel: async () => answer('ok') });
  const ctx = h.createContext({ threadId: 'T' });
  await h.run(step.llm({ id: 'ask', model: 'm' }), 'first', ctx);
  await h.run(spawn({ id: 'delegate', child: step.llm({ id: 'ask', model: 'm' }) }), 'in the child', ctx);
  const saved = await storage.get('layers/durable-task-state/T/state');
  const depths = saved.checkpoints.map((c) => c.depth);
  // Each run is an execution that stores a checkpoint and another when it completes; the child works on a copy of
  // the parent's two and adds its own (depth 1), all merged back, then the parent's run completes.
  assert.deepEqual(depths, [0, 0, 0, 0, 1, 0], 'the parent kept its checkpoints and got the child’s back');
});

test('recall trims the oldest checkpoints to the budget and never the files or data', async () => {
  const layer = durableTaskState();
  const state = { checkpoints: Array.from({ length: 40 }, (_, i) => ({ timestamp: 1_700_000_000_000 + i, depth: 0 })), files: ['src/a.ts'], data: { goal: 'ship' } };
  const { items, tokenCount } = await layer.hooks.recall({ state, budget: 120 });
  const text = items[0].content[0].text;
  const shown = JSON.parse(text.slice('<task_state>\n'.length, -'\n</task_state>'.length));
  assert.ok(tokenCount <= 120, `${tokenCount}`);
  assert.ok(shown.checkpoints.length < 40 && shown.checkpoints.length > 0);
  assert.equal(shown.checkpoints.at(-1).timestamp, 1_700_000_000_039, 'the newest stay');
  assert.deepEqual([shown.files, shown.data], [['src/a.ts'], { goal: 'ship' }]);
  const whole = await layer.hooks.recall({ state, budget: 0 });
  assert.equal(JSON.parse(whole.items[0].content[0].text.slice(13, -14)).checkpoints.length, 40, 'budget 0 trims nothing');
});

test('a state whose checkpoints are not a list is a diagnostic of each hook that appends, and the state is kept', async () => {
  const diagnostics = [];
  const storage = createInMemoryStorage();
  await storage.set('layers/durable-task-state/T/state', { checkpoints: 'broken', files: [], data: {} });
  const h = new AgentHarness({ name: 'd', params: {}, storage, memory: [durableTaskState()], _testCallModel: async () => answer('ok'), onDiagnostic: (d) => diagnostics.push(d) });
  assert.equal(await h.run(step.llm({ id: 'ask', model: 'm' }), 'go', { threadId: 'T' }), 'ok');
  assert.deepEqual(diagnostics.map((d) => d.hook), ['store', 'onComplete']);
  for (const d of diagnostics) assert.match(d.message, /state\.checkpoints is not an array \(got a string\)/);
  assert.deepEqual(await storage.get('layers/durable-task-state/T/state'), { checkpoints: 'broken', files: [], data: {} });
});

test('staticContent loads once per execution, recalls in its tag, and cuts to the budget', async () => {
  let loads = 0;
  const seen = [];
  const layer = staticContent({ tag: 'rules', load: async () => (loads++, 'Always answer in French.') });
  const h = new AgentHarness({ name: 's', params: {}, memory: [layer], _testCallModel: async (request) => (seen.push(developerTexts(request.items)), answer('oui')) });
  const ctx = h.createContext({});
  const twice = step.run({ id: 'twice', execute: async (_i, c) => {
    await c.harness.run(step.llm({ id: 'ask', model: 'm' }), 'hello', c);
    return c.harness.run(step.llm({ id: 'ask', model: 'm' }), 'again', c);
  } });
  await h.run(twice, '', ctx);
  assert.equal(loads, 1, 'one execution: it loads once');
  await h.run(step.llm({ id: 'ask', model: 'm' }), 'elsewhere', ctx);
  assert.equal(loads, 2, 'the next run is another execution, which loads again');
  assert.deepEqual(seen[0], ['<rules>\nAlways answer in French.\n</rules>']);
  const cut = await layer.hooks.recall({ state: await layer.hooks.init({}).then((r) => r.state), budget: 5 });
  // 5 tokens are 20 units: the closing tag's 9 and 11 of the text.
  assert.equal(cut, '<rules>\nAlw\n</rules>');
  assert.deepEqual([layer.id, layer.slot, layer.scope], ['static-content', 105, 'resource']);
});

test('staticContent: a load that throws fails the run (onInitError throw); one that never settles times out', async () => {
  const failing = staticContent({ load: async () => { throw new Error('prompt file missing'); } });
  const h = new AgentHarness({ name: 's', params: {}, memory: [failing], _testCallModel: async () => answer('x') });
  await assert.rejects(h.run(step.llm({ id: 'ask', model: 'm' }), 'go'), /prompt file missing/);
  const diagnostics = [];
  const hanging = { ...staticContent({ load: () => new Promise(() => {}) }), onInitError: 'disable', timeouts: { init: 50 } };
  const h2 = new AgentHarness({ name: 's', params: {}, memory: [hanging], _testCallModel: async () => answer('fine'), onDiagnostic: (d) => diagnostics.push(d) });
  assert.equal(await h2.run(step.llm({ id: 'ask', model: 'm' }), 'go'), 'fine');
  assert.match(diagnostics.map((d) => d.message).join(' '), /Timeout after 50ms/);
});

test('staticContent checks its options when called', () => {
  const bad = [
    [{}, 'INVALID_STATIC_CONTENT_LOAD'],
    [{ load: 'text' }, 'INVALID_STATIC_CONTENT_LOAD'],
    [{ load: async () => '', slot: Number.NaN }, 'INVALID_LAYER_SLOT'],
    [{ load: async () => '', scope: 'forever' }, 'INVALID_LAYER_SCOPE'],
  ];
  for (const [opts, code] of bad) assert.throws(() => staticContent(opts), (e) => e instanceof NoeticConfigError && e.code === code, code);
  const custom = staticContent({ id: 'persona', slot: 7, scope: 'thread', load: async () => 'x' });
  assert.deepEqual([custom.id, custom.slot, custom.scope], ['persona', 7, 'thread']);
});

test('timeouts and onInitError set on a built-in layer’s object are checked and honoured', async () => {
  assert.throws(
    () => new AgentHarness({ name: 'd', params: {}, memory: [{ ...durableTaskState(), timeouts: { store: -1 } }] }),
    (e) => e instanceof NoeticConfigError && e.code === 'INVALID_LAYER_TIMEOUT',
  );
  const diagnostics = [];
  const failing = { ...staticContent({ load: async () => { throw new Error('offline'); } }), onInitError: 'disable' };
  const h = new AgentHarness({ name: 's', params: {}, memory: [failing], _testCallModel: async () => answer('still fine'), onDiagnostic: (d) => diagnostics.push(d) });
  assert.equal(await h.run(step.llm({ id: 'ask', model: 'm' }), 'go'), 'still fine');
  assert.deepEqual(diagnostics.map((d) => [d.layerId, d.hook]), [['static-content', 'init']]);
});
