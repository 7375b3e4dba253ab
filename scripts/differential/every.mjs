// every: a periodic step whose body counts its runs, fails on some of them, and ends the schedule on its N-th run
// by aborting its context (or, under onError 'fail', by failing): what each run receives, and the outcome
// (cancelled, or the failure). The intervals are short and the end is the body's own, so no timing
// decides what is compared. A body run inside a spawn, in some programs.
import { plain, runOutcome } from './shared.mjs';

export async function every(api, { next, pick }) {
  const { AgentHarness, step, every: everyStep, spawn } = api;
  const seen = [];
  const stopAt = 1 + Math.floor(next() * 4);
  const failing = new Set(Array.from({ length: 2 }, () => 1 + Math.floor(next() * 4)));
  const onError = pick([undefined, 'continue', 'fail']);
  let runs = 0;
  const body = step.run({
    id: 'tick',
    execute: async (input, ctx) => {
      const k = ++runs;
      seen.push(['tick', k, plain(input), ctx.depth]);
      if (k >= stopAt) {
        (ctx.parent ?? ctx).abort?.(`stopped at ${k}`);
        ctx.abort?.(`stopped at ${k}`);
        return `tick ${k}`;
      }
      if (failing.has(k)) throw new Error(`tick ${k} failed`);
      return `tick ${k}`;
    },
  });
  const root = everyStep({ id: 'schedule', step: next() < 0.3 ? spawn({ id: 'each', child: body }) : body, ms: pick([0, 1, 3]), ...(onError ? { onError } : {}) });
  const harness = new AgentHarness({ name: 'differential', params: {} });
  const outcome = await runOutcome(harness, root, pick(['go', { n: 1 }]));
  return [JSON.stringify([stopAt, [...failing], onError ?? null]), ...seen.map((x) => JSON.stringify(x)), JSON.stringify(outcome)];
}
