'use strict';
// Checks of the options users pass to AgentHarness and its methods: every option is applied or rejected with a
// NoeticConfigError that names what was passed, never silently dropped or left to fail inside the runtime.
const { NoeticConfigError, describeValue } = require('./errors.cjs');
const { nativeStoreOf } = require('./storage.cjs');
const { checkSubprocessAdapter } = require('./subprocess.cjs');
const { noteThreadId } = require('./thread-ids.cjs');

function fail(code, message, hint) {
  throw new NoeticConfigError({ code, message, hint });
}

function checkObject(value, what, code, hint) {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(code, `${what} is ${describeValue(value)}; expected an object.`, hint);
  }
}

// The one test for a storage the runtime reads natively, with no crossing.
const isNativeStorage = (storage) => nativeStoreOf(storage) !== undefined;

const STORAGE_METHODS = ['get', 'set', 'delete', 'list'];

// Upstream's StorageAdapter contract; null and undefined mean the default in-memory storage.
function checkStorage(storage) {
  if (storage == null || isNativeStorage(storage)) return;
  const hint = 'Pass createInMemoryStorage(), createSqliteStorage(path), createPostgresStorage(url), or an object with get, set, delete and list(prefix) methods.';
  if (typeof storage !== 'object' && typeof storage !== 'function') {
    fail('INVALID_STORAGE', `AgentHarness storage is ${describeValue(storage)}; expected a storage adapter.`, hint);
  }
  const missing = STORAGE_METHODS.filter((name) => typeof storage[name] !== 'function');
  if (missing.length > 0) {
    const list = missing.map((name) => `'${name}'`).join(', ');
    fail('INVALID_STORAGE', `AgentHarness storage has no ${list} method${missing.length > 1 ? 's' : ''}.`, hint);
  }
}

const FS_METHODS = ['readFile', 'readFileText', 'writeFile', 'writeFileBytes', 'appendFile', 'mkdir', 'rename', 'rm', 'access', 'stat', 'lstat', 'readdir'];
const SHELL_METHODS = ['exec'];

// An `fs` or `shell` adapter must have every method of upstream's interface: hooks, steps and tools call them
// later, where a missing one would fail far from the mistake. null and undefined mean the in-memory default.
function checkAdapter(adapter, { option, kind, methods, code, hint }) {
  if (adapter == null) return;
  if (typeof adapter !== 'object' && typeof adapter !== 'function') {
    fail(code, `AgentHarness ${option} is ${describeValue(adapter)}; expected ${kind}.`, hint);
  }
  const missing = methods.filter((name) => typeof adapter[name] !== 'function');
  if (missing.length > 0) {
    const list = missing.map((name) => `'${name}'`).join(', ');
    fail(code, `AgentHarness ${option} has no ${list} method${missing.length > 1 ? 's' : ''}.`, hint);
  }
}

function checkAdapters(opts) {
  checkAdapter(opts.fs, {
    option: 'fs',
    kind: 'an FsAdapter',
    methods: FS_METHODS,
    code: 'INVALID_FS_ADAPTER',
    hint: `Pass createInMemoryFsAdapter() or an object with ${FS_METHODS.join(', ')} methods, or leave \`fs\` out.`,
  });
  checkAdapter(opts.shell, {
    option: 'shell',
    kind: 'a ShellAdapter',
    methods: SHELL_METHODS,
    code: 'INVALID_SHELL_ADAPTER',
    hint: 'Pass createInMemoryShellAdapter() or an object with an exec(command, options) method, or leave `shell` out.',
  });
}

// Upstream has no tokenizer option: 'estimate' is its count; 'o200k' and 'cl100k' are real BPE counts (DECISIONS).
const TOKENIZERS = ['estimate', 'o200k', 'cl100k'];
function checkTokenizer(tokenizer) {
  if (tokenizer === undefined || TOKENIZERS.includes(tokenizer)) return;
  fail(
    'INVALID_TOKENIZER',
    `AgentHarness tokenizer is ${describeValue(tokenizer)}; expected one of ${TOKENIZERS.map((t) => `'${t}'`).join(', ')}.`,
    "Leave `tokenizer` out for upstream's estimate, or pass 'o200k' (GPT-4o) or 'cl100k' (GPT-4) for real token counts.",
  );
}

const SCHEMA_LISTS = ['items', 'developerMessages', 'toolCalls', 'toolResults'];

// `itemSchemas` lists zod schemas per category; `strictItemSchemas: false` admits items of any type.
function checkItemSchemas(itemSchemas, strict) {
  const hint = 'Pass { items?, developerMessages?, toolCalls?, toolResults? }, each an array of zod schemas, e.g. { items: [z.object({ type: z.literal(\'acme:note\') })] }.';
  if (strict !== undefined && typeof strict !== 'boolean') {
    fail('INVALID_ITEM_SCHEMAS', `AgentHarness strictItemSchemas is ${describeValue(strict)}; expected true or false.`, hint);
  }
  if (itemSchemas == null) return;
  checkObject(itemSchemas, 'AgentHarness itemSchemas', 'INVALID_ITEM_SCHEMAS', hint);
  for (const list of SCHEMA_LISTS) {
    const schemas = itemSchemas[list];
    if (schemas == null) continue;
    if (!Array.isArray(schemas)) fail('INVALID_ITEM_SCHEMAS', `AgentHarness itemSchemas.${list} is ${describeValue(schemas)}; expected an array of zod schemas.`, hint);
    const bad = schemas.findIndex((schema) => typeof schema?.safeParse !== 'function');
    if (bad >= 0) fail('INVALID_ITEM_SCHEMAS', `AgentHarness itemSchemas.${list}[${bad}] is ${describeValue(schemas[bad])}; expected a zod schema.`, hint);
  }
}

const OVERFLOWS = ['truncate', 'sliding_window', 'summarize'];

// A projection policy (the harness default or a step's own); the runtime would otherwise drop one it cannot read.
function checkProjection(projection, where) {
  if (projection == null) return;
  const hint = "Pass { tokenBudget: number, responseReserve: number, overflow: 'truncate' | 'sliding_window' | 'summarize', windowSize?, overflowModel? }.";
  checkObject(projection, `${where} projection`, 'INVALID_PROJECTION_POLICY', hint);
  for (const field of ['tokenBudget', 'responseReserve', 'windowSize']) {
    const value = projection[field];
    if (typeof value === 'number' || (field === 'windowSize' && value === undefined)) continue;
    fail('INVALID_PROJECTION_POLICY', `${where} projection.${field} is ${describeValue(value)}; expected a number.`, hint);
  }
  if (projection.overflow !== undefined && !OVERFLOWS.includes(projection.overflow)) {
    fail('INVALID_PROJECTION_POLICY', `${where} projection.overflow is ${describeValue(projection.overflow)}; expected one of ${OVERFLOWS.join(', ')}.`, hint);
  }
}

function checkHarnessOptions(opts) {
  checkObject(opts, 'The AgentHarness options', 'INVALID_HARNESS_OPTIONS', "Pass { name, params, ... }, e.g. new AgentHarness({ name: 'agent', params: {} }).");
  checkStorage(opts.storage);
  checkAdapters(opts);
  checkTokenizer(opts.tokenizer);
  checkItemSchemas(opts.itemSchemas, opts.strictItemSchemas);
  checkProjection(opts.projection, 'AgentHarness');
  checkTools(opts.tools);
  checkSubprocessAdapter(opts.subprocess);
  checkTraceExporter(opts.traceExporter);
  checkLayerStateStore(opts.layerStateStore);
  checkSessionOptions(opts);
}

// persistSessions keeps each thread's history in the harness's storage; sessionIdleMs drops idle ones from memory.
function checkSessionOptions(opts) {
  const hint = 'Pass persistSessions: true to keep histories in the storage, and sessionIdleMs: a positive number of milliseconds (default 600000) or Infinity to keep idle sessions in memory.';
  if (opts.persistSessions !== undefined && typeof opts.persistSessions !== 'boolean') {
    fail('INVALID_SESSION_OPTIONS', `AgentHarness persistSessions is ${describeValue(opts.persistSessions)}; expected true or false.`, hint);
  }
  const idle = opts.sessionIdleMs;
  if (idle !== undefined && !(typeof idle === 'number' && idle > 0)) {
    fail('INVALID_SESSION_OPTIONS', `AgentHarness sessionIdleMs is ${describeValue(idle)}; expected a positive number of milliseconds.`, hint);
  }
}

const STATE_STORE_METHODS = ['get', 'set', 'cleanup'];

// The harness keeps its JS layers' state in the store, calling these on every hook; a missing one would fail there.
function checkLayerStateStore(store) {
  if (store == null) return;
  const hint = "Pass createLayerStateStore() from '@noetic-tools/core/unstable', or an object with get, set and cleanup methods.";
  if (typeof store !== 'object') fail('INVALID_LAYER_STATE_STORE', `AgentHarness layerStateStore is ${describeValue(store)}; expected a LayerStateStore.`, hint);
  const missing = STATE_STORE_METHODS.filter((name) => typeof store[name] !== 'function');
  if (missing.length > 0) {
    const list = missing.map((name) => `'${name}'`).join(', ');
    fail('INVALID_LAYER_STATE_STORE', `AgentHarness layerStateStore has no ${list} method${missing.length > 1 ? 's' : ''}.`, hint);
  }
}

// Spans are handed to `export` while runs go on; an exporter without one would fail at the first hook.
function checkTraceExporter(exporter) {
  if (exporter == null || typeof exporter.export === 'function') return;
  fail('INVALID_TRACE_EXPORTER', `AgentHarness traceExporter is ${describeValue(exporter)}; expected an object with an export(spans) method.`, 'Pass new InMemoryExporter(), new NoopExporter(), or your own { export(spans) { ... } }.');
}

// The harness's own tools, offered in every session: each needs a name and an execute function.
function checkTools(tools) {
  if (tools == null) return;
  const hint = "Pass tools made with tool({ name, description, input, execute }).";
  if (!Array.isArray(tools)) fail('INVALID_TOOLS', `AgentHarness tools is ${describeValue(tools)}; expected an array of tools.`, hint);
  tools.forEach((t, i) => {
    if (typeof t !== 'object' || t === null || typeof t.name !== 'string' || typeof t.execute !== 'function') {
      fail('INVALID_TOOLS', `AgentHarness tools[${i}] is not a tool (it needs a string name and an execute function).`, hint);
    }
  });
}

// threadId and resourceId key layer state; one that is not a string would be dropped.
function checkIds(options, where, code, hint) {
  for (const field of ['threadId', 'resourceId']) {
    const value = options[field];
    if (value != null && typeof value !== 'string') fail(code, `${where} ${field} is ${describeValue(value)}; expected a string.`, hint);
  }
  noteThreadId(options.threadId);
}

// createContext's options: undefined or null mean none, as upstream.
function contextOptionsOf(opts) {
  if (opts == null) return {};
  const hint = 'Pass { threadId?, resourceId?, memory?, items?, state?, parent?, cwdInit? } or nothing.';
  checkObject(opts, 'createContext(options)', 'INVALID_CONTEXT_OPTIONS', hint);
  checkIds(opts, 'createContext', 'INVALID_CONTEXT_OPTIONS', hint);
  if (opts.items != null && !Array.isArray(opts.items)) {
    fail('INVALID_CONTEXT_OPTIONS', `createContext items is ${describeValue(opts.items)}; expected an array of items.`, 'Pass `items: [createMessage(text, role), ...]`.');
  }
  return opts;
}

// run's third argument, when it is not a context of this harness.
function runOptionsOf(options, isContext) {
  const hint = 'Pass a context from this harness (harness.createContext()), { threadId?, resourceId?, memory? }, or nothing.';
  if (isContext) fail('INVALID_RUN_OPTIONS', 'harness.run was given a context made by another harness.', hint);
  if (options === undefined) return {};
  checkObject(options, "harness.run's third argument", 'INVALID_RUN_OPTIONS', hint);
  checkIds(options, 'harness.run', 'INVALID_RUN_OPTIONS', hint);
  return options;
}

// harness.callModel / ctx.callModel's request.
function checkModelRequest(request) {
  const hint = "Pass { model: 'provider/model', items: Item[], instructions?, params? }.";
  checkObject(request, 'callModel(request)', 'INVALID_MODEL_REQUEST', hint);
  if (request.items != null && !Array.isArray(request.items)) {
    fail('INVALID_MODEL_REQUEST', `callModel request.items is ${describeValue(request.items)}; expected an array of items.`, hint);
  }
}

const USAGE_COUNTS = ['inputTokens', 'outputTokens', 'cachedTokens'];

// A `_testCallModel` reply, checked where it arrives, so that a mistake names the field instead of failing in
// the runtime.
function checkModelResponse(response) {
  const bad = (what, expected) =>
    fail('INVALID_MODEL_RESPONSE', `_testCallModel returned ${what}; expected ${expected}.`, 'Return { items: Item[], usage?: { inputTokens, outputTokens, cachedTokens? }, cost?: number }.');
  if (typeof response !== 'object' || response === null) bad(describeValue(response), 'an object { items, usage?, cost? }');
  const { items, usage, cost } = response;
  if (!Array.isArray(items)) bad(`items ${describeValue(items)}`, 'an array of items');
  items.forEach((item, i) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) bad(`items[${i}] ${describeValue(item)}`, 'an item object');
  });
  if (usage != null) {
    if (typeof usage !== 'object') bad(`usage ${describeValue(usage)}`, 'an object');
    for (const field of USAGE_COUNTS) {
      if (usage[field] !== undefined && typeof usage[field] !== 'number') bad(`usage.${field} ${describeValue(usage[field])}`, 'a number');
    }
  }
  if (cost != null && typeof cost !== 'number') bad(`cost ${describeValue(cost)}`, 'a number');
  return response;
}

module.exports = { checkHarnessOptions, checkProjection, contextOptionsOf, runOptionsOf, isNativeStorage, checkModelResponse, checkModelRequest };
