//! `NativeHarness`: the JS `AgentHarness` holds one. Runs go to the runtime on its tokio threads; the JS side's
//! contexts read and append through the sync methods here.

mod checkpoint;
mod layer_calls;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt;

use napi::bindgen_prelude::within_runtime_if_available;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use noetic_runtime::harness::session::DeliveryMode;
use noetic_runtime::harness::{
  ContextChannels, ExecContext, Harness, HarnessConfig, Model, RunOptions, RunResult, ScriptedModel, StepMeta,
};
use noetic_runtime::host::StepValue;
use noetic_runtime::items::{Item, ItemTypes, parse_js_item, parse_js_items};
use noetic_runtime::js_sketch::Sketch;
use noetic_runtime::js_text::from_js_json;
use noetic_runtime::memory::cache_anchor::CacheConfig;
use noetic_runtime::memory::lifecycle::MemoryEnv;
use noetic_runtime::memory::native::{LayerFiles, NativeWrite};
use noetic_runtime::memory::registry::LayerImpl;
use noetic_runtime::memory::state::{Persist, StateJson, StateStore, StateValue};
use noetic_runtime::provider::OpenRouter;
use noetic_runtime::steps::Step;
use noetic_runtime::storage::{InMemoryStorage, Storage};
use noetic_runtime::tokens::Tokenizer;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::channels::NativeChannels;
use crate::describe;
use crate::dispatcher::{Dispatch, Dispatcher, batch_text, foreground, js_polls_next};
use crate::driver::Driver;
use crate::fs::{HarnessFiles, NativeFs};
use crate::guard::guarded;
use crate::js_host::JsHost;
use crate::js_string::{JsOutText, JsText};
use crate::protocol::{config_json, error_json, noetic_json, step_value_from, step_value_json, to_napi};
use crate::storage::{DEFAULT_STORAGE_TIMEOUT, JsDiagnostics, JsStorage, NativeStorage};
use crate::weak_runtime::{MaybeRuntime, WeakRuntime};
use noetic_runtime::memory::trace::TraceBuffer;

/// Validates layer descriptions where they are registered (DECISIONS D1).
#[napi(catch_unwind, skip_typescript)]
pub fn validate_layers(layers: String) -> Result<()> {
  describe::layer_set(&parse(&layers)?, None).map(drop).map_err(|e| to_napi(config_json(&e)))
}

/// The native half of an `AgentHarness` (internal: use `AgentHarness`).
#[napi]
pub struct NativeHarness {
  pub(crate) inner: Arc<Harness>,
  pub(crate) dispatch: Dispatch,
  pub(crate) driver: Driver,
  /// Hook spans waiting for the trace exporter (`None`: the harness does not trace).
  traces: Option<Arc<TraceBuffer>>,
  /// What built-in layers read `harness.fs` through.
  files: Arc<HarnessFiles>,
  /// Session responses whose `lastLayerUsage` JS has not read yet (see `session.rs`).
  pub(crate) usages: crate::usage_shelf::UsageShelf,
}

/// Its JS object was collected: whatever still waits on JS (a background recall) fails instead of waiting forever,
/// and the runs polled on the JS thread are dropped.
impl Drop for NativeHarness {
  fn drop(&mut self) {
    self.dispatch.close();
    self.driver.shutdown();
  }
}

pub(crate) fn parse(text: &str) -> Result<Value> {
  from_js_json(text).map_err(|e| Error::new(Status::InvalidArg, format!("malformed JSON from JS: {e}")))
}

struct RunOptionsJson {
  json: Value,
  layers: Option<Arc<noetic_runtime::memory::registry::LayerSet>>,
}

/// The step, the input and the options of a run; a bad step or layer list is a config error to report as a value.
fn parse_run(
  host: &Dispatch,
  step: &str,
  input: &str,
  options: &str,
) -> Result<std::result::Result<(Step, StepValue, RunOptionsJson), noetic_runtime::ConfigError>> {
  let step = match crate::protocol::step_text::<Value>(step) {
    Ok(step) => describe::step(&step, Some(host)),
    Err(error) => return Ok(Err(error)),
  };
  let input = step_value_from(&parse(input)?);
  let json = parse(options)?;
  let layers = match json.get("memory") {
    Some(layers @ Value::Array(_)) => match describe::layer_set(layers, Some(host)) {
      Ok(set) => Some(Arc::new(set)),
      Err(error) => return Ok(Err(error)),
    },
    _ => None,
  };
  Ok(step.map(|step| (step, input, RunOptionsJson { json, layers })))
}

/// `storageTimeoutMs`: a number of milliseconds (JS checked it), `"Infinity"` for none, default 30 s.
fn storage_timeout(config: &Value) -> Option<std::time::Duration> {
  match config.get("storageTimeoutMs").and_then(crate::protocol::number) {
    None => Some(DEFAULT_STORAGE_TIMEOUT),
    Some(ms) => noetic_runtime::js_time::duration_of_ms(ms),
  }
}

fn text_field(value: &Value, key: &str) -> Option<String> {
  value.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn failed(error: &noetic_runtime::ConfigError) -> String {
  json!({ "ok": false, "error": config_json(error) }).to_string()
}

/// A run's outcome as JSON. A panic inside the run becomes a JS error (A5).
fn settle(outcome: std::thread::Result<RunResult<StepValue>>) -> String {
  match outcome {
    Ok(Ok(value)) => json!({ "ok": true, "value": step_value_json(&value) }),
    Ok(Err(error)) => json!({ "ok": false, "error": error_json(&error) }),
    Err(panic) => json!({ "ok": false, "error": { "kind": "thrown", "message": internal_error(&*panic) } }),
  }
  .to_string()
}

fn internal_error(panic: &(dyn std::any::Any + Send)) -> String {
  let what = panic
    .downcast_ref::<&str>()
    .map(|s| (*s).to_owned())
    .or_else(|| panic.downcast_ref::<String>().cloned())
    .unwrap_or_else(|| "a panic".to_owned());
  format!("internal error in @noetic-tools/core: {what}")
}

impl NativeHarness {
  /// Queues `work` as a run JS awaits (polled on the JS thread, see `driver.rs`), and sends its outcome to JS as
  /// `{op: 'settled', run, result}`. The outcome travels through the dispatcher rather than a napi Promise, whose
  /// own handle would keep Node alive for as long as the run waits on JS that never settles.
  pub(crate) fn start_run<F>(&self, run: u32, work: F)
  where
    F: std::future::Future<Output = RunResult<StepValue>> + Send + 'static,
  {
    let dispatch = self.dispatch.clone();
    self.driver.spawn(async move {
      let outcome = AssertUnwindSafe(foreground(work)).catch_unwind().await;
      dispatch.settle(run, &settle(outcome));
    });
  }
}

/// `strictItemSchemas: false` admits extension item types.
fn item_types(config: &Value) -> ItemTypes {
  if config.get("strictItemSchemas").and_then(Value::as_bool) == Some(false) {
    ItemTypes::Any
  } else {
    ItemTypes::Known
  }
}

fn missing_context(id: &str) -> Error {
  Error::new(Status::InvalidArg, format!("context '{id}' is not running"))
}

#[napi]
impl NativeHarness {
  /// `config`: `{name, layers, projection?, model: {kind, script?}, jsStorage: bool, storageTimeoutMs?,
  /// forceAtomicRecall: bool}`.
  #[napi(constructor, catch_unwind)]
  pub fn new(
    env: Env,
    config: String,
    runtime: Object,
    #[napi(ts_arg_type = "(runtime: object | undefined, batch: string) => void")] dispatcher: Function<
      FnArgs<(MaybeRuntime, JsOutText)>,
      (),
    >,
    storage: Option<&NativeStorage>,
    fs: Option<&NativeFs>,
    channels: &NativeChannels,
  ) -> Result<Self> {
    // The config carries the initial step, a step tree.
    let config: Value = crate::protocol::step_text(&config).map_err(|e| to_napi(config_json(&e)))?;
    let runtime = WeakRuntime::new(&env, &runtime)?;
    let dispatcher: Dispatcher = dispatcher
      .build_threadsafe_function::<FnArgs<(String,)>>()
      .weak::<true>()
      .callee_handled::<false>()
      .build_callback(move |call| Ok((runtime.get(&call.env), JsOutText(call.value.data.0)).into()))?;
    let dispatch = Dispatch::new(dispatcher);
    let layers = describe::layer_set(config.get("layers").unwrap_or(&Value::Null), Some(&dispatch))
      .map_err(|e| to_napi(config_json(&e)))?;
    let storage: Arc<dyn Storage> = match storage {
      Some(native) => Arc::clone(&native.inner),
      None if config.get("jsStorage").and_then(Value::as_bool) == Some(true) => {
        Arc::new(JsStorage::storage(dispatch.clone(), storage_timeout(&config)))
      }
      None => Arc::new(InMemoryStorage::new()),
    };
    let model = match config.pointer("/model/kind").and_then(Value::as_str) {
      Some("scripted") => {
        Model::Scripted(ScriptedModel::new(describe::script(config.get("script").unwrap_or(&Value::Null))))
      }
      Some("openrouter") => Model::OpenRouter(
        OpenRouter::new(describe::openrouter(config.get("model").unwrap_or(&Value::Null)))
          .map_err(|e| to_napi(config_json(&e)))?,
      ),
      Some("host") => Model::Host,
      _ => Model::None,
    };
    // `true`, or `"content"` from an exporter that wants prompts and completions too (O1).
    let content = config.get("tracing").and_then(Value::as_str) == Some("content");
    let traces = (content || config.get("tracing").and_then(Value::as_bool) == Some(true)).then(Arc::default);
    let files = Arc::new(HarnessFiles::new(dispatch.clone(), fs));
    let env = MemoryEnv {
      host: Arc::new(JsHost { dispatch: dispatch.clone() }),
      states: Arc::new(StateStore::new()),
      sink: Arc::new(JsDiagnostics { dispatch: dispatch.clone(), traces: traces.clone(), content }),
      storage,
    };
    let harness = Harness::new(
      HarnessConfig {
        name: config.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
        layers: Arc::new(layers),
        projection: config.get("projection").and_then(describe::projection),
        model,
        force_atomic_recall: config.get("forceAtomicRecall").and_then(Value::as_bool).unwrap_or(false),
        initial_step: match config.get("initialStep") {
          Some(step @ Value::Object(_)) => {
            Some(Arc::new(describe::step(step, Some(&dispatch)).map_err(|e| to_napi(config_json(&e)))?))
          }
          _ => None,
        },
        tools: config.get("tools").and_then(Value::as_array).into_iter().flatten().map(describe::tool).collect(),
      },
      env,
    )
    .with_step_source(Arc::new(JsHost { dispatch: dispatch.clone() }))
    .with_files(Arc::clone(&files) as Arc<dyn LayerFiles>)
    .with_item_types(item_types(&config))
    .with_tokenizer(config.get("tokenizer").and_then(Value::as_str).and_then(Tokenizer::parse))
    .with_channels(Arc::clone(&channels.inner))
    .with_subprocess(config.get("subprocess").and_then(describe::adapter))
    .with_context_cache(
      config.get("contextCache").and_then(|given| CacheConfig::from_option(Sketch::of(given)).ok().flatten()),
    )
    .with_default_delivery(
      config.get("deliveryMode").and_then(Value::as_str).and_then(DeliveryMode::parse).unwrap_or_default(),
    );
    let harness = if config.get("persistSessions").and_then(Value::as_bool) == Some(true) {
      // A number of milliseconds too large for a timer (`1e300`) waits for ever, as `Infinity` does.
      let idle = config.get("sessionIdleMs").and_then(Value::as_f64).and_then(noetic_runtime::js_time::duration_of_ms);
      harness.with_persisted_sessions(idle)
    } else {
      harness
    };
    let driver = Driver::new(dispatch.clone());
    Ok(Self { inner: Arc::new(harness), dispatch, driver, traces, files, usages: Default::default() })
  }

  /// `harness.fs` was assigned: built-in layers read `fs` natively when it is an in-memory filesystem of ours, and
  /// through JS otherwise.
  #[napi(catch_unwind)]
  pub fn use_fs(&self, fs: Option<&NativeFs>) {
    self.files.use_fs(fs);
  }

  /// The hook spans recorded since the last call, as a JSON array (D14).
  #[napi(catch_unwind)]
  pub fn take_traces(&self) -> String {
    let spans = self.traces.as_ref().map(|traces| traces.take()).unwrap_or_default();
    serde_json::to_string(&spans).unwrap_or_else(|_| "[]".to_owned())
  }

  /// Every thread the inspector keeps, with its turns and their calls' summaries, as JSON.
  #[napi(catch_unwind)]
  pub fn inspector_snapshot(&self) -> String {
    self.inner.inspector.snapshot()
  }

  /// Answers dispatcher request `id`: `ok` with the reply text, or not with the failure's message. The run waiting
  /// on it goes on at once, here; returns what it asks of JS next.
  #[napi(catch_unwind, ts_return_type = "string | null")]
  pub fn reply(&self, id: u32, ok: bool, #[napi(ts_arg_type = "string")] text: JsText) -> Option<JsOutText> {
    let JsText(text) = text;
    batch_text(&self.driver.drive(|| self.dispatch.reply(id, if ok { Ok(text) } else { Err(text) }))).map(JsOutText)
  }

  /// Answers several requests at once (replies that settled in one turn of JS's event loop: a fork's paths), then
  /// polls once: `ids[i]` gets `texts[i]`, as a success when `oks[i]`.
  #[napi(catch_unwind, ts_return_type = "string | null")]
  pub fn reply_many(
    &self,
    ids: Vec<u32>,
    oks: Vec<bool>,
    #[napi(ts_arg_type = "Array<string>")] texts: Vec<JsText>,
  ) -> Option<JsOutText> {
    batch_text(&self.driver.drive(|| {
      for ((id, ok), JsText(text)) in ids.into_iter().zip(oks).zip(texts) {
        self.dispatch.reply(id, if ok { Ok(text) } else { Err(text) });
      }
    }))
    .map(JsOutText)
  }

  /// Polls the runs that are ready (new ones, or ones woken off the JS thread); returns what they ask of JS.
  #[napi(catch_unwind, ts_return_type = "string | null")]
  pub fn drive(&self) -> Option<JsOutText> {
    batch_text(&self.driver.drive(|| ())).map(JsOutText)
  }

  /// Starts run `run` of a step description with an input value, as one execution. Returns the outcome at once
  /// when the run cannot start (a bad step or layer list); otherwise it arrives later (see `start_run`). Either
  /// way it is `{ok, value}` or `{ok: false, error}` JSON.
  #[napi(catch_unwind)]
  pub fn run(&self, run: u32, step: String, input: String, options: String) -> Result<Option<String>> {
    let (step, input, options) = match parse_run(&self.dispatch, &step, &input, &options)? {
      Ok(parsed) => parsed,
      Err(error) => return Ok(Some(failed(&error))),
    };
    let run_options = RunOptions {
      thread_id: text_field(&options.json, "threadId"),
      resource_id: text_field(&options.json, "resourceId"),
      layers: options.layers,
    };
    let harness = Arc::clone(&self.inner);
    self.start_run(run, async move { harness.run(&step, input, run_options).await });
    Ok(None)
  }

  /// Opens a context that outlives runs (`harness.createContext()`); returns its id.
  /// `options`: `{threadId?, resourceId?, memory?, checked?, held?}`; `checked`: JS put the items to the context's
  /// item schemas; `held`: how many first items JS holds (DECISIONS L1). `items`: its first items otherwise, as one
  /// JSON array of their texts.
  #[napi(catch_unwind)]
  pub fn create_context(&self, options: String, #[napi(ts_arg_type = "string")] items: JsText) -> Result<String> {
    let options = parse(&options)?;
    let layers = match options.get("memory") {
      Some(layers @ Value::Array(_)) => {
        Arc::new(describe::layer_set(layers, Some(&self.dispatch)).map_err(|e| to_napi(config_json(&e)))?)
      }
      _ => Arc::clone(&self.inner.layers),
    };
    // `id` and `parent` come only from `/internal/test`'s ContextImpl, which upstream's tests build as they like.
    let id = text_field(&options, "id").unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    if self.inner.context(&id).is_some() {
      return Err(Error::new(Status::InvalidArg, format!("a context with id '{id}' already exists")));
    }
    let parent = match text_field(&options, "parent") {
      Some(parent) => Some(self.inner.context(&parent).ok_or_else(|| missing_context(&parent))?),
      None => None,
    };
    // As upstream, a context made without a thread id gets a thread of its own.
    let thread = text_field(&options, "threadId").unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let depth = parent.as_ref().map_or(0, |p| p.depth + 1);
    let root = parent.as_ref().map(|p| p.root.clone());
    let parent = parent.map(|p| p.id.clone());
    let mut ctx = ExecContext::new(id.clone(), thread, text_field(&options, "resourceId"), depth, parent, layers);
    if let Some(root) = root {
      ctx.root = root;
    }
    let ctx = self.inner.open_context(ctx);
    let types = self.inner.item_types.unless_checked(options.get("checked").and_then(Value::as_bool) == Some(true));
    match parse_item_batch(&items, types, "createContext") {
      Ok(items) => {
        let mut state = ctx.state();
        for item in items {
          state.log.push(item);
        }
        drop(state);
        // Its first items JS holds instead (`held`), when they need no check here.
        ctx.hold_items(options.get("held").and_then(Value::as_u64).unwrap_or(0) as u32);
      }
      Err(error) => {
        self.inner.drop_context(&ctx.id);
        return Err(error);
      }
    }
    Ok(id)
  }

  /// `/internal/test`'s ContextImpl: the context's loops read their inboxes from `channels` (none: no store).
  #[napi(catch_unwind)]
  pub fn use_channels(&self, context: String, channels: Option<&NativeChannels>) -> Result<()> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    ctx.use_channels(channels.map_or(ContextChannels::None, |store| ContextChannels::Given(Arc::clone(&store.inner))));
    Ok(())
  }

  /// Starts run `run` of a step in a context from `create_context`; its layers initialise on the first run. The
  /// outcome is returned or arrives as for `run`. Items JS holds of the log (DECISIONS L1) are asked for by the
  /// first step that reads the log natively.
  #[napi(catch_unwind)]
  pub fn run_in_context(&self, run: u32, context: String, step: String, input: String) -> Result<Option<String>> {
    let (step, input, _) = match parse_run(&self.dispatch, &step, &input, "{}")? {
      Ok(parsed) => parsed,
      Err(error) => return Ok(Some(failed(&error))),
    };
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    let harness = Arc::clone(&self.inner);
    self.start_run(run, async move { harness.run_existing(&ctx, &step, input).await });
    Ok(None)
  }

  /// The harness's model for `callModel`: `request` is `{model, instructions?, params?, outputSchema?, tools?,
  /// context?}` JSON (tools described as a step's, run in context `context`), `items` the items' JSON texts.
  /// Resolves to `{ok, items, usage, cost?}` or `{ok: false, error}` JSON.
  #[napi]
  pub async fn call_model_once(&self, request: String, items: Vec<String>) -> Result<String> {
    let harness = Arc::clone(&self.inner);
    guarded(async move {
      let head = parse(&request)?;
      let mut request = describe::model_request(&head, &items).map_err(|e| Error::new(Status::InvalidArg, e))?;
      if let Some(id) = head.get("context").and_then(Value::as_str) {
        request.context = Some(harness.context(id).ok_or_else(|| missing_context(id))?);
      }
      Ok(harness.call_model_once(&request).await)
    })
    .await
    .map(|outcome| {
      match outcome {
        Ok(round) => {
          // As upstream's loop sums it: the cached count always, 0 when there was none.
          let usage = json!({
            "inputTokens": round.input_tokens, "outputTokens": round.output_tokens, "cachedTokens": round.cached_tokens,
          });
          let mut reply = json!({
            "ok": true,
            "items": round.items.iter().map(|item| Value::Object(item.json().clone())).collect::<Vec<_>>(),
            "usage": usage,
          });
          // As upstream, a call that cost nothing reports no cost.
          if round.cost > 0.0 {
            reply["cost"] = json!(round.cost);
          }
          reply
        }
        Err(error) => json!({ "ok": false, "error": error_json(&error) }),
      }
      .to_string()
    })
  }

  /// Forgets a context from `create_context` (its JS object was collected).
  #[napi(catch_unwind)]
  pub fn drop_context(&self, context: String) {
    within_runtime_if_available(|| self.inner.drop_context(&context));
  }

  /// Appends a JS item (its `JSON.stringify` text) to a running context's log; returns its position. `checked`: JS
  /// put the item to the context's item schemas.
  #[napi(catch_unwind)]
  pub fn append_item(
    &self,
    context: String,
    #[napi(ts_arg_type = "string")] item: JsText,
    checked: Option<bool>,
  ) -> Result<u32> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    let types = self.inner.item_types.unless_checked(checked == Some(true));
    let item = parse_js_item(&item, types).map_err(|e| to_napi(noetic_json(&e)))?;
    let mut state = ctx.state();
    let pos = state.log.push(Arc::new(item));
    // JS keeps the object it appended.
    state.log.host_holds(pos, 1);
    Ok(pos as u32)
  }

  /// Appends items JS held back (a JSON array of their texts) to a context's log; returns its new length.
  /// `checked`: JS put them to item schemas, so their types are admitted as they are. `origin` names where they
  /// were given, for the error that names a bad one.
  #[napi(catch_unwind)]
  pub fn append_items(
    &self,
    context: String,
    #[napi(ts_arg_type = "string")] items: JsText,
    checked: Option<bool>,
    origin: Option<String>,
  ) -> Result<u32> {
    self.append_batch(&context, &items, checked, origin)
  }

  /// [`Self::append_items`] for a long batch JS encoded as UTF-8 itself: a one-byte JS string read as UTF-16 is
  /// widened to twice its size and packed again here, which for a history of many megabytes cost more than the
  /// encoding (`JSON.stringify` writes no lone surrogate, so the encoding loses nothing).
  #[napi(catch_unwind)]
  pub fn append_items_utf8(
    &self,
    context: String,
    items: Uint8Array,
    checked: Option<bool>,
    origin: Option<String>,
  ) -> Result<u32> {
    let what = origin.as_deref().unwrap_or("itemLog.append");
    let text = std::str::from_utf8(&items)
      .map_err(|e| Error::new(Status::InvalidArg, format!("{what}: the items are not UTF-8: {e}")))?;
    self.append_batch(&context, text, checked, origin)
  }

  fn append_batch(&self, context: &str, items: &str, checked: Option<bool>, origin: Option<String>) -> Result<u32> {
    let ctx = self.inner.context(context).ok_or_else(|| missing_context(context))?;
    let types = self.inner.item_types.unless_checked(checked == Some(true));
    let items = parse_item_batch(items, types, origin.as_deref().unwrap_or("itemLog.append"))?;
    let mut state = ctx.state();
    let (from, count) = (state.log.len(), items.len());
    for item in items {
      state.log.push(item);
    }
    state.log.host_holds(from, count);
    Ok(state.log.len() as u32)
  }

  /// The log's length as user code sees it: the items JS holds included.
  #[napi(catch_unwind)]
  pub fn log_length(&self, context: String) -> Result<u32> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    Ok(ctx.length_with_held())
  }

  /// JS holds `count` more items of the log, appended while no run was in flight (DECISIONS L1), to be sent when a
  /// run first reads the log; answers the position of the first.
  #[napi(catch_unwind)]
  pub fn hold_items(&self, context: String, count: u32) -> Result<u32> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    Ok(ctx.hold_items(count))
  }

  /// `[from, count]`: the items JS holds, which it is about to send; the log then holds none.
  #[napi(catch_unwind)]
  pub fn take_held(&self, context: String) -> Result<Vec<u32>> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    let (from, count) = ctx.take_held();
    Ok(vec![from, count])
  }

  /// JSON texts of the log items in `[from, to)`, for the ones JS has not seen (made in Rust).
  #[napi(catch_unwind)]
  pub fn items_json(&self, context: String, from: u32, to: u32) -> Result<Vec<String>> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    let state = ctx.state();
    Ok(
      state
        .log
        .items()
        .get(from as usize..(to as usize).min(state.log.len()))
        .unwrap_or_default()
        .iter()
        .map(|item| item.to_json_text())
        .collect(),
    )
  }

  /// The fixed fields of a context, as JSON: ids, depth, and its layers' ids and handles.
  #[napi(catch_unwind)]
  pub fn context_static(&self, context: String) -> Result<String> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    let layers = ctx.layers();
    serde_json::to_string(&crate::js_host::ContextStatic::of(&ctx.facts(&layers)))
      .map_err(|e| napi::Error::from_reason(e.to_string()))
  }

  /// A framework event JS raises for a context (a generator tool step's `tool_progress`), on its session's stream.
  #[napi(catch_unwind)]
  pub fn framework_event(&self, context: String, kind: String, data: String) -> Result<()> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    if let Some(io) = ctx.io() {
      io.framework(&self.inner.name, &kind, &parse(&data)?);
    }
    Ok(())
  }

  /// Adds a model call made outside the interpreter (an `aiCondition`'s) to a context's tokens and cost.
  #[napi(catch_unwind)]
  pub fn add_usage(&self, context: String, input: f64, output: f64, cached: f64, cost: f64) -> Result<()> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    let mut state = ctx.state();
    state.tokens.add(input, output, cached);
    state.cost += cost;
    Ok(())
  }

  /// One live field of a context, as JSON: a getter reads only what it returns (`lastLayerUsage` carries items).
  #[napi(catch_unwind)]
  pub fn context_field(&self, context: String, field: String) -> Result<String> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    let elapsed = ctx.elapsed_ms();
    let state = ctx.state();
    let value = match field.as_str() {
      "stepCount" => json!(state.step_count),
      "tokens" => state.tokens.to_json(),
      "cost" => json!(state.cost),
      "elapsed" => json!(elapsed),
      "lastStepMeta" => state.last_step_meta.as_ref().map_or(Value::Null, StepMeta::to_json),
      "lastLayerUsage" => {
        return Ok(state.last_layer_usage.as_ref().map_or_else(|| "null".to_owned(), |usage| usage.to_json_text()));
      }
      "completed" => json!(state.completion.is_some()),
      "completionValue" => json!(state.completion.as_ref().map(step_value_json)),
      "aborted" => json!(state.abort_reason.is_some()),
      "abortReason" => json!(state.abort_reason),
      other => return Err(Error::new(Status::InvalidArg, format!("no context field '{other}'"))),
    };
    Ok(value.to_string())
  }

  /// Writes a counter of a context: upstream's ContextImpl leaves them writable for whoever builds one by hand.
  /// `tokens.total` is not stored: it is always input plus output.
  #[napi(catch_unwind)]
  pub fn set_context_field(&self, context: String, field: String, value: String) -> Result<()> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    let value = parse(&value)?;
    let number = |v: &Value| v.as_f64().filter(|n| n.is_finite() && *n >= 0.0);
    let invalid = || Error::new(Status::InvalidArg, format!("ctx.{field} cannot be set to {value}"));
    let mut state = ctx.state();
    match field.as_str() {
      "stepCount" => state.step_count = number(&value).filter(|n| n.fract() == 0.0).ok_or_else(invalid)? as u64,
      "cost" => state.cost = number(&value).ok_or_else(invalid)?,
      "tokens" => {
        state.tokens.input = value.get("input").and_then(number).ok_or_else(invalid)?;
        state.tokens.output = value.get("output").and_then(number).ok_or_else(invalid)?;
      }
      "lastStepMeta" => state.last_step_meta = Some(value).filter(|v| !v.is_null()).map(StepMeta::Given),
      other => return Err(Error::new(Status::InvalidArg, format!("ctx.{other} cannot be set"))),
    }
    Ok(())
  }

  #[napi(catch_unwind)]
  pub fn complete(&self, context: String, value: String) -> Result<()> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    let value = step_value_from(&parse(&value)?);
    ctx.state().completion.get_or_insert(value);
    Ok(())
  }

  #[napi(catch_unwind)]
  pub fn abort(&self, context: String, reason: Option<String>) -> Result<()> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    js_polls_next(|| ctx.abort(reason.unwrap_or_else(|| "aborted".into())));
    Ok(())
  }

  /// `text`'s token count with the harness's tokenizer (`ctx.tokenize` when the harness has one).
  #[napi(catch_unwind)]
  pub fn count_tokens(&self, text: String) -> f64 {
    self.inner.count_tokens(&text) as f64
  }

  /// A built-in layer's state (JSON text), for `ctx.memory` and `readLayerState`.
  #[napi(catch_unwind)]
  pub fn native_state(&self, context: String, layer: String) -> Option<String> {
    match self.inner.env.states.get(&context, &layer) {
      Some(StateValue::Json(value)) => Some(value.to_string()),
      _ => None,
    }
  }

  /// A JS layer's state changed outside a hook phase (a `provides` function): mirror it durably.
  #[napi(catch_unwind)]
  pub fn host_state_written(&self, context: String, layer: String, persist: Option<String>) -> Result<()> {
    let persist = persist.map(|text| Persist::Write(StateJson::Text(text)));
    // The mirror write is a task on the runtime; this call comes from the JS thread.
    within_runtime_if_available(|| {
      self.inner.env.states.set(&context, &layer, StateValue::Host, persist, &self.inner.env.sink);
    });
    Ok(())
  }

  /// Calls a built-in layer's `provides` function; resolves to the result's JSON text (or null for `void`).
  #[napi]
  pub async fn call_native_fn(
    &self,
    context: String,
    layer: String,
    name: String,
    args: String,
  ) -> Result<Option<String>> {
    let harness = Arc::clone(&self.inner);
    guarded(async move {
      let ctx = harness.context(&context).ok_or_else(|| missing_context(&context))?;
      let target = ctx
        .layers()
        .get(&layer)
        .cloned()
        .ok_or_else(|| Error::new(Status::InvalidArg, format!("no layer '{layer}'")))?;
      let LayerImpl::Native(native) = &target.imp else {
        return Err(Error::new(Status::InvalidArg, format!("layer '{layer}' is not a built-in layer")));
      };
      let state = match harness.env.states.get(&context, &layer) {
        Some(StateValue::Json(value)) => Some(value),
        _ => None,
      };
      let (result, write) =
        native.call(&name, parse(&args)?, state.as_ref()).await.map_err(|m| Error::new(Status::GenericFailure, m))?;
      if let NativeWrite::Set(value) = write {
        harness.env.states.set(&context, &layer, StateValue::Json(value), None, &harness.env.sink);
      }
      Ok(result.map(|value| value.to_string()))
    })
    .await
  }

  /// Number of executions whose layer state is still held; stays flat across runs (D15).
  #[napi(getter, catch_unwind)]
  pub fn live_executions(&self) -> u32 {
    self.inner.env.states.live_executions() as u32
  }

  /// Number of contexts the native side holds (runs in flight, sessions' histories, createContext contexts).
  #[napi(getter, catch_unwind)]
  pub fn live_contexts(&self) -> u32 {
    self.inner.live_contexts() as u32
  }
}

/// Items JS sent as one JSON array of their texts (`[item, item, ...]`, each as `JSON.stringify` wrote it): read in
/// one pass, each item's own text kept as it is. A bad one is named by its index, as `what items[i]`.
pub(crate) fn parse_item_batch(text: &str, types: ItemTypes, what: &str) -> Result<Vec<Arc<Item>>> {
  let raw: Vec<&RawValue> = serde_json::from_str(text)
    .map_err(|e| Error::new(Status::InvalidArg, format!("{what}: the items are not a JSON array: {e}")))?;
  let texts: Vec<&str> = raw.iter().map(|item| item.get()).collect();
  match parse_js_items(&texts, types) {
    Ok(items) => Ok(items),
    Err(failure) => {
      let (index, mut e) = *failure;
      // In a long history, which item is wrong is most of the message.
      e.message = format!("{what} items[{index}]: {}", e.message);
      Err(to_napi(noetic_json(&e)))
    }
  }
}
