// channels: a run's steps talking through channels of each mode (value, queue, topic), in one step's sequence of
// sends, receives and tryRecvs (values the schema refuses among them, receives that time out), and, in some
// programs, a producer and a consumer on a fork's two paths over a queue whose small capacity parks the producer:
// what each receive gets or the error it fails with, and the run's output or error. Then some of: receives made before
// the sends that serve them (the store is eager), with the order their promises settle in; sends parked on a full
// queue and let through; an external handle at capacity (what it warns and drops) and once its execution is closed;
// receives a context's abort ends; a loop's inbox; an `every` woken by a send.
import { createRequire } from 'node:module';
import path from 'node:path';
import { plain, sleep, failureOf, runOutcome } from './shared.mjs';

export async function channels(api, { next, pick }) {
  const { AgentHarness, step, fork, channel, loop, until, every } = api;
  const { z } = createRequire(path.join(process.env.NOETIC_UPSTREAM_PKG, 'package.json'))('zod');
  const seen = [];
  const made = Array.from({ length: 1 + Math.floor(next() * 2) }, (_, i) => {
    const mode = pick(['value', 'queue', 'topic']);
    const capacity = mode === 'queue' ? pick([undefined, 1, 2, 8]) : undefined;
    return { name: `ch${i}`, mode, capacity, ch: channel(`ch${i}`, { schema: z.number().int(), mode, ...(capacity === undefined ? {} : { capacity }) }) };
  });
  // A sequence that never sends past a queue's capacity (a send there would park until a receive that never comes).
  const ops = [];
  const depth = made.map(() => 0);
  for (let i = 0; i < 8; i++) {
    const c = Math.floor(next() * made.length);
    const { mode, capacity } = made[c];
    const op = pick(['send', 'send', 'recv', 'tryRecv', 'bad']);
    if ((op === 'send' || op === 'bad') && mode === 'queue' && depth[c] >= (capacity ?? Infinity)) continue;
    if (op === 'send' && mode === 'queue') depth[c]++;
    if ((op === 'recv' || op === 'tryRecv') && mode === 'queue' && depth[c] > 0) depth[c]--;
    ops.push([op, c, i]);
  }
  const sequence = step.run({
    id: 'sequence',
    execute: async (_input, ctx) => {
      for (const [op, c, value] of ops) {
        const { ch, name } = made[c];
        try {
          if (op === 'send') seen.push([name, 'send', value, plain(await ctx.send(ch, value))]);
          else if (op === 'bad') seen.push([name, 'bad', plain(await ctx.send(ch, value + 0.5))]);
          else if (op === 'tryRecv') seen.push([name, 'tryRecv', plain(ctx.tryRecv(ch))]);
          else seen.push([name, 'recv', plain(await ctx.recv(ch, { timeout: 20 }))]);
        } catch (e) {
          seen.push([name, op, 'failed', ...failureOf(e)]);
        }
      }
      return 'sequence done';
    },
  });
  let root = sequence;
  if (next() < 0.5) {
    const capacity = pick([1, 2]);
    const count = 2 + Math.floor(next() * 3);
    const pipe = channel('pipe', { schema: z.number(), mode: 'queue', capacity });
    root = fork({
      id: 'pair', mode: 'all',
      paths: () => [
        step.run({ id: 'producer', execute: async (_input, ctx) => {
          for (let v = 0; v < count; v++) await ctx.send(pipe, v);
          return `sent ${count}`;
        } }),
        step.run({ id: 'consumer', execute: async (_input, ctx) => {
          const got = [];
          for (let v = 0; v < count; v++) {
            await sleep(2);
            got.push(await ctx.recv(pipe, { timeout: 2000 }));
          }
          got.push(ctx.tryRecv(pipe));
          return got;
        } }),
        sequence,
      ],
      merge: (results) => results,
    });
  }
  const harness = new AgentHarness({ name: 'differential', params: {} });
  const outcome = await runOutcome(harness, root, 'go');
  const more = [];
  for (const part of PARTS) if (next() < 0.5) more.push(part, ...(await part(api, { next, pick, z })));
  return [JSON.stringify(made.map(({ mode, capacity }) => [mode, capacity ?? null])), ...seen.map((x) => JSON.stringify(x)), JSON.stringify(outcome), ...more.map((x) => (typeof x === 'function' ? x.name : JSON.stringify(x)))];
}

// Records in `order` how `promise` settles, when it does.
const noting = (order) => (label, promise) => promise.then((value) => order.push([label, 'ok', plain(value)]), (e) => order.push([label, 'failed', ...failureOf(e)]));

// Receives made first, then sends: which receive each send serves, a full queue's senders parked until the receives
// drain it, a value channel's or a topic's receivers all served, in the order the promises settle.
async function eager({ AgentHarness, step, channel }, { next, pick, z }) {
  const order = [];
  const note = noting(order);
  const mode = pick(['queue', 'value', 'topic']);
  const ch = channel('eager', { schema: z.number(), mode, ...(mode === 'queue' ? { capacity: pick([1, 2]) } : {}) });
  const receivers = 1 + Math.floor(next() * 3);
  const senders = 1 + Math.floor(next() * 4);
  const run = step.run({ id: 'eager', execute: async (_input, ctx) => {
    const waits = Array.from({ length: receivers }, (_, i) => note(`recv ${i}`, ctx.recv(ch, { timeout: 100 })));
    const sends = Array.from({ length: senders }, (_, i) => note(`send ${i}`, ctx.send(ch, i)));
    order.push(['tried', plain(ctx.tryRecv(ch))]);
    // What is left is taken (a parked sender let through each time), so no send waits out its timeout.
    for (let i = 0; i < 8; i++) order.push(['drained', plain(ctx.tryRecv(ch))]);
    await Promise.all([...waits, ...sends]);
    return 'done';
  } });
  const outcome = await runOutcome(new AgentHarness({ name: 'differential', params: {} }), run, 'go');
  return [[mode, receivers, senders], ...order, outcome];
}

// An external handle never waits: past a queue's capacity it drops the oldest value, with a warning; a closed
// execution's handle refuses.
async function external({ AgentHarness, channel }, { next, pick, z }) {
  const capacity = pick([1, 2, 3]);
  const feed = channel('feed', { schema: z.number(), mode: 'queue', capacity, external: true });
  const harness = new AgentHarness({ name: 'differential', params: {} });
  const handle = harness.getChannelHandle(feed, 'exec-1');
  const lines = [];
  const warn = console.warn;
  console.warn = (...args) => lines.push(['warned', args.join(' ')]);
  try {
    for (let v = 0; v < capacity + 1 + Math.floor(next() * 3); v++) handle.send(v);
  } finally {
    console.warn = warn;
  }
  const ctx = harness.createContext();
  for (let i = 0; i <= capacity; i++) lines.push(['got', plain(harness.tryRecv(feed, ctx))]);
  lines.push(['closed', handle.closed]);
  return lines;
}

// A context aborted while its receive (or a send parked on a full queue) waits: both end as cancelled.
async function aborted({ AgentHarness, step, channel }, { pick, z }) {
  const order = [];
  const note = noting(order);
  const ch = channel('never', { schema: z.number(), mode: pick(['queue', 'topic', 'value']) });
  const full = channel('full', { schema: z.number(), mode: 'queue', capacity: 1 });
  const run = step.run({ id: 'waits', execute: async (_input, ctx) => {
    await ctx.send(full, 0);
    const waits = [note('recv', ctx.recv(ch, { timeout: pick([0, 5000]) })), note('send', ctx.send(full, 1))];
    setTimeout(() => ctx.abort('enough'), 5);
    await Promise.all(waits);
    return 'after the abort';
  } });
  const outcome = await runOutcome(new AgentHarness({ name: 'differential', params: {} }), run, 'go');
  return [...order, outcome];
}

// A loop's inbox: a message waiting when it would stop (or one sent while it parks) is one more turn, as a
// developer message.
async function inbox({ AgentHarness, step, channel, loop, until }, { next, pick, z }) {
  const box = channel('inbox', { schema: z.string(), mode: pick(['queue', 'value']) });
  const harness = new AgentHarness({ name: 'differential', params: {} });
  const ctx = harness.createContext({ threadId: 'thread' });
  if (next() < 0.5) await harness.send(box, 'waiting note', ctx);
  const parkTimeout = pick([undefined, 0, 200]);
  if (parkTimeout) setTimeout(() => harness.send(box, 'late note', ctx), 10);
  let runs = 0;
  const body = step.run({ id: 'body', execute: async () => ++runs });
  const looped = loop({ id: 'l', steps: [body], until: until.maxSteps(pick([1, 2])), inbox: box, ...(parkTimeout === undefined ? {} : { parkTimeout }) });
  let outcome;
  try {
    outcome = ['output', plain(await harness.run(looped, 0, ctx))];
  } catch (e) {
    outcome = ['error', ...failureOf(e)];
  }
  const developer = ctx.itemLog.items.filter((item) => item.role === 'developer').map((item) => item.content?.[0]?.text);
  return [[parkTimeout ?? null], outcome, developer.slice(0, 3), developer.length > 3];
}

// An `every` whose period outlasts the program, woken by a send on its channel; the body sees what woke it.
async function woken({ AgentHarness, step, channel, every }, { pick, z }) {
  const wake = channel('wake', { schema: z.string(), mode: pick(['queue', 'value', 'topic']) });
  const harness = new AgentHarness({ name: 'differential', params: {} });
  const ctx = harness.createContext({ threadId: 'thread' });
  const runs = [];
  const body = step.run({ id: 'drain', execute: async (_input, inner) => {
    runs.push(plain(inner.tryRecv(wake)));
    if (runs.length === 1) setTimeout(() => harness.send(wake, 'now', ctx), 10);
    else ctx.abort('stop');
  } });
  let outcome;
  try {
    outcome = ['output', plain(await harness.run(every({ id: 'e', step: body, ms: 60_000, wakeOn: wake }), null, ctx))];
  } catch (e) {
    outcome = ['error', ...failureOf(e)];
  }
  return [runs, outcome];
}

const PARTS = [eager, external, aborted, inbox, woken];
