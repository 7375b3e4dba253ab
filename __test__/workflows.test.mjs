// JSON workflows (issue 12): the schemas, the native check / depth / walk, hydration into steps that the native
// interpreter runs, and bad documents (too deep, unknown names, malformed nodes) refused with clear errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  AgentHarness,
  MergeStrategySchema,
  UntilPredicateSchema,
  WorkflowDocumentSchema,
  WorkflowNodeSchema,
  hydrateNode,
  hydrateWorkflow,
  isNoeticConfigError,
  parseAndRunWorkflow,
  tool,
  validateWorkflow,
  walkWorkflow,
  workflowDepth,
} from '../js/index.mjs';

const llm = (id, instructions = id) => ({ kind: 'llm', id, instructions });
const spawns = (n) => {
  let node = llm('leaf');
  for (let i = 0; i < n; i++) node = { kind: 'spawn', id: `s${i}`, child: node };
  return node;
};

function configError(code, pattern) {
  return (e) => {
    assert.ok(isNoeticConfigError(e), `a NoeticConfigError, got ${e}`);
    assert.equal(e.code, code);
    if (pattern) assert.match(e.message, pattern);
    assert.ok(e.hint.length > 0, 'with a hint');
    return true;
  };
}

// A harness whose native scripted model answers in turn; `seen` records the instructions of each model step.
function scripted(texts) {
  return new AgentHarness({ name: 'wf', params: {}, llm: { provider: 'scripted', script: texts.map((text) => ({ text })) } });
}

const echoTool = (calls) =>
  tool({
    name: 'shout',
    description: 'Upper-cases its text',
    input: z.object({ text: z.string() }),
    execute: async (args) => (calls.push(args), { shouted: args.text.toUpperCase() }),
  });

test('the schemas are zod values: documents, nodes, predicates and merge strategies parse as upstream describes them', () => {
  const doc = { version: 1, root: { kind: 'loop', id: 'l', body: llm('b'), until: { kind: 'any', predicates: [{ kind: 'maxSteps', n: 2 }, { kind: 'outputContains', marker: 'DONE' }] } } };
  assert.equal(WorkflowDocumentSchema.safeParse(doc).success, true);
  assert.equal(WorkflowDocumentSchema.safeParse({ ...doc, version: 2 }).success, false);
  assert.equal(WorkflowNodeSchema.safeParse({ kind: 'run', id: 'x' }).success, false, 'run steps carry functions: not JSON');
  assert.equal(UntilPredicateSchema.safeParse({ kind: 'maxSteps', n: 1.5 }).success, false);
  assert.equal(UntilPredicateSchema.safeParse({ kind: 'converged', threshold: 1.2 }).success, false);
  assert.deepEqual(MergeStrategySchema.options, ['last', 'first', 'concat']);
  assert.ok(z.toJSONSchema(WorkflowDocumentSchema), 'a recursive schema still converts to JSON Schema');
});

test('validateWorkflow gives the checked document, keys in schema order and unknown keys dropped; a bad one throws ZodError', () => {
  const checked = validateWorkflow({ note: 'x', root: { instructions: 'hi', id: 'a', kind: 'llm', temperature: 3 }, version: 1 });
  assert.deepEqual(checked, { version: 1, root: { kind: 'llm', id: 'a', instructions: 'hi' } });
  assert.deepEqual(Object.keys(checked.root), ['kind', 'id', 'instructions']);
  assert.throws(() => validateWorkflow({ version: 1, root: { kind: 'fork', id: 'f', mode: 'all', paths: [] } }), z.ZodError);
  assert.throws(() => validateWorkflow(undefined), z.ZodError);
});

test('the native check and the zod schema agree, document by document', () => {
  const good = [
    { version: 1, root: llm('a') },
    { version: 1, root: { kind: 'tool', id: 't', toolName: 'x', args: { a: [1, { b: null }] } } },
    { version: 1, root: { kind: 'branch', id: 'b', routes: [{ match: 'y', target: llm('y') }], default: llm('n') } },
    { version: 1, root: { kind: 'every', id: 'e', step: llm('t'), ms: 0, onError: 'fail' } },
    { version: 1, root: { kind: 'provide', id: 'p', child: llm('c'), layers: ['m'] } },
    { version: 1, root: { kind: 'llm', id: 'a', instructions: '', params: { temperature: 0, topP: 1, maxTokens: 3, stopSequences: [] } } },
  ];
  const bad = [
    { version: 1, root: { kind: 'llm', id: 'a' } },
    { version: 1, root: { kind: 'llm', id: 'a', instructions: 'x', model: null } },
    { version: 1, root: { kind: 'tool', id: 't', toolName: '' } },
    { version: 1, root: { kind: 'tool', id: 't', toolName: 'x', args: [] } },
    { version: 1, root: { kind: 'spawn', id: 's', child: llm('c'), timeout: -1 } },
    { version: 1, root: { kind: 'provide', id: 'p', child: llm('c'), layers: [''] } },
    { version: 1, root: { kind: 'every', id: 'e', step: llm('t'), ms: -5 } },
    { version: 1, root: { kind: 'loop', id: 'l', body: llm('b'), until: { kind: 'maxCost', usd: 0 } } },
    { version: 1, root: { kind: 'loop', id: 'l', body: llm('b'), until: { kind: 'all', predicates: [] } } },
    { version: 1, root: { kind: 'llm', id: 'a', instructions: 'x', params: { maxTokens: 0 } } },
    { version: 1, root: { kind: 'sequence', id: 's', steps: [llm('a'), 'not a node'] } },
  ];
  for (const doc of good) {
    assert.equal(WorkflowDocumentSchema.safeParse(doc).success, true, JSON.stringify(doc));
    assert.deepEqual(validateWorkflow(doc), WorkflowDocumentSchema.parse(doc));
  }
  for (const doc of bad) {
    assert.equal(WorkflowDocumentSchema.safeParse(doc).success, false, JSON.stringify(doc));
    assert.throws(() => validateWorkflow(doc), z.ZodError, JSON.stringify(doc));
  }
});

test('walkWorkflow yields the very node objects in pre-order; workflowDepth counts structural levels', () => {
  const yes = llm('yes');
  const root = { kind: 'sequence', id: 'root', steps: [{ kind: 'branch', id: 'b', routes: [{ match: 'y', target: yes }], default: llm('no') }, { kind: 'loop', id: 'l', body: llm('body'), until: { kind: 'noToolCalls' } }] };
  const walked = [...walkWorkflow(root)];
  assert.deepEqual(walked.map((n) => n.id), ['root', 'b', 'yes', 'no', 'l', 'body']);
  assert.equal(walked[0], root);
  assert.equal(walked[2], yes, 'the caller’s own objects');
  assert.equal(workflowDepth(root), 2);
  assert.equal(workflowDepth(llm('x')), 0);
  assert.equal(workflowDepth(spawns(300)), 300, 'measured without recursion, past the hydration limit');
});

test('a document deeper than 64 levels is refused with WORKFLOW_VALIDATION_FAILED, by validation and hydration alike', () => {
  assert.equal(validateWorkflow({ version: 1, root: spawns(64) }).root.id, 's63');
  assert.throws(() => validateWorkflow({ version: 1, root: spawns(65) }), configError('WORKFLOW_VALIDATION_FAILED', /more than 64 levels deep \(at node 'leaf'\)/));
  assert.throws(() => hydrateNode(spawns(65), { tools: new Map() }), configError('WORKFLOW_VALIDATION_FAILED', /more than 64 levels/));
  // Far deeper than JS can even write as JSON: a clear error, not a crash or a stack overflow in a walk.
  let hostile = llm('x');
  for (let i = 0; i < 200_000; i++) hostile = { kind: 'sequence', id: 's', steps: [hostile] };
  assert.throws(() => validateWorkflow({ version: 1, root: hostile }), configError('WORKFLOW_VALIDATION_FAILED', /cannot be read as JSON/));
  assert.throws(() => workflowDepth(hostile), configError('WORKFLOW_VALIDATION_FAILED'));
  assert.throws(() => hydrateNode(hostile, { tools: new Map() }), configError('WORKFLOW_VALIDATION_FAILED'));
  const cyclic = { kind: 'spawn', id: 'c' };
  cyclic.child = cyclic;
  assert.throws(() => validateWorkflow({ version: 1, root: cyclic }), configError('WORKFLOW_VALIDATION_FAILED', /cannot be read as JSON/));
});

// A branch level nests three JSON levels (routes, a route, its target): 64 of them pass napi's own 128-level
// bound for a value, which must not be what decides.
const branches = (n) => {
  let node = llm('leaf');
  for (let i = 0; i < n; i++) node = { kind: 'branch', id: `b${i}`, routes: [{ match: 'go', target: node }] };
  return node;
};

test('one depth limit, one coded error, from every entry point: 64 branch levels pass, 65 are WORKFLOW_VALIDATION_FAILED', async () => {
  for (const depth of [63, 64]) {
    const harness = scripted(['done']);
    const ctx = harness.createContext();
    const doc = { version: 1, root: branches(depth) };
    assert.equal(validateWorkflow(doc).root.id, `b${depth - 1}`);
    assert.equal(hydrateWorkflow(doc, { tools: new Map() }).id, `b${depth - 1}`);
    assert.equal(workflowDepth(doc.root), depth);
    assert.equal(await parseAndRunWorkflow({ json: JSON.stringify(doc), harness, ctx, input: 'go', maxDepth: 64 }), 'done', `depth ${depth} runs`);
  }
  const harness = scripted([]);
  const ctx = harness.createContext();
  const tooDeep = { version: 1, root: branches(65) };
  assert.throws(() => validateWorkflow(tooDeep), configError('WORKFLOW_VALIDATION_FAILED', /more than 64 levels/));
  assert.throws(() => hydrateWorkflow(tooDeep, { tools: new Map() }), configError('WORKFLOW_VALIDATION_FAILED', /more than 64 levels/));
  await assert.rejects(parseAndRunWorkflow({ json: JSON.stringify(tooDeep), harness, ctx, maxDepth: 100 }), configError('WORKFLOW_VALIDATION_FAILED', /more than 64 levels/));
});

test('a tree that shares one subtree at every level is refused at once, not written out path by path', () => {
  // 40 levels of a fork whose two paths are the same object: 2^40 paths for JSON.stringify to write.
  let shared = llm('leaf');
  for (let i = 0; i < 40; i++) shared = { kind: 'fork', id: `f${i}`, mode: 'all', paths: [shared, shared] };
  const large = /cannot be read as JSON: it writes out to more than 1000000 values/;
  assert.throws(() => validateWorkflow({ version: 1, root: shared }), configError('WORKFLOW_VALIDATION_FAILED', large));
  assert.throws(() => workflowDepth(shared), configError('WORKFLOW_VALIDATION_FAILED', large));
  assert.throws(() => hydrateNode(shared, { tools: new Map() }), configError('WORKFLOW_VALIDATION_FAILED', large));
  // Sharing within the bound is no problem: a subtree used twice is written twice, as JSON.stringify writes it.
  const leaf = llm('same');
  const twice = validateWorkflow({ version: 1, root: { kind: 'fork', id: 'f', mode: 'all', paths: [leaf, leaf] } });
  assert.deepEqual(twice.root.paths.map((p) => p.id), ['same', 'same']);
});

test('hydration names what it cannot resolve: unknown tools, layers, node kinds and predicates, and malformed nodes', () => {
  const tools = new Map([['search', echoTool([])]]);
  const ctx = { tools, executeStep: async () => '' };
  assert.throws(() => hydrateNode({ kind: 'llm', id: 'l', instructions: 'x', tools: ['search', 'nonexistent'] }, ctx), configError('UNKNOWN_TOOL_REFERENCE', /'nonexistent'.*'l'/));
  assert.throws(() => hydrateNode({ kind: 'tool', id: 't', toolName: 'missing' }, { ...ctx, tools: new Map() }), (e) => configError('UNKNOWN_TOOL_REFERENCE')(e) && e.hint === 'Registered tools: (none).');
  assert.throws(() => hydrateNode({ kind: 'provide', id: 'p', child: llm('c'), layers: ['gone'] }, { ...ctx, layers: new Map() }), configError('UNKNOWN_LAYER_REFERENCE', /'gone'/));
  assert.throws(() => hydrateNode({ kind: 'subagent', id: 'x' }, ctx), configError('UNKNOWN_NODE_KIND', /'subagent' at node/));
  assert.throws(() => hydrateNode({ kind: 'sequence', id: 's', steps: [{ id: 'no kind' }] }, ctx), configError('UNKNOWN_NODE_KIND', /missing at node\.steps\[0\]/));
  assert.throws(() => hydrateNode({ kind: 'loop', id: 'l', body: llm('b'), until: { kind: 'whenever' } }, ctx), configError('UNKNOWN_UNTIL_PREDICATE', /'whenever' at node\.until/));
  assert.throws(() => hydrateNode({ kind: 'fork', id: 'f', mode: 'all', paths: 'a' }, ctx), configError('WORKFLOW_VALIDATION_FAILED', /node\.paths must be a list/));
  assert.throws(() => hydrateNode({ kind: 'branch', id: 'b', routes: [{ match: 'x' }] }, ctx), configError('WORKFLOW_VALIDATION_FAILED', /node\.routes\[0\]\.target is required/));
  assert.throws(() => hydrateWorkflow(undefined, ctx), configError('WORKFLOW_VALIDATION_FAILED', /not a tree/));
});

test('hydrated steps are the builders’ plain step objects, with upstream’s defaults', () => {
  const tools = new Map([['shout', echoTool([])]]);
  const ctx = { tools, executeStep: async () => '' };
  const l = hydrateNode({ kind: 'llm', id: 'l', instructions: 'x', tools: ['shout'] }, ctx);
  assert.deepEqual([l.kind, l.model, l.tools[0]], ['llm', 'openai/gpt-4o', tools.get('shout')]);
  const f = hydrateNode({ kind: 'fork', id: 'f', mode: 'settle', paths: [llm('a'), llm('b')] }, ctx);
  assert.equal(f.merge([{ status: 'fulfilled', value: 'A' }, { status: 'rejected' }, { status: 'fulfilled', value: 'C' }]), 'C', 'settle keeps the last fulfilled by default');
  const race = hydrateNode({ kind: 'fork', id: 'r', mode: 'race', paths: [llm('a')], merge: 'concat' }, ctx);
  assert.equal(race.merge, undefined);
  const e = hydrateNode({ kind: 'every', id: 'e', step: llm('t'), ms: 5 }, ctx);
  assert.deepEqual([e.kind, e.onError, e.step.id], ['every', 'continue', 't']);
  const p = hydrateNode({ kind: 'provide', id: 'p', child: llm('c'), layers: ['unknown'] }, ctx);
  assert.deepEqual(p.memory, [], 'without a layer registry a provide adds nothing');
});

test('a hydrated workflow runs on the native interpreter: sequence, tool node, fork merge, branch routes and loop predicates', async () => {
  const calls = [];
  const shout = echoTool(calls);
  const h = scripted(['first reply', 'approve it', 'left', 'right', 'tick', 'tick DONE']);
  const ctx = h.createContext();
  const hctx = { tools: new Map([['shout', shout]]), executeStep: h.run.bind(h) };
  const doc = {
    version: 1,
    root: {
      kind: 'sequence',
      id: 'root',
      steps: [
        llm('one'),
        { kind: 'tool', id: 'loud', toolName: 'shout', args: { text: 'hey' } },
        llm('two'),
        { kind: 'branch', id: 'gate', routes: [{ match: 'APPROVE', target: { kind: 'fork', id: 'both', mode: 'all', merge: 'concat', paths: [llm('l'), llm('r')] } }], default: llm('never') },
        { kind: 'loop', id: 'poll', body: llm('tick'), until: { kind: 'outputContains', marker: 'DONE' }, maxIterations: 5 },
      ],
    },
  };
  const out = await h.run(hydrateWorkflow(validateWorkflow(doc), hctx), 'start', ctx);
  assert.equal(out, 'tick DONE');
  assert.deepEqual(calls, [{ text: 'hey' }], 'the tool ran with the node’s args');
  const items = ctx.itemLog.items;
  const call = items.find((i) => i.type === 'function_call');
  assert.deepEqual([call.name, call.arguments], ['shout', '{"text":"hey"}'], 'the call is in the log, as upstream logs it');
  const texts = items.filter((i) => i.type === 'message' && i.role === 'user').map((i) => i.content[0].text);
  assert.ok(texts.includes('{"shouted":"HEY"}'), 'the tool’s result is the next step’s input, as text');
  assert.ok(texts.includes('left\nright'), 'the fork merged its paths with concat and handed that on');
});

test('a loop node stops on its JSON predicate, natively evaluated where the runtime can', async () => {
  const h = scripted(['a', 'b', 'c', 'd']);
  const looped = hydrateNode({ kind: 'loop', id: 'l', body: llm('b'), until: { kind: 'all', predicates: [{ kind: 'maxSteps', n: 3 }, { kind: 'noToolCalls' }] } }, { tools: new Map(), executeStep: h.run.bind(h) });
  assert.equal(await h.run(looped, 'go'), 'c');
  const verdict = await looped.until({ stepCount: 3, lastStepMeta: { toolCalls: [] }, lastText: '', cost: 0, elapsed: 0 });
  assert.deepEqual(verdict, { stop: true, reason: 'Reached max steps (3); No tool calls in last response' });
});

test('flows: validateFlow checks natively (the check planMemory uses), walkFlow and flowDepth follow a flow’s children', async () => {
  const { FlowSchema, validateFlow, walkFlow, flowDepth } = await import('../js/index.mjs');
  const leaf = { kind: 'subagent', id: 'x', preset: 'explore', prompt: 'look', extra: 1 };
  const root = { kind: 'fork', id: 'f', mode: 'race', paths: [{ kind: 'spawn', id: 's', child: leaf }, { kind: 'llm', id: 'l', instructions: 'go' }] };
  assert.deepEqual(validateFlow(root).paths[0].child, { kind: 'subagent', id: 'x', preset: 'explore', prompt: 'look' });
  assert.throws(() => validateFlow({ kind: 'loop', id: 'x' }), z.ZodError);
  assert.equal(FlowSchema.safeParse(root).success, true);
  const walked = [...walkFlow(root)];
  assert.deepEqual(walked.map((n) => n.id), ['f', 's', 'x', 'l']);
  assert.equal(walked[2], leaf);
  assert.equal(flowDepth(root), 2);
  assert.equal(flowDepth({ kind: 'sequence', id: 'empty', steps: [] }), 1, 'a structural node counts even with no children');
  let deep = { kind: 'llm', id: 'x', instructions: '' };
  for (let i = 0; i < 300; i++) deep = { kind: 'spawn', id: `s${i}`, child: deep };
  assert.equal(flowDepth(deep), 300);
  assert.throws(() => validateFlow(deep), configError('WORKFLOW_VALIDATION_FAILED', /more than 256 levels/));
});
