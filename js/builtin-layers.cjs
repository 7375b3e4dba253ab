'use strict';
// The built-in layers' JS faces: each factory returns upstream's layer object, whose `hooks` call the same Rust
// functions the harness runs natively, plus the `[NATIVE]` marker the harness builds the native layer from.
const native = require('./native.cjs');
const { createMessage } = require('./items.cjs');
const { callNative, describeValue, NoeticConfigError } = require('./errors.cjs');
const { readFiles } = require('./file-reads.cjs');
const { sketch, checkArgs } = require('./sketch.cjs');
const { NATIVE, Slot, SteeringAction, layerData, layerFn, z, builtinHook, recalled, num } = require('./memory.cjs');

// One crossing per factory: the runtime checks a sketch of the config (four levels: a steering rule's llmEval) and
// answers `{settings, layer}`, the settings the hooks and the harness read and the layer object's metadata.
const builtinLayer = (kind, config, cwd) => callNative(native.builtinLayer, kind, sketch(config, [], 4), cwd);

// A zod schema as the native gate calls it: `null` when the value passes, otherwise zod's message.
const schemaCheck = (schema) =>
  schema &&
  ((value) => {
    const result = schema.safeParse(value);
    return result.success ? null : result.error.message;
  });

function workingMemory(config = {}) {
  const kind = 'working-memory';
  const check = schemaCheck(config.schema);
  const { settings, layer } = builtinLayer(kind, config);
  const hook = (name, params) => builtinHook(kind, name, params, check);
  return {
    ...layer,
    hooks: {
      init: async ({ storage }) => ({ state: hook('initState', { saved: (await storage.get('state')) ?? null }) }),
      recall: async ({ state }) => recalled(hook('recall', { state: state ?? null })),
      store: async ({ state, newItems }) => {
        const next = hook('store', { state: state ?? '', items: newItems, config: settings });
        return next === null ? undefined : { state: next };
      },
      onSpawn: async ({ parentState }) =>
        settings.scope === 'resource' ? { childState: structuredClone(parentState) } : null,
    },
    provides: {
      snapshot: layerData({ read: (state) => state }),
      update: layerFn({
        description: 'Update the agent working memory with new key-value pairs.',
        input: z().record(z().string(), z().unknown()),
        output: z().void(),
        execute: async (args, state) => ({ result: undefined, state: hook('update', { state: state ?? '', args }) }),
      }),
    },
    [NATIVE]: { kind, config: settings, callbacks: { schema: check } },
  };
}

function observationalMemory(config = {}) {
  const kind = 'observational-memory';
  const observer = config.observer;
  const { settings, layer } = builtinLayer(kind, config);
  // The native step says when the buffer must be distilled; the observer runs here, then its answer is folded in.
  const next = async (name, params) => {
    let state = builtinHook(kind, name, { ...params, config: settings });
    if (state?.distill) {
      const distilled = await observer(state.distill);
      state = builtinHook(kind, 'applyDistilled', { state: params.state, distilled, config: settings });
    }
    return state === null ? undefined : { state };
  };
  return {
    ...layer,
    hooks: {
      init: async ({ storage }) => ({ state: builtinHook(kind, 'initState', { saved: (await storage.get('state')) ?? null }) }),
      recall: async ({ state, budget }) => recalled(builtinHook(kind, 'recall', { state: state ?? null, budget })),
      store: async ({ state, newItems }) => next('store', { state: state ?? null, items: newItems }),
      onItemAppend: async ({ state, items }) => ({ items, ...(await next('onItemAppend', { state: state ?? null, items })) }),
      onSpawn: async ({ parentState }) => ({ childState: structuredClone(parentState) }),
    },
    [NATIVE]: { kind, config: settings, callbacks: { observer: settings.observer ? observer : undefined } },
  };
}

function durableTaskState() {
  const kind = 'durable-task-state';
  const { settings, layer } = builtinLayer(kind, {});
  const hook = (name, params) => builtinHook(kind, name, params);
  return {
    ...layer,
    hooks: {
      init: async ({ storage }) => ({ state: hook('initState', { saved: (await storage.get('state')) ?? null }) }),
      recall: async ({ state, budget }) => recalled(hook('recall', { state: state ?? null, budget })),
      store: async ({ state, ctx }) => ({ state: hook('store', { state: state ?? null, depth: ctx?.depth ?? 0 }) }),
      onSpawn: async ({ parentState }) => ({ childState: structuredClone(parentState), items: [] }),
      onReturn: async ({ childState, parentState }) => ({ parentState: hook('onReturn', { parent: parentState ?? null, child: childState ?? null }) }),
      onComplete: async ({ state, outcome }) => {
        const next = hook('onComplete', { state: state ?? null, outcome });
        return next === null ? undefined : { state: next };
      },
    },
    [NATIVE]: { kind, config: settings, callbacks: {} },
  };
}

function staticContent(opts) {
  const kind = 'static-content';
  const load = opts?.load;
  const { settings, layer } = builtinLayer(kind, opts);
  const { tag } = settings;
  // What load gives, as the text the layer wraps: nothing (or anything falsy) loads nothing.
  const loadText = async () => {
    const raw = await load();
    return raw ? String(raw) : '';
  };
  return {
    ...layer,
    hooks: {
      init: async () => ({ state: builtinHook(kind, 'wrap', { raw: await loadText(), tag }) }),
      recall: async ({ state, budget }) => {
        const result = builtinHook(kind, 'recall', { state: typeof state === 'string' ? state : '', budget, tag });
        return result === null ? null : result[0];
      },
    },
    [NATIVE]: { kind, config: settings, callbacks: { load: loadText } },
  };
}

// A JS item as the history window reads it: [role, link, callId] (see src/builtin.rs).
const ROLE_CODES = { user: 1, assistant: 2, system: 3 };
const roleCode = (item) => (item?.type === 'message' ? (ROLE_CODES[item.role] ?? 0) : 0);
function shapeOf(item) {
  const link = item?.type === 'function_call' ? 1 : item?.type === 'function_call_output' ? 2 : 0;
  return link && typeof item.callId === 'string' ? [roleCode(item), link, item.callId] : [roleCode(item)];
}
function lies(items, code, before) {
  for (let i = before - 1; i >= 0; i--) if (roleCode(items[i]) === code) return true;
  return false;
}

function historyWindow(config) {
  const kind = 'history-window';
  const { settings, layer } = builtinLayer(kind, config);
  const { maxItems } = settings;
  return {
    ...layer,
    hooks: {
      init: async () => ({ state: null }),
      // The window is cut natively from a description of the items it may keep; the items keep their identity.
      projectHistory: async ({ items }) => {
        if (items.length <= maxItems) return { items };
        const from = Math.max(0, items.length - 4 * maxItems);
        const params = {
          maxItems,
          len: items.length,
          from,
          tail: items.slice(from).map(shapeOf),
          head: items.slice(0, Math.min(4, from)).map(roleCode),
          userBefore: lies(items, 1, from),
          assistantBefore: lies(items, 2, from),
        };
        const kept = builtinHook(kind, 'project', params);
        return { items: kept === null ? items.slice() : kept.map((i) => items[i]) };
      },
    },
    [NATIVE]: { kind, config: settings, callbacks: {} },
  };
}

const PlanPhase = Object.freeze({ Idle: 'idle', Planning: 'planning', Executing: 'executing', Completed: 'completed', Failed: 'failed' });

function planMemory(config = {}) {
  const kind = 'plan';
  const { settings, layer } = builtinLayer(kind, config);
  const hook = (name, params) => builtinHook(kind, name, { ...params, config: settings });
  const callbacks = { onEnterSession: settings.onEnterSession && (() => config.onEnterSession()), onExit: settings.onExit && config.onExit };
  // A function runs natively; when it needs the host's answer it says which callback to await, then runs again.
  // A refusal hands back the very state object it was given.
  const run = async (name, args, state) => {
    const params = { name, args: args ?? null, state: state ?? null };
    let step = hook('call', params);
    if (step.ask) step = hook('call', { ...params, answered: true, answer: (await callbacks[step.ask](state)) ?? null });
    return { result: step.result, state: 'state' in step ? step.state : state };
  };
  const fn = (name, description, input) => layerFn({ description, input, output: z().string(), execute: (args, state) => run(name, args, state) });
  return {
    ...layer,
    provides: {
      status: layerData({ read: (state) => hook('status', { state: state ?? null }) }),
      enterPlanMode: fn('enterPlanMode', 'Enter plan mode. The agent switches to read-only exploration and PRD authoring.', z().object({ goal: z().string().optional() })),
      updatePrd: fn('updatePrd', 'Update the PRD document with new markdown content.', z().object({ content: z().string() })),
      // The flow tree is checked natively (its shape, then its depth).
      setPlanTree: fn('setPlanTree', 'Set the execution plan tree. Input must be a valid FlowNode — a discriminated union with kind: "llm" | "subagent" | "fork" | "spawn" | "sequence". Structural nodes (sequence, fork, spawn) nest child FlowNodes; leaf nodes (llm, subagent) carry execution instructions.', z().unknown()),
      exitPlanMode: fn('exitPlanMode', 'Exit plan mode. Use action "execute" to begin executing the plan, or "cancel" to discard it.', z().object({ action: z().enum(['execute', 'cancel']) })),
    },
    hooks: {
      init: async ({ storage }) => ({ state: hook('initState', { saved: (await storage.get('state')) ?? null }) }),
      recall: async ({ state, budget }) => recalled(hook('recall', { state: state ?? null, budget: num(budget) })),
      beforeToolCall: async ({ toolName, state }) => ({ decision: hook('beforeToolCall', { state: state ?? null, toolName: String(toolName) }), state }),
      onSpawn: async ({ parentState }) => ({ childState: structuredClone(parentState) }),
      onComplete: async ({ state, outcome }) => {
        const next = hook('onComplete', { state: state ?? null, outcome: String(outcome), now: Date.now() });
        return next === null ? undefined : { state: next };
      },
    },
    [NATIVE]: { kind, config: settings, callbacks },
  };
}

// A predicate's answer as the native walk reads it: null (no decision) or {action, guidance?}.
const predicateAnswer = (decision) => (decision ? { action: String(decision.action), ...(typeof decision.guidance === 'string' ? { guidance: decision.guidance } : {}) } : null);

function steering(config) {
  const kind = 'steering';
  const { settings, layer } = builtinLayer(kind, config);
  const { rules } = config;
  const hook = (name, params) => builtinHook(kind, name, params);
  const max = settings.maxLedgerEntries;
  // The harness's walk asks here for the predicates of a run of rules: one crossing, stopping after a deny.
  const predicates = ({ hook: hookName, rules: indices, params, state }, ctx) => {
    const answers = [];
    for (const index of indices) {
      const answer = predicateAnswer(rules[index].predicate({ ...params, ctx, state }));
      answers.push(answer);
      if (answer?.action === 'deny') break;
    }
    return answers;
  };
  // `hooks` called directly from JS walk the rules here, with the predicates and ctx.callModel at hand.
  const ask = async (rule, params, ctx) => {
    const prompt = hook('prompt', { prompt: rule.llmEval.prompt, ...('toolName' in params ? { toolName: params.toolName, toolArgs: params.toolArgs } : { items: params.response.items.length }) });
    for (let attempt = 0; attempt <= settings.maxRetries; attempt++) {
      const response = await ctx.callModel({ model: rule.llmEval.model ?? 'openai/gpt-4o-mini', items: [createMessage(prompt, 'user')] });
      const verdict = hook('verdictOf', { items: response.items });
      if (verdict) return verdict;
    }
    return { action: SteeringAction.Allow };
  };
  const evaluate = async (hookName, params, state) => {
    const decisions = [];
    const verdict = () => hook('mostRestrictive', { decisions });
    for (const rule of rules.filter((r) => r.appliesTo.includes(hookName))) {
      const decision = rule.predicate ? hook('predicateDecision', { answer: predicateAnswer(rule.predicate(params)) }) : null;
      if (decision) {
        decisions.push(decision);
        if (decision.action === SteeringAction.Deny) return verdict();
        continue;
      }
      if (!rule.llmEval) continue;
      if (!params.ctx?.callModel) {
        throw new NoeticConfigError({ code: 'MISSING_CALL_MODEL', message: `LLM-evaluated steering rule "${rule.id}" requires a callModel but none is available.`, hint: 'Pass `llm: { provider: "openrouter", apiKey: "..." }` to AgentHarness or set OPENROUTER_API_KEY.' });
      }
      if (rule.llmEval.mode === 'sync') {
        const decision = await ask(rule, params, params.ctx);
        decisions.push(decision);
        if (decision.action === SteeringAction.Deny) return verdict();
        continue;
      }
      // Async: the verdict lands in the array held now, even if the state moves on.
      const pending = state.pendingAsync;
      ask(rule, params, params.ctx).then((decision) => decision.action !== SteeringAction.Allow && pending.push(hook('pending', { ruleId: rule.id, decision })), () => {});
    }
    return verdict();
  };
  // The state is changed in place, as upstream's: its ledger is replaced by the recorded one.
  const record = (state, name, params) => {
    state.ledger = hook(name, { state, max, now: Date.now(), ...params }).ledger;
    return state;
  };
  return {
    ...layer,
    hooks: {
      init: async ({ storage }) => ({ state: hook('initState', { saved: (await storage.get('state')) ?? null }) }),
      recall: async ({ state }) => {
        if (!state?.pendingAsync?.length) return null;
        const [text, tokenCount] = hook('feedback', { state });
        state.pendingAsync.splice(0, state.pendingAsync.length);
        return { items: [createMessage(text, 'developer')], tokenCount, state };
      },
      store: async () => undefined,
      beforeToolCall: async ({ toolName, toolArgs, ctx, state }) => {
        const decision = await evaluate('beforeToolCall', { toolName, toolArgs, ctx, state }, state);
        return { decision, state: record(state, 'recordTool', { toolName, toolArgs: toolArgs ?? null, decision }) };
      },
      afterModelCall: async ({ response, ctx, state }) => {
        const decision = await evaluate('afterModelCall', { response, ctx, state }, state);
        return { decision, state: record(state, 'recordModel', { usage: response.usage, decision }) };
      },
      onSpawn: async ({ parentState }) => ({ childState: hook('spawned', { state: parentState ?? null }) }),
      onComplete: async ({ state, outcome }) => ({ state: record(state, 'recordOutcome', { outcome: String(outcome) }) }),
    },
    [NATIVE]: { kind, config: settings, callbacks: { predicates } },
  };
}

// A Date's local fields as the native clock reads them: [year, month, day, weekday, hour, minute].
function clockReader(now) {
  return async () => {
    const date = await now();
    if (typeof date?.getFullYear !== 'function') {
      throw new TypeError(`temporalMemory: now() must return a Date, got ${describeValue(date)}`);
    }
    return [date.getFullYear(), date.getMonth() + 1, date.getDate(), date.getDay(), date.getHours(), date.getMinutes()];
  };
}

function temporalMemory(config = {}) {
  const kind = 'temporal';
  const { settings, layer } = builtinLayer(kind, config);
  const { extract, search } = config;
  const readClock = clockReader(settings.now ? config.now : () => new Date());
  const hook = (name, params) => builtinHook(kind, name, { ...params, config: settings });
  // The native step says when the buffer must be extracted; the extractor runs here, then its answer is folded in.
  const next = async (name, params) => {
    let state = hook(name, params);
    if (typeof state?.extract === 'string') {
      const now = hook('formatNow', { now: await readClock() });
      const facts = await extract({ transcript: state.extract, now });
      state = hook('applyExtracted', { state: params.state, facts: facts ?? null });
    }
    return state === null ? undefined : { state };
  };
  return {
    ...layer,
    provides: {
      searchMemory: layerFn({
        description: 'Search remembered facts about the user by topic or fact, and resolve relative time. Returns matching facts and, when the query implies a time, a resolved date (which may be approximate).',
        input: z().object({ query: z().string() }),
        output: z().object({ facts: z().array(z().string()), date: z().string().optional(), fuzzy: z().boolean().optional() }),
        // Without a searcher the native step answers the ledger; with one it answers the searcher's input.
        execute: async (args, state) => {
          const answer = hook('search', { state: state ?? null, args: args ?? null, now: search ? await readClock() : null });
          return { result: search ? await search(answer) : answer };
        },
      }),
    },
    hooks: {
      init: async ({ storage }) => ({ state: hook('initState', { saved: (await storage.get('state')) ?? null }) }),
      recall: async ({ state, budget }) =>
        recalled(hook('recall', { state: state ?? null, budget: num(budget), now: settings.groundDateTime ? await readClock() : null })),
      store: async ({ state, newItems }) => next('store', { state: state ?? null, items: newItems }),
      onItemAppend: async ({ state, items }) => ({ items, ...(await next('onItemAppend', { state: state ?? null, items })) }),
      onSpawn: async ({ parentState }) => ({ childState: structuredClone(parentState) }),
    },
    // Only the callbacks given cross to JS: without `now` the native layer reads the system clock itself.
    [NATIVE]: { kind, config: settings, callbacks: { now: settings.now ? readClock : undefined, extract, search } },
  };
}

// fileReference's state as JS sees it: upstream's `{files: Map, baseDir}`; natively the files are a JSON object.
const withFilesMap = (state) => state && { ...state, files: new Map(Object.entries(state.files ?? {})) };
const withFilesObject = (state) => (state?.files instanceof Map ? { ...state, files: Object.fromEntries(state.files) } : state);

// A scoring reply's text, as upstream reads it: every text part of every message, joined and trimmed.
function replyText(response) {
  const texts = [];
  for (const item of response?.items ?? []) {
    if (item?.type !== 'message' || !Array.isArray(item.content)) continue;
    for (const part of item.content) if (typeof part?.text === 'string') texts.push(part.text);
  }
  return texts.join('').trim();
}

// One relevance question to `ctx.callModel`; a failure is no answer (scored 50 natively).
async function askScore(callModel, model, instructions, prompt) {
  try {
    return replyText(await callModel({ model, items: [createMessage(prompt, 'user')], instructions }));
  } catch {
    return null;
  }
}

const workingDirectory = () => (typeof process !== 'undefined' && typeof process.cwd === 'function' ? process.cwd() : '/');

function fileReference(opts) {
  const kind = 'file-reference';
  const { settings, layer } = builtinLayer(kind, opts, workingDirectory());
  const hook = (name, params) => builtinHook(kind, name, { ...params, config: settings });
  return {
    ...layer,
    hooks: {
      init: async (params) => ({ state: withFilesMap(hook('initState', { saved: (await params?.storage?.get('state')) ?? null })) }),
      // The same three native steps as in a harness, with the reads through `ctx.fs` and the scores through
      // `ctx.callModel` (the path heuristic without it) in between.
      onItemAppend: async ({ items, ctx, state }) => {
        const current = withFilesObject(state) ?? null;
        const planned = hook('appendPlan', { state: current, items });
        const outcomes = planned.reads.length === 0 ? [] : await readFiles(ctx.fs, planned.reads);
        const settled = hook('appendReads', { state: current, plan: planned.plan, outcomes });
        let next = settled.state;
        if (settled.asks.length > 0) {
          const callModel = ctx?.callModel;
          const ask = (a) => askScore(callModel, settings.scoringModel, settled.instructions, a.prompt);
          const replies = callModel ? await Promise.all(settled.asks.map(ask)) : null;
          next = hook('appendScores', { state: next, asks: settled.asks, replies, heuristic: !callModel });
        }
        return {
          items: planned.items.map((rewritten, i) => rewritten ?? items[i]),
          state: withFilesMap(next),
          rerender: settled.changed,
          timing: 'immediate',
          scope: 'self',
        };
      },
      recall: async ({ state, budget }) => recalled(hook('recall', { state: withFilesObject(state) ?? null, budget: num(budget) })) ?? { items: [], tokenCount: 0 },
    },
    [NATIVE]: { kind, config: settings, callbacks: {}, revive: withFilesMap },
  };
}

// One layer per memory among `tools` (a tool's `memory.id`, else its name; tools naming one id share its state), as
// upstream: init makes the state with the declaration's `init`, recall renders it with its `recall`.
function toolMemoryLayer(tools, opts) {
  checkArgs('toolMemoryLayer', [tools], 4);
  const declarations = new Map();
  for (const t of tools) if (t?.memory && !declarations.has(t.memory.id ?? t.name)) declarations.set(t.memory.id ?? t.name, t.memory);
  const slot = opts?.slot ?? Slot.WORKING_MEMORY + 10;
  return [...declarations].map(([id, declaration]) => ({
    id,
    name: id,
    slot,
    scope: 'execution',
    hooks: {
      init: async () => ({ state: declaration.init() }),
      recall: async ({ state }) => declaration.recall(state),
    },
  }));
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
