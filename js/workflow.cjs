'use strict';
// JSON workflows and flows: zod schemas, and tree functions whose checking, walking and planning are native (workflow.rs).
const zod = require('zod');
const z = zod.z ?? zod;
const native = require('./native.cjs');
const { NoeticConfigError, callNative, describeValue } = require('./errors.cjs');
const { jsonBoundsProblem } = require('./json-bounds.cjs');
const { step, branch, fork, spawn, provide, loop, every, until, any, all } = require('./steps.cjs');
const { parseJson } = require('./json.cjs');

const nonEmpty = () => z.string().min(1);
const positiveInt = () => z.number().int().positive();
const tagged = (kind, shape) => z.object({ kind: z.literal(kind), ...shape });

const MergeStrategySchema = z.enum(['last', 'first', 'concat']);

const UntilPredicateSchema = z.union([
  tagged('maxSteps', { n: positiveInt() }),
  tagged('maxCost', { usd: z.number().positive() }),
  tagged('maxDuration', { ms: z.number().positive() }),
  tagged('noToolCalls', {}),
  tagged('outputContains', { marker: nonEmpty() }),
  tagged('outputEquals', { sentinel: nonEmpty() }),
  tagged('converged', { threshold: z.number().min(0).max(1).optional() }),
  tagged('any', { predicates: z.array(z.lazy(() => UntilPredicateSchema)).min(1) }),
  tagged('all', { predicates: z.array(z.lazy(() => UntilPredicateSchema)).min(1) }),
]);

const nodeRef = z.lazy(() => WorkflowNodeSchema);
const node = (kind, shape) => tagged(kind, { id: nonEmpty(), ...shape });

const WorkflowNodeSchema = z.discriminatedUnion('kind', [
  node('llm', {
    model: z.string().optional(),
    instructions: z.string(),
    tools: z.array(z.string()).optional(),
    params: z
      .object({
        temperature: z.number().min(0).optional(),
        topP: z.number().min(0).max(1).optional(),
        maxTokens: positiveInt().optional(),
        stopSequences: z.array(z.string()).optional(),
      })
      .optional(),
  }),
  node('tool', { toolName: nonEmpty(), args: z.record(z.string(), z.unknown()).optional() }),
  node('branch', { routes: z.array(z.object({ match: nonEmpty(), target: nodeRef })).min(1), default: nodeRef.optional() }),
  node('fork', {
    mode: z.enum(['race', 'all', 'settle']),
    paths: z.array(nodeRef).min(1),
    merge: MergeStrategySchema.optional(),
    concurrency: positiveInt().optional(),
  }),
  node('spawn', { child: nodeRef, timeout: z.number().positive().optional() }),
  node('provide', { child: nodeRef, layers: z.array(nonEmpty()).min(1) }),
  node('loop', { body: nodeRef, until: UntilPredicateSchema, maxIterations: positiveInt().optional() }),
  node('sequence', { steps: z.array(nodeRef).min(1) }),
  node('every', { step: nodeRef, ms: z.number().nonnegative(), onError: z.enum(['continue', 'fail']).optional() }),
]);

const WorkflowDocumentSchema = z.object({ version: z.literal(1), root: WorkflowNodeSchema });

// planMemory's flow trees (its setPlanTree checks them natively, memory/builtin/flow_schema.rs).
const flowRef = z.lazy(() => FlowSchema);
const flow = (kind, shape) => tagged(kind, { id: nonEmpty(), subPlanRef: z.string().optional(), ...shape });
const FlowSchema = z.discriminatedUnion('kind', [
  flow('llm', { model: z.string().optional(), instructions: z.string(), tools: z.array(z.string()).optional() }),
  flow('subagent', { preset: nonEmpty(), prompt: z.string() }),
  flow('fork', { mode: z.enum(['all', 'race', 'settle']), paths: z.array(flowRef).min(1) }),
  flow('spawn', { child: flowRef }),
  flow('sequence', { steps: z.array(flowRef).min(1) }),
]);

const invalid = (message, hint) => new NoeticConfigError({ code: 'WORKFLOW_VALIDATION_FAILED', message, hint });

// The native reader's bounds (workflow::MAX_TEXT_NESTING): far past any workflow a person or a model writes.
const TEXT_BOUNDS = { maxNesting: 1024, maxValues: 1_000_000 };
const JSON_HINT = 'Pass a tree of plain objects, arrays, strings, numbers and booleans, with no cycles.';

// Bounds are checked first: stringify would spend seconds or forever on a cycle or a widely shared part.
function jsonOf(tree, what) {
  const problem = jsonBoundsProblem(tree, TEXT_BOUNDS);
  if (problem) throw invalid(`${what} cannot be read as JSON: ${problem}.`, JSON_HINT);
  try {
    return JSON.stringify(tree);
  } catch (e) {
    throw invalid(`${what} cannot be read as JSON: ${e?.message ?? e}.`, JSON_HINT);
  }
}

function textOf(tree, what) {
  const text = jsonOf(tree, what);
  if (typeof text !== 'string') throw invalid(`${what} is ${describeValue(tree)}, not a tree.`, 'Pass a workflow (or flow) node object.');
  return text;
}

// As zod's parse gives; a problem other than nesting is left to zod, so the error is the ZodError upstream throws.
function checkedTree(what, schema, input, name) {
  const text = jsonOf(input, name);
  if (typeof text !== 'string') return schema.parse(input);
  const result = parseJson(callNative(native.treeCheck, what, text));
  if (result.ok) return result.value;
  if (result.tooDeep) throw invalid(`${name} is refused: ${result.message}.`, 'Flatten it: sequences and forks take many steps at one level.');
  schema.parse(input);
  // The native check and the schema agree on every tree; should they not, the native verdict stands.
  throw invalid(`${name} is invalid: ${result.message}.`, 'Check it against the schema.');
}

// Pre-order, the caller's own node objects: the native walk gives each node as a step from one before it.
function* walkTree(shape, root, name) {
  const edges = parseJson(callNative(native.treeWalk, shape, textOf(root, name)));
  const nodes = [root];
  yield root;
  for (const [parent, key, index] of edges) {
    const held = nodes[parent][key];
    const next = index < 0 ? held : key === 'routes' ? held[index].target : held[index];
    nodes.push(next);
    yield next;
  }
}

const validateWorkflow = (input) => checkedTree('document', WorkflowDocumentSchema, input, 'The workflow document');
const walkWorkflow = (node) => walkTree('workflow', node, 'walkWorkflow: the node');
const workflowDepth = (node) => callNative(native.treeDepth, 'workflow', textOf(node, 'workflowDepth: the node'));
const validateFlow = (input) => checkedTree('flow', FlowSchema, input, 'The flow');
const walkFlow = (root) => walkTree('flow', root, 'walkFlow: the root');
const flowDepth = (node) => callNative(native.treeDepth, 'flow', textOf(node, 'flowDepth: the node'));

const asText = (value) => (typeof value === 'string' ? value : value == null ? '' : JSON.stringify(value));
const given = (value) => (value === null ? undefined : value);
const names = (registry) => (registry && typeof registry.keys === 'function' ? [...registry.keys()].filter((k) => typeof k === 'string') : []);

const MERGES = {
  last: (values) => values[values.length - 1] ?? '',
  first: (values) => values[0] ?? '',
  concat: (values) => values.join('\n'),
};

function untilOf(pred) {
  switch (pred.kind) {
    case 'maxSteps':
      return until.maxSteps(pred.n);
    case 'maxCost':
      return until.maxCost(pred.usd);
    case 'maxDuration':
      return until.maxDuration(pred.ms);
    case 'noToolCalls':
      return until.noToolCalls();
    case 'outputContains':
      return until.outputContains(pred.marker);
    case 'outputEquals':
      return until.outputEquals(pred.sentinel);
    case 'converged':
      return until.converged({ threshold: pred.threshold });
    default:
      return (pred.kind === 'any' ? any : all)(...pred.predicates.map(untilOf));
  }
}

// `built` holds the steps of the plan's entries before this one.
const BUILD = {
  llm: (e, _built, hctx) =>
    step.llm({ id: e.id, model: e.model, instructions: e.instructions, tools: e.tools?.length ? e.tools.map((n) => hctx.tools.get(n)) : undefined, params: given(e.params) }),
  tool: (e, _built, hctx) => {
    const resolved = hctx.tools.get(e.toolName);
    return step.run({
      id: e.id,
      // As upstream's: the call is logged as a function_call item, and the result becomes the step's text.
      execute: async (_input, ctx) => {
        const callId = `call-${e.id}-${Date.now()}`;
        ctx.itemLog.append({ id: callId, type: 'function_call', status: 'completed', name: e.toolName, callId, arguments: JSON.stringify(e.args) });
        const toolCtx = {
          ctx,
          harness: ctx.harness,
          fs: ctx.fs,
          shell: ctx.shell,
          memory: { get: () => undefined, set: () => {} },
          assembledView: ctx.itemLog.items,
          lastStepMeta: ctx.lastStepMeta,
        };
        return asText(await resolved.execute(e.args, toolCtx));
      },
    });
  },
  branch: (e, built) => {
    const routes = e.routes.map((r) => ({ match: r.match.toLowerCase(), target: built[r.target] }));
    const fallback = e.default === null ? null : built[e.default];
    return branch({
      id: e.id,
      route: (input) => {
        const text = asText(input).trim().toLowerCase();
        return routes.find((r) => text.includes(r.match))?.target ?? fallback;
      },
      _optimizable: [...routes.map((r) => r.target), ...(fallback ? [fallback] : [])],
    });
  },
  fork: (e, built) => {
    const paths = e.paths.map((p) => built[p]);
    const shared = { id: e.id, mode: e.mode, paths: () => paths, concurrency: given(e.concurrency), _optimizable: paths };
    if (e.mode === 'race') return fork(shared);
    const merge = MERGES[e.merge];
    if (e.mode === 'all') return fork({ ...shared, merge });
    return fork({ ...shared, merge: (results) => merge(results.filter((r) => r.status === 'fulfilled').map((r) => r.value ?? '')) });
  },
  spawn: (e, built) => spawn({ id: e.id, child: built[e.child], timeout: given(e.timeout) }),
  provide: (e, built, hctx) => provide({ id: e.id, child: built[e.child], memory: hctx.layers ? e.layers.map((n) => hctx.layers.get(n)) : [] }),
  loop: (e, built) => loop({ id: e.id, steps: [built[e.body]], until: untilOf(e.until), maxIterations: given(e.maxIterations) }),
  sequence: (e, built, hctx) => {
    const children = e.steps.map((s) => built[s]);
    return step.run({
      id: e.id,
      execute: async (input, ctx) => {
        let current = input;
        for (const child of children) current = await hctx.executeStep(child, asText(current), ctx);
        return asText(current);
      },
    });
  },
  every: (e, built) => every({ id: e.id, step: built[e.step], ms: e.ms, onError: given(e.onError) }),
};

// Made by the builders, so the steps register and run like any other; checked and resolved natively first.
function hydrateNode(node, hctx) {
  const layers = hctx?.layers ? names(hctx.layers) : null;
  const plan = parseJson(callNative(native.workflowPlan, textOf(node, 'hydrateNode: the node'), names(hctx?.tools), layers));
  const built = [];
  for (const entry of plan) built.push(BUILD[entry.kind](entry, built, hctx));
  return built[built.length - 1];
}

const hydrateWorkflow = (doc, hctx) => hydrateNode(doc?.root, hctx);

module.exports = {
  MergeStrategySchema,
  UntilPredicateSchema,
  WorkflowNodeSchema,
  WorkflowDocumentSchema,
  validateWorkflow,
  walkWorkflow,
  workflowDepth,
  hydrateNode,
  hydrateWorkflow,
  FlowSchema,
  validateFlow,
  walkFlow,
  flowDepth,
  textOf,
};
