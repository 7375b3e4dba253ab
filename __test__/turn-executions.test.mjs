// Every session turn, and every harness.run, is an execution of its own: init reloads each layer's state from
// storage at its start, onComplete and dispose end it, and its per-execution state goes with it.
import assert from 'node:assert/strict';
import { spawn as spawnProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import { AgentHarness, createInMemoryStorage, step } from '../js/index.mjs';
import { sharedServerUrl } from '../scripts/pg-test-server.mjs';
import { scratchDb, slow } from './helpers.mjs';

let replies = 0;
const reply = (text) => ({ items: [{ id: `r${replies++}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }] });

// A thread-scoped counter whose init loads what was stored, and whose store adds one.
function counter(seen) {
  return {
    id: 'counter',
    slot: 1,
    scope: 'thread',
    hooks: {
      init: async ({ storage }) => {
        const state = (await storage.get('state')) ?? { n: 0 };
        seen.push(state.n);
        return { state };
      },
      store: async ({ state }) => ({ state: { n: state.n + 1 } }),
    },
  };
}

const chat = step.llm({ id: 'chat', model: 'm' });
const worker = (storage, seen, extra = {}) =>
  new AgentHarness({ name: 'w', params: {}, storage, memory: [counter(seen)], initialStep: chat, _testCallModel: async () => reply('ok'), ...extra });

async function turn(harness, text, thread = 'T') {
  await harness.execute(text, { threadId: thread });
  return harness.getAgentResponse({ threadId: thread });
}

for (const workers of [2, 3]) {
  test(`${workers} harnesses on one storage taking turns on a thread lose no update`, async () => {
    const storage = createInMemoryStorage();
    const seen = [];
    const harnesses = Array.from({ length: workers }, () => worker(storage, seen));
    for (let i = 0; i < 6; i++) await turn(harnesses[i % workers], `turn ${i}`);
    assert.deepEqual(seen, [0, 1, 2, 3, 4, 5], 'each turn reloaded what the turn before, on whichever harness, stored');
    assert.deepEqual(await storage.get('layers/counter/T/state'), { n: 6 });
  });
}

test('an execution-scoped layer starts empty every turn, and its storage is its own execution\'s', async () => {
  const seen = [];
  const scratch = {
    id: 'scratch',
    slot: 2,
    scope: 'execution',
    hooks: {
      init: async ({ storage, ctx }) => {
        seen.push({ stored: (await storage.get('mark')) ?? null, execution: ctx.executionId });
        await storage.set('mark', 'set by an earlier turn');
        return { state: { turns: 0 } };
      },
      recall: async ({ state }) => `turns in this execution: ${state.turns}`,
      store: async ({ state }) => ({ state: { turns: state.turns + 1 } }),
    },
  };
  const requests = [];
  const h = new AgentHarness({ name: 'x', params: {}, memory: [scratch], initialStep: chat, _testCallModel: async (req) => (requests.push(req.items), reply('ok')) });
  for (let i = 0; i < 3; i++) await turn(h, `turn ${i}`);
  assert.deepEqual(seen.map((s) => s.stored), [null, null, null]);
  assert.equal(new Set(seen.map((s) => s.execution)).size, 3, 'a new execution id every turn');
  const recalled = requests.map((items) => items.find((i) => i.role === 'developer').content[0].text);
  assert.deepEqual(recalled, ['turns in this execution: 0', 'turns in this execution: 0', 'turns in this execution: 0']);
});

// A layer that records its lifecycle: which execution each hook ran in, and the outcome onComplete was given.
function lifecycleProbe(log) {
  return {
    id: 'probe',
    slot: 3,
    scope: 'thread',
    hooks: {
      init: async ({ ctx }) => (log.push(['init', ctx.executionId]), { state: {} }),
      onComplete: async ({ outcome, ctx }) => void log.push(['onComplete', ctx.executionId, outcome]),
      // dispose is given only the state, as upstream's.
      dispose: async () => void log.push(['dispose']),
    },
  };
}

test('onComplete then dispose end every turn, with its outcome: success, failure, aborted', async () => {
  const log = [];
  let release;
  const calls = [];
  const model = async (request) => {
    calls.push(request);
    const text = request.items.at(-1)?.content?.[0]?.text;
    if (text === 'fail') throw new Error('the model is down');
    if (text === 'hang') await new Promise((resolve) => (release = resolve));
    return reply('ok');
  };
  const h = new AgentHarness({ name: 'l', params: {}, memory: [lifecycleProbe(log)], initialStep: chat, _testCallModel: model });
  await turn(h, 'fine');
  await assert.rejects(turn(h, 'fail'), /the model is down/);
  await h.execute('hang', { threadId: 'T' });
  while (!release) await new Promise((resolve) => setTimeout(resolve, 5));
  const aborted = h.abort({ threadId: 'T' });
  release();
  await aborted;
  const phases = log.map(([phase, , outcome]) => (outcome ? `${phase}:${outcome}` : phase));
  assert.deepEqual(phases, [
    'init', 'onComplete:success', 'dispose',
    'init', 'onComplete:failure', 'dispose',
    'init', 'onComplete:aborted', 'dispose',
  ]);
  // Each turn's init and onComplete ran in that turn's execution, and no two turns shared one.
  const executions = log.filter(([phase]) => phase !== 'dispose').map(([, id]) => id);
  for (let t = 0; t < 3; t++) assert.equal(executions[t * 2], executions[t * 2 + 1]);
  assert.equal(new Set(executions).size, 3);
  assert.equal(h.liveExecutions, 0, 'no turn left its state behind');
});

test('harness.run on a createContext context: each run inits, completes and disposes once; the log stays', async () => {
  const log = [];
  const storage = createInMemoryStorage();
  const seen = [];
  const h = new AgentHarness({ name: 'r', params: {}, storage, memory: [counter(seen), lifecycleProbe(log)], _testCallModel: async () => reply('ok') });
  const ctx = h.createContext({ threadId: 'T' });
  await h.run(chat, 'one', ctx);
  await h.run(chat, 'two', ctx);
  await assert.rejects(h.run(step.run({ id: 'boom', execute: async () => { throw new Error('boom'); } }), 'x', ctx), /boom/);
  assert.deepEqual(log.map(([phase, , outcome]) => (outcome ? `${phase}:${outcome}` : phase)), [
    'init', 'onComplete:success', 'dispose',
    'init', 'onComplete:success', 'dispose',
    'init', 'onComplete:failure', 'dispose',
  ]);
  assert.deepEqual(seen, [0, 1, 2], 'each run reloaded what the run before stored');
  assert.equal(ctx.itemLog.items.length, 4, "the context's log kept both runs' items");
  // A fresh context per run (no ctx) is an execution too.
  await h.run(chat, 'three', { threadId: 'T' });
  assert.deepEqual(seen, [0, 1, 2, 2]);
  assert.equal(log.filter(([phase]) => phase === 'dispose').length, 4);
});

test("a turn's response keeps its own items and usage, read after later turns moved the history on", async () => {
  const h = worker(createInMemoryStorage(), [], { _testCallModel: async () => ({ ...reply('ok'), usage: { inputTokens: 3, outputTokens: 1 } }) });
  const responses = [];
  for (const text of ['first', 'second', 'third']) responses.push(await turn(h, text));
  // Read only now: the items are each turn's own, although its context has handed the log on since.
  assert.deepEqual(responses.map((r) => r.items.length), [2, 4, 6]);
  assert.deepEqual(responses[2].items.filter((i) => i.role === 'user').map((i) => i.content[0].text), ['first', 'second', 'third']);
  assert.deepEqual(responses.map((r) => r.usage.inputTokens), [3, 3, 3], "a turn's usage is its own, as upstream's");
});

// Two worker processes on one store, each a long-lived harness, taking turns on thread T.
async function alternate(where, env = {}) {
  const fixture = fileURLToPath(new URL('./fixtures/thread-worker.mjs', import.meta.url));
  const workers = [0, 1].map(() => {
    const child = spawnProcess(process.execPath, [fixture, where], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, ...env } });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    return { child, next: async () => JSON.parse((await lines.next()).value) };
  });
  const seen = [];
  try {
    for (let i = 0; i < 6; i++) {
      const w = workers[i % 2];
      w.child.stdin.write(`turn ${i}\n`);
      seen.push((await w.next()).init);
    }
  } finally {
    for (const w of workers) w.child.stdin.end();
  }
  return seen;
}

test('two processes on one SQLite file taking turns on a thread lose no update', { timeout: slow(60_000) }, async () => {
  assert.deepEqual(await alternate(scratchDb('workers.db')), [0, 1, 2, 3, 4, 5]);
});

const pg = sharedServerUrl();
test('two processes on one PostgreSQL database taking turns on a thread lose no update', { skip: pg.skip ?? false, timeout: slow(120_000) }, async () => {
  const table = `workers_${process.pid}_${Date.now() % 1e6}`;
  assert.deepEqual(await alternate(pg.url, { FIXTURE_PG_TABLE: table }), [0, 1, 2, 3, 4, 5]);
});

test("a step that runs another step in its turn's context joins the turn's execution", async () => {
  const log = [];
  const seen = [];
  const inner = step.run({ id: 'inner', execute: async (_input, ctx) => (seen.push(ctx.harness.getLayerState(ctx.id, 'counter')), 'inner done') });
  const outer = step.run({
    id: 'outer',
    execute: async (_input, ctx) => {
      ctx.harness.setLayerState(ctx.id, 'counter', { n: 99 });
      return ctx.harness.run(inner, '', ctx);
    },
  });
  const inits = [];
  const h = new AgentHarness({ name: 'n', params: {}, memory: [counter(inits), lifecycleProbe(log)], initialStep: outer });
  assert.equal((await turn(h, 'one')).text, 'inner done');
  assert.deepEqual(seen, [{ n: 99 }], 'the inner run saw the state the outer step set: no init ran in between');
  assert.deepEqual(inits, [0]);
  assert.deepEqual(log.map(([phase]) => phase), ['init', 'onComplete', 'dispose'], 'one execution, ended once');
});
