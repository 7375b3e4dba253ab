// tools: step.tool steps in a session's turn: a tool's arguments from the step input merged with the step's own
// `args` (an object input, a string input, args that the schema refuses), results of each kind (an object, text, a
// number, undefined, a throw, an async generator's events and return), a beforeToolCall layer that allows, denies
// or guides, and a step.run reading what the tool steps left: what each tool receives, the events on the session's
// stream, the output or error, and the items of the response.
import { createRequire } from 'node:module';
import path from 'node:path';
import { anonymous, plain, sortedKeys, failureOf } from './shared.mjs';

export async function tools(api, { next, pick }) {
  const { AgentHarness, step, tool, toolWithGenerator, loop, until } = api;
  const { z } = createRequire(path.join(process.env.NOETIC_UPSTREAM_PKG, 'package.json'))('zod');
  const seen = [];
  const input = z.object({ a: z.number(), b: z.number().optional() });
  const makers = {
    object: () => tool({ name: 'object', description: 'an object', input, execute: async (args, tctx) => (seen.push(['object', plain(args), Object.keys(tctx).sort()]), { sum: args.a + (args.b ?? 0) }) }),
    text: () => tool({ name: 'text', description: 'text', input, execute: async (args) => (seen.push(['text', plain(args)]), `a is ${args.a}`) }),
    number: () => tool({ name: 'number', description: 'a number', input, execute: async (args) => (seen.push(['number', plain(args)]), args.a * 2) }),
    nothing: () => tool({ name: 'nothing', description: 'undefined', input, execute: async (args) => void seen.push(['nothing', plain(args)]) }),
    throws: () => tool({ name: 'throws', description: 'throws', input, execute: async (args) => { seen.push(['throws', plain(args)]); throw new Error(`no ${args.a}`); } }),
    events: () =>
      toolWithGenerator({
        name: 'events', description: 'counts', input, event: z.object({ at: z.number() }),
        execute: async function* (args) {
          seen.push(['events', plain(args)]);
          for (let at = 1; at <= args.a; at++) yield { at };
          return { counted: args.a };
        },
      }),
  };
  const stepFor = (i) => {
    const kind = pick(['object', 'text', 'number', 'nothing', 'events', 'object', 'text', 'events', 'throws']);
    const own = pick([undefined, undefined, { a: 2 }, { b: 3 }, { a: 2 }, { a: 'two' }]);
    return step.tool({ id: `tool-${i}-${kind}`, tool: makers[kind](), ...(own ? { args: own } : {}) });
  };
  const steps = Array.from({ length: 1 + Math.floor(next() * 3) }, (_, i) => stepFor(i));
  const vote = pick(['allow', 'allow', 'deny', 'guide']);
  const memory = next() < 0.4
    ? [{ id: 'gate', slot: 10, scope: 'execution', hooks: { beforeToolCall: async ({ toolName, toolArgs }) => (seen.push(['vote', toolName, plain(toolArgs)]), { decision: vote === 'allow' ? { action: 'allow' } : { action: vote, guidance: 'not now' } }) } }]
    : undefined;
  const first = step.run({ id: 'first', execute: async () => pick([{ a: 1 }, { a: 3, b: 1 }, { a: 2 }, { a: 1 }, 'text input', { b: 2 }]) });
  const look = step.run({ id: 'look', execute: async (prev, ctx) => ({ prev: plain(prev), items: ctx.itemLog.items.map((item) => item.type) }) });
  const root = loop({ id: 'root', steps: [first, ...steps, look], until: until.maxSteps(1) });
  const harness = new AgentHarness({ name: 'differential', params: {}, memory, initialStep: root });
  const events = [];
  const reading = (async () => {
    for await (const event of harness.getFullStream({ threadId: 'thread' })) {
      const { durationMs, ...data } = event.data ?? {};
      events.push(JSON.stringify([event.source, event.type, sortedKeys(anonymous(data))]));
      if (/:turn_(completed|failed|aborted)$/.test(event.type)) return;
    }
  })();
  let outcome;
  try {
    await harness.execute('go', { threadId: 'thread' });
    const response = await harness.getAgentResponse({ threadId: 'thread' });
    outcome = ['response', plain(response.text), response.items.map((item) => sortedKeys(anonymous(item)))];
  } catch (e) {
    outcome = ['error', ...failureOf(e)];
  }
  await Promise.race([reading, new Promise((resolve) => setTimeout(resolve, 200))]);
  return [...seen.map((x) => JSON.stringify(x)), ...events, JSON.stringify(outcome)];
}
