// The repeated start of each model request over a long thread (issue 55, the instrument before the feature). One
// thread of TURNS turns (default 120) runs through an AgentHarness whose model is a JS function (`_testCallModel`)
// that records every request, with four ordinary thread-scoped JS layers that change at different rates, in slot
// order: static rules (never change), a clock (every turn), a profile (every ten turns) and notes that only start
// recalling late (from turn LATE, default 60, changing every five turns). All text is drawn from a seeded PRNG, so
// every run and both implementations see the same thread; with upstream beside ours, the bench also says whether the
// two sent the same requests.
//
// Each request is read as a prompt-caching provider reads it (bench/prefix.mjs: the instructions, then the input
// items in the wire's shape, one JSON line each). For every request after the first, its share that repeats the
// previous request's start is the longest common start in characters divided by the request's length; the mean and
// the 10th percentile are reported for the whole history and for a 6,000-token window the history outgrows
// (`projection: { tokenBudget: 6000, responseReserve: 0, overflow: 'truncate' }`).
// With `--billing`, what a prefix-caching provider would bill: the repeated start in whole blocks of BLOCK tokens
// (default 128; tokens = characters / 4) as cached tokens per request, and the share of all input tokens cached.
// With `--cache`, ours is also run with `contextCache: { enabled: true }` (or the JSON object after the flag), issue
// 55's option; the bench says whether ours rejected it, ignored it (the same requests as without it; what ours does
// today, as it accepts options it does not know) or changed the requests.
// NOETIC_UPSTREAM_PKG=<installed upstream core> runs upstream 1.0.0 beside ours on the same thread.
//   node bench/prefix-cache.mjs [--turns 120] [--late 60] [--cache ['{json}']] [--billing] [--block 128] [--min-cached 0] [--json]
import { upstreamApi } from './common.mjs';
import { cachedTokens, mean, promptText, quantile, sharedStart, tokensOf, wireRequest } from './prefix.mjs';

const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const TURNS = option('turns', 120);
const LATE = option('late', 60);
const BLOCK = option('block', 128);
const MIN_CACHED = option('min-cached', 0);
// The sizes of the thread's parts. The issue published its figures, not its sizes; these reproduce its figures (a
// fixed part about fifteen turns long, a third of it before the clock). PREFIX_SIZES='{"answerWords":60}' overrides.
const SIZE = { rulesLines: 20, profileWords: 800, questionWords: 30, answerWords: 30, notes: 3, noteWords: 20, ...JSON.parse(process.env.PREFIX_SIZES ?? '{}') };
const WINDOW = { tokenBudget: 6000, responseReserve: 0, overflow: 'truncate' };

// mulberry32: a small seeded PRNG, so the thread is the same in every run.
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VOCABULARY = ('the a of to and in that it is was for on with as at by this from or but not be are have had one all ' +
  'order invoice shipment customer refund delivery account address payment warehouse parcel label carrier return ' +
  'policy ticket status update request week morning tomorrow yesterday price discount stock item size colour box').split(' ');

// `n` words drawn by the PRNG seeded with `seed` (the same seed, the same words).
function words(seed, n) {
  const next = prng(seed);
  return Array.from({ length: n }, () => VOCABULARY[Math.floor(next() * VOCABULARY.length)]).join(' ');
}

// The text each layer shows at `turn`; a pure function of the turn, so that both implementations see the same.
const RULES = `Support desk rules.\n${Array.from({ length: SIZE.rulesLines }, (_, i) => `${i + 1}. ${words(1000 + i, 16)}.`).join('\n')}`;
const profileAt = (turn) => `Customer profile (revision ${Math.floor(turn / 10)}): ${words(2000 + Math.floor(turn / 10), SIZE.profileWords)}.`;
const clockAt = (turn) => `Now: 2025-03-01 ${String(9 + Math.floor(turn / 60)).padStart(2, '0')}:${String(turn % 60).padStart(2, '0')} (turn ${turn}).`;
const notesAt = (turn) => `Recalled notes:\n${Array.from({ length: SIZE.notes }, (_, i) => `- ${words(3000 + Math.floor(turn / 5) * SIZE.notes + i, SIZE.noteWords)}`).join('\n')}`;
const questionAt = (turn) => `Question ${turn}: ${words(4000 + turn, SIZE.questionWords)}?`;
const answerAt = (n) => `Answer ${n}: ${words(5000 + n, SIZE.answerWords)}.`;

// One ordinary thread-scoped JS layer whose recall shows `textAt(turn)` (nothing where it returns null).
function layer(api, id, slot, world, textAt) {
  return {
    id,
    slot,
    scope: 'thread',
    budget: { min: 50, max: 2000 },
    hooks: {
      init: async () => ({ state: { recalls: 0 } }),
      recall: async () => {
        const text = textAt(world.turn);
        return text === null ? null : { items: [api.createMessage(text, 'developer')], tokenCount: tokensOf(text.length) };
      },
    },
  };
}

// Runs the thread on `api` and returns every request the model was sent, as the provider would read it.
async function thread(api, { projection, extra = {} }) {
  const { AgentHarness, step } = api;
  const world = { turn: 0 };
  const prompts = [];
  const model = async (request) => {
    prompts.push(promptText(wireRequest(request)));
    const n = prompts.length;
    return {
      items: [{ type: 'message', id: `a${n}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: answerAt(n), annotations: [] }] }],
      usage: { inputTokens: tokensOf(prompts.at(-1).length), outputTokens: 150 },
    };
  };
  const harness = new AgentHarness({
    name: 'prefix-cache',
    params: {},
    memory: [
      layer(api, 'rules', 100, world, () => RULES),
      layer(api, 'clock', 200, world, clockAt),
      layer(api, 'profile', 300, world, profileAt),
      layer(api, 'late-notes', 400, world, (turn) => (turn >= LATE ? notesAt(turn) : null)),
    ],
    initialStep: step.llm({ id: 'answer', model: 'bench/model', instructions: 'You answer questions from customers of a parcel shop. Keep answers factual and short.' }),
    _testCallModel: model,
    ...(projection ? { projection } : {}),
    ...extra,
  });
  for (let turn = 1; turn <= TURNS; turn++) {
    world.turn = turn;
    await harness.execute(questionAt(turn), { threadId: 'long-thread' });
    await harness.getAgentResponse({ threadId: 'long-thread' });
  }
  return prompts;
}

// Per request after the first: the share that repeats the previous request's start, and the cached tokens a
// prefix-caching provider would bill.
function measure(prompts) {
  const shares = [];
  let input = 0;
  let cached = 0;
  for (let i = 1; i < prompts.length; i++) {
    const shared = sharedStart(prompts[i - 1], prompts[i]);
    shares.push(shared / prompts[i].length);
    input += tokensOf(prompts[i].length);
    cached += cachedTokens(shared, { block: BLOCK, minTokens: MIN_CACHED });
  }
  return {
    requests: prompts.length,
    mean: mean(shares),
    p10: quantile(shares, 0.1),
    lastChars: prompts.at(-1).length,
    meanChars: mean(prompts.map((prompt) => prompt.length)),
    cachedPerRequest: cached / shares.length,
    inputPerRequest: input / shares.length,
    cachedShare: cached / input,
  };
}

const ours = await import('../js/index.mjs');
const upstream = await upstreamApi();
const runs = [];
if (upstream) runs.push({ name: 'upstream 1.0.0', api: upstream });
runs.push({ name: 'ours', api: ours });
if (flag('cache')) {
  // `--cache` alone asks for `{ enabled: true }`; `--cache '{"enabled":true,"minCachedTokens":512}'` for more.
  const next = args[args.indexOf('--cache') + 1];
  const contextCache = next?.startsWith('{') ? JSON.parse(next) : { enabled: true };
  runs.push({ name: 'ours + contextCache', api: ours, extra: { contextCache } });
}

const windows = [
  { name: 'whole history', projection: undefined },
  { name: '6,000-token window', projection: WINDOW },
];
const results = [];
for (const window of windows) {
  for (const run of runs) {
    let row;
    try {
      const prompts = await thread(run.api, { projection: window.projection, extra: run.extra });
      row = { ...measure(prompts), prompts };
    } catch (error) {
      row = { error: `${error.code ?? error.name}: ${error.message}` };
    }
    results.push({ window: window.name, impl: run.name, ...row });
  }
}

// Whether two runs sent the same requests: 'same', or the first request that differs.
function compare(a, b) {
  if (!a || !b) return undefined;
  const i = a.findIndex((prompt, k) => prompt !== b[k]);
  return i < 0 && a.length === b.length ? 'same requests' : `requests differ from request ${i < 0 ? a.length + 1 : i + 1}`;
}

for (const window of windows) {
  const [first, ...others] = results.filter((r) => r.window === window.name);
  for (const other of others) other.sameAs = compare(first.prompts, other.prompts) && `${compare(first.prompts, other.prompts)} as ${first.impl}`;
}
// What `contextCache` did to ours: rejected (the row's error), or accepted with the same requests as without it
// (ignored), or accepted and the requests changed.
const cacheNote = (window) => {
  const plain = results.find((r) => r.window === window.name && r.impl === 'ours');
  const cached = results.find((r) => r.window === window.name && r.impl === 'ours + contextCache');
  if (!cached) return undefined;
  if (cached.error) return `contextCache rejected: ${cached.error}`;
  return compare(plain.prompts, cached.prompts) === 'same requests' ? 'contextCache accepted and ignored (the same requests as without it)' : 'contextCache changed the requests';
};
for (const window of windows) window.cache = cacheNote(window);
for (const r of results) delete r.prompts;

if (flag('json')) {
  console.log(JSON.stringify({ results, contextCache: Object.fromEntries(windows.map((w) => [w.name, w.cache])) }, null, 2));
} else {
  const pct = (x) => `${(100 * x).toFixed(1)}%`;
  console.log(`repeated start of each request over ${TURNS} turns (layers in slot order: rules static, clock every turn, profile every 10 turns, notes from turn ${LATE})`);
  for (const r of results) {
    const head = `  ${r.window.padEnd(19)} ${r.impl.padEnd(20)}`;
    if (r.error) {
      console.log(`${head} failed: ${r.error}`);
      continue;
    }
    let line = `${head} mean ${pct(r.mean).padStart(6)}, p10 ${pct(r.p10).padStart(6)} (request ${Math.round(r.meanChars)} chars on average, the last ${r.lastChars})`;
    if (flag('billing')) {
      line += `; cached ${Math.round(r.cachedPerRequest)} of ${Math.round(r.inputPerRequest)} input tokens a request (${pct(r.cachedShare)}, ${BLOCK}-token blocks)`;
    }
    console.log(r.sameAs ? `${line}; ${r.sameAs}` : line);
  }
  for (const window of windows) if (window.cache) console.log(`  ${window.name}: ${window.cache}`);
}
