// The seeded-session benchmark (issue 8): `seedSessionHistory` with N items (1k, 10k, 100k of about 300 bytes), and
// the first turn of the seeded session (one model step, no layers), each on a thread of its own. Times are medians
// of ROUNDS. `NOETIC_UPSTREAM_PKG=<dir of an installed upstream package>` runs the same workload on upstream in the
// same process, side by side. Figures vary run to run on a busy machine.
import { median, history, upstreamApi } from './common.mjs';

const ROUNDS = Number(process.env.ROUNDS ?? 15);
const SIZES = (process.env.SIZES ?? '1000,10000,100000').split(',').map(Number);

async function measure(api, n) {
  const { AgentHarness, step } = api;
  let answers = 0;
  let seen = 0;
  const harness = new AgentHarness({
    name: 'seeded',
    params: {},
    initialStep: step.llm({ id: 'ask', model: 'bench/model' }),
    _testCallModel: async (request) => {
      seen = request.items.length;
      answers++;
      return {
        items: [{ type: 'message', role: 'assistant', id: `a${answers}`, status: 'completed', content: [{ type: 'output_text', text: 'ok', annotations: [] }] }],
        usage: { inputTokens: 100, outputTokens: 5 },
      };
    },
  });
  const items = history(n);
  const seeds = [];
  const turns = [];
  for (let round = 0; round < ROUNDS; round++) {
    const threadId = `seeded-${n}-${round}`;
    let started = performance.now();
    harness.seedSessionHistory(threadId, items);
    seeds.push(performance.now() - started);
    started = performance.now();
    await harness.execute('next question', { threadId });
    await harness.getAgentResponse({ threadId });
    turns.push(performance.now() - started);
  }
  return { seed: median(seeds), turn: median(turns), seen };
}

const ours = await import('../js/index.mjs');
const upstream = await upstreamApi();

const ratio = (theirs, mine) => `${(mine / theirs).toFixed(2)}x upstream's time`;
console.log(`seedSessionHistory and the seeded session's first turn (median of ${ROUNDS})`);
for (const n of SIZES) {
  const a = await measure(ours, n);
  let line = `  ${String(n).padStart(6)} items: ours seed ${a.seed.toFixed(3)} ms, first turn ${a.turn.toFixed(2)} ms (model saw ${a.seen})`;
  if (upstream) {
    const b = await measure(upstream, n);
    line += `; upstream seed ${b.seed.toFixed(3)} ms, first turn ${b.turn.toFixed(2)} ms (saw ${b.seen})`;
    line += `; seed ${ratio(b.seed, a.seed)}, first turn ${ratio(b.turn, a.turn)}`;
  }
  console.log(line);
}
