// Routing conditions: clauses, embedding matches, combinators and an LLM yes/no (issue 9).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AgentHarness,
  aiCondition,
  allCondition,
  anyCondition,
  branch,
  createInMemoryStorage,
  embeddingMatch,
  otherwise,
  semanticRoute,
  semanticSwitch,
  step,
  when,
} from '../js/index.mjs';

const value = (id) => step.run({ id, execute: async (input) => `${id}(${input})` });
const yes = async () => true;
const no = async () => false;

// A toy embedder: texts about money point one way, about code another, anything else a third; every call counted.
function embedder() {
  const calls = [];
  const embed = async (texts) => {
    calls.push([...texts]);
    return texts.map((t) => (/refund|invoice|money/.test(t) ? [1, 0, 0] : /bug|code|crash/.test(t) ? [0, 1, 0] : [0, 0, 1]));
  };
  return { embed, calls };
}

test('semanticRoute: the first clause that holds picks the step; otherwise always holds; none passes the input on', async () => {
  const h = new AgentHarness({ name: 'c', params: {} });
  const route = semanticRoute(when(no, value('a')), when(yes, value('b')), otherwise(value('c')));
  assert.equal(await h.run(branch({ id: 'b', route }), 'x'), 'b(x)');
  assert.equal(await h.run(branch({ id: 'b', route: semanticRoute(when(no, value('a')), otherwise(value('c'))) }), 'x'), 'c(x)');
  assert.equal(await h.run(branch({ id: 'b', route: semanticRoute(when(no, value('a'))) }), 'x'), 'x');
  assert.deepEqual(when(yes, value('w')).kind, 'when');
});

test('semanticSwitch: the closest label wins above the threshold; labels are embedded once, or kept in a cache', async () => {
  const { embed, calls } = embedder();
  const billing = value('billing');
  const support = value('support');
  const fallback = value('fallback');
  const route = semanticSwitch({ embed, cases: { 'refund or invoice': billing, 'bug in the code': support }, default: fallback });
  assert.equal(await route('I want a refund'), billing);
  assert.equal(await route('the app has a crash'), support);
  assert.equal(await route('hello there'), fallback);
  // The two labels were embedded in the first call only; each input once.
  assert.deepEqual(calls.map((c) => c.length), [1, 2, 1, 1]);
  // Listed cases with several labels, a stored cache shared by a second switch.
  const cache = createInMemoryStorage();
  const second = embedder();
  const cases = [{ labels: ['money', 'invoice'], step: billing }, { labels: 'code', step: support }];
  assert.equal(await semanticSwitch({ embed: second.embed, cases, cache })('invoice please'), billing);
  assert.deepEqual(await cache.get('embed:money'), [1, 0, 0]);
  const third = embedder();
  assert.equal(await semanticSwitch({ embed: third.embed, cases, cache, threshold: 0.99 })('neither'), null);
  assert.deepEqual(third.calls, [['neither']], 'the labels came from the cache');
});

test('embeddingMatch and the combinators', async () => {
  const { embed, calls } = embedder();
  const aboutMoney = embeddingMatch(embed, 'money matters', 0.9);
  assert.equal(await aboutMoney('a refund'), true);
  assert.equal(await aboutMoney('a crash'), false);
  assert.deepEqual(calls, [['a refund', 'money matters'], ['a crash']]);
  assert.throws(() => embeddingMatch(embed, 'label'), /label and threshold are required/);
  const both = embeddingMatch({ embed, labels: ['money', 'code'], threshold: 0.9, match: 'all' });
  const either = embeddingMatch({ embed, labels: ['money', 'code'], threshold: 0.9 });
  assert.deepEqual([await both('refund'), await either('refund'), await either('weather')], [false, true, false]);
  assert.equal(await anyCondition(no, yes)('x'), true);
  assert.equal(await anyCondition(no, no)('x'), false);
  assert.equal(await allCondition(yes, yes)('x'), true);
  assert.equal(await allCondition(yes, no)('x'), false);
});

test("aiCondition asks the harness's model for a JSON yes or no; anything else is no; its usage counts", async () => {
  const script = [{ text: '{"answer": true}' }, { text: '{"answer": false}' }, { text: 'maybe?' }];
  const h = new AgentHarness({ name: 'c', params: {}, llm: { provider: 'scripted', script } });
  const isQuestion = aiCondition({ model: 'scripted', prompt: 'Is this a question?' });
  const ask = step.run({ id: 'ask', execute: async (input, ctx) => [await isQuestion(input, ctx), await isQuestion(input, ctx), await isQuestion(input, ctx), ctx.tokens.input > 0] });
  assert.deepEqual(await h.run(ask, 'is it?'), [true, false, false, true]);
});
