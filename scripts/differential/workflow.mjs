// workflow: a random JSON workflow (llm, tool, branch, fork, spawn, loop with every kind of until, sequence),
// spoiled in half the programs (a field removed, null, of the wrong type, out of range, an unknown kind or key):
// what validateWorkflow says of it (the checked copy's depth, or the ZodError's issues by path and code), then
// parseAndRunWorkflow with three tools and a test model: each tool's arguments, each model request, and the output
// or error. Config errors are compared by code: their messages are this package's wording (M18). Model requests
// are compared with unanswered tool calls stripped: a tool node logs its call without an output, and the projection
// here drops such a call whether or not the context has layers (founding D10), where upstream drops it only with
// layers.
import { createRequire } from 'node:module';
import path from 'node:path';
import { itemText, plain, sleep } from './shared.mjs';

const WORDS = ['alpha', 'beta', 'done', 'answer'];

export async function workflow(api, { next, pick }) {
  const { AgentHarness, tool, parseAndRunWorkflow, validateWorkflow, workflowDepth, stripUnresolvedToolCalls } = api;
  const { z } = createRequire(path.join(process.env.NOETIC_UPSTREAM_PKG, 'package.json'))('zod');
  const seen = [];
  const tools = [
    tool({ name: 'add', description: 'adds', input: z.object({ a: z.number(), b: z.number() }), execute: async (args, tctx) => (seen.push(['add', plain(args), tctx.assembledView.length]), { sum: (args.a ?? 0) + (args.b ?? 0) }) }),
    tool({ name: 'echo', description: 'echoes', input: z.object({ text: z.string() }), execute: async (args) => (seen.push(['echo', plain(args)]), args.text ?? 'nothing') }),
    tool({ name: 'fail', description: 'throws', input: z.object({}), execute: async () => { seen.push(['fail']); throw new Error('tool failed'); } }),
  ];
  let made = 0;
  const until = (depth) => {
    const kind = pick(['maxSteps', 'maxSteps', 'outputContains', 'outputEquals', 'noToolCalls', 'any', 'all', 'maxDuration']);
    if (kind === 'maxSteps') return { kind, n: 1 + Math.floor(next() * 3) };
    if (kind === 'outputContains') return { kind, marker: pick(WORDS) };
    if (kind === 'outputEquals') return { kind, sentinel: pick(['answer alpha', 'x']) };
    if (kind === 'maxDuration') return { kind, ms: 10000 };
    if (kind === 'noToolCalls') return { kind };
    return depth > 1 ? { kind: 'maxSteps', n: 2 } : { kind, predicates: [until(depth + 1), { kind: 'maxSteps', n: 1 + Math.floor(next() * 3) }] };
  };
  const node = (depth) => {
    const id = `n${made++}`;
    const kind = depth >= 3 ? pick(['llm', 'tool']) : pick(['llm', 'llm', 'tool', 'branch', 'fork', 'spawn', 'loop', 'sequence']);
    switch (kind) {
      case 'llm':
        return { kind, id, instructions: pick(['be brief', '', 'say alpha']), ...(next() < 0.3 ? { model: 'test' } : {}), ...(next() < 0.3 ? { tools: [pick(['add', 'echo', 'nope'])] } : {}), ...(next() < 0.2 ? { params: { temperature: 0.2 } } : {}) };
      case 'tool': {
        const toolName = pick(['add', 'echo', 'add', 'fail']);
        return { kind, id, toolName, ...(next() < 0.7 ? { args: toolName === 'add' ? { a: 1, b: 2 } : { text: pick(WORDS) } } : {}) };
      }
      case 'branch':
        return { kind, id, routes: [{ match: pick(WORDS), target: node(depth + 1) }], ...(next() < 0.6 ? { default: node(depth + 1) } : {}) };
      case 'fork':
        return { kind, id, mode: pick(['all', 'settle', 'all']), paths: [node(depth + 1), node(depth + 1)], ...(next() < 0.7 ? { merge: pick(['last', 'first', 'concat']) } : {}) };
      case 'spawn':
        return { kind, id, child: node(depth + 1) };
      case 'loop':
        return { kind, id, body: node(depth + 1), until: until(0), maxIterations: 1 + Math.floor(next() * 3) };
      default:
        return { kind: 'sequence', id, steps: [node(depth + 1), node(depth + 1)] };
    }
  };
  const doc = { version: 1, root: node(0) };
  if (next() < 0.5) spoil(doc, { pick }, seen);
  try {
    const checked = validateWorkflow(JSON.parse(JSON.stringify(doc)));
    seen.push(['valid', workflowDepth(checked.root)]);
  } catch (e) {
    seen.push(['invalid', e?.name, e?.code ?? null, (e?.issues ?? []).map((issue) => `${issue.path?.join('.')}:${issue.code}`)]);
  }
  let calls = 0;
  const harness = new AgentHarness({
    name: 'differential', params: {},
    _testCallModel: async (request) => {
      const k = ++calls;
      const texts = stripUnresolvedToolCalls(request.items).map(itemText);
      seen.push(['model', request.model ?? null, request.instructions ?? null, texts, (request.tools ?? []).map((t) => t.name)]);
      await sleep(1);
      // The answer depends on what was asked, not on the order of the calls: a fork's paths race to the model.
      const asked = `${request.instructions}|${texts.join('|')}`;
      const word = WORDS[[...asked].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 9973, 7) % WORDS.length];
      return { items: [{ type: 'message', id: `a${k}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `answer ${word}`, annotations: [] }] }], usage: { inputTokens: 10, outputTokens: 5 } };
    },
  });
  let outcome;
  try {
    const json = next() < 0.5 ? JSON.stringify(doc) : doc;
    outcome = ['output', await parseAndRunWorkflow({ json, tools, harness, input: pick(['alpha go', 'beta', '']), ctx: harness.createContext({ threadId: 'thread' }) })];
  } catch (e) {
    outcome = e?.code ? ['error', e.code] : ['error', e?.noeticError?.kind ?? e?.name, String(e?.message ?? e).slice(0, 200)];
  }
  // A fork's paths run side by side, so which reaches its tool or the model first is timing: then compared sorted.
  const records = seen.map((x) => JSON.stringify(x));
  return [JSON.stringify(doc), ...(JSON.stringify(doc).includes('"fork"') ? records.sort() : records), JSON.stringify(outcome)];
}

// Spoils one object of the document: a field removed, null, zero, empty, negative, of another shape, an unknown key
// beside it, or an unknown or mismatched kind.
function spoil(doc, { pick }, seen) {
  const objects = [];
  const walk = (value) => {
    if (!value || typeof value !== 'object') return;
    if (!Array.isArray(value)) objects.push(value);
    Object.values(value).forEach(walk);
  };
  walk(doc);
  const target = pick(objects);
  const key = pick(Object.keys(target));
  const how = pick(['delete', 'null', 'zero', 'empty string', 'array', 'negative', 'extra', 'kind', 'object']);
  const spoilt = { null: null, zero: 0, 'empty string': '', array: [], negative: -1, object: {} };
  if (how === 'delete') delete target[key];
  else if (how === 'extra') target.surprise = { nested: true };
  else if (how === 'kind') target.kind = pick(['run', 'LLM', 'loop', 'tool']);
  else target[key] = spoilt[how];
  seen.push(['spoiled', how, key]);
}
