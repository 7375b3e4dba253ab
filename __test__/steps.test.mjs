// The step language beyond run/llm/loop/spawn: step.tool, branch, fork, and step.run's retry (issue 9).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { AgentHarness, NoeticErrorImpl, branch, fork, loop, spawn, step, tool, until } from '../js/index.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const harness = () => new AgentHarness({ name: 'steps', params: {} });
const value = (id, v) => step.run({ id, execute: async () => v });
const later = (id, ms, v) => step.run({ id, execute: () => sleep(ms).then(() => v) });
const failing = (id, message) => step.run({ id, execute: async () => { throw new Error(message); } });
const codeOf = (fn) => {
  try {
    fn();
  } catch (e) {
    return `${e.code}: ${e.message}`;
  }
  return 'no error';
};

test('builders check what upstream checks, with its codes and messages', () => {
  const s = value('s', 1);
  assert.equal(codeOf(() => step.run({ id: '  ', execute: async () => 1 })), 'EMPTY_STEP_ID: step.run() requires a non-empty id.');
  assert.equal(codeOf(() => step.run({ id: 'r' })), 'MISSING_EXECUTE_FUNCTION: step.run() requires an execute function.');
  assert.equal(codeOf(() => step.llm({ id: 'l', model: ' ' })), 'MISSING_MODEL: step.llm() requires a non-empty model.');
  assert.equal(codeOf(() => step.tool({ id: 't' })), 'MISSING_TOOL: step.tool() requires a tool.');
  assert.equal(codeOf(() => tool({ name: '', execute: async () => 1 })), 'EMPTY_TOOL_NAME: tool() requires a non-empty name.');
  assert.equal(codeOf(() => loop({ id: 'l', steps: [], until: until.never() })), 'MISSING_LOOP_BODY: loop() requires at least one body step.');
  assert.equal(codeOf(() => loop({ id: 'l', steps: [s] })), 'MISSING_UNTIL_PREDICATE: loop() requires an until predicate.');
  assert.equal(codeOf(() => branch({ id: '' , route: () => null })), 'EMPTY_STEP_ID: branch() requires a non-empty id.');
  assert.equal(codeOf(() => branch({ id: 'b' })), 'MISSING_ROUTE_FUNCTION: branch() requires a route function.');
  assert.equal(codeOf(() => fork({ id: 'f', mode: 'all', paths: () => [s] })), "MISSING_MERGE_FUNCTION: fork() mode 'all' requires a merge function.");
  assert.equal(codeOf(() => fork({ id: 'f', mode: 'settle', paths: () => [s] })), "MISSING_MERGE_FUNCTION: fork() mode 'settle' requires a merge function.");
  assert.match(codeOf(() => fork({ id: 'f', mode: 'first', paths: () => [s] })), /^INVALID_FORK_MODE: .*"first"/);
  assert.match(codeOf(() => fork({ id: 'f', mode: 'race' })), /^MISSING_PATHS_FUNCTION/);
  assert.match(codeOf(() => fork({ id: 'f', mode: 'race', paths: () => [s], concurrency: 0 })), /^INVALID_CONCURRENCY: .*0/);
  // A race needs no merge; the built step keeps every option as given.
  const race = fork({ id: 'f', mode: 'race', paths: () => [s], concurrency: 2 });
  assert.deepEqual({ ...race, paths: undefined }, { kind: 'fork', id: 'f', mode: 'race', paths: undefined, concurrency: 2 });
  assert.equal(branch({ id: 'b', route: () => null }).kind, 'branch');
});

test('branch: the route sees the input and the context; null passes the input through, unchanged', async () => {
  const h = harness();
  const input = { n: 7 };
  const seen = [];
  const double = step.run({ id: 'double', execute: async (x) => x.n * 2 });
  const route = (x, ctx) => {
    seen.push([x, typeof ctx.stepCount]);
    return x.n > 5 ? double : null;
  };
  assert.equal(await h.run(branch({ id: 'b', route }), input), 14);
  assert.equal(await h.run(branch({ id: 'b', route: async () => null }), input), input);
  assert.deepEqual(seen, [[input, 'number']]);
  // The branch and the step it chose both count.
  const counted = step.run({ id: 'count', execute: async (_x, ctx) => ctx.stepCount });
  assert.equal(await h.run(branch({ id: 'b', route: () => counted }), input), 2);
});

test("branch: a route's own error propagates as it is; a route returning anything but a step is named", async () => {
  const h = harness();
  const exploded = new Error('route exploded');
  await assert.rejects(h.run(branch({ id: 'b', route: () => { throw exploded; } }), 1), (e) => e === exploded);
  await assert.rejects(h.run(branch({ id: 'b', route: () => 'next' }), 1), (e) => e.code === 'INVALID_STEP' && /"next", not a step/.test(e.message));
  await assert.rejects(h.run(branch({ id: 'b', route: () => undefined }), 1), (e) => e.code === 'INVALID_STEP' && /undefined/.test(e.message));
  // The harness goes on working.
  assert.equal(await h.run(branch({ id: 'b', route: () => value('v', 'fine') }), 1), 'fine');
});

test('fork all: values in path order whatever the finish order; merge gets them with the fork context', async () => {
  const h = harness();
  const merged = [];
  const merge = (results, ctx) => {
    merged.push(typeof ctx.id);
    return results.join(',');
  };
  const paths = () => [later('a', 30, 'a'), later('b', 1, 'b'), value('c', 'c')];
  assert.equal(await h.run(fork({ id: 'f', mode: 'all', paths, merge }), 'x'), 'a,b,c');
  assert.deepEqual(merged, ['string']);
  // concurrency 1 runs the paths one after another, in order.
  const order = [];
  const noting = (id) => step.run({ id, execute: async () => { order.push(`${id}+`); await sleep(5); order.push(`${id}-`); return id; } });
  await h.run(fork({ id: 'f', mode: 'all', paths: () => [noting('p'), noting('q')], merge: (r) => r, concurrency: 1 }), 'x');
  assert.deepEqual(order, ['p+', 'p-', 'q+', 'q-']);
  // No paths: merge of nothing.
  assert.deepEqual(await h.run(fork({ id: 'f', mode: 'all', paths: () => [], merge: (r) => r }), 'x'), []);
});

test('fork all fails fast: siblings are aborted, queued paths never start, and fork_partial lists both sides in path order', async () => {
  const h = harness();
  const ran = [];
  const slow = loop({
    id: 'slow',
    steps: [step.run({ id: 'tick', execute: async (x) => { ran.push('tick'); await sleep(20); return x; } })],
    until: until.maxSteps(50),
  });
  const quick = later('quick', 10, 6);
  const queued = step.run({ id: 'queued', execute: async () => ran.push('queued') });
  const paths = () => [quick, slow, failing('bad', 'nope'), queued];
  await assert.rejects(h.run(fork({ id: 'f', mode: 'all', paths, merge: (r) => r, concurrency: 3 }), 'x'), (e) => {
    assert.equal(e.message, "Fork 'f' partial failure: 1 succeeded, 3 failed");
    const { succeeded, failed } = e.noeticError;
    assert.deepEqual(succeeded, [{ stepId: 'quick', value: 6 }]);
    assert.deepEqual(failed.map((f) => [f.stepId, f.error.kind]), [['slow', 'cancelled'], ['bad', 'step_failed'], ['queued', 'cancelled']]);
    assert.equal(failed[0].error.reason, "fork 'f' sibling failed");
    assert.ok(failed[1].error.cause instanceof Error && failed[1].error.cause.message === 'nope');
    return true;
  });
  assert.ok(ran.filter((r) => r === 'tick').length < 5, 'the slow path stopped at its next step');
  assert.ok(!ran.includes('queued'));
});

test('fork settle: every outcome reaches merge as a SettleResult, in path order', async () => {
  const h = harness();
  const results = await h.run(fork({ id: 'f', mode: 'settle', paths: () => [later('a', 10, 1), failing('b', 'err-b')], merge: (r) => r }), 'x');
  assert.deepEqual(results[0], { stepId: 'a', status: 'fulfilled', value: 1 });
  assert.equal(results[1].status, 'rejected');
  assert.equal(results[1].stepId, 'b');
  assert.equal(results[1].error.kind, 'step_failed');
  assert.equal(results[1].error.cause.message, 'err-b');
  assert.ok(!('value' in results[1]));
});

test("fork race: the first success wins, the losers are aborted, and the winner's state becomes the context's", async () => {
  const h = harness();
  const ctx = h.createContext({ state: { winner: 'none' } });
  const ran = [];
  const loser = loop({
    id: 'loser',
    steps: [step.run({ id: 'lose', execute: async (x) => { ran.push('lose'); await sleep(15); return x; } })],
    until: until.maxSteps(20),
  });
  const winner = step.run({ id: 'win', execute: async (_x, inner) => { await sleep(5); inner.state = { winner: 'win' }; return 'won'; } });
  assert.equal(await h.run(fork({ id: 'f', mode: 'race', paths: () => [loser, failing('early', 'no'), winner] }), 'x', ctx), 'won');
  await sleep(40);
  assert.ok(ran.length <= 2, `the loser stopped (${ran.length} steps)`);
  assert.deepEqual(ctx.state, { winner: 'win' });
  // Every path failing is fork_partial with the failures; no paths at all is one with none.
  await assert.rejects(h.run(fork({ id: 'f', mode: 'race', paths: () => [failing('a', 'x'), failing('b', 'y')] }), 'x'), (e) => e.noeticError.kind === 'fork_partial' && e.noeticError.failed.length === 2);
  await assert.rejects(h.run(fork({ id: 'f', mode: 'race', paths: () => [] }), 'x'), (e) => e.message === "Fork 'f' partial failure: 0 succeeded, 0 failed");
});

test('a fork with a concurrency limit is a pool: a path that ends lets the next one start, whatever runs before it', async () => {
  const h = harness();
  for (const mode of ['all', 'settle']) {
    const order = [];
    // The first path ends only once the third has started (or after two seconds, which a pool never needs): only a
    // pool can start the third while the first still runs.
    let thirdStarted;
    const started = new Promise((resolve) => (thirdStarted = resolve));
    const first = step.run({ id: 'first', execute: async () => { await Promise.race([started, sleep(2000)]); order.push('end first'); return 'first'; } });
    const second = step.run({ id: 'second', execute: async () => 'second' });
    const third = step.run({ id: 'third', execute: async () => { order.push('start third'); thirdStarted(); return 'third'; } });
    const merge = (results) => results.map((r) => r.value ?? r).join();
    const out = await h.run(fork({ id: 'f', mode, concurrency: 2, paths: () => [first, second, third], merge }), 'x');
    assert.equal(out, 'first,second,third', "results keep the paths' order");
    assert.deepEqual(order, ['start third', 'end first'], `${mode}: the third path started while the first still ran`);
  }
});

test("a race's loser that checks its context after the race is over finds it aborted, as cooperative cancellation asks", async () => {
  const h = harness();
  const seen = [];
  const loser = step.run({
    id: 'slow',
    execute: async (_x, inner) => {
      await sleep(30);
      seen.push([inner.aborted, inner.abortReason, inner.depth, inner.threadId, inner.state, typeof inner.tokens.input]);
      return 'too late';
    },
  });
  const winner = step.run({ id: 'quick', execute: async () => 'first' });
  assert.equal(await h.run(fork({ id: 'f', mode: 'race', paths: () => [loser, winner] }), 'x', h.createContext({ threadId: 'T', state: { n: 1 } })), 'first');
  await sleep(60);
  assert.deepEqual(seen, [[true, 'race lost', 1, 'T', { n: 1 }, 'number']]);
});

test('fork paths run in child contexts: a copy of the log, their appends stay theirs, one deeper', async () => {
  const h = harness();
  const ctx = h.createContext({ items: [{ id: 'seed', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: 'hi' }] }] });
  const look = (id) => step.run({
    id,
    execute: async (_x, child) => {
      child.itemLog.append({ id: `from-${id}`, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: id }] });
      return [child.depth, child.parent?.id === ctx.id, child.itemLog.items.map((item) => item.id)];
    },
  });
  const [a, b] = await h.run(fork({ id: 'f', mode: 'all', paths: () => [look('a'), look('b')], merge: (r) => r }), 'x', ctx);
  assert.deepEqual(a, [1, true, ['seed', 'from-a']]);
  assert.deepEqual(b, [1, true, ['seed', 'from-b']]);
  assert.deepEqual(ctx.itemLog.items.map((item) => item.id), ['seed']);
});

test('fork: a paths function that gives no array, or a merge that throws, is a clear error; the harness goes on', async () => {
  const h = harness();
  await assert.rejects(h.run(fork({ id: 'f', mode: 'race', paths: () => 'a' }), 'x'), (e) => e.code === 'INVALID_FORK_PATHS');
  await assert.rejects(h.run(fork({ id: 'f', mode: 'race', paths: () => [42] }), 'x'), (e) => e.code === 'INVALID_STEP' && /paths\[0\]/.test(e.message));
  const broken = new Error('merge broke');
  await assert.rejects(h.run(fork({ id: 'f', mode: 'all', paths: () => [value('a', 1)], merge: () => { throw broken; } }), 'x'), (e) => e === broken);
  assert.equal(await h.run(fork({ id: 'f', mode: 'race', paths: () => [value('a', 'ok')] }), 'x'), 'ok');
});

test('step.tool: the input with args over it, checked by the tool schema; failures are step_failed', async () => {
  const h = harness();
  const seen = [];
  const search = tool({
    name: 'search',
    input: z.object({ query: z.string(), limit: z.number().default(10) }),
    execute: async (args, toolCtx) => {
      seen.push([args, typeof toolCtx.ctx.id, Array.isArray(toolCtx.assembledView)]);
      return `${args.query}:${args.limit}`;
    },
  });
  assert.equal(await h.run(step.tool({ id: 't', tool: search }), { query: 'a' }), 'a:10');
  assert.equal(await h.run(step.tool({ id: 't', tool: search, args: { limit: 5 } }), { query: 'b', limit: 9 }), 'b:5');
  assert.deepEqual(seen.map(([args]) => args), [{ query: 'a', limit: 10 }, { query: 'b', limit: 5 }]);
  assert.deepEqual(seen[0].slice(1), ['string', true]);
  await assert.rejects(h.run(step.tool({ id: 't', tool: search }), { query: 3 }), (e) => e.noeticError.kind === 'step_failed' && /^Step 't' failed: Tool input validation failed/.test(e.message));
  const broke = new Error('tool broke');
  const bad = tool({ name: 'bad', execute: async () => { throw broke; } });
  await assert.rejects(h.run(step.tool({ id: 'b', tool: bad }), {}), (e) => e.message === "Step 'b' failed: tool broke" && e.noeticError.cause === broke);
  // A NoeticError from the tool passes through unchanged.
  const cancelling = tool({ name: 'c', execute: async () => { throw new NoeticErrorImpl({ kind: 'cancelled', reason: 'stop' }); } });
  await assert.rejects(h.run(step.tool({ id: 'c', tool: cancelling }), {}), (e) => e.noeticError.kind === 'cancelled');
  // A generator tool runs to its end; its return value is the output.
  const counting = tool({ name: 'g', execute: async function* () { yield 1; yield 2; return 'done'; } });
  assert.equal(await h.run(step.tool({ id: 'g', tool: counting }), {}), 'done');
});

test('step.run retry: tries again with the backoff, then step_failed with retriesExhausted; a cancellation is not retried', async () => {
  const h = harness();
  let attempts = 0;
  const flaky = step.run({ id: 'flaky', retry: { maxAttempts: 3, backoff: 'linear', initialDelay: 5 }, execute: async () => (++attempts < 3 ? Promise.reject(new Error('flaky')) : attempts) });
  const started = Date.now();
  assert.equal(await h.run(flaky, 0), 3);
  assert.ok(Date.now() - started >= 14, 'waited 5 then 10 ms');
  attempts = 0;
  const never = step.run({ id: 'never', retry: { maxAttempts: 2, backoff: 'fixed', initialDelay: 0 }, execute: async () => { attempts++; throw new Error('boom'); } });
  await assert.rejects(h.run(never, 0), (e) => e.message === "Step 'never' failed: boom" && e.noeticError.retriesExhausted === true);
  assert.equal(attempts, 2);
  attempts = 0;
  const cancelled = step.run({ id: 'c', retry: { maxAttempts: 5, backoff: 'fixed', initialDelay: 0 }, execute: async () => { attempts++; throw new NoeticErrorImpl({ kind: 'cancelled', reason: 'shutting down' }); } });
  await assert.rejects(h.run(cancelled, 0), (e) => e.noeticError.kind === 'cancelled' && e.noeticError.reason === 'shutting down');
  assert.equal(attempts, 1);
  await assert.rejects(() => h.run(step.run({ id: 'r', retry: { maxAttempts: 'three' }, execute: async () => 1 }), 0), (e) => e.code === 'INVALID_RETRY_POLICY');
});

test('timers from user numbers: a spawn timeout past 2^31 ms or Infinity waits, NaN or negative is refused; an endless retry backoff waits until aborted', async () => {
  const h = harness();
  const slowish = later('slowish', 20, 'late');
  for (const timeout of [2 ** 31, Infinity]) assert.equal(await h.run(spawn({ id: `sp-${timeout}`, child: slowish, timeout }), null), 'late');
  for (const timeout of [NaN, -1, 'soon']) {
    assert.equal(codeOf(() => spawn({ id: 'sp-bad', child: slowish, timeout })), `INVALID_TIMEOUT: spawn 'sp-bad': the timeout is ${typeof timeout === 'string' ? '"soon"' : timeout}; expected a number of milliseconds, 0 or more.`);
  }
  // A retry whose backoff is Infinity waits (this was a Rust panic); a spawn's timeout aborts it, and it ends.
  let attempts = 0;
  const flaky = step.run({ id: 'flaky', retry: { maxAttempts: 3, initialDelay: Infinity, maxDelay: Infinity }, execute: async () => { attempts++; throw new Error('not yet'); } });
  await assert.rejects(h.run(spawn({ id: 'bounded', child: flaky, timeout: 50 }), null), /Spawn 'bounded' timed out after 50ms/);
  assert.equal(attempts, 1, 'the second attempt waits for ever');
});

test('provide: more layers for the child, in the same context, and only while it runs; no layer hook but theirs runs', async () => {
  const { provide, createMessage } = await import('../js/index.mjs');
  assert.equal(codeOf(() => provide({ id: ' ', child: value('c', 1), memory: [] })), 'EMPTY_STEP_ID: provide() requires a non-empty id.');
  assert.equal(codeOf(() => provide({ id: 'p', memory: [] })), 'MISSING_CHILD_STEP: provide() requires a child step.');
  const calls = [];
  const noting = (id, text, withInit = true) => ({
    id,
    slot: 10,
    scope: 'execution',
    hooks: {
      ...(withInit ? { init: async () => (calls.push(`init:${id}`), { state: {} }) } : {}),
      recall: async () => (calls.push(`recall:${id}`), { items: [createMessage(text, 'developer')], tokenCount: 5 }),
    },
  });
  const seen = [];
  const h = new AgentHarness({
    name: 'p',
    params: {},
    memory: [noting('outer', 'from outer'), noting('shared', 'outer version')],
    _testCallModel: async (request) => {
      seen.push(request.items.filter((item) => item.role === 'developer').map((item) => item.content[0].text));
      return { items: [{ id: `a${seen.length}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }], usage: {} };
    },
  });
  const ctx = h.createContext({ state: { n: 0 } });
  const ask = step.llm({ id: 'ask', model: 'm' });
  const inner = step.run({ id: 'inner', execute: async (_x, c) => { c.state = { n: 1 }; return c.id; } });
  const body = loop({ id: 'body', steps: [ask, inner], until: until.maxSteps(1) });
  // A provided layer with an init hook never initialised is skipped, by the skip gate as upstream's.
  const provided = provide({ id: 'p', child: body, memory: [noting('extra', 'from extra', false), noting('shared', 'inner version'), noting('gated', 'never')] });
  assert.equal(await h.run(provided, 'hi', ctx), ctx.id, 'the child ran in the same context');
  await h.run(ask, 'again', ctx);
  // Outer layers less the replaced one, then the provided ones (equal slots keep that order).
  assert.deepEqual(seen[0], ['from outer', 'from extra', 'inner version']);
  assert.deepEqual(seen[1], ['from outer', 'outer version'], 'the layers are back as they were');
  assert.deepEqual(ctx.state, { n: 1 }, 'state changes are the context\'s own');
  assert.equal(ctx.itemLog.items.length, 4, 'both runs appended to the one log');
  assert.ok(!calls.includes('init:gated') && !calls.includes('recall:gated'), 'provided layers are not initialised');
  // A failing child puts the layers back too.
  const broken = provide({ id: 'p2', child: failing('x', 'child broke'), memory: [noting('extra', 'from extra', false)] });
  await assert.rejects(h.run(broken, 'x', ctx), /child broke/);
  await h.run(ask, 'third', ctx);
  assert.deepEqual(seen[2], ['from outer', 'outer version']);
});

test('until: verified, converged (exact, or by embeddings kept in a cache), outputContains, outputEquals, custom, never', async () => {
  const { cosineSimilarity, createInMemoryStorage } = await import('../js/index.mjs');
  const snap = (lastText, lastOutput = lastText) => ({ stepCount: 1, cost: 0, elapsed: 0, tokens: {}, lastOutput, lastText, history: [], depth: 0 });
  const verified = until.verified(async (out) => ({ pass: out === 'good', feedback: `saw ${out}` }));
  assert.deepEqual(await verified(snap('bad')), { stop: false, reason: undefined, feedback: 'saw bad' });
  assert.deepEqual(await verified(snap('good')), { stop: true, reason: 'Verification passed', feedback: 'saw good' });
  const same = until.converged({});
  assert.deepEqual([same(snap('a')).stop, same(snap('b')).stop, same(snap('b'))], [false, false, { stop: true, reason: 'Output converged' }]);
  // By embeddings: the previous vector is kept in the cache, so a new predicate resumes from it.
  const cache = createInMemoryStorage();
  const vectors = { up: [1, 0], tilted: [0.96, 0.28], side: [0, 1] };
  const embed = async (texts) => texts.map((t) => vectors[t]);
  const first = until.converged({ embed, threshold: 0.9, cache });
  assert.equal((await first(snap('up'))).stop, false);
  const resumed = until.converged({ embed, threshold: 0.9, cache });
  assert.deepEqual(await resumed(snap('tilted')), { stop: true, reason: 'Output converged (similarity: 0.960)' });
  assert.equal((await resumed(snap('side'))).stop, false);
  assert.deepEqual(await cache.get('converge:previousVector'), [0, 1]);
  assert.deepEqual(until.outputContains('DONE')(snap('all DONE now')), { stop: true, reason: 'Output contains marker: DONE' });
  assert.equal(until.outputContains('DONE')(snap('not yet')).stop, false);
  assert.deepEqual(until.outputEquals('END')(snap('END')), { stop: true, reason: 'Output matched sentinel: END' });
  assert.equal(until.outputEquals('END')(snap('THE END')).stop, false);
  const mine = () => ({ stop: true });
  assert.equal(until.custom(mine), mine);
  assert.equal(until.never()(snap('x')).stop, false);
  // In a loop: the body runs until its output carries the marker.
  const h = harness();
  const count = step.run({ id: 'count', execute: async (n) => (typeof n === 'number' ? n + 1 : 1) });
  const toText = step.run({ id: 'text', execute: async (n) => (n >= 3 ? `${n} DONE` : n) });
  assert.equal(await h.run(loop({ id: 'l', steps: [count, toText], until: until.outputContains('DONE') }), 0), '3 DONE');
  // cosineSimilarity itself.
  assert.equal(cosineSimilarity([1, 0], [0, 1]), 0);
  assert.ok(Math.abs(cosineSimilarity([1, 2, 3], [2, 4, 6]) - 1) < 1e-12);
  assert.equal(cosineSimilarity([0, 0], [1, 1]), 0);
  assert.throws(() => cosineSimilarity([1], [1, 2]), /Dimension mismatch: 1 vs 2/);
});

test('isNoeticError: an Error carrying a noeticError with a string kind, never a plain object shaped like one', async () => {
  const { isNoeticError } = await import('../js/index.mjs');
  assert.equal(isNoeticError(new NoeticErrorImpl({ kind: 'cancelled', reason: 'x' })), true);
  assert.equal(isNoeticError(Object.assign(new Error('e'), { noeticError: { kind: 'cancelled' } })), true);
  assert.equal(isNoeticError({ noeticError: { kind: 'cancelled' } }), false);
  assert.equal(isNoeticError(Object.assign(new Error('e'), { noeticError: { kind: 42 } })), false);
  assert.equal(isNoeticError(Object.assign(new Error('e'), { noeticError: null })), false);
});

test("NoeticErrorImpl words each kind's message as upstream does", () => {
  const message = (payload) => new NoeticErrorImpl(payload).message;
  assert.equal(message({ kind: 'step_failed', stepId: 's', cause: new Error('boom'), retriesExhausted: false }), "Step 's' failed: boom");
  assert.equal(message({ kind: 'llm_rate_limit', stepId: 's', retryAfter: 500 }), "LLM rate limited at step 's' (retry after 500ms)");
  assert.equal(message({ kind: 'llm_rate_limit', stepId: 's' }), "LLM rate limited at step 's'");
  assert.equal(message({ kind: 'fork_partial', stepId: 'f', succeeded: [{}], failed: [] }), "Fork 'f' partial failure: 1 succeeded, 0 failed");
  assert.equal(message({ kind: 'channel_timeout', channelName: 'c', timeout: 20 }), "Channel 'c' timed out after 20ms");
  assert.equal(message({ kind: 'cancelled' }), 'Cancelled');
  assert.equal(message({ kind: 'cancelled', reason: 'stop' }), 'Cancelled: stop');
  assert.equal(message({ kind: 'budget_exceeded', field: 'cost', limit: 1, actual: 2 }), 'Budget exceeded: cost limit 1, actual 2');
  assert.equal(message({ kind: 'surprise' }), 'NoeticError: unknown kind');
});

test('the step registry holds every built step by id (the latest wins); execute runs a step in a running context', async () => {
  const { registerStep, lookupStep, getRegistry, execute, createMessage } = await import('../js/index.mjs');
  const first = value('registered-id', 1);
  assert.equal(lookupStep('registered-id'), first);
  const second = value('registered-id', 2);
  assert.equal(lookupStep('registered-id'), second);
  assert.equal(getRegistry().get('registered-id'), second);
  assert.equal(lookupStep('never-built'), null);
  assert.throws(() => registerStep({ kind: 'run', id: ' ' }), (e) => e.code === 'EMPTY_STEP_ID');
  // spawn registers its child too; a child without an id is refused there.
  assert.throws(() => spawn({ id: 's', child: { kind: 'run', id: '' } }), (e) => e.code === 'EMPTY_STEP_ID');
  // execute: a step that runs another in its own context, whose layers initialised once.
  let inits = 0;
  const layer = { id: 'l', slot: 1, scope: 'execution', hooks: { init: async () => (inits++, { state: {} }) } };
  const h = new AgentHarness({ name: 'e', params: {}, memory: [layer] });
  const inner = step.run({ id: 'inner', execute: async (x, ctx) => (ctx.itemLog.append(createMessage(`inner ${x}`, 'user')), `${x}!`) });
  const outer = step.run({ id: 'outer', execute: async (x, ctx) => [await execute(inner, x, ctx), ctx.itemLog.items.length, ctx.stepCount] });
  assert.deepEqual(await h.run(outer, 'go'), ['go!', 1, 2]);
  assert.equal(inits, 1);
  assert.throws(() => execute(inner, 'x', {}), (e) => e.code === 'INVALID_CONTEXT');
});

test('loop: prepareNext makes the next input from the output and the verdict (feedback included); onError retries or skips', async () => {
  const h = harness();
  const seen = [];
  const draft = step.run({ id: 'draft', execute: async (input) => { seen.push(input); return { text: `draft ${seen.length}` }; } });
  const check = until.verified(async (out) => ({ pass: out.text === 'draft 3', feedback: `not yet: ${out.text}` }));
  const prepareNext = (output, verdict, ctx) => ({ previous: output.text, feedback: verdict.feedback, stop: verdict.stop, ctx: typeof ctx.id });
  assert.deepEqual(await h.run(loop({ id: 'l', steps: [draft], until: check, prepareNext }), 'start'), { text: 'draft 3' });
  assert.deepEqual(seen, ['start', { previous: 'draft 1', feedback: 'not yet: draft 1', stop: false, ctx: 'string' }, { previous: 'draft 2', feedback: 'not yet: draft 2', stop: false, ctx: 'string' }]);
  // A predicate reads `text` of an object output as its lastText.
  const texts = [];
  await h.run(loop({ id: 'l', steps: [draft], until: (s) => (texts.push(s.lastText), { stop: true }) }), 'x');
  assert.deepEqual(texts, ['draft 4']);

  let calls = 0;
  const flaky = step.run({ id: 'flaky', execute: async (n) => { calls++; if (calls % 2 === 1) throw new Error(`odd ${calls}`); return n + 1; } });
  const errors = [];
  const retrying = loop({ id: 'r', steps: [flaky], until: until.maxSteps(2), onError: (e, ctx) => (errors.push([e.kind, e.cause.message, typeof ctx.id]), 'retry') });
  assert.equal(await h.run(retrying, 0), 2);
  assert.deepEqual(errors, [['step_failed', 'odd 1', 'string'], ['step_failed', 'odd 3', 'string']]);
  // skip keeps the last good output; anything else fails the loop with the error.
  calls = 1;
  const skipping = loop({ id: 's', steps: [flaky], until: until.maxSteps(2), onError: () => 'skip', maxIterations: 10 });
  assert.equal(await h.run(skipping, 0), 2);
  calls = 0;
  const failing = loop({ id: 'f', steps: [flaky], until: until.maxSteps(2), onError: () => 'give up' });
  await assert.rejects(h.run(failing, 0), (e) => e.message === "Step 'flaky' failed: odd 1");
  // onError never sees a cancellation.
  const cancelling = step.run({ id: 'c', execute: async () => { throw new NoeticErrorImpl({ kind: 'cancelled', reason: 'bye' }); } });
  let asked = 0;
  await assert.rejects(h.run(loop({ id: 'c', steps: [cancelling], until: until.never(), onError: () => (asked++, 'retry') }), 0), (e) => e.noeticError.kind === 'cancelled');
  assert.equal(asked, 0);
});

test('spawn timeout: past it the child is aborted (it stops at its next step) and the spawn fails with step_failed', async () => {
  const h = harness();
  const ran = [];
  const slow = loop({ id: 'slow', steps: [step.run({ id: 'tick', execute: async (x) => { ran.push('tick'); await sleep(15); return x; } })], until: until.maxSteps(100) });
  const started = Date.now();
  await assert.rejects(h.run(spawn({ id: 'bounded', child: slow, timeout: 40 }), 'x'), (e) => e.noeticError?.kind === 'step_failed' && e.message === "Step 'bounded' failed: Spawn 'bounded' timed out after 40ms");
  assert.ok(Date.now() - started < 400);
  const count = ran.length;
  await sleep(40);
  assert.equal(ran.length, count, 'the child stopped');
  // A child that finishes in time is not touched.
  assert.equal(await h.run(spawn({ id: 'quick', child: value('v', 'done'), timeout: 1000 }), 'x'), 'done');
});

test("step.llm output: the reply is parsed by the schema (defaults applied); a reply it cannot take is llm_parse_error", async () => {
  const Weather = z.object({ city: z.string(), celsius: z.number().default(20) });
  const script = [{ text: '{"city":"Paris"}' }, { text: 'sunny, I think' }, { text: '{"city": 3}' }];
  const h = new AgentHarness({ name: 'o', params: {}, llm: { provider: 'scripted', script } });
  const ctx = h.createContext();
  const ask = step.llm({ id: 'weather', model: 'scripted', output: Weather });
  assert.deepEqual(await h.run(ask, 'how is it?', ctx), { city: 'Paris', celsius: 20 });
  await assert.rejects(h.run(ask, 'and now?', ctx), (e) => {
    assert.equal(e.message, "LLM parse error at step 'weather': failed to parse output");
    assert.deepEqual([e.noeticError.kind, e.noeticError.stepId, e.noeticError.raw], ['llm_parse_error', 'weather', 'sunny, I think']);
    assert.equal(e.noeticError.schema, Weather, 'the very schema');
    assert.match(e.noeticError.zodError.issues[0].message, /^Invalid JSON: /);
    return true;
  });
  await assert.rejects(h.run(ask, 'again?', ctx), (e) => e.noeticError.zodError.issues[0].path[0] === 'city');
  // The unparsable replies are still in the log.
  assert.equal(ctx.itemLog.items.filter((item) => item.role === 'assistant').length, 3);
});

test("step.llm emit: false keeps the step's events out of the session stream; a filter picks which go", async () => {
  const seen = async (emit) => {
    const h = new AgentHarness({
      name: 'agent',
      params: {},
      initialStep: step.llm({ id: 'chat', model: 'scripted', emit }),
      llm: { provider: 'scripted', script: [{ text: 'hi' }] },
    });
    const types = [];
    const reading = (async () => {
      for await (const event of h.getFullStream()) {
        types.push(event.type);
        if (event.type === 'agent:turn_completed') return;
      }
    })();
    await h.execute('hello');
    await h.getAgentResponse();
    await reading;
    return types.filter((t) => t.startsWith('agent:step_'));
  };
  assert.deepEqual(await seen(undefined), ['agent:step_started', 'agent:step_completed']);
  assert.deepEqual(await seen(false), []);
  assert.deepEqual(await seen((type, data) => type === 'step_completed' && data.kind === 'llm'), ['agent:step_completed']);
});

test('tool(): upstream keys; decorateResultItem shapes the log item (the model still gets the output); generator tools', async () => {
  const { toolWithGenerator } = await import('../js/index.mjs');
  const lookup = tool({
    name: 'lookup',
    description: 'Looks a word up.',
    input: z.object({ word: z.string() }),
    execute: async ({ word }) => ({ word, meaning: `the meaning of ${word}` }),
    decorateResultItem: ({ baseItem, callItem, args, result, error }) => ({ ...baseItem, source: 'dictionary', asked: args.word, name: callItem.name, found: !error && result.word === args.word }),
  });
  assert.deepEqual(Object.keys(lookup), ['name', 'description', 'input', 'output', 'itemSchemas', 'decorateResultItem', 'execute', 'needsApproval', 'memory']);
  const script = [{ toolCalls: [{ name: 'lookup', arguments: { word: 'noetic' } }] }, { text: 'done' }];
  const h = new AgentHarness({ name: 't', params: {}, llm: { provider: 'scripted', script } });
  const ctx = h.createContext();
  await h.run(step.llm({ id: 'ask', model: 'scripted', tools: [lookup] }), 'define noetic', ctx);
  const result = ctx.itemLog.items.find((item) => item.type === 'function_call_output');
  assert.deepEqual({ ...result, id: undefined, callId: undefined }, {
    id: undefined, status: 'completed', type: 'function_call_output', callId: undefined,
    output: '{"word":"noetic","meaning":"the meaning of noetic"}', source: 'dictionary', asked: 'noetic', name: 'lookup', found: true,
  });

  // A generator tool: under step.tool each yield is a tool_progress event; the return value is the output.
  const counting = toolWithGenerator({
    name: 'count',
    input: z.object({ to: z.number() }),
    event: z.number(),
    execute: async function* ({ to }) {
      for (let i = 1; i <= to; i++) yield i;
      return `counted to ${to}`;
    },
  });
  assert.equal(typeof counting.event?.parse, 'function');
  const session = new AgentHarness({ name: 'agent', params: {}, initialStep: step.tool({ id: 'counter', tool: counting, args: { to: 3 } }) });
  const events = [];
  const reading = (async () => {
    for await (const event of session.getFullStream()) {
      if (event.type === 'agent:tool_progress') events.push(event.data);
      if (event.type === 'agent:turn_completed') return;
    }
  })();
  await session.execute('go');
  await session.getAgentResponse();
  await reading;
  assert.deepEqual(events.map((e) => [e.stepId, e.toolName, e.event]), [['counter', 'count', 1], ['counter', 'count', 2], ['counter', 'count', 3]]);
});

test("a tool's toolResults schemas check its own result items only; a result they reject fails the step", async () => {
  const withDetails = { toolResults: [z.object({ type: z.literal('function_call_output'), details: z.string() })] };
  const plain = tool({ name: 'plain', description: 'p', input: z.object({}), execute: async () => 'p' });
  const bare = tool({ name: 'bare', description: 'b', input: z.object({}), itemSchemas: withDetails, execute: async () => 'b' });
  const dressed = tool({ name: 'dressed', description: 'd', input: z.object({}), itemSchemas: withDetails, decorateResultItem: ({ baseItem }) => ({ ...baseItem, details: 'kept' }), execute: async () => 'd' });
  const throwing = tool({ name: 'throwing', description: 't', input: z.object({}), decorateResultItem: () => { throw new Error('cannot decorate'); }, execute: async () => 't' });
  const call = async (name) => {
    const h = new AgentHarness({ name: 't', params: {}, llm: { provider: 'scripted', script: [{ toolCalls: [{ name, arguments: {} }] }, { text: 'done' }] } });
    const ctx = h.createContext();
    await h.run(step.llm({ id: 'ask', model: 'scripted', tools: [plain, bare, dressed, throwing] }), 'go', ctx);
    return ctx.itemLog.items.find((item) => item.type === 'function_call_output');
  };
  // The schemas of `bare` and `dressed` do not reach their sibling's result.
  assert.equal((await call('plain')).output, 'p');
  assert.equal((await call('dressed')).details, 'kept');
  await assert.rejects(call('bare'), (e) => e.noeticError?.kind === 'item_schema_mismatch' && e.noeticError.category === 'toolResults');
  await assert.rejects(call('throwing'), /cannot decorate/);
});

test('depth: contexts nest at most 64 deep (as upstream); steps may nest deeply within one context', async () => {
  const h = harness();
  // A step that spawns itself: each child context is one deeper.
  const { execute } = await import('../js/index.mjs');
  const dive = step.run({ id: 'dive', execute: async (n, ctx) => (n === 0 ? ctx.depth : execute(spawn({ id: 'down', child: dive }), n - 1, ctx)) });
  assert.equal(await h.run(dive, 63), 63);
  await assert.rejects(h.run(dive, 64), (e) => {
    // Each step.run on the way up wraps the failure as its cause; the innermost is the limit.
    let inner = e;
    while (inner?.noeticError?.cause) inner = inner.noeticError.cause;
    assert.match(e.message, /Maximum spawn depth 64 exceeded \(depth: 64\)/);
    return inner.message === 'Maximum spawn depth 64 exceeded (depth: 64)';
  });
  // Loops nested 500 deep in one context are fine; deeper trees are refused before they run (DECISIONS G9).
  const loops = (n) => {
    let nested = step.run({ id: 'core', execute: async (x) => x + 1 });
    for (let i = 0; i < n; i++) nested = loop({ id: `l${i}`, steps: [nested], until: until.maxSteps(1) });
    return nested;
  };
  assert.equal(await h.run(loops(500), 0), 1);
  await assert.rejects(h.run(loops(600), 0), (e) => e.code === 'INVALID_STEP' && /nests \d+ levels deep, more than 1024/.test(e.message));
});

test('a model that calls tools round after round: 32 rounds, 3 more nudged to finish, then the step fails as upstream', async () => {
  let runs = 0;
  const ping = tool({ name: 'ping', description: 'Ping.', input: z.object({}), output: z.string(), execute: async () => (runs++, 'pong') });
  const calling = (rounds, answer) => [...Array.from({ length: rounds }, () => ({ toolCalls: [{ name: 'ping', arguments: {} }] })), { text: answer }];
  const agent = step.llm({ id: 'busy', model: 'openai/gpt-4o', tools: [ping] });
  // Finishing in the last nudged round (the 35th) is still an answer.
  const patient = new AgentHarness({ name: 'steps', params: {}, llm: { provider: 'scripted', script: calling(34, 'done at last') } });
  assert.equal(await patient.run(agent, 'go'), 'done at last');
  assert.equal(runs, 34);
  runs = 0;
  const endless = new AgentHarness({ name: 'steps', params: {}, llm: { provider: 'scripted', script: calling(40, 'never reached') } });
  await assert.rejects(endless.run(agent, 'go'), (e) => e.message === 'LLM exceeded maximum tool rounds (32)');
  assert.equal(runs, 35, 'every round that was asked ran its tools');
});

test("a branch's _optimizable steps lend their tools to a session's tool-less LLM steps", async () => {
  const calls = [];
  const lookup = tool({ name: 'lookup', input: z.object({ q: z.string() }), execute: async ({ q }) => (calls.push(q), `found ${q}`) });
  const plain = step.llm({ id: 'plain', model: 'scripted' });
  const withTool = step.llm({ id: 'with-tool', model: 'scripted', tools: [lookup] });
  const outputs = async (initialStep) => {
    const script = [{ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] }, { text: 'done' }];
    const h = new AgentHarness({ name: 'agent', params: {}, initialStep, llm: { provider: 'scripted', script } });
    await h.execute('go');
    const response = await h.getAgentResponse();
    return response.items.filter((item) => item.type === 'function_call_output').map((item) => item.output);
  };
  assert.deepEqual(await outputs(branch({ id: 'b', route: () => plain, _optimizable: [withTool] })), ['found x']);
  assert.deepEqual(await outputs(branch({ id: 'b', route: () => plain })), ["Error: unknown tool 'lookup'"]);
  assert.deepEqual(calls, ['x']);
});

test('a NoeticConfigError a run step throws is step_failed’s cause as an equal NoeticConfigError, its code kept', async () => {
  const { NoeticConfigError, isNoeticConfigError } = await import('../js/index.mjs');
  const thrown = new NoeticConfigError({ code: 'MY_CODE', message: 'bad setup', hint: 'fix it' });
  await assert.rejects(harness().run(step.run({ id: 'cfg', execute: async () => { throw thrown; } }), 'x'), (e) => {
    assert.equal(e.noeticError.kind, 'step_failed');
    const cause = e.noeticError.cause;
    assert.ok(isNoeticConfigError(cause));
    assert.deepEqual([cause.code, cause.message, cause.hint], ['MY_CODE', 'bad setup', 'fix it']);
    return true;
  });
});
