// Prompt-cache anchoring (`contextCache`, issue 55): what a model is sent, turn by turn, with the option and without.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, NoeticConfigError, createMessage, loop, spawn, step, until } from '../js/index.mjs';

const THREAD = { threadId: 'cache-thread' };

// A layer whose recall is `render(turn)` (a string, or null for nothing), counting its own turns from its store.
function layer(id, slot, render, extra = {}) {
  return {
    id,
    slot,
    scope: 'thread',
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { turn: 0 } }),
      recall: async ({ state }) => {
        const text = render(state.turn);
        return text == null ? null : { items: [createMessage(text, 'developer')], tokenCount: Math.ceil(text.length / 4) };
      },
      store: async ({ state }) => ({ state: { turn: state.turn + 1 } }),
    },
    ...extra,
  };
}

// Each request's items as `role:text` (or the item type), and the usage the model reports.
function recordingModel(usage = () => ({ inputTokens: 10, outputTokens: 2 })) {
  const requests = [];
  const model = async (request) => {
    requests.push(request.items);
    const n = requests.length;
    return {
      items: [{ id: `a${n}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `answer ${n}` }] }],
      usage: usage(n),
    };
  };
  return { model, requests };
}

// Long enough that a few small changes stay within their share of the anchor (deltaBudgetFraction).
const RULES = `RULES: ${'answer in one line and cite the order number. '.repeat(20).trim()}`;

const said = (item) => (item.type === 'message' ? `${item.role}:${item.content.map((p) => p.text).join('')}` : item.type);

function harness(model, extra = {}) {
  return new AgentHarness({
    name: 'cache',
    params: {},
    initialStep: step.llm({ id: 'chat', model: 'm', instructions: 'Be brief.' }),
    memory: [
      layer('rules', 100, () => RULES),
      layer('clock', 110, (turn) => `CLOCK: ${turn}`, { placement: 'live' }),
      layer('profile', 120, (turn) => `PROFILE v${Math.floor(turn / 3)}`),
      layer('late', 130, (turn) => (turn >= 2 ? `LATE ${turn}` : null), { placement: 'anchor' }),
    ],
    _testCallModel: model,
    ...extra,
  });
}

async function turns(h, n) {
  const usages = [];
  for (let t = 0; t < n; t++) {
    await h.execute(`question ${t}`, THREAD);
    usages.push((await h.getAgentResponse(THREAD)).lastLayerUsage);
  }
  return usages;
}

test('without contextCache the layers come before the history and the usage has no epoch', async () => {
  const { model, requests } = recordingModel();
  const usages = await turns(harness(model), 2);
  assert.deepEqual(requests[1].map(said), [
    `developer:${RULES}`,
    'developer:CLOCK: 1',
    'developer:PROFILE v0',
    'user:question 0',
    'assistant:answer 1',
    'user:question 1',
  ]);
  assert.equal('epoch' in usages[1], false);
  assert.equal('placement' in usages[1].layers[0], false);
});

test('with contextCache pinned layers repeat byte for byte, live ones follow the history, updates stay where they were seen', async () => {
  const { model, requests } = recordingModel();
  const usages = await turns(harness(model, { contextCache: { enabled: true } }), 4);

  // Turn 1: everything is fresh; the clock, live, follows the history.
  assert.deepEqual(requests[0].map(said), [`developer:${RULES}`, 'developer:PROFILE v0', 'user:question 0', 'developer:CLOCK: 0']);
  assert.equal(usages[0].epoch.reanchorReason, 'cold-start');

  // Turn 4: the anchor band is turn 1's very items. The layer that began at turn 3 came in an update after that
  // turn's question, and turn 4's changes (the profile's new revision, the late layer's new text) in one after this
  // one's; the clock is fresh, last.
  const last = requests[3];
  assert.deepEqual(last.slice(0, 2), requests[0].slice(0, 2), 'the same items, ids and all');
  const shown = last.map(said);
  assert.deepEqual(shown.slice(2, 7), ['user:question 0', 'assistant:answer 1', 'user:question 1', 'assistant:answer 2', 'user:question 2']);
  assert.match(shown[7], /^developer:<context-updates>[^]*<update layer="late" action="add">\nLATE 2\n<\/update>/);
  assert.deepEqual(shown.slice(8, 10), ['assistant:answer 3', 'user:question 3']);
  assert.match(shown[10], /<update layer="profile" action="replace">\nPROFILE v1\n<\/update>\n<update layer="late" action="replace">\nLATE 3\n<\/update>/);
  assert.equal(shown[11], 'developer:CLOCK: 3');
  assert.equal(last.length, 12);

  // Each request starts with the whole of the one before it but for its live clock.
  for (let i = 1; i < requests.length; i++) {
    const before = requests[i - 1].slice(0, -1).map((item) => JSON.stringify(item));
    assert.deepEqual(requests[i].slice(0, before.length).map((item) => JSON.stringify(item)), before, `request ${i + 1}`);
  }

  const usage = usages[3];
  assert.equal(usage.epoch.reanchorReason, undefined);
  assert.equal(usage.epoch.age, 4);
  assert.ok(usage.epoch.repeatedTokens > 0 && usage.epoch.deltaTokens > 0);
  const byId = Object.fromEntries(usage.layers.map((entry) => [entry.layerId, entry]));
  assert.deepEqual([byId.rules.placement, byId.rules.served, byId.rules.changed], ['anchor', 'pinned', false]);
  assert.deepEqual([byId.profile.placement, byId.profile.served, byId.profile.changed], ['anchor', 'pinned', true]);
  assert.deepEqual([byId.clock.placement, byId.clock.served], ['live', 'fresh']);
});

test('enabled: false sends what no option sends', async () => {
  const plain = recordingModel();
  const off = recordingModel();
  await turns(harness(plain.model), 3);
  await turns(harness(off.model, { contextCache: { enabled: false } }), 3);
  const strip = (requests) => requests.map((items) => items.map(said));
  assert.deepEqual(strip(off.requests), strip(plain.requests));
});

test('a reported miss re-anchors, and a provider that reports nothing is not judged', async () => {
  const missing = recordingModel(() => ({ inputTokens: 500, outputTokens: 2, cachedTokens: 0 }));
  const missed = await turns(harness(missing.model, { contextCache: {} }), 5);
  assert.ok(missed.some((usage) => usage.epoch.reanchorReason === 'cache-miss'), JSON.stringify(missed.map((u) => u.epoch)));

  const silent = recordingModel();
  const quiet = await turns(harness(silent.model, { contextCache: {} }), 5);
  assert.deepEqual(quiet.map((usage) => usage.epoch.reanchorReason ?? null), ['cold-start', null, null, null, null]);
});

test('bad contextCache values and placements are config errors', () => {
  const { model } = recordingModel();
  for (const [contextCache, field] of [
    [true, 'contextCache must be an object'],
    [{ maxEpochAssemblies: -1 }, 'contextCache.maxEpochAssemblies'],
    [{ churnDecay: 2 }, 'contextCache.churnDecay'],
    [{ enabled: 'yes' }, 'contextCache.enabled'],
  ]) {
    assert.throws(() => harness(model, { contextCache }), (e) => e instanceof NoeticConfigError && e.code === 'INVALID_CONTEXT_CACHE' && e.message.includes(field));
  }
  assert.throws(
    () => new AgentHarness({ name: 'x', params: {}, memory: [layer('odd', 1, () => 'x', { placement: 'middle' })] }),
    (e) => e instanceof NoeticConfigError && e.code === 'INVALID_LAYER_PLACEMENT' && /'odd'/.test(e.message),
  );
});

test('with contextCache our OpenRouter provider marks where the cacheable parts end and reports what it read, 0 included', async () => {
  const { prefixCacheServer } = await import('./prefix-cache-server.mjs');
  const server = await prefixCacheServer();
  const silent = await prefixCacheServer({ reports: false });
  const on = (baseUrl) =>
    new AgentHarness({
      name: 'cached',
      params: {},
      memory: [layer('rules', 100, () => RULES), layer('clock', 110, (turn) => `CLOCK: ${turn}`, { placement: 'live' })],
      initialStep: step.llm({ id: 'chat', model: 'openai/gpt-4o-mini', instructions: 'Be brief.' }),
      llm: { provider: 'openrouter', apiKey: 'sk-test', baseUrl },
      contextCache: { enabled: true },
    });
  try {
    const usages = [];
    const h = on(server.baseUrl);
    for (let t = 0; t < 3; t++) {
      await h.execute(`question ${t}`, THREAD);
      usages.push(await h.getAgentResponse(THREAD));
    }
    // Breakpoints after the anchor band (the rules) and after the start that repeats (the newest question), none
    // on the live clock; the thread is the provider's session.
    assert.deepEqual(server.requests[2].cacheControl.map((c) => c.path), ['input.0.content.0', 'input.5.content.0']);
    assert.equal(server.requests[2].body.input[6].content, 'CLOCK: 2');
    assert.deepEqual(server.requests.map((r) => r.body.session_id), ['t:cache-thread', 't:cache-thread', 't:cache-thread']);
    // What the provider read from its cache, its first 0 included, as it reported it.
    assert.deepEqual(usages.map((r) => r.usage.cachedTokens), server.requests.map((r) => r.cachedTokens));
    assert.equal(usages[0].usage.cachedTokens, 0);
    assert.ok(usages[2].usage.cachedTokens > 0);

    // A provider that reports nothing: no cached count, and never a cache-miss re-anchor.
    const quiet = on(silent.baseUrl);
    const reasons = [];
    for (let t = 0; t < 4; t++) {
      await quiet.execute(`question ${t}`, THREAD);
      const response = await quiet.getAgentResponse(THREAD);
      assert.equal(response.usage.cachedTokens, undefined);
      reasons.push(response.lastLayerUsage.epoch.reanchorReason ?? null);
    }
    assert.deepEqual(reasons, ['cold-start', null, null, null]);
  } finally {
    server.close();
    silent.close();
  }
});

test('the spans and the inspector show each anchored call: its epoch, why it began, its bands and what repeated', async () => {
  const { InMemoryExporter } = await import('../js/index.mjs');
  const { startInspector } = await import('../js/inspector.mjs');
  const exporter = new InMemoryExporter();
  const { model } = recordingModel();
  const h = harness(model, { contextCache: { enabled: true }, traceExporter: exporter });
  const inspector = await startInspector(h);
  try {
    await turns(h, 3);
    // Spans are handed over when each turn's execution ends.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const assembled = exporter.spans.filter((s) => s.name === 'memory.assemble');
    assert.equal(assembled.length, 3);
    assert.equal(assembled[0].attributes.get('cache.reanchor_reason'), 'cold-start');
    assert.equal(assembled[2].attributes.get('cache.reanchor_reason'), undefined);
    assert.equal(assembled[2].attributes.get('cache.epoch'), 't:cache-thread#0');
    assert.ok(assembled[2].attributes.get('cache.repeated_tokens') > 0);
    assert.equal(assembled[2].attributes.get('cache.bands'), 'rules:anchor,profile:anchor,clock:live');

    const url = new URL(inspector.url);
    url.pathname = '/api/snapshot';
    const snapshot = await (await fetch(url)).json();
    const calls = snapshot.recorder.threads[0].turns.map((t) => t.calls[0]);
    assert.deepEqual(calls.map((c) => c.cache.reanchorReason ?? null), ['cold-start', null, null]);
    assert.deepEqual(calls[2].cache.bands, [['rules', 'anchor', 'pinned'], ['profile', 'anchor', 'pinned'], ['clock', 'live', 'fresh']]);
    assert.ok(calls[2].cache.repeatedTokens > calls[1].cache.repeatedTokens);
  } finally {
    await inspector.close();
  }
});

test('a history the window cannot hold is cut in blocks: its start moves every few turns, not every turn', async () => {
  const run = async (extra) => {
    const { model, requests } = recordingModel();
    const h = new AgentHarness({
      name: 'windowed',
      params: {},
      initialStep: step.llm({ id: 'chat', model: 'm' }),
      memory: [layer('rules', 100, () => 'RULES: be brief.')],
      projection: { tokenBudget: 400, responseReserve: 0, overflow: 'truncate' },
      _testCallModel: model,
      ...extra,
    });
    for (let t = 0; t < 30; t++) {
      await h.execute(`question ${t} ${'with some words to fill the window '.repeat(2)}`, THREAD);
      await h.getAgentResponse(THREAD);
    }
    // The first history item each request carried (the first user or assistant message).
    const starts = requests.map((items) => items.find((item) => item.role === 'user' || item.role === 'assistant').id);
    const moves = starts.slice(1).filter((id, i) => id !== starts[i]).length;
    const sizes = requests.map((items) => items.reduce((sum, item) => sum + Math.ceil(JSON.stringify(item).length / 4), 0));
    return { moves, sizes };
  };
  const plain = await run({});
  const anchored = await run({ contextCache: {} });
  assert.ok(plain.moves >= 15, `without contextCache the cut moves nearly every turn (${plain.moves})`);
  assert.ok(anchored.moves <= plain.moves * 0.6, `with it, in blocks: ${anchored.moves} moves against ${plain.moves}`);
  assert.ok(Math.max(...anchored.sizes) <= 400, `every request fits its window: ${Math.max(...anchored.sizes)}`);
});

// Layers whose pinned text changes every turn, with a renderDelta of each kind; every call it gets is recorded.
function deltaHarness(extra = {}) {
  const calls = [];
  const withDelta = (base, renderDelta) => ({
    ...base,
    hooks: { ...base.hooks, renderDelta: (params) => (calls.push({ layerId: base.id, params }), renderDelta(params)) },
  });
  const anchored = (id, slot, render, extraLayer = {}) => layer(id, slot, render, { placement: 'anchor', ...extraLayer });
  const { model, requests } = recordingModel();
  const h = new AgentHarness({
    name: 'deltas',
    params: {},
    initialStep: step.llm({ id: 'chat', model: 'm', instructions: 'Be brief.' }),
    memory: [
      layer('rules', 100, () => RULES),
      withDelta(anchored('files', 110, (turn) => `FILES ${'a.txt '.repeat(3)}${turn}`), ({ next }) => `+ ${said(next[0]).slice(-1)}`),
      anchored('plain', 120, (turn) => `PLAIN ${turn}`),
      withDelta(anchored('broken', 130, (turn) => `BROKEN ${turn}`), () => {
        throw new Error('no delta today');
      }),
      withDelta(anchored('nulls', 140, (turn) => `NULLS ${turn}`), async () => null),
      withDelta(anchored('slow', 150, (turn) => `SLOW ${turn}`, { timeouts: { recall: 50 } }), () => new Promise(() => {})),
      withDelta(anchored('gone', 160, (turn) => (turn === 0 ? 'GONE soon' : null)), () => 'never asked'),
    ],
    _testCallModel: model,
    ...extra,
  });
  return { h, calls, requests };
}

test('with contextCache a changed pinned layer with renderDelta words its own update, in one batch per assembly', async () => {
  const { h, calls, requests } = deltaHarness({ contextCache: { enabled: true } });
  await turns(h, 3);
  // The first assembly pins everything: nothing to word. The retracted layer is never asked.
  const asked = (turn) => calls.filter((call) => call.params.state.turn === turn).map((call) => call.layerId);
  assert.deepEqual(asked(0), []);
  assert.deepEqual(asked(1), ['files', 'broken', 'nulls', 'slow']);
  assert.deepEqual(asked(2), ['files', 'broken', 'nulls', 'slow']);
  assert.equal(calls.length, 8);
  // One batch per assembly: every call of a turn is handed the one context the batch made.
  for (const turn of [1, 2]) {
    const ctxs = new Set(calls.filter((call) => call.params.state.turn === turn).map((call) => call.params.ctx));
    assert.equal(ctxs.size, 1, `turn ${turn}`);
  }
  assert.notEqual(calls[0].params.ctx, calls[4].params.ctx);

  const first = calls[0].params;
  assert.deepEqual(Object.keys(first), ['prev', 'next', 'prevState', 'state', 'ctx', 'budget']);
  assert.deepEqual([first.prev.map(said), first.next.map(said)], [[`developer:FILES ${'a.txt '.repeat(3)}0`], [`developer:FILES ${'a.txt '.repeat(3)}1`]]);
  assert.equal(first.prevState, undefined);
  assert.deepEqual(first.state, { turn: 1 });
  assert.equal(typeof first.budget, 'number');
  assert.equal(first.ctx.threadId, THREAD.threadId);
  // On turn 3 the pin is still turn 1's.
  assert.equal(said(calls[4].params.prev[0]), `developer:FILES ${'a.txt '.repeat(3)}0`);

  const update = requests[1].map(said).find((text) => text.startsWith('developer:<context-updates>'));
  assert.match(update, /<update layer="files" action="replace">\n\+ 1\n<\/update>/);
  assert.doesNotMatch(update, /FILES a\.txt/);
  // No hook, a throw, null and a timeout (the recall timeout) all leave the full text.
  assert.match(update, /<update layer="plain" action="replace">\nPLAIN 1\n<\/update>/);
  assert.match(update, /<update layer="broken" action="replace">\nBROKEN 1\n<\/update>/);
  assert.match(update, /<update layer="nulls" action="replace">\nNULLS 1\n<\/update>/);
  assert.match(update, /<update layer="slow" action="replace">\nSLOW 1\n<\/update>/);
  assert.match(update, /<update layer="gone" action="retract"\/>/);
  // The anchor band still holds the pins.
  assert.deepEqual(requests[2].slice(0, 7).map(said).slice(1, 3), [`developer:FILES ${'a.txt '.repeat(3)}0`, 'developer:PLAIN 0']);
});

test('without contextCache renderDelta is never called and the requests are what they were', async () => {
  const { h, calls, requests } = deltaHarness();
  await turns(h, 3);
  assert.equal(calls.length, 0);
  assert.deepEqual(requests[2].slice(0, 6).map(said), [
    `developer:${RULES}`,
    `developer:FILES ${'a.txt '.repeat(3)}2`,
    'developer:PLAIN 2',
    'developer:BROKEN 2',
    'developer:NULLS 2',
    'developer:SLOW 2',
  ]);
  assert.ok(requests.every((items) => !items.some((item) => said(item).includes('<context-updates>'))));
});

test("a spawned child's epochs end with it: hundreds of children leave the thread's epoch in place", async () => {
  const { model, requests } = recordingModel();
  const h = harness(model, { contextCache: { enabled: true } });
  await h.execute('question 0', THREAD);
  // More children than the lineages a harness keeps (256), each anchoring its own request with the inherited layers.
  const CHILDREN = 270;
  const children = loop({ id: 'many', steps: [spawn({ id: 'child', child: step.llm({ id: 'ask', model: 'm' }) })], until: until.maxSteps(CHILDREN) });
  await h.run(children, 'go', THREAD);
  assert.equal(requests.length, 1 + CHILDREN, 'each child called the model');
  await h.execute('question 1', THREAD);
  const { epoch } = (await h.getAgentResponse(THREAD)).lastLayerUsage;
  // Kept until evicted, the children's epochs would have pushed the thread's out, and this call would start cold.
  assert.equal(epoch.reanchorReason, undefined, JSON.stringify(epoch));
  assert.equal(epoch.age, 2);
});

test('a renderDelta text with a lone surrogate reaches the update with U+FFFD in its place, and the rest of its batch keeps theirs', async () => {
  const { model, requests } = recordingModel();
  const pinned = (id, slot, text, renderDelta) => ({ ...layer(id, slot, text, { placement: 'anchor' }), hooks: { ...layer(id, slot, text).hooks, renderDelta } });
  const h = harness(model, {
    contextCache: { enabled: true },
    memory: [
      layer('rules', 100, () => RULES),
      pinned('odd', 110, (turn) => `ODD ${turn}`, async () => 'half \ud800 a pair'),
      pinned('even', 120, (turn) => `EVEN ${turn}`, async ({ next }) => `now ${said(next[0])}`),
    ],
  });
  await turns(h, 2);
  const update = requests[1].map(said).find((text) => text.startsWith('developer:<context-updates>'));
  assert.match(update, /<update layer="odd" action="replace">\nhalf \ufffd a pair\n<\/update>/);
  assert.match(update, /<update layer="even" action="replace">\nnow developer:EVEN 1\n<\/update>/);
});
