// The persisted-sessions benchmark (issue 31). 1: one thread's turns with persistSessions off (in memory), on SQLite
// and on PostgreSQL (when NOETIC_TEST_POSTGRES_URL is set): the median turn around turn 50 and around turn 500, so
// that a turn's cost is seen not to grow with the thread. 2: the first turn of a 10,000-item thread in a process
// that has never seen it (read back from SQLite), beside seedSessionHistory with the same items. 3: RSS after
// IDLE_THREADS one-turn threads, with and without eviction. Medians of one run; figures vary on a busy machine.
import { rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentHarness, createInMemoryStorage, createPostgresStorage, createSqliteStorage, step } from '../js/index.mjs';
import { history, median } from './common.mjs';

const TURNS = Number(process.env.TURNS ?? 500);
const IDLE_THREADS = Number(process.env.IDLE_THREADS ?? 100000);
const dir = mkdtempSync(join(tmpdir(), 'noetic-bench-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

const reply = (n) => ({ items: [{ type: 'message', role: 'assistant', id: `a${n}`, status: 'completed', content: [{ type: 'output_text', text: `answer ${n}: ${'words '.repeat(40)}`, annotations: [] }] }], usage: { inputTokens: 100, outputTokens: 5 } });
let answers = 0;
const model = async () => reply(++answers);
const harnessOn = (storage, persist, extra = {}) =>
  new AgentHarness({ name: 'bench', params: {}, storage, persistSessions: persist, initialStep: step.llm({ id: 'ask', model: 'bench/model' }), _testCallModel: model, ...extra });

async function timedTurn(harness, threadId, text) {
  const started = performance.now();
  await harness.execute(text, { threadId });
  await harness.getAgentResponse({ threadId });
  return performance.now() - started;
}

async function thread(name, harness) {
  const times = [];
  for (let t = 0; t < TURNS; t++) times.push(await timedTurn(harness, 'T', `question ${t}: ${'text '.repeat(30)}`));
  const around = (at) => median(times.slice(Math.max(0, at - 10), at + 10));
  console.log(`${name.padEnd(26)} turn 50: ${around(50).toFixed(3)} ms   turn ${TURNS}: ${around(TURNS - 10).toFixed(3)} ms`);
  return around(TURNS - 10);
}

const memory = await thread('in memory, not persisted', harnessOn(createInMemoryStorage(), false));
const sqlite = await thread('SQLite, persisted', harnessOn(createSqliteStorage(join(dir, 'turns.db')), true));
console.log(`  SQLite / in memory, late turns: ${(sqlite / memory).toFixed(2)}x`);
if (process.env.NOETIC_TEST_POSTGRES_URL) {
  const pg = createPostgresStorage(process.env.NOETIC_TEST_POSTGRES_URL, { table: `bench_sessions_${process.pid}` });
  const late = await thread('PostgreSQL, persisted', harnessOn(pg, true));
  console.log(`  PostgreSQL / in memory, late turns: ${(late / memory).toFixed(2)}x`);
  await pg.close();
}

// 2. A 10,000-item thread read back by a fresh harness, beside seeding the same items.
{
  const items = history(10_000);
  const db = join(dir, 'load.db');
  const writer = harnessOn(createSqliteStorage(db), true);
  writer.seedSessionHistory('big', items);
  await timedTurn(writer, 'big', 'store it');
  const loads = [];
  const seeds = [];
  const reads = [];
  for (let round = 0; round < 7; round++) {
    loads.push(await timedTurn(harnessOn(createSqliteStorage(db), true), 'big', 'next'));
    // The store's read of the same entries, as JS gets them (a parse included).
    const store = createSqliteStorage(db);
    const readStarted = performance.now();
    for (const key of await store.list('sessions/big/')) await store.get(key);
    reads.push(performance.now() - readStarted);
    const seeded = harnessOn(createInMemoryStorage(), false);
    const started = performance.now();
    seeded.seedSessionHistory('big', items);
    await seeded.execute('next', { threadId: 'big' });
    await seeded.getAgentResponse({ threadId: 'big' });
    seeds.push(performance.now() - started);
  }
  console.log(`10,000-item thread, first turn in a fresh harness: read back from SQLite ${median(loads).toFixed(2)} ms; seeded ${median(seeds).toFixed(2)} ms + the store's read ${median(reads).toFixed(2)} ms = ${(median(seeds) + median(reads)).toFixed(2)} ms`);
}

// 3. RSS after IDLE_THREADS one-turn threads on SQLite, with and without eviction (each in a harness of its own).
for (const idle of [5, Infinity]) {
  globalThis.gc?.();
  const before = process.memoryUsage().rss;
  const harness = harnessOn(createSqliteStorage(join(dir, `idle-${idle}.db`)), true, { sessionIdleMs: idle });
  for (let i = 0; i < IDLE_THREADS; i++) await timedTurn(harness, `t${i}`, 'hello');
  await new Promise((resolve) => setTimeout(resolve, 300));
  globalThis.gc?.();
  const grown = (process.memoryUsage().rss - before) / 2 ** 20;
  console.log(`${IDLE_THREADS} one-turn threads, sessionIdleMs ${idle}: RSS ${grown >= 0 ? '+' : ''}${grown.toFixed(1)} MB (${harness._runtime.native.liveContexts} sessions in memory)`);
}
