// The historyWindow benchmark (issue 11): one session turn (one model step) on a thread whose history already holds N items
// (1k, 10k, 100k of about 300 bytes), with historyWindow({maxItems: 40}) as the harness's only layer. Each turn
// appends the question and the answer, so the history keeps growing; the time is per step, median of STEPS.
// `NOETIC_UPSTREAM_PKG=<dir of an installed upstream package>` runs the same workload on upstream in the same
// process, side by side. Figures vary run to run on a busy machine.
import { median, history, upstreamApi } from './common.mjs';

const STEPS = Number(process.env.STEPS ?? 40);
const SIZES = (process.env.SIZES ?? '1000,10000,100000').split(',').map(Number);

function model(seen) {
  let n = 0;
  return async (request) => {
    n++;
    seen.push(request.items.length);
    return {
      items: [{ type: 'message', role: 'assistant', id: `a${n}`, status: 'completed', content: [{ type: 'output_text', text: `answer ${n}`, annotations: [] }] }],
      usage: { inputTokens: 100, outputTokens: 5 },
    };
  };
}

// A session seeded with `n` items: each turn is one step, as users run agents (a bare `run` would not init the
// layer on upstream, leaving it inert there).
async function measure(api, n) {
  const { AgentHarness, historyWindow, step } = api;
  const seen = [];
  const harness = new AgentHarness({
    name: 'hw',
    params: {},
    initialStep: step.llm({ id: 'ask', model: 'bench/model' }),
    memory: [historyWindow({ maxItems: 40 })],
    _testCallModel: model(seen),
  });
  const threadId = `hw-${n}`;
  harness.seedSessionHistory(threadId, history(n));
  const turn = async (text) => {
    await harness.execute(text, { threadId });
    await harness.getAgentResponse({ threadId });
  };
  await turn('warm up');
  const times = [];
  for (let i = 0; i < STEPS; i++) {
    const started = performance.now();
    await turn(`question ${i}`);
    times.push(performance.now() - started);
  }
  return { ms: median(times), items: seen.at(-1) };
}

const ours = await import('../js/index.mjs');
const upstream = await upstreamApi();

console.log(`historyWindow(40), one model step on a growing history (median of ${STEPS} steps)`);
for (const n of SIZES) {
  const a = await measure(ours, n);
  let line = `  ${String(n).padStart(6)} items: ours ${a.ms.toFixed(3)} ms (model saw ${a.items} items)`;
  if (upstream) {
    const b = await measure(upstream, n);
    line += `, upstream ${b.ms.toFixed(3)} ms (saw ${b.items}): ${(b.ms / a.ms).toFixed(1)}x faster`;
  }
  console.log(line);
}
