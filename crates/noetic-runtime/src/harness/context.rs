//! An execution context: the log, counters and results of one execution (a run, or a spawn child).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::watch;

use super::channels::ChannelStore;
use super::exec_io::ExecIo;
use crate::host::{ExecInfo, Host, HostError, StepValue, StepValueRef, TokenCounts};
use crate::items::{Item, ItemLog};
use crate::memory::registry::LayerSet;

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
  pub input: f64,
  pub output: f64,
  pub cached: f64,
  /// A model call's usage has been counted: from then on `ctx.tokens` carries `cached`, as upstream's `trackUsage`
  /// adds the key at the first call it counts.
  pub counted: bool,
  /// With prompt-cache anchoring: whether a provider reported its cache reads (so that a reported 0 is shown as 0,
  /// not as nothing), and the tokens it reported writing.
  pub cache_reported: bool,
  pub cache_write: Option<f64>,
}

impl Usage {
  /// Counts one model call's usage.
  pub fn add(&mut self, input: f64, output: f64, cached: f64) {
    self.input += input;
    self.output += output;
    self.cached += cached;
    self.counted = true;
  }

  /// A turn's `cachedTokens`: reported figures as they are once a provider reported any under anchoring; else, as
  /// 1.0.0 shows them, only when above 0.
  pub fn cached_shown(&self) -> Option<f64> {
    (self.cache_reported || self.cached > 0.0).then_some(self.cached)
  }

  /// `ctx.tokens` as upstream's context shows it: `total` is input plus output, and `cached` is there once a model
  /// call has been counted.
  pub fn to_json(&self) -> serde_json::Value {
    let mut tokens =
      serde_json::json!({ "input": self.input, "output": self.output, "total": self.input + self.output });
    if self.counted {
      tokens["cached"] = serde_json::json!(self.cached);
    }
    tokens
  }
}

/// What the last LLM step left as `ctx.lastStepMeta`: its function calls and usage, kept as they are and written
/// as JSON only when something reads them (a loop's predicate, JS), since most steps' never are; or the value user
/// code set.
#[derive(Debug, Clone)]
pub enum StepMeta {
  Model { tool_calls: Vec<Arc<crate::items::Item>>, input_tokens: f64, output_tokens: f64, cost: f64 },
  Given(Value),
}

impl StepMeta {
  /// `{toolCalls, usage: {inputTokens, outputTokens}, cost}`, or the value given.
  pub fn to_json(&self) -> Value {
    match self {
      Self::Model { tool_calls, input_tokens, output_tokens, cost } => serde_json::json!({
        "toolCalls": tool_calls.iter().map(|item| Value::Object(item.fields().into_owned())).collect::<Vec<_>>(),
        "usage": { "inputTokens": input_tokens, "outputTokens": output_tokens },
        "cost": cost,
      }),
      Self::Given(value) => value.clone(),
    }
  }
}

#[derive(Default)]
pub struct ContextState {
  pub log: ItemLog,
  pub step_count: u64,
  pub tokens: Usage,
  pub cost: f64,
  /// `lastStepMeta`, made into the JSON JS reads only when read.
  pub last_step_meta: Option<StepMeta>,
  pub last_tool_calls: usize,
  /// The model of the last LLM step: what a spawn's summary asks when it names none.
  pub last_model: Option<String>,
  /// What a `summarize` projection shows in place of the history it dropped (D10).
  pub overflow_summary: Option<OverflowSummary>,
  /// `lastLayerUsage` as the JSON JS reads.
  pub last_layer_usage: Option<super::usage::LayerUsage>,
  pub completion: Option<StepValue>,
  pub abort_reason: Option<String>,
  /// Whether this context's layers have their states for the execution in flight: set by init (or by a checkpoint
  /// restored into the context, whose first run then skips init), cleared when the execution ends.
  pub layers_ready: bool,
  /// Set when an execution in this context ended (onComplete, dispose, its states dropped and the host and built-ins
  /// told), cleared when anything runs its layers again: dropping the context then has nothing left to end.
  pub execution_ended: bool,
  /// The steps in flight in this context, outermost first, each under the number it entered with: what a
  /// checkpoint records as the frontier.
  pub frontier: Vec<(u64, FrontierFrame)>,
  next_frame: u64,
}

impl ContextState {
  /// The span of the innermost traced frame in flight (of `step_id` only, when given); `None` outside any, or
  /// untraced.
  pub fn traced_frame(&self, step_id: Option<&str>) -> Option<String> {
    let mut frames = self.frontier.iter().rev().filter(|(_, frame)| step_id.is_none_or(|id| frame.step_id == id));
    frames.find_map(|(_, frame)| frame.span_id.clone())
  }
}

/// What a `summarize` projection puts in place of the history before `covers` (log positions), kept by the context
/// and extended whenever the budget drops more (D10).
#[derive(Debug, Clone)]
pub struct OverflowSummary {
  pub covers: usize,
  pub text: String,
  /// The developer message the view shows after the layer items.
  pub item: Arc<Item>,
}

/// A step in flight: its id and the input it was given.
#[derive(Debug, Clone)]
pub struct FrontierFrame {
  pub step_id: String,
  pub input: StepValueRef,
  /// The step's span id while the harness traces (O2): what the spans of its nested steps, its model and tool calls
  /// and a child context's execution hang under.
  pub span_id: Option<String>,
}

/// Which channel store a context's loops read their inboxes from.
#[derive(Clone, Default)]
pub enum ContextChannels {
  /// Its runner's (the harness's).
  #[default]
  Runner,
  Given(Arc<ChannelStore>),
  /// None: an inbox that waits gets nothing, one that does not fails the loop (upstream's ContextImpl without one).
  None,
}

pub struct ExecContext {
  pub id: String,
  pub thread_id: String,
  pub resource_id: Option<String>,
  pub depth: u32,
  pub parent: Option<String>,
  /// The context at the root of its lineage, whose id names the trace its spans belong to (D14).
  pub root: String,
  /// The span its execution's hangs under when that is not its parent context's: the spawn or fork step that made
  /// it, while the harness traces (O2).
  pub parent_span: Option<String>,
  /// Its memory layers; `provide` adds some for the time its child runs.
  layers: Mutex<Arc<LayerSet>>,
  started: Instant,
  state: Mutex<ContextState>,
  /// Flips to true on abort, so that work in flight (a model call) can end instead of only the next step.
  abort_signal: watch::Sender<bool>,
  /// Where its steps and model calls report (a session's event stream), shared with its children.
  io: Option<Arc<dyn ExecIo>>,
  /// Whether its tool rounds take in the messages `io` holds for it (a session turn's own context only, not its
  /// children's, as upstream).
  receives_input: bool,
  /// How many items past the log's end the host holds and has not sent (DECISIONS L1): appended while no run was
  /// in flight, they are the log's next positions, and a run that reads the log natively asks for them first.
  held_by_host: AtomicU32,
  /// Taken while a run asks for the held items, so that a second run waits for them instead of reading the log
  /// before they arrive.
  taking_held: tokio::sync::Mutex<()>,
  /// Told when the context is aborted, so that what the host parked for it (a channel receive) ends too.
  abort_listener: std::sync::OnceLock<Arc<dyn Host>>,
  /// The channel store its loops' inboxes read, when not the runner's.
  channels: std::sync::OnceLock<ContextChannels>,
  /// Runs in flight in this context, which share one execution: the first starts it, the last ends it (a turn, a
  /// run, and the runs its steps start in it, `Runner::run_existing`).
  pub(crate) runs_in_flight: tokio::sync::Mutex<usize>,
}

impl ExecContext {
  pub fn new(
    id: String,
    thread_id: String,
    resource_id: Option<String>,
    depth: u32,
    parent: Option<String>,
    layers: Arc<LayerSet>,
  ) -> Self {
    Self {
      root: id.clone(),
      parent_span: None,
      id,
      thread_id,
      resource_id,
      depth,
      parent,
      layers: Mutex::new(layers),
      started: Instant::now(),
      state: Mutex::default(),
      abort_signal: watch::Sender::new(false),
      io: None,
      receives_input: false,
      held_by_host: AtomicU32::new(0),
      taking_held: tokio::sync::Mutex::new(()),
      abort_listener: std::sync::OnceLock::new(),
      channels: std::sync::OnceLock::new(),
      runs_in_flight: tokio::sync::Mutex::new(0),
    }
  }

  /// The host holds `count` more items past the log's end (appended while no run was in flight); answers the
  /// position of the first.
  pub fn hold_items(&self, count: u32) -> u32 {
    let log_len = self.state().log.len() as u32;
    log_len + self.held_by_host.fetch_add(count, Ordering::AcqRel)
  }

  /// Where the items the host holds start (the log's length) and how many there are, as the host takes them to send
  /// them: from then on the log holds none (one the host cannot send, it drops).
  pub fn take_held(&self) -> (u32, u32) {
    (self.state().log.len() as u32, self.held_by_host.swap(0, Ordering::AcqRel))
  }

  /// The log's length with the items the host holds: what user code sees of it.
  pub fn length_with_held(&self) -> u32 {
    self.state().log.len() as u32 + self.held_by_host.load(Ordering::Acquire)
  }

  /// Has the host send the items it holds of this log, if it holds any: before a step reads the log natively.
  pub async fn take_held_items(&self, host: &dyn Host) -> Result<(), HostError> {
    let _taking = self.taking_held.lock().await;
    if self.held_by_host.load(Ordering::Acquire) > 0 {
      host.send_held_items(&self.id).await?;
    }
    Ok(())
  }

  /// A new context one deeper than `parent`: its thread and resource, reporting to its session's stream (a spawn's
  /// child, a fork's path).
  pub fn child_of(parent: &ExecContext, layers: Arc<LayerSet>) -> Self {
    let mut child = Self::new(
      uuid::Uuid::new_v4().to_string(),
      parent.thread_id.clone(),
      parent.resource_id.clone(),
      parent.depth + 1,
      Some(parent.id.clone()),
      layers,
    );
    child.root = parent.root.clone();
    // The step making it is the parent's innermost frame; untraced, no frame has a span.
    child.parent_span = parent.state().frontier.last().and_then(|(_, frame)| frame.span_id.clone());
    child.io = parent.io.clone();
    child
  }

  /// Its memory layers as they are now.
  /// Its fixed fields as the host shows them, with `layers` (its layers now).
  pub fn facts<'a>(&'a self, layers: &'a LayerSet) -> crate::host::ContextFacts<'a> {
    crate::host::ContextFacts {
      id: &self.id,
      thread_id: &self.thread_id,
      resource_id: self.resource_id.as_deref(),
      depth: self.depth,
      parent: self.parent.as_deref(),
      root: &self.root,
      layers,
    }
  }

  pub fn layers(&self) -> Arc<LayerSet> {
    Arc::clone(&self.layers.lock().unwrap_or_else(PoisonError::into_inner))
  }

  /// Replaces its layers, returning the ones it had.
  pub fn set_layers(&self, layers: Arc<LayerSet>) -> Arc<LayerSet> {
    std::mem::replace(&mut self.layers.lock().unwrap_or_else(PoisonError::into_inner), layers)
  }

  /// Whether this context takes in messages sent while it runs (a session turn's own, not its children): only it is
  /// offered the turn's tools (the runner's `turn_tools`), as upstream offers a session's tools.
  pub fn receives_input(&self) -> bool {
    self.receives_input
  }

  /// Reports to `io`; `receives_input`: its tool rounds take in the messages `io` holds for it.
  pub fn with_io(mut self, io: Arc<dyn ExecIo>, receives_input: bool) -> Self {
    self.io = Some(io);
    self.receives_input = receives_input;
    self
  }

  /// Where its steps and model calls report, if anywhere.
  pub fn io(&self) -> Option<&dyn ExecIo> {
    self.io.as_deref()
  }

  /// Moves `from`'s history into this context: its log, which is not copied, and what summarises the part of it
  /// that projection dropped. A session's next turn takes the history of the one before this way.
  pub fn take_history(&self, from: &ExecContext) {
    let (log, summary) = {
      let mut from = from.state();
      (std::mem::take(&mut from.log), from.overflow_summary.take())
    };
    let mut state = self.state();
    state.log = log;
    state.overflow_summary = summary;
  }

  /// The context's mutable part. Never held across an await.
  pub fn state(&self) -> MutexGuard<'_, ContextState> {
    self.state.lock().unwrap_or_else(PoisonError::into_inner)
  }

  pub fn elapsed_ms(&self) -> f64 {
    self.started.elapsed().as_secs_f64() * 1000.0
  }

  pub fn aborted(&self) -> Option<String> {
    self.state().abort_reason.clone()
  }

  /// Aborts the execution; the first reason stays, and the host hears of the first abort.
  pub fn abort(&self, reason: String) {
    let first = {
      let mut state = self.state();
      let first = state.abort_reason.is_none();
      state.abort_reason.get_or_insert_with(|| reason.clone());
      first
    };
    self.abort_signal.send_replace(true);
    if let (true, Some(host)) = (first, self.abort_listener.get()) {
      let layers = self.layers();
      host.context_aborted(&self.facts(&layers), &reason);
    }
  }

  /// Gives the context another channel store than its runner's, or none (`/internal/test`'s ContextImpl); once.
  pub fn use_channels(&self, channels: ContextChannels) {
    let _ = self.channels.set(channels);
  }

  pub fn channels(&self) -> ContextChannels {
    self.channels.get().cloned().unwrap_or_default()
  }

  /// The host to tell when this context is aborted.
  pub fn listen_for_abort(&self, host: Arc<dyn Host>) {
    let _ = self.abort_listener.set(host);
  }

  /// Resolves with the abort reason once the context is aborted (at once if it already is).
  pub async fn until_aborted(&self) -> String {
    let mut signal = self.abort_signal.subscribe();
    // The sender lives as long as `self`, so waiting cannot fail while we are borrowed.
    let _ = signal.wait_for(|aborted| *aborted).await;
    self.aborted().unwrap_or_default()
  }

  /// Records `step_id` as in flight with `input` (and its span, while the harness traces); the number returned takes
  /// it out again ([`Self::leave_step`]). Two runs may share a context, so frames leave by number rather than from
  /// the top.
  pub fn enter_step(&self, step_id: &str, input: &StepValue, span_id: Option<String>) -> u64 {
    let mut state = self.state();
    let number = state.next_frame;
    state.next_frame += 1;
    state.frontier.push((number, FrontierFrame { step_id: step_id.to_owned(), input: input.into(), span_id }));
    number
  }

  /// The span that one in `step_id` (any step, with none) hangs under: the innermost traced frame of it, or the
  /// execution's (the context's id) outside any (O2).
  pub fn innermost_span(&self, step_id: Option<&str>) -> String {
    self.state().traced_frame(step_id).unwrap_or_else(|| self.id.clone())
  }

  pub fn leave_step(&self, number: u64) {
    let mut state = self.state();
    if let Some(at) = state.frontier.iter().rposition(|(n, _)| *n == number) {
      state.frontier.remove(at);
    }
  }

  /// What hooks see of this execution, copied now.
  pub fn exec_info(&self, has_model: bool) -> ExecInfo {
    let state = self.state();
    ExecInfo {
      execution_id: self.id.clone(),
      thread_id: self.thread_id.clone(),
      resource_id: self.resource_id.clone(),
      depth: self.depth,
      step_number: state.step_count,
      token_usage: TokenCounts { input: state.tokens.input, output: state.tokens.output },
      cost: state.cost,
      has_model,
      trace_id: self.root.clone(),
      step_span: state.traced_frame(None),
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn context(id: &str) -> ExecContext {
    ExecContext::new(id.into(), "t".into(), None, 0, None, Arc::new(LayerSet::default()))
  }

  #[test]
  fn a_span_hangs_under_the_innermost_traced_frame_or_the_execution() {
    let ctx = context("exec");
    let input = StepValue::Text("x".into());
    assert_eq!(ctx.innermost_span(None), "exec", "outside any step: the execution");
    let outer = ctx.enter_step("loop", &input, Some("s-loop".into()));
    let llm = ctx.enter_step("ask", &input, Some("s-ask".into()));
    ctx.enter_step("untraced", &input, None);
    assert_eq!(ctx.innermost_span(None), "s-ask", "a frame without a span is passed over");
    assert_eq!(ctx.innermost_span(Some("loop")), "s-loop");
    assert_eq!(ctx.innermost_span(Some("gone")), "exec");
    // A child made inside a traced step hangs under it; one made outside any, under its parent context.
    let child = ExecContext::child_of(&ctx, Arc::new(LayerSet::default()));
    assert_eq!(child.parent_span, None, "the innermost frame has no span");
    ctx.leave_step(llm + 1);
    assert_eq!(ExecContext::child_of(&ctx, Arc::new(LayerSet::default())).parent_span.as_deref(), Some("s-ask"));
    ctx.leave_step(llm);
    ctx.leave_step(outer);
    assert_eq!(ExecContext::child_of(&ctx, Arc::new(LayerSet::default())).parent_span, None);
  }
}
