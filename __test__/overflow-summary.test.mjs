// `overflow: 'summarize'` (DECISIONS D10, M7): the history the budget drops is summarized by the model, and the
// summary stands in the view for what it covers, after the layer items and before the kept history.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, step } from '../js/index.mjs';

const text = (item) => (typeof item.content === 'string' ? item.content : item.content?.[0]?.text ?? '');
const reply = (id, t) => ({ items: [{ type: 'message', role: 'assistant', id, status: 'completed', content: [{ type: 'output_text', text: t, annotations: [] }] }], usage: { inputTokens: 1, outputTokens: 1 } });
// About 110 tokens each: a budget of 600 keeps four or five.
const turn = (n) => ({ type: 'message', role: n % 2 ? 'assistant' : 'user', content: `turn ${n}: ${'words '.repeat(70)}` });

function recordingHarness(overflow, answerSummary = (n) => reply(`s${n}`, `summary #${n}`), diagnostics = []) {
  const calls = [];
  let summaries = 0;
  const h = new AgentHarness({
    name: 'overflow',
    params: {},
    projection: { tokenBudget: 600, responseReserve: 0, overflow, overflowModel: 'test/summarizer' },
    onDiagnostic: (d) => diagnostics.push(d),
    _testCallModel: async ({ model, items }) => {
      calls.push({ model, texts: items.map(text) });
      if (model === 'test/summarizer') return answerSummary(++summaries);
      return reply(`a${calls.length}`, 'answer');
    },
  });
  return { h, calls };
}

test('summarize: the dropped history is summarized once, and the summary stands for it in the view', async () => {
  const { h, calls } = recordingHarness('summarize');
  const ctx = h.createContext({ items: Array.from({ length: 12 }, (_, n) => turn(n)) });
  await h.run(step.llm({ id: 'chat', model: 'test/main' }), 'and now?', ctx);

  assert.deepEqual(calls.map((c) => c.model), ['test/summarizer', 'test/main']);
  const [summary, main] = calls;
  // The summary request: the dropped prefix from the start, then the request to summarize.
  assert.match(summary.texts[0], /^turn 0:/);
  assert.match(summary.texts.at(-1), /Summarize/);
  const covered = summary.texts.length - 1;
  // The model's view: the summary, then the newest items, the question last; nothing the summary covers.
  assert.equal(main.texts[0], 'Summary of the earlier conversation:\nsummary #1');
  assert.equal(main.texts.at(-1), 'and now?');
  assert.match(main.texts[1], new RegExp(`^turn ${covered}:`), 'the kept history starts where the summary ends');
  assert.ok(main.texts.length >= 3);
  // The log itself is untouched.
  assert.equal(ctx.itemLog.items.length, 14);
  assert.ok(ctx.itemLog.items.every((item) => !text(item).startsWith('Summary of')));

  // The next step reuses the summary: the history has not grown by half the budget yet.
  await h.run(step.llm({ id: 'chat', model: 'test/main' }), 'more?', ctx);
  assert.deepEqual(calls.slice(2).map((c) => c.model), ['test/main']);
  assert.equal(calls[2].texts[0], 'Summary of the earlier conversation:\nsummary #1');

  // Once more history overflows, the summary is extended: the earlier summary plus what was dropped since.
  for (let n = 0; n < 4; n++) ctx.itemLog.append(turn(100 + n));
  await h.run(step.llm({ id: 'chat', model: 'test/main' }), 'and finally?', ctx);
  const extended = calls[3];
  assert.equal(extended.model, 'test/summarizer');
  assert.equal(extended.texts[0], 'Summary of the conversation so far:\nsummary #1');
  assert.match(extended.texts[1], new RegExp(`^turn ${covered}:`), 'it starts where the last summary ended');
  assert.equal(calls[4].texts[0], 'Summary of the earlier conversation:\nsummary #2');
});

test('truncate and sliding_window never ask for a summary', async () => {
  for (const overflow of ['truncate', 'sliding_window']) {
    const { h, calls } = recordingHarness(overflow);
    const ctx = h.createContext({ items: Array.from({ length: 12 }, (_, n) => turn(n)) });
    await h.run(step.llm({ id: 'chat', model: 'test/main' }), 'q', ctx);
    assert.deepEqual(calls.map((c) => c.model), ['test/main'], overflow);
    assert.ok(calls[0].texts.every((t) => !t.startsWith('Summary of')));
  }
});

test('a history that fits needs no summary', async () => {
  const { h, calls } = recordingHarness('summarize');
  await h.run(step.llm({ id: 'chat', model: 'test/main' }), 'short', h.createContext({ items: [turn(0)] }));
  assert.deepEqual(calls.map((c) => c.model), ['test/main']);
});

test('a summary that fails is a diagnostic; the step goes on with the history truncated', async () => {
  const diagnostics = [];
  const failing = () => {
    throw new Error('summarizer down');
  };
  const { h, calls } = recordingHarness('summarize', failing, diagnostics);
  const ctx = h.createContext({ items: Array.from({ length: 12 }, (_, n) => turn(n)) });
  await h.run(step.llm({ id: 'chat', model: 'test/main' }), 'q', ctx);
  assert.deepEqual(calls.map((c) => c.model), ['test/summarizer', 'test/main']);
  assert.ok(calls[1].texts.every((t) => !t.startsWith('Summary of')));
  assert.equal(calls[1].texts.at(-1), 'q');
  assert.equal(diagnostics.length, 1);
  assert.equal(diagnostics[0].hook, 'summarize');
  assert.match(diagnostics[0].message, /summarizer down/);
});

test('the scripted provider summarizes with the step model when no overflowModel is set', async () => {
  const h = new AgentHarness({
    name: 'scripted-overflow',
    params: {},
    projection: { tokenBudget: 600, responseReserve: 0, overflow: 'summarize' },
    llm: { provider: 'scripted', script: [{ text: 'the gist' }, { text: 'final answer' }] },
  });
  const ctx = h.createContext({ items: Array.from({ length: 12 }, (_, n) => turn(n)) });
  assert.equal(await h.run(step.llm({ id: 'chat', model: 'm' }), 'q', ctx), 'final answer');
  assert.equal(ctx.itemLog.items.length, 14, 'the summary reply never enters the log');
});
