// historyWindow (issue 11, spec §20.3): the built-in projectHistory layer, run natively inside a harness.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, NoeticConfigError, historyWindow, spawn, step } from '../js/index.mjs';
import { numberedReplies } from './helpers.mjs';

let ids = 0;
const createMessage = (text, role) => ({ id: `m${ids++}`, type: 'message', role, content: [{ type: role === 'assistant' ? 'output_text' : 'input_text', text }] });

const textOf = (item) => item.content?.[0]?.text ?? item.type;

// Counts the hook batches the native side sends to JS.
function countBatches(harness) {
  const runtime = harness._runtime;
  const counted = { hooks: 0 };
  const pump = runtime.pump;
  runtime.pump = (batch) => {
    // A batch is flat: `[id, foreground, message, ...]`.
    const requests = batch ? JSON.parse(batch) : [];
    for (let i = 2; i < requests.length; i += 3) if (requests[i].op === 'hooks') counted.hooks++;
    return pump.call(runtime, batch);
  };
  return counted;
}

test('the model sees the newest maxItems items and the system anchor; the log keeps everything, with no crossing', async () => {
  const { model, requests } = numberedReplies();
  const h = new AgentHarness({ name: 'w', params: {}, memory: [historyWindow({ maxItems: 4 })], _testCallModel: model });
  const counted = countBatches(h);
  const ctx = h.createContext({ items: [createMessage('be brief', 'system')] });
  for (let i = 1; i <= 6; i++) await h.run(step.llm({ id: 'ask', model: 'm' }), `q${i}`, ctx);
  assert.deepEqual(requests[1].map(textOf), ['be brief', 'q1', 'r1', 'q2']);
  assert.deepEqual(requests[5].map(textOf), ['be brief', 'r4', 'q5', 'r5', 'q6']);
  assert.equal(ctx.itemLog.items.length, 13);
  // The model is handed the log's own objects.
  assert.equal(requests[5].at(-1), ctx.itemLog.items[11]);
  assert.equal(counted.hooks, 0, 'a harness whose only layer is built in sends no hook batch to JS');
});

test('JS layers before and after it in slot order see the history as the stages before them left it', async () => {
  const { model, requests } = numberedReplies();
  const seen = [];
  // Slot 10 runs first: it hides notes. Slot 300 runs after the window (275): it sees the window and adds a summary.
  const hide = { id: 'hide', slot: 10, scope: 'execution', hooks: { projectHistory: async ({ items }) => ({ items: items.filter((i) => !textOf(i).startsWith('note')) }) } };
  const summary = {
    id: 'summary', slot: 300, scope: 'execution',
    hooks: { projectHistory: async ({ items }) => (seen.push(items.map(textOf)), { items: [createMessage('summary', 'developer'), ...items] }) },
  };
  const h = new AgentHarness({ name: 'w', params: {}, memory: [summary, historyWindow({ maxItems: 3 }), hide], _testCallModel: model });
  const ctx = h.createContext({ items: ['q0', 'note a', 'r0', 'note b'].map((t, i) => createMessage(t, i % 2 ? 'developer' : i ? 'assistant' : 'user')) });
  await h.run(step.llm({ id: 'ask', model: 'm' }), 'q1', ctx);
  // hide leaves [q0, r0, q1]; within the cap of 3, the window passes it on.
  assert.deepEqual(seen[0], ['q0', 'r0', 'q1']);
  await h.run(step.llm({ id: 'ask', model: 'm' }), 'q2', ctx);
  // hide leaves [q0, r0, q1, r1, q2]; the window keeps the newest three.
  assert.deepEqual(seen[1], ['q1', 'r1', 'q2']);
  assert.deepEqual(requests[1].map(textOf), ['summary', 'q1', 'r1', 'q2']);
  assert.equal(requests[1][1], ctx.itemLog.items[4], 'log items stay the log’s objects through every stage');
});

test('a spawned child does not inherit the window (it has no onSpawn), as upstream', async () => {
  const { model, requests } = numberedReplies();
  const h = new AgentHarness({ name: 'w', params: {}, memory: [historyWindow({ maxItems: 2 })], _testCallModel: model });
  const ctx = h.createContext({ items: ['a', 'b', 'c', 'd'].map((t, i) => createMessage(t, i % 2 ? 'assistant' : 'user')) });
  await h.run(step.llm({ id: 'ask', model: 'm' }), 'e', ctx);
  assert.deepEqual(requests[0].map(textOf), ['d', 'e']);
  await h.run(spawn({ id: 'child', child: step.llm({ id: 'ask', model: 'm' }), contextIn: 'inherit' }), 'f', ctx);
  assert.ok(requests[1].length > 2, `the child's history is not windowed: ${requests[1].map(textOf)}`);
});

test('ctx.harness.projectHistory windows the items it is given', async () => {
  const h = new AgentHarness({ name: 'w', params: {}, memory: [], _testCallModel: numberedReplies().model });
  const ctx = h.createContext({});
  const layer = historyWindow({ maxItems: 2 });
  const history = ['u1', 'a1', 'u2', 'a2', 'u3'].map((t, i) => createMessage(t, i % 2 ? 'assistant' : 'user'));
  await h.initLayers([layer], ctx);
  const projected = await h.projectHistory([layer], history, ctx);
  assert.deepEqual(projected.map(textOf), ['a2', 'u3']);
  assert.equal(history.length, 5);
});

test('the hook called directly keeps identity: the very array within the cap, the given objects over it', async () => {
  const layer = historyWindow({ maxItems: 3 });
  const items = ['u1', 'a1', 'u2'].map((t, i) => createMessage(t, i % 2 ? 'assistant' : 'user'));
  assert.equal((await layer.hooks.projectHistory({ items })).items, items);
  const longer = [createMessage('sys', 'system'), ...items, createMessage('a2', 'assistant'), createMessage('u3', 'user')];
  const { items: kept } = await layer.hooks.projectHistory({ items: longer });
  assert.deepEqual(kept.map(textOf), ['sys', 'u2', 'a2', 'u3']);
  assert.equal(kept[0], longer[0]);
  assert.deepEqual(await layer.hooks.init({}), { state: null });
  assert.equal(layer.slot, 275);
  assert.equal(layer.scope, 'execution');
});

test('a tool-only burst cannot pull the whole history back in', async () => {
  const layer = historyWindow({ maxItems: 2 });
  const calls = Array.from({ length: 29 }, (_, i) => ({ type: 'function_call', callId: `c${i}`, name: 't', arguments: '{}' }));
  const { items } = await layer.hooks.projectHistory({ items: [createMessage('u', 'user'), ...calls] });
  assert.deepEqual(items, [], 'eight orphan calls are kept, then stripped');
});

test('maxItems outside [2, 10000], fractional or not a number is INVALID_HISTORY_WINDOW_MAX_ITEMS', () => {
  for (const bad of [1, 0, -1, 2.5, 10001, Number.NaN, Number.POSITIVE_INFINITY, '40']) {
    assert.throws(() => historyWindow({ maxItems: bad }), (e) => e instanceof NoeticConfigError && e.code === 'INVALID_HISTORY_WINDOW_MAX_ITEMS' && e.message.endsWith(`got ${bad}`));
  }
  assert.equal(historyWindow({ maxItems: null }).hooks.projectHistory !== undefined, true);
});
