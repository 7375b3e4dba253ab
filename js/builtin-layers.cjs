'use strict';
// The built-in layers' JS faces. A factory makes one crossing, `builtinLayer(kind, sketch(config))`, answered by
// the runtime (memory/builtin/faces): the settings, the layer object's metadata, each of its `hooks` and `provides`
// as the steps a call takes (faces/steps.rs), which one loop here follows, and the callbacks the harness may call
// from the `[NATIVE]` marker. JS does only what JS must: call the user's functions, read a Date, build zod schemas
// and Maps, describe items, and walk steering's rules as they are at the call (DECISIONS R10, R17).
const native = require('./native.cjs');
const { createMessage } = require('./items.cjs');
const { callNative, describeValue } = require('./errors.cjs');
const { readFiles } = require('./file-reads.cjs');
const { sketch, sketchText } = require('./sketch.cjs');
const { NATIVE, SteeringAction, layerData, layerFn, z, builtinHook, num } = require('./memory.cjs');

// What user code passed at `path`, read as JS reads it: `a.b` fails where `a` is missing, `a?.b` does not.
function at(p, path) {
  let value = p;
  for (const key of path.split('.')) if ((value = value[key.replace(/\?$/, '')]) == null && key.endsWith('?')) return undefined;
  return value;
}

// fileReference's state as JS sees it: upstream's `{files: Map, baseDir}`; natively the files are a JSON object.
const withFilesMap = (state) => state && { ...state, files: new Map(Object.entries(state.files ?? {})) };
const withFilesObject = (state) => (state?.files instanceof Map ? { ...state, files: Object.fromEntries(state.files) } : state);

// A param as it crosses, by the coding the runtime names (`budget:num`).
const CODINGS = { num, str: String, text: (v) => (typeof v === 'string' ? v : ''), files: withFilesObject };
function pick(spec = {}, p) {
  const params = {};
  for (const [key, from] of Object.entries(spec)) {
    const [path, coding] = from.split(':');
    params[key] = coding ? CODINGS[coding](at(p, path)) : at(p, path);
  }
  return params;
}

// A result: the runtime's shape over its values, with user code's own objects put in where it says.
const OPS = {
  param: (v, p, path) => at(p, path),
  params: (v, p) => p,
  clone: (v, p, path) => structuredClone(at(p, path)),
  undefined: () => undefined,
  message: (v, p, n) => createMessage(v[n], 'developer'),
  files: (v, p, n) => withFilesMap(v[n]),
  items: (v, p, n) => v[n].map((entry) => (typeof entry === 'number' ? p.items[entry] : entry)),
  into: (v, p, path, key, n) => ((target) => ((target[key] = v[n]), target))(at(p, path)),
  emptied: (v, p, path, key) => ((target) => (target[key].splice(0, target[key].length), target))(at(p, path)),
};
function build(shape, values, p) {
  if (typeof shape === 'string' && shape[0] === '$') {
    const [op, ...args] = shape.slice(1).split(':');
    return Object.hasOwn(OPS, op) ? OPS[op](values, p, ...args) : values[op];
  }
  if (Array.isArray(shape)) return shape.map((s) => build(s, values, p));
  if (shape === null || typeof shape !== 'object') return shape;
  const out = {};
  for (const key of Object.keys(shape)) out[key] = build(shape[key], values, p);
  return out;
}

// A provided function's zod schema, from the runtime's description of it.
function zodOf(described) {
  if (typeof described === 'string') return z()[described]();
  const [[how, arg]] = Object.entries(described);
  if (how === 'optional') return zodOf(arg).optional();
  if (how === 'enum') return z().enum(arg);
  if (how === 'object') return z().object(Object.fromEntries(Object.entries(arg).map(([k, v]) => [k, zodOf(v)])));
  return z()[how](...[arg].flat().map(zodOf));
}

// A Date's local fields as the native clock reads them: [year, month, day, weekday, hour, minute].
function clockReader(now) {
  return async () => {
    const date = await now();
    if (typeof date?.getFullYear !== 'function') throw new TypeError(`temporalMemory: now() must return a Date, got ${describeValue(date)}`);
    return [date.getFullYear(), date.getMonth() + 1, date.getDate(), date.getDay(), date.getHours(), date.getMinutes()];
  };
}

// A JS item as the history window reads it: [role, link, callId] (see faces/content.rs).
const ROLE_CODES = { user: 1, assistant: 2, system: 3 };
const roleCode = (item) => (item?.type === 'message' ? (ROLE_CODES[item.role] ?? 0) : 0);
function shapeOf(item) {
  const link = item?.type === 'function_call' ? 1 : item?.type === 'function_call_output' ? 2 : 0;
  return link && typeof item.callId === 'string' ? [roleCode(item), link, item.callId] : [roleCode(item)];
}
const lies = (items, code, before) => items.findLastIndex((item, i) => i < before && roleCode(item) === code) !== -1;

// One relevance question to `ctx.callModel`, answered with the reply's text as upstream reads it (every text part
// of every message, joined and trimmed); a failure is no answer (scored 50 natively).
async function askScore(callModel, model, instructions, prompt) {
  try {
    const response = await callModel({ model, items: [createMessage(prompt, 'user')], instructions });
    const messages = [...(response?.items ?? [])].filter((item) => item?.type === 'message' && Array.isArray(item.content));
    return messages.flatMap((item) => item.content.filter((part) => typeof part?.text === 'string').map((part) => part.text)).join('').trim();
  } catch {
    return null;
  }
}

// What a step may await that is the host's own: the saved state, the system clock, a description of the items,
// file reads, relevance scores.
const ASKS = {
  saved: ([p, key]) => p.storage.get(key),
  savedIfAny: ([p, key]) => p?.storage?.get(key),
  clock: clockReader(() => new Date()),
  describe: ({ items, from, head }) => ({
    tail: items.slice(from).map(shapeOf),
    head: items.slice(0, head).map(roleCode),
    userBefore: lies(items, 1, from),
    assistantBefore: lies(items, 2, from),
  }),
  reads: ({ fs, reads }) => readFiles(fs, reads),
  scores: ({ callModel, model, instructions, prompts }) =>
    callModel ? Promise.all(prompts.map((prompt) => askScore(callModel, model, instructions, prompt))) : null,
};

// A built-in layer's object, as the runtime describes it. `callbacks(settings, call)` gives the user's functions
// (adapted) by the names the runtime uses; `check` is workingMemory's schema gate; `revive` gives a native state
// back in JS-only shapes.
function builtin(kind, config, { cwd, check, revive, callbacks = () => ({}) } = {}) {
  const { settings, layer, members, callbacks: given } = callNative(native.builtinLayer, kind, sketch(config, [], 4), cwd);
  const call = (name, params) => builtinHook(kind, name, params, settings, check);
  const own = callbacks(settings, call);
  const go = async (step, p) => {
    let params = pick(step.params, p);
    for (;;) {
      params = { ...params, ...step.with };
      if (step.ask) {
        const answer = await (step.ask in own ? own : ASKS)[step.ask](build(step.arg, step.values, p));
        if (!step.then) return build(step.shape, [answer], p);
        params[step.key] = answer;
        step = { call: step.then };
      }
      if (!step.call) return build(step.shape, step.values, p);
      step = call(step.call, params);
    }
  };
  // A data entry reads synchronously: its one native call, if it has one, then the result.
  const readNow = (step, p) => ((done) => build(done.shape, done.values, p))(step.call ? call(step.call, pick(step.params, p)) : step);
  const member = (step) => {
    if (step.kind === 'data') return layerData({ read: (state) => readNow(step, { state }) });
    if (step.kind !== 'function') return async (p) => go(step, p);
    const { description, input, output } = step;
    return layerFn({ description, input: zodOf(input), output: zodOf(output), execute: async (args, state) => go(step, { args, state }) });
  };
  const object = { ...layer };
  for (const [group, steps] of Object.entries(members)) {
    object[group] = {};
    for (const [name, step] of Object.entries(steps)) object[group][name] = member(step);
  }
  object[NATIVE] = { kind, config: settings, callbacks: Object.fromEntries(given.map((name) => [name, own[name]])), revive };
  return object;
}

function workingMemory(config = {}) {
  // The schema as the native gate calls it: `null` when the value passes, otherwise zod's message.
  const schema = config.schema;
  const check = schema && ((value) => ((result) => (result.success ? null : result.error.message))(schema.safeParse(value)));
  return builtin('working-memory', config, { check, callbacks: () => ({ schema: check }) });
}

const observationalMemory = (config = {}) => builtin('observational-memory', config, { callbacks: () => ({ observer: config.observer }) });

const durableTaskState = () => builtin('durable-task-state', {});

// What `load` gives, as the text the layer wraps: nothing (or anything falsy) loads nothing.
function staticContent(opts) {
  const given = opts?.load;
  const load = async () => {
    const raw = await given();
    return raw ? String(raw) : '';
  };
  return builtin('static-content', opts, { callbacks: () => ({ load }) });
}

const historyWindow = (config) => builtin('history-window', config);

const PlanPhase = Object.freeze({ Idle: 'idle', Planning: 'planning', Executing: 'executing', Completed: 'completed', Failed: 'failed' });

const planMemory = (config = {}) => builtin('plan', config, { callbacks: () => ({ onEnterSession: () => config.onEnterSession(), onExit: config?.onExit }) });

// A predicate's answer as the native walk reads it: null (no decision) or {action, guidance?}.
const predicateAnswer = (decision) => (decision ? { action: String(decision.action), ...(typeof decision.guidance === 'string' ? { guidance: decision.guidance } : {}) } : null);

function steering(config) {
  const callbacks = (settings, call) => {
    const { rules } = config;
    // The harness's walk asks here for the predicates of a run of rules: one crossing, stopping after a deny.
    const predicates = ({ rules: indices, params, state }, ctx) => {
      const answers = [];
      for (const index of indices) {
        const answer = predicateAnswer(rules[index].predicate({ ...params, ctx, state }));
        answers.push(answer);
        if (answer?.action === 'deny') break;
      }
      return answers;
    };
    // An LLM rule asks ctx.callModel until the runtime reads a verdict or says to stop.
    const ask = async (rule, params, ctx) => {
      const about = 'toolName' in params ? { toolName: params.toolName, toolArgs: params.toolArgs } : { items: params.response.items.length };
      const { prompt, model } = call('prompt', { prompt: rule.llmEval.prompt, model: rule.llmEval.model, ...about });
      for (let attempt = 0; ; attempt++) {
        const response = await ctx.callModel({ model, items: [createMessage(prompt, 'user')] });
        const verdict = call('verdictOf', { items: response.items, attempt });
        if (verdict) return verdict;
      }
    };
    // `hooks` called directly walk the rules here (the runtime records the verdict), with the predicates and
    // ctx.callModel at hand.
    const evaluate = async ({ hook, params }) => {
      const decisions = [];
      const verdict = () => call('mostRestrictive', { decisions });
      for (const rule of rules.filter((r) => r.appliesTo.includes(hook))) {
        let decision = rule.predicate ? call('predicateDecision', { answer: predicateAnswer(rule.predicate(params)) }) : null;
        if (!decision && rule.llmEval) {
          if (!params.ctx?.callModel) call('missingCallModel', { ruleId: rule.id });
          if (rule.llmEval.mode === 'sync') decision = await ask(rule, params, params.ctx);
          else {
            // Async: the verdict lands in the array held now, even if the state moves on.
            const pending = params.state.pendingAsync;
            ask(rule, params, params.ctx).then((d) => d.action !== SteeringAction.Allow && pending.push(call('pending', { ruleId: rule.id, decision: d })), () => {});
          }
        }
        if (!decision) continue;
        decisions.push(decision);
        if (decision.action === SteeringAction.Deny) return verdict();
      }
      return verdict();
    };
    return { predicates, evaluate };
  };
  return builtin('steering', config, { callbacks });
}

function temporalMemory(config = {}) {
  const callbacks = () => {
    const { extract, search } = config;
    return { now: clockReader(config.now), extract, search };
  };
  return builtin('temporal', config, { callbacks });
}

const workingDirectory = () => (typeof process !== 'undefined' && typeof process.cwd === 'function' ? process.cwd() : '/');

const fileReference = (opts) => builtin('file-reference', opts, { cwd: workingDirectory(), revive: withFilesMap });

// One layer per memory among `tools`, as the runtime lays them out (memory/builtin/tool_memory.rs): init makes the
// state with the declaration's `init`, recall renders it with its `recall`.
function toolMemoryLayer(tools, opts) {
  const layers = JSON.parse(callNative(() => native.toolMemoryLayers(sketchText([tools, opts], [], 4))));
  return layers.map(({ tool, ...layer }) => {
    const declaration = tools[tool].memory;
    return { ...layer, hooks: { init: async () => ({ state: declaration.init() }), recall: async ({ state }) => declaration.recall(state) } };
  });
}

module.exports = {
  workingMemory,
  observationalMemory,
  historyWindow,
  durableTaskState,
  staticContent,
  planMemory,
  PlanPhase,
  steering,
  temporalMemory,
  fileReference,
  toolMemoryLayer,
};
