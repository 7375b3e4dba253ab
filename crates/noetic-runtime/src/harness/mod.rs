//! The harness: owns the memory environment, the default layers and projection, the model, and the live
//! contexts; `run` is one execution from init to dispose.

mod aside;
pub mod checkpoint;
mod context;
mod error;
pub mod exec_io;
mod fork;
pub mod inspect;
mod interpreter;
mod layer_calls;
mod llm;
mod model;
mod model_events;
mod round_model;
mod scripted;
pub mod session;
mod spawn;
mod summary;
mod tool_loop;
mod tools;
mod usage;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use self::round_model::RoundRequest;
use crate::host::StepValue;
use crate::items::{Item, ItemTypes};
use crate::memory::lifecycle::{self, ExecScope, MemoryEnv, Outcome, RecallCache};
use crate::memory::native::{AsideModel, LayerFiles};
use crate::memory::registry::LayerSet;
use crate::memory::{DEFAULT_PROJECTION, ProjectionPolicy, RecallMode, allocate_budgets};
use crate::provider::Round;
use crate::steps::{Emit, ModelParams, Step};
use crate::tokens::{Tokenizer, count_tokens};

pub use self::context::{ContextState, ExecContext, FrontierFrame, StepMeta, Usage};
pub use self::error::{RunError, RunResult};
pub use self::interpreter::{StepSource, execute};
pub use self::layer_calls::{LayerCall, LayerCallResult, RecallSelect};
pub use self::model::Model;
pub use self::scripted::{ScriptedModel, ScriptedToolCall, ScriptedTurn};
pub use self::tools::{ToolDef, ToolImpl, collect_tools, layer_tools, merge_tools, wire_name};

pub struct HarnessConfig {
  pub name: String,
  pub layers: Arc<LayerSet>,
  pub projection: Option<ProjectionPolicy>,
  pub model: Model,
  /// Every layer recalls atomically, in the hot path, whatever its `recallMode` (D6).
  pub force_atomic_recall: bool,
  /// The step a session's turns run (`initialStep`).
  pub initial_step: Option<Arc<Step>>,
  /// Tools offered in every session, besides those of the step tree (`tools`).
  pub tools: Vec<ToolDef>,
}

pub struct Harness {
  pub name: String,
  pub env: MemoryEnv,
  pub layers: Arc<LayerSet>,
  pub projection: Option<ProjectionPolicy>,
  /// Shared with [`Harness::asks`].
  pub model: Arc<Model>,
  pub force_atomic_recall: bool,
  /// The item types its contexts admit (`strictItemSchemas`); set with [`Harness::with_item_types`].
  pub item_types: ItemTypes,
  /// The real tokenizer its logs, projection and `ctx.tokenize` count with; `None` counts upstream's estimate.
  pub tokenizer: Option<Tokenizer>,
  /// Eventual layers' recall entries, shared by the executions of this harness (D6).
  pub recall_cache: Arc<RecallCache>,
  pub initial_step: Option<Arc<Step>>,
  /// What a session's step without tools of its own is offered: the step tree's tools, then the harness's.
  pub session_tools: Arc<Vec<ToolDef>>,
  /// Where routes and fork paths get their steps from (the host's step language); none on a host without one.
  pub step_source: Option<Arc<dyn StepSource>>,
  /// The model as built-in layers ask it; `None` without one.
  asks: Option<Arc<dyn AsideModel>>,
  /// The filesystem built-in layers read (`ctx.fs`); set with [`Harness::with_files`].
  files: Option<Arc<dyn LayerFiles>>,
  contexts: Mutex<HashMap<String, Arc<ExecContext>>>,
  sessions: Mutex<HashMap<String, Arc<session::Session>>>,
  /// Where sessions' histories are kept (`persistSessions`); `None` keeps them in memory only, as upstream.
  session_store: Option<session::SessionStore>,
  /// How long a persisted session stays in memory after its last turn (`sessionIdleMs`); `None`: for good.
  session_idle: Option<std::time::Duration>,
  /// What `startInspector` shows; records nothing until it is opened.
  pub inspector: Arc<inspect::Inspector>,
}

/// What `harness.callModel` asks of the harness's model.
#[derive(Clone, Default)]
pub struct ModelRequest {
  pub model: String,
  pub instructions: Option<String>,
  pub items: Vec<Arc<Item>>,
  pub params: ModelParams,
  /// Tools the model may call, run in `context` round after round, as a step's are (upstream's `callModel` with
  /// `tools` and `ctx`).
  pub tools: Vec<ToolDef>,
  pub context: Option<Arc<ExecContext>>,
  /// The JSON Schema the answer must follow (`outputSchema`).
  pub output_schema: Option<serde_json::Value>,
}

/// Options of one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
  pub thread_id: Option<String>,
  pub resource_id: Option<String>,
  /// Overrides the harness's layers for this run.
  pub layers: Option<Arc<LayerSet>>,
}

const DEFAULT_THREAD_ID: &str = "__default__";

impl Harness {
  pub fn new(config: HarnessConfig, mut env: MemoryEnv) -> Self {
    let inspector = Arc::new(inspect::Inspector::default());
    env.sink = Arc::new(inspect::InspectingSink { inner: env.sink, inspector: Arc::clone(&inspector) });
    let model = Arc::new(config.model);
    let asks = model.is_configured().then(|| {
      Arc::new(aside::LayerAsks { model: Arc::clone(&model), host: Arc::clone(&env.host) }) as Arc<dyn AsideModel>
    });
    Self {
      name: config.name,
      env,
      layers: config.layers,
      projection: config.projection,
      model,
      asks,
      files: None,
      force_atomic_recall: config.force_atomic_recall,
      item_types: ItemTypes::default(),
      tokenizer: None,
      step_source: None,
      recall_cache: Arc::new(RecallCache::new()),
      session_tools: Arc::new(merge_tools(
        config.initial_step.as_deref().map(collect_tools).unwrap_or_default(),
        config.tools,
      )),
      initial_step: config.initial_step,
      contexts: Mutex::default(),
      sessions: Mutex::default(),
      session_store: None,
      session_idle: None,
      inspector,
    }
  }

  /// Keeps every session's history in the memory environment's storage, each turn appending its new items, and
  /// drops a session from memory once it has been idle for `idle` (see `session::store`).
  pub fn with_persisted_sessions(mut self, idle: Option<std::time::Duration>) -> Self {
    self.session_store = Some(session::SessionStore::new(Arc::clone(&self.env.storage)));
    self.session_idle = idle;
    self
  }

  pub fn with_item_types(mut self, item_types: ItemTypes) -> Self {
    self.item_types = item_types;
    self
  }

  pub fn with_step_source(mut self, source: Arc<dyn StepSource>) -> Self {
    self.step_source = Some(source);
    self
  }

  pub fn with_files(mut self, files: Arc<dyn LayerFiles>) -> Self {
    self.files = Some(files);
    self
  }

  pub fn with_tokenizer(mut self, tokenizer: Option<Tokenizer>) -> Self {
    self.tokenizer = tokenizer;
    self
  }

  /// `text`'s token count as this harness counts (its tokenizer, or upstream's estimate).
  pub fn count_tokens(&self, text: &str) -> u64 {
    count_tokens(self.tokenizer, text)
  }

  /// A live context by id, for the binding's reads and appends.
  pub fn context(&self, id: &str) -> Option<Arc<ExecContext>> {
    self.contexts.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
  }

  pub fn live_contexts(&self) -> usize {
    self.contexts.lock().unwrap_or_else(PoisonError::into_inner).len()
  }

  pub fn open_context(&self, ctx: ExecContext) -> Arc<ExecContext> {
    ctx.state().log.use_tokenizer(self.tokenizer);
    ctx.listen_for_abort(Arc::clone(&self.env.host));
    let ctx = Arc::new(ctx);
    self.contexts.lock().unwrap_or_else(PoisonError::into_inner).insert(ctx.id.clone(), Arc::clone(&ctx));
    ctx
  }

  pub fn close_context(&self, id: &str) {
    // Normally a no-op: the run already finished its refreshes. A context forgotten mid-run must not keep any.
    self.recall_cache.close(id);
    self.contexts.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
    self.env.host.release_context(id);
  }

  pub(crate) fn scope<'a>(&self, ctx: &'a ExecContext) -> ExecScope<'a> {
    ExecScope {
      layers: ctx.layers(),
      context: &ctx.id,
      thread_id: &ctx.thread_id,
      resource_id: ctx.resource_id.as_deref(),
      info: ctx.exec_info(self.model.is_configured()),
      item_types: self.item_types,
      model: self.asks.clone(),
      files: self.files.clone(),
    }
  }

  /// One execution: init the layers, run the step, then onComplete and dispose whatever happened (D15).
  pub async fn run(&self, step: &Step, input: StepValue, options: RunOptions) -> RunResult<StepValue> {
    let layers = options.layers.unwrap_or_else(|| Arc::clone(&self.layers));
    let ctx = ExecContext::new(
      uuid::Uuid::new_v4().to_string(),
      options.thread_id.unwrap_or_else(|| DEFAULT_THREAD_ID.to_owned()),
      options.resource_id,
      0,
      None,
      layers,
    );
    let ctx = self.open_context(ctx);
    let result = self.run_in(&ctx, step, input).await;
    self.close_context(&ctx.id);
    result
  }

  /// Runs a step in a context that outlives the run: one from `harness.createContext()`, or one whose execution is
  /// already under way (`ctx.harness.run(step, input, ctx)` from a step, which joins it). A run that starts the
  /// context's execution initialises its layers, reloading their state from storage, and the run that ends it
  /// completes and disposes them; the context, its log and its counters stay open for the next run.
  pub async fn run_existing(&self, ctx: &Arc<ExecContext>, step: &Step, input: StepValue) -> RunResult<StepValue> {
    self.in_execution(ctx, || execute(self, step, input, ctx)).await
  }

  /// Runs `body` within the execution in flight in `ctx`, starting one first when there is none, and ending it after
  /// when no other run is still in it.
  pub(crate) async fn in_execution<F>(&self, ctx: &Arc<ExecContext>, body: impl FnOnce() -> F) -> RunResult<StepValue>
  where
    F: std::future::Future<Output = RunResult<StepValue>>,
  {
    self.enter_execution(ctx).await?;
    let result = body().await;
    self.leave_execution(ctx, &result).await;
    result
  }

  /// Joins the execution in flight in `ctx`, or starts one (init) when there is none.
  async fn enter_execution(&self, ctx: &Arc<ExecContext>) -> RunResult<()> {
    let mut runs = ctx.runs_in_flight.lock().await;
    if *runs == 0 {
      // Boxed: a step that runs a step in a context of its own nests runs, each polled inside the last on one stack
      // (64 spawns deep); init's large future must not make every level's frame larger.
      Box::pin(self.begin_execution(ctx)).await?;
    }
    *runs += 1;
    Ok(())
  }

  /// Leaves the execution in flight in `ctx`; the last to leave ends it (onComplete with `result`'s outcome, then
  /// dispose).
  async fn leave_execution(&self, ctx: &Arc<ExecContext>, result: &RunResult<StepValue>) {
    let mut runs = ctx.runs_in_flight.lock().await;
    *runs -= 1;
    if *runs == 0 {
      Box::pin(self.end_execution(ctx, result)).await;
    }
  }

  /// Starts an execution in `ctx`: every layer's init, which reloads a durable layer's state from storage. Skipped
  /// when the context's layer states are already in place (a restored checkpoint's). A failed init still ends the
  /// layers that did initialise.
  async fn begin_execution(&self, ctx: &Arc<ExecContext>) -> RunResult<()> {
    if ctx.layers().is_empty() || std::mem::replace(&mut ctx.state().layers_ready, true) {
      return Ok(());
    }
    ctx.state().execution_ended = false;
    let scope = self.scope(ctx);
    if let Err(failure) = lifecycle::init_layers(&self.env, &scope).await {
      lifecycle::dispose_layers(&self.env, &scope).await;
      ctx.state().layers_ready = false;
      return Err(failure.into());
    }
    self.refresh_after_init(ctx);
    Ok(())
  }

  /// Ends an execution that [`Harness::begin_execution`] started, whatever its outcome (D15): its eventual refreshes
  /// settle, then onComplete with the outcome, then dispose, and its per-execution state is dropped.
  async fn end_execution(&self, ctx: &Arc<ExecContext>, result: &RunResult<StepValue>) {
    // No refresh may read this execution's state once onComplete and dispose have run.
    self.recall_cache.finish(&ctx.id).await;
    if ctx.layers().is_empty() {
      return;
    }
    let outcome = match (result, ctx.aborted()) {
      (_, Some(_)) => Outcome::Aborted,
      (Ok(_), None) => Outcome::Success,
      (Err(_), None) => Outcome::Failure,
    };
    let scope = self.scope(ctx);
    lifecycle::complete_layers(&self.env, &scope, outcome).await;
    lifecycle::dispose_layers(&self.env, &scope).await;
    let mut state = ctx.state();
    state.layers_ready = false;
    state.execution_ended = true;
  }

  /// One model round with no tools and no context: what a memory hook's `ctx.callModel` and `harness.callModel`
  /// do. It is not added to any context's tokens (§2.4).
  pub async fn call_model_once(&self, request: &ModelRequest) -> RunResult<Round> {
    self.answer_aside("callModel", request).await
  }

  /// [`Harness::call_model_once`] naming `step_id` in its errors; also what summaries ask of a native model.
  pub(crate) async fn answer_aside(&self, step_id: &str, request: &ModelRequest) -> RunResult<Round> {
    let round = RoundRequest {
      step_id,
      model: &request.model,
      instructions: request.instructions.as_deref(),
      params: &request.params,
      conversation: &request.items,
      tools: &request.tools,
      output_schema: request.output_schema.as_ref(),
      ctx: request.context.as_deref(),
      nudge: false,
      emit: Emit::All,
      first_event: None,
      stalled: None,
    };
    let Some(model) = self.model.rounds() else { return Err(llm::no_provider().into()) };
    // With tools, the rounds go on while the model calls them, in the caller's context (its log untouched: the
    // items come back in the answer).
    match request.context.as_ref().filter(|_| !request.tools.is_empty()) {
      Some(ctx) => Box::pin(self.tool_loop(model, round, request.items.clone(), ctx, None)).await,
      None => model.answer(&round).await,
    }
  }

  /// Forgets a context the caller kept, and its layers' state. No hook runs.
  pub fn drop_context(&self, id: &str) {
    let ctx = self.context(id);
    self.close_context(id);
    // A session's last turn ended its execution already: telling the host and the built-ins again would be a second
    // notice per turn for nothing.
    if ctx.as_ref().is_some_and(|ctx| ctx.state().execution_ended) {
      return;
    }
    let layers = ctx.map(|ctx| ctx.layers());
    lifecycle::end_execution(&self.env, layers.as_deref().map(LayerSet::layers).unwrap_or_default(), id);
  }

  /// Runs a step in a fresh context as one execution: init, the step, then onComplete and dispose.
  pub async fn run_in(&self, ctx: &Arc<ExecContext>, step: &Step, input: StepValue) -> RunResult<StepValue> {
    self.run_existing(ctx, step, input).await
  }

  /// Whether eventual layers are served from the cache (not under `forceAtomicRecall`).
  pub(crate) fn recall_cache_in_use(&self) -> Option<&Arc<RecallCache>> {
    (!self.force_atomic_recall).then_some(&self.recall_cache)
  }

  /// Starts the refresh of eventual layers that D6 asks for after init. No allocation has happened yet in this
  /// execution, so a key that has none recorded gets the harness policy's, with no system prompt.
  fn refresh_after_init(&self, ctx: &ExecContext) {
    let Some(cache) = self.recall_cache_in_use() else { return };
    if !ctx.layers().layers().iter().any(|layer| layer.spec.recall_mode == RecallMode::Eventual) {
      return;
    }
    let policy = self.projection.clone().unwrap_or(DEFAULT_PROJECTION);
    // A policy allocate_budgets rejects fails the step itself; here it only leaves the budget at 0.
    let budgets = layer_budgets(&ctx.layers(), &policy, 0.0).unwrap_or_default();
    lifecycle::refresh_eventual(&self.env, cache, &self.scope(ctx), &budgets);
  }
}

/// Each layer's recall budget under `policy`, by layer id (§10).
pub(crate) fn layer_budgets(
  layers: &LayerSet,
  policy: &ProjectionPolicy,
  system_tokens: f64,
) -> Result<HashMap<String, f64>, crate::error::ConfigError> {
  let ids: Vec<_> = layers.layers().iter().map(|layer| (layer.id(), layer.spec.budget)).collect();
  let allocation = allocate_budgets(&ids, policy.token_budget, system_tokens, policy.response_reserve)?;
  Ok(allocation.allocations.into_iter().map(|a| (a.layer_id, a.allocated)).collect())
}
