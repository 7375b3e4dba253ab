'use strict';
// Step builders: plain step objects, as upstream (tests inspect `.kind`, users write literals), and the
// description of a step tree the native interpreter runs. Built-in predicates carry a marker so the runtime
// evaluates them without crossing; they stay callable from JS.
const { NoeticConfigError, describeValue } = require('./errors.cjs');
const { validateLayers, layersOf, num, inputSchema } = require('./memory.cjs');
const { checkProjection } = require('./options.cjs');

const PREDICATE = Symbol.for('noetic.predicate');

function need(condition, code, message, hint) {
  if (!condition) throw new NoeticConfigError({ code, message, hint });
}

function checkId(opts, what) {
  need(typeof opts?.id === 'string' && opts.id.length > 0, 'MISSING_STEP_ID', `${what} needs a non-empty string id.`, 'Pass `id` in the step options.');
}

const step = {
  run(opts) {
    checkId(opts, 'step.run');
    need(typeof opts.execute === 'function', 'MISSING_EXECUTE', `step.run '${opts.id}' needs an execute function.`, 'Pass `execute: async (input, ctx) => …`.');
    return { kind: 'run', ...opts };
  },
  llm(opts) {
    checkId(opts, 'step.llm');
    need(typeof opts.model === 'string' || typeof opts.model === 'function', 'MISSING_MODEL', `step.llm '${opts.id}' needs a model.`, "Pass `model`, for example 'openai/gpt-4o'.");
    checkProjection(opts.projection, `step.llm '${opts.id}'`);
    return { kind: 'llm', ...opts };
  },
  tool(opts) {
    checkId(opts, 'step.tool');
    need(typeof opts.tool === 'object' && opts.tool !== null, 'MISSING_TOOL', `step.tool '${opts.id}' needs a tool.`, 'Pass a tool built with tool().');
    return { kind: 'tool', ...opts };
  },
};

function tool(opts) {
  need(typeof opts?.name === 'string' && opts.name.length > 0, 'MISSING_TOOL_NAME', 'tool() needs a non-empty name.', 'Pass `name`.');
  need(typeof opts.execute === 'function', 'MISSING_TOOL_EXECUTE', `tool '${opts.name}' needs an execute function.`, 'Pass `execute: async (args, toolCtx) => …`.');
  return { description: '', ...opts };
}

function loop(opts) {
  checkId(opts, 'loop');
  need(Array.isArray(opts.steps) && opts.steps.length > 0, 'EMPTY_LOOP', `loop '${opts.id}' needs at least one step.`, 'Pass `steps: [...]`.');
  need(typeof opts.until === 'function', 'MISSING_UNTIL', `loop '${opts.id}' needs an until predicate.`, 'Pass `until: until.maxSteps(10)` or your own function.');
  return { kind: 'loop', ...opts };
}

function spawn(opts) {
  checkId(opts, 'spawn');
  need(typeof opts.child === 'object' && opts.child !== null, 'MISSING_CHILD', `spawn '${opts.id}' needs a child step.`, 'Pass `child`.');
  if (opts.memory != null) validateLayers(opts.memory, `spawn '${opts.id}'`);
  return { kind: 'spawn', ...opts };
}

function predicate(fn, description) {
  fn[PREDICATE] = description;
  return fn;
}

const verdict = (stop, reason) => ({ stop, reason: stop ? reason : undefined });

const until = {
  maxSteps: (n) => predicate((s) => verdict(s.stepCount >= n, `Reached max steps (${n})`), { kind: 'maxSteps', n: num(n) }),
  maxCost: (usd) => predicate((s) => verdict(s.cost >= usd, `Reached max cost ($${usd})`), { kind: 'maxCost', n: num(usd) }),
  maxDuration: (ms) => predicate((s) => verdict(s.elapsed >= ms, `Reached max duration (${ms}ms)`), { kind: 'maxDuration', n: num(ms) }),
  noToolCalls: () =>
    predicate((s) => {
      if (s.stepCount < 1) return { stop: false };
      return verdict(!(s.lastStepMeta?.toolCalls?.length > 0), 'No tool calls in last response');
    }, { kind: 'noToolCalls' }),
  never: predicate(() => ({ stop: false }), { kind: 'never' }),
};

function any(...predicates) {
  const fn = async (snapshot) => {
    for (const p of predicates) {
      const v = await p(snapshot);
      if (v.stop) return v;
    }
    return { stop: false };
  };
  return predicate(fn, predicates.every((p) => p[PREDICATE]) ? { kind: 'any', of: predicates.map((p) => p[PREDICATE]) } : undefined);
}

function all(...predicates) {
  const fn = async (snapshot) => {
    const reasons = [];
    for (const p of predicates) {
      const v = await p(snapshot);
      if (!v.stop) return { stop: false };
      if (v.reason) reasons.push(v.reason);
    }
    return { stop: true, reason: reasons.join('; ') || 'All predicates satisfied' };
  };
  return predicate(fn, predicates.every((p) => p[PREDICATE]) ? { kind: 'all', of: predicates.map((p) => p[PREDICATE]) } : undefined);
}

function react(opts) {
  const llm = step.llm({ id: 'react-step', model: opts.model, instructions: opts.instructions, tools: opts.tools });
  const stops = [until.noToolCalls(), until.maxSteps(opts.maxSteps ?? 10), ...(opts.maxCost ? [until.maxCost(opts.maxCost)] : [])];
  const body = loop({ id: 'react-loop', steps: [llm], until: any(...stops) });
  if (!opts.memory) return body;
  layersOf(opts.memory, 'react');
  return spawn({ id: 'react-agent', child: body, memory: opts.memory });
}

function describeTool(t, keep) {
  return { name: t.name, description: t.description ?? '', inputSchema: t.input ? inputSchema(t.input) : { type: 'object' }, handle: keep(t) };
}

function describeUntil(fn, keep) {
  return fn?.[PREDICATE] ?? { kind: 'host', handle: keep(fn) };
}

// The step tree as the native interpreter reads it; user functions become handles.
function describeStep(s, keep, describeLayer) {
  const base = { kind: s?.kind, id: s?.id };
  switch (s?.kind) {
    case 'run':
      return { ...base, execute: typeof s.execute === 'function' ? keep(s.execute) : undefined };
    case 'llm': {
      // Getter fields (`(ctx) => value`) are resolved by the host each time the step runs.
      const fields = ['model', 'instructions', 'tools'].filter((key) => typeof s[key] === 'function');
      return {
        ...base,
        model: typeof s.model === 'string' ? s.model : undefined,
        instructions: typeof s.instructions === 'string' ? s.instructions : undefined,
        tools: Array.isArray(s.tools) ? s.tools.map((t) => describeTool(t, keep)) : undefined,
        projection: s.projection,
        lazy: fields.length > 0 ? { step: keep(s), fields } : undefined,
        params: s.params,
      };
    }
    case 'loop':
      need(Array.isArray(s.steps), 'INVALID_STEP', `loop '${s.id}' has steps ${describeValue(s.steps)}; expected an array of steps.`, 'Pass `steps: [...]`, or build the loop with loop().');
      return {
        ...base,
        steps: s.steps.map((child) => describeStep(child, keep, describeLayer)),
        until: describeUntil(s.until, keep),
        maxIterations: num(s.maxIterations),
        maxHistorySize: num(s.maxHistorySize),
      };
    case 'spawn':
      return {
        ...base,
        child: describeStep(s.child, keep, describeLayer),
        memory: s.memory == null ? undefined : layersOf(s.memory, `spawn '${s.id}'`).map((l) => describeLayer(l, keep)),
      };
    default:
      return base;
  }
}

module.exports = { step, tool, loop, spawn, until, any, all, react, describeStep, describeTool, PREDICATE };
