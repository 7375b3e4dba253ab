// The inspector's cost (issue 32): the agent-turn workload with 10 layers (a react() agent whose first LLM step of a
// turn calls tools and whose second answers; each layer has init, recall and store, thread-scoped) run on one thread
// for TURNS turns, with no inspector, with one open and no page, and with one open and a page's live feed
// connected. Reports the mean of the last 10% of turns (the late turns, where the history is longest) of each, and
// the ratios to no inspector. Modes alternate over ROUNDS rounds; medians of those.
import { spawn } from 'node:child_process';
import { AgentHarness, createMessage, estimateTokens, react } from '../js/index.mjs';
import { startInspector } from '../js/inspector.mjs';
import { median } from './common.mjs';

const TURNS = Number(process.env.TURNS ?? 500);
const LAYERS = Number(process.env.LAYERS ?? 10);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

const words = ['alpine', 'route', 'weather', 'ridge', 'glacier', 'camp', 'rope', 'map', 'ascent', 'valley', 'snow', 'pass'];
const text = (seed, n) => Array.from({ length: n }, (_, i) => words[(seed * 7 + i * 3) % words.length]).join(' ');

function layer(i) {
  const tag = `notes_${i}`;
  return {
    id: `notes-${i}`,
    name: `Notes ${i}`,
    slot: 110 + i * 10,
    scope: 'thread',
    budget: { min: 100, max: 1200 },
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { notes: [] } }),
      recall: async ({ state }) => {
        if (state.notes.length === 0) return null;
        const content = `<${tag}>\n${state.notes.join('\n')}\n</${tag}>`;
        return { items: [createMessage(content, 'developer')], tokenCount: estimateTokens(content) };
      },
      store: async ({ newItems, state }) => {
        const fresh = newItems.filter((item) => item.type === 'message' && item.role === 'assistant').map((item) => item.content[0].text.slice(0, 100 + i * 7));
        return fresh.length ? { state: { notes: [...state.notes, ...fresh].slice(-6) } } : undefined;
      },
    },
  };
}

function scriptedModel() {
  let n = 0;
  const message = (id, body) => ({ id, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: body, annotations: [] }] });
  return async (request) => {
    n++;
    const items = request.items;
    // The turn's own message (react adds user messages of its own between rounds): tools once after it, then answer.
    const lastUser = items.findLastIndex((item) => item.type === 'message' && item.role === 'user' && item.content[0]?.text?.startsWith('USER '));
    const toolRoundSeen = items.slice(lastUser + 1).some((item) => item.type === 'function_call');
    const usage = { inputTokens: 60 * items.length, outputTokens: 80 };
    if (toolRoundSeen) return { items: [message(`m${n}`, text(n, 40))], usage };
    const call = `c${n}`;
    return {
      items: [
        { id: `fc${n}`, type: 'function_call', call_id: call, name: 'search_docs', arguments: JSON.stringify({ query: text(n, 8) }), status: 'completed' },
        { id: `fo${n}`, type: 'function_call_output', call_id: call, output: text(n + 1, 50) },
        message(`a${n}`, text(n + 2, 30)),
      ],
      usage,
    };
  };
}

// A page's live feed, read in another process as a browser's would be: it says when it is connected.
function connectFeed(url) {
  const feed = new URL(url);
  feed.pathname = '/api/events';
  const reader = `require('node:http').get(${JSON.stringify(feed.toString())}, (res) => { console.log('connected'); res.resume(); })`;
  const child = spawn(process.execPath, ['-e', reader], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout.once('data', () => resolve(() => child.kill()));
    child.once('error', reject);
  });
}

async function run(mode) {
  const harness = new AgentHarness({
    name: 'bench',
    params: {},
    memory: Array.from({ length: LAYERS }, (_, i) => layer(i)),
    initialStep: react({ id: 'agent', model: 'bench/model', tools: [] }),
    _testCallModel: scriptedModel(),
  });
  const inspector = mode === 'closed' ? undefined : await startInspector(harness);
  const disconnect = mode === 'page' ? await connectFeed(inspector.url) : undefined;
  const times = [];
  for (let t = 0; t < TURNS; t++) {
    const started = performance.now();
    await harness.execute(`USER ${t}: ${text(t, 25)}`, { threadId: 'T' });
    await harness.getAgentResponse({ threadId: 'T' });
    times.push(performance.now() - started);
  }
  disconnect?.();
  await inspector?.close();
  const late = times.slice(-Math.max(1, Math.floor(TURNS / 10)));
  return late.reduce((a, b) => a + b, 0) / late.length;
}

const modes = (process.env.MODES ?? 'closed,open,page').split(',');
const results = Object.fromEntries(modes.map((m) => [m, []]));
await run(modes[0]); // warm-up
for (let round = 0; round < ROUNDS; round++) {
  for (const mode of round % 2 ? [...modes].reverse() : modes) results[mode].push(await run(mode));
}
const closed = median(results[modes[0]]);
console.log(`inspector, ${LAYERS} layers, late turns of ${TURNS} (median of ${ROUNDS} rounds):`);
for (const mode of modes) {
  const late = median(results[mode]);
  const label = { closed: 'no inspector', open: 'open, no page', page: 'open, page connected' }[mode];
  console.log(`  ${label.padEnd(22)} ${late.toFixed(3)} ms  ${(late / closed).toFixed(3)}x`);
}
