import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allocateBudgets, assembleView, checkBudget, createScopedStorage } from '../js/unstable.mjs';
import { AgentHarness, createInMemoryStorage, estimateTokens, step, stripUnresolvedToolCalls, findFunctionCall, isNoeticError } from '../js/index.mjs';

const msg = (id, role, text) => ({ id, type: 'message', role, status: 'completed', content: [{ type: role === 'assistant' ? 'output_text' : 'input_text', text }] });
const call = (id, callId) => ({ id, type: 'function_call', callId, name: 't', arguments: '{}' });
const output = (id, callId) => ({ id, type: 'function_call_output', status: 'completed', callId, output: 'ok' });

test('allocateBudgets gives the spec numbers', () => {
  const typical = allocateBudgets({
    layers: [
      { id: 'wm', budget: { min: 200, max: 1500 } },
      { id: 'om', budget: { min: 500, max: 2500 } },
      { id: 'steering', budget: { min: 0, max: 500 } },
      { id: 'plan', budget: { min: 100, max: 3000 } },
      { id: 'history-window' },
      { id: 'temporal', budget: { min: 0, max: 200 } },
    ],
    totalBudget: 128000,
    systemPromptTokens: 0,
    responseReserve: 4000,
  });
  assert.deepEqual(typical.allocations.map((a) => a.allocated), [1500, 2500, 500, 3000, 67020, 200]);
  assert.equal(typical.historyBudget, 49280);
  const numeric = allocateBudgets({ layers: [{ id: 'a', budget: 500 }, { id: 'b', budget: 1500 }], totalBudget: 3000, systemPromptTokens: 0, responseReserve: 1000 });
  assert.deepEqual(numeric.allocations.map((a) => a.allocated), [300, 900]);
  const single = allocateBudgets({ layers: [{ id: 'auto', budget: 'auto' }], totalBudget: 128000, systemPromptTokens: estimateTokens('be nice'), responseReserve: 4000 });
  assert.equal(single.allocations[0].allocated, 74398.8);
  const infinite = allocateBudgets({ layers: [{ id: 'f', budget: { min: 100, max: 1000 } }, { id: 'a' }], totalBudget: Infinity, systemPromptTokens: 0, responseReserve: 4000 });
  assert.deepEqual(infinite.allocations.map((a) => a.allocated), [1000, Infinity]);
  assert.throws(() => allocateBudgets({ layers: [], totalBudget: Number.NaN, systemPromptTokens: 0, responseReserve: 0 }), (e) => e.code === 'INVALID_BUDGET_INPUT');
});

test('assembleView keeps what fits, exactly as the spec vectors', () => {
  const s = msg('s', 'system', 'sys');
  const l1 = msg('l1', 'developer', 'A'.repeat(200));
  const l2 = msg('l2', 'developer', 'B'.repeat(20));
  const history = [msg('h1', 'user', 'hello'), msg('h2', 'assistant', 'hi'), call('h3', 'c1'), output('h4', 'c1'), msg('h5', 'user', 'more')];
  const ids = (tokenBudget) =>
    assembleView({ systemPromptItems: [s], layerOutputItems: [l1, l2], historyItems: history, policy: { tokenBudget, responseReserve: 20, overflow: 'truncate' } }).map((i) => i.id);
  assert.deepEqual(ids(400), ['s', 'l1', 'l2', 'h1', 'h2', 'h3', 'h4', 'h5']);
  assert.deepEqual(ids(200), ['s', 'l1', 'l2', 'h5']);
  assert.deepEqual(ids(150), ['s', 'l1']);
  assert.deepEqual(ids(100), ['s', 'l2']);
  assert.deepEqual(ids(60), ['s']);
  const windowed = assembleView({ systemPromptItems: [], layerOutputItems: [], historyItems: history, policy: { tokenBudget: 1e9, responseReserve: 0, overflow: 'sliding_window', windowSize: 2 } });
  assert.deepEqual(windowed.map((i) => i.id), ['h5']);
  // Kept items are the caller's own objects.
  assert.equal(windowed[0], history[4]);
});

test('checkBudget throws budget_exceeded for the first limit passed', () => {
  assert.throws(
    () => checkBudget({ cost: 2, stepCount: 1, elapsed: 0 }, { maxCost: 1, maxSteps: 0 }),
    (e) => isNoeticError(e) && e.noeticError.kind === 'budget_exceeded' && e.noeticError.field === 'cost',
  );
  checkBudget({ cost: 1, stepCount: 1, elapsed: 0 }, { maxCost: 1 });
});

test('JS helpers agree with the spec: token estimate, orphan stripping, findFunctionCall', () => {
  assert.equal(estimateTokens('😀'), 1);
  assert.equal(estimateTokens('abcde'), 2);
  assert.equal(estimateTokens(''), 0);
  const user = msg('u', 'user', 'x');
  assert.deepEqual(stripUnresolvedToolCalls([output('o', 'x'), user, call('cy', 'y'), call('cz', 'z'), output('oz', 'z')]).map((i) => i.id), ['u', 'cz', 'oz']);
  const calls = [{ type: 'function_call', callId: '1', name: 'f', arguments: 'not json' }, { type: 'function_call', callId: '2', name: 'f', arguments: '{"a":1}' }];
  assert.deepEqual(findFunctionCall(calls, 'f'), { a: 1 });
  assert.equal(findFunctionCall(calls, 'g'), null);
});

test('assembleView touches only the newest items that could fit, and measures each item once', () => {
  let stringified = 0;
  const item = (i) => ({ id: `m${i}`, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: `message number ${i} `.repeat(5) }],
    toJSON() { stringified++; const { toJSON, ...plain } = this; return plain; } });
  const backing = Array.from({ length: 100_000 }, (_, i) => item(i));
  let reads = 0;
  const history = new Proxy(backing, { get: (target, key) => (typeof key === 'string' && /^\d+$/.test(key) && reads++, target[key]) });
  const policy = { tokenBudget: 2_000, responseReserve: 100, overflow: 'truncate' };
  const view = assembleView({ systemPromptItems: [], layerOutputItems: [], historyItems: history, policy });
  assert.ok(view.length > 10 && view.length < 200, `kept ${view.length}`);
  assert.equal(view.at(-1), backing.at(-1), 'the newest item is kept, as the very object');
  assert.ok(reads < 3 * view.length + 10, `read ${reads} items for a view of ${view.length}`);
  const measuredOnce = stringified;
  assert.ok(measuredOnce <= view.length + 1, `measured ${measuredOnce}`);
  assembleView({ systemPromptItems: [], layerOutputItems: [], historyItems: backing, policy });
  assert.equal(stringified, measuredOnce, 'a second projection measures nothing again');
});

// The documented plan, measured over the whole history: keep the system items, then layer items that fit in order,
// then the newest history items while they fit (a sliding window first keeps the last windowSize), then drop tool
// calls and outputs whose partner was not kept.
function referenceView({ systemPromptItems, layerOutputItems, historyItems, policy }) {
  const cost = (item) => Math.ceil(JSON.stringify(item).length / 4);
  let left = Math.max(0, policy.tokenBudget - policy.responseReserve);
  for (const item of systemPromptItems) left -= cost(item);
  left = Math.max(0, left);
  const layers = [];
  for (const item of layerOutputItems) if (cost(item) <= left) (layers.push(item), (left -= cost(item)));
  const sliding = policy.overflow !== 'truncate' && policy.overflow !== 'summarize';
  const windowed = sliding && policy.windowSize > 0 ? historyItems.slice(-policy.windowSize) : historyItems;
  const kept = [];
  for (let i = windowed.length - 1; i >= 0 && cost(windowed[i]) <= left; i--) (kept.unshift(windowed[i]), (left -= cost(windowed[i])));
  const calls = new Set(kept.filter((i) => i.type === 'function_call').map((i) => i.callId));
  const outputs = new Set(kept.filter((i) => i.type === 'function_call_output').map((i) => i.callId));
  const paired = kept.filter((i) => (i.type === 'function_call' ? outputs.has(i.callId) : i.type === 'function_call_output' ? calls.has(i.callId) : true));
  return [...systemPromptItems, ...layers, ...paired];
}

test('assembleView gives the same view as the plan measured over the whole history (random histories)', () => {
  let seed = 12345;
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  const message = (i, role) => ({ id: `m${i}`, type: 'message', role, status: 'completed', content: [{ type: 'input_text', text: 'x'.repeat(rand(400)) }] });
  for (let round = 0; round < 200; round++) {
    const history = [];
    for (let i = 0; history.length < rand(300); i++) {
      if (rand(4) === 0) {
        const callId = `c${round}-${i}`;
        history.push({ id: `f${i}`, type: 'function_call', callId, name: 't', arguments: '{}', status: 'completed' });
        if (rand(5) !== 0) history.push({ id: `o${i}`, type: 'function_call_output', callId, output: 'y'.repeat(rand(200)) });
      } else history.push(message(i, rand(2) ? 'user' : 'assistant'));
    }
    const input = {
      systemPromptItems: rand(2) ? [message('s', 'developer')] : [],
      layerOutputItems: Array.from({ length: rand(4) }, (_, i) => message(`l${i}`, 'developer')),
      historyItems: history,
      policy: { tokenBudget: 200 + rand(6000), responseReserve: rand(300), overflow: ['truncate', 'sliding_window', undefined][rand(3)], windowSize: rand(3) ? undefined : 1 + rand(50) },
    };
    const ours = assembleView(input).map((i) => i.id);
    const reference = referenceView(input).map((i) => i.id);
    assert.deepEqual(ours, reference, `round ${round}: ${JSON.stringify(input.policy)}`);
  }
});

test('createScopedStorage confines a storage adapter to one layer and scope, where the harness keeps that layer', async () => {
  const storage = createInMemoryStorage();
  const scoped = createScopedStorage(storage, 'notes', 'thread-1');
  await scoped.set('draft', { text: 'hi' });
  await scoped.set('sub/a', 1);
  await storage.set('layers/notes/thread-2/draft', 'other scope');
  assert.deepEqual(await storage.get('layers/notes/thread-1/draft'), { text: 'hi' });
  assert.deepEqual(await scoped.get('draft'), { text: 'hi' });
  assert.equal(await scoped.get('missing'), null);
  assert.deepEqual((await scoped.list()).sort(), ['draft', 'sub/a']);
  assert.deepEqual(await scoped.list('sub/'), ['sub/a'], 'the asked-for prefix stays on the keys');
  await scoped.delete('draft');
  assert.equal(await storage.get('layers/notes/thread-1/draft'), null);

  // A thread-scoped layer's durable state is where the scoped view of its id and thread finds it.
  const layer = { id: 'notes', slot: 10, scope: 'thread', hooks: { init: async () => ({ state: { n: 1 } }), store: async ({ state }) => ({ state: { n: state.n + 1 } }) } };
  const h = new AgentHarness({ name: 'scoped', params: {}, storage, memory: [layer], initialStep: step.llm({ id: 'chat', model: 'm' }), llm: { provider: 'scripted', script: [{ text: 'ok' }] } });
  await h.execute('hello', { threadId: 'thread-1' });
  await h.getAgentResponse({ threadId: 'thread-1' });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(await scoped.get('state'), { n: 2 });

  assert.throws(() => createScopedStorage({ get() {} }, 'l', 's'), (e) => e.code === 'INVALID_STORAGE');
  assert.throws(() => createScopedStorage(storage, 7, 's'), (e) => e.code === 'INVALID_STORAGE' && /layerId/.test(e.message));
});
