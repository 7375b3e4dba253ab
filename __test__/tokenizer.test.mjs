// The optional real tokenizer: `tokenizer: 'o200k' | 'cl100k'` counts BPE tokens for ctx.tokenize, item costs,
// projection and lastLayerUsage; without it everything counts upstream's estimate.
import test from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, createMessage, estimateTokens, step } from '../js/index.mjs';

const reply = (text) => ({
  items: [{ id: `r-${Math.random()}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }],
  usage: { inputTokens: 1, outputTokens: 1 },
});

// A turn of a harness counting with `tokenizer` over a seeded history: what the model saw, the step's usage, and
// what ctx.tokenize said in a recall hook.
async function turn(tokenizer, { history = [], projection } = {}) {
  const seen = [];
  const tokenized = [];
  const notes = {
    id: 'notes', slot: 1, scope: 'thread',
    hooks: { async recall({ ctx }) { tokenized.push(ctx.tokenize('hello world')); return null; } },
  };
  const h = new AgentHarness({
    name: 'tok', params: {}, tokenizer, projection, memory: [notes],
    initialStep: step.llm({ id: 'ask', model: 'm' }),
    _testCallModel: async (request) => (seen.push(request.items), reply('ok')),
  });
  if (history.length) h.seedSessionHistory('T', history);
  await h.execute('go', { threadId: 'T' });
  const response = await h.getAgentResponse({ threadId: 'T' });
  return { seen: seen[0], log: response.items, usage: response.lastLayerUsage, tokenized: tokenized[0], harness: h };
}

const wordy = (i) => createMessage(`${i}: ${'hello world '.repeat(100)}`, i % 2 ? 'developer' : 'user');

test('ctx.tokenize counts real tokens with a tokenizer and the estimate without one', async () => {
  assert.equal((await turn(undefined)).tokenized, estimateTokens('hello world'));
  assert.equal((await turn('estimate')).tokenized, 3);
  assert.equal((await turn('o200k')).tokenized, 2);
  assert.equal((await turn('cl100k')).tokenized, 2);
});

test("history costs are each item's BPE count of its JSON, and the budget fits more of a history that encodes tightly", async () => {
  const history = Array.from({ length: 12 }, (_, i) => wordy(i));
  const estimate = await turn(undefined, { history });
  const o200k = await turn('o200k', { history });
  // Every item is in the view when nothing is capped; the usage counts the log (the reply too) as the harness counts.
  assert.equal(estimate.seen.length, 13);
  const total = (log, count) => log.reduce((sum, item) => sum + count(JSON.stringify(item)), 0);
  assert.equal(estimate.usage.historyTokens, total(estimate.log, estimateTokens));
  const bpe = (text) => o200k.harness._runtime.native.countTokens(text);
  const bpeTotal = total(o200k.log, bpe);
  assert.equal(o200k.usage.historyTokens, bpeTotal);
  assert.ok(bpeTotal < estimate.usage.historyTokens, `${bpeTotal} BPE tokens vs ${estimate.usage.historyTokens} estimated`);

  // A budget that holds a few of these items by the estimate holds more of them by their real count.
  const projection = { tokenBudget: 2000, responseReserve: 0 };
  const capped = await turn(undefined, { history, projection });
  const cappedReal = await turn('o200k', { history, projection });
  assert.ok(capped.seen.length < 13, `the estimate kept ${capped.seen.length}`);
  assert.ok(cappedReal.seen.length > capped.seen.length, `${cappedReal.seen.length} kept by BPE count vs ${capped.seen.length}`);
});
