// onItemAppend: the step's input passes through the layers' hooks in slot order before it enters the log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, createMessage, step } from '../js/index.mjs';
import { recordingModel } from './helpers.mjs';

const textOf = (item) => item.content?.[0]?.text;

function appender(id, slot, onItemAppend) {
  return { id, slot, scope: 'execution', hooks: { init: async () => ({ state: { seen: [] } }), onItemAppend } };
}

test('hooks chain in slot order: each sees what the one before passed on, and may transform or add items', async () => {
  const calls = [];
  const redact = appender('redact', 20, async ({ items, state, log }) => {
    calls.push(['redact', items.map(textOf), log.items.length]);
    return { items: items.map((item) => ({ ...item, content: [{ type: 'input_text', text: textOf(item).replace('1234', '****') }] })), state: { seen: [...state.seen, items.length] } };
  });
  const note = appender('note', 10, async ({ items }) => {
    calls.push(['note', items.map(textOf)]);
    return { items: [...items, createMessage('(sent from a phone)', 'developer')] };
  });
  const { model, requests } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, memory: [redact, note], _testCallModel: model });
  const ctx = harness.createContext();
  await harness.run(step.llm({ id: 'ask', model: 'm' }), 'my pin is 1234', ctx);
  assert.deepEqual(calls, [['note', ['my pin is 1234']], ['redact', ['my pin is 1234', '(sent from a phone)'], 0]]);
  assert.deepEqual(requests[0].items.map(textOf), ['my pin is ****', '(sent from a phone)']);
  assert.deepEqual(ctx.itemLog.items.slice(0, 2).map(textOf), ['my pin is ****', '(sent from a phone)']);
});

test('a hook that returns no items ends the pipeline: nothing is appended and later hooks are not asked', async () => {
  const calls = [];
  const drop = appender('drop', 1, async () => { calls.push('drop'); return { items: [] }; });
  const later = appender('later', 2, async ({ items }) => { calls.push('later'); return { items }; });
  const { model, requests } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, memory: [later, drop], _testCallModel: model });
  await harness.run(step.llm({ id: 'ask', model: 'm' }), 'ignore me');
  assert.deepEqual(calls, ['drop']);
  assert.deepEqual(requests[0].items, []);
});

test('a hook that throws or answers without items is a diagnostic, and its input passes on unchanged', async () => {
  const diagnostics = [];
  const broken = appender('broken', 1, async () => { throw new Error('append failed'); });
  const sloppy = appender('sloppy', 2, async () => ({ state: { seen: ['x'] } }));
  const upper = appender('upper', 3, async ({ items }) => ({ items: items.map((item) => ({ ...item, content: [{ type: 'input_text', text: textOf(item).toUpperCase() }] })) }));
  const { model, requests } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, memory: [broken, sloppy, upper], _testCallModel: model, onDiagnostic: (d) => diagnostics.push(d) });
  await harness.run(step.llm({ id: 'ask', model: 'm' }), 'hello');
  assert.deepEqual(diagnostics.map((d) => [d.layerId, d.hook, d.message]), [
    ['broken', 'onItemAppend', 'append failed'],
    ['sloppy', 'onItemAppend', 'onItemAppend must return { items }'],
  ]);
  assert.deepEqual(requests[0].items.map(textOf), ['HELLO']);
});

test('an injected item that is not a valid item fails the step with item_schema_mismatch', async () => {
  const bad = appender('bad', 1, async ({ items }) => ({ items: [...items, { type: 'no_such_item' }] }));
  const { model } = recordingModel();
  const harness = new AgentHarness({ name: 't', params: {}, memory: [bad], _testCallModel: model });
  await assert.rejects(harness.run(step.llm({ id: 'ask', model: 'm' }), 'hi'), (e) => e.noeticError?.kind === 'item_schema_mismatch' || /item_schema_mismatch|no_such_item/.test(e.message));
});
