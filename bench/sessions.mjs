// Many sessions at once (issue 33): S sessions, each on its own thread, run TURNS turns each of `execute` +
// `getAgentResponse`, all at the same time in one process. The model is a JS function that waits 5 ms and answers one
// 20-word message; storage is createInMemoryStorage(); each of the K layers is a thread-scoped JS layer with init,
// recall and store (or, for `--layers builtin`, workingMemory, historyWindow, planMemory and staticContent). Reports
// turns per second over the whole run, the p50 and p99 of a turn's latency (from its execute to its response), and
// the process's peak RSS; the CPU a turn costs the JS thread and our turn worker (Linux); and the p99 of the
// sessions' first turns apart from their later ones: every session starts at once, so the first turns end together,
// as one cold block of work, and the run's p99 is theirs (DECISIONS S27). Each configuration runs in a fresh
// process; with NOETIC_UPSTREAM_PKG=<installed upstream core> upstream's figures are run beside ours. Each
// configuration runs ROUNDS times (default 3), the implementations alternating, and each figure is the median of its
// rounds: on a small, busy machine one run of either moves by a third.
//   node bench/sessions.mjs [--sessions 100,1000,10000] [--layers 0,3,10,builtin]
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';
import { median } from './common.mjs';

const TURNS = 5;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const args = process.argv.slice(2);
// A list option: numbers, and for --layers also `builtin` (workingMemory, historyWindow, planMemory and staticContent).
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return (i >= 0 ? args[i + 1] : fallback).split(',').map((v) => (v === 'builtin' ? v : Number(v)));
};

if (args[0] === '--one') {
  const [, impl, sessions, layers] = args;
  console.log(JSON.stringify(await one(impl, Number(sessions), layers === 'builtin' ? layers : Number(layers))));
} else {
  const impls = process.env.NOETIC_UPSTREAM_PKG ? ['upstream', 'ours'] : ['ours'];
  console.log(`sessions: ${TURNS} turns each, a 5 ms model, in-memory storage (turns/s, p50, p99 with that of first and later turns, peak RSS; medians of ${ROUNDS} rounds)`);
  for (const sessions of option('sessions', '100,1000,10000')) {
    for (const layers of option('layers', '0,3,10,builtin')) {
      const runs = Object.fromEntries(impls.map((impl) => [impl, []]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const impl of round % 2 ? [...impls].reverse() : impls) {
          const run = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--one', impl, String(sessions), String(layers)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], env: process.env });
          runs[impl].push(JSON.parse(run.stdout.trim().split('\n').at(-1)));
        }
      }
      const row = {};
      for (const impl of impls) {
        row[impl] = Object.fromEntries(['turnsPerSecond', 'p50', 'p99', 'p99First', 'p99Later', 'peakRssMb', 'jsThreadUs', 'workerUs'].map((key) => [key, median(runs[impl].map((r) => r[key]))]));
      }
      const cpuOf = (r) => (Number.isFinite(r.jsThreadUs) ? `, CPU a turn: JS thread ${r.jsThreadUs.toFixed(0)} us${r.workerUs > 0 ? `, turn worker ${r.workerUs.toFixed(0)} us` : ''}` : '');
      const show = (r) => `${Math.round(r.turnsPerSecond)} turns/s, p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms (first turns ${r.p99First.toFixed(0)}, later ${r.p99Later.toFixed(0)}), ${r.peakRssMb.toFixed(0)} MB${cpuOf(r)}`;
      const line = impls.map((impl) => `${impl}: ${show(row[impl])}`).join('  |  ');
      const ratio = row.upstream ? `  → ${(row.ours.turnsPerSecond / row.upstream.turnsPerSecond).toFixed(2)}x turns/s, p99 ${(row.ours.p99 / row.upstream.p99).toFixed(2)}x` : '';
      const shown = layers === 'builtin' ? 'built-in layers' : `${String(layers).padStart(2)} layers`;
      console.log(`${String(sessions).padStart(6)} sessions, ${shown}  ${line}${ratio}`);
    }
  }
}

async function one(impl, sessions, layerCount) {
  const api = impl === 'upstream' ? await import(pathToFileURL(path.join(process.env.NOETIC_UPSTREAM_PKG, 'dist/index.js')).href) : await import('../js/index.mjs');
  const { AgentHarness, createMessage, step, createInMemoryStorage, workingMemory, historyWindow, planMemory, staticContent } = api;
  const words = 'the quick brown fox jumps over the lazy dog while the agent keeps its notes for the next turn'.split(' ');
  const layer = (i) => ({
    id: `notes-${i}`,
    slot: 100 + i,
    scope: 'thread',
    budget: { min: 50, max: 500 },
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { notes: [] } }),
      recall: async ({ state }) => (state.notes.length ? { items: [createMessage(state.notes.join('\n'), 'developer')], tokenCount: 20 } : null),
      store: async ({ state, newItems }) => ({ state: { notes: [...state.notes, `seen ${newItems.length}`].slice(-4) } }),
    },
  });
  let n = 0;
  const model = async () => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    n++;
    return {
      items: [{ type: 'message', id: `m${n}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: words.slice(0, 20).join(' '), annotations: [] }] }],
      usage: { inputTokens: 50, outputTokens: 20 },
    };
  };
  const harness = new AgentHarness({
    name: 'bench',
    params: {},
    storage: createInMemoryStorage(),
    // `builtin`: four of the built-in layers a user would reach for first, run natively here and in JS upstream.
    memory: layerCount === 'builtin'
      ? [workingMemory(), historyWindow({ maxItems: 20 }), planMemory(), staticContent({ load: async () => 'You are a careful assistant. Keep answers short.' })]
      : Array.from({ length: layerCount }, (_, i) => layer(i)),
    initialStep: step.llm({ id: 'chat', model: 'bench/model' }),
    _testCallModel: model,
  });
  const latencies = [];
  const firsts = [];
  const laters = [];
  const session = async (s) => {
    const threadId = `thread-${s}`;
    for (let t = 0; t < TURNS; t++) {
      const started = performance.now();
      await harness.execute(`message ${t} from session ${s}`, { threadId });
      await harness.getAgentResponse({ threadId });
      const latency = performance.now() - started;
      latencies.push(latency);
      (t === 0 ? firsts : laters).push(latency);
    }
  };
  const cpuBefore = threadCpu();
  const started = performance.now();
  await Promise.all(Array.from({ length: sessions }, (_, s) => session(s)));
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = threadCpu();
  const perTurn = (after, before) => (after === undefined ? undefined : ((after - before) * 1e6) / latencies.length);
  for (const list of [latencies, firsts, laters]) list.sort((a, b) => a - b);
  return { jsThreadUs: perTurn(cpuAfter?.js, cpuBefore?.js), workerUs: perTurn(cpuAfter?.worker, cpuBefore?.worker), turnsPerSecond: latencies.length / seconds, p50: at(latencies, 0.5), p99: at(latencies, 0.99), p99First: at(firsts, 0.99), p99Later: at(laters, 0.99), peakRssMb: process.resourceUsage().maxRSS / 1024 };
}

// CPU seconds (user + system) of the JS thread and of our turn worker's threads (`noetic-turns`), from /proc: a
// steadier measure of the work a turn costs than turns/s, which a busy two-core machine moves by a tenth between runs
// (DECISIONS R25). Undefined where there is no /proc.
function threadCpu() {
  const seconds = (stat) => {
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime, in clock ticks of 1/100 s (Linux's USER_HZ).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  };
  try {
    let worker = 0;
    for (const tid of readdirSync('/proc/self/task')) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      if (stat.includes('(noetic-turns)')) worker += seconds(stat);
    }
    return { js: seconds(readFileSync('/proc/thread-self/stat', 'utf8')), worker };
  } catch {
    return undefined;
  }
}

// The `q` quantile of a sorted list.
function at(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
