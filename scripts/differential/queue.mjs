// queue: several messages queued on one thread while a turn runs (a model slow enough that they all wait), in the
// delivery modes and with message ids chosen by the seed, then responses read. Left out, as a decided difference:
// the `interrupt` delivery mode (S2: here the interrupted turn reports cancelled).
import { textsOf, answer, sleep } from './shared.mjs';

export async function queue({ AgentHarness, step }, { next, pick }) {
  // Model calls apart from the rest: when the first one starts relative to the executes after it is timing (on an
  // idle harness this package reaches the model within the microtask after `execute`, upstream a few ticks later).
  const lines = [];
  const models = [];
  let calls = 0;
  const harness = new AgentHarness({
    name: 'differential', params: {}, initialStep: step.llm({ id: 'chat', model: 'test' }),
    _testCallModel: async (request) => {
      const k = ++calls;
      models.push(JSON.stringify(['model', k, textsOf(request.items)]));
      // Slow enough that every message below is queued while the first turn runs.
      await sleep(k === 1 ? 30 : 2);
      return answer(k);
    },
  });
  const count = 2 + Math.floor(next() * 3);
  for (let i = 0; i < count; i++) {
    const deliveryMode = pick([undefined, 'next-turn', 'between-rounds']);
    const messageId = pick([undefined, undefined, 'same-id', `id-${i}`]);
    lines.push(JSON.stringify(['execute', i, deliveryMode ?? 'default', messageId ?? 'generated']));
    await harness.execute(`message ${i}`, { threadId: 'thread', deliveryMode, messageId });
  }
  const reads = 1 + Math.floor(next() * 3);
  for (let i = 0; i < reads; i++) {
    const response = await harness.getAgentResponse({ threadId: 'thread' });
    lines.push(JSON.stringify(['response', i, response.text, textsOf(response.items)]));
  }
  await sleep(20);
  const last = await harness.getAgentResponse({ threadId: 'thread' });
  lines.push(JSON.stringify(['last', last.text, textsOf(last.items)]));
  return [...lines, ...models];
}
