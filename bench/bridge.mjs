// The bridge benchmark: what one LLM step costs in JS crossings and time with K JS layers, how a long thread's
// turns cost, and appending to and reading the item log. Prints medians; figures vary run to run on a busy machine.
import { AgentHarness, loop, step, until } from '../js/index.mjs';
import { median } from './common.mjs';

function jsLayer(i) {
  return {
    id: `js-${i}`,
    slot: 100 + i,
    scope: 'thread',
    budget: { min: 50, max: 500 },
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { turns: 0 } }),
      recall: async ({ state }) => `layer ${i} has seen ${state.turns} turns`,
      store: async ({ state }) => ({ state: { turns: state.turns + 1 } }),
    },
  };
}

function harnessWith(k, counter) {
  const harness = new AgentHarness({
    name: 'bench',
    params: {},
    memory: Array.from({ length: k }, (_, i) => jsLayer(i)),
    llm: { provider: 'scripted', script: [] },
  });
  const runtime = harness._runtime;
  const dispatch = runtime.dispatch.bind(runtime);
  runtime.dispatch = (text) => {
    counter.n++;
    return dispatch(text);
  };
  return harness;
}

async function crossingsPerStep(k) {
  const counter = { n: 0 };
  const harness = harnessWith(k, counter);
  const steps = 50;
  const body = loop({ id: 'l', steps: [step.llm({ id: 's', model: 'scripted' })], until: until.maxSteps(steps) });
  await harness.run(body, 'warm up');
  const times = [];
  let perStep = 0;
  for (let r = 0; r < 7; r++) {
    counter.n = 0;
    const started = process.hrtime.bigint();
    await harness.run(body, 'hello', { threadId: `t${r}` });
    times.push(Number(process.hrtime.bigint() - started) / 1e3 / steps);
    const fixed = k > 0 ? 3 : 0; // init, onComplete/dispose batches happen once per run, not per step
    perStep = (counter.n - fixed) / steps;
  }
  return { k, crossingsPerStep: perStep, usPerStep: median(times) };
}

// One session whose history grows turn by turn: each turn appends the user's message and the model's reply to
// the same thread, and the model sees the whole history.
async function thread(turns) {
  const harness = new AgentHarness({
    name: 'bench',
    params: {},
    memory: Array.from({ length: 3 }, (_, i) => jsLayer(i)),
    initialStep: step.llm({ id: 's', model: 'scripted' }),
    llm: { provider: 'scripted', script: Array.from({ length: turns }, (_, t) => ({ text: `reply ${t}: ${'words '.repeat(20)}` })) },
  });
  const times = [];
  let peak = 0;
  let response;
  for (let t = 0; t < turns; t++) {
    const started = process.hrtime.bigint();
    await harness.execute(`turn ${t}: ${'question '.repeat(20)}`, { threadId: 'long' });
    response = await harness.getAgentResponse({ threadId: 'long' });
    times.push(Number(process.hrtime.bigint() - started) / 1e3);
    peak = Math.max(peak, process.memoryUsage().rss);
  }
  const tenth = Math.max(1, Math.floor(turns / 10));
  return {
    turns,
    historyItems: response.items.length,
    usPerTurnFirst10pct: median(times.slice(0, tenth)),
    usPerTurnLast10pct: median(times.slice(-tenth)),
    peakRssMiB: Math.round(peak / 2 ** 20),
  };
}

async function appendAndRead(n) {
  const harness = new AgentHarness({ name: 'bench', params: {} });
  return harness.run(
    step.run({
      id: 'append',
      execute: async (_input, ctx) => {
        const started = process.hrtime.bigint();
        let total = 0;
        for (let i = 0; i < n; i++) {
          ctx.itemLog.append({ id: `i${i}`, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: `m${i}` }] });
          total += ctx.itemLog.items.length;
        }
        return { n, ms: Number(process.hrtime.bigint() - started) / 1e6, total };
      },
    }),
    '',
  );
}

console.log('crossings and time per LLM step, K JS layers (recall + store each):');
for (const k of [0, 3, 10]) console.log(' ', await crossingsPerStep(k));
console.log('one session of turns (its history growing) with 3 JS layers:');
for (const turns of [50, 500]) console.log(' ', await thread(turns));
console.log('append an item and read ctx.itemLog.items, n times:');
for (const n of [1_000, 10_000]) console.log(' ', await appendAndRead(n));
