// channels: a run's steps talking through channels of each mode (value, queue, topic), in one step's sequence of
// sends, receives and tryRecvs (values the schema refuses among them, receives that time out), and, in some
// programs, a producer and a consumer on a fork's two paths over a queue whose small capacity parks the producer:
// what each receive gets or the error it fails with, and the run's output or error.
import { createRequire } from 'node:module';
import path from 'node:path';
import { plain, sleep, failureOf, runOutcome } from './shared.mjs';

export async function channels(api, { next, pick }) {
  const { AgentHarness, step, fork, channel } = api;
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
  return [JSON.stringify(made.map(({ mode, capacity }) => [mode, capacity ?? null])), ...seen.map((x) => JSON.stringify(x)), JSON.stringify(outcome)];
}
