// Spawn context strategies (DECISIONS D12, M6): contextIn seeds the child's log, contextOut shapes what the parent
// receives. Without them a spawn behaves as upstream's: an empty child log, the child's output as it is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { AgentHarness, step, spawn, isNoeticError } from '../js/index.mjs';

const message = (role, text) => ({ type: 'message', role, content: text });
const history = [message('user', 'plan the trip'), message('assistant', 'to Lisbon'), message('user', 'book it')];
const texts = (items) => items.map((i) => (typeof i.content === 'string' ? i.content : i.content?.[0]?.text));

function harness(extra = {}) {
  return new AgentHarness({ name: 'spawner', params: {}, ...extra });
}

// A child that records what its log holds when it starts.
function recorder(seen) {
  return step.run({
    id: 'recorder',
    execute: async (input, ctx) => {
      seen.push(texts(ctx.itemLog.items));
      return `done:${input}`;
    },
  });
}

test('without contextIn the child starts empty; inherit copies the parent log without sharing it', async () => {
  const h = harness();
  const seen = [];
  const ctx = h.createContext({ items: history });
  assert.equal(await h.run(spawn({ id: 'plain', child: recorder(seen) }), 'x', ctx), 'done:x');
  const appender = step.run({
    id: 'appender',
    execute: async (input, child) => {
      seen.push(texts(child.itemLog.items));
      child.itemLog.append(message('assistant', 'child only'));
      return input;
    },
  });
  await h.run(spawn({ id: 'inherit', child: appender, contextIn: 'inherit' }), 'y', ctx);
  assert.deepEqual(seen, [[], ['plan the trip', 'to Lisbon', 'book it']]);
  assert.deepEqual(texts(ctx.itemLog.items), ['plan the trip', 'to Lisbon', 'book it'], 'the parent log is untouched');
});

test('subset hands select the parent items and state; custom builds the log from the input and parent context', async () => {
  const h = harness();
  const seen = [];
  const ctx = h.createContext({ items: history, state: { keep: 'user' } });
  let args;
  const subset = spawn({
    id: 'subset',
    child: recorder(seen),
    contextIn: {
      strategy: 'subset',
      select: (items, state) => {
        args = { count: items.length, state };
        return items.filter((i) => i.role === state.keep);
      },
    },
  });
  await h.run(subset, 'a', ctx);
  assert.deepEqual(args, { count: 3, state: { keep: 'user' } });
  const custom = spawn({
    id: 'custom',
    child: recorder(seen),
    contextIn: { strategy: 'custom', build: async (input, parent) => [message('developer', `${input} at depth ${parent.depth}`)] },
  });
  await h.run(custom, 'brief', ctx);
  assert.deepEqual(seen, [['plan the trip', 'book it'], ['brief at depth 0']]);
});

test('a select or build that returns no items fails the spawn with a clear error', async () => {
  const h = harness();
  const bad = (build) => spawn({ id: 'bad', child: recorder([]), contextIn: { strategy: 'custom', build } });
  await assert.rejects(h.run(bad(() => 'text'), 'x'), (e) => e.code === 'INVALID_CONTEXT_ITEMS' && /array of items/.test(e.message));
  await assert.rejects(h.run(bad(() => [message('user', 'ok'), { role: 'user' }]), 'x'), (e) => e.code === 'INVALID_CONTEXT_ITEMS' && /index 1/.test(e.message));
  await assert.rejects(
    h.run(bad(() => { throw new Error('no context today'); }), 'x'),
    (e) => isNoeticError(e) && e.noeticError.kind === 'step_failed' && e.noeticError.stepId === 'bad' && /no context today/.test(e.message),
  );
});

test('contextOut summary asks the model about the child conversation and returns its text', async () => {
  const requests = [];
  const h = harness({
    _testCallModel: async (request) => {
      const { model, items } = request;
      requests.push({ model, items: texts(items), keys: Object.keys(request) });
      const text = requests.length === 1 ? 'Booked TAP 123 for Friday.' : 'The flight is booked.';
      return { items: [{ type: 'message', role: 'assistant', id: `m${requests.length}`, content: [{ type: 'output_text', text }] }], usage: { inputTokens: 5, outputTokens: 2 } };
    },
  });
  const child = step.llm({ id: 'worker', model: 'test/worker' });
  const ctx = h.createContext();
  const out = await h.run(spawn({ id: 'delegate', child, contextOut: { strategy: 'summary', prompt: 'One line, please.' } }), 'book the flight', ctx);
  assert.equal(out, 'The flight is booked.');
  assert.equal(requests.length, 2);
  // A call beside the child's steps: the model and the items, nothing else (as a layer's ctx.callModel request).
  assert.deepEqual(requests[1], { model: 'test/worker', items: ['book the flight', 'Booked TAP 123 for Friday.', 'One line, please.'], keys: ['model', 'items'] });
  assert.deepEqual(texts(ctx.itemLog.items), [], 'neither the child log nor the summary reaches the parent log');

  // A named model is used; the scripted provider answers summaries too.
  const scripted = harness({ llm: { provider: 'scripted', script: [{ text: 'worked' }, { text: 'summary text' }] } });
  assert.equal(await scripted.run(spawn({ id: 's', child, contextOut: { strategy: 'summary', model: 'test/small' } }), 'go'), 'summary text');
});

test('contextOut summary without a model to ask fails as step_failed', async () => {
  const h = harness({ llm: { provider: 'scripted', script: [] } });
  const child = step.run({ id: 'plain', execute: async () => 'raw' });
  await assert.rejects(
    h.run(spawn({ id: 'sum', child, contextOut: 'summary' }), 'x'),
    (e) => isNoeticError(e) && e.noeticError.kind === 'step_failed' && e.noeticError.stepId === 'sum' && /no model/.test(e.message),
  );
  const none = harness();
  const llmChild = step.llm({ id: 'w', model: 'm' });
  await assert.rejects(none.run(spawn({ id: 'sum2', child: llmChild, contextOut: { strategy: 'summary', model: 'm' } }), 'x'), (e) => isNoeticError(e) || e.code !== undefined);
});

test('contextOut schema parses the output, llm_parse_error when it does not fit; onReturn sees the parsed value', async () => {
  const schema = z.object({ city: z.string(), nights: z.number() });
  const h = harness();
  const child = (value) => step.run({ id: 'emit', execute: async () => value });
  const parsed = await h.run(spawn({ id: 'typed', child: child({ city: 'Lisbon', nights: 3, extra: true }), contextOut: { strategy: 'schema', schema } }), null);
  assert.deepEqual(parsed, { city: 'Lisbon', nights: 3 }, 'the schema strips what it does not know');
  await assert.rejects(
    h.run(spawn({ id: 'typed', child: child({ city: 'Lisbon' }), contextOut: { strategy: 'schema', schema } }), null),
    (e) => isNoeticError(e) && e.noeticError.kind === 'llm_parse_error' && e.noeticError.stepId === 'typed' && e.noeticError.schema === schema && e.noeticError.zodError.issues.length === 1,
  );

  const returned = [];
  const layer = { id: 'audit', slot: 10, scope: 'execution', hooks: { onSpawn: async () => ({ childState: {} }), onReturn: async ({ result }) => (returned.push(result), { result: { ...result, audited: true } }) } };
  const withLayer = harness({ memory: [layer] });
  const out = await withLayer.run(spawn({ id: 'typed', child: child({ city: 'Porto', nights: 1, x: 1 }), contextOut: { strategy: 'schema', schema } }), null, withLayer.createContext());
  assert.deepEqual(returned, [{ city: 'Porto', nights: 1 }]);
  assert.deepEqual(out, { city: 'Porto', nights: 1, audited: true });
});

test('inherited items come before onSpawn items', async () => {
  const layer = { id: 'brief', slot: 10, scope: 'execution', hooks: { onSpawn: async () => ({ childState: {}, items: [message('developer', 'brief')] }) } };
  const h = harness({ memory: [layer] });
  const seen = [];
  const ctx = h.createContext({ items: history.slice(0, 1) });
  await h.run(spawn({ id: 'sp', child: recorder(seen), contextIn: 'inherit' }), 'x', ctx);
  assert.deepEqual(seen, [['plan the trip', 'brief']]);
});

test('bad strategies are configuration errors when the spawn is built', () => {
  const child = step.run({ id: 'c', execute: async () => null });
  const code = (opts) => {
    try {
      spawn({ id: 'sp', child, ...opts });
    } catch (e) {
      return e.code;
    }
    return 'built';
  };
  assert.equal(code({ contextIn: 'everything' }), 'INVALID_CONTEXT_IN');
  assert.equal(code({ contextIn: { strategy: 'subset' } }), 'INVALID_CONTEXT_IN');
  assert.equal(code({ contextIn: { strategy: 'custom', build: 'x' } }), 'INVALID_CONTEXT_IN');
  assert.equal(code({ contextOut: 'compressed' }), 'INVALID_CONTEXT_OUT');
  assert.equal(code({ contextOut: { strategy: 'schema' } }), 'INVALID_CONTEXT_OUT');
  assert.equal(code({ contextOut: { strategy: 'summary', model: 7 } }), 'INVALID_CONTEXT_OUT');
  assert.equal(code({ contextIn: { strategy: 'inherit' }, contextOut: { strategy: 'full' } }), 'built');
});
