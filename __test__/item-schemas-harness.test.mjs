// The harness puts items that enter from JS to its item schemas (with its layers' and tools'): seeded history,
// execute input, createContext and appended items, recalled items, onItemAppend output and model replies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { AgentHarness, ItemSchemaRegistry, createMessage, loop, step, tool, until } from '../js/index.mjs';
import { Ticket, assistant, isMismatch, ticket } from './helpers.mjs';

// A test model that replies with `items` once, then plain text; it records the items it was sent.
function replying(items) {
  const sent = [];
  const model = async (request) => {
    sent.push(request.items);
    return { items: sent.length === 1 ? items : [assistant('done')], usage: { inputTokens: 1, outputTokens: 1 } };
  };
  return { model, sent };
}

const chat = step.llm({ id: 'chat', model: 'test/model' });

test('harness.itemSchemas is a registry of the itemSchemas option under strictItemSchemas', () => {
  const strict = new AgentHarness({ name: 't', params: {}, itemSchemas: { items: [Ticket] } });
  assert.ok(strict.itemSchemas instanceof ItemSchemaRegistry);
  assert.deepEqual(strict.itemSchemas.extensions.items, [Ticket]);
  assert.equal(strict.itemSchemas.strictUnknownExtensions, true);
  const lenient = new AgentHarness({ name: 't', params: {}, strictItemSchemas: false });
  assert.equal(lenient.itemSchemas.strictUnknownExtensions, false);
  assert.equal(lenient.config.strictItemSchemas, false);
});

test('seeded history: an extension item is admitted when a schema accepts it, rejected at once otherwise', async () => {
  const { model, sent } = replying([assistant('ok')]);
  const harness = new AgentHarness({ name: 't', params: {}, initialStep: chat, _testCallModel: model, itemSchemas: { items: [Ticket] } });
  const history = [createMessage('before', 'user'), ticket('t1', { note: 'undeclared field' })];
  harness.seedSessionHistory('T', history);
  await harness.execute('now', { threadId: 'T' });
  await harness.getAgentResponse({ threadId: 'T' });
  assert.equal(sent[0][1], history[1], 'the seeded object itself reaches the model');

  // The right type with the wrong shape, and a type no schema knows, fail the turn that first reads the seed.
  const refused = async (h, threadId, items, expected) => {
    h.seedSessionHistory(threadId, items);
    await h.execute('now', { threadId });
    await assert.rejects(h.getAgentResponse({ threadId }), expected);
  };
  await refused(harness, 'U', [createMessage('a', 'user'), ticket('t2', { priority: 'high' })], isMismatch({ category: 'items', itemType: 'acme:ticket' }, 'seedSessionHistory items[1]'));
  await refused(harness, 'V', [{ type: 'acme:incident' }], isMismatch({ category: 'items', itemType: 'acme:incident' }));
  assert.equal(sent.length, 1, 'no refused seed reached the model');
  // Without schemas, strict (the default) rejects it; strictItemSchemas: false admits it.
  const plain = new AgentHarness({ name: 't', params: {}, initialStep: chat, _testCallModel: model });
  await refused(plain, 'T', history, isMismatch({ category: 'items', itemType: 'acme:ticket' }, 'seedSessionHistory items[1]'));
  const lenient = new AgentHarness({ name: 't', params: {}, initialStep: chat, _testCallModel: model, strictItemSchemas: false });
  lenient.seedSessionHistory('T', [{ type: 'acme:anything' }]);
  await lenient.execute('now', { threadId: 'T' });
  const response = await lenient.getAgentResponse({ threadId: 'T' });
  assert.equal(response.items[0].type, 'acme:anything');
});

test("a layer's own item schemas admit items seeded into and executed on the harness it belongs to", async () => {
  const { model, sent } = replying([assistant('ok')]);
  const tickets = { id: 'tickets', slot: 300, scope: 'thread', itemSchemas: { items: [Ticket] }, hooks: {} };
  const harness = new AgentHarness({ name: 't', params: {}, initialStep: chat, _testCallModel: model, memory: [tickets] });
  harness.seedSessionHistory('T', [ticket('seeded')]);
  await harness.execute([ticket('input')], { threadId: 'T' });
  await harness.getAgentResponse({ threadId: 'T' });
  assert.deepEqual(sent[0].map((item) => item.id), ['seeded', 'input']);
  // The layer's schema does not travel to a message that names other layers.
  await assert.rejects(harness.execute(ticket('other'), { threadId: 'V', memory: [] }), isMismatch({ category: 'items', itemType: 'acme:ticket' }));
});

test('execute input: an extension item is queued when a schema accepts it and rejected when none does', async () => {
  const { model, sent } = replying([assistant('ok')]);
  const harness = new AgentHarness({ name: 't', params: {}, initialStep: chat, _testCallModel: model, itemSchemas: { items: [Ticket] } });
  await harness.execute([createMessage('look at this', 'user'), ticket('t1')]);
  await harness.getAgentResponse();
  assert.deepEqual(sent[0].map((item) => item.type), ['message', 'acme:ticket']);
  await assert.rejects(harness.execute({ type: 'acme:incident' }), isMismatch({ category: 'items', itemType: 'acme:incident' }));
  assert.equal(harness.getQueueSize(), 0, 'nothing was queued');
});

test('model replies: extension items pass with a schema of the harness, a layer or a tool, and fail the run without', async () => {
  const seen = step.run({ id: 'seen', execute: async (_input, ctx) => ctx.itemLog.items.map((item) => item.type) });
  const run = (opts) => {
    const { model } = replying([ticket('r1'), assistant('ok')]);
    const harness = new AgentHarness({ name: 't', params: {}, _testCallModel: model, ...opts.harness });
    return harness.run(loop({ id: 'l', steps: [opts.llm ?? chat, seen], until: until.maxSteps(1) }), 'hi');
  };
  const expected = ['message', 'acme:ticket', 'message'];
  assert.deepEqual(await run({ harness: { itemSchemas: { items: [Ticket] } } }), expected);
  const layer = { id: 'tickets', slot: 300, scope: 'thread', itemSchemas: { items: [Ticket] }, hooks: {} };
  assert.deepEqual(await run({ harness: { memory: [layer] } }), expected);
  const lookup = tool({ name: 'lookup', description: 'Looks a ticket up.', input: z.object({}), execute: async () => 'none', itemSchemas: { items: [Ticket] } });
  assert.deepEqual(await run({ llm: step.llm({ id: 'chat', model: 'test/model', tools: [lookup] }) }), expected);
  assert.deepEqual(await run({ harness: { strictItemSchemas: false } }), expected);
  await assert.rejects(run({ harness: {} }), isMismatch({ category: 'items', itemType: 'acme:ticket' }));
  const Other = z.object({ type: z.literal('acme:other') });
  await assert.rejects(run({ harness: { itemSchemas: { items: [Other] } } }), isMismatch({ category: 'items', itemType: 'acme:ticket' }));
});

test("createContext items and ctx.itemLog.append are put to the context's schemas, its layers' included", async () => {
  const layer = { id: 'tickets', slot: 300, scope: 'thread', itemSchemas: { items: [Ticket] }, hooks: {} };
  const harness = new AgentHarness({ name: 't', params: {} });
  assert.throws(() => harness.createContext({ items: [ticket('t0')] }), isMismatch({ category: 'items', itemType: 'acme:ticket' }, 'createContext items[0]'));
  const ctx = harness.createContext({ items: [ticket('t1')], memory: [layer] });
  assert.deepEqual(ctx.itemSchemas.extensions.items, [Ticket]);
  assert.equal(harness.createContext().itemSchemas, harness.itemSchemas, 'no layer schemas: the harness registry itself');
  ctx.itemLog.append(ticket('t2'));
  assert.throws(() => ctx.itemLog.append(ticket('t3', { priority: 'urgent' })), isMismatch({ category: 'items', itemType: 'acme:ticket' }));
  assert.throws(() => ctx.itemLog.append({ type: 'acme:incident' }), isMismatch({ category: 'items', itemType: 'acme:incident' }));
  assert.deepEqual(ctx.itemLog.items.map((item) => item.id), ['t1', 't2']);
});

test("recall: a layer's items pass its schemas; a string its developer-message schemas must admit, or the layer adds nothing", async () => {
  const Marked = z.object({ role: z.literal('developer'), content: z.array(z.object({ text: z.string().startsWith('[memo]') })) });
  const layer = (id, slot, recalled, itemSchemas) => ({ id, slot, scope: 'execution', itemSchemas, hooks: { recall: async () => recalled } });
  const diagnostics = [];
  const { model, sent } = replying([assistant('ok')]);
  const harness = new AgentHarness({
    name: 't',
    params: {},
    _testCallModel: model,
    onDiagnostic: (d) => diagnostics.push(d),
    memory: [
      layer('tickets', 100, { items: [ticket('recalled')], tokenCount: 5 }, { items: [Ticket] }),
      layer('unregistered', 110, { items: [{ id: 'x', type: 'acme:incident' }], tokenCount: 5 }),
      layer('memo', 120, '[memo] kept', { developerMessages: [Marked] }),
      layer('loose', 130, 'not a memo', { developerMessages: [Marked] }),
    ],
  });
  await harness.run(chat, 'hi');
  const texts = sent[0].map((item) => (item.type === 'message' ? item.content[0].text : item.id));
  assert.deepEqual(texts, ['recalled', '[memo] kept', 'hi']);
  assert.deepEqual(diagnostics.map((d) => [d.layerId, d.hook]), [['unregistered', 'recall'], ['loose', 'recall']]);
  assert.match(diagnostics[1].message, /developerMessages extension schema/);
});

test("onItemAppend: what the last hook passes on is put to the context's schemas", async () => {
  const adding = (id, extra, itemSchemas) => ({ id, slot: 100, scope: 'execution', itemSchemas, hooks: { onItemAppend: async ({ items }) => ({ items: [...items, extra] }) } });
  const { model, sent } = replying([assistant('ok')]);
  const admitted = new AgentHarness({ name: 't', params: {}, _testCallModel: model, memory: [adding('a', ticket('added'), { items: [Ticket] })] });
  await admitted.run(chat, 'hi');
  assert.deepEqual(sent[0].map((item) => item.type), ['message', 'acme:ticket']);
  const refused = new AgentHarness({ name: 't', params: {}, _testCallModel: model, memory: [adding('a', ticket('bad', { priority: 'x' }), { items: [Ticket] })] });
  await assert.rejects(refused.run(chat, 'hi'), (e) => e.noeticError?.kind === 'item_schema_mismatch');
});

test('harness.callModel with a test model puts the reply to the registry with the request’s layers and tools', async () => {
  const { model } = replying([ticket('r1')]);
  const harness = new AgentHarness({ name: 't', params: {}, _testCallModel: model });
  await assert.rejects(harness.callModel({ model: 'm', items: [] }), isMismatch({ category: 'items', itemType: 'acme:ticket' }));
  const layer = { id: 'tickets', slot: 1, itemSchemas: { items: [Ticket] }, hooks: {} };
  const { model: again } = replying([ticket('r2')]);
  const withLayer = new AgentHarness({ name: 't', params: {}, _testCallModel: again });
  const response = await withLayer.callModel({ model: 'm', items: [], layers: [layer] });
  assert.equal(response.items[0].id, 'r2');
});
