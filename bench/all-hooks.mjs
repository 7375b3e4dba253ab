// The all-hooks benchmark (issue 10): ten JS layers, each with all eleven hooks, on a 500-turn session thread whose
// history grows turn by turn; per-turn time for the first and last tenth, JS crossings per turn, the same thread
// with a trace exporter (the cost of tracing), the shared benchmark's react agent (tool rounds, two model steps a
// turn) with the same layers, and a spawn whose child inherits the ten layers (onSpawn / onReturn).
// `NOETIC_UPSTREAM_PKG=<dir of an installed upstream package>` runs the same workloads on upstream in the same
// process, side by side. The model is a `_testCallModel` function (no network). Prints medians; figures vary run to
// run on a busy machine.
import { median, upstreamApi } from './common.mjs';

const TURNS = Number(process.env.TURNS ?? 500);
const LAYERS = 10;
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

// Every hook does a little of what real layers do: init reads storage, recall renders notes, store keeps the
// answer's first words, onItemAppend passes items through, projectHistory caps the history it is given, the
// steering hooks allow, onSpawn / onReturn hand the state over.
function layer(i, api) {
  const { createMessage } = api;
  return {
    id: `all-${i}`,
    slot: 100 + i,
    scope: 'thread',
    budget: { min: 50, max: 400 },
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { notes: [], appended: 0 } }),
      recall: async ({ state }) => (state.notes.length ? { items: [createMessage(`layer ${i}: ${state.notes.slice(-3).join('; ')}`, 'developer')] } : null),
      store: async ({ state, newItems }) => {
        const answer = newItems.find((item) => item.role === 'assistant');
        const text = answer?.content?.[0]?.text ?? '';
        return { state: { ...state, notes: [...state.notes.slice(-5), text.slice(0, 24)] } };
      },
      onItemAppend: async ({ items, state }) => ({ items, state: { ...state, appended: state.appended + items.length } }),
      projectHistory: async ({ items }) => ({ items: items.length > 120 ? items.slice(-120) : items }),
      beforeToolCall: async () => ({ decision: { action: 'allow' } }),
      afterModelCall: async () => ({ decision: { action: 'allow' } }),
      onSpawn: async ({ parentState }) => ({ childState: { ...parentState } }),
      onReturn: async ({ childState, result }) => ({ parentState: childState, result }),
      onComplete: async () => undefined,
      dispose: async () => {},
    },
  };
}

function model() {
  let n = 0;
  return async () => {
    n++;
    const text = `answer ${n}: ${'detail '.repeat(12)}`;
    return {
      items: [{ type: 'message', role: 'assistant', id: `m${n}`, status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }],
      usage: { inputTokens: 100, outputTokens: 20 },
    };
  };
}

// The agent of the shared agent-turn benchmark: `react`, two model steps a turn. As there, the scripted model answers
// a turn's first step with one or two tool rounds already done (call and output: a test model stands in for the
// provider, which runs the tools) and an assistant message, and the second with the answer; texts are of the shared
// benchmark's sizes, so the history grows as fast (about five items a turn).
const words = 'the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches'.split(' ');
const text = (n, seed) => {
  let out = '';
  for (let i = 0; out.length < n; i++) out += `${words[(seed * 7 + i * 3) % words.length]} `;
  return out.slice(0, n);
};
const message = (id, body) => ({ type: 'message', role: 'assistant', id, status: 'completed', content: [{ type: 'output_text', text: body, annotations: [] }] });

function reactModel() {
  let n = 0;
  return async (request) => {
    n++;
    const items = request.items;
    // The turn's own question (react hands each round's output on as a user message too).
    let user = items.length - 1;
    while (user >= 0 && !(items[user].type === 'message' && items[user].role === 'user' && items[user].content?.[0]?.text?.startsWith('question '))) user--;
    const usage = { inputTokens: 60 * items.length, outputTokens: 80 };
    if (items.slice(user + 1).some((item) => item.type === 'function_call')) return { items: [message(`m${n}`, text(120 + ((n * 31) % 180), n))], usage };
    const out = [];
    for (let c = 0; c < 1 + (n % 2); c++) {
      const callId = `call${n}-${c}`;
      const args = JSON.stringify({ query: text(30 + ((n * 13 + c) % 50), n + c), limit: 1 + ((n + c) % 20) });
      out.push({ type: 'function_call', id: `fc${n}-${c}`, callId, name: 'search_docs', arguments: args, status: 'completed' });
      out.push({ type: 'function_call_output', id: `fco${n}-${c}`, callId, output: text(150 + ((n * 17 + c) % 170), n + c), status: 'completed' });
    }
    out.push(message(`m${n}`, text(80 + ((n * 7) % 120), n)));
    return { items: out, usage };
  };
}

async function reactThread(api, count = TURNS) {
  const { AgentHarness, react } = api;
  const harness = new AgentHarness({
    name: 'all-hooks-react',
    params: {},
    initialStep: react({ model: 'bench/model', instructions: 'You are a careful assistant. Use tools when they help, then answer briefly.', tools: [], maxSteps: 10 }),
    memory: Array.from({ length: LAYERS }, (_, i) => layer(i, api)),
    _testCallModel: reactModel(),
  });
  const turns = [];
  for (let t = 0; t < count; t++) {
    const started = performance.now();
    await harness.execute(`question ${t}: ${text(80 + ((t * 37) % 140), t)}`, { threadId: 'bench' });
    await harness.getAgentResponse({ threadId: 'bench' });
    turns.push(performance.now() - started);
  }
  return { harness, turns };
}

// One session of TURNS turns; per-turn milliseconds.
async function thread(api, exporter, count = TURNS) {
  const { AgentHarness, step } = api;
  const harness = new AgentHarness({
    name: 'all-hooks',
    params: {},
    initialStep: step.llm({ id: 'chat', model: 'bench/model' }),
    memory: Array.from({ length: LAYERS }, (_, i) => layer(i, api)),
    _testCallModel: model(),
    ...(exporter ? { traceExporter: exporter } : {}),
  });
  const turns = [];
  for (let t = 0; t < count; t++) {
    const started = performance.now();
    await harness.execute(`question ${t}: ${'context '.repeat(10)}`, { threadId: 'bench' });
    await harness.getAgentResponse({ threadId: 'bench' });
    turns.push(performance.now() - started);
  }
  return { harness, turns };
}

// Spawns whose child inherits the ten layers: onSpawn and onReturn for each, per spawn.
async function spawns(api) {
  const { AgentHarness, step, spawn } = api;
  const harness = new AgentHarness({ name: 'all-hooks-spawn', params: {}, memory: Array.from({ length: LAYERS }, (_, i) => layer(i, api)), _testCallModel: model() });
  const child = step.run({ id: 'child', execute: async (input) => `${input}!` });
  const delegate = spawn({ id: 'delegate', child });
  // A context whose layers have run init (as a session's have), so the spawn hands them over.
  const ctx = harness.createContext({ threadId: 'spawns' });
  await harness.run(step.llm({ id: 'warm', model: 'bench/model' }), 'warm up', ctx);
  const samples = [];
  for (let i = 0; i < 200; i++) {
    const started = performance.now();
    await harness.run(delegate, 'go', ctx);
    samples.push(performance.now() - started);
  }
  return median(samples.slice(20));
}

const tenths = (turns) => {
  const tenth = Math.max(1, Math.floor(turns.length / 10));
  return { first: mean(turns.slice(0, tenth)), last: mean(turns.slice(-tenth)), median: median(turns), mean: mean(turns) };
};

async function measure(api) {
  const plain = tenths((await thread(api)).turns);
  const traced = tenths((await thread(api, new api.InMemoryExporter())).turns);
  return { plain, traced, react: tenths((await reactThread(api)).turns), spawnMs: await spawns(api) };
}

// JS requests the native side makes during one turn of a warm thread (ours only).
async function requestsPerTurn(api) {
  const { harness } = await thread(api, undefined, 50);
  const runtime = harness._runtime;
  let requests = 0;
  const pump = runtime.pump;
  runtime.pump = (batch) => {
    if (batch) requests += JSON.parse(batch).length;
    return pump.call(runtime, batch);
  };
  const turns = 20;
  for (let t = 0; t < turns; t++) {
    await harness.execute(`more ${t}`, { threadId: 'bench' });
    await harness.getAgentResponse({ threadId: 'bench' });
  }
  runtime.pump = pump;
  return requests / turns;
}

const oursApi = await import('../js/index.mjs');
const ours = await measure(oursApi);
const requests = await requestsPerTurn(oursApi);
const upstreamPkg = await upstreamApi();
const upstream = upstreamPkg ? await measure(upstreamPkg) : undefined;

const row = (name, mine, theirs) =>
  console.log(`${name.padEnd(44)} ${mine.toFixed(3).padStart(9)} ms${theirs === undefined ? '' : `   upstream ${theirs.toFixed(3).padStart(9)} ms   ${(theirs / mine).toFixed(1)}x faster`}`);
console.log(`all hooks: ${LAYERS} JS layers x 11 hooks, ${TURNS}-turn thread (mean per turn)`);
row('first tenth of the turns', ours.plain.first, upstream?.plain.first);
row('last tenth of the turns', ours.plain.last, upstream?.plain.last);
row('median turn', ours.plain.median, upstream?.plain.median);
row('last tenth, tracing to InMemoryExporter', ours.traced.last, upstream?.traced.last);
row('median turn, tracing to InMemoryExporter', ours.traced.median, upstream?.traced.median);
row('react agent, tool rounds: first tenth', ours.react.first, upstream?.react.first);
row('react agent, tool rounds: last tenth', ours.react.last, upstream?.react.last);
row('react agent, tool rounds: median turn', ours.react.median, upstream?.react.median);
row('react agent, tool rounds: mean turn', ours.react.mean, upstream?.react.mean);
row('spawn inheriting the layers (median)', ours.spawnMs, upstream?.spawnMs);
console.log(`JS requests per turn (ours): ${requests.toFixed(1)}; tracing adds ${(((ours.traced.median - ours.plain.median) / ours.plain.median) * 100).toFixed(0)}% to the median turn`);
