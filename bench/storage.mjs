// The storage benchmark (issue 12): state writes per second and their p99 latency with 1, 8 and 64 agents writing at
// once, on createInMemoryStorage(), createSqliteStorage(file) and createPostgresStorage(url).
//
// * writes: each agent writes its own layer state (about 1 KB of JSON, changed every write) in a loop through the
//   StorageAdapter, as a layer's mirror does after each store hook;
// * turns: each agent runs harness turns on its own thread with a thread-scoped JS layer (init reads the state,
//   store writes it), so a turn costs one read, one write and the harness around them.
//
// Each figure is the median of TRIALS trials of TRIAL_MS each, from one run. PostgreSQL is the server at
// NOETIC_TEST_POSTGRES_URL, or a throwaway one started by scripts/pg-test-server.sh on this machine (loopback TCP,
// fsync on, default settings); the store uses its default pool of 10 connections. SQLite writes with
// synchronous=FULL (an fsync per write). Figures vary run to run on a busy machine.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentHarness, createInMemoryStorage, createPostgresStorage, createSqliteStorage, step } from '../js/index.mjs';
import { sharedServerUrl } from '../scripts/pg-test-server.mjs';
import { median } from './common.mjs';

const AGENTS = (process.env.AGENTS ?? '1,8,64').split(',').map(Number);
const TRIALS = Number(process.env.TRIALS ?? 3);
const TRIAL_MS = Number(process.env.TRIAL_MS ?? 1000);
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

const scratch = mkdtempSync(join(tmpdir(), 'noetic-bench-'));
process.once('exit', () => rmSync(scratch, { recursive: true, force: true }));
const pg = sharedServerUrl();
const table = `bench_${process.pid}`;
const stores = {
  'in-memory': () => createInMemoryStorage(),
  sqlite: () => createSqliteStorage(join(scratch, `bench-${Math.random().toString(36).slice(2)}.db`)),
  ...(pg.skip ? {} : { postgresql: () => createPostgresStorage(pg.url, { table }) }),
};
if (pg.skip) console.log(`(PostgreSQL left out: ${pg.skip})`);

const stateOf = (agent, n) => ({ agent, n, notes: Array.from({ length: 12 }, (_, i) => `note ${i} of agent ${agent} at write ${n}`), updatedAt: n });

// `agents` loops calling `op(agent, n)` until the trial's time is up: operations per second and p99 latency (ms).
async function trial(agents, op) {
  const latencies = [];
  const deadline = performance.now() + TRIAL_MS;
  const started = performance.now();
  await Promise.all(Array.from({ length: agents }, async (_, agent) => {
    for (let n = 0; performance.now() < deadline; n++) {
      const t = performance.now();
      await op(agent, n);
      latencies.push(performance.now() - t);
    }
  }));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { perSecond: latencies.length / elapsed, p99: percentile(latencies, 0.99) };
}

async function measure(agents, op) {
  await trial(agents, op); // warm-up: connections opened, statements prepared, tables made
  const trials = [];
  for (let i = 0; i < TRIALS; i++) trials.push(await trial(agents, op));
  return { perSecond: median(trials.map((t) => t.perSecond)), p99: median(trials.map((t) => t.p99)) };
}

const writes = (storage) => (agent, n) => storage.set(`layers/counter/agent-${agent}/state`, stateOf(agent, n));

function turns(storage) {
  const counter = {
    id: 'counter',
    slot: 1,
    scope: 'thread',
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? stateOf(0, 0) }),
      store: async ({ state }) => ({ state: { ...state, n: state.n + 1, updatedAt: Date.now() } }),
    },
  };
  const harness = new AgentHarness({ name: 'bench', params: {}, storage, memory: [counter], llm: { provider: 'scripted', script: ['ok'] } });
  const ask = step.llm({ id: 'ask', model: 'scripted' });
  return (agent) => harness.run(ask, 'go on', { threadId: `agent-${agent}` });
}

const rows = [];
for (const [workload, makeOp] of [['writes', writes], ['turns', turns]]) {
  for (const agents of AGENTS) {
    for (const [name, open] of Object.entries(stores)) {
      const { perSecond, p99 } = await measure(agents, makeOp(open()));
      rows.push({ workload, agents, store: name, perSecond, p99 });
      console.log(`${workload.padEnd(6)} ${String(agents).padStart(2)} agents  ${name.padEnd(10)} ${perSecond.toFixed(0).padStart(7)} /s   p99 ${p99.toFixed(2).padStart(7)} ms`);
    }
  }
}
if (process.env.BENCH_JSON) console.log(JSON.stringify(rows));
process.exit(0);
