// The fake prefix-caching provider (prefix-cache-server.mjs) that issue 55's work is tested against: its arithmetic,
// its silent mode, what it records, and our OpenRouter provider talking to it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, createMessage, step } from '../js/index.mjs';
import { prefixCacheServer } from './prefix-cache-server.mjs';
import { promptText, wireRequest } from '../bench/prefix.mjs';
import './helpers.mjs';

// Posts `body` to the fake server unstreamed and returns the usage it answered with.
async function post(server, body) {
  const response = await fetch(`${server.baseUrl}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return (await response.json()).usage;
}

const user = (content) => ({ role: 'user', content });
const RULES = 'x'.repeat(2000);

test('the fake server bills the repeated start of the previous request of the same conversation, in whole 128-token blocks', async () => {
  const server = await prefixCacheServer();
  try {
    // Nothing before the first request of a conversation.
    assert.deepEqual(await post(server, { model: 'm', instructions: RULES, input: [user('hi')] }), {
      input_tokens: 508, output_tokens: 2, total_tokens: 510, input_tokens_details: { cached_tokens: 0 },
    });
    // The second repeats the first whole: 2000 + 1 + 30 characters are 507 tokens, three whole blocks.
    const second = await post(server, { model: 'm', instructions: RULES, input: [user('hi'), user('more')] });
    assert.deepEqual([second.input_tokens, second.input_tokens_details], [516, { cached_tokens: 384 }]);
    assert.deepEqual(server.requests.map((r) => [r.chars, r.sharedChars]), [[2031, 0], [2064, 2031]]);
    // 600 shared characters are 150 tokens (one block); 500 are 125 (none).
    await post(server, { model: 'm', instructions: `${'x'.repeat(600)}y` });
    assert.equal(server.requests.at(-1).cachedTokens, 128);
    await post(server, { model: 'm', instructions: `${'x'.repeat(500)}z` });
    assert.deepEqual([server.requests.at(-1).sharedChars, server.requests.at(-1).cachedTokens], [500, 0]);
    // Another conversation has no previous request, even with the same text.
    const other = await post(server, { model: 'm', instructions: `${'x'.repeat(500)}z`, prompt_cache_key: 'other' });
    assert.deepEqual([server.requests.at(-1).key, other.input_tokens_details.cached_tokens], ['other', 0]);
  } finally {
    server.close();
  }
});

test('below minTokens nothing is cached; a silent server counts the same but reports no details at all', async () => {
  const strict = await prefixCacheServer({ minTokens: 1024 });
  const silent = await prefixCacheServer({ reports: false });
  try {
    for (const server of [strict, silent]) {
      await post(server, { model: 'm', instructions: RULES, input: [user('hi')] });
    }
    const held = await post(strict, { model: 'm', instructions: RULES, input: [user('hi'), user('more')] });
    assert.equal(held.input_tokens_details.cached_tokens, 0);
    const quiet = await post(silent, { model: 'm', instructions: RULES, input: [user('hi'), user('more')] });
    assert.deepEqual(quiet, { input_tokens: 516, output_tokens: 2, total_tokens: 518 });
    assert.equal(silent.requests[1].cachedTokens, 384, 'the silent server still records what it would have billed');
  } finally {
    strict.close();
    silent.close();
  }
});

test('every cache_control directive a request carries is recorded with where it sits', async () => {
  const server = await prefixCacheServer();
  try {
    const marked = { role: 'user', content: [{ type: 'input_text', text: 'hi', cache_control: { type: 'ephemeral' } }] };
    await post(server, { model: 'm', input: [user('a'), marked], cache_control: { type: 'ephemeral', ttl: '1h' } });
    await post(server, { model: 'm', input: [user('a')] });
    assert.deepEqual(server.requests.map((r) => r.cacheControl), [
      [{ path: 'input.1.content.0', directive: { type: 'ephemeral' } }, { path: '', directive: { type: 'ephemeral', ttl: '1h' } }],
      [],
    ]);
  } finally {
    server.close();
  }
});

// A harness whose one step has instructions long enough to fill blocks, and a thread-scoped layer.
function harnessOn(options) {
  const notes = { id: 'notes', slot: 100, scope: 'thread', hooks: { recall: async () => ({ items: [createMessage('Notes: the customer prefers email.', 'developer')], tokenCount: 9 }) } };
  return new AgentHarness({
    name: 'cached',
    params: {},
    memory: [notes],
    initialStep: step.llm({ id: 'chat', model: 'openai/gpt-4o-mini', instructions: `Support rules. ${'Be brief and exact. '.repeat(60)}` }),
    ...options,
  });
}

async function turns(harness, questions) {
  const usages = [];
  for (const question of questions) {
    await harness.execute(question, { threadId: 'T' });
    usages.push((await harness.getAgentResponse({ threadId: 'T' })).usage);
  }
  return usages;
}

test('our OpenRouter provider talks to the fake server: each turn repeats the last start, and the cached count reaches the usage', async () => {
  const server = await prefixCacheServer();
  const silent = await prefixCacheServer({ reports: false });
  try {
    const questions = ['Where is my parcel?', 'Can I change the address?', 'Thanks.'];
    const usages = await turns(harnessOn({ llm: { provider: 'openrouter', apiKey: 'sk-test', baseUrl: server.baseUrl } }), questions);
    assert.equal(server.requests.length, 3);
    assert.deepEqual(server.requests.map((r) => r.headers.authorization), ['Bearer sk-test', 'Bearer sk-test', 'Bearer sk-test']);
    // The layer's message comes before the history, and does not change: every request starts with the last whole.
    for (let i = 1; i < 3; i++) assert.equal(server.requests[i].sharedChars, server.requests[i - 1].chars);
    assert.ok(server.requests[1].cachedTokens >= 256, `cached ${server.requests[1].cachedTokens}`);
    assert.deepEqual(usages.map((u) => u.cachedTokens), [undefined, server.requests[1].cachedTokens, server.requests[2].cachedTokens]);
    assert.deepEqual(usages.map((u) => u.inputTokens), server.requests.map((r) => r.inputTokens));
    // Without contextCache the provider asks nothing of the cache.
    assert.deepEqual(server.requests.flatMap((r) => r.cacheControl), []);

    // A provider that never reports: the usage has no cached count.
    const quiet = await turns(harnessOn({ llm: { provider: 'openrouter', apiKey: 'sk-test', baseUrl: silent.baseUrl } }), questions);
    assert.deepEqual(quiet.map((u) => u.cachedTokens), [undefined, undefined, undefined]);
    assert.ok(silent.requests[2].cachedTokens > 0);
  } finally {
    server.close();
    silent.close();
  }
});

test("bench/prefix-cache.mjs reads a JS model's request as the provider's wire carries it", async () => {
  const server = await prefixCacheServer();
  try {
    const questions = ['Where is my parcel?', 'Can I change the address?'];
    await turns(harnessOn({ llm: { provider: 'openrouter', apiKey: 'sk-test', baseUrl: server.baseUrl } }), questions);
    const seen = [];
    const model = async (request) => {
      seen.push(promptText(wireRequest(request)));
      const text = `answer ${seen.length}`;
      return { items: [{ type: 'message', id: `m${seen.length}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }] };
    };
    await turns(harnessOn({ _testCallModel: model }), questions);
    assert.deepEqual(seen, server.requests.map((r) => r.prompt));
  } finally {
    server.close();
  }
});
