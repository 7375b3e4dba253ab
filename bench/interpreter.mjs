// The interpreter benchmark: a 1,000-step loop of trivial step.runs and a fork of 100 paths, with the crossings
// each makes. `NOETIC_UPSTREAM_PKG=<dir of an installed upstream package>` runs the same workloads on upstream in the
// same process, side by side. Prints medians; figures vary run to run on a busy machine.
import { median, upstreamApi } from './common.mjs';


async function time(fn, reps) {
  const samples = [];
  for (let i = 0; i < reps; i++) {
    const started = performance.now();
    await fn();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

async function measure(api) {
  const { AgentHarness, step, loop, until, fork } = api;
  const harness = new AgentHarness({ name: 'bench', params: {} });
  const ctx = harness.createContext({});
  const inc = step.run({ id: 'inc', execute: async (n) => n + 1 });
  const thousand = loop({ id: 'thousand', steps: [inc], until: until.maxSteps(1000), maxIterations: 2000 });
  const paths = Array.from({ length: 100 }, (_, i) => step.run({ id: `path-${i}`, execute: async (n) => n + i }));
  const hundred = fork({ id: 'hundred', mode: 'all', paths: () => paths, merge: (results) => results.length });
  await time(() => harness.run(thousand, 0, ctx), 3);
  const loopMs = await time(() => harness.run(thousand, 0, ctx), 15);
  await time(() => harness.run(hundred, 0, ctx), 3);
  const forkMs = await time(() => harness.run(hundred, 0, ctx), 30);
  return { harness, ctx, thousand, hundred, loopMs, forkMs };
}

// Native calls and requests to JS during one run of `step` (ours only).
async function crossings({ harness, ctx }, step) {
  const runtime = harness._runtime;
  let calls = 0;
  let requests = 0;
  const pump = runtime.pump;
  runtime.pump = (batch) => {
    if (batch) requests += JSON.parse(batch).length;
    return pump.call(runtime, batch);
  };
  const native = runtime.native;
  runtime.native = new Proxy(native, {
    get: (target, key) => {
      const value = Reflect.get(target, key);
      return typeof value === 'function' ? (...args) => (calls++, value.apply(target, args)) : value;
    },
  });
  try {
    await harness.run(step, 0, ctx);
  } finally {
    runtime.native = native;
    runtime.pump = pump;
  }
  return { calls, requests };
}

const ours = await measure(await import('../js/index.mjs'));
const loopCrossings = await crossings(ours, ours.thousand);
const forkCrossings = await crossings(ours, ours.hundred);
const upstreamPkg = await upstreamApi();
const upstream = upstreamPkg ? await measure(upstreamPkg) : undefined;

const row = (name, mine, theirs, note) =>
  console.log(`${name.padEnd(28)} ${mine.toFixed(3).padStart(9)} ms${theirs === undefined ? '' : `   upstream ${theirs.toFixed(3).padStart(9)} ms   ratio ${(mine / theirs).toFixed(2)}`}   ${note}`);
console.log('interpreter (median)');
row('loop of 1,000 step.runs', ours.loopMs, upstream?.loopMs, `${loopCrossings.calls / 1000} native calls and ${loopCrossings.requests / 1000} requests per step`);
row('fork of 100 paths (all)', ours.forkMs, upstream?.forkMs, `${forkCrossings.calls} native calls, ${forkCrossings.requests} requests`);
