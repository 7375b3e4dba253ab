// The ids of messages made here: random version-4 UUIDs, the pooled formatter Node uses included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { AgentHarness, createMessage, step } from '../js/index.mjs';

const { pooledUuid } = createRequire(import.meta.url)('../js/ids.cjs');
const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('pooled ids are version-4 UUIDs, distinct across many refills of the random pool', () => {
  const ids = Array.from({ length: 5000 }, () => pooledUuid());
  for (const id of ids) assert.match(id, V4);
  assert.equal(new Set(ids).size, ids.length);
  // Each of the 30 random hex digits takes many values: the bytes are written where they belong, not left at 0.
  for (let at = 0; at < 36; at++) {
    if ([8, 13, 14, 18, 19, 23].includes(at)) continue;
    assert.ok(new Set(ids.map((id) => id[at])).size > 8, `position ${at} varies`);
  }
});

test('createMessage and a turn input get UUID ids of their own', async () => {
  const a = createMessage('one', 'developer');
  const b = createMessage('two', 'user');
  assert.match(a.id, V4);
  assert.match(b.id, V4);
  assert.notEqual(a.id, b.id);
  let seen;
  const harness = new AgentHarness({
    name: 'ids',
    params: {},
    initialStep: step.llm({ id: 'chat', model: 'm' }),
    _testCallModel: async (request) => {
      seen = request.items;
      return { items: [{ type: 'message', id: 'r', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok', annotations: [] }] }], usage: { inputTokens: 1, outputTokens: 1 } };
    },
  });
  await harness.execute('hello', { threadId: 't' });
  await harness.getAgentResponse({ threadId: 't' });
  assert.match(seen[0].id, /^user-[0-9a-f-]{36}$/);
  assert.match(seen[0].id.slice(5), V4);
});
