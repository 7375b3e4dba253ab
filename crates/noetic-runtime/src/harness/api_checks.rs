//! The checks of public functions' arguments that are not an options object of the harness or a step builder
//! (those are `options.rs` and `steps/builders.rs`): storage factories, session calls, checkpoint stores, the
//! durable-runner helpers and a one-off model request (`toolMemoryLayer` checks its own, `memory/builtin/
//! tool_memory.rs`). JS sends the call's name and a sketch of its arguments (`js/sketch.cjs` `checkArgs`); each
//! check answers the first NoeticConfigError, as the call's own code used to throw it.

use crate::error::ConfigError;
use crate::js_sketch::Sketch;
use crate::storage::STORAGE_METHODS;

/// Methods the checks ask objects about: JS lists those a sketched instance has.
pub const ARG_METHODS: [&str; 13] = [
  "get",
  "set",
  "delete",
  "list",
  "seedSessionHistory",
  "execute",
  "getAgentResponse",
  "resolve",
  "reject",
  "hasPendingExternal",
  "onStall",
  "buildStalledOutcome",
  "getTracer",
];

const RUNNABLE_HARNESS: [&str; 3] = ["seedSessionHistory", "execute", "getAgentResponse"];
const SIGNAL: [&str; 2] = ["resolve", "reject"];
const STALL_HOOKS: [&str; 3] = ["hasPendingExternal", "onStall", "buildStalledOutcome"];

fn fail(code: &str, message: String, hint: &str) -> Result<(), ConfigError> {
  Err(ConfigError::new(code, message, hint))
}

/// `call`'s arguments (`args`, a sketched array), checked.
pub fn check(call: &str, args: Sketch) -> Result<(), ConfigError> {
  let given = args.as_array().unwrap_or_default();
  let arg = |i: usize| given.get(i).copied().unwrap_or_else(Sketch::undefined);
  match call {
    "createSqliteStorage" => sqlite_path(arg(0)),
    "createPostgresStorage" => postgres(arg(0), arg(1)),
    "createScopedStorage" => scoped_storage(arg(0), arg(1), arg(2)),
    "createCheckpointStore" => checkpoint_store(arg(0)),
    "checkpointSave" => checkpoint_snapshot_id(arg(0)),
    "evictSession" => thread_id(arg(0), "evictSession", "Pass the thread to drop from memory."),
    "seedSessionHistory" => seed(arg(0), arg(1)),
    "runnableLoop" => runnable_loop(arg(0)),
    "createStallNudgeHook" => stall_nudge(arg(0)),
    "createNudgeMessage" => nudge_id(arg(0)),
    "callModel" => model_request(arg(0)),
    "abort" => abort_reason(arg(0)),
    "sessionScope" => session_scope(arg(0), arg(1)),
    "memoryOption" => memory_option(arg(0), arg(1)),
    "foreignContext" => foreign_context(arg(0), arg(1)),
    "detachedSpawn" => detached_spawn(arg(0), arg(1)),
    "layerCallItems" => layer_call_items(arg(0), arg(1)),
    "foreignStorage" => fail(
      "UNSUPPORTED_STORAGE",
      "ctx.harness.initLayers was given a storage adapter other than the harness’s own.".to_owned(),
      "Pass harness.config.storage (or nothing): layer state is kept in the storage the harness was built with.",
    ),
    "unregisteredStep" => unregistered_step(arg(0), arg(1)),
    "createOtelTraceExporter" => otel_options(arg(0)).and_then(|()| otel_api(arg(1))),
    _ => fail("INVALID_CALL", format!("No argument check is named '{call}'."), "This is a bug in @noetic-tools/core."),
  }
}

const SQLITE_HINT: &str = "Pass a path such as './agent.db', or ':memory:'.";
const POSTGRES_HINT: &str = "Pass a URL such as 'postgres://user:password@host:5432/database', and optionally { table, maxConnections, connectTimeoutMs, timeoutMs, idleTimeoutMs }.";

fn non_empty(text: Sketch) -> bool {
  text.as_str().is_some_and(|s| !s.is_empty())
}

fn sqlite_path(path: Sketch) -> Result<(), ConfigError> {
  if non_empty(path) {
    return Ok(());
  }
  fail("STORAGE_OPEN_FAILED", "createSqliteStorage(path) needs a file path.".to_owned(), SQLITE_HINT)
}

fn postgres(url: Sketch, options: Sketch) -> Result<(), ConfigError> {
  if !non_empty(url) {
    let message = format!("createPostgresStorage(url) needs a connection URL; got {}.", url.described());
    return fail("STORAGE_OPEN_FAILED", message, POSTGRES_HINT);
  }
  if !options.is_undefined() && !options.is_record() {
    let message = format!("createPostgresStorage: the options are {}; expected an object.", options.described());
    return fail("STORAGE_OPEN_FAILED", message, POSTGRES_HINT);
  }
  Ok(())
}

fn scoped_storage(storage: Sketch, layer_id: Sketch, scope_key: Sketch) -> Result<(), ConfigError> {
  if !storage.is_object() || !storage.lacking(&STORAGE_METHODS).is_empty() {
    let message = format!("createScopedStorage: storage is {}; expected a StorageAdapter.", storage.described());
    let hint = "Pass createInMemoryStorage(), createSqliteStorage(path) or an object with get, set, delete and list.";
    return fail("INVALID_STORAGE", message, hint);
  }
  for (name, value) in [("layerId", layer_id), ("scopeKey", scope_key)] {
    if value.as_str().is_none() {
      let message = format!("createScopedStorage: {name} is {}; expected a string.", value.described());
      return fail(
        "INVALID_STORAGE",
        message,
        "Pass the layer id and the scope key (for example the thread id) as strings.",
      );
    }
  }
  Ok(())
}

/// `createOtelTraceExporter(options?)` (O1).
fn otel_options(options: Sketch) -> Result<(), ConfigError> {
  const HINT: &str =
    "Pass nothing, or { captureContent?: boolean, tracerProvider?: a TracerProvider, tracerName?: string }.";
  let wrong = |what: String| fail("INVALID_OTEL_OPTIONS", format!("createOtelTraceExporter: {what}."), HINT);
  if options.is_undefined() {
    return Ok(());
  }
  if !options.is_record() {
    return wrong(format!("the options are {}; expected an object", options.described()));
  }
  let capture = options.field("captureContent");
  if !capture.is_undefined() && capture.as_bool().is_none() {
    return wrong(format!("captureContent is {}; expected true or false", capture.described()));
  }
  let name = options.field("tracerName");
  if !name.is_undefined() && name.as_str().is_none_or(str::is_empty) {
    return wrong(format!("tracerName is {}; expected a non-empty string", name.described()));
  }
  let provider = options.field("tracerProvider");
  if !provider.is_undefined() && (!provider.is_record() || !provider.lacking(&["getTracer"]).is_empty()) {
    return wrong(format!("tracerProvider is {}; expected an object with getTracer", provider.described()));
  }
  Ok(())
}

/// Whether `@opentelemetry/api`, an optional peer dependency, could be loaded (O2): `false` when it could not.
fn otel_api(loaded: Sketch) -> Result<(), ConfigError> {
  if loaded.as_bool() != Some(false) {
    return Ok(());
  }
  fail(
    "OTEL_API_MISSING",
    "createOtelTraceExporter needs the package @opentelemetry/api, which could not be loaded.".to_owned(),
    "Install it beside @noetic-tools/core (npm install @opentelemetry/api), with an SDK such as @opentelemetry/sdk-node to register a tracer provider.",
  )
}

fn checkpoint_store(options: Sketch) -> Result<(), ConfigError> {
  let hint = "Pass { storage }: a StorageAdapter (get, set, delete, list), such as createSqliteStorage(path).";
  if !options.is_object() {
    let message = format!("createCheckpointStore options are {}; expected {{ storage }}.", options.described());
    return fail("INVALID_CHECKPOINT_STORE", message, hint);
  }
  let missing = options.field("storage").lacking(&STORAGE_METHODS);
  if missing.is_empty() {
    return Ok(());
  }
  let plural = if missing.len() > 1 { "s" } else { "" };
  let message = format!("createCheckpointStore storage has no {} method{plural}.", missing.join(", "));
  fail("INVALID_CHECKPOINT_STORE", message, hint)
}

fn checkpoint_snapshot_id(id: Sketch) -> Result<(), ConfigError> {
  if id.as_str().is_some() {
    return Ok(());
  }
  let message = format!("CheckpointStore.save: the snapshot's executionId is {}; expected a string.", id.described());
  fail(
    "INVALID_CHECKPOINT_SNAPSHOT",
    message,
    "Save what harness.checkpoint(ctx) builds, or an object CheckpointSnapshotSchema accepts.",
  )
}

fn thread_id(thread: Sketch, call: &str, hint: &str) -> Result<(), ConfigError> {
  if thread.as_str().is_some() {
    return Ok(());
  }
  fail("INVALID_THREAD_ID", format!("{call}: threadId must be a string, got {}.", thread.type_of()), hint)
}

fn seed(thread: Sketch, items: Sketch) -> Result<(), ConfigError> {
  thread_id(thread, "seedSessionHistory", "Pass the thread to seed.")?;
  if items.is_array() {
    return Ok(());
  }
  let message = "seedSessionHistory(threadId, items): items must be an array of items.".to_owned();
  fail("INVALID_SEED_ITEMS", message, "Pass items such as createMessage(text, role).")
}

/// `what` must be an object with every one of `names` a function.
fn has_functions(what: &str, value: Sketch, names: &[&str]) -> Result<(), ConfigError> {
  let missing = value.lacking(names);
  if missing.is_empty() {
    return Ok(());
  }
  let problem = if value.is_object() { format!("missing {}", missing.join(", ")) } else { value.described() };
  let hint = format!("Pass an object with {} (an AgentHarness has them all).", names.join(", "));
  fail("INVALID_RUNNABLE_OPTIONS", format!("{what} is {problem}."), &hint)
}

fn runnable_loop(options: Sketch) -> Result<(), ConfigError> {
  if !options.is_object() {
    let hint = "Pass { harness, threadId, signal, priorItems?, initialMessage?, afterFirstTurn? }.";
    return fail("INVALID_RUNNABLE_OPTIONS", format!("runnableLoop options are {}.", options.described()), hint);
  }
  has_functions("runnableLoop harness", options.field("harness"), &RUNNABLE_HARNESS)?;
  has_functions("runnableLoop signal", options.field("signal"), &SIGNAL)?;
  let thread = options.field("threadId");
  if thread.as_str().is_some() {
    return Ok(());
  }
  let message = format!("runnableLoop threadId is {}; expected a string.", thread.described());
  fail("INVALID_RUNNABLE_OPTIONS", message, "Name the session the runner drives.")
}

fn stall_nudge(options: Sketch) -> Result<(), ConfigError> {
  has_functions("createStallNudgeHook options", options, &STALL_HOOKS)?;
  has_functions("createStallNudgeHook harness", options.field("harness"), &RUNNABLE_HARNESS[1..])
}

fn nudge_id(id: Sketch) -> Result<(), ConfigError> {
  if id.as_str().is_some() {
    return Ok(());
  }
  let hint = "Pass { id, text? }: a unique id tells re-spawns apart in the log.";
  fail("INVALID_NUDGE_MESSAGE", format!("createNudgeMessage id is {}; expected a string.", id.described()), hint)
}

fn model_request(request: Sketch) -> Result<(), ConfigError> {
  let hint = "Pass { model: 'provider/model', items: Item[], instructions?, params? }.";
  if !request.is_record() {
    return fail(
      "INVALID_MODEL_REQUEST",
      format!("callModel(request) is {}; expected an object.", request.described()),
      hint,
    );
  }
  let items = request.field("items");
  if items.is_nullish() || items.is_array() {
    return Ok(());
  }
  let message = format!("callModel request.items is {}; expected an array of items.", items.described());
  fail("INVALID_MODEL_REQUEST", message, hint)
}

fn abort_reason(reason: Sketch) -> Result<(), ConfigError> {
  if reason.is_undefined() || reason.as_str().is_some() {
    return Ok(());
  }
  let message = format!("ctx.abort(reason): reason is {}; expected a string.", reason.described());
  fail("INVALID_ABORT_REASON", message, "Pass a string such as 'user cancelled', or nothing.")
}

/// A session call's `{ threadId }` (`call` names it in the message): none or null is the default session.
fn session_scope(call: Sketch, thread: Sketch) -> Result<(), ConfigError> {
  if thread.is_nullish() {
    return Ok(());
  }
  let hint = "Pass a string threadId, or leave it out for the default session.";
  thread_id(thread, call.as_str().unwrap_or("session"), hint)
}

/// A `memory` option (`call` names where it was given), as upstream types it: none, an array of layers, or the
/// `{ layers }` that `memory([...])` returns.
fn memory_option(call: Sketch, memory: Sketch) -> Result<(), ConfigError> {
  if memory.is_nullish() || memory.is_array() || memory.field("layers").is_array() {
    return Ok(());
  }
  let layer_id = memory.field("id").as_str().filter(|_| memory.is_record());
  let given = match (layer_id, memory.field("layers")) {
    (Some(id), _) => format!("a single layer object (id '{id}')"),
    (None, layers) if memory.is_record() && !layers.is_undefined() => format!("{{ layers: {} }}", layers.described()),
    _ => memory.described(),
  };
  let message =
    format!("{}: memory is {given}; expected an array of memory layers.", call.as_str().unwrap_or("memory"));
  fail("INVALID_MEMORY_CONFIG", message, "Pass `memory: [layer]` or `memory: memory([layer])`.")
}

const DETACHED_HINT: &str = "Call harness.detachedSpawn(step, input, ctx, { threadId?, resourceId?, cwdInit?, subprocess? }) with a context of this harness.";

/// A value given where a context of this harness was wanted: JS found it is not one (identity is JS's to know);
/// `call` names the place, and so the words.
fn foreign_context(call: Sketch, given: Sketch) -> Result<(), ConfigError> {
  let what = given.described();
  let (code, message, hint) = match call.as_str().unwrap_or_default() {
    "detachedSpawn" => (
      "INVALID_CONTEXT",
      format!("detachedSpawn(step, input, parentCtx): parentCtx is {what}, not a context of this harness."),
      DETACHED_HINT,
    ),
    "cancel" => (
      "INVALID_CONTEXT",
      format!("harness.cancel(ctx): ctx is {what}, not a context of this harness."),
      "Pass a context this harness made or gave a step.",
    ),
    "createContext" => (
      "INVALID_CONTEXT_OPTIONS",
      format!("createContext parent is {what}, not a context of this harness."),
      "Pass a context this harness made or gave a step, or leave parent out.",
    ),
    "run" => (
      "INVALID_RUN_OPTIONS",
      "harness.run was given a context made by another harness.".to_owned(),
      "Pass a context from this harness (harness.createContext()), { threadId?, resourceId?, memory? }, or nothing.",
    ),
    "execute" => (
      "INVALID_CONTEXT",
      "execute(step, input, ctx) needs the ctx a step or tool was given.".to_owned(),
      "Call it from inside a step.run or a tool with its ctx, or use harness.run(step, input) at the top level.",
    ),
    "callModel" => (
      "INVALID_MODEL_REQUEST",
      format!("callModel request.ctx is {what}; a request with tools needs the context they run in."),
      "Pass the ctx your step was given (or one from harness.createContext()) along with tools.",
    ),
    phase => (
      "INVALID_CONTEXT",
      format!("ctx.harness.{phase} was given {what}, not a context of this harness."),
      "Pass the ctx a step, tool or hook of this harness was given, or one from harness.createContext().",
    ),
  };
  fail(code, message, hint)
}

/// A reattached handle's step (`stepId`, of `executionId`) that no builder of this process registered.
fn unregistered_step(step_id: Sketch, execution_id: Sketch) -> Result<(), ConfigError> {
  let (step, execution) = (step_id.js_string(), execution_id.js_string());
  fail(
    "STEP_NOT_REGISTERED",
    format!(
      "Subprocess handle for step '{step}' (execution {execution}) cannot be replayed: no step with that id is registered in this process."
    ),
    "Build the step (its builder registers it) before reattaching; the manifest is kept, so a later reattach can still run it.",
  )
}

/// `detachedSpawn`'s step and overrides (its context is checked first, as a foreign one).
fn detached_spawn(step: Sketch, overrides: Sketch) -> Result<(), ConfigError> {
  if !step.is_object() || step.field("kind").as_str().is_none() {
    let message = format!("detachedSpawn(step, input, parentCtx): step is {}, not a step.", step.described());
    return fail(
      "INVALID_STEP",
      message,
      "Pass a step built with step.run, step.llm, loop, spawn, fork or the other builders.",
    );
  }
  if !overrides.is_nullish() && !overrides.is_record() {
    let message = format!("detachedSpawn overrides are {}; expected an object.", overrides.described());
    return fail("INVALID_DETACHED_OPTIONS", message, DETACHED_HINT);
  }
  Ok(())
}

/// The items a `ctx.harness` layer call (`phase`) was given.
fn layer_call_items(phase: Sketch, items: Sketch) -> Result<(), ConfigError> {
  if items.is_array() {
    return Ok(());
  }
  let phase = phase.as_str().unwrap_or_default();
  let message = format!("ctx.harness.{phase} was given {} as items; expected an array.", items.described());
  fail("INVALID_ITEMS", message, "Pass an array of items.")
}

#[cfg(test)]
mod tests {
  use serde_json::{Value, json};

  use super::*;

  fn refused(call: &str, args: Value) -> ConfigError {
    check(call, Sketch::of(&args)).expect_err("the arguments are refused")
  }

  #[test]
  fn an_abort_reason_and_a_session_thread_are_strings() {
    assert_eq!(refused("abort", json!([42])).message, "ctx.abort(reason): reason is 42; expected a string.");
    assert!(check("abort", Sketch::of(&json!([]))).is_ok());
    assert_eq!(
      refused("sessionScope", json!(["getStatus", 7])).message,
      "getStatus: threadId must be a string, got number."
    );
    assert!(check("sessionScope", Sketch::of(&json!(["getStatus", null]))).is_ok());
  }

  #[test]
  fn a_memory_option_is_layers_or_the_memory_wrapper() {
    for given in [json!(["AgentHarness", [{ "id": "a" }]]), json!(["execute", { "layers": [] }]), json!(["run", null])]
    {
      assert!(check("memoryOption", Sketch::of(&given)).is_ok());
    }
    let message = |memory: Value| refused("memoryOption", json!(["execute", memory])).message;
    assert_eq!(
      message(json!({ "id": "notes", "slot": 1 })),
      "execute: memory is a single layer object (id 'notes'); expected an array of memory layers."
    );
    assert_eq!(
      message(json!({ "layers": "x" })),
      "execute: memory is { layers: \"x\" }; expected an array of memory layers."
    );
    assert_eq!(message(json!(5)), "execute: memory is 5; expected an array of memory layers.");
  }

  #[test]
  fn a_foreign_context_is_named_in_the_words_of_its_call() {
    let context = json!({ "$sketch": "a ContextImpl", "type": "object", "methods": [] });
    let refusal = |call: &str| refused("foreignContext", json!([call, context]));
    assert_eq!(refusal("cancel").message, "harness.cancel(ctx): ctx is a ContextImpl, not a context of this harness.");
    assert_eq!(refusal("createContext").code, "INVALID_CONTEXT_OPTIONS");
    assert_eq!(refusal("callModel").code, "INVALID_MODEL_REQUEST");
    assert_eq!(
      refusal("recallLayers").message,
      "ctx.harness.recallLayers was given a ContextImpl, not a context of this harness."
    );
    assert_eq!(refused("detachedSpawn", json!([[], null])).code, "INVALID_STEP");
    assert_eq!(refused("detachedSpawn", json!([{ "kind": "run" }, "x"])).code, "INVALID_DETACHED_OPTIONS");
    assert!(check("detachedSpawn", Sketch::of(&json!([{ "kind": "run" }, null]))).is_ok());
    assert_eq!(
      refused("layerCallItems", json!(["storeLayers", 3])).message,
      "ctx.harness.storeLayers was given 3 as items; expected an array."
    );
    assert_eq!(refused("foreignContext", json!(["run", context])).code, "INVALID_RUN_OPTIONS");
    assert_eq!(refused("foreignStorage", json!([])).code, "UNSUPPORTED_STORAGE");
    assert_eq!(
      refused("unregisteredStep", json!(["fetch", "e1"])).message,
      "Subprocess handle for step 'fetch' (execution e1) cannot be replayed: no step with that id is registered in this process."
    );
    assert_eq!(
      refused("layerCallItems", json!(["storeLayers", 3])).message,
      "ctx.harness.storeLayers was given 3 as items; expected an array."
    );
  }

  fn function() -> Value {
    json!({ "$sketch": "a function", "type": "function" })
  }

  #[test]
  fn storage_factories_need_a_path_or_url_and_object_options() {
    assert_eq!(refused("createSqliteStorage", json!([""])).message, "createSqliteStorage(path) needs a file path.");
    assert!(check("createSqliteStorage", Sketch::of(&json!(["./a.db"]))).is_ok());
    let error = refused("createPostgresStorage", json!(["postgres://x", []]));
    assert_eq!(error.message, "createPostgresStorage: the options are an array; expected an object.");
    assert!(check("createPostgresStorage", Sketch::of(&json!(["postgres://x"]))).is_ok());
  }

  #[test]
  fn otel_options_are_an_object_of_a_boolean_a_provider_and_a_name() {
    assert!(check("createOtelTraceExporter", Sketch::of(&json!([{}]))).is_ok());
    let provider =
      json!({ "$sketch": "a BasicTracerProvider", "type": "object", "methods": ["getTracer"], "fields": {} });
    assert!(
      check("createOtelTraceExporter", Sketch::of(&json!([{ "tracerProvider": provider, "captureContent": true }])))
        .is_ok()
    );
    let error = refused("createOtelTraceExporter", json!([{ "captureContent": "yes" }]));
    assert_eq!(
      (error.code.as_str(), error.message.as_str()),
      ("INVALID_OTEL_OPTIONS", "createOtelTraceExporter: captureContent is \"yes\"; expected true or false.")
    );
    let error = refused("createOtelTraceExporter", json!([{ "tracerProvider": {} }]));
    assert_eq!(
      error.message,
      "createOtelTraceExporter: tracerProvider is an object; expected an object with getTracer."
    );
    assert!(check("createOtelTraceExporter", Sketch::of(&json!([null]))).is_err());
    let error = refused("createOtelTraceExporter", json!([{}, false]));
    assert_eq!(error.code, "OTEL_API_MISSING");
    assert!(error.hint.contains("npm install @opentelemetry/api"));
  }

  #[test]
  fn a_scoped_storage_needs_an_adapter_and_string_keys() {
    let adapter = json!({ "get": function(), "set": function(), "delete": function(), "list": function() });
    assert!(check("createScopedStorage", Sketch::of(&json!([adapter, "layer", "thread"]))).is_ok());
    let error = refused("createScopedStorage", json!([adapter, "layer", 7]));
    assert_eq!(error.message, "createScopedStorage: scopeKey is 7; expected a string.");
    let instance = json!({ "$sketch": "a Store", "type": "object", "methods": ["get", "set", "list"], "fields": {} });
    assert_eq!(
      refused("createScopedStorage", json!([instance, "l", "s"])).message,
      "createScopedStorage: storage is a Store; expected a StorageAdapter."
    );
  }

  #[test]
  fn a_checkpoint_store_names_the_missing_methods() {
    let error = refused("createCheckpointStore", json!([{ "storage": { "get": function(), "set": function() } }]));
    assert_eq!(error.message, "createCheckpointStore storage has no delete, list methods.");
    assert_eq!(
      refused("createCheckpointStore", json!([null])).message,
      "createCheckpointStore options are null; expected { storage }."
    );
  }

  #[test]
  fn session_calls_name_the_type_of_a_bad_thread_id() {
    assert_eq!(refused("evictSession", json!([3])).message, "evictSession: threadId must be a string, got number.");
    let undefined = json!({ "$sketch": "undefined", "type": "undefined" });
    assert_eq!(
      refused("seedSessionHistory", json!([undefined, []])).message,
      "seedSessionHistory: threadId must be a string, got undefined."
    );
    let error = refused("seedSessionHistory", json!(["t", "hello"]));
    assert_eq!(error.code, "INVALID_SEED_ITEMS");
    let long = json!({ "$sketch": "an array", "type": "object" });
    assert!(check("seedSessionHistory", Sketch::of(&json!(["t", long]))).is_ok());
  }

  #[test]
  fn a_runnable_loop_needs_a_harness_a_signal_and_a_thread() {
    let harness = json!({ "$sketch": "an AgentHarness", "type": "object", "methods": ["execute"], "fields": {} });
    let error = refused("runnableLoop", json!([{ "harness": harness }]));
    assert_eq!(error.message, "runnableLoop harness is missing seedSessionHistory, getAgentResponse.");
    let harness = json!({ "$sketch": "an AgentHarness", "type": "object", "methods": RUNNABLE_HARNESS, "fields": {} });
    let signal = json!({ "resolve": function(), "reject": function() });
    let error = refused("runnableLoop", json!([{ "harness": harness, "signal": signal, "threadId": 1 }]));
    assert_eq!(error.message, "runnableLoop threadId is 1; expected a string.");
    assert!(
      check("runnableLoop", Sketch::of(&json!([{ "harness": harness, "signal": signal, "threadId": "t" }]))).is_ok()
    );
    assert_eq!(refused("runnableLoop", json!([{ "harness": 5 }])).message, "runnableLoop harness is 5.");
    let hooks = json!({ "hasPendingExternal": function(), "onStall": function(), "buildStalledOutcome": function() });
    let error = refused("createStallNudgeHook", json!([hooks]));
    assert_eq!(error.message, "createStallNudgeHook harness is undefined.");
    assert_eq!(error.hint, "Pass an object with execute, getAgentResponse (an AgentHarness has them all).");
  }

  #[test]
  fn a_model_request_is_an_object_whose_items_are_an_array() {
    assert_eq!(refused("callModel", json!([[]])).message, "callModel(request) is an array; expected an object.");
    assert_eq!(
      refused("callModel", json!([{ "items": "hi" }])).message,
      "callModel request.items is \"hi\"; expected an array of items."
    );
    assert!(check("callModel", Sketch::of(&json!([{ "model": "m" }]))).is_ok());
  }
}
