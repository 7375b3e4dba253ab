// Runs small seeded programs on this package and on upstream's, and compares what their user code sees: the
// parameters and states hooks receive, the requests a test model is handed, the responses, the stored keys and
// values. A development tool (upstream is not on npm, so tests cannot use it); a difference it finds is a bug or a
// decision, and DECISIONS.md says which.
//
//   NOETIC_UPSTREAM_PKG=<upstream's built packages/core> node scripts/differential.mjs [--seeds 1-60] [--program memory,steps,queue,provider]
//
// The hook records are compared as a set, not in order: this package runs init, store and onComplete in slot order
// (founding D2), upstream in array order. Left out, as decided differences: onItemAppend (M5: here it also sees the
// session's message), onComplete and dispose (S1: here they run after each turn), and the `interrupt` delivery mode
// (S2: here the interrupted turn reports cancelled).
//   memory: 1-4 layers of every scope, recall and store results of every shape, budgets that drop, projectHistory,
//           a context window that may trim, one or two sessions of one to three turns.
//   steps:  a random tree of step.run, branch, fork (all, settle), loop and spawn, run with harness.run: what each
//           function receives (input, the ctx's depth and thread), each predicate's snapshot, each merge's results,
//           and the output or error.
//   provider: a step.llm with tools against a stand-in for OpenRouter's Responses API on 127.0.0.1 (upstream's SDK
//           reaches it through a patched `fetch`, this package through `llm.baseUrl`): the rounds' request bodies,
//           what each tool receives, the framework's events on the session's stream, and the response or error.
//           The server's rounds are chosen by the seed: tool calls (several at once, to an unknown tool, with
//           arguments that are not JSON or that the schema refuses, to a tool that throws) and text; in some, a
//           steering layer votes on each call, and in some workingMemory lends its function to a step without tools
//           of its own (offered, not called: a function whose result is undefined fails upstream's next request,
//           P3).
//   queue:  several messages queued on one thread while a turn runs (a model slow enough that they all wait), in
//           the delivery modes and with message ids chosen by the seed, then responses read.
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

function run(impl, program, seed) {
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--one', impl, program, String(seed)], { encoding: 'utf8', env: process.env });
  return child.stdout + (child.status === 0 ? '' : `exit ${child.status}: ${child.stderr.split('\n').slice(0, 3).join(' ')}`);
}

function firstDifference(a, b) {
  const [x, y] = [a.split('\n'), b.split('\n')];
  const at = x.findIndex((line, i) => line !== y[i]);
  const i = at < 0 ? x.length : at;
  return `  ours:     ${x[i] ?? '(nothing)'}\n  upstream: ${y[i] ?? '(nothing)'}`;
}

// A small seeded generator (the same numbers under both implementations).
function random(seed) {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  return { next, pick: (list) => list[Math.floor(next() * list.length)] };
}

const textsOf = (items) => (items ?? []).map((item) => `${item.type}:${item.role ?? ''}:${typeof item.content === 'string' ? item.content : (item.content?.[0]?.text ?? '')}`);
const plain = (value) => (value === undefined ? 'undefined' : JSON.parse(JSON.stringify(value)));
const answer = (k) => ({ items: [{ type: 'message', id: `a${k}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `answer ${k}`, annotations: [] }] }], usage: { inputTokens: 10 + k, outputTokens: 5 } });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Generated ids (random on both sides) as one placeholder, and object keys sorted (upstream's SDK rebuilds the
// objects it parses, in its own key order).
const anonymous = (item) => JSON.parse(JSON.stringify(item).replace(/"(?:[a-z]+[-_])?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"/g, '"<id>"'));
const sortedKeys = (value) => (Array.isArray(value) ? value.map(sortedKeys) : value && typeof value === 'object' ? Object.fromEntries(Object.keys(value).sort().map((key) => [key, sortedKeys(value[key])])) : value);

// A stand-in for OpenRouter's Responses API: each POST is answered with `reply(body)`, streamed as server-sent
// events when asked, in the full shape upstream's SDK validates.
async function openRouterStandIn(reply) {
  const full = (r) => ({
    object: 'response', created_at: 1, completed_at: 2, error: null, frequency_penalty: null, presence_penalty: null, incomplete_details: null,
    instructions: null, metadata: null, model: 'test/model', parallel_tool_calls: true, status: 'completed', temperature: null, top_p: null,
    tool_choice: 'auto', tools: [], ...r, usage: { input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 }, ...r.usage },
  });
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const body = JSON.parse(text);
      const response = full(reply(body));
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
        return res.end(JSON.stringify(response));
      }
      const events = [{ type: 'response.created', response: { ...response, status: 'in_progress', output: [] } }];
      response.output.forEach((item, index) => {
        events.push({ type: 'response.output_item.added', output_index: index, item });
        for (const part of item.content ?? []) events.push({ type: 'response.output_text.delta', item_id: item.id, output_index: index, content_index: 0, delta: part.text, logprobs: [] });
        events.push({ type: 'response.output_item.done', output_index: index, item });
      });
      events.push({ type: 'response.completed', response });
      res.writeHead(200, { 'content-type': 'text/event-stream', connection: 'close' });
      res.end(events.map((event, i) => `event: ${event.type}\ndata: ${JSON.stringify({ ...event, sequence_number: i })}\n\n`).join(''));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}/api/v1`, close: () => (server.closeAllConnections?.(), server.close()) };
}

const PROGRAMS = {
  async memory({ AgentHarness, createMessage, step, createInMemoryStorage }, { next, pick }) {
    const seen = [];
    const layers = Array.from({ length: 1 + Math.floor(next() * 4) }, (_, i) => {
      const scope = pick(['thread', 'resource', 'execution', 'global']);
      const recallKind = pick(['null', 'string', 'items', 'itemsUncounted', 'large']);
      const storeKind = pick(['nothing', 'empty', 'state', 'undefinedState']);
      const budget = pick([{ min: 0, max: 30 }, { min: 10, max: 200 }, { min: 50, max: 500 }, 40, 300]);
      const projectKind = pick(['none', 'none', 'lastTwo', 'all']);
      const hooks = {
        init: async ({ storage }) => {
          const saved = await storage.get('saved');
          seen.push(['init', i, scope, plain(saved)]);
          await storage.set('saved', { inits: (saved?.inits ?? 0) + 1 });
          return { state: { notes: saved?.notes ?? [] } };
        },
        recall: async ({ state, budget: given, log }) => {
          seen.push(['recall', i, given, plain(state), log.items.length]);
          const notes = state?.notes ?? [];
          if (recallKind === 'null' || notes.length === 0) return null;
          if (recallKind === 'string') return `notes of ${i}: ${notes.join(', ')}`;
          if (recallKind === 'large') return { items: [createMessage(`${'x'.repeat(400)}${notes.join(',')}`, 'developer')], tokenCount: 120 };
          const items = [createMessage(`layer ${i}: ${notes.join(' | ')}`, 'developer')];
          return recallKind === 'items' ? { items, tokenCount: 15 } : { items };
        },
        store: async ({ state, newItems, response }) => {
          seen.push(['store', i, plain(state), textsOf(newItems), plain(response.usage)]);
          if (storeKind === 'nothing') return undefined;
          if (storeKind === 'empty') return {};
          if (storeKind === 'undefinedState') return { state: undefined };
          return { state: { notes: [...(state?.notes ?? []), `saw ${newItems.length}`].slice(-3) } };
        },
      };
      if (projectKind !== 'none') {
        hooks.projectHistory = async ({ items }) => {
          seen.push(['project', i, textsOf(items)]);
          return { items: projectKind === 'lastTwo' ? items.slice(-2) : items };
        };
      }
      return { id: `layer-${i}`, slot: pick([10, 50, 100, 200]) + i, scope, budget, hooks };
    });
    let calls = 0;
    const storage = createInMemoryStorage();
    const harness = new AgentHarness({
      name: 'differential', params: {}, storage, memory: layers, contextWindow: pick([undefined, 400, 2000]),
      initialStep: step.llm({ id: 'chat', model: 'test' }),
      _testCallModel: async (request) => {
        seen.push(['model', textsOf(request.items)]);
        const k = ++calls;
        await sleep(1 + (k % 3));
        return answer(k);
      },
    });
    const out = [];
    const sessions = Array.from({ length: 1 + Math.floor(next() * 2) }, (_, s) => ({ thread: `thread-${s}`, resourceId: pick([undefined, 'resource-1']), turns: 1 + Math.floor(next() * 3) }));
    for (const { thread, resourceId, turns } of sessions) {
      for (let t = 0; t < turns; t++) {
        try {
          await harness.execute(`message ${t} of ${thread}`, { threadId: thread, resourceId });
          const response = await harness.getAgentResponse({ threadId: thread });
          out.push([thread, t, response.text, textsOf(response.items)]);
        } catch (e) {
          out.push([thread, t, 'failed', String(e?.message ?? e).slice(0, 120)]);
        }
      }
    }
    const stored = {};
    for (const key of (await storage.list('')).sort()) stored[key.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<uuid>')] = await storage.get(key);
    return [JSON.stringify(layers.map((l) => [l.scope, l.budget, Object.keys(l.hooks).join('|')])), ...seen.map((x) => JSON.stringify(x)).sort(), ...out.map((x) => JSON.stringify(x)), JSON.stringify(stored)];
  },

  async steps({ AgentHarness, step, branch, fork, loop, spawn, until }, { next, pick }) {
    const seen = [];
    let made = 0;
    // Paths of a fork run side by side, so which of them reaches a step first is timing, and so is how far a sibling
    // gets before a failing path's abort reaches it: inside a fork nothing fails, and the records are compared sorted.
    const tree = (depth, inFork = false) => {
      const id = `s${made++}`;
      const kind = depth >= 3 ? 'run' : pick(['run', 'run', 'branch', 'fork', 'loop', 'spawn']);
      switch (kind) {
        case 'branch': {
          const [a, b] = [tree(depth + 1, inFork), tree(depth + 1, inFork)];
          return branch({ id, route: (input, ctx) => (seen.push([id, 'route', plain(input), ctx.depth]), String(input).length % 3 === 0 ? null : String(input).length % 3 === 1 ? a : b) });
        }
        case 'fork': {
          const mode = pick(['all', 'settle']);
          const paths = [tree(depth + 1, true), tree(depth + 1, true)];
          return fork({ id, mode, paths: (input) => (seen.push([id, 'paths', plain(input)]), paths), merge: (results) => (seen.push([id, 'merge', plain(results)]), results.map((r) => (typeof r === 'object' && r !== null && 'status' in r ? `${r.status}:${r.value ?? r.error?.message ?? ''}` : String(r))).join('+')) });
        }
        case 'loop': {
          const limit = 1 + Math.floor(next() * 3);
          const stop = pick(['maxSteps', 'predicate']);
          const predicate = stop === 'maxSteps' ? until.maxSteps(limit) : (snapshot) => (seen.push([id, 'until', snapshot.stepCount, plain(snapshot.lastOutput), snapshot.lastText, snapshot.history.length]), { stop: snapshot.stepCount >= limit });
          return loop({ id, steps: [tree(depth + 1, inFork)], until: predicate, maxIterations: 5 });
        }
        case 'spawn':
          return spawn({ id, child: tree(depth + 1, inFork) });
        default: {
          const fail = next() < 0.15 && !inFork;
          const suffix = pick(['a', 'bb', 'ccc']);
          return step.run({ id, execute: async (input, ctx) => {
            seen.push([id, 'run', plain(input), ctx.depth, ctx.threadId]);
            if (fail) throw new Error(`${id} failed`);
            return `${typeof input === 'string' ? input : JSON.stringify(input)}${suffix}`;
          } });
        }
      }
    };
    const root = tree(0);
    const harness = new AgentHarness({ name: 'differential', params: {} });
    let outcome;
    try {
      outcome = ['output', plain(await harness.run(root, pick(['x', 'yy', '']), harness.createContext({ threadId: 'thread' })))];
    } catch (e) {
      outcome = ['error', e?.noeticError?.kind ?? e?.name, String(e?.message ?? e).slice(0, 160)];
    }
    return [...seen.map((x) => JSON.stringify(x)).sort(), JSON.stringify(outcome)];
  },

  async provider({ AgentHarness, step, tool, toolWithGenerator, workingMemory, createMessage, react }, { next, pick }) {
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
    const votes = { add: pick(['allow', 'deny', 'guide']), echo: pick(['allow', 'deny']), fail: pick(['allow', 'guide']) };
    const guidance = pick([undefined, 'ask first']);
    const steering = {
      id: 'steer', slot: 10, scope: 'execution',
      hooks: {
        beforeToolCall: async ({ toolName, toolArgs }) => {
          seen.push(['vote', toolName, plain(toolArgs)]);
          const action = votes[toolName] ?? 'allow';
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
    let outcome;
    try {
      await harness.execute(pick(['hello', 'what is 1+2']), { threadId: 'thread' });
      const response = await harness.getAgentResponse({ threadId: 'thread' });
      outcome = ['response', response.text, (response.items ?? []).map((item) => sortedKeys(anonymous(item)))];
    } catch (e) {
      outcome = ['error', String(e?.message ?? e).slice(0, 160)];
    } finally {
      await Promise.race([reading, sleep(200)]);
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
    return [...seen.map((x) => JSON.stringify(x)), ...events, JSON.stringify(outcome), JSON.stringify(aside)];
  },

  async queue({ AgentHarness, step }, { next, pick }) {
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
  },
};

// Last, so that everything above is defined when it runs.
const args = process.argv.slice(2);
await main();

async function main() {
  if (args[0] === '--one') {
    const [, impl, program, seed] = args;
    const api = impl === 'upstream' ? await import(pathToFileURL(path.join(process.env.NOETIC_UPSTREAM_PKG, 'dist/index.js')).href) : await import('../js/index.mjs');
    const lines = await PROGRAMS[program](api, random(Number(seed)));
    console.log(lines.join('\n'));
  } else {
    if (!process.env.NOETIC_UPSTREAM_PKG) {
      console.error('Set NOETIC_UPSTREAM_PKG to the directory of upstream\'s built packages/core.');
      process.exit(2);
    }
    const option = (name, fallback) => {
      const i = args.indexOf(`--${name}`);
      return i >= 0 ? args[i + 1] : fallback;
    };
    const [from, to] = option('seeds', '1-30').split('-').map(Number);
    const programs = option('program', 'memory,steps,queue,provider').split(',');
    let differ = 0;
    for (const program of programs) {
      for (let seed = from; seed <= (to ?? from); seed++) {
        const [ours, theirs] = ['ours', 'upstream'].map((impl) => run(impl, program, seed));
        if (ours === theirs) continue;
        differ++;
        console.log(`${program} seed ${seed} differs:\n${firstDifference(ours, theirs)}`);
      }
    }
    console.log(differ === 0 ? `differential: every program agrees (${programs.join(', ')}, seeds ${from}-${to ?? from})` : `differential: ${differ} program(s) differ`);
    process.exitCode = differ === 0 ? 0 : 1;
  }
}
