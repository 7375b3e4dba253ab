// Channels (value, queue, topic), a loop's inbox and `every` (issue 9).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { AgentHarness, InMemoryExporter, channel, every, fork, loop, step, until } from '../js/index.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const harness = (opts = {}) => new AgentHarness({ name: 'channels', params: {}, ...opts });
const run = (id, execute) => step.run({ id, execute });

test('channel() describes a channel: the schema by identity, capacity always present, external only when asked', () => {
  const schema = z.string();
  assert.deepEqual(channel('jobs', { schema, mode: 'queue' }), { name: 'jobs', schema, mode: 'queue', capacity: undefined });
  const outside = channel('events', { schema, mode: 'topic', capacity: 5, external: true });
  assert.equal(outside.external, true);
  assert.equal(outside.schema, schema);
  assert.ok(!('external' in channel('x', { schema, mode: 'value', external: false })));
});

test('fork paths talk through a queue: values arrive in order, and a full queue parks its sender until there is room', async () => {
  const jobs = channel('jobs', { schema: z.number(), mode: 'queue', capacity: 1 });
  const h = harness();
  const events = [];
  const producer = run('producer', async (_x, ctx) => {
    for (const n of [1, 2, 3]) {
      await ctx.send(jobs, n);
      events.push(`sent ${n}`);
    }
    return 'produced';
  });
  const consumer = run('consumer', async (_x, ctx) => {
    const got = [];
    for (let i = 0; i < 3; i++) {
      await sleep(5);
      events.push('receiving');
      got.push(await ctx.recv(jobs, { timeout: 1000 }));
      events.push(`got ${got.at(-1)}`);
    }
    return got;
  });
  const [produced, got] = await h.run(fork({ id: 'f', mode: 'all', paths: () => [producer, consumer], merge: (r) => r }), null);
  assert.equal(produced, 'produced');
  assert.deepEqual(got, [1, 2, 3]);
  // With room for one, the second send waited until the consumer came to receive.
  assert.deepEqual(events.slice(0, 2), ['sent 1', 'receiving'], events.join(', '));
});

test('recv: a value channel keeps its last value; a timeout is channel_timeout; tryRecv never waits', async () => {
  const setting = channel('setting', { schema: z.string(), mode: 'value' });
  const nothing = channel('nothing', { schema: z.string(), mode: 'queue' });
  const h = harness();
  const out = await h.run(
    run('r', async (_x, ctx) => {
      const before = ctx.tryRecv(setting);
      await ctx.send(setting, 'a');
      await ctx.send(setting, 'b');
      const twice = [await ctx.recv(setting), await ctx.recv(setting)];
      const error = await ctx.recv(nothing, { timeout: 20 }).catch((e) => e);
      return { before, twice, kind: error.noeticError.kind, message: error.message, empty: ctx.tryRecv(nothing) };
    }),
    null,
  );
  assert.deepEqual(out, { before: null, twice: ['b', 'b'], kind: 'channel_timeout', message: "Channel 'nothing' timed out after 20ms", empty: null });
});

test("a receive waits as long as its timeout says, past what a JS timer holds too; a negative one keeps upstream's meaning", async () => {
  const later = channel('later', { schema: z.string(), mode: 'queue' });
  const news = channel('news', { schema: z.string(), mode: 'topic' });
  const h = harness();
  const out = await h.run(
    run('r', async (_x, ctx) => {
      // Each of these timed out at once (setTimeout overflows past 2^31 - 1 ms), before the send 20 ms later.
      const got = [];
      for (const [ch, timeout] of [[later, 2 ** 31], [later, Infinity], [news, 2 ** 31], [news, Infinity]]) {
        setTimeout(() => ctx.send(ch, `${ch.name} ${timeout}`), 20);
        got.push(await ctx.recv(ch, { timeout }));
      }
      // Non-positive, as upstream: a queue waits on, a topic waits its 300 s at most (with a warning).
      setTimeout(() => ctx.send(later, 'after all'), 20);
      got.push(await ctx.recv(later, { timeout: -5 }));
      return { got };
    }),
    null,
  );
  assert.deepEqual(out.got, [`later ${2 ** 31}`, 'later Infinity', `news ${2 ** 31}`, 'news Infinity', 'after all']);
});

test("an aborted context's parked receive ends as cancelled (a race's loser is aborted with 'race lost')", async () => {
  const never = channel('never', { schema: z.string(), mode: 'queue' });
  const h = harness();
  const seen = [];
  const waiting = run('waiting', async (_x, ctx) => {
    try {
      return await ctx.recv(never, { timeout: 0 });
    } catch (e) {
      seen.push([e.noeticError.kind, e.noeticError.reason]);
      throw e;
    }
  });
  assert.equal(await h.run(fork({ id: 'f', mode: 'race', paths: () => [waiting, run('quick', async () => 'won')] }), null), 'won');
  for (let i = 0; i < 50 && seen.length === 0; i++) await sleep(2);
  assert.deepEqual(seen, [['cancelled', 'race lost']]);
  // ctx.abort inside a step ends its own parked receive too.
  const self = run('self', async (_x, ctx) => {
    setTimeout(() => ctx.abort('enough'), 10);
    return ctx.recv(never, { timeout: 0 }).catch((e) => `${e.noeticError.kind}: ${e.noeticError.reason}`);
  });
  assert.equal(await h.run(self, null), 'cancelled: enough');
});

test("a loop's inbox: a message waiting when it would stop becomes a developer message and one more turn", async () => {
  const inbox = channel('inbox', { schema: z.string(), mode: 'queue' });
  const h = harness();
  const ctx = h.createContext();
  await h.send(inbox, 'also check the tests', ctx);
  let runs = 0;
  const body = run('body', async () => ++runs);
  assert.equal(await h.run(loop({ id: 'l', steps: [body], until: until.maxSteps(1), inbox }), 0, ctx), 2);
  const items = ctx.itemLog.items;
  assert.equal(items.length, 1);
  assert.deepEqual([items[0].role, items[0].content[0].text], ['developer', 'also check the tests']);
  // With a park timeout the loop waits for a message that comes meanwhile; without one it stops at once.
  runs = 0;
  setTimeout(() => h.getChannelHandle({ ...inbox, external: true }, 'outside').send('late note'), 20);
  assert.equal(await h.run(loop({ id: 'l', steps: [body], until: until.maxSteps(1), inbox, parkTimeout: 100 }), 0, ctx), 2);
  runs = 0;
  assert.equal(await h.run(loop({ id: 'l', steps: [body], until: until.maxSteps(1), inbox, parkTimeout: 10 }), 0, ctx), 1);
});

test('every: runs at once and then every ms, woken early by a send, until its context is cancelled', async () => {
  // Ended from inside the body, not by a clock, so that a slow machine changes only how long it takes.
  const h = harness();
  const ctx = h.createContext();
  const times = [];
  const tick = run('tick', async (input) => {
    times.push(performance.now());
    if (times.length === 4) ctx.abort('done ticking');
    return input;
  });
  await assert.rejects(h.run(every({ id: 'e', step: tick, ms: 15 }), 'x', ctx), (e) => e.noeticError.kind === 'cancelled' && e.noeticError.reason === 'done ticking');
  assert.equal(times.length, 4, 'no run after the abort');
  const gaps = times.slice(1).map((t, i) => t - times[i]);
  assert.ok(gaps.every((gap) => gap >= 12), `a period between runs, never less: ${gaps.map((g) => g.toFixed(1)).join(', ')} ms`);

  // A period far longer than the test: the first run is at once, and a send on wakeOn brings the next one forward.
  const wake = channel('wake', { schema: z.string(), mode: 'queue' });
  const woken = h.createContext();
  const runs = [];
  const drain = run('drain', async (_x, inner) => {
    runs.push(inner.tryRecv(wake));
    if (runs.length === 1) setTimeout(() => h.send(wake, 'now', woken), 10);
    else woken.abort('stop');
  });
  await assert.rejects(h.run(every({ id: 'e', step: drain, ms: 60_000, wakeOn: wake }), null, woken), (e) => e.noeticError.kind === 'cancelled');
  assert.deepEqual(runs, [null, 'now']);
});

test("every: onError 'fail' ends it with the body's error; 'continue' reports it and goes on", async () => {
  const diagnostics = [];
  const h = harness({ onDiagnostic: (d) => diagnostics.push(d) });
  let calls = 0;
  let ctx;
  const flaky = run('flaky', async () => {
    calls++;
    // The third failure under 'continue' ends the schedule (none is counted by a clock).
    if (calls === 4) ctx.abort('stop');
    throw new Error(`failure ${calls}`);
  });
  await assert.rejects(h.run(every({ id: 'e', step: flaky, ms: 1, onError: 'fail' }), null), (e) => e.message === "Step 'flaky' failed: failure 1");
  ctx = h.createContext();
  await assert.rejects(h.run(every({ id: 'e', step: flaky, ms: 5 }), null, ctx), (e) => e.noeticError.kind === 'cancelled');
  assert.ok(calls >= 3);
  const reported = diagnostics.filter((d) => d.hook === 'every');
  assert.ok(reported.length >= 2);
  assert.match(reported[0].message, /every 'e': an iteration failed: Step 'flaky' failed: failure 2/);
  // Builder checks, with upstream's codes.
  assert.throws(() => every({ id: 'e', step: flaky, ms: -1 }), (e) => e.code === 'INVALID_INTERVAL_MS' && e.message === 'every() requires a non-negative finite ms, got -1.');
  assert.throws(() => every({ id: 'e', step: flaky, ms: 1, jitter: null }), (e) => e.code === 'INVALID_JITTER');
  assert.throws(() => every({ id: 'e', ms: 1 }), (e) => e.code === 'MISSING_BODY_STEP');
});

test("every: a failure under 'continue' is an every.iteration.error event on the context's span, and nothing on the console", async () => {
  const warned = [];
  const warn = console.warn;
  console.warn = (...args) => warned.push(args.join(' '));
  try {
    const h = harness({ traceExporter: new InMemoryExporter() });
    let calls = 0;
    const ctx = h.createContext();
    const flaky = run('flaky', async () => {
      calls++;
      if (calls === 3) ctx.abort('stop');
      throw new Error(`failure ${calls}`);
    });
    await assert.rejects(h.run(every({ id: 'e', step: flaky, ms: 0 }), null, ctx), (e) => e.noeticError.kind === 'cancelled');
    await sleep(5);
    const events = ctx.span.events.filter((event) => event.name === 'every.iteration.error');
    assert.ok(calls >= 3 && events.length >= calls - 1, `${calls} failures, ${events.length} events`);
    assert.equal(events[0].attributes.message, "Step 'flaky' failed: failure 1");
    assert.equal(typeof events[0].attributes.stack, 'string');
    assert.deepEqual(warned, [], 'a failing schedule writes nothing to the console');
  } finally {
    console.warn = warn;
  }
});

test('an external handle never waits: a full queue drops its oldest value', async () => {
  const feed = channel('feed', { schema: z.number(), mode: 'queue', capacity: 2, external: true });
  const h = harness();
  const handle = h.getChannelHandle(feed, 'exec-1');
  const warn = console.warn;
  console.warn = () => {};
  try {
    for (const n of [1, 2, 3]) handle.send(n);
  } finally {
    console.warn = warn;
  }
  assert.equal(handle.closed, false);
  assert.equal(handle.channel, feed);
  const ctx = h.createContext();
  assert.deepEqual([h.tryRecv(feed, ctx), h.tryRecv(feed, ctx), h.tryRecv(feed, ctx)], [2, 3, null]);
});
