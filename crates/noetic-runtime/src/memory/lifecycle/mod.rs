//! The layer lifecycle: one function per hook phase. Each decides which layers run (slot order, the skip gate),
//! with which arguments and timeout, runs built-in layers in Rust and every JS layer of the phase in one host
//! batch, then applies what came back: state writes, durable mirroring and diagnostics.

mod append;
mod complete;
mod eventual;
mod init;
mod project;
mod recall;
mod recall_each;
mod render_delta;
mod spawn;
mod steering;
mod store;

use std::sync::Arc;

use super::HookKind;
use super::native::{AsideModel, HookCtx, LayerFiles};
use super::registry::{Layer, LayerImpl, LayerSet};
use super::state::{DiagnosticSink, Persist, StateStore, StateValue, StateWrite};
use super::trace::{HookSpan, SpanBudget, TraceTarget};
use crate::host::{ExecInfo, HookArgs, HookBatch, HookCall, HookReply, HookStatus, Host, RecallReply};
use crate::items::ItemTypes;
use crate::storage::Storage;

pub use self::append::{Appended, append_items, append_with_requests};
pub use self::complete::{Outcome, complete_layers, dispose_layers, end_execution};
pub use self::eventual::{RecallCache, refresh_eventual};
pub use self::init::{InitFailure, RestoredStates, init_layers, restore_layers};
pub use self::project::project_history;
pub use self::recall::{recall_layers, rerender_layers};
pub use self::recall_each::RecallEntry;
pub use self::render_delta::render_deltas;
pub use self::spawn::{return_layers, spawn_layers};
pub use self::steering::{after_model_call, before_tool_call, most_restrictive};
pub use self::store::store_layers;
pub use crate::memory::history::Projected;

/// What every phase needs from the harness.
#[derive(Clone)]
pub struct MemoryEnv {
  pub host: Arc<dyn Host>,
  pub states: Arc<StateStore>,
  pub sink: Arc<dyn DiagnosticSink>,
  pub storage: Arc<dyn Storage>,
}

/// The execution a phase runs for.
#[derive(Clone)]
pub struct ExecScope<'a> {
  pub layers: Arc<LayerSet>,
  /// The context whose log hooks receive; also the execution id.
  pub context: &'a str,
  pub thread_id: &'a str,
  pub resource_id: Option<&'a str>,
  pub info: ExecInfo,
  /// Which item types hooks may hand back (`strictItemSchemas`).
  pub item_types: ItemTypes,
  /// The harness's model for built-in layers' own questions; `None` when it has none.
  pub model: Option<Arc<dyn AsideModel>>,
  /// The harness's filesystem for built-in layers' reads; `None` when it has none.
  pub files: Option<Arc<dyn LayerFiles>>,
}

impl ExecScope<'_> {
  pub fn exec_id(&self) -> &str {
    &self.info.execution_id
  }

  fn trace_target(&self) -> TraceTarget<'_> {
    let step_span = self.info.step_span.as_deref();
    TraceTarget { trace_id: &self.info.trace_id, context: self.context, thread_id: &self.info.thread_id, step_span }
  }

  /// What a built-in hook may reach in this execution.
  fn hook_ctx(&self) -> HookCtx<'_> {
    HookCtx { exec: &self.info, model: self.model.as_ref(), files: self.files.as_ref() }
  }
}

impl MemoryEnv {
  /// The skip gate (§5.2): a disabled layer, or one with `init` whose init never ran in this execution.
  pub fn skipped(&self, exec: &str, layer: &Layer) -> bool {
    self.states.kept_out(exec, layer.id(), layer.has(HookKind::Init))
  }

  /// The layers that take part in a phase, in slot order (reversed for dispose).
  /// Layers the gate keeps out show in the trace as `skipped` (D22).
  fn participants<'s>(&self, scope: &'s ExecScope<'_>, hook: HookKind) -> Vec<&'s Arc<Layer>> {
    let exec = scope.exec_id();
    let mut skipped = Vec::new();
    let mut keep = |layer: &&Arc<Layer>| {
      if !layer.has(hook) {
        return false;
      }
      let skip = self.skipped(exec, layer);
      if skip && self.sink.tracing() {
        skipped.push(HookSpan::timed(scope.trace_target(), layer.id(), hook, 0.0, &HookStatus::Skipped));
      }
      !skip
    };
    let layers = if hook == HookKind::Dispose {
      scope.layers.in_slot_order().rev().filter(&mut keep).collect()
    } else {
      scope.layers.in_slot_order().filter(&mut keep).collect()
    };
    if !skipped.is_empty() {
      self.sink.trace(skipped);
    }
    layers
  }

  /// Runs a built-in hook under the layer's timeout for it (as the host runs JS hooks, §6.1), traced. A built-in
  /// that calls a user function (staticContent's `load`, an observer) must not hang the phase when it never
  /// settles: the timeout is then the hook's error, `Timeout after <ms>ms`.
  async fn run_native<T, F>(&self, target: TraceTarget<'_>, layer: &Layer, hook: HookKind, run: F) -> Result<T, String>
  where
    F: std::future::Future<Output = Result<T, String>>,
  {
    let started = std::time::Instant::now();
    let (outcome, status) = match within(layer.spec.timeout_ms(hook), run).await {
      Ok(outcome) => {
        let status = status_of(&outcome);
        (outcome, status)
      }
      Err(ms) => (Err(format!("Timeout after {}ms", crate::js_number(ms))), HookStatus::TimedOut(ms)),
    };
    if let Some(span) = self.native_span(target, layer, hook, started, &status) {
      self.sink.trace(vec![span]);
    }
    outcome
  }

  /// A built-in hook that may change the layer's state in `exec`, run as [`Self::run_native`]: its write is
  /// applied, a failure is a diagnostic.
  async fn write_native<F>(&self, target: TraceTarget<'_>, exec: &str, layer: &Layer, hook: HookKind, run: F)
  where
    F: std::future::Future<Output = Result<crate::memory::native::NativeWrite, String>>,
  {
    match self.run_native(target, layer, hook, run).await {
      Ok(write) => store::apply_native(self, exec, layer.id(), write),
      Err(message) => self.diagnose(layer.id(), hook, &message),
    }
  }

  /// Traces a built-in layer's synchronous hook (a projection, which cannot time out) that started at `started`.
  fn trace_native(&self, target: TraceTarget<'_>, layer: &Layer, hook: HookKind, started: std::time::Instant) {
    if let Some(span) = self.native_span(target, layer, hook, started, &HookStatus::Ok) {
      self.sink.trace(vec![span]);
    }
  }

  /// A built-in hook's span, when the harness traces.
  fn native_span(
    &self,
    target: TraceTarget<'_>,
    layer: &Layer,
    hook: HookKind,
    started: std::time::Instant,
    status: &HookStatus,
  ) -> Option<HookSpan> {
    if !self.sink.tracing() {
      return None;
    }
    Some(HookSpan::ended(target, layer.id(), hook, started, status))
  }

  fn state_json(&self, exec: &str, layer: &str) -> Option<serde_json::Value> {
    match self.states.get(exec, layer) {
      Some(StateValue::Json(value)) => Some(value),
      _ => None,
    }
  }

  fn diagnose(&self, layer: &str, hook: HookKind, message: &str) {
    self.sink.diagnostic(layer, hook.name(), message);
  }

  /// Applies a host hook's state write to the store (and so to the durable mirror).
  fn apply_host_write(&self, exec: &str, layer: &str, write: StateWrite) {
    match write {
      StateWrite::Unchanged => {}
      StateWrite::Set { persist } => {
        let persist = persist.map(Persist::Write);
        self.states.set(exec, layer, StateValue::Host, persist, &self.sink);
      }
      StateWrite::Cleared => self.states.set(exec, layer, StateValue::Undefined, None, &self.sink),
    }
  }

  /// Applies each reply of a batch: its state write, or a diagnostic when the hook failed.
  fn settle(&self, exec: &str, hook: HookKind, layers: Vec<&Arc<Layer>>, replies: Vec<HookReply>) {
    for (layer, reply) in layers.into_iter().zip(replies) {
      match failure(&reply.status) {
        None => self.apply_host_write(exec, layer.id(), reply.state),
        Some(message) => self.diagnose(layer.id(), hook, &message),
      }
    }
  }

  /// Runs the batch when it has calls; a reply list shorter than the batch counts the missing calls as failed.
  async fn run_batch(&self, batch: HookBatch) -> Vec<HookReply> {
    let expected = batch.calls.len();
    let mut replies = self.run_batch_as_answered(batch).await;
    replies
      .resize_with(expected, || HookReply::of(HookStatus::Threw("the host returned no result for this hook".into())));
    replies
  }

  /// The replies as the host gave them: fewer than the calls when the phase ended early (a steering deny).
  async fn run_batch_as_answered(&self, mut batch: HookBatch) -> Vec<HookReply> {
    if batch.calls.is_empty() {
      return Vec::new();
    }
    if !self.sink.tracing() {
      return self.host.run_hooks(batch).await;
    }
    batch.timed = true;
    let started = std::time::Instant::now();
    // What the spans need of the batch, which the host takes: not the calls' arguments.
    let (context, trace_id, thread_id, step_span) =
      (batch.context.clone(), batch.exec.trace_id.clone(), batch.exec.thread_id.clone(), batch.exec.step_span.clone());
    let called: Vec<SpanOf> = batch.calls.iter().map(SpanOf::new).collect();
    let hook = batch.hook;
    let replies = self.host.run_hooks(batch).await;
    let step_span = step_span.as_deref();
    let target = TraceTarget { trace_id: &trace_id, context: &context, thread_id: &thread_id, step_span };
    let batch_ms = started.elapsed().as_secs_f64() * 1000.0;
    let spans =
      called.into_iter().zip(&replies).map(|(call, reply)| batch_span(target, hook, call, reply, batch_ms)).collect();
    self.sink.trace(spans);
    replies
  }
}

/// The call a span is of: its layer, and a recall's budget.
struct SpanOf {
  layer_id: String,
  recall_budget: Option<f64>,
}

impl SpanOf {
  fn new(call: &HookCall) -> Self {
    let recall_budget = match &call.args {
      HookArgs::Recall { budget, .. } => Some(*budget),
      _ => None,
    };
    Self { layer_id: call.layer_id.clone(), recall_budget }
  }
}

/// A JS hook's span: the time the host measured (the whole batch's when it measured none), and for a recall the
/// items it gave and the budget they used.
fn batch_span(target: TraceTarget<'_>, hook: HookKind, call: SpanOf, reply: &HookReply, batch_ms: f64) -> HookSpan {
  let mut span = HookSpan::timed(target, call.layer_id, hook, reply.elapsed_ms.unwrap_or(batch_ms), &reply.status);
  if let (Some(budget), Some(recall)) = (call.recall_budget, &reply.recall) {
    let (count, used) = match recall {
      RecallReply::Nothing => (0, 0.0),
      RecallReply::Text(text) => (usize::from(!text.is_empty()), crate::tokens::estimate_tokens(text) as f64),
      RecallReply::Items { items, token_count, .. } => {
        let estimate = || items.iter().map(|text| crate::tokens::estimate_tokens(text) as f64).sum();
        (items.len(), token_count.unwrap_or_else(estimate))
      }
    };
    span.item_count = Some(count);
    span.budget = Some(SpanBudget::new(budget, used));
  }
  if let Some(count) = reply.items.as_ref().map(Vec::len).or(reply.item_count) {
    span.item_count = Some(count);
  }
  span
}

fn host_call(
  layer: &Layer,
  hook: HookKind,
  write: crate::host::WriteRule,
  args: crate::host::HookArgs,
) -> Option<HookCall> {
  let LayerImpl::Host(handle) = layer.imp else { return None };
  Some(HookCall {
    layer: handle,
    layer_id: layer.spec.id.clone(),
    timeout_ms: layer.spec.timeout_ms(hook),
    write,
    persist: layer.spec.scope.is_durable(),
    stop_on_error: false,
    args,
  })
}

/// Runs a built-in hook under its timeout, as the host does for JS hooks (§6.1): none when `ms <= 0`, and a NaN
/// timeout fires at once. `Err` carries the timeout for the `Timeout after <ms>ms` diagnostic.
async fn within<F: std::future::Future>(ms: f64, hook: F) -> Result<F::Output, f64> {
  if ms <= 0.0 {
    return Ok(hook.await);
  }
  let limit =
    if ms.is_nan() { Ok(std::time::Duration::ZERO) } else { std::time::Duration::try_from_secs_f64(ms / 1000.0) };
  match limit {
    Ok(limit) => tokio::time::timeout(limit, hook).await.map_err(|_| ms),
    // Too long to represent (Infinity included): it never fires.
    Err(_) => Ok(hook.await),
  }
}

/// How a built-in hook ended, as its span reports it.
fn status_of<T>(outcome: &Result<T, String>) -> HookStatus {
  match outcome {
    Ok(_) => HookStatus::Ok,
    Err(message) => HookStatus::Threw(message.clone()),
  }
}

/// A failure message for a hook reply that did not succeed.
fn failure(status: &HookStatus) -> Option<String> {
  match status {
    HookStatus::Ok | HookStatus::Skipped => None,
    HookStatus::Threw(message) => Some(message.clone()),
    HookStatus::TimedOut(ms) => Some(format!("Timeout after {}ms", crate::js_number(*ms))),
  }
}
