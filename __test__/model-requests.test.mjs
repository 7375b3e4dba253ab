// What a test model (`_testCallModel`) is handed: upstream's request, field for field. A layer's `provides`
// function is a real tool whose `execute` is the model's own tool call; the step's `params`, output schema and
// `emit` ride along; with tools come the context, its layers and the names the step may call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { AgentHarness, layerData, layerFn, provide, step, steering, tool, workingMemory } from '../js/index.mjs';

const answer = (text) => ({
  items: [{ id: `a-${Math.random()}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }],
  usage: { inputTokens: 3, outputTokens: 1 },
});

// A thread-scoped layer of notes whose `add` function takes a text and a count that defaults to 2. `calls` lists
// the arguments its execute was run with; `recalled` the state each recall saw.
function notesLayer() {
  const calls = [];
  const recalled = [];
  const layer = {
    id: 'notes',
    slot: 300,
    scope: 'thread',
    budget: { min: 0, max: 400 },
    provides: {
      size: layerData({ read: (state) => state.notes.length }),
      add: layerFn({
        description: 'Write a note down.',
        input: z.object({ text: z.string(), times: z.number().default(2) }),
        output: z.string(),
        execute: async (args, state) => {
          calls.push(args);
          return { result: `noted ${args.text}`, state: { notes: [...state.notes, args.text.repeat(args.times)] } };
        },
      }),
    },
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { notes: [] } }),
      recall: async ({ state }) => {
        recalled.push(state.notes.slice());
        return null;
      },
    },
  };
  return { layer, calls, recalled };
}

const lookup = () => tool({ name: 'lookup', description: 'Look a word up.', input: z.object({ word: z.string() }), execute: async () => 'found' });
const clock = () => tool({ name: 'clock', description: 'Tell the time.', input: z.object({}), execute: async () => 'noon' });

async function turn(harness, text, threadId) {
  await harness.execute(text, { threadId });
  return harness.getAgentResponse({ threadId });
}

test("a layer's provides function is handed to the model as a tool with the function's own description and schemas", async () => {
  const { layer } = notesLayer();
  const requests = [];
  const harness = new AgentHarness({ name: 'a', params: {}, memory: [layer], _testCallModel: async (req) => (requests.push(req), answer('ok')) });
  await harness.run(step.llm({ id: 'ask', model: 'm' }), 'hi', harness.createContext({ threadId: 'th' }));
  const [add] = requests[0].tools;
  assert.deepEqual(Object.keys(add), ['name', 'description', 'input', 'output', 'execute']);
  assert.equal(add.name, 'notes/add');
  assert.equal(add.description, 'Write a note down.');
  assert.equal(add.input, layer.provides.add.input);
  assert.equal(add.output, layer.provides.add.output);
  assert.equal(typeof add.execute, 'function');
});

test("the tool's execute checks its arguments with the function's schema, then writes the layer's state as a model's call does", async () => {
  const { layer, calls, recalled } = notesLayer();
  const storage = new Map();
  const store = { get: async (k) => storage.get(k), set: async (k, v) => void storage.set(k, v), delete: async (k) => void storage.delete(k), list: async (p) => [...storage.keys()].filter((k) => k.startsWith(p)) };
  const seen = [];
  const harness = new AgentHarness({
    name: 'a',
    params: {},
    storage: store,
    memory: [layer],
    initialStep: step.llm({ id: 'chat', model: 'm' }),
    _testCallModel: async (req) => {
      if (seen.length === 0) {
        const add = req.tools.find((t) => t.name === 'notes/add');
        // The default fills the count in; the function's result is the tool's.
        assert.equal(await add.execute({ text: 'tea' }, {}), 'noted tea');
        assert.deepEqual(calls, [{ text: 'tea', times: 2 }]);
        // Arguments the schema refuses throw at once, as upstream's, and never reach the function.
        assert.throws(() => add.execute({ text: 7 }, {}), z.ZodError);
        assert.throws(() => add.execute({}, {}), z.ZodError);
        assert.equal(calls.length, 1);
        // The context's view of the layer has the new state.
        assert.equal(req.ctx.memory.notes.size, 1);
      }
      seen.push(req);
      return answer(`turn ${seen.length}`);
    },
  });
  assert.equal((await turn(harness, 'remember tea', 'kitchen')).text, 'turn 1');
  await turn(harness, 'what do you know?', 'kitchen');
  // The next turn's recall reads the state the tool wrote, which was kept in storage as the thread's.
  assert.deepEqual(recalled, [[], ['teatea']]);
  assert.deepEqual(storage.get('layers/notes/kitchen/state'), { notes: ['teatea'] });
});

test("a built-in layer's function (working memory's update) runs natively through the same tool", async () => {
  const seen = [];
  const harness = new AgentHarness({
    name: 'a',
    params: {},
    memory: [workingMemory()],
    initialStep: step.llm({ id: 'chat', model: 'm' }),
    _testCallModel: async (req) => {
      seen.push(req.items.map((item) => JSON.stringify(item)).join('\n'));
      if (seen.length === 1) {
        const update = req.tools.find((t) => t.name === 'working-memory/update');
        assert.equal(update.description, 'Update the agent working memory with new key-value pairs.');
        assert.ok(update.input instanceof z.ZodType);
        assert.throws(() => update.execute('not a record', {}), z.ZodError);
        assert.equal(await update.execute({ user: 'Ada' }, {}), undefined);
        assert.deepEqual(req.ctx.memory['working-memory'].snapshot, { user: 'Ada' });
      }
      return answer('ok');
    },
  });
  await turn(harness, 'I am Ada', 'wm');
  await turn(harness, 'who am I?', 'wm');
  assert.ok(!seen[0].includes('Ada",') && seen[1].includes('Ada'), 'the next turn recalls what the tool wrote');
});

test("a step's request carries its params, output schema and emit, and, without tools, no context", async () => {
  const schema = z.object({ verdict: z.string() });
  const emit = (type) => type !== 'noise';
  const params = { temperature: 0.2, vendorOption: 'x' };
  const judge = step.llm({ id: 'judge', model: 'm', instructions: 'Decide.', params, output: schema, emit });
  const requests = [];
  const harness = new AgentHarness({ name: 'a', params: {}, _testCallModel: async (req) => (requests.push(req), answer('{"verdict":"yes"}')) });
  assert.deepEqual(await harness.run(judge, 'well?'), { verdict: 'yes' });
  const [req] = requests;
  assert.deepEqual(Object.keys(req), ['model', 'items', 'instructions', 'params', 'outputSchema', 'emit']);
  assert.equal(req.params, params);
  assert.equal(req.outputSchema, schema);
  assert.equal(req.emit, emit);
  assert.equal(req.instructions, 'Decide.');
  // A step that sets none of them still has the keys, undefined.
  await harness.run(step.llm({ id: 'plain', model: 'm', emit: false }), 'hi');
  assert.deepEqual(Object.keys(requests[1]), ['model', 'items', 'instructions', 'params', 'outputSchema', 'emit']);
  assert.deepEqual([requests[1].instructions, requests[1].params, requests[1].outputSchema, requests[1].emit], [undefined, undefined, undefined, false]);
});

test('with tools the request also has the context, its layers and allowedToolNames (undefined: every tool may be called)', async () => {
  const { layer } = notesLayer();
  const requests = [];
  let runCtx;
  const harness = new AgentHarness({ name: 'a', params: {}, memory: [layer], _testCallModel: async (req) => (requests.push(req), answer('ok')) });
  const ask = step.llm({ id: 'ask', model: 'm', tools: [lookup()], params: { maxTokens: 5 } });
  const probe = step.run({ id: 'probe', execute: async (_input, ctx) => ((runCtx = ctx), harness.run(ask, 'hi', ctx)) });
  await harness.run(probe, '', harness.createContext({ threadId: 't' }));
  const [req] = requests;
  assert.deepEqual(Object.keys(req), ['model', 'items', 'instructions', 'tools', 'params', 'outputSchema', 'emit', 'ctx', 'layers', 'allowedToolNames']);
  assert.equal(req.ctx, runCtx);
  assert.deepEqual(req.layers, [layer]);
  assert.equal(req.params, ask.params);
  assert.deepEqual(req.tools.map((t) => t.name), ['lookup', 'notes/add']);
  assert.equal(req.tools[0], ask.tools[0]);
  assert.equal(req.allowedToolNames, undefined);
});

test("in a session a step that lists its tools is handed all the session's, and allowed its own and its layers'", async () => {
  const offered = [];
  const record = async (req) => (offered.push({ tools: req.tools?.map((t) => t.name), allowed: req.allowedToolNames, keys: Object.keys(req) }), answer('ok'));
  const listed = step.llm({ id: 'listed', model: 'm', tools: [lookup()] });
  const plain = new AgentHarness({ name: 'a', params: {}, tools: [clock()], initialStep: listed, _testCallModel: record });
  await turn(plain, 'hi', 's1');
  // Upstream's unified set: the step tree's tools, then the harness's; the step may call only its own.
  const first = offered.pop();
  assert.deepEqual([first.tools, first.allowed], [['lookup', 'clock'], ['lookup']]);
  assert.equal(first.keys.length, 10);

  // With a layer its functions come last, and stay callable (DECISIONS D19).
  const withLayer = new AgentHarness({ name: 'a', params: {}, tools: [clock()], memory: [notesLayer().layer], initialStep: listed, _testCallModel: record });
  await turn(withLayer, 'hi', 's2');
  const second = offered.pop();
  assert.deepEqual([second.tools, second.allowed], [['lookup', 'clock', 'notes/add'], ['lookup', 'notes/add']]);

  // A step without tools of its own may call every one: no restriction.
  const open = new AgentHarness({ name: 'a', params: {}, tools: [clock()], initialStep: step.llm({ id: 'open', model: 'm' }), _testCallModel: record });
  await turn(open, 'hi', 's3');
  const unrestricted = offered.pop();
  assert.deepEqual([unrestricted.tools, unrestricted.allowed, unrestricted.keys.includes('allowedToolNames')], [['clock'], undefined, true]);

  // `tools: []` is no tools at all: the request has neither tools nor context.
  const none = new AgentHarness({ name: 'a', params: {}, tools: [clock()], memory: [notesLayer().layer], initialStep: step.llm({ id: 'none', model: 'm', tools: [] }), _testCallModel: record });
  await turn(none, 'hi', 's4');
  assert.deepEqual(offered.pop(), { tools: undefined, allowed: undefined, keys: ['model', 'items', 'instructions', 'params', 'outputSchema', 'emit'] });
});

test("a provide step's layers are in the request's layers and tools", async () => {
  const { layer } = notesLayer();
  const requests = [];
  const inner = step.llm({ id: 'inner', model: 'm' });
  const harness = new AgentHarness({ name: 'a', params: {}, memory: [workingMemory()], initialStep: provide({ id: 'with-notes', memory: [layer], child: inner }), _testCallModel: async (req) => (requests.push(req), answer('ok')) });
  await turn(harness, 'hi', 'p');
  assert.deepEqual(requests[0].layers.map((l) => l.id), ['working-memory', 'notes']);
  assert.deepEqual(requests[0].tools.map((t) => t.name), ['working-memory/update', 'notes/add']);
});

test("a layer asking the model (a steering rule's judgement) sends only the model and the items", async () => {
  const requests = [];
  const judge = { id: 'judge', appliesTo: ['afterModelCall'], llmEval: { mode: 'sync', prompt: 'Is this answer fine?' } };
  const harness = new AgentHarness({
    name: 'a',
    params: {},
    memory: [steering({ rules: [judge] })],
    initialStep: step.llm({ id: 'chat', model: 'm' }),
    _testCallModel: async (req) => (requests.push(req), answer(requests.length === 2 ? 'ALLOW' : 'the answer')),
  });
  assert.equal((await turn(harness, 'q', 'j')).text, 'the answer');
  assert.equal(requests.length, 2);
  assert.deepEqual(Object.keys(requests[1]), ['model', 'items']);
  assert.ok(JSON.stringify(requests[1].items).includes('Is this answer fine?'));
});

test('harness.callModel hands the test model the very request object it was given', async () => {
  let seen;
  const harness = new AgentHarness({ name: 'a', params: {}, _testCallModel: async (req) => ((seen = req), answer('direct')) });
  const request = { model: 'm', items: [], instructions: 'Be kind.', custom: 1 };
  await harness.callModel(request);
  assert.equal(seen, request);
});

test("a tool's context has upstream's keys in order, and a provides function's context has callModel undefined", async () => {
  let toolCtx;
  let fnCtx;
  const spy = tool({ name: 'spy', description: 'd', input: z.object({}), execute: async (_args, tc) => ((toolCtx = tc), 'seen') });
  const layer = {
    id: 'fns',
    slot: 10,
    scope: 'execution',
    provides: { peek: layerFn({ description: 'p', input: z.object({}), output: z.string(), execute: async (_args, state, ctx) => ((fnCtx = ctx), { result: 'x', state }) }) },
  };
  const harness = new AgentHarness({ name: 'a', params: {}, memory: [layer], _testCallModel: async () => answer('ok') });
  const body = step.run({
    id: 'body',
    execute: async (_input, ctx) => {
      await harness.run(step.tool({ id: 'use-spy', tool: spy }), {}, ctx);
      await ctx.memory.fns.peek({});
      return 'done';
    },
  });
  await harness.run(body, '');
  assert.deepEqual(Object.keys(toolCtx), ['ctx', 'harness', 'fs', 'shell', 'memory', 'assembledView', 'lastStepMeta', 'turnContext']);
  assert.equal(toolCtx.harness, harness);
  assert.equal(toolCtx.lastStepMeta, null);
  assert.ok(Array.isArray(toolCtx.assembledView));
  assert.deepEqual(Object.keys(fnCtx), ['executionId', 'threadId', 'resourceId', 'depth', 'stepNumber', 'tokenUsage', 'cost', 'fs', 'shell', 'callModel', 'tokenize', 'trace', 'readLayerState']);
  assert.equal(fnCtx.callModel, undefined);
  // As upstream's contextToExecCtx: the counts alone, not ctx.tokens' total and cached.
  assert.deepEqual(Object.keys(fnCtx.tokenUsage), ['input', 'output']);
});
