// onItemAppend for every input item (issue 10, D7) and re-render requests (D23): tool outputs and steering
// guidance pass through the layers; a re-render asked for on a tool output is recalled before the next round.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { AgentHarness, step, tool } from '../js/index.mjs';

const layer = (id, slot, hooks, extra = {}) => ({ id, slot, scope: 'execution', hooks, ...extra });
const userNote = (text) => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
const lookup = tool({ name: 'lookup', description: 'lookup', input: z.object({}).passthrough(), execute: async () => 'raw result' });

function run(memory, script, input = 'go') {
  const h = new AgentHarness({ name: 'a', params: {}, memory, llm: { provider: 'scripted', script } });
  const ctx = h.createContext();
  return h.run(step.llm({ id: 'ask', model: 'm', tools: [lookup] }), input, ctx).then((out) => ({ out, ctx }));
}

test('tool outputs pass through onItemAppend, which may transform them before the model and the log see them', async () => {
  const seen = [];
  const redact = layer('redact', 10, {
    onItemAppend: async ({ items }) => {
      seen.push(items.map((i) => i.type));
      return { items: items.map((i) => (i.type === 'function_call_output' ? { ...i, output: i.output.toUpperCase() } : i)) };
    },
  });
  const { ctx } = await run([redact], [{ toolCalls: [{ name: 'lookup', arguments: {} }] }, { text: 'done' }]);
  assert.deepEqual(seen, [['message'], ['function_call_output']], 'the step input, then the tool output; never the response');
  const output = ctx.itemLog.items.find((i) => i.type === 'function_call_output');
  assert.equal(output.output, 'RAW RESULT');
});

test('a re-render asked for on a tool output recalls the layer again before the next round', async () => {
  const versioned = (rerender) => {
    const recalls = [];
    const l = layer('versioned', 10, {
      init: async () => ({ state: { v: 1 } }),
      recall: async ({ state }) => (recalls.push(state.v), { items: [userNote(`version ${state.v}`)], tokenCount: 3 }),
      onItemAppend: async ({ items, state }) =>
        items.some((i) => i.type === 'function_call_output') ? { items, state: { v: state.v + 1 }, rerender, scope: 'self' } : { items },
    });
    return { l, recalls };
  };
  // No step input: the only user message the scripted model sees is the layer's, which it echoes once the script ends.
  const script = [{ toolCalls: [{ name: 'lookup', arguments: {} }] }];
  const fresh = versioned(true);
  assert.equal((await run([fresh.l], script, '')).out, 'You said: version 2');
  assert.deepEqual(fresh.recalls, [1, 2]);
  const stale = versioned(false);
  assert.equal((await run([stale.l], script, '')).out, 'You said: version 1', 'without a request, the round keeps the first recall');
  assert.deepEqual(stale.recalls, [1]);
});

test('a re-render scope names which layers recall again: self, slot-after or all', async () => {
  const recalls = [];
  const recaller = (id, slot) => layer(id, slot, { recall: async () => (recalls.push(id), null) });
  const asker = (scope) =>
    layer('asker', 20, {
      recall: async () => (recalls.push('asker'), null),
      onItemAppend: async ({ items }) => ({ items, rerender: items.some((i) => i.type === 'function_call_output'), scope }),
    });
  const script = [{ toolCalls: [{ name: 'lookup', arguments: {} }] }, { text: 'done' }];
  for (const [scope, expected] of [
    ['self', ['asker']],
    ['slot-after', ['asker', 'later']],
    ['all', ['early', 'asker', 'later']],
    ['nonsense', []],
  ]) {
    recalls.length = 0;
    await run([recaller('early', 10), asker(scope), recaller('later', 30)], script);
    assert.deepEqual(recalls.slice(3), expected, `scope ${scope}`);
  }
});

test('steering guidance is an input item: it passes through onItemAppend', async () => {
  const appended = [];
  let guided = false;
  const coach = layer('coach', 10, {
    afterModelCall: async () => (guided ? { decision: { action: 'allow' } } : ((guided = true), { decision: { action: 'guide', guidance: 'be brief' } })),
    onItemAppend: async ({ items }) => (appended.push(...items.map((i) => `${i.role}:${typeof i.content === 'string' ? i.content : i.content[0].text}`)), { items }),
  });
  await run([coach], [{ text: 'long answer' }, { text: 'short' }]);
  assert.deepEqual(appended, ['user:go', 'developer:be brief']);
});
