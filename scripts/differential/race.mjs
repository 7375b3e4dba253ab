// race: forks whose paths take clearly different times (0, 30, 60 or 90 ms, each its own, so that the order is not a
// matter of timing): race (first to finish wins, a fast failure among them), all and settle with a concurrency limit (how many
// paths run at once, in what order they start), and a loser that checks its context after its wait. What each path
// sees, the largest number running at once, and the fork's output or error.
import { plain, sleep, runOutcome } from './shared.mjs';

export async function race(api, { next, pick }) {
  const { AgentHarness, step, fork } = api;
  const seen = [];
  let running = 0;
  let most = 0;
  const count = 2 + Math.floor(next() * 3);
  // Each path its own delay, in an order the seed chooses: two paths that end in one tick would race for real.
  const delays = [0, 30, 60, 90].slice(0, count).sort(() => next() - 0.5);
  const failing = pick([-1, -1, 0, count - 1]);
  const paths = delays.map((ms, i) =>
    step.run({
      id: `path-${i}`,
      execute: async (input, ctx) => {
        running++;
        most = Math.max(most, running);
        seen.push(['start', i, plain(input)]);
        try {
          await sleep(ms);
          seen.push(['waited', i, ctx.aborted ?? null]);
          if (i === failing) throw new Error(`path ${i} failed`);
          return `path ${i} after ${ms}`;
        } finally {
          running--;
        }
      },
    }),
  );
  const mode = pick(['race', 'all', 'settle']);
  const concurrency = mode === 'race' ? undefined : pick([undefined, 1, 2]);
  const root = fork({
    id: 'fork', mode, paths: () => paths,
    ...(concurrency ? { concurrency } : {}),
    ...(mode === 'race' ? {} : { merge: (results) => results.map((r) => (r && typeof r === 'object' && 'status' in r ? `${r.status}:${r.value ?? r.error?.message ?? r.reason?.message ?? ''}` : String(r))).join(' | ') }),
  });
  const harness = new AgentHarness({ name: 'differential', params: {} });
  const outcome = await runOutcome(harness, root, 'go');
  // Losers of a race finish their wait after the fork has answered: let them, so both sides record the same.
  await sleep(120);
  // Within one delay, paths start and wait in an order that is timing: compared as a set.
  return [JSON.stringify([mode, delays, failing, concurrency ?? null]), ...seen.map((x) => JSON.stringify(x)).sort(), JSON.stringify(['most at once', most]), JSON.stringify(outcome)];
}
