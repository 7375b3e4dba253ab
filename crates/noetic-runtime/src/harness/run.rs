//! The one path an execution takes (init, the step, then onComplete and dispose on every outcome: D15), and the
//! [`Runner`] it takes it with: everything a step runs with, and nothing of sessions. Steps are functions over a
//! runner and a context; a session's turn is a run of this path in a context the session fills (`session/turns.rs`).

use crate::memory::cache_anchor::{CacheConfig, CacheStore};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::aside::LayerAsks;
use super::round_model::RoundRequest;
use super::{
  ChannelStore, ContextChannels, ExecContext, HarnessConfig, Model, ModelRequest, RunOptions, RunResult, StepSource,
  ToolDef, collect_tools, execute, inspect, llm, merge_tools,
};
use crate::host::StepValue;
use crate::host::protocol::HostRef;
use crate::items::ItemTypes;
use crate::memory::lifecycle::{self, ExecScope, MemoryEnv, Outcome, RecallCache};
use crate::memory::native::{AsideModel, LayerFiles};
use crate::memory::registry::LayerSet;
use crate::memory::{DEFAULT_PROJECTION, ProjectionPolicy, RecallMode, allocate_budgets};
use crate::provider::Round;
use crate::steps::{Emit, Step, StepAdapter};
use crate::tokens::{Tokenizer, count_tokens};

const DEFAULT_THREAD_ID: &str = "__default__";

/// What steps run with: the memory environment, the model, the projection, the item types and tokenizer, the
/// recall cache, the live contexts (which the binding reads and appends to by id) and the inspector. The harness
/// holds one, with its sessions beside it (`Harness` derefs to it).
pub struct Runner {
  /// The agent's name, which its events carry.
  pub name: String,
  pub env: MemoryEnv,
  pub layers: Arc<LayerSet>,
  pub projection: Option<ProjectionPolicy>,
  /// Shared with `asks`.
  pub model: Arc<Model>,
  pub force_atomic_recall: bool,
  /// The item types its contexts admit (`strictItemSchemas`).
  pub item_types: ItemTypes,
  /// The real tokenizer its logs, projection and `ctx.tokenize` count with; `None` counts upstream's estimate.
  pub tokenizer: Option<Tokenizer>,
  /// Eventual layers' recall entries, shared by the executions of this harness (D6).
  pub recall_cache: Arc<RecallCache>,
  /// What a step without tools of its own is offered in a context that takes input while it runs (a session turn's
  /// own context): the harness's initial step tree's tools, then its `tools`.
  pub turn_tools: Arc<Vec<ToolDef>>,
  /// Where routes and fork paths get their steps from (the host's step language); none on a host without one.
  pub step_source: Option<Arc<dyn StepSource>>,
  /// The model as built-in layers ask it; `None` without one.
  pub(super) asks: Option<Arc<dyn AsideModel>>,
  /// The filesystem built-in layers read (`ctx.fs`).
  pub(super) files: Option<Arc<dyn LayerFiles>>,
  contexts: Mutex<HashMap<String, Arc<ExecContext>>>,
  /// What `startInspector` shows; records nothing until it is opened.
  pub inspector: Arc<inspect::Inspector>,
  /// The channels its contexts share (a loop's inbox, an `every`'s wake), unless a context was given others.
  pub channels: Arc<ChannelStore>,
  /// Prompt-cache anchoring (`contextCache`) and its epochs; `None` assembles every request as 1.0.0 does.
  pub cache: Option<PromptCache>,
  /// The harness's own subprocess adapter (`harness.subprocess`), which a `step.run` without one of its own is
  /// handed to.
  pub subprocess: Option<StepAdapter>,
}

/// A harness's anchoring: its settings and its lineages' epochs.
pub struct PromptCache {
  pub config: CacheConfig,
  pub store: Mutex<CacheStore>,
}

/// An inspector's server runs until it is closed; a harness dropped with one open takes it down.
impl Drop for Runner {
  fn drop(&mut self) {
    self.inspector.stop_serving();
  }
}

impl Runner {
  /// The runner of a harness made with `config`: its model shared with built-in layers' asks, the inspector fed the
  /// environment's diagnostics, and the tools a turn's step is offered (the initial step tree's, then `tools`).
  pub(super) fn new(config: HarnessConfig, mut env: MemoryEnv) -> Self {
    let inspector = Arc::new(inspect::Inspector::default());
    env.sink = Arc::new(inspect::InspectingSink { inner: env.sink, inspector: Arc::clone(&inspector) });
    let model = Arc::new(config.model);
    let asks = model
      .is_configured()
      .then(|| Arc::new(LayerAsks { model: Arc::clone(&model), host: Arc::clone(&env.host) }) as Arc<dyn AsideModel>);
    let turn_tools =
      Arc::new(merge_tools(config.initial_step.as_deref().map(collect_tools).unwrap_or_default(), config.tools));
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
      turn_tools,
      contexts: Mutex::default(),
      inspector,
      channels: Arc::default(),
      cache: None,
      subprocess: None,
    }
  }

  /// `text`'s token count as this harness counts (its tokenizer, or upstream's estimate).
  pub fn count_tokens(&self, text: &str) -> u64 {
    count_tokens(self.tokenizer, text)
  }

  /// A live context by id, for the binding's reads and appends.
  pub fn context(&self, id: &str) -> Option<Arc<ExecContext>> {
    self.contexts.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
  }

  /// The store a loop's inbox in `ctx` reads: the runner's, unless the context was given another or none.
  pub fn channels_of(&self, ctx: &ExecContext) -> Option<Arc<ChannelStore>> {
    match ctx.channels() {
      ContextChannels::Runner => Some(Arc::clone(&self.channels)),
      ContextChannels::Given(store) => Some(store),
      ContextChannels::None => None,
    }
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
    if let Some(cache) = &self.cache {
      cache.store.lock().unwrap_or_else(PoisonError::into_inner).forget_execution(id);
    }
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
    // Timed only for an exporter (O1): the execution's span is its own, not one per run that joins it.
    let traced = self.trace_start();
    let (result, ended) = match self.enter_execution(ctx).await {
      Ok(()) => {
        let result = body().await;
        let ended = self.leave_execution(ctx, &result).await;
        (result, ended)
      }
      // Only a run that starts an execution fails to enter it: the failed init ended it.
      Err(failure) => (Err(failure), true),
    };
    self.trace_execution(traced.filter(|_| ended), ctx, &result);
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
  /// dispose); true when it did.
  async fn leave_execution(&self, ctx: &Arc<ExecContext>, result: &RunResult<StepValue>) -> bool {
    let mut runs = ctx.runs_in_flight.lock().await;
    *runs -= 1;
    if *runs == 0 {
      Box::pin(self.end_execution(ctx, result)).await;
    }
    *runs == 0
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

  /// Ends an execution that [`Runner::begin_execution`] started, whatever its outcome (D15): its eventual refreshes
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

  /// [`Runner::call_model_once`] naming `step_id` in its errors; also what summaries ask of a native model.
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
      cache: None,
    };
    let Some(model) = self.model.rounds() else { return Err(llm::no_provider().into()) };
    // With tools, the rounds go on while the model calls them, in the caller's context (its log untouched: the
    // items come back in the answer).
    match request.context.as_ref().filter(|_| !request.tools.is_empty()) {
      Some(ctx) => Box::pin(self.tool_loop(model, round, request.items.clone(), ctx, None)).await,
      None => model.answer(&round).await,
    }
  }

  /// The adapter a `step.run` is handed to (upstream's `resolveStepAdapter`): its own, else the harness's; none when
  /// that one runs steps in place, as ours without storage does, or when the step is the one an adapter was handed.
  pub fn adapter_of_run(&self, own: Option<StepAdapter>, in_place: bool) -> Option<HostRef> {
    let adapter = own.or(self.subprocess).filter(|_| !in_place)?;
    (!adapter.inline).then_some(adapter.handle)
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
