// projectHistory (issue 10, spec §11.1): a read-side projection of the history each model call sees.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, createMessage, step } from '../js/index.mjs';
import { numberedReplies, slow } from './helpers.mjs';

const textOf = (item) => item.content?.[0]?.text ?? item.type;

test('layers project the history in slot order, each given what the one before returned; the log is untouched', async () => {
  const { model, requests } = numberedReplies();
  const calls = [];
  const windowed = { id: 'window', slot: 275, scope: 'execution', hooks: { projectHistory: async ({ items, signal }) => (calls.push(['window', items.length, signal instanceof AbortSignal]), { items: items.slice(-2) }) } };
  const summary = { id: 'summary', slot: 300, scope: 'execution', hooks: { projectHistory: async ({ items }) => (calls.push(['summary', items.length]), { items: [createMessage('earlier: elided', 'user'), ...items] }) } };
  const h = new AgentHarness({ name: 'p', params: {}, memory: [summary, windowed], _testCallModel: model });
  const ctx = h.createContext();
  for (const q of ['q1', 'q2', 'q3']) await h.run(step.llm({ id: 'ask', model: 'm' }), q, ctx);
  assert.deepEqual(requests.map((items) => items.map(textOf)), [['earlier: elided', 'q1'], ['earlier: elided', 'r1', 'q2'], ['earlier: elided', 'r2', 'q3']]);
  assert.deepEqual(calls.slice(-2), [['window', 5, true], ['summary', 2]]);
  // The log keeps everything; the model is handed the log's own objects where the projection kept them.
  assert.deepEqual(ctx.itemLog.items.map(textOf), ['q1', 'r1', 'q2', 'r2', 'q3', 'r3']);
  assert.equal(requests[2][2], ctx.itemLog.items[4]);
});

test('a projection that interleaves its own items with the log’s reaches the model whole, however many entries', { timeout: slow(60_000) }, async () => {
  // 150,000 entries, alternating log runs and made items: more than one call can take as arguments.
  const { model, requests } = numberedReplies();
  const note = createMessage('note', 'developer');
  const interleave = { id: 'interleave', slot: 1, scope: 'execution', hooks: { projectHistory: async ({ items }) => ({ items: items.flatMap((item) => [item, note]) }) } };
  const h = new AgentHarness({
    name: 'p',
    params: {},
    memory: [interleave],
    projection: { tokenBudget: 100_000_000, responseReserve: 0, overflow: 'truncate' },
    _testCallModel: model,
  });
  const items = Array.from({ length: 75_000 - 1 }, (_, i) => createMessage(`m${i}`, 'user'));
  const ctx = h.createContext({ items });
  await h.run(step.llm({ id: 'ask', model: 'm' }), 'last', ctx);
  const [sent] = requests;
  assert.equal(sent.length, 150_000);
  assert.equal(textOf(sent[0]), 'm0');
  assert.equal(textOf(sent[1]), 'note');
  assert.equal(textOf(sent[149_998]), 'last');
  assert.equal(sent[2], ctx.itemLog.items[1]);
});

test('a projectHistory that throws, answers without items, or returns a non-item is a diagnostic; the history passes it unchanged', async () => {
  const diagnostics = [];
  const cases = [
    async () => { throw new Error('boom'); },
    async () => ({ kept: [] }),
    async ({ items }) => ({ items: [...items, { no: 'type' }] }),
  ];
  for (const projectHistory of cases) {
    const { model, requests } = numberedReplies();
    const h = new AgentHarness({ name: 'p', params: {}, memory: [{ id: 'bad', slot: 1, scope: 'execution', hooks: { projectHistory } }], _testCallModel: model, onDiagnostic: (d) => diagnostics.push(`${d.layerId}/${d.hook}`) });
    assert.equal(await h.run(step.llm({ id: 'ask', model: 'm' }), 'hello'), 'r1');
    assert.deepEqual(requests[0].map(textOf), ['hello']);
  }
  assert.deepEqual(diagnostics, ['bad/projectHistory', 'bad/projectHistory', 'bad/projectHistory']);
});

test('the projection runs once per model attempt: a steering guide sees the guidance projected too', async () => {
  const { model, requests } = numberedReplies();
  let projections = 0;
  let guided = false;
  const layer = {
    id: 'both', slot: 10, scope: 'execution',
    hooks: {
      projectHistory: async ({ items }) => (projections++, { items: items.filter((i) => i.role !== 'developer' || textOf(i) !== 'hidden') }),
      afterModelCall: async () => ({ decision: guided ? { action: 'allow' } : ((guided = true), { action: 'guide', guidance: 'shorter' }) }),
    },
  };
  const h = new AgentHarness({ name: 'p', params: {}, memory: [layer], _testCallModel: model });
  const ctx = h.createContext({ items: [createMessage('hidden', 'developer')] });
  assert.equal(await h.run(step.llm({ id: 'ask', model: 'm' }), 'go', ctx), 'r2');
  assert.equal(projections, 2);
  assert.deepEqual(requests.map((items) => items.map(textOf)), [['go'], ['go', 'shorter']]);
});

test('a projection that picks log items out of order, deep in a long log, shows the log’s own items in its order', async () => {
  const { model, requests } = numberedReplies();
  // The first question, then the newest two items in reverse: positions jump back and forth in the log.
  const picker = { id: 'picker', slot: 10, scope: 'execution', hooks: { projectHistory: async ({ items }) => ({ items: [items[0], items.at(-1), items.at(-2)] }) } };
  const h = new AgentHarness({ name: 'p', params: {}, memory: [picker], _testCallModel: model });
  const ctx = h.createContext();
  for (let i = 0; i < 40; i++) await h.run(step.llm({ id: 'ask', model: 'm' }), `q${i}`, ctx);
  const last = requests.at(-1);
  // The model's answers are named by call: the answer to q38 is r39.
  assert.deepEqual(last.map(textOf), ['q0', 'q39', 'r39']);
  const log = ctx.itemLog.items;
  assert.equal(last[0], log[0]);
  assert.equal(last[1], log[78]);
  assert.equal(last[2], log[77]);
});
