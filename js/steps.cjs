'use strict';
// Step builders: plain step objects, as upstream (tests inspect `.kind`, users write literals), and the
// description of a step tree the native interpreter runs. Built-in predicates carry a marker so the runtime
// evaluates them without crossing; they stay callable from JS.
const { KEEP_IDENTITY, NoeticConfigError, NoeticErrorImpl, describeValue, callNative } = require('./errors.cjs');
const { validateLayers, layersOf, num, outputJsonSchema } = require('./memory.cjs');
const { describeTool } = require('./tool-calls.cjs');
const { cosineSimilarity } = require('./conditions.cjs');
const { adapterRef } = require('./subprocess.cjs');
const { sketch } = require('./sketch.cjs');
const native = require('./native.cjs');
const { describeChannel } = require('./channels.cjs');

const PREDICATE = Symbol.for('noetic.predicate');

function need(condition, code, message, hint) {
  if (!condition) throw new NoeticConfigError({ code, message, hint });
}

// The step registry: every step a builder makes, by id, the latest of an id winning (as upstream's; subprocess
// adapters look steps up here).
const registry = new Map();

function registerStep(s) {
  need(typeof s?.id === 'string' && s.id.trim() !== '', 'EMPTY_STEP_ID', 'registerStep() requires a step with a non-empty id.', 'Set `id` on the step before constructing it.');
  registry.set(s.id, s);
}

const lookupStep = (id) => registry.get(id) ?? null;
const getRegistry = () => registry;

// A built step, registered.
function built(s) {
  registerStep(s);
  return s;
}

// Upstream's builder checks, with its codes and texts, made natively (steps/builders.rs) on a sketch of the options.
const STEP_METHODS = native.harnessOptionNames().stepMethods;
const checkOptions = (builder, opts) => callNative(() => native.checkStepOptions(builder, sketch(opts, STEP_METHODS, 3)));

const step = {
  run(opts) {
    checkOptions('step.run', opts);
    return built({ kind: 'run', ...opts });
  },
  llm(opts) {
    checkOptions('step.llm', opts);
    return built({ kind: 'llm', ...opts });
  },
  tool(opts) {
    checkOptions('step.tool', opts);
    return built({ kind: 'tool', ...opts });
  },
};

// A tool, with upstream's keys (present even when unset). `needsApproval`, `output` and `memory` ride along:
// upstream's runtime reads none of them itself (`memory` matters to a toolMemoryLayer).
function tool(opts) {
  checkOptions('tool', opts);
  const { name, description, input, output, itemSchemas, decorateResultItem, execute, needsApproval, memory } = opts;
  return { name, description, input, output, itemSchemas, decorateResultItem, execute, needsApproval, memory };
}

// A tool whose execute is an async generator: what it yields is progress (a `tool_progress` event under step.tool),
// what it returns the result.
function toolWithGenerator(opts) {
  return { ...tool(opts), event: opts.event };
}

function loop(opts) {
  checkOptions('loop', opts);
  return built({ kind: 'loop', ...opts });
}

function spawn(opts) {
  checkOptions('spawn', opts);
  if (opts.memory != null) validateLayers(opts.memory, `spawn '${opts.id}'`);
  const contextIn = strategyOf(opts.contextIn);
  const contextOut = strategyOf(opts.contextOut);
  registerStep(opts.child);
  return built({ kind: 'spawn', ...opts, ...(contextIn ? { contextIn } : {}), ...(contextOut ? { contextOut } : {}) });
}

// A spawn's context strategies (DECISIONS D12, M6), as `{ strategy, ... }`; a bare strategy name stands for the
// object. Absent means upstream's behaviour (fresh in, full out).
const strategyOf = (value) => (value == null ? undefined : typeof value === 'string' ? { strategy: value } : value);

// What the native side calls: `select` with the parent's items and state, `build` with the input and the parent's
// context (their items cross as one JSON text), and the schema as a parse that fails with llm_parse_error.
const itemsText = (items) => (Array.isArray(items) ? JSON.stringify(items) : items);

function describeContextIn(spec, keep) {
  switch (spec?.strategy) {
    case 'inherit':
      return { strategy: 'inherit' };
    case 'subset':
      return { strategy: 'subset', fn: keep(async (ctx) => itemsText(await spec.select([...ctx.itemLog.items], ctx.state))) };
    case 'custom':
      return { strategy: 'custom', fn: keep(async (input, ctx) => itemsText(await spec.build(input, ctx))) };
    default:
      return undefined;
  }
}

function describeContextOut(spec, keep, stepId) {
  switch (spec?.strategy) {
    case 'summary':
      return { strategy: 'summary', model: spec.model, prompt: spec.prompt };
    case 'schema': {
      const parse = (output) => {
        const checked = spec.schema.safeParse(output);
        if (checked.success) return checked.data;
        const failure = new NoeticErrorImpl({ kind: 'llm_parse_error', stepId, raw: JSON.stringify(output) ?? String(output), schema: spec.schema, zodError: checked.error });
        // The very object reaches the caller, schema and ZodError included.
        failure[KEEP_IDENTITY] = true;
        throw failure;
      };
      return { strategy: 'schema', fn: keep(parse) };
    }
    default:
      return undefined;
  }
}

function branch(opts) {
  checkOptions('branch', opts);
  return built({ kind: 'branch', ...opts });
}

// More layers for a child step, in the same context (no isolation); `memory` is checked when it is given.
function provide(opts) {
  checkOptions('provide', opts);
  if (opts.memory != null) validateLayers(opts.memory, `provide '${opts.id}'`);
  return built({ kind: 'provide', ...opts });
}

// Runs `step` again and again, `ms` (± `jitter`) apart, until its context is cancelled.
function every(opts) {
  checkOptions('every', opts);
  return built({ kind: 'every', id: opts.id, step: opts.step, ms: opts.ms, wakeOn: opts.wakeOn, onError: opts.onError ?? 'continue', jitter: opts.jitter ?? 0 });
}

function fork(opts) {
  checkOptions('fork', opts);
  return built({ kind: 'fork', ...opts });
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
  never: () => predicate(() => ({ stop: false }), { kind: 'never' }),
  // Stops when `fn` passes the last output; its feedback rides along on every verdict.
  verified: (fn) => async (s) => {
    const result = await fn(s.lastOutput);
    return { stop: result.pass, reason: result.pass ? 'Verification passed' : undefined, feedback: result.feedback };
  },
  converged,
  outputContains: (marker) => (s) => verdict(s.lastText.includes(marker), `Output contains marker: ${marker}`),
  outputEquals: (sentinel) => (s) => verdict(s.lastText === sentinel, `Output matched sentinel: ${sentinel}`),
  custom: (fn) => fn,
};

const CONVERGE_CACHE_KEY = 'converge:previousVector';

// Stops when the last output text repeats the one before: exactly, or (with `embed` and a threshold below 1) by the
// cosine similarity of their embeddings, the previous vector kept in `cache` when given so a later run resumes.
function converged(opts = {}) {
  const threshold = opts.threshold ?? 1;
  const { embed, cache } = opts;
  if (!embed || threshold >= 1) {
    let previous = null;
    return (s) => {
      const current = s.lastText;
      if (previous === null) {
        previous = current;
        return { stop: false };
      }
      const same = current === previous;
      previous = current;
      return verdict(same, 'Output converged');
    };
  }
  let previousVector = null;
  const remember = async (vector) => {
    if (cache) await cache.set(CONVERGE_CACHE_KEY, vector);
    previousVector = vector;
  };
  return async (s) => {
    const [currentVector] = await embed([s.lastText]);
    if (!previousVector && cache) previousVector = await cache.get(CONVERGE_CACHE_KEY);
    if (!previousVector) {
      await remember(currentVector);
      return { stop: false };
    }
    const similarity = cosineSimilarity(currentVector, previousVector);
    await remember(currentVector);
    return verdict(similarity >= threshold, `Output converged (similarity: ${similarity.toFixed(3)})`);
  };
}

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

function describeUntil(fn, keep) {
  return fn?.[PREDICATE] ?? { kind: 'host', handle: keep(fn) };
}

// A loop's inbox or an every's wakeOn, for the store the runtime reads it from (a capacity JSON cannot carry as text).
function channelJson(ch) {
  const described = describeChannel(ch);
  return { ...described, capacity: num(described.capacity) };
}

// The steps a branch or fork may choose (`_optimizable`): a session offers their tools.
function describeCandidates(s, keep, describeLayer) {
  return Array.isArray(s._optimizable) ? s._optimizable.map((c) => describeStep(c, keep, describeLayer)) : undefined;
}

// The step tree as the native interpreter reads it; user functions become handles.
function describeStep(s, keep, describeLayer) {
  const base = { kind: s?.kind, id: s?.id };
  switch (s?.kind) {
    case 'run': {
      const execute = typeof s.execute === 'function' ? keep(s.execute) : undefined;
      return { ...base, execute, retry: s.retry == null ? undefined : sketch(s.retry, [], 1), subprocess: adapterRef(s.subprocess, keep) };
    }
    case 'tool':
      return { ...base, tool: s.tool ? keep(s.tool) : undefined, args: s.args ? keep(s.args) : undefined };
    case 'branch':
      return { ...base, route: typeof s.route === 'function' ? keep(s.route) : undefined, optimizable: describeCandidates(s, keep, describeLayer) };
    case 'fork':
      return {
        ...base,
        mode: s.mode,
        paths: typeof s.paths === 'function' ? keep(s.paths) : undefined,
        merge: typeof s.merge === 'function' ? keep(s.merge) : undefined,
        concurrency: s.concurrency,
        optimizable: describeCandidates(s, keep, describeLayer),
      };
    case 'llm': {
      // Getter fields (`(ctx) => value`) are resolved by the host each time the step runs. The step object itself
      // goes along: a test model is handed its `params`, `output` and `emit` as they are (as upstream's request).
      const fields = ['model', 'instructions', 'tools'].filter((key) => typeof s[key] === 'function');
      const source = keep(s);
      return {
        ...base,
        model: typeof s.model === 'string' ? s.model : undefined,
        instructions: typeof s.instructions === 'string' ? s.instructions : undefined,
        tools: Array.isArray(s.tools) ? s.tools.map((t) => describeTool(t, keep)) : undefined,
        projection: s.projection,
        lazy: fields.length > 0 ? { step: source, fields } : undefined,
        source,
        params: s.params,
        output: s.output ? { schema: keep(s.output), jsonSchema: outputJsonSchema(s.output) } : undefined,
        // A filter answers in text, which the native side reads without a JS value: non-empty lets the event go.
        emit: typeof s.emit === 'function' ? { filter: keep(async (type, data) => ((await s.emit(type, data)) ? 'emit' : '')) } : s.emit === false ? false : undefined,
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
        prepareNext: typeof s.prepareNext === 'function' ? keep(s.prepareNext) : undefined,
        onError: typeof s.onError === 'function' ? keep(s.onError) : undefined,
        inbox: s.inbox ? channelJson(s.inbox) : undefined,
        parkTimeout: s.parkTimeout === undefined ? undefined : num(s.parkTimeout),
      };
    case 'every':
      return {
        ...base,
        step: describeStep(s.step, keep, describeLayer),
        ms: num(s.ms),
        jitter: num(s.jitter ?? 0),
        wakeOn: s.wakeOn ? channelJson(s.wakeOn) : undefined,
        onError: s.onError,
      };
    case 'provide':
      return {
        ...base,
        child: describeStep(s.child, keep, describeLayer),
        memory: s.memory == null ? [] : layersOf(s.memory, `provide '${s.id}'`).map((l) => describeLayer(l, keep)),
      };
    case 'spawn':
      return {
        ...base,
        child: describeStep(s.child, keep, describeLayer),
        memory: s.memory == null ? undefined : layersOf(s.memory, `spawn '${s.id}'`).map((l) => describeLayer(l, keep)),
        timeout: s.timeout === undefined ? undefined : num(s.timeout),
        contextIn: describeContextIn(strategyOf(s.contextIn), keep),
        contextOut: describeContextOut(strategyOf(s.contextOut), keep, s.id),
      };
    default:
      return base;
  }
}

module.exports = { step, tool, toolWithGenerator, loop, spawn, provide, branch, fork, every, registerStep, lookupStep, getRegistry, until, any, all, react, describeStep, describeTool, PREDICATE };
