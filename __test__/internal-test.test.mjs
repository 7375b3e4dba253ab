// `/internal/test`: contexts and logs built by hand, as upstream's tests build them (issue 9).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { AgentHarness, execute, fork, isNoeticError, loop, step, until } from '../js/index.mjs';
import { ChannelStore, ContextImpl, ItemLogImpl } from '../js/internal-test.mjs';

// What upstream's tests pass as a harness: an object with a model and adapters, no runtime of its own.
const standIn = (callModel = async () => { throw new Error('no model here'); }) => ({ config: { name: 'stand-in', params: {} }, fs: { kind: 'fs' }, callModel });
const reply = (text) => ({ items: [{ type: 'message', role: 'assistant', id: 'r', status: 'completed', content: [{ type: 'output_text', text }] }], usage: { inputTokens: 3, outputTokens: 2 } });
const message = (text) => ({ type: 'message', role: 'user', id: text, status: 'completed', content: [{ type: 'input_text', text }] });
const failureOf = async (promise) => {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('expected a rejection');
};

test('a hand-built context starts empty, shows the harness it was given and counts the steps execute runs in it', async () => {
  const harness = standIn();
  const ctx = new ContextImpl({ harness, threadId: 't-1' });
  assert.ok(ctx instanceof ContextImpl);
  assert.deepEqual([ctx.stepCount, ctx.cost, ctx.depth, ctx.parent, ctx.threadId, ctx.resourceId], [0, 0, 0, null, 't-1', undefined]);
  assert.deepEqual(ctx.state, {});
  assert.equal(ctx.harness, harness);
  assert.equal(ctx.fs, harness.fs);
  assert.equal(ctx.span.parentSpanId, null);
  assert.equal(await execute(step.run({ id: 'len', execute: (s) => s.length }), 'hello', ctx), 5);
  assert.equal(await execute(step.run({ id: 'up', execute: (s) => s.toUpperCase() }), 'b', ctx), 'B');
  assert.equal(ctx.stepCount, 2);
});

test("an LLM step in a hand-built context calls its stand-in harness's model, also from a fork's children", async () => {
  const seen = [];
  const harness = standIn(async (params) => {
    seen.push(params.items.at(-1).content[0].text);
    return reply(`re: ${params.items.at(-1).content[0].text}`);
  });
  const ctx = new ContextImpl({ harness });
  assert.equal(await execute(step.llm({ id: 'ask', model: 'm' }), 'first', ctx), 're: first');
  const both = fork({ id: 'both', mode: 'all', paths: () => [step.llm({ id: 'a', model: 'm' }), step.llm({ id: 'b', model: 'm' })], merge: (r) => r.join('|') });
  assert.equal(await execute(both, 'second', ctx), 're: second|re: second');
  assert.deepEqual(seen, ['first', 'second', 'second']);
  // As upstream, a fork's children count their own usage; the context counts its own call only.
  assert.deepEqual(ctx.tokens, { input: 3, output: 2, total: 5, cached: 0 });
  const failing = new ContextImpl({ harness: standIn() });
  assert.match((await failureOf(execute(step.llm({ id: 'x', model: 'm' }), 'hi', failing))).message, /no model here/);
});

test('counters are writable and the runtime sees what was written', async () => {
  const ctx = new ContextImpl({ harness: standIn() });
  ctx.cost = 2.5;
  ctx.stepCount = 7;
  ctx.tokens.input = 10;
  ctx.tokens.output = 4;
  ctx.lastStepMeta = { cost: 0.01 };
  assert.deepEqual([ctx.cost, ctx.stepCount, ctx.tokens, ctx.lastStepMeta], [2.5, 7, { input: 10, output: 4, total: 14 }, { cost: 0.01 }]);
  // A loop stops on cost it did not spend itself.
  let rounds = 0;
  const spend = loop({ id: 'spend', steps: [step.run({ id: 'r', execute: () => ++rounds })], until: until.maxCost(2) });
  await execute(spend, null, ctx);
  assert.equal(rounds, 1);
  assert.equal(ctx.stepCount, 9);
  assert.throws(() => (ctx.cost = -1), /cannot be set/);
  assert.throws(() => (ctx.stepCount = 1.5), /cannot be set/);
});

test('parents chain by identity, and a context 64 deep refuses to run a step', async () => {
  let ctx = new ContextImpl({ harness: standIn() });
  const root = ctx;
  for (let i = 0; i < 64; i++) ctx = new ContextImpl({ harness: standIn(), parent: ctx });
  assert.equal(ctx.depth, 64);
  let walk = ctx;
  while (walk.parent) walk = walk.parent;
  assert.equal(walk, root);
  const error = await failureOf(execute(step.run({ id: 'deep', execute: (x) => x }), 'x', ctx));
  assert.ok(isNoeticError(error));
  assert.equal(error.noeticError.kind, 'step_failed');
  assert.match(error.noeticError.cause.message, /Maximum spawn depth/);
  assert.equal(await execute(step.run({ id: 'shallow', execute: (x) => x }), 'ok', ctx.parent), 'ok');
  // A parent from another harness cannot be linked.
  const other = new AgentHarness({ name: 'other', params: {} }).createContext();
  assert.throws(() => new ContextImpl({ harness: standIn(), parent: other }), (e) => e.code === 'INVALID_CONTEXT_OPTIONS');
});

test('channels: none unless a store is given; an abort ends only its own waits', async () => {
  const ch = { name: 'jobs', schema: z.string(), mode: 'queue' };
  const bare = new ContextImpl({ harness: standIn() });
  await assert.rejects(bare.recv(ch), /No channel store configured/);
  await assert.rejects(bare.send(ch, 'x'), /No channel store configured/);
  assert.throws(() => bare.tryRecv(ch), /No channel store configured/);

  const store = new ChannelStore();
  const a = new ContextImpl({ harness: standIn(), channelStore: store });
  const b = new ContextImpl({ harness: standIn(), channelStore: store });
  const waitA = a.recv(ch, { timeout: 1000 });
  const waitB = b.recv(ch, { timeout: 1000 });
  a.abort('stop a');
  const cancelled = await failureOf(waitA);
  assert.deepEqual([cancelled.noeticError.kind, cancelled.noeticError.reason], ['cancelled', 'stop a']);
  store.send(ch, 'for b');
  assert.equal(await waitB, 'for b');
  assert.equal(a.abortReason, 'stop a');
  await assert.rejects(execute(step.run({ id: 'late', execute: (x) => x }), 'x', a), (e) => e.noeticError?.kind === 'cancelled');
});

test('given items, state, checkpoint and a real harness', async () => {
  const first = message('one');
  let checkpoints = 0;
  const ctx = new ContextImpl({ harness: standIn(), items: [first], state: { n: 1 }, checkpointFn: async () => void checkpoints++ });
  assert.equal(ctx.itemLog.items[0], first);
  assert.deepEqual(ctx.state, { n: 1 });
  await ctx.checkpoint();
  assert.equal(checkpoints, 1);
  await new ContextImpl({ harness: standIn() }).checkpoint();
  ctx.complete('done');
  assert.deepEqual([ctx.completed, ctx.completionValue], [true, 'done']);

  const harness = new AgentHarness({ name: 'real', params: {}, _testCallModel: async () => reply('real model') });
  const real = new ContextImpl({ harness, id: 'chosen-id' });
  assert.equal(real.id, 'chosen-id');
  assert.equal(real.harness, harness);
  assert.equal(await execute(step.llm({ id: 'l', model: 'm' }), 'hi', real), 'real model');
  assert.throws(() => new ContextImpl({ harness, id: 'chosen-id' }), /already exists/);
  assert.throws(() => new ContextImpl({}), (e) => e.code === 'INVALID_CONTEXT_OPTIONS');
});

test('ItemLogImpl is a log of its own: identity kept, unknown items refused, its items read-only', () => {
  const log = new ItemLogImpl();
  assert.ok(log instanceof ItemLogImpl);
  const a = message('a');
  const call = { type: 'function_call', id: 'f', status: 'completed', callId: 'c1', name: 'f', arguments: '{}' };
  log.append(a);
  log.append(call);
  log.append({ type: 'openrouter:datetime', id: 'e', status: 'completed' });
  assert.equal(log.items.length, 3);
  assert.equal(log.items[0], a);
  assert.equal(log.items[1], call);
  assert.throws(() => Array.prototype.push.call(log.items, message('b')), TypeError);
  assert.throws(() => log.append({ type: 'no_such_item' }));
  assert.equal(log.items.length, 3);
});

test("a loop's inbox reads the store its context was given: a parked sender it lets through is resolved, a receive's value awaited; without one it has nothing to read", async () => {
  const inbox = { name: 'inbox', schema: z.string(), mode: 'queue', capacity: 1 };
  const store = new ChannelStore();
  const ctx = new ContextImpl({ harness: standIn(), channelStore: store });
  let runs = 0;
  const body = step.run({ id: 'body', execute: async () => ++runs });
  const once = (parkTimeout) => loop({ id: 'l', steps: [body], until: until.maxSteps(1), inbox, parkTimeout });
  // The harness's own store is another: a message there is not this context's.
  await new AgentHarness({ name: 'other', params: {} }).send(inbox, 'elsewhere', ctx);
  await store.send(inbox, 'first');
  const parked = store.send(inbox, 'second');
  assert.equal(await execute(once(0), 0, ctx), 3);
  await parked;
  assert.deepEqual(ctx.itemLog.items.map((item) => item.content[0].text), ['first', 'second']);
  // Parked, the loop takes what is sent meanwhile; a thenable is awaited as a receive's value is, not when read as is.
  runs = 0;
  setTimeout(() => store.send(inbox, { then: (resolve) => resolve('awaited') }), 5);
  assert.equal(await execute(once(200), 0, ctx), 2);
  await store.send(inbox, { then: (resolve) => resolve('never read') });
  runs = 0;
  assert.equal(await execute(once(0), 0, ctx), 2);
  assert.deepEqual(ctx.itemLog.items.slice(2).map((item) => item.content[0].text), ['awaited', '[object Object]']);
  // No store: a parked loop gets nothing, an unparked one fails as the store call would.
  const bare = new ContextImpl({ harness: standIn() });
  runs = 0;
  assert.equal(await execute(once(20), 0, bare), 1);
  await assert.rejects(execute(once(0), 0, bare), /No channel store configured/);
});
