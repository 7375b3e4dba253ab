// temporalMemory (issue 11, spec §20.6): the fact ledger kept through the host's extract and search, the
// temporal/searchMemory tool, and the <current_datetime> grounding, run natively inside a harness.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AgentHarness, NoeticConfigError, createInMemoryStorage, spawn, step, temporalMemory } from '../js/index.mjs';
import { runAndRead, scratchDb, slow } from './helpers.mjs';

// Tuesday March 5th 2024, 09:07 local time, whatever the time zone.
const tuesday = () => new Date(2024, 2, 5, 9, 7);
const NOW = '2024/03/05 (Tue) 09:07';

// Lifts `FACT <ts> <text>` lines out of the transcript, recording what it was asked.
function factLines(asked = []) {
  return async (input) => {
    asked.push(input);
    return input.transcript.split('\n').flatMap((line) => {
      const match = /^FACT (\S+) (.*)$/.exec(line);
      return match ? [{ ts: match[1], fact: match[2] }] : [];
    });
  };
}

const answer = (text) => ({ items: [{ type: 'message', role: 'assistant', id: `a-${text}`, status: 'completed', content: [{ type: 'output_text', text }] }] });
const developerTexts = (items) => items.filter((item) => item.role === 'developer').map((item) => item.content[0].text);
const outputs = (ctx) => ctx.itemLog.items.filter((item) => item.type === 'function_call_output').map((item) => item.output);
const allFacts = (state) => Object.entries(state.facts).flatMap(([ts, facts]) => facts.map((fact) => `${ts} ${fact}`)).sort();

test('facts come from what the user says and what the model answers; the model searches them through its tool', async () => {
  const extracted = [];
  const searched = [];
  const layer = temporalMemory({
    now: tuesday,
    bufferThreshold: 1,
    extract: factLines(extracted),
    search: async (input) => {
      searched.push(input);
      const hits = input.facts.filter((f) => f.fact.includes('Lisbon'));
      return { facts: hits.map((f) => f.fact), date: hits[0]?.ts, fuzzy: false };
    },
  });
  const storage = createInMemoryStorage();
  const h = new AgentHarness({
    name: 't', params: {}, storage, memory: [layer],
    llm: { provider: 'scripted', script: [{ toolCalls: [{ name: 'temporal/searchMemory', arguments: { query: 'when did I move to Lisbon?' } }] }, { text: 'You moved on May 1st.\nFACT 2024-03-05 asked when they moved' }] },
  });
  const ctx = h.createContext({ threadId: 't1', resourceId: 'ada' });
  await h.run(step.llm({ id: 'agent', model: 'scripted' }), 'FACT 2024-05-01 moved to Lisbon', ctx);
  // onItemAppend handed the user's message to the extractor with the configured clock.
  assert.deepEqual(extracted[0], { transcript: 'FACT 2024-05-01 moved to Lisbon', now: NOW });
  assert.ok(extracted.every((input) => input.now === NOW));
  // The searcher saw the ledger as it stood; the model read its answer as the tool's output.
  assert.deepEqual(searched, [{ query: 'when did I move to Lisbon?', facts: [{ ts: '2024-05-01', fact: 'moved to Lisbon' }], now: NOW }]);
  assert.deepEqual(outputs(ctx).map((text) => JSON.parse(text)), [{ facts: ['moved to Lisbon'], date: '2024-05-01', fuzzy: false }]);
  // store handed the model's answer over too; the resource-scoped ledger holds both facts.
  assert.ok(extracted.some((input) => input.transcript.includes('FACT 2024-03-05 asked when they moved')));
  const saved = await storage.get('layers/temporal/ada/state');
  assert.deepEqual(allFacts(saved), ['2024-03-05 asked when they moved', '2024-05-01 moved to Lisbon']);
  assert.deepEqual([saved.buffer, saved.bufferTokens], [[], 0]);
  // ctx.memory calls the same function; the next execution reloads the ledger from storage.
  const idle = step.run({ id: 'idle', execute: async () => '' });
  const { seen } = await runAndRead(h, idle, '', ctx, (c) => c.memory.temporal.searchMemory({ query: 'Lisbon' }));
  assert.deepEqual(seen, { facts: ['moved to Lisbon'], date: '2024-05-01', fuzzy: false });
});

test('recall grounds the model in the configured clock and shows the newest facts that fit the budget', async () => {
  const storage = createInMemoryStorage();
  const facts = {};
  for (let i = 1; i <= 60; i++) facts[`2024-02-${String(i).padStart(2, '0')}`] = [`event number ${i}, ${'with a fair amount of detail '.repeat(3)}`];
  await storage.set('layers/temporal/R/state', { facts, buffer: [], bufferTokens: 0, version: 3 });
  const requests = [];
  const model = async (request) => (requests.push(request.items), answer('ok'));
  const h = new AgentHarness({ name: 't', params: {}, storage, memory: [temporalMemory({ now: tuesday, injectLedger: true })], _testCallModel: model });
  await h.run(step.llm({ id: 'ask', model: 'm' }), 'what did I do last week?', { resourceId: 'R' });
  const [text] = developerTexts(requests[0]);
  assert.match(text, new RegExp(`^<current_datetime>\\nNow: ${NOW.replace(/[()]/g, '\\$&')}\\nResolve relative time`));
  assert.match(text, /temporal\/searchMemory tool to look up when something happened\.\n<\/current_datetime>\n\n<remembered_facts>\n- \[2024-02-60\] event number 60/);
  const lines = text.split('\n').filter((line) => line.startsWith('- ['));
  assert.ok(lines.length > 5 && lines.length < 60, `${lines.length} facts fit in 800 tokens with the grounding`);
  assert.ok(Math.ceil(text.length / 4) <= 800);
  // The newest first, none skipped.
  assert.deepEqual(lines.map((line) => Number(/number (\d+)/.exec(line)[1])), Array.from(lines, (_, i) => 60 - i));
});

test('the ledger persists in SQLite across processes and recall reads the system clock in local time', () => {
  const path = scratchDb('temporal.db');
  const turn = fileURLToPath(new URL('./fixtures/temporal-turn.mjs', import.meta.url));
  // A zone with a half-hour offset tells local time from UTC.
  const env = { ...process.env, TZ: 'Asia/Kolkata' };
  const runs = ['FACT 2024-05-01 moved to Lisbon', 'FACT 2024-06-01 adopted a cat'].map((message) => {
    const result = spawnSync(process.execPath, [turn, path, message], { encoding: 'utf8', timeout: slow(30_000), env });
    assert.equal(result.status, 0, result.stderr);
    return JSON.parse(result.stdout);
  });
  assert.deepEqual(runs[0].facts, ['- [2024-05-01] moved to Lisbon']);
  assert.deepEqual(runs[1].facts, ['- [2024-06-01] adopted a cat', '- [2024-05-01] moved to Lisbon']);
  assert.deepEqual(runs.map((run) => run.saved), [1, 2]);
  for (const run of runs) assert.ok(run.jsNow.includes(run.nowShown), `${run.nowShown} is one of ${run.jsNow}`);
});

test('a spawned child starts from a copy of the ledger', async () => {
  const storage = createInMemoryStorage();
  await storage.set('layers/temporal/T/state', { facts: { '2024-01-01': ['new year'] }, buffer: [], bufferTokens: 0, version: 1 });
  const requests = [];
  const model = async (request) => (requests.push(request.items), answer('ok'));
  const h = new AgentHarness({ name: 't', params: {}, storage, memory: [temporalMemory({ groundDateTime: false, injectLedger: true })], _testCallModel: model });
  await h.run(spawn({ id: 'delegate', child: step.llm({ id: 'ask', model: 'm' }) }), 'in the child', { threadId: 'T' });
  assert.deepEqual(developerTexts(requests[0]), ['<remembered_facts>\n- [2024-01-01] new year\n</remembered_facts>']);
});

test('an extractor that throws, answers nonsense or never answers is a diagnostic; the ledger is kept', async () => {
  const kept = { facts: { '2024-01-01': ['new year'] }, buffer: ['earlier'], bufferTokens: 2, version: 1 };
  const cases = [
    [async () => { throw new Error('extractor offline'); }, {}, /extractor offline/],
    [async () => ({ facts: [] }), {}, /extract must resolve to a list of \{ ts, fact \}/],
    [async () => [{ ts: 20240101, fact: 'x' }], {}, /each fact needs a string ts and fact/],
    [() => new Promise(() => {}), { timeouts: { onItemAppend: 50, store: 50 } }, /Timeout after 50ms/],
  ];
  for (const [extract, overrides, message] of cases) {
    const storage = createInMemoryStorage();
    await storage.set('layers/temporal/T/state', kept);
    const diagnostics = [];
    const layer = { ...temporalMemory({ extract, bufferThreshold: 1, groundDateTime: false }), ...overrides };
    const h = new AgentHarness({ name: 't', params: {}, storage, memory: [layer], _testCallModel: async () => answer('still answered'), onDiagnostic: (d) => diagnostics.push(d) });
    assert.equal(await h.run(step.llm({ id: 'ask', model: 'm' }), 'FACT 2024-02-02 something', { threadId: 'T' }), 'still answered');
    assert.deepEqual(diagnostics.map((d) => [d.layerId, d.hook]), [['temporal', 'onItemAppend'], ['temporal', 'store']], String(message));
    assert.ok(diagnostics.every((d) => message.test(d.message)), diagnostics.map((d) => d.message).join('; '));
    assert.deepEqual(await storage.get('layers/temporal/T/state'), kept);
  }
});

test('an extractor that never answers keeps Node alive until the hook times out', { timeout: slow(60_000) }, () => {
  const index = new URL('../js/index.mjs', import.meta.url).href;
  const script = `
    import { AgentHarness, step, temporalMemory } from ${JSON.stringify(index)};
    const layer = { ...temporalMemory({ extract: () => new Promise(() => {}), bufferThreshold: 1 }), timeouts: { onItemAppend: 300, store: 300 } };
    const seen = [];
    const model = async () => ({ items: [{ type: 'message', role: 'assistant', id: 'a', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }] });
    const h = new AgentHarness({ name: 't', params: {}, memory: [layer], _testCallModel: model, onDiagnostic: (d) => seen.push(d.hook + ': ' + d.message) });
    console.log(JSON.stringify({ output: await h.run(step.llm({ id: 'ask', model: 'm' }), 'hello'), seen }));`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: slow(30_000) });
  assert.equal(result.status, 0, result.stderr);
  const { output, seen } = JSON.parse(result.stdout);
  assert.equal(output, 'done');
  assert.deepEqual(seen, ['onItemAppend: Timeout after 300ms', 'store: Timeout after 300ms']);
});

test('a searcher that throws is a tool error the model reads; a bad clock is a recall diagnostic', async () => {
  const h = new AgentHarness({
    name: 't', params: {}, memory: [temporalMemory({ now: tuesday, search: async () => { throw new Error('search index missing'); } })],
    llm: { provider: 'scripted', script: [{ toolCalls: [{ name: 'temporal/searchMemory', arguments: { query: 'x' } }, { name: 'temporal/searchMemory', arguments: { q: 'x' } }] }, { text: 'ok' }] },
  });
  const ctx = h.createContext({ threadId: 'T' });
  await h.run(step.llm({ id: 'agent', model: 'scripted' }), 'go', ctx);
  const [thrown, missing] = outputs(ctx);
  assert.match(thrown, /^Error: .*search index missing/);
  assert.match(missing, /^Error: .*query/);

  const diagnostics = [];
  const requests = [];
  const badClock = temporalMemory({ now: () => 'tomorrow' });
  const h2 = new AgentHarness({ name: 't', params: {}, memory: [badClock], _testCallModel: async (r) => (requests.push(r.items), answer('fine')), onDiagnostic: (d) => diagnostics.push(d) });
  assert.equal(await h2.run(step.llm({ id: 'ask', model: 'm' }), 'go'), 'fine');
  assert.deepEqual(diagnostics.map((d) => [d.layerId, d.hook]), [['temporal', 'recall']]);
  assert.match(diagnostics[0].message, /now\(\) must return a Date, got "tomorrow"/);
  assert.deepEqual(developerTexts(requests[0]), []);
});

test('config of the wrong kind is refused when the layer is built', () => {
  const cases = [
    [{ maxFacts: 2.5 }, /maxFacts must be a whole number of at least 0 \(or Infinity\), got 2\.5/],
    [{ maxFacts: -1 }, /maxFacts must be/],
    [{ bufferThreshold: '500' }, /bufferThreshold must be a number of at least 0.*got "500"/],
    [{ bufferThreshold: Number.NaN }, /bufferThreshold must be .* got NaN/],
    [{ groundDateTime: 'yes' }, /groundDateTime must be a boolean/],
    [{ extract: 'llm' }, /extract must be a function/],
    [{ now: new Date() }, /now must be a function/],
    [{ scope: 'session' }, /scope must be/],
  ];
  for (const [config, message] of cases) {
    assert.throws(() => temporalMemory(config), (e) => e instanceof NoeticConfigError && e.code === 'INVALID_TEMPORAL_MEMORY_CONFIG' && message.test(e.message), String(message));
  }
  const layer = temporalMemory({ maxFacts: Number.POSITIVE_INFINITY, scope: 'thread', injectLedger: true });
  assert.deepEqual([layer.id, layer.slot, layer.scope, layer.budget, layer.timeouts], ['temporal', 80, 'thread', { min: 0, max: 800 }, { store: 60_000, onItemAppend: 60_000 }]);
  assert.deepEqual(temporalMemory().budget, { min: 0, max: 200 });
});

test('the JS face: hooks and searchMemory callable directly, with the extractor and searcher as upstream calls them', async () => {
  const asked = [];
  const layer = temporalMemory({ now: tuesday, bufferThreshold: 1, maxFacts: 2, extract: factLines(asked) });
  const { state } = await layer.hooks.init({ storage: { get: async () => undefined } });
  assert.deepEqual(state, { facts: {}, buffer: [], bufferTokens: 0, version: 0 });
  const items = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'FACT 2024-01-01 a\nFACT 2024-01-02 b\nFACT 2024-01-03 c' }] }];
  const appended = await layer.hooks.onItemAppend({ items, state });
  assert.equal(appended.items, items);
  assert.deepEqual(asked, [{ transcript: items[0].content[0].text, now: NOW }]);
  assert.deepEqual(appended.state, { facts: { '2024-01-02': ['b'], '2024-01-03': ['c'] }, buffer: [], bufferTokens: 0, version: 1 });
  const silent = await layer.hooks.onItemAppend({ items: [{ type: 'function_call', callId: 'c', name: 'f', arguments: '{}' }], state });
  assert.equal(silent.state, undefined);
  const recalled = await layer.hooks.recall({ state: appended.state, budget: 200 });
  assert.match(recalled.items[0].content[0].text, /^<current_datetime>\nNow: 2024\/03\/05 \(Tue\) 09:07\n/);
  assert.equal(recalled.tokenCount, Math.ceil(recalled.items[0].content[0].text.length / 4));
  assert.deepEqual(await layer.provides.searchMemory.execute({ query: 'x' }, appended.state), { result: { facts: ['[2024-01-02] b', '[2024-01-03] c'] } });
  const child = await layer.hooks.onSpawn({ parentState: appended.state });
  assert.deepEqual(child.childState, appended.state);
  assert.notEqual(child.childState, appended.state);
  const searching = temporalMemory({ now: tuesday, search: async (input) => ({ facts: [input.query, input.now, String(input.facts.length)] }) });
  assert.deepEqual(await searching.provides.searchMemory.execute({ query: 'q' }, appended.state), { result: { facts: ['q', NOW, '2'] } });
  // Without an extractor store only buffers, and without grounding or ledger there is nothing to recall.
  const plain = temporalMemory({ groundDateTime: false });
  const reply = { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'FACT 2024-01-01 ignored' }] };
  const stored = await plain.hooks.store({ state: undefined, newItems: [reply] });
  assert.deepEqual(stored.state, { facts: {}, buffer: ['FACT 2024-01-01 ignored'], bufferTokens: 6, version: 0 });
  assert.equal(await plain.hooks.recall({ state: stored.state, budget: 200 }), null);
});
