//! The options users pass to `new AgentHarness(...)`: each one applied or refused with a [`ConfigError`] that names
//! what was passed, never dropped silently or left to fail later inside a run.
//!
//! JS sends the options as a [`Sketch`] (only the keys [`OPTION_KEYS`] lists) and receives [`checked`]'s answer:
//! the settings the native harness is built with, defaults filled in.

use crate::memory::cache_anchor::CacheConfig;
use serde_json::{Map, Value, json};

use super::session::DeliveryMode;
use crate::ConfigError;
use crate::js_sketch::{Sketch, quoted_list};
use crate::steps::builders::{check_projection, fail};
use crate::storage::STORAGE_METHODS;

/// The options the checks read. The others (`memory`, `hooks`, `params`, the initial step) are converted where the
/// harness registers them.
pub const OPTION_KEYS: &[&str] = &[
  "storage",
  "fs",
  "shell",
  "tokenizer",
  "itemSchemas",
  "strictItemSchemas",
  "projection",
  "tools",
  "subprocess",
  "traceExporter",
  "layerStateStore",
  "checkpointStore",
  "persistSessions",
  "sessionIdleMs",
  "storageTimeoutMs",
  "streamIdleTimeoutMs",
  "llm",
  "_testCallModel",
  "forceAtomicRecall",
  "defaultDeliveryMode",
  "contextCache",
];

/// Every method name a check below asks about, so that JS looks up only these on an adapter.
pub const METHOD_NAMES: &[&str] = &[
  "get",
  "set",
  "delete",
  "list",
  "exec",
  "spawn",
  "cleanup",
  "export",
  "save",
  "load",
  "clear",
  "safeParse",
  "readFile",
  "readFileText",
  "writeFile",
  "writeFileBytes",
  "appendFile",
  "mkdir",
  "rename",
  "rm",
  "access",
  "stat",
  "lstat",
  "readdir",
];

const FS_METHODS: &[&str] = &[
  "readFile",
  "readFileText",
  "writeFile",
  "writeFileBytes",
  "appendFile",
  "mkdir",
  "rename",
  "rm",
  "access",
  "stat",
  "lstat",
  "readdir",
];
const TOKENIZERS: &[&str] = &["estimate", "o200k", "cl100k"];
const SCHEMA_LISTS: &[&str] = &["items", "developerMessages", "toolCalls", "toolResults"];

/// How long a persisted session stays in memory after its last turn: ten minutes.
const DEFAULT_SESSION_IDLE_MS: f64 = 600_000.0;

/// The environment variables the model choice reads (JS passes them: the process's environment as JS sees it).
#[derive(Default)]
pub struct ModelEnv<'a> {
  pub api_key: Option<&'a str>,
  pub base_url: Option<&'a str>,
}

/// The harness's settings from its options, as the native harness's config JSON carries them; an error names the
/// first option that is wrong.
pub fn checked(options: &Value, env: &ModelEnv) -> Result<Value, ConfigError> {
  let opts = Sketch::of(options);
  if !opts.is_record() {
    return Err(ConfigError::new(
      "INVALID_HARNESS_OPTIONS",
      format!("The AgentHarness options is {}; expected an object.", opts.described()),
      "Pass { name, params, ... }, e.g. new AgentHarness({ name: 'agent', params: {} }).",
    ));
  }
  check_storage(opts.field("storage"))?;
  check_adapter(
    opts.field("fs"),
    Adapter {
      option: "fs",
      kind: "an FsAdapter",
      methods: FS_METHODS,
      code: "INVALID_FS_ADAPTER",
      hint: &format!(
        "Pass createInMemoryFsAdapter() or an object with {} methods, or leave `fs` out.",
        FS_METHODS.join(", ")
      ),
    },
  )?;
  check_adapter(
    opts.field("shell"),
    Adapter {
      option: "shell",
      kind: "a ShellAdapter",
      methods: &["exec"],
      code: "INVALID_SHELL_ADAPTER",
      hint: "Pass createInMemoryShellAdapter() or an object with an exec(command, options) method, or leave `shell` out.",
    },
  )?;
  let tokenizer = check_tokenizer(opts.field("tokenizer"))?;
  let strict = check_item_schemas(opts.field("itemSchemas"), opts.field("strictItemSchemas"))?;
  check_projection(opts.field("projection"), "AgentHarness")?;
  check_tools(opts.field("tools"))?;
  check_subprocess(opts.field("subprocess"))?;
  check_trace_exporter(opts.field("traceExporter"))?;
  check_layer_state_store(opts.field("layerStateStore"))?;
  let (persist, idle) = check_sessions(opts.field("persistSessions"), opts.field("sessionIdleMs"))?;
  let model = model_of(opts, env)?;
  let storage_timeout = storage_timeout(opts.field("storageTimeoutMs"))?;
  let delivery_mode = check_delivery_mode(opts.field("defaultDeliveryMode"))?;
  check_checkpoint_store(opts.field("checkpointStore"))?;
  let context_cache = CacheConfig::from_option(opts.field("contextCache"))?;

  let mut out = Map::new();
  out.insert("model".into(), model);
  out.insert("persistSessions".into(), persist.into());
  if let Some(idle) = idle {
    out.insert("sessionIdleMs".into(), json!(idle));
  }
  if let Some(timeout) = storage_timeout {
    out.insert("storageTimeoutMs".into(), timeout);
  }
  out.insert("strictItemSchemas".into(), strict.into());
  if let Some(tokenizer) = tokenizer {
    out.insert("tokenizer".into(), tokenizer.into());
  }
  // Truthy, as upstream tests it.
  out.insert("forceAtomicRecall".into(), truthy(opts.field("forceAtomicRecall")).into());
  out.insert("deliveryMode".into(), delivery_mode.into());
  // Only when anchoring is on: absent, the harness assembles requests exactly as 1.0.0 does.
  if let Some(cache) = context_cache {
    out.insert("contextCache".into(), cache.to_json());
  }
  Ok(Value::Object(out))
}

/// `typeof value === 'object' || typeof value === 'function'`, null aside.
fn is_object_or_function(value: Sketch) -> bool {
  value.is_record() || value.is_function()
}

/// JS truthiness.
fn truthy(value: Sketch) -> bool {
  if value.is_nullish() {
    return false;
  }
  if let Some(b) = value.as_bool() {
    return b;
  }
  if let Some(n) = value.as_number() {
    return n != 0.0 && !n.is_nan();
  }
  value.as_str() != Some("")
}

/// Upstream's StorageAdapter contract; null and undefined mean the default in-memory storage.
fn check_storage(storage: Sketch) -> Result<(), ConfigError> {
  check_adapter(
    storage,
    Adapter {
      option: "storage",
      kind: "a storage adapter",
      methods: &STORAGE_METHODS,
      code: "INVALID_STORAGE",
      hint: "Pass createInMemoryStorage(), createSqliteStorage(path), createPostgresStorage(url), or an object with get, set, delete and list(prefix) methods.",
    },
  )
}

struct Adapter<'a> {
  option: &'a str,
  kind: &'a str,
  methods: &'a [&'a str],
  code: &'a str,
  hint: &'a str,
}

/// An adapter must have every method of its interface: hooks, steps and tools call them later, where a missing one
/// would fail far from the mistake. null and undefined mean the default.
fn check_adapter(adapter: Sketch, spec: Adapter) -> Result<(), ConfigError> {
  if adapter.is_nullish() {
    return Ok(());
  }
  let Adapter { option, kind, methods, code, hint } = spec;
  if !is_object_or_function(adapter) {
    return fail(code, format!("AgentHarness {option} is {}; expected {kind}.", adapter.described()), hint);
  }
  let missing = adapter.lacking(methods);
  if missing.is_empty() {
    return Ok(());
  }
  let (list, s) = quoted_list(&missing);
  fail(code, format!("AgentHarness {option} has no {list} method{s}."), hint)
}

/// Upstream has no tokenizer option: 'estimate' is its count; 'o200k' and 'cl100k' are real BPE counts.
fn check_tokenizer<'a>(tokenizer: Sketch<'a>) -> Result<Option<&'a str>, ConfigError> {
  if tokenizer.is_undefined() {
    return Ok(None);
  }
  match tokenizer.as_str() {
    Some("estimate") => Ok(None),
    Some(name) if TOKENIZERS.contains(&name) => Ok(Some(name)),
    _ => fail(
      "INVALID_TOKENIZER",
      format!("AgentHarness tokenizer is {}; expected one of {}.", tokenizer.described(), quoted_list(TOKENIZERS).0),
      "Leave `tokenizer` out for upstream's estimate, or pass 'o200k' (GPT-4o) or 'cl100k' (GPT-4) for real token counts.",
    ),
  }
}

/// `itemSchemas` lists zod schemas per category; `strictItemSchemas: false` admits items of any type. Answers
/// whether the harness is strict (the default).
fn check_item_schemas(item_schemas: Sketch, strict: Sketch) -> Result<bool, ConfigError> {
  const CODE: &str = "INVALID_ITEM_SCHEMAS";
  let hint = "Pass { items?, developerMessages?, toolCalls?, toolResults? }, each an array of zod schemas, e.g. { items: [z.object({ type: z.literal('acme:note') })] }.";
  if !strict.is_undefined() && strict.as_bool().is_none() {
    return fail(
      CODE,
      format!("AgentHarness strictItemSchemas is {}; expected true or false.", strict.described()),
      hint,
    );
  }
  let strict = strict.as_bool().unwrap_or(true);
  if item_schemas.is_nullish() {
    return Ok(strict);
  }
  if !item_schemas.is_record() {
    return fail(CODE, format!("AgentHarness itemSchemas is {}; expected an object.", item_schemas.described()), hint);
  }
  for list in SCHEMA_LISTS {
    let schemas = item_schemas.field(list);
    if schemas.is_nullish() {
      continue;
    }
    let Some(schemas) = schemas.as_array() else {
      return fail(
        CODE,
        format!("AgentHarness itemSchemas.{list} is {}; expected an array of zod schemas.", schemas.described()),
        hint,
      );
    };
    if let Some((i, bad)) = schemas.iter().enumerate().find(|(_, schema)| !schema.lacking(&["safeParse"]).is_empty()) {
      return fail(
        CODE,
        format!("AgentHarness itemSchemas.{list}[{i}] is {}; expected a zod schema.", bad.described()),
        hint,
      );
    }
  }
  Ok(strict)
}

/// The harness's own tools, offered in every session: each needs a name and an execute function.
fn check_tools(tools: Sketch) -> Result<(), ConfigError> {
  const CODE: &str = "INVALID_TOOLS";
  let hint = "Pass tools made with tool({ name, description, input, execute }).";
  if tools.is_nullish() {
    return Ok(());
  }
  let Some(tools) = tools.as_array() else {
    return fail(CODE, format!("AgentHarness tools is {}; expected an array of tools.", tools.described()), hint);
  };
  for (i, tool) in tools.iter().enumerate() {
    if !tool.is_record() || tool.field("name").as_str().is_none() || !tool.field("execute").is_function() {
      return fail(
        CODE,
        format!("AgentHarness tools[{i}] is not a tool (it needs a string name and an execute function)."),
        hint,
      );
    }
  }
  Ok(())
}

fn check_subprocess(adapter: Sketch) -> Result<(), ConfigError> {
  let hint = "Pass createInMemorySubprocessAdapter() or an object implementing SubprocessAdapter (spawn, get, stop, pause, resume, isAlive, reattach, listLive).";
  check_adapter(
    adapter,
    Adapter {
      option: "subprocess",
      kind: "a subprocess adapter",
      methods: &["spawn", "get"],
      code: "INVALID_SUBPROCESS_ADAPTER",
      hint,
    },
  )
}

/// Spans are handed to `export` while runs go on; an exporter without one would fail at the first hook.
fn check_trace_exporter(exporter: Sketch) -> Result<(), ConfigError> {
  if exporter.is_nullish() || exporter.lacking(&["export"]).is_empty() {
    return Ok(());
  }
  fail(
    "INVALID_TRACE_EXPORTER",
    format!("AgentHarness traceExporter is {}; expected an object with an export(spans) method.", exporter.described()),
    "Pass new InMemoryExporter(), new NoopExporter(), or your own { export(spans) { ... } }.",
  )
}

/// The harness keeps its JS layers' state in the store, calling these on every hook; a missing one would fail there.
fn check_layer_state_store(store: Sketch) -> Result<(), ConfigError> {
  let hint =
    "Pass createLayerStateStore() from '@noetic-tools/core/unstable', or an object with get, set and cleanup methods.";
  if !store.is_nullish() && !store.is_record() {
    return fail(
      "INVALID_LAYER_STATE_STORE",
      format!("AgentHarness layerStateStore is {}; expected a LayerStateStore.", store.described()),
      hint,
    );
  }
  check_adapter(
    store,
    Adapter {
      option: "layerStateStore",
      kind: "a LayerStateStore",
      methods: &["get", "set", "cleanup"],
      code: "INVALID_LAYER_STATE_STORE",
      hint,
    },
  )
}

fn check_checkpoint_store(store: Sketch) -> Result<(), ConfigError> {
  if store.is_nullish() {
    return Ok(());
  }
  let missing = store.lacking(&["save", "load", "list", "clear"]);
  if missing.is_empty() {
    return Ok(());
  }
  fail(
    "INVALID_CHECKPOINT_STORE",
    format!(
      "AgentHarness checkpointStore has no {} method{}.",
      missing.join(", "),
      if missing.len() > 1 { "s" } else { "" }
    ),
    "Pass createCheckpointStore({ storage }) or an object with save, load, list and clear.",
  )
}

/// persistSessions keeps each thread's history in the harness's storage; sessionIdleMs drops idle ones from
/// memory. Answers whether sessions persist and, when they do, after how long idle ones leave memory (none for
/// Infinity).
fn check_sessions(persist: Sketch, idle: Sketch) -> Result<(bool, Option<f64>), ConfigError> {
  const CODE: &str = "INVALID_SESSION_OPTIONS";
  let hint = "Pass persistSessions: true to keep histories in the storage, and sessionIdleMs: a positive number of milliseconds (default 600000) or Infinity to keep idle sessions in memory.";
  if !persist.is_undefined() && persist.as_bool().is_none() {
    return fail(
      CODE,
      format!("AgentHarness persistSessions is {}; expected true or false.", persist.described()),
      hint,
    );
  }
  let idle_ms =
    if idle.is_undefined() { Some(DEFAULT_SESSION_IDLE_MS) } else { idle.as_number().filter(|ms| *ms > 0.0) };
  let Some(idle_ms) = idle_ms else {
    return fail(
      CODE,
      format!("AgentHarness sessionIdleMs is {}; expected a positive number of milliseconds.", idle.described()),
      hint,
    );
  };
  let persist = persist.as_bool() == Some(true);
  Ok((persist, (persist && idle_ms.is_finite()).then_some(idle_ms)))
}

/// As upstream's createClient: the OpenRouter key is `llm.apiKey`, else OPENROUTER_API_KEY, and without one there is
/// no provider (an LLM step then fails with NO_LLM_PROVIDER).
fn model_of(opts: Sketch, env: &ModelEnv) -> Result<Value, ConfigError> {
  let stream_idle = time_limit(
    opts.field("streamIdleTimeoutMs"),
    "INVALID_STREAM_IDLE_TIMEOUT",
    "streamIdleTimeoutMs",
    "Pass milliseconds, such as 120000 (the default); 0 or a negative number disables the idle watchdog.",
  )?;
  if opts.field("_testCallModel").is_function() {
    return Ok(json!({ "kind": "host" }));
  }
  let llm = opts.field("llm");
  // The script's turns are data the harness reads from its config as JSON (`script`), not from the sketch.
  if llm.field("provider").as_str() == Some("scripted") {
    return Ok(json!({ "kind": "scripted" }));
  }
  let given = |key: &str, fallback: Option<&str>| {
    let value = llm.field(key);
    if value.is_nullish() { fallback.map(str::to_owned) } else { value.as_str().map(str::to_owned) }
  };
  let Some(api_key) = given("apiKey", env.api_key).filter(|key| !key.is_empty()) else {
    return Ok(json!({ "kind": "none" }));
  };
  let timeout = time_limit(
    llm.field("timeoutMs"),
    "INVALID_LLM_TIMEOUT",
    "llm.timeoutMs",
    "Pass milliseconds for the whole request, such as 600000; leave it unset (or 0) for no total limit.",
  )?;
  let mut model = json!({ "kind": "openrouter", "apiKey": api_key, "cache": truthy(llm.field("cache")) });
  if let Some(base_url) = given("baseUrl", env.base_url) {
    model["baseUrl"] = base_url.into();
  }
  if let Some(ms) = stream_idle {
    model["streamIdleTimeoutMs"] = ms;
  }
  if let Some(ms) = timeout {
    model["timeoutMs"] = ms;
  }
  Ok(model)
}

/// A time limit in milliseconds, unset when null or undefined. Any number is one (0, a negative number or Infinity
/// turns the limit off); NaN or another type is a mistake worth saying rather than a limit silently ignored. JSON
/// has no Infinity: it goes as its string form.
fn time_limit(value: Sketch, code: &str, name: &str, hint: &str) -> Result<Option<Value>, ConfigError> {
  if value.is_nullish() {
    return Ok(None);
  }
  match value.as_number() {
    Some(ms) if ms.is_finite() => Ok(Some(json!(ms))),
    Some(ms) if !ms.is_nan() => Ok(Some(crate::js_number(ms).into())),
    _ => {
      let shown = if value.is_record() { "an object".to_owned() } else { value.described() };
      fail(code, format!("{name} must be a number of milliseconds, got {shown}."), hint)
    }
  }
}

/// How long a call to a storage adapter may take (an extension: upstream waits forever). Infinity waits forever.
fn storage_timeout(ms: Sketch) -> Result<Option<Value>, ConfigError> {
  if ms.is_undefined() {
    return Ok(None);
  }
  match ms.as_number() {
    Some(n) if n > 0.0 => Ok(Some(if n.is_finite() { json!(n) } else { json!("Infinity") })),
    number => fail(
      "INVALID_STORAGE_TIMEOUT",
      format!(
        "storageTimeoutMs must be a positive number of milliseconds, got {}.",
        if number.is_some() { ms.described() } else { ms.type_of().to_owned() }
      ),
      "Leave it unset for the default (30000), or pass Infinity to wait for the storage adapter forever.",
    ),
  }
}

/// `defaultDeliveryMode`, 'next-turn' when absent.
fn check_delivery_mode<'a>(mode: Sketch<'a>) -> Result<&'a str, ConfigError> {
  if mode.is_nullish() {
    return Ok("next-turn");
  }
  match mode.as_str() {
    Some(name) if DeliveryMode::parse(name).is_some() => Ok(name),
    _ => fail(
      "INVALID_DELIVERY_MODE",
      format!("AgentHarness defaultDeliveryMode {} is not a delivery mode.", mode.described()),
      &DeliveryMode::hint(),
    ),
  }
}

/// The options of a call that takes some (`createContext(options)`, `harness.run(step, input, options)`): an object
/// or nothing, whose ids key layer state (one that is not a string would be dropped).
pub fn check_call_options(call: &str, options: Sketch) -> Result<(), ConfigError> {
  let (code, what, place, hint) = match call {
    "createContext" => (
      "INVALID_CONTEXT_OPTIONS",
      "createContext(options)",
      "createContext",
      "Pass { threadId?, resourceId?, memory?, items?, state?, parent?, cwdInit? } or nothing.",
    ),
    _ => (
      "INVALID_RUN_OPTIONS",
      "harness.run's third argument",
      "harness.run",
      "Pass a context from this harness (harness.createContext()), { threadId?, resourceId?, memory? }, or nothing.",
    ),
  };
  // createContext takes null for none too, as upstream; run only undefined.
  if options.is_undefined() || (call == "createContext" && options.is_nullish()) {
    return Ok(());
  }
  if !options.is_record() {
    return fail(code, format!("{what} is {}; expected an object.", options.described()), hint);
  }
  for field in ["threadId", "resourceId"] {
    let value = options.field(field);
    if !value.is_nullish() && value.as_str().is_none() {
      return fail(code, format!("{place} {field} is {}; expected a string.", value.described()), hint);
    }
  }
  let items = options.field("items");
  if call == "createContext" && !items.is_nullish() && !items.is_array() {
    return fail(
      code,
      format!("createContext items is {}; expected an array of items.", items.described()),
      "Pass `items: [createMessage(text, role), ...]`.",
    );
  }
  Ok(())
}

#[cfg(test)]
mod tests {
  use super::*;

  fn error_of(options: Value) -> ConfigError {
    checked(&options, &ModelEnv::default()).expect_err("the options are refused")
  }

  #[test]
  fn defaults_fill_what_is_left_out() {
    let settings = checked(&json!({}), &ModelEnv::default()).unwrap();
    assert_eq!(settings["model"], json!({ "kind": "none" }));
    assert_eq!(settings["strictItemSchemas"], json!(true));
    assert_eq!(settings["deliveryMode"], json!("next-turn"));
    assert_eq!(settings["persistSessions"], json!(false));
    assert!(settings.get("sessionIdleMs").is_none());
  }

  #[test]
  fn persisted_sessions_leave_memory_after_ten_idle_minutes_unless_infinity() {
    let settings = checked(&json!({ "persistSessions": true }), &ModelEnv::default()).unwrap();
    assert_eq!(settings["sessionIdleMs"], json!(600_000.0));
    let forever = json!({ "persistSessions": true, "sessionIdleMs": { "$sketch": "Infinity", "type": "number" } });
    assert!(checked(&forever, &ModelEnv::default()).unwrap().get("sessionIdleMs").is_none());
  }

  #[test]
  fn the_environment_key_chooses_openrouter() {
    let env = ModelEnv { api_key: Some("k"), base_url: Some("http://x") };
    let settings = checked(&json!({ "llm": { "cache": 1 } }), &env).unwrap();
    assert_eq!(settings["model"]["kind"], json!("openrouter"));
    assert_eq!(settings["model"]["apiKey"], json!("k"));
    assert_eq!(settings["model"]["baseUrl"], json!("http://x"));
    assert_eq!(settings["model"]["cache"], json!(true));
  }

  #[test]
  fn an_adapter_missing_methods_is_named() {
    let error = error_of(json!({ "storage": { "$sketch": "a Store", "type": "object", "methods": ["get"] } }));
    assert_eq!(error.code, "INVALID_STORAGE");
    assert_eq!(error.message, "AgentHarness storage has no 'set', 'delete', 'list' methods.");
    let error = error_of(json!({ "shell": 3 }));
    assert_eq!(error.message, "AgentHarness shell is 3; expected a ShellAdapter.");
  }

  #[test]
  fn call_options_are_an_object_with_string_ids() {
    assert!(check_call_options("createContext", Sketch::of(&Value::Null)).is_ok());
    assert_eq!(check_call_options("run", Sketch::of(&Value::Null)).unwrap_err().code, "INVALID_RUN_OPTIONS");
    let error = check_call_options("createContext", Sketch::of(&json!({ "threadId": 5 }))).unwrap_err();
    assert_eq!(error.message, "createContext threadId is 5; expected a string.");
    let error = check_call_options("createContext", Sketch::of(&json!({ "items": "x" }))).unwrap_err();
    assert_eq!(error.message, "createContext items is \"x\"; expected an array of items.");
    let truncated = json!({ "items": { "$sketch": "an array", "type": "object", "methods": [] } });
    assert!(check_call_options("createContext", Sketch::of(&truncated)).is_ok());
  }

  #[test]
  fn bad_values_are_named_as_js_shows_them() {
    assert_eq!(
      error_of(json!({ "tokenizer": "gpt" })).message,
      "AgentHarness tokenizer is \"gpt\"; expected one of 'estimate', 'o200k', 'cl100k'."
    );
    let nan =
      json!({ "projection": { "tokenBudget": 1, "responseReserve": { "$sketch": "a function", "type": "function" } } });
    assert_eq!(error_of(nan).message, "AgentHarness projection.responseReserve is a function; expected a number.");
    let error = error_of(json!({ "streamIdleTimeoutMs": { "$sketch": "NaN", "type": "number" } }));
    assert_eq!(
      (error.code.as_str(), error.message.as_str()),
      ("INVALID_STREAM_IDLE_TIMEOUT", "streamIdleTimeoutMs must be a number of milliseconds, got NaN.")
    );
    assert_eq!(
      error_of(json!({ "storageTimeoutMs": "5" })).message,
      "storageTimeoutMs must be a positive number of milliseconds, got string."
    );
    assert_eq!(error_of(json!({ "defaultDeliveryMode": "soon" })).code, "INVALID_DELIVERY_MODE");
    assert_eq!(error_of(json!([])).message, "The AgentHarness options is an array; expected an object.");
  }
}
