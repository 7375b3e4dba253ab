import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { AgentHarness, createInMemoryStorage, createMessage, step, tool } from '../js/index.mjs';
import { myCustomLayer, slow } from './helpers.mjs';
import { fakeResponsesServer, sseText } from './fake-openrouter.mjs';

// Each POST gets the next of `replies` (the last one repeats); see fake-openrouter.mjs for what a reply can say.
const fakeOpenRouter = (replies) => fakeResponsesServer((_, n) => replies[Math.min(n - 1, replies.length - 1)]);

const message = (text) => ({
  type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }],
});

// Changes environment variables for the length of `fn`, restoring them after.
async function withEnv(vars, fn) {
  const saved = Object.fromEntries(Object.keys(vars).map((key) => [key, process.env[key]]));
  const apply = (values) => {
    for (const [key, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
  apply(vars);
  try {
    return await fn();
  } finally {
    apply(saved);
  }
}

test('an AgentHarness with a memory layer and a tool runs a two-round tool loop against the Responses API', async () => {
  const server = await fakeOpenRouter([
    {
      body: {
        status: 'completed',
        output: [
          { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'my-custom-layer_addEntry', arguments: '{"text":"likes tea"}', status: 'completed' },
          { type: 'function_call', id: 'fc_2', call_id: 'call_2', name: 'lookup_weather', arguments: '{"city":"Paris"}', status: 'completed' },
        ],
        usage: { input_tokens: 50, output_tokens: 20, input_tokens_details: { cached_tokens: 10 }, cost: 0.0002 },
      },
    },
    { body: { status: 'completed', output: [message('Noted, and it is sunny in Paris.')], usage: { input_tokens: 80, output_tokens: 9, cost: 0.0003 } } },
  ]);
  try {
    const cities = [];
    const weather = tool({
      name: 'lookup.weather',
      description: 'Weather for a city.',
      input: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        cities.push(city);
        return { city, sky: 'sunny' };
      },
    });
    const storage = createInMemoryStorage();
    const harness = new AgentHarness({
      name: 't', params: {}, storage, memory: [myCustomLayer()],
      llm: { provider: 'openrouter', apiKey: 'sk-or-test', cache: true, baseUrl: server.baseUrl },
    });
    const ctx = harness.createContext({ threadId: 'T' });
    const ask = step.llm({ id: 'ask', model: 'openai/gpt-4o-mini', instructions: 'You are helpful.', tools: [weather], params: { temperature: 0 } });
    assert.equal(await harness.run(ask, 'I like tea. Weather in Paris?', ctx), 'Noted, and it is sunny in Paris.');

    // What the server received: auth, the cache header, wire-safe tool names, the converted input.
    assert.equal(server.received.length, 2);
    const [first, second] = server.received;
    assert.equal(first.method, 'POST');
    assert.equal(first.url, '/api/v1/responses');
    assert.equal(first.headers.authorization, 'Bearer sk-or-test');
    assert.equal(first.headers['x-openrouter-cache'], 'true');
    assert.equal(first.body.model, 'openai/gpt-4o-mini');
    assert.equal(first.body.instructions, 'You are helpful.');
    assert.equal(first.body.temperature, 0);
    assert.deepEqual(first.body.tools.map((t) => t.name), ['lookup_weather', 'my-custom-layer_addEntry']);
    assert.deepEqual(first.body.tools[0].parameters.properties, { city: { type: 'string' } });
    assert.deepEqual(first.body.input.at(-1), { role: 'user', content: 'I like tea. Weather in Paris?' });
    assert.deepEqual(second.body.input.slice(-4), [
      { type: 'function_call', call_id: 'call_1', id: 'fc_1', name: 'my-custom-layer_addEntry', arguments: '{"text":"likes tea"}' },
      { type: 'function_call', call_id: 'call_2', id: 'fc_2', name: 'lookup_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '' },
      { type: 'function_call_output', call_id: 'call_2', output: '{"city":"Paris","sky":"sunny"}' },
    ]);

    // What the run did: both tools ran, the log holds camelCase items, usage and cost are summed over the rounds.
    assert.deepEqual(cities, ['Paris']);
    assert.deepEqual((await storage.get('layers/my-custom-layer/T/state')).entries, ['likes tea']);
    const items = ctx.itemLog.items;
    assert.deepEqual(items.map((i) => i.type), ['message', 'function_call', 'function_call', 'function_call_output', 'function_call_output', 'message']);
    assert.equal(items[1].callId, 'call_1');
    assert.equal(items[1].call_id, undefined);
    assert.deepEqual(ctx.tokens, { input: 130, output: 29, total: 159, cached: 10 });
    assert.ok(Math.abs(ctx.cost - 0.0005) < 1e-12);
  } finally {
    server.close();
  }
});

test('harness.callModel and a hook’s ctx.callModel go to the provider', async () => {
  const server = await fakeOpenRouter([
    { body: { status: 'completed', output: [message('a summary')], usage: { input_tokens: 7, output_tokens: 2, cost: 0.0001 } } },
    { body: { status: 'completed', output: [message('the answer')] } },
    { body: { status: 'completed', output: [], output_text: 'direct' } },
  ]);
  try {
    const seen = [];
    const summariser = {
      id: 'summariser', slot: 1, scope: 'execution',
      hooks: {
        recall: async ({ ctx }) => {
          const response = await ctx.callModel({ model: 'cheap/model', items: [createMessage('summarise please', 'user')], instructions: 'Summarise.' });
          seen.push(response);
          return response.items[0].content[0].text;
        },
      },
    };
    const harness = new AgentHarness({ name: 't', params: {}, memory: [summariser], llm: { provider: 'openrouter', apiKey: 'k', baseUrl: server.baseUrl } });
    assert.equal(await harness.run(step.llm({ id: 'ask', model: 'big/model' }), 'hi'), 'the answer');
    assert.deepEqual(seen[0].usage, { inputTokens: 7, outputTokens: 2, cachedTokens: 0 });
    assert.equal(seen[0].cost, 0.0001);
    assert.deepEqual(server.received[0].body, { model: 'cheap/model', input: [{ role: 'user', content: 'summarise please' }], instructions: 'Summarise.', stream: true, service_tier: 'auto', store: false });
    assert.equal(server.received[1].body.model, 'big/model');

    // No assistant message in the output: `output_text` becomes one.
    const direct = await harness.callModel({ model: 'm', items: [createMessage('hello', 'user')] });
    assert.equal(direct.items[0].role, 'assistant');
    assert.equal(direct.items[0].content[0].text, 'direct');
  } finally {
    server.close();
  }
});

test('HTTP 429 is a NoeticError llm_rate_limit; another status is an error naming it', async () => {
  const server = await fakeOpenRouter([
    { status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'slow down' } } },
    { status: 502, body: { error: { code: 502, message: 'bad gateway upstream' } } },
  ]);
  try {
    const harness = new AgentHarness({ name: 't', params: {}, llm: { provider: 'openrouter', apiKey: 'k', baseUrl: server.baseUrl } });
    const ask = step.llm({ id: 'ask', model: 'm' });
    await assert.rejects(harness.run(ask, 'hi'), (e) => {
      assert.equal(e.name, 'NoeticError');
      assert.deepEqual(e.noeticError, { stepId: 'ask', retryAfter: 1000, kind: 'llm_rate_limit' });
      return true;
    });
    await assert.rejects(harness.run(ask, 'hi'), /OpenRouter request failed with HTTP 502: bad gateway upstream/);
  } finally {
    server.close();
  }
});

test('aborting the context ends a model call in flight', async () => {
  const server = await fakeOpenRouter([{ delayMs: 30_000, body: { status: 'completed', output: [message('too late')] } }]);
  try {
    const harness = new AgentHarness({ name: 't', params: {}, llm: { provider: 'openrouter', apiKey: 'k', baseUrl: server.baseUrl } });
    const ctx = harness.createContext();
    const started = Date.now();
    const run = harness.run(step.llm({ id: 'ask', model: 'm' }), 'hi', ctx);
    while (server.received.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    ctx.abort('user left');
    await assert.rejects(run, (e) => e.noeticError?.kind === 'cancelled' && e.noeticError.reason === 'user left');
    assert.ok(Date.now() - started < 10_000);
  } finally {
    server.close();
  }
});

test('the key falls back to OPENROUTER_API_KEY (and the base URL to OPENROUTER_BASE_URL); with no key there is no provider', async () => {
  const server = await fakeOpenRouter([{ body: { status: 'completed', output: [message('from env')] } }]);
  try {
    await withEnv({ OPENROUTER_API_KEY: 'sk-from-env', OPENROUTER_BASE_URL: server.baseUrl }, async () => {
      // No `llm` option at all: as upstream, the key in the environment makes an OpenRouter client.
      const harness = new AgentHarness({ name: 't', params: {} });
      assert.equal(await harness.run(step.llm({ id: 'ask', model: 'm' }), 'hi'), 'from env');
      assert.equal(server.received[0].headers.authorization, 'Bearer sk-from-env');
      assert.equal(server.received[0].headers['x-openrouter-cache'], undefined);
    });
    await withEnv({ OPENROUTER_API_KEY: undefined }, async () => {
      for (const llm of [{ provider: 'openrouter' }, undefined]) {
        const harness = new AgentHarness({ name: 't', params: {}, llm });
        await assert.rejects(harness.run(step.llm({ id: 'ask', model: 'm' }), 'hi'), (e) => e.name === 'NoeticConfigError' && e.code === 'NO_LLM_PROVIDER');
      }
    });
    assert.equal(server.received.length, 1);
  } finally {
    server.close();
  }
});

test('a base URL that is not http(s) is a config error when the harness is made', () => {
  assert.throws(
    () => new AgentHarness({ name: 't', params: {}, llm: { provider: 'openrouter', apiKey: 'k', baseUrl: 'not a url' } }),
    (e) => e.name === 'NoeticConfigError' && e.code === 'INVALID_BASE_URL',
  );
});

test('a provider that never answers fails the run with the idle timeout named, within streamIdleTimeoutMs', async () => {
  const server = await fakeOpenRouter([{ delayMs: 60_000, body: { status: 'completed', output: [message('never')] } }]);
  try {
    const harness = new AgentHarness({
      name: 't', params: {}, streamIdleTimeoutMs: 300, llm: { provider: 'openrouter', apiKey: 'k', baseUrl: server.baseUrl },
    });
    const started = Date.now();
    await assert.rejects(
      harness.run(step.llm({ id: 'ask', model: 'm' }), 'hi'),
      { message: `llm request to ${server.baseUrl}/responses timed out: no response within 300ms (streamIdleTimeoutMs)` },
    );
    assert.ok(Date.now() - started < 5_000);
    assert.equal(server.received.length, 1);
  } finally {
    server.close();
  }
});

test('a stream that goes silent after its first events fails with the idle timeout named', async () => {
  const server = await fakeOpenRouter([{ stallAfterEvents: 3, body: { status: 'completed', output: [message('never finished')] } }]);
  try {
    const harness = new AgentHarness({
      name: 't', params: {}, streamIdleTimeoutMs: 300, llm: { provider: 'openrouter', apiKey: 'k', baseUrl: server.baseUrl },
    });
    const started = Date.now();
    await assert.rejects(
      harness.run(step.llm({ id: 'ask', model: 'm' }), 'hi'),
      { message: `llm request to ${server.baseUrl}/responses timed out: no response within 300ms (streamIdleTimeoutMs)` },
    );
    assert.ok(Date.now() - started < 5_000);
    assert.equal(server.received[0].body.stream, true);
  } finally {
    server.close();
  }
});

test('streamIdleTimeoutMs and llm.timeoutMs must be numbers', () => {
  const llm = { provider: 'openrouter', apiKey: 'k', baseUrl: 'http://127.0.0.1:9' };
  for (const streamIdleTimeoutMs of [NaN, '300', {}]) {
    assert.throws(
      () => new AgentHarness({ name: 't', params: {}, streamIdleTimeoutMs, llm }),
      (e) => e.name === 'NoeticConfigError' && e.code === 'INVALID_STREAM_IDLE_TIMEOUT' && e.message.includes('streamIdleTimeoutMs') && Boolean(e.hint),
    );
  }
  assert.throws(
    () => new AgentHarness({ name: 't', params: {}, llm: { ...llm, timeoutMs: NaN } }),
    (e) => e.name === 'NoeticConfigError' && e.code === 'INVALID_LLM_TIMEOUT' && e.message.includes('NaN'),
  );
  // Any number is a limit: Infinity, 0 and negative ones turn it off, huge ones are accepted.
  for (const streamIdleTimeoutMs of [Infinity, -Infinity, 0, -5, 1e300, undefined, null]) {
    new AgentHarness({ name: 't', params: {}, streamIdleTimeoutMs, llm: { ...llm, timeoutMs: Infinity } });
  }
});

test('a session streams the provider: text deltas in order, and every event on the full stream as upstream forwards them', async () => {
  const server = await fakeOpenRouter([{ body: { id: 'r1', status: 'completed', output: [message('Tea is a drink people love.')], usage: { input_tokens: 3, output_tokens: 6 } } }]);
  try {
    const harness = new AgentHarness({
      name: 'agent',
      params: {},
      initialStep: step.llm({ id: 'chat', model: 'openai/gpt-4o-mini' }),
      llm: { provider: 'openrouter', apiKey: 'test-key', baseUrl: server.baseUrl },
    });
    const deltas = [];
    const events = [];
    const readText = (async () => {
      for await (const delta of harness.getTextStream()) {
        deltas.push(delta);
        if (deltas.join('') === 'Tea is a drink people love.') return;
      }
    })();
    const readAll = (async () => {
      for await (const event of harness.getFullStream()) {
        events.push(event);
        if (event.type === 'agent:turn_completed') return;
      }
    })();
    const snapshots = [];
    const readItems = (async () => {
      for await (const item of harness.getItemStream()) {
        snapshots.push(item);
        if (item.isComplete && item.status === 'completed') return;
      }
    })();
    await harness.execute('Tell me about tea');
    const response = await harness.getAgentResponse();
    await Promise.all([readText, readAll, readItems]);
    // The item grows delta by delta, then completes.
    assert.deepEqual(snapshots.map((s) => s.content[0].text), ['', 'Tea ', 'Tea is ', 'Tea is a ', 'Tea is a drink ', 'Tea is a drink people ', 'Tea is a drink people love.', 'Tea is a drink people love.']);
    assert.deepEqual(snapshots.map((s) => s.isComplete), [false, false, false, false, false, false, false, true]);
    assert.equal(snapshots[0].id, 'msg_1');
    assert.equal(response.text, 'Tea is a drink people love.');
    assert.deepEqual(deltas, ['Tea ', 'is ', 'a ', 'drink ', 'people ', 'love.']);
    const sdk = events.filter((event) => event.source === 'sdk');
    assert.deepEqual(sdk.map((event) => event.type).slice(0, 3), ['response.created', 'response.output_item.added', 'response.output_text.delta']);
    const delta = sdk.find((event) => event.type === 'response.output_text.delta');
    assert.equal(delta.outputIndex, 0);
    assert.equal(delta.data.itemId, 'msg_1', 'event data is camelCased, as the SDK gives it');
    assert.equal(events[0].type, 'agent:turn_started');
  } finally {
    server.close();
  }
});

test('a provider that calls a tool every round is nudged with "continue" past 32 rounds, then the turn fails as upstream', async () => {
  const call = { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'ping', arguments: '{}', status: 'completed' };
  const server = await fakeOpenRouter([{ body: { id: 'r', status: 'completed', output: [call], usage: { input_tokens: 1, output_tokens: 1 } } }]);
  try {
    const ping = tool({ name: 'ping', description: 'Ping.', input: z.object({}), output: z.string(), execute: async () => 'pong' });
    const harness = new AgentHarness({
      name: 'agent',
      params: {},
      initialStep: step.llm({ id: 'busy', model: 'openai/gpt-4o-mini', tools: [ping] }),
      llm: { provider: 'openrouter', apiKey: 'test-key', baseUrl: server.baseUrl },
    });
    const limits = [];
    const watching = (async () => {
      for await (const event of harness.getFullStream()) {
        if (event.type === 'agent:tool_round_limit_exceeded') limits.push(event.data);
        if (event.type === 'agent:turn_aborted' || event.type === 'agent:turn_completed') return event.type;
      }
    })();
    await harness.execute('go');
    await assert.rejects(harness.getAgentResponse(), /LLM exceeded maximum tool rounds \(32\)/);
    assert.equal(await watching, 'agent:turn_aborted');
    const nudged = server.received.map((r, i) => (r.body.input.at(-1)?.content === 'continue' ? i + 1 : null)).filter(Boolean);
    assert.deepEqual([server.received.length, nudged], [35, [33, 34, 35]]);
    assert.deepEqual(limits.map((l) => [l.maxToolRounds, l.attempt, l.maxAttempts]), [[32, 1, 3], [32, 2, 3], [32, 3, 3], [32, 4, 3]]);
  } finally {
    server.close();
  }
});

// One assistant message of `chars` characters streamed `size` characters a delta, as OpenRouter streams it.
function longReply(chars, size) {
  const text = 'abcd'.repeat(chars / 4);
  const item = message(text);
  const events = [{ type: 'response.created', response: { status: 'in_progress', output: [] } }];
  events.push({ type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress', content: [] } });
  for (let i = 0; i < chars; i += size) events.push({ type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, delta: text.slice(i, i + size) });
  events.push({ type: 'response.output_item.done', output_index: 0, item });
  events.push({ type: 'response.completed', response: { id: 'r1', status: 'completed', output: [item], usage: { input_tokens: 1, output_tokens: chars / size } } });
  return { text, sse: sseText(events) };
}

test('a reply streamed in 16,000 small deltas costs memory in its length: nothing is folded without a reader, and a reader gets every snapshot', { timeout: slow(60_000) }, async () => {
  // In a process of its own, so that its peak RSS is the turn's. A snapshot for every delta kept in memory was
  // 16,000 copies of a growing 64 KB text: the turn raised RSS by about 500 MB.
  const fixture = fileURLToPath(new URL('./fixtures/streamed-turn.mjs', import.meta.url));
  const turn = spawnSync(process.execPath, [fixture, '64000', '4'], { encoding: 'utf8', timeout: slow(60_000) });
  assert.equal(turn.status, 0, turn.stderr);
  const { grownMB, length } = JSON.parse(turn.stdout.trim().split('\n').pop());
  assert.equal(length, 64_000);
  assert.ok(grownMB < 200, `a turn without readers grew RSS by ${grownMB.toFixed(0)} MB`);

  const { text, sse } = longReply(64_000, 4);
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(sse);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const harness = new AgentHarness({
      name: 'agent',
      params: {},
      initialStep: step.llm({ id: 'chat', model: 'openai/gpt-4o-mini' }),
      llm: { provider: 'openrouter', apiKey: 'test-key', baseUrl: `http://127.0.0.1:${server.address().port}/api/v1` },
    });
    const snapshots = [];
    const reading = (async () => {
      for await (const item of harness.getItemStream({ threadId: 'read' })) {
        snapshots.push(item);
        if (item.isComplete) return;
      }
    })();
    await harness.execute('write at length', { threadId: 'read' });
    assert.equal((await harness.getAgentResponse({ threadId: 'read' })).text, text);
    await reading;
    // The added item, one snapshot a delta, and the done item; each its own object, growing by one delta.
    assert.equal(snapshots.length, 16_002);
    assert.equal(snapshots[1].content[0].text, 'abcd');
    assert.equal(snapshots[16_000].content[0].text, text);
    assert.deepEqual([snapshots[16_000].isComplete, snapshots[16_001].isComplete, snapshots[16_001].status], [false, true, 'completed']);
    snapshots[2].content[0].text = 'changed by the caller';
    assert.equal(snapshots[3].content[0].text, 'abcd'.repeat(3), 'a snapshot shares nothing a caller can change');
  } finally {
    server.close();
  }
});

test('createOpenRouterEmbed posts the texts natively and gives one vector per text, in order; failures name the status', async () => {
  const { createOpenRouterEmbed, cosineSimilarity } = await import('../js/index.mjs');
  assert.throws(() => createOpenRouterEmbed(''), (e) => e.code === 'MISSING_API_KEY' && e.message === 'createOpenRouterEmbed() requires an OpenRouter API key.');
  const fake = await fakeOpenRouter([
    { body: { data: [{ index: 1, embedding: [0, 1] }, { index: 0, embedding: [1, 0] }] } },
    { status: 401, body: { error: { message: 'bad key' } } },
  ]);
  const before = process.env.OPENROUTER_BASE_URL;
  process.env.OPENROUTER_BASE_URL = fake.baseUrl;
  try {
    const embed = createOpenRouterEmbed('sk-test', 'acme/embedder');
    const vectors = await embed(['first', 'second']);
    assert.deepEqual(vectors, [[1, 0], [0, 1]]);
    assert.equal(cosineSimilarity(vectors[0], vectors[1]), 0);
    const [request] = fake.received;
    assert.deepEqual([request.url, request.headers.authorization, request.body], ['/api/v1/embeddings', 'Bearer sk-test', { model: 'acme/embedder', input: ['first', 'second'] }]);
    await assert.rejects(embed(['x']), /OpenRouter embeddings request failed: 401 Unauthorized/);
    // The default model.
    await createOpenRouterEmbed('sk-test')(['y']).catch(() => {});
    assert.equal(fake.received[2].body.model, 'openai/text-embedding-3-small');
  } finally {
    if (before === undefined) delete process.env.OPENROUTER_BASE_URL;
    else process.env.OPENROUTER_BASE_URL = before;
    await fake.close();
  }
});

test("tools go out as upstream's SDK sends them, and a call whose arguments are not JSON runs nothing", async () => {
  const call = (id, name, args) => ({ type: 'function_call', id: `fc_${id}`, call_id: id, name, arguments: args, status: 'completed' });
  const server = await fakeOpenRouter([
    { body: { id: 'r1', status: 'completed', output: [call('c1', 'add', '{"a": 1,'), call('c2', 'add', '{"a":1,"b":2}')], usage: { input_tokens: 1, output_tokens: 1 } } },
    { body: { id: 'r2', status: 'completed', output: [message('3')], usage: { input_tokens: 1, output_tokens: 1 } } },
  ]);
  try {
    const runs = [];
    const add = tool({ name: 'add', description: '', input: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => (runs.push([a, b]), a + b) });
    const harness = new AgentHarness({
      name: 'agent', params: {}, initialStep: step.llm({ id: 'sum', model: 'm/x', tools: [add] }), llm: { provider: 'openrouter', apiKey: 'k', baseUrl: server.baseUrl },
    });
    await harness.execute('add them');
    const response = await harness.getAgentResponse();
    assert.equal(response.text, '3');
    assert.deepEqual(runs, [[1, 2]], 'only the call with JSON arguments ran');
    const [first, second] = server.received.map((r) => r.body);
    // Draft 7, a blank description as null, `strict` null, and the SDK's own defaults.
    assert.deepEqual(first.tools, [{
      type: 'function', name: 'add', description: null, strict: null,
      parameters: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'], additionalProperties: false },
    }]);
    assert.equal(first.service_tier, 'auto');
    assert.equal(first.store, false);
    const outputs = second.input.filter((item) => item.type === 'function_call_output').map((item) => item.output);
    assert.deepEqual(outputs, ['Error: malformed JSON in tool arguments: {"a": 1,', '3']);
    // The log's output items have fresh ids of their own.
    const ids = response.items.filter((item) => item.type === 'function_call_output').map((item) => item.id);
    assert.equal(new Set(ids).size, 2);
    for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  } finally {
    server.close();
  }
});

test("a session's tool round raises upstream's model-call events, each put to the step's emit filter", async () => {
  const call = { type: 'function_call', id: 'fc_1', call_id: 'c1', name: 'add', arguments: '{"a":1,"b":2}', status: 'completed' };
  const run = async (emit) => {
    const server = await fakeOpenRouter([
      { body: { id: 'r1', status: 'completed', output: [call], usage: { input_tokens: 1, output_tokens: 1 } } },
      { body: { id: 'r2', status: 'completed', output: [message('3')], usage: { input_tokens: 1, output_tokens: 1 } } },
    ]);
    try {
      const add = tool({ name: 'add', description: 'adds', input: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => a + b });
      const harness = new AgentHarness({
        name: 'agent', params: {}, initialStep: step.llm({ id: 'sum', model: 'm/x', tools: [add], emit }), llm: { provider: 'openrouter', apiKey: 'k', baseUrl: server.baseUrl },
      });
      const events = [];
      const sdk = [];
      const reading = (async () => {
        for await (const event of harness.getFullStream()) {
          if (event.source === 'framework') events.push([event.type.slice('agent:'.length), event.data]);
          else sdk.push(event);
          if (event.type === 'agent:turn_completed') return;
        }
      })();
      await harness.execute('add them');
      await harness.getAgentResponse();
      await reading;
      // With tools, each round's provider events come between the SDK's turn delimiters.
      assert.deepEqual(sdk.filter((e) => e.type.startsWith('turn.')).map((e) => [e.type, e.data.turnNumber]), [['turn.start', 0], ['turn.end', 0], ['turn.start', 0], ['turn.end', 0]]);
      assert.equal(sdk[0].type, 'turn.start');
      return events;
    } finally {
      server.close();
    }
  };
  const events = await run(undefined);
  assert.deepEqual(events.map(([type]) => type), [
    'turn_started', 'step_started',
    'llm_call_started', 'llm_call_first_event', 'llm_call_completed',
    'tool_round_started', 'tool_call_started', 'tool_call_completed', 'tool_round_completed',
    'llm_call_started', 'llm_call_first_event', 'llm_call_completed',
    'step_completed', 'turn_completed',
  ]);
  const data = Object.fromEntries(events.slice(2, 10).map(([type, d]) => [type, d]));
  assert.deepEqual(data.tool_call_completed, { name: 'add', callId: 'c1', error: false });
  assert.deepEqual(data.tool_round_started, { round: 0, toolCount: 1 });
  assert.deepEqual(events[9][1], { round: 1, messageCount: 3, toolCount: 1, recoveryContinuation: false });
  assert.ok(Number.isInteger(events.at(-1)[1].durationMs), 'a turn lasts whole milliseconds, as upstream counts them');
  // The filter sees each event's type and data; what it refuses stays off the stream.
  const asked = [];
  const filtered = await run((type, d) => (asked.push(type), !type.startsWith('tool_call')));
  assert.ok(asked.includes('tool_call_started') && asked.includes('llm_call_first_event'));
  assert.deepEqual(filtered.map(([type]) => type).filter((type) => type.startsWith('tool')), ['tool_round_started', 'tool_round_completed']);
});

test('harness.callModel with tools runs them in the given context round after round, as a step would', async () => {
  const call = { type: 'function_call', id: 'fc_1', call_id: 'c1', name: 'add', arguments: '{"a":2,"b":3}', status: 'completed' };
  const server = await fakeOpenRouter([
    { body: { id: 'r1', status: 'completed', output: [call], usage: { input_tokens: 4, output_tokens: 1 } } },
    { body: { id: 'r2', status: 'completed', output: [message('5')], usage: { input_tokens: 6, output_tokens: 1 } } },
  ]);
  try {
    const seen = [];
    const add = tool({ name: 'add', description: 'adds', input: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }, toolCtx) => (seen.push(toolCtx.ctx.threadId), a + b) });
    const harness = new AgentHarness({ name: 'agent', params: {}, llm: { provider: 'openrouter', apiKey: 'k', baseUrl: server.baseUrl } });
    const ctx = harness.createContext({ threadId: 'side' });
    const answer = await harness.callModel({ model: 'm/x', items: [createMessage('add 2 and 3', 'user')], tools: [add], ctx, outputSchema: z.object({ sum: z.number() }) });
    assert.deepEqual(answer.items.map((item) => item.type), ['function_call', 'function_call_output', 'message']);
    assert.equal(answer.items[1].output, '5');
    assert.deepEqual(answer.usage, { inputTokens: 10, outputTokens: 2, cachedTokens: 0 });
    assert.deepEqual(seen, ['side'], 'the tool ran once, in the context given');
    const [first, second] = server.received.map((r) => r.body);
    assert.deepEqual(first.tools.map((t) => t.name), ['add']);
    assert.equal(first.text.format.schema.properties.sum.type, 'number');
    assert.deepEqual(second.input.at(-1), { type: 'function_call_output', call_id: 'c1', output: '5' });
    assert.equal(ctx.itemLog.items.length, 0, "the context's log is left as it was");
    // Tools with nowhere to run are refused before anything is sent.
    await assert.rejects(harness.callModel({ model: 'm/x', items: [], tools: [add] }), (e) => e.code === 'INVALID_MODEL_REQUEST' && /needs the context/.test(e.message));
    assert.equal(server.received.length, 2);
  } finally {
    server.close();
  }
});

test('a response that cannot be used is reported on the stream and asked again with the nudge, as upstream', async () => {
  const server = await fakeOpenRouter([
    { body: { id: 'r1', status: 'failed', error: { code: 'server_error', message: 'fell over' }, output: [], usage: { input_tokens: 1, output_tokens: 0 } } },
    { body: { id: 'r2', status: 'completed', output: [message('fine now')], usage: { input_tokens: 1, output_tokens: 1 } } },
  ]);
  try {
    const harness = new AgentHarness({ name: 'agent', params: {}, initialStep: step.llm({ id: 'chat', model: 'm/x' }), llm: { provider: 'openrouter', apiKey: 'k', baseUrl: server.baseUrl } });
    const events = [];
    const reading = (async () => {
      for await (const event of harness.getFullStream()) {
        if (event.source === 'framework' && event.type.startsWith('agent:llm_call')) events.push([event.type.slice('agent:'.length), event.data]);
        if (event.type === 'agent:turn_completed') return;
      }
    })();
    await harness.execute('hi');
    assert.equal((await harness.getAgentResponse()).text, 'fine now');
    await reading;
    assert.deepEqual(events, [
      ['llm_call_started', { round: 0, messageCount: 1, toolCount: 0, recoveryContinuation: false }],
      ['llm_call_first_event', { round: 0 }],
      ['llm_call_failed', { round: 0, status: 'failed', error: 'LLM response failed: fell over', recoverable: true }],
      ['llm_call_recovery_continue', { round: 0, status: 'failed', attempt: 1, maxAttempts: 3 }],
      ['llm_call_started', { round: 0, messageCount: 2, toolCount: 0, recoveryContinuation: true }],
      ['llm_call_first_event', { round: 0 }],
      ['llm_call_completed', { round: 0, itemCount: 1 }],
    ]);
    assert.deepEqual(server.received[1].body.input.at(-1), { type: 'message', role: 'user', content: 'continue' });
  } finally {
    server.close();
  }
});

test('a stream that goes quiet past streamIdleTimeoutMs is llm_call_stalled on the session stream before the turn fails', async () => {
  const server = await fakeOpenRouter([{ stallAfterEvents: 2, body: { status: 'completed', output: [message('never finished')] } }]);
  try {
    const harness = new AgentHarness({
      name: 'agent', params: {}, streamIdleTimeoutMs: 300, initialStep: step.llm({ id: 'chat', model: 'm/x' }),
      llm: { provider: 'openrouter', apiKey: 'k', baseUrl: server.baseUrl },
    });
    const events = [];
    const reading = (async () => {
      for await (const event of harness.getFullStream()) {
        if (event.source === 'framework') events.push([event.type.slice('agent:'.length), event.data]);
        if (/:turn_(completed|failed|aborted)$/.test(event.type)) return;
      }
    })();
    await harness.execute('hi');
    await assert.rejects(harness.getAgentResponse(), /timed out/);
    await reading;
    const llm = events.filter(([type]) => type.startsWith('llm_call'));
    assert.deepEqual(llm.map(([type]) => type), ['llm_call_started', 'llm_call_first_event', 'llm_call_stalled']);
    assert.deepEqual(llm[2][1], { round: 0, idleTimeoutMs: 300 });
  } finally {
    server.close();
  }
});
