// Sessions under random interleavings: two harnesses share one persisted store, and a seeded sequence of execute (in
// every delivery mode), getAgentResponse, abort, evictSession, seedSessionHistory, previewRequestItems and getStatus
// runs over three threads, with a model that is sometimes slow and sometimes fails and a layer whose store sometimes
// throws. Every promise a call returns must settle, no rejection may go unhandled, and each thread must still take a
// turn at the end. A seed that fails names itself, so it can be run again alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, createInMemoryStorage, createSqliteStorage, step } from '../js/index.mjs';
import { scratchDb, slow } from './helpers.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const THREADS = ['a', 'b', 'c'];
const MODES = ['next-turn', 'next-turn', 'between-rounds', 'interrupt'];

async function chaos(seed, storage) {
  let state = seed;
  const random = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
  const pick = (list) => list[Math.floor(random() * list.length)];
  let answered = 0;
  const model = async () => {
    await sleep(Math.floor(random() * 15));
    if (random() < 0.1) throw new Error('model unavailable');
    answered++;
    return { items: [{ type: 'message', id: `m${seed}-${answered}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `answer ${answered}`, annotations: [] }] }] };
  };
  const counter = {
    id: 'counter',
    slot: 100,
    scope: 'thread',
    hooks: {
      init: async ({ storage: own }) => ({ state: (await own.get('state')) ?? { turns: 0 } }),
      store: async ({ state: s }) => {
        if (random() < 0.05) throw new Error('counter store failed');
        return { state: { turns: s.turns + 1 } };
      },
    },
  };
  const make = () => new AgentHarness({ name: 'chaos', params: {}, storage, persistSessions: true, memory: [counter], initialStep: step.llm({ id: 'ask', model: 'm' }), _testCallModel: model, onDiagnostic: () => {} });
  const harnesses = [make(), make()];
  const hung = [];
  const waits = [];
  // Resolved or rejected, never left waiting. A thread's session evicted since its last execute has nothing to
  // answer with yet (a fresh session waits for its first turn, as upstream's), so no response is asked of it then.
  const settles = (promise, what) => {
    let timer;
    const late = new Promise((resolve) => (timer = setTimeout(resolve, slow(15_000), false)));
    waits.push(Promise.race([promise.then(() => true, () => true), late]).then((done) => (clearTimeout(timer), done || hung.push(what))));
  };
  const fresh = new Set(harnesses.flatMap((_, h) => THREADS.map((t) => `${h}:${t}`)));
  for (let i = 0; i < 250; i++) {
    const h = Math.floor(random() * harnesses.length);
    const harness = harnesses[h];
    const threadId = pick(THREADS);
    const key = `${h}:${threadId}`;
    const op = random();
    if (op < 0.35) {
      fresh.delete(key);
      settles(harness.execute(`message ${i}`, { threadId, deliveryMode: pick(MODES) }), `execute #${i}`);
      if (random() < 0.7) settles(harness.getAgentResponse({ threadId }), `response #${i} on ${threadId}`);
    } else if (op < 0.5) {
      if (!fresh.has(key)) settles(harness.getAgentResponse({ threadId }), `response #${i} on ${threadId}`);
    } else if (op < 0.6) {
      settles(harness.abort({ threadId }), `abort #${i}`);
    } else if (op < 0.7) {
      if (harness.evictSession(threadId)) fresh.add(key);
    } else if (op < 0.78) {
      const seedItem = { type: 'message', id: `seed-${seed}-${i}`, role: 'user', status: 'completed', content: [{ type: 'input_text', text: `seeded ${i}` }] };
      settles(harness.seedSessionHistory(threadId, [seedItem]), `seed #${i}`);
    } else if (op < 0.86) {
      settles(harness.previewRequestItems({ threadId }), `preview #${i}`);
    } else {
      assert.ok(['idle', 'generating', 'aborting'].includes(harness.getStatus({ threadId }).kind));
    }
    if (random() < 0.3) await sleep(Math.floor(random() * 10));
  }
  await Promise.all(waits);
  assert.deepEqual(hung, [], `seed ${seed}: calls that never settled`);
  // Each thread still takes a turn on each harness (a model that fails one time in ten may need more tries).
  for (const harness of harnesses) {
    for (const threadId of THREADS) {
      let answeredTurn = false;
      for (let attempt = 0; attempt < 10 && !answeredTurn; attempt++) {
        await harness.execute('one more', { threadId });
        answeredTurn = await harness.getAgentResponse({ threadId }).then(() => true, () => false);
      }
      assert.ok(answeredTurn, `seed ${seed}: thread ${threadId} takes a turn at the end`);
    }
  }
}

test('random interleavings of session calls on two harnesses over SQLite all settle, and every thread goes on', { timeout: slow(120_000) }, async () => {
  const unhandled = [];
  const onUnhandled = (e) => unhandled.push(e?.message ?? String(e));
  process.on('unhandledRejection', onUnhandled);
  try {
    for (const seed of [11, 12]) await chaos(seed, createSqliteStorage(scratchDb(`chaos-${seed}.db`)));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  assert.deepEqual(unhandled, []);
});

test('random interleavings of session calls on two harnesses in memory all settle, and every thread goes on', { timeout: slow(120_000) }, async () => {
  const unhandled = [];
  const onUnhandled = (e) => unhandled.push(e?.message ?? String(e));
  process.on('unhandledRejection', onUnhandled);
  try {
    for (const seed of [21, 22]) await chaos(seed, createInMemoryStorage());
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  assert.deepEqual(unhandled, []);
});
