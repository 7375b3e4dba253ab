//! The built-in layers as `NativeLayer`s: the lifecycle calls these directly, with no crossing.

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::durable_task_state as dts;
use super::file_reference::{self as fr, FileRefState, FileReferenceConfig};
use super::history_window as hw;
use super::observational_memory::{self as om, Accumulated, ObservationalConfig, ObservationalState};
use super::plan_memory::{self as plan, Ask, FnStep, PlanConfig};
use super::static_content::{self as sc, StaticContentConfig};
use super::temporal_memory::{self as tm, TemporalConfig, TemporalState};
use super::working_memory::{self as wm, WorkingMemoryConfig};
use crate::host::{ExecInfo, SteeringAction, SteeringDecision};
use crate::items::Item;
use crate::memory::STATE_KEY;
use crate::memory::history::{History, Projected};
use crate::memory::native::{
  HookCtx, HostCallback, NativeAppend, NativeLayer, NativeRecall, NativeVote, NativeWrite, VoteError,
};
use crate::memory::registry::{Layer, LayerImpl, ProvidedFn};
use crate::storage::ScopedStorage;

/// The items' fields, read without being kept on the items: a layer sees every item of a long thread once.
fn fields(items: &[Arc<Item>]) -> Vec<Cow<'_, Map<String, Value>>> {
  items.iter().map(|item| item.fields()).collect()
}

fn maps<'a>(fields: &'a [Cow<'_, Map<String, Value>>]) -> Vec<&'a Map<String, Value>> {
  fields.iter().map(|map| &**map).collect()
}

async fn saved_state(storage: &ScopedStorage) -> Result<Option<Value>, String> {
  storage.get(STATE_KEY).await.map_err(|error| error.message)
}

pub struct WorkingMemory {
  pub config: WorkingMemoryConfig,
  /// The zod `schema`, checked in the host: answers `null` when a value passes, else zod's message.
  pub schema: Option<Arc<dyn HostCallback>>,
}

/// A built-in function's input schema as models are sent a JS tool's: JSON Schema draft 7, saying so first, as
/// upstream's SDK writes every tool's (zod's `toJSONSchema` with that target).
fn draft_07(schema: Value) -> Value {
  let mut out = Map::new();
  out.insert("$schema".into(), json!("http://json-schema.org/draft-07/schema#"));
  if let Value::Object(fields) = schema {
    out.extend(fields);
  }
  Value::Object(out)
}

/// `workingMemory(config)` as a registered layer.
pub fn working_memory_layer(config: WorkingMemoryConfig, schema: Option<Arc<dyn HostCallback>>) -> Layer {
  let provides = vec![ProvidedFn {
    name: "update".into(),
    description: wm::UPDATE_DESCRIPTION.into(),
    // A record of any values, as zod writes `z.record(z.string(), z.unknown())`.
    input_schema: Arc::new(draft_07(
      json!({ "type": "object", "propertyNames": { "type": "string" }, "additionalProperties": {} }),
    )),
  }];
  let config = WorkingMemoryConfig { has_schema: schema.is_some(), ..config };
  Layer {
    spec: wm::layer_spec(&config),
    imp: LayerImpl::Native(Arc::new(WorkingMemory { config, schema })),
    provides,
    handle: None,
  }
}

impl WorkingMemory {
  /// The schema's verdict on `value`: `Err` with zod's message when it fails. No schema passes everything.
  async fn check(&self, value: &Value) -> Result<Result<(), String>, String> {
    let Some(schema) = &self.schema else { return Ok(Ok(())) };
    Ok(wm::schema_verdict(schema.call(value.clone()).await?))
  }

  /// The update merged into the state, if the schema lets it through.
  async fn gated_merge(&self, state: Option<&Value>, update: &Map<String, Value>) -> Result<Value, String> {
    let merged = wm::merge(state.unwrap_or(&Value::String(String::new())), update);
    match self.check(&merged).await? {
      Ok(()) => Ok(merged),
      Err(message) => Err(wm::schema_rejection(&message)),
    }
  }
}

/// A copy of the parent's state for the child; an undefined parent state gives the child an undefined one.
fn spawned(copy: Option<Value>) -> NativeWrite {
  copy.map_or(NativeWrite::Clear, NativeWrite::Set)
}

#[async_trait]
impl NativeLayer for WorkingMemory {
  async fn on_spawn(&self, parent_state: Option<&Value>) -> Result<NativeWrite, String> {
    if self.config.scope != crate::memory::Scope::Resource {
      return Ok(NativeWrite::Unchanged);
    }
    Ok(spawned(parent_state.cloned()))
  }

  async fn init(&self, storage: &ScopedStorage) -> Result<Option<Value>, String> {
    // As `wm::init_state`, with the schema asked in the host about a saved value only.
    Ok(Some(match saved_state(storage).await?.filter(|value| !value.is_null()) {
      Some(value) => match self.check(&value).await? {
        Ok(()) => value,
        Err(_) => Value::Object(Map::new()),
      },
      None => wm::default_state(self.schema.is_some()),
    }))
  }

  async fn recall(
    &self,
    state: Option<&Value>,
    _budget: f64,
    _exec: &ExecInfo,
  ) -> Result<Option<NativeRecall>, String> {
    Ok(state.and_then(wm::recall).map(NativeRecall::from))
  }

  async fn store(
    &self,
    state: Option<&Value>,
    new_items: &[Arc<Item>],
    _exec: &ExecInfo,
  ) -> Result<NativeWrite, String> {
    let read = fields(new_items);
    Ok(match wm::legacy_update(&maps(&read), &self.config) {
      Some(update) => NativeWrite::Set(self.gated_merge(state, &update).await?),
      None => NativeWrite::Unchanged,
    })
  }

  async fn call(&self, name: &str, args: Value, state: Option<&Value>) -> Result<(Option<Value>, NativeWrite), String> {
    if name != "update" {
      return Err(format!("working-memory has no function '{name}'"));
    }
    let Value::Object(update) = args else { return Err("update expects an object of fields".into()) };
    Ok((None, NativeWrite::Set(self.gated_merge(state, &update).await?)))
  }

  fn read(&self, name: &str, state: Option<&Value>) -> Result<Value, String> {
    match name {
      "snapshot" => Ok(state.cloned().unwrap_or(Value::Null)),
      _ => Err(format!("working-memory has no data entry '{name}'")),
    }
  }
}

pub struct ObservationalMemory {
  pub config: ObservationalConfig,
  /// The `observer` that distils the buffer into observations (typically an LLM call in the host).
  pub observer: Option<Arc<dyn HostCallback>>,
}

/// `observationalMemory(config)` as a registered layer.
pub fn observational_memory_layer(config: ObservationalConfig, observer: Option<Arc<dyn HostCallback>>) -> Layer {
  let config = ObservationalConfig { has_observer: observer.is_some(), ..config };
  Layer {
    spec: om::layer_spec(&config),
    imp: LayerImpl::Native(Arc::new(ObservationalMemory { config, observer })),
    provides: Vec::new(),
    handle: None,
  }
}

impl ObservationalMemory {
  fn state(state: Option<&Value>) -> Result<ObservationalState, String> {
    state.map_or_else(
      || Ok(ObservationalState::default()),
      |v| ObservationalState::from_value(v).map_err(|e| e.to_string()),
    )
  }

  /// The state after buffering, asking the observer to distil when the threshold is reached.
  async fn settle(&self, before: &ObservationalState, accumulated: Accumulated) -> Result<NativeWrite, String> {
    let next = match (accumulated, &self.observer) {
      (Accumulated::Kept(state), _) => state,
      (Accumulated::Distill { new_buffer }, Some(observer)) => {
        let distilled = om::distilled(observer.call(json!(new_buffer)).await?)?;
        om::apply_distilled(before, distilled, &self.config)
      }
      // `accumulate` asks to distil only when the layer has an observer.
      (Accumulated::Distill { new_buffer }, None) => {
        om::apply_distilled(before, om::placeholder_observations(new_buffer.len()), &self.config)
      }
    };
    Ok(NativeWrite::Set(next.to_value()))
  }
}

#[async_trait]
impl NativeLayer for ObservationalMemory {
  async fn init(&self, storage: &ScopedStorage) -> Result<Option<Value>, String> {
    Ok(Some(om::init_state(saved_state(storage).await?)))
  }

  async fn recall(&self, state: Option<&Value>, budget: f64, _exec: &ExecInfo) -> Result<Option<NativeRecall>, String> {
    let state = Self::state(state)?;
    Ok(om::recall(&state, budget).map(NativeRecall::from))
  }

  async fn store(
    &self,
    state: Option<&Value>,
    new_items: &[Arc<Item>],
    _exec: &ExecInfo,
  ) -> Result<NativeWrite, String> {
    let before = Self::state(state)?;
    let read = fields(new_items);
    let accumulated = om::store(&before, &maps(&read), &self.config);
    self.settle(&before, accumulated).await
  }

  async fn on_spawn(&self, parent_state: Option<&Value>) -> Result<NativeWrite, String> {
    Ok(spawned(parent_state.map(om::on_spawn)))
  }

  async fn on_item_append(&self, state: Option<&Value>, items: &[Arc<Item>]) -> Result<NativeWrite, String> {
    let before = Self::state(state)?;
    let read = fields(items);
    match om::on_item_append(&before, &maps(&read), &self.config) {
      Some(accumulated) => self.settle(&before, accumulated).await,
      None => Ok(NativeWrite::Unchanged),
    }
  }
}

pub struct HistoryWindow {
  pub max_items: usize,
}

/// `historyWindow(config)` as a registered layer; `max_items` already checked.
pub fn history_window_layer(max_items: usize) -> Layer {
  Layer {
    spec: hw::layer_spec(),
    imp: LayerImpl::Native(Arc::new(HistoryWindow { max_items })),
    provides: Vec::new(),
    handle: None,
  }
}

#[async_trait]
impl NativeLayer for HistoryWindow {
  async fn init(&self, _storage: &ScopedStorage) -> Result<Option<Value>, String> {
    Ok(Some(Value::Null))
  }

  fn project_history(&self, history: &History<'_>) -> Option<Vec<Projected>> {
    hw::project(history, self.max_items)
  }
}

pub struct DurableTaskState;

/// `durableTaskState()` as a registered layer.
pub fn durable_task_state_layer() -> Layer {
  Layer {
    spec: dts::layer_spec(),
    imp: LayerImpl::Native(Arc::new(DurableTaskState)),
    provides: Vec::new(),
    handle: None,
  }
}

#[async_trait]
impl NativeLayer for DurableTaskState {
  async fn init(&self, storage: &ScopedStorage) -> Result<Option<Value>, String> {
    Ok(Some(dts::init_state(saved_state(storage).await?)))
  }

  async fn recall(&self, state: Option<&Value>, budget: f64, _exec: &ExecInfo) -> Result<Option<NativeRecall>, String> {
    let recalled = state.and_then(|state| dts::recall(state, budget));
    Ok(recalled.map(NativeRecall::from))
  }

  async fn store(
    &self,
    state: Option<&Value>,
    _new_items: &[Arc<Item>],
    exec: &ExecInfo,
  ) -> Result<NativeWrite, String> {
    dts::store(state, dts::now_ms(), exec.depth).map(NativeWrite::Set)
  }

  /// Always a state for the child: a copy of the parent's (none when it has none).
  async fn on_spawn(&self, parent_state: Option<&Value>) -> Result<NativeWrite, String> {
    Ok(spawned(parent_state.cloned()))
  }

  async fn on_return(&self, parent_state: Option<&Value>, child_state: &Value) -> Result<NativeWrite, String> {
    dts::on_return(parent_state, child_state).map(NativeWrite::Set)
  }

  async fn on_complete(&self, state: Option<&Value>, outcome: &str) -> Result<NativeWrite, String> {
    let Some(state) = state else { return Ok(NativeWrite::Unchanged) };
    Ok(dts::on_complete(state, outcome, dts::now_ms())?.map_or(NativeWrite::Unchanged, NativeWrite::Set))
  }
}

pub struct StaticContent {
  pub config: StaticContentConfig,
  /// The user's `load`, answering the text (JS makes it a string; nothing loaded is `""`).
  pub load: Option<Arc<dyn HostCallback>>,
}

/// `staticContent(opts)` as a registered layer.
pub fn static_content_layer(config: StaticContentConfig, load: Option<Arc<dyn HostCallback>>) -> Layer {
  Layer {
    spec: sc::layer_spec(&config),
    imp: LayerImpl::Native(Arc::new(StaticContent { config, load })),
    provides: Vec::new(),
    handle: None,
  }
}

#[async_trait]
impl NativeLayer for StaticContent {
  /// Loads on every execution; storage is not read, and the state is never written back.
  async fn init(&self, _storage: &ScopedStorage) -> Result<Option<Value>, String> {
    let Some(load) = &self.load else { return Ok(Some(Value::String(String::new()))) };
    let raw = match load.call(Value::Null).await? {
      Value::String(text) => text,
      Value::Null => String::new(),
      other => other.to_string(),
    };
    Ok(Some(Value::String(sc::wrap(&raw, &self.config.tag))))
  }

  async fn recall(&self, state: Option<&Value>, budget: f64, _exec: &ExecInfo) -> Result<Option<NativeRecall>, String> {
    let text = state.and_then(Value::as_str).unwrap_or_default();
    let recalled = sc::recall(text, budget, &self.config.tag);
    Ok(recalled.map(NativeRecall::from))
  }
}

pub struct PlanMemory {
  pub config: PlanConfig,
  /// The host's `onEnterSession()` and `onExit(state)`, when given.
  pub on_enter_session: Option<Arc<dyn HostCallback>>,
  pub on_exit: Option<Arc<dyn HostCallback>>,
}

/// `planMemory(config)` as a registered layer: its four functions are the model's `plan/...` tools.
pub fn plan_memory_layer(
  config: PlanConfig,
  on_enter_session: Option<Arc<dyn HostCallback>>,
  on_exit: Option<Arc<dyn HostCallback>>,
) -> Layer {
  let config =
    PlanConfig { has_on_enter_session: on_enter_session.is_some(), has_on_exit: on_exit.is_some(), ..config };
  let provides = plan::functions()
    .into_iter()
    .map(|(name, description, input_schema)| ProvidedFn {
      name: name.into(),
      description: description.into(),
      input_schema: Arc::new(draft_07(input_schema)),
    })
    .collect();
  Layer {
    spec: plan::layer_spec(&config),
    imp: LayerImpl::Native(Arc::new(PlanMemory { config, on_enter_session, on_exit })),
    provides,
    handle: None,
  }
}

fn plan_state(state: Option<&Value>) -> Cow<'_, Value> {
  state.map_or_else(|| Cow::Owned(Value::Null), Cow::Borrowed)
}

#[async_trait]
impl NativeLayer for PlanMemory {
  async fn init(&self, storage: &ScopedStorage) -> Result<Option<Value>, String> {
    Ok(Some(plan::init_state(saved_state(storage).await?)))
  }

  async fn recall(&self, state: Option<&Value>, budget: f64, _exec: &ExecInfo) -> Result<Option<NativeRecall>, String> {
    let recalled = plan::recall(&plan_state(state), budget, &self.config);
    Ok(recalled.map(NativeRecall::from))
  }

  async fn before_tool_call(
    &self,
    state: Option<&Value>,
    tool_name: &str,
    _tool_args: &Value,
    _ctx: HookCtx<'_>,
  ) -> Result<NativeVote, VoteError> {
    Ok(NativeVote::from(Some(match plan::denial(&plan_state(state), tool_name, &self.config) {
      None => SteeringDecision::ALLOW,
      Some(guidance) => SteeringDecision::new(SteeringAction::Deny, Some(guidance)),
    })))
  }

  async fn on_spawn(&self, parent_state: Option<&Value>) -> Result<NativeWrite, String> {
    Ok(spawned(parent_state.cloned()))
  }

  async fn on_complete(&self, state: Option<&Value>, outcome: &str) -> Result<NativeWrite, String> {
    let next = plan::on_complete(&plan_state(state), outcome, dts::now_ms() as f64);
    Ok(next.map_or(NativeWrite::Unchanged, NativeWrite::Set))
  }

  async fn call(&self, name: &str, args: Value, state: Option<&Value>) -> Result<(Option<Value>, NativeWrite), String> {
    let state = plan_state(state);
    let mut answer = None;
    loop {
      match plan::call(name, &args, &state, &self.config, answer.as_ref())? {
        FnStep::Done { result, state } => {
          return Ok((Some(Value::String(result)), state.map_or(NativeWrite::Unchanged, NativeWrite::Set)));
        }
        // The pure step asks only for a callback the config says the host gave.
        FnStep::Ask(ask) => {
          let (callback, args, what) = match ask {
            Ask::EnterSession => (&self.on_enter_session, Value::Null, "onEnterSession"),
            Ask::Exit => (&self.on_exit, state.clone().into_owned(), "onExit"),
          };
          let callback = callback.as_ref().ok_or_else(|| format!("plan: {what} is not available here"))?;
          // What the callback threw is the tool's error, as a throw in a JS layer's function is.
          answer = Some(callback.call(args).await?);
        }
      }
    }
  }

  fn read(&self, name: &str, state: Option<&Value>) -> Result<Value, String> {
    match name {
      "status" => Ok(plan::status(&plan_state(state))),
      _ => Err(format!("plan has no data entry '{name}'")),
    }
  }
}

pub struct TemporalMemory {
  pub config: TemporalConfig,
  /// The host's `now`, `extract` and `search`, when given; without `now` the system clock is read here.
  pub now: Option<Arc<dyn HostCallback>>,
  pub extract: Option<Arc<dyn HostCallback>>,
  pub search: Option<Arc<dyn HostCallback>>,
}

/// `temporalMemory(config)` as a registered layer: its `searchMemory` is the model's `temporal/searchMemory` tool.
pub fn temporal_memory_layer(
  config: TemporalConfig,
  now: Option<Arc<dyn HostCallback>>,
  extract: Option<Arc<dyn HostCallback>>,
  search: Option<Arc<dyn HostCallback>>,
) -> Layer {
  let config =
    TemporalConfig { has_now: now.is_some(), has_extract: extract.is_some(), has_search: search.is_some(), ..config };
  let provides = vec![ProvidedFn {
    name: tm::SEARCH_FUNCTION.into(),
    description: tm::SEARCH_DESCRIPTION.into(),
    input_schema: Arc::new(draft_07(tm::search_input_schema())),
  }];
  Layer {
    spec: tm::layer_spec(&config),
    imp: LayerImpl::Native(Arc::new(TemporalMemory { config, now, extract, search })),
    provides,
    handle: None,
  }
}

impl TemporalMemory {
  fn state(state: Option<&Value>) -> Result<TemporalState, String> {
    state.map_or_else(|| Ok(TemporalState::default()), TemporalState::from_value)
  }

  /// The clock's reading as the layer writes it: the configured `now`, else the system clock in local time.
  async fn now(&self) -> Result<String, String> {
    let time = match &self.now {
      Some(clock) => tm::local_time_from(&clock.call(Value::Null).await?)?,
      None => tm::system_now(),
    };
    Ok(tm::format_now(&time))
  }

  /// The state after buffering, asking the extractor when the threshold is reached. What it throws or answers
  /// malformed fails the hook, so the state before is kept.
  async fn settle(&self, before: &TemporalState, accumulated: tm::Accumulated) -> Result<NativeWrite, String> {
    let next = match (accumulated, &self.extract) {
      (tm::Accumulated::Kept(state), _) => state,
      (tm::Accumulated::Extract { transcript }, Some(extract)) => {
        let request = tm::extract_request(&transcript, &self.now().await?);
        tm::apply_extracted(before, tm::extracted(&extract.call(request).await?)?, &self.config)
      }
      // `accumulate` asks to extract only when the layer has an extractor.
      (tm::Accumulated::Extract { .. }, None) => return Ok(NativeWrite::Unchanged),
    };
    Ok(NativeWrite::Set(next.to_value()))
  }
}

#[async_trait]
impl NativeLayer for TemporalMemory {
  async fn init(&self, storage: &ScopedStorage) -> Result<Option<Value>, String> {
    Ok(Some(tm::init_state(saved_state(storage).await?)))
  }

  async fn recall(&self, state: Option<&Value>, budget: f64, _exec: &ExecInfo) -> Result<Option<NativeRecall>, String> {
    let state = Self::state(state)?;
    let now = if self.config.ground_date_time { Some(self.now().await?) } else { None };
    Ok(tm::recall(&state, budget, now.as_deref(), &self.config).map(NativeRecall::from))
  }

  async fn store(
    &self,
    state: Option<&Value>,
    new_items: &[Arc<Item>],
    _exec: &ExecInfo,
  ) -> Result<NativeWrite, String> {
    let before = Self::state(state)?;
    let read = fields(new_items);
    let accumulated = tm::store(&before, &maps(&read), &self.config);
    self.settle(&before, accumulated).await
  }

  async fn on_item_append(&self, state: Option<&Value>, items: &[Arc<Item>]) -> Result<NativeWrite, String> {
    let before = Self::state(state)?;
    let read = fields(items);
    match tm::on_item_append(&before, &maps(&read), &self.config) {
      Some(accumulated) => self.settle(&before, accumulated).await,
      None => Ok(NativeWrite::Unchanged),
    }
  }

  async fn on_spawn(&self, parent_state: Option<&Value>) -> Result<NativeWrite, String> {
    Ok(spawned(parent_state.map(tm::on_spawn)))
  }

  /// `searchMemory`: the searcher's answer as it is (bounded, as no hook timeout covers a function), or the whole
  /// ledger without one. It never writes the state.
  async fn call(&self, name: &str, args: Value, state: Option<&Value>) -> Result<(Option<Value>, NativeWrite), String> {
    if name != tm::SEARCH_FUNCTION {
      return Err(format!("temporal has no function '{name}'"));
    }
    let query = tm::search_query(&args)?;
    let state = Self::state(state)?;
    let Some(search) = &self.search else { return Ok((Some(tm::unsearched(&state)), NativeWrite::Unchanged)) };
    let request = tm::search_request(query, &state, &self.now().await?);
    let limit = std::time::Duration::from_secs_f64(tm::SEARCH_TIMEOUT_MS / 1000.0);
    let answer = tokio::time::timeout(limit, search.call(request))
      .await
      .map_err(|_| format!("searchMemory: search did not settle within {}ms", tm::SEARCH_TIMEOUT_MS))??;
    Ok((Some(answer).filter(|value| !value.is_null()), NativeWrite::Unchanged))
  }
}

pub struct FileReference {
  pub config: FileReferenceConfig,
}

/// `fileReference(opts)` as a registered layer; the config already checked.
pub fn file_reference_layer(config: FileReferenceConfig) -> Layer {
  Layer {
    spec: fr::layer_spec(&config),
    imp: LayerImpl::Native(Arc::new(FileReference { config })),
    provides: Vec::new(),
    handle: None,
  }
}

impl FileReference {
  /// Every read of the plan in one request to the harness's filesystem.
  async fn read(
    &self,
    reads: &[crate::adapters::FileRead],
    ctx: HookCtx<'_>,
  ) -> Result<Vec<crate::adapters::FileOutcome>, String> {
    if reads.is_empty() {
      return Ok(Vec::new());
    }
    let files = ctx.files.ok_or("file-reference: the harness has no filesystem to read")?;
    files.read(reads).await
  }

  /// The asked files' scores, all at once: the model's (50 when it fails or answers nonsense), or without a model
  /// the path heuristic, as upstream scores without `ctx.callModel`.
  async fn scores(&self, asks: &[fr::ScoreAsk], ctx: HookCtx<'_>) -> Vec<f64> {
    let Some(model) = ctx.model else { return asks.iter().map(|ask| ask.heuristic).collect() };
    let context = &ctx.exec.execution_id;
    let model_name = &self.config.scoring_model;
    let replies = asks.iter().map(|ask| model.ask(context, model_name, Some(fr::SCORING_INSTRUCTIONS), &ask.prompt));
    futures_util::future::join_all(replies).await.iter().map(|reply| fr::parse_score(reply.as_deref().ok())).collect()
  }
}

#[async_trait]
impl NativeLayer for FileReference {
  async fn init(&self, storage: &ScopedStorage) -> Result<Option<Value>, String> {
    Ok(Some(fr::init_state(saved_state(storage).await?.as_ref(), &self.config.base_dir)))
  }

  async fn recall(&self, state: Option<&Value>, budget: f64, _exec: &ExecInfo) -> Result<Option<NativeRecall>, String> {
    let state = FileRefState::from_json(state, &self.config.base_dir)?;
    Ok(fr::recall(&state, budget).map(NativeRecall::from))
  }

  /// The items with their references anchored; every tracked file read again and each new one read, in one
  /// request; new and changed files scored; a re-render asked for when anything changed.
  async fn on_item_append_with(
    &self,
    state: Option<&Value>,
    items: &[Arc<Item>],
    ctx: HookCtx<'_>,
  ) -> Result<NativeAppend, String> {
    let before = FileRefState::from_json(state, &self.config.base_dir)?;
    let read = fields(items);
    let plan = fr::plan_append(&before, &maps(&read), &self.config);
    let outcomes = self.read(&plan.reads, ctx).await?;
    let mut settled = fr::settle_reads(before, &plan, outcomes, &self.config);
    let scores = self.scores(&settled.asks, ctx).await;
    fr::apply_scores(&mut settled.state, &settled.asks, &scores);
    let rewritten = plan.items.iter().any(Option::is_some).then(|| {
      items
        .iter()
        .zip(plan.items)
        .map(|(item, fields)| match fields.map(Item::from_map) {
          Some(Ok(rewritten)) => Arc::new(rewritten),
          _ => Arc::clone(item),
        })
        .collect()
    });
    Ok(NativeAppend {
      write: if settled.changed { NativeWrite::Set(settled.state.to_json()) } else { NativeWrite::Unchanged },
      items: rewritten,
      rerender: settled.changed.then(fr::rerender_request),
    })
  }
}
