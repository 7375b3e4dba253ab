// provider: a step.llm with tools against a stand-in for OpenRouter's Responses API on 127.0.0.1 (upstream's SDK
// reaches it through a patched `fetch`, this package through `llm.baseUrl`): the rounds' request bodies, what each
// tool receives, the framework's events on the session's stream, and the response or error. The server's rounds are
// chosen by the seed: tool calls (several at once, to an unknown tool, with arguments that are not JSON or that the
// schema refuses, to a tool that throws) and text; in some, a steering layer votes on each call, and in some
// workingMemory lends its function to a step without tools of its own (offered, not called: a function whose result
// is undefined fails upstream's next request, P3).
import { createRequire } from 'node:module';
import path from 'node:path';
import { plain, answer, sleep, anonymous, sortedKeys, openRouterStandIn } from './shared.mjs';

export async function provider({ AgentHarness, step, tool, toolWithGenerator, workingMemory, createMessage, react }, { next, pick }) {
  // Upstream's SDK needs zod 4 schemas; the same zod serves both, from upstream's install (the child resolves it).
  const { z } = createRequire(path.join(process.env.NOETIC_UPSTREAM_PKG, 'package.json'))('zod');
  const seen = [];
  const tools = [
    tool({ name: 'add', description: pick(['adds two numbers', '']), input: z.object({ a: z.number(), b: z.number() }), execute: async (args) => (seen.push(['add', plain(args)]), { sum: args.a + args.b }) }),
    tool({ name: 'echo', description: 'says it back', input: z.object({ text: z.string(), loud: z.boolean().optional() }), execute: async (args) => (seen.push(['echo', plain(args)]), args.loud ? args.text.toUpperCase() : args.text) }),
    tool({ name: 'fail', description: 'always throws', input: z.object({ why: z.string() }), execute: async (args) => { seen.push(['fail', plain(args)]); throw new Error(`failed: ${args.why}`); } }),
    toolWithGenerator({
      name: 'count', description: 'counts up', input: z.object({ to: z.number() }), event: z.object({ at: z.number() }),
      execute: async function* (args) {
        seen.push(['count', plain(args)]);
        for (let at = 1; at <= args.to; at++) yield { at };
        return { counted: args.to };
      },
    }),
  ].slice(0, 1 + Math.floor(next() * 4));
  const calls = [['add', '{"a":1,"b":2}'], ['echo', '{"text":"hi","loud":true}'], ['echo', '{"text":"hi"}'], ['fail', '{"why":"x"}'], ['nope', '{}'], ['add', '{"a":"one"}'], ['add', 'not json'], ['count', '{"to":2}']];
  const rounds = Array.from({ length: Math.floor(next() * 3) }, () => Array.from({ length: 1 + Math.floor(next() * 2) }, () => pick(calls)));
  let round = 0;
  // A provider that fails some answers first, in some programs: a failed or incomplete response (upstream asks
  // again with a "continue" nudge), an empty one, or one that fails for good.
  const trouble = pick([undefined, undefined, 'failed', 'incomplete', 'empty', 'failing']);
  let troubled = 0;
  // A structured output, in some programs: the final answer is its JSON.
  const output = next() < 0.3 ? z.object({ answer: z.string(), rounds: z.number().int().optional() }) : undefined;
  const server = await openRouterStandIn((body) => {
    seen.push(['request', sortedKeys(body)]);
    const usage = { input_tokens: 10 + round, output_tokens: 5, total_tokens: 15 + round };
    if (trouble && (trouble === 'failing' || troubled < 1)) {
      troubled++;
      if (trouble === 'empty') return { id: `resp_t${troubled}`, usage, output: [] };
      if (trouble === 'incomplete') return { id: `resp_t${troubled}`, usage, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [] };
      return { id: `resp_t${troubled}`, usage, status: 'failed', error: { code: 'server_error', message: 'the model fell over' }, output: [] };
    }
    const k = round++;
    if (k < rounds.length) {
      return { id: `resp_${k}`, usage, output: rounds[k].map(([name, args], i) => ({ type: 'function_call', id: `fc_${k}_${i}`, call_id: `call_${k}_${i}`, name, arguments: args, status: 'completed' })) };
    }
    const text = output ? JSON.stringify({ answer: `done after ${k} rounds`, rounds: k }) : `done after ${k} rounds`;
    return { id: `resp_${k}`, usage, output: [{ type: 'message', id: `msg_${k}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }] };
  });
  const realFetch = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    const to = (typeof input === 'string' ? input : input.url).replace('https://openrouter.ai/api/v1', server.url);
    return realFetch(typeof input === 'string' ? to : new Request(to, input), init);
  };
  const instructions = pick([undefined, 'be brief']);
  const params = pick([undefined, { temperature: 0.5 }, { maxTokens: 100, topP: 0.9 }]);
  // workingMemory's function, in some programs, to a step without tools of its own: a step that lists tools is
  // offered its layers' functions too here (founding D19), not upstream.
  const lent = next() < 0.3;
  // A steering layer, in some programs: its vote on each call by the tool's name.
  const votes = { add: pick(['allow', 'deny', 'guide']), echo: pick(['allow', 'deny', 'stateOnly']), fail: pick(['allow', 'guide']) };
  const guidance = pick([undefined, 'ask first']);
  const steering = {
    id: 'steer', slot: 10, scope: 'execution',
    hooks: {
      beforeToolCall: async ({ toolName, toolArgs, state }) => {
        seen.push(['vote', toolName, plain(toolArgs), plain(state)]);
        const action = votes[toolName] ?? 'allow';
        // A state and no decision: no vote, but the next call's state shows whether it was kept.
        if (action === 'stateOnly') return { state: { votes: (state?.votes ?? 0) + 1 } };
        return { decision: action === 'allow' ? { action } : { action, guidance } };
      },
    },
  };
  const harness = new AgentHarness({
    name: 'differential', params: {}, llm: { provider: 'openrouter', apiKey: 'sk-test', baseUrl: server.url },
    memory: lent ? [steering, workingMemory()].slice(next() < 0.5 ? 0 : 1) : next() < 0.5 ? [steering] : undefined,
    initialStep: !lent && next() < 0.25
      ? react({ model: 'test/model', tools, instructions, maxSteps: pick([1, 2, 5]) })
      : step.llm({ id: 'chat', model: 'test/model', tools: lent ? undefined : tools, instructions, params, output }),
  });
  // The events on the session's stream.
  const events = [];
  const reading = (async () => {
    for await (const event of harness.getFullStream({ threadId: 'thread' })) {
      // The provider's events by type only: their data is the SDK's parse of the stand-in's.
      if (event.source === 'sdk') {
        events.push(JSON.stringify(['sdk', event.type]));
        continue;
      }
      const { durationMs, ...data } = event.data ?? {};
      events.push(JSON.stringify(['event', event.type, sortedKeys(anonymous(data))]));
      if (/:turn_(completed|failed|aborted)$/.test(event.type)) return;
    }
  })();
  // The text and item streams, for a step with tools of its own (a step without gets no provider events upstream, P4).
  // Each stream's own order is compared; how two readers' reads interleave is timing.
  const texts = [];
  const snapshots = [];
  const streams = lent ? [] : [
    (async () => {
      for await (const text of harness.getTextStream({ threadId: 'thread' })) texts.push(JSON.stringify(['text', text]));
    })(),
    (async () => {
      for await (const item of harness.getItemStream({ threadId: 'thread' })) snapshots.push(JSON.stringify(['item', sortedKeys(anonymous(item))]));
    })(),
  ];
  let outcome;
  try {
    await harness.execute(pick(['hello', 'what is 1+2']), { threadId: 'thread' });
    const response = await harness.getAgentResponse({ threadId: 'thread' });
    outcome = ['response', response.text, (response.items ?? []).map((item) => sortedKeys(anonymous(item)))];
  } catch (e) {
    outcome = ['error', String(e?.message ?? e).slice(0, 160)];
  } finally {
    await Promise.race([Promise.all([reading, ...streams]), sleep(200)]);
  }
  // In some programs, a call of the harness's own beside the session: `harness.callModel`, with or without tools.
  let aside = [];
  if (next() < 0.4) {
    const withTools = next() < 0.5;
    try {
      const answer = await harness.callModel({
        model: 'test/model', items: [createMessage('sum it up', 'user')], instructions: pick([undefined, 'one line']), params: pick([undefined, { temperature: 0 }]),
        ...(withTools ? { tools, ctx: harness.createContext({ threadId: 'aside' }) } : {}),
      });
      aside = ['callModel', (answer.items ?? []).map((item) => sortedKeys(anonymous(item))), plain(answer.usage), answer.cost ?? null];
    } catch (e) {
      aside = ['callModel failed', String(e?.message ?? e).slice(0, 160)];
    }
  }
  server.close();
  return [...seen.map((x) => JSON.stringify(x)), ...events, ...texts, ...snapshots, JSON.stringify(outcome), JSON.stringify(aside)];
}
