// llm: step.llm options in a session's turn under a test model: model, instructions and tools as values or as
// getters of the context (sync or async), params, an output schema the reply fits or does not (not JSON, the wrong
// shape), an emit filter on the step's events; and a step.run with a retry policy whose first attempts fail. What
// each getter and model request sees, each attempt, the events that pass the filter, and the output or error.
import { createRequire } from 'node:module';
import path from 'node:path';
import { anonymous, itemText, plain, sleep, sortedKeys, failureOf } from './shared.mjs';

export async function llm(api, { next, pick }) {
  const { AgentHarness, step, tool, loop, until } = api;
  const { z } = createRequire(path.join(process.env.NOETIC_UPSTREAM_PKG, 'package.json'))('zod');
  const seen = [];
  const lazy = (name, value) => {
    const kind = pick(['value', 'sync', 'async']);
    if (kind === 'value') return value;
    const read = (ctx) => (seen.push(['getter', name, ctx.threadId, ctx.depth]), value);
    return kind === 'sync' ? read : async (ctx) => (await sleep(1), read(ctx));
  };
  const echo = tool({ name: 'echo', description: 'says it back', input: z.object({ text: z.string() }), execute: async ({ text }) => text });
  const output = next() < 0.4 ? z.object({ answer: z.string(), score: z.number().optional() }) : undefined;
  const replies = Array.from({ length: 4 }, () => (output ? pick(['{"answer":"yes","score":2}', '{"answer":"no"}', '{"answer":3}', 'not json', '']) : pick(['hello', 'hi there', ''])));
  const emitKind = pick([undefined, true, false, 'only-completed']);
  const emit = emitKind === 'only-completed' ? (type) => type.endsWith('step_completed') : emitKind;
  const chat = step.llm({
    id: 'chat',
    model: lazy('model', pick(['m1', 'm2'])),
    ...(next() < 0.6 ? { instructions: lazy('instructions', pick(['be brief', undefined])) } : {}),
    ...(next() < 0.3 ? { tools: lazy('tools', [echo]) } : {}),
    ...(next() < 0.4 ? { params: pick([{ temperature: 0.3 }, { maxTokens: 50, stopSequences: ['END'] }]) } : {}),
    ...(output ? { output } : {}),
    ...(emit === undefined ? {} : { emit }),
  });
  let attempts = 0;
  const failFirst = Math.floor(next() * 3);
  const flaky = step.run({
    id: 'flaky',
    retry: { maxAttempts: pick([1, 2, 3]), backoff: pick(['fixed', 'linear', 'exponential']), initialDelay: 1, maxDelay: 5 },
    execute: async (input) => {
      attempts++;
      seen.push(['attempt', attempts, plain(input)]);
      if (attempts <= failFirst) throw new Error(`attempt ${attempts} failed`);
      return input;
    },
  });
  let calls = 0;
  const harness = new AgentHarness({
    name: 'differential', params: {},
    initialStep: loop({ id: 'turn', steps: [chat, flaky], until: until.maxSteps(1) }),
    _testCallModel: async (request) => {
      const text = replies[calls++ % replies.length];
      seen.push(['model', request.model, request.instructions ?? null, request.items.map(itemText), (request.tools ?? []).map((t) => t.name), plain(request.params) ?? null, Boolean(request.outputSchema)]);
      await sleep(1);
      return { items: [{ type: 'message', id: `a${calls}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }], usage: { inputTokens: 4, outputTokens: 2 } };
    },
  });
  const events = [];
  const reading = (async () => {
    for await (const event of harness.getFullStream({ threadId: 'thread' })) {
      if (event.source !== 'framework') continue;
      const { durationMs, ...data } = event.data ?? {};
      events.push(JSON.stringify(['event', event.type, sortedKeys(anonymous(data))]));
      if (/:turn_(completed|failed|aborted)$/.test(event.type)) return;
    }
  })();
  let outcome;
  try {
    await harness.execute('question', { threadId: 'thread' });
    const response = await harness.getAgentResponse({ threadId: 'thread' });
    outcome = ['response', plain(response.text), response.items.map(itemText)];
  } catch (e) {
    outcome = ['error', ...failureOf(e), e?.noeticError?.raw ?? null];
  }
  await Promise.race([reading, sleep(200)]);
  return [...seen.map((x) => JSON.stringify(x)), ...events, JSON.stringify(outcome)];
}
