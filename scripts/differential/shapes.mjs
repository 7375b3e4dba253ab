// shapes: what user code sees of the objects it is handed when it looks at them as objects rather than reads a
// field: a context from createContext (with items, state, a parent), a step's context, a spawned child's, and a
// session's response. For each: `Object.keys`, the keys of a spread copy, `in` and `hasOwnProperty` for the fields
// user code reads, a destructured read, the top-level keys `JSON.stringify` writes and the types of their values (ids
// are random on both sides, so values are compared where they are the same by construction).
import { anonymous, plain } from './shared.mjs';

const FIELDS = ['id', 'threadId', 'resourceId', 'depth', 'parent', 'state', 'tokens', 'cost', 'stepCount', 'itemLog', 'lastStepMeta', 'lastLayerUsage', 'harness', 'layers', 'itemSchemas', 'cwdState', 'elapsed', 'aborted', 'memory', 'fs', 'span', 'channelStore', 'unifiedTools'];
const typeOf = (value) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);

// Upstream's ContextImpl also lists the fields its TypeScript marks private (`_createdAt`, `_aborted`, ...): those
// are its machinery, left out here (DECISIONS R3).
const visible = (keys) => keys.filter((key) => !key.startsWith('_'));

function shapeOf(label, value) {
  const lines = [];
  const json = JSON.parse(JSON.stringify(value));
  lines.push([label, 'keys', visible(Object.keys(value))]);
  lines.push([label, 'spread', visible(Object.keys({ ...value }))]);
  lines.push([label, 'in', FIELDS.map((f) => `${f}:${f in value}:${Object.prototype.hasOwnProperty.call(value, f)}`)]);
  lines.push([label, 'json', visible(Object.keys(json)).map((key) => `${key}:${typeOf(json[key])}`)]);
  return lines;
}

export async function shapes(api, { next, pick }) {
  const { AgentHarness, step, spawn, createMessage } = api;
  const model = async (request) => ({
    items: [{ type: 'message', id: `a${request.items.length}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `seen ${request.items.length}`, annotations: [] }] }],
    usage: { inputTokens: 4, outputTokens: 2 },
  });
  const memory = next() < 0.5 ? [{ id: 'notes', slot: 100, scope: 'thread', hooks: { recall: async () => 'keep it short' } }] : undefined;
  const harness = new AgentHarness({ name: 'differential', params: {}, memory, initialStep: step.llm({ id: 'chat', model: 'm' }), _testCallModel: model });
  const lines = [];
  const items = next() < 0.5 ? [createMessage('hello', 'user')] : undefined;
  const state = pick([undefined, { n: 1 }, { nested: { list: [1, 2] } }]);
  const created = harness.createContext({ threadId: 'T', ...(items ? { items } : {}), ...(state ? { state } : {}), ...(next() < 0.4 ? { resourceId: 'R' } : {}) });
  lines.push(...shapeOf('created', created));
  const { threadId, depth, state: destructured } = created;
  lines.push(['created', 'destructured', threadId, depth, plain(destructured)]);
  lines.push(['created', 'itemLog json', Object.keys(JSON.parse(JSON.stringify(created.itemLog))), anonymous(JSON.parse(JSON.stringify(created.itemLog))._items ?? [])]);

  const seen = {};
  const look = (label) => step.run({ id: label, execute: async (input, ctx) => {
    seen[label] = shapeOf(label, ctx);
    return input;
  } });
  const child = spawn({ id: 'child', child: look('child'), contextIn: pick(['fresh', 'inherit']), contextOut: 'full' });
  const root = pick([look('step'), step.run({ id: 'outer', execute: async (input, ctx) => {
    seen.outer = shapeOf('outer', ctx);
    return ctx.harness.run(child, input, ctx);
  } })]);
  await harness.run(root, 'go', created);
  for (const label of Object.keys(seen).sort()) lines.push(...seen[label]);

  await harness.execute('hi', { threadId: 'S' });
  const response = await harness.getAgentResponse({ threadId: 'S' });
  lines.push(...shapeOf('response', response));
  return lines.map((line) => JSON.stringify(line));
}
