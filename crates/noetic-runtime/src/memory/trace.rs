//! Memory traces (DECISIONS D14, D22): one record per hook invocation, including the layers the gate skipped, kept
//! until the harness hands them to its trace exporter. Nothing is recorded unless the harness traces, so a harness
//! without an exporter pays one branch per phase.

use std::sync::{Mutex, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::HookKind;
use crate::host::HookStatus;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SpanStatus {
  Ok,
  Error,
  Timeout,
  Skipped,
}

impl SpanStatus {
  pub fn name(self) -> &'static str {
    match self {
      Self::Ok => "ok",
      Self::Error => "error",
      Self::Timeout => "timeout",
      Self::Skipped => "skipped",
    }
  }

  pub fn of(status: &HookStatus) -> Self {
    match status {
      HookStatus::Ok => Self::Ok,
      HookStatus::Skipped => Self::Skipped,
      HookStatus::Threw(_) => Self::Error,
      HookStatus::TimedOut(_) => Self::Timeout,
    }
  }
}

/// A recall's budget as the span reports it: what the layer was given, what its items cost, what it left.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SpanBudget {
  pub allocated: f64,
  pub used: f64,
  pub yielded: f64,
}

impl SpanBudget {
  pub fn new(allocated: f64, used: f64) -> Self {
    Self { allocated, used, yielded: (allocated - used).max(0.0) }
  }
}

/// One hook invocation (upstream's `MemoryTraceSpan`, with where it belongs in the trace).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSpan {
  /// The root context of the run: every span of one run shares it.
  pub trace_id: String,
  /// The context the hook ran for, whose span is this one's parent.
  pub context: String,
  /// The thread of that context: where the inspector files the span. Not exported.
  #[serde(skip)]
  pub thread_id: String,
  pub layer_id: String,
  pub hook: &'static str,
  /// Milliseconds since the Unix epoch, as `Date.now()`.
  pub start_time: f64,
  pub duration_ms: f64,
  pub status: SpanStatus,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub budget: Option<SpanBudget>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub item_count: Option<usize>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub error: Option<String>,
  /// Further attributes, exported as they are (the prompt-cache assembly's `cache.*`).
  #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
  pub attributes: serde_json::Map<String, serde_json::Value>,
}

/// A span the runtime times besides hook calls: an execution, a model call (DECISIONS O1). Its attributes are named
/// as exported (the GenAI conventions' `gen_ai.*`, ours under `noetic.`), so JS builds the span without reading them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSpan {
  pub name: &'static str,
  pub trace_id: String,
  pub span_id: String,
  pub parent_span_id: Option<String>,
  /// Milliseconds since the Unix epoch, as `Date.now()`, with the fraction the clock gives.
  pub start_time: f64,
  pub end_time: f64,
  pub attributes: serde_json::Map<String, serde_json::Value>,
}

/// What waits in a [`TraceBuffer`]: a hook's span or one of the runtime's own.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum TraceRecord {
  Hook(HookSpan),
  Run(RunSpan),
}

impl From<HookSpan> for TraceRecord {
  fn from(span: HookSpan) -> Self {
    Self::Hook(span)
  }
}

impl From<RunSpan> for TraceRecord {
  fn from(span: RunSpan) -> Self {
    Self::Run(span)
  }
}

/// Where a phase's spans belong: the run's root and the context the hooks run for, and the innermost traced step in
/// flight, if any (DECISIONS O3).
#[derive(Debug, Clone, Copy)]
pub struct TraceTarget<'a> {
  pub trace_id: &'a str,
  pub context: &'a str,
  pub thread_id: &'a str,
  pub step_span: Option<&'a str>,
}

impl HookSpan {
  /// A span for a hook that started at `started` and has just ended with `status`.
  pub fn ended(target: TraceTarget<'_>, layer_id: &str, hook: HookKind, started: Instant, status: &HookStatus) -> Self {
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    Self::timed(target, layer_id, hook, duration_ms, status)
  }

  /// A span for a hook that took `duration_ms` and ended just now with `status`.
  pub fn timed(
    target: TraceTarget<'_>,
    layer_id: impl Into<String>,
    hook: HookKind,
    duration_ms: f64,
    status: &HookStatus,
  ) -> Self {
    let error = match status {
      HookStatus::Threw(message) => Some(message.clone()),
      HookStatus::TimedOut(ms) => Some(format!("Timeout after {}ms", crate::js_number(*ms))),
      _ => None,
    };
    // The step a hook ran in, for OpenTelemetry's tree (O3); other exporters keep the context as the parent (M3).
    let mut attributes = serde_json::Map::new();
    if let Some(step) = target.step_span {
      attributes.insert(STEP_SPAN.into(), step.into());
    }
    Self {
      trace_id: target.trace_id.to_owned(),
      context: target.context.to_owned(),
      thread_id: target.thread_id.to_owned(),
      layer_id: layer_id.into(),
      hook: hook.name(),
      start_time: now_ms() - duration_ms,
      duration_ms,
      status: SpanStatus::of(status),
      budget: None,
      item_count: None,
      error,
      attributes,
    }
  }
}

/// The attribute of a hook span that names the span of the step it ran in (O3).
pub const STEP_SPAN: &str = "noetic.step_span_id";

/// Milliseconds since the Unix epoch, as `Date.now()`.
pub fn now_ms() -> f64 {
  SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |elapsed| elapsed.as_secs_f64() * 1000.0)
}

/// The spans recorded since the exporter last took them.
#[derive(Debug, Default)]
pub struct TraceBuffer {
  spans: Mutex<Vec<TraceRecord>>,
}

impl TraceBuffer {
  /// Adds spans; true when the buffer was empty before (the moment to tell whoever exports them).
  pub fn push<S: Into<TraceRecord>>(&self, spans: impl IntoIterator<Item = S>) -> bool {
    let mut buffer = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
    let was_empty = buffer.is_empty();
    buffer.extend(spans.into_iter().map(Into::into));
    was_empty && !buffer.is_empty()
  }

  pub fn take(&self) -> Vec<TraceRecord> {
    std::mem::take(&mut *self.spans.lock().unwrap_or_else(PoisonError::into_inner))
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn spans_carry_status_error_and_the_time_they_took() {
    let target = TraceTarget { trace_id: "root", context: "ctx", thread_id: "T", step_span: None };
    let span = HookSpan::timed(target, "notes", HookKind::Recall, 12.5, &HookStatus::TimedOut(5000.0));
    assert_eq!(span.status, SpanStatus::Timeout);
    assert_eq!(span.error.as_deref(), Some("Timeout after 5000ms"));
    assert_eq!(span.hook, "recall");
    assert!(span.start_time > 1.6e12);
    let json = serde_json::to_value(&span).unwrap();
    assert_eq!(json["traceId"], "root");
    assert_eq!(json["durationMs"], 12.5);
    assert!(json.get("budget").is_none());
    assert_eq!(SpanBudget::new(100.0, 130.0).yielded, 0.0);
    assert_eq!(SpanBudget::new(100.0, 30.0).yielded, 70.0);
  }

  #[test]
  fn the_buffer_reports_only_its_first_span_since_it_was_emptied() {
    let buffer = TraceBuffer::default();
    let target = TraceTarget { trace_id: "t", context: "c", thread_id: "T", step_span: None };
    let span = || HookSpan::timed(target, "l", HookKind::Store, 1.0, &HookStatus::Ok);
    assert!(buffer.push([span()]));
    assert!(!buffer.push([span(), span()]));
    assert!(!buffer.push::<HookSpan>([]));
    assert_eq!(buffer.take().len(), 3);
    assert!(!buffer.push::<HookSpan>([]));
    assert!(buffer.push([span()]));
  }
}
