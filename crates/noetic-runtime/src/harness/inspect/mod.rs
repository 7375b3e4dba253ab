//! The inspector (`startInspector`): its recorder, here, which while it is open keeps one record per model call and
//! every hook span, filed by thread and turn, the newest turns of the most recently active threads only (closed, it
//! costs a model call one atomic load and records nothing); and the server of its page (`server.rs`).

mod capture;
mod feed;
pub mod gate;
pub mod given;
pub mod options;
mod page;
mod read;
mod record;
mod routes;
pub mod server;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use tokio::sync::{Notify, watch};

pub use self::capture::{CallFacts, DROPPED_SHOWN, WindowShape, capture};
pub use self::record::{
  CallUsage, HistoryRecord, HistoryRun, LayerRecord, ModelCallRecord, SteeringRecord, ToolCallRecord, WindowItems,
  WindowRecord,
};
use crate::memory::state::DiagnosticSink;
use crate::memory::trace::HookSpan;

/// How much the inspector keeps: so that one left open for days grows nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InspectLimits {
  pub turns_per_thread: usize,
  pub threads: usize,
  /// Model calls kept per turn (a long tool loop keeps its newest).
  pub calls_per_turn: usize,
  /// Hook spans kept per turn.
  pub spans_per_turn: usize,
}

impl Default for InspectLimits {
  fn default() -> Self {
    Self { turns_per_thread: 20, threads: 200, calls_per_turn: 100, spans_per_turn: 2000 }
  }
}

#[derive(Default)]
pub struct Inspector {
  open: AtomicBool,
  next_id: AtomicU64,
  kept: Mutex<Kept>,
  /// Told when a call goes into an empty feed a page reads: the server's feed task takes it then.
  fed: Notify,
  /// Whether a server shows this recorder, so that a second `startInspector` is refused.
  serving: Mutex<Serving>,
}

/// The server of an inspector, as its harness knows it.
#[derive(Default)]
enum Serving {
  #[default]
  Closed,
  /// Listening is under way.
  Opening,
  /// Serving at `origin` until `stop` says so; each of the server's tasks holds a receiver, so that closing can wait
  /// for all of them to end.
  Open { origin: String, stop: watch::Sender<bool> },
}

#[derive(Default)]
struct Kept {
  limits: InspectLimits,
  /// Bumped by every record: a thread's `active` says how recently it was.
  clock: u64,
  threads: HashMap<String, ThreadRecord>,
  /// A page reads the live feed: only then are calls put in it, and whoever shows them told.
  listening: bool,
  /// The calls recorded since the feed was last taken, written as summaries when taken.
  feed: Vec<Arc<ModelCallRecord>>,
  /// beforeToolCall decisions by tool call id, until the record of the model call that made the call takes them
  /// (the tool loop asks the layers before the step's record is made).
  tool_decisions: HashMap<String, SteeringRecord>,
}

/// Decisions waiting for their record beyond this many are dropped: a record that never comes leaks nothing.
const MAX_WAITING_DECISIONS: usize = 1000;

#[derive(Default)]
struct ThreadRecord {
  active: u64,
  turns: VecDeque<TurnRecord>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TurnRecord {
  turn: String,
  started_at: f64,
  #[serde(serialize_with = "summaries")]
  calls: VecDeque<Arc<ModelCallRecord>>,
  #[serde(skip)]
  spans: VecDeque<HookSpan>,
  /// Spans dropped for the turn's span limit.
  spans_dropped: u64,
}

fn summaries<S: serde::Serializer>(calls: &VecDeque<Arc<ModelCallRecord>>, serializer: S) -> Result<S::Ok, S::Error> {
  serializer.collect_seq(calls.iter().map(|call| SummaryOf(call)))
}

struct SummaryOf<'a>(&'a ModelCallRecord);

impl Serialize for SummaryOf<'_> {
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    let raw = serde_json::value::RawValue::from_string(self.0.summary_json()).map_err(serde::ser::Error::custom)?;
    raw.serialize(serializer)
  }
}

impl Inspector {
  pub fn is_open(&self) -> bool {
    self.open.load(Ordering::Relaxed)
  }

  /// Starts recording with `limits`, or stops and forgets everything recorded.
  pub fn set_open(&self, open: bool, limits: InspectLimits) {
    let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
    if open {
      kept.limits = limits;
    } else {
      *kept = Kept::default();
    }
    self.open.store(open, Ordering::Relaxed);
  }

  pub fn next_id(&self) -> u64 {
    self.next_id.fetch_add(1, Ordering::Relaxed) + 1
  }

  /// Whether a page reads the live feed. With none, calls are only kept, and nobody is told of them (no crossing
  /// into JS per call); what the feed held is let go.
  pub fn set_listening(&self, listening: bool) {
    let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
    kept.listening = listening;
    if !listening {
      kept.feed.clear();
    }
  }

  /// Files a model call; true when it went into an empty feed a page reads, and the feed's reader was told. Each layer
  /// with a recall hook takes its status from the last recall span of the call's context since the turn's previous
  /// call: a layer that failed, timed out or was skipped is marked so.
  pub fn record(&self, mut call: ModelCallRecord) -> bool {
    if !self.is_open() {
      return false;
    }
    let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
    for tool_call in &mut call.tool_calls {
      tool_call.steering = kept.tool_decisions.remove(&tool_call.call_id);
    }
    let limits = kept.limits;
    let turn = kept.turn(&call.thread_id, &call.turn, call.at);
    let since = turn.calls.back().map_or(f64::NEG_INFINITY, |previous| previous.at + previous.duration_ms);
    for layer in call.layers.iter_mut().filter(|layer| layer.status != "none") {
      let recall = turn
        .spans
        .iter()
        .rev()
        .take_while(|span| span.start_time >= since)
        .find(|span| span.hook == "recall" && span.layer_id == layer.id && span.context == call.context);
      if let Some(span) = recall {
        layer.status = span.status.name();
        layer.error.clone_from(&span.error);
      }
    }
    let call = Arc::new(call);
    turn.calls.push_back(Arc::clone(&call));
    while turn.calls.len() > limits.calls_per_turn {
      turn.calls.pop_front();
    }
    if !kept.listening {
      return false;
    }
    let was_empty = kept.feed.is_empty();
    kept.feed.push(call);
    drop(kept);
    if was_empty {
      self.fed.notify_one();
    }
    was_empty
  }

  /// Stops the server, if one shows this recorder, without waiting for it: its harness is gone. (The server's tasks
  /// hold the recorder, so the recorder's own drop would never come while they run.)
  pub(crate) fn stop_serving(&self) {
    if let Serving::Open { stop, .. } = &*self.serving.lock().unwrap_or_else(PoisonError::into_inner) {
      stop.send_replace(true);
    }
  }

  /// The layers' decision on a tool call, which the record of its model call will show.
  pub fn tool_decision(&self, call_id: &str, decision: SteeringRecord) {
    if !self.is_open() {
      return;
    }
    let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
    if kept.tool_decisions.len() >= MAX_WAITING_DECISIONS {
      kept.tool_decisions.clear();
    }
    kept.tool_decisions.insert(call_id.to_owned(), decision);
  }

  fn spans(&self, spans: Vec<HookSpan>) {
    let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
    let limit = kept.limits.spans_per_turn;
    let mut spans = spans.into_iter().peekable();
    // A batch's spans are one hook phase of one context: the turn is looked up once for each run of them.
    while let Some(mut first) = spans.next() {
      // Only filing needs the thread: taken, not copied.
      let thread = std::mem::take(&mut first.thread_id);
      let turn = kept.turn(&thread, &first.trace_id, first.start_time);
      turn.keep_span(first, limit);
      while let Some(span) = spans.next_if(|span| span.thread_id == thread && span.trace_id == turn.turn) {
        turn.keep_span(span, limit);
      }
    }
  }

  /// The summaries of the calls recorded since the last take, as one JSON array, written outside the lock.
  pub fn take_feed(&self) -> String {
    let feed = std::mem::take(&mut self.kept.lock().unwrap_or_else(PoisonError::into_inner).feed);
    let summaries: Vec<String> = feed.iter().map(|call| call.summary_json()).collect();
    format!("[{}]", summaries.join(","))
  }

  /// Every thread kept, newest activity first, each with its turns and their calls' summaries.
  pub fn snapshot(&self) -> String {
    let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
    let mut threads: Vec<(&String, &ThreadRecord)> = kept.threads.iter().collect();
    threads.sort_by_key(|(_, thread)| std::cmp::Reverse(thread.active));
    let threads: Vec<serde_json::Value> =
      threads.into_iter().map(|(id, thread)| serde_json::json!({ "threadId": id, "turns": thread.turns })).collect();
    serde_json::json!({ "limits": { "turnsPerThread": kept.limits.turns_per_thread, "threads": kept.limits.threads }, "threads": threads })
      .to_string()
  }

  /// One call whole, with the hook spans of its turn that ran up to its end since the turn's previous call (for the
  /// turn's last call, everything after as well); its history is still to be read back
  /// ([`WindowItems::read_history`]).
  pub fn call(&self, id: u64) -> Option<ModelCallRecord> {
    let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
    let (turn, index) = kept
      .threads
      .values()
      .flat_map(|thread| &thread.turns)
      .find_map(|turn| turn.calls.iter().position(|call| call.id == id).map(|index| (turn, index)))?;
    let call = &turn.calls[index];
    let end = |call: &ModelCallRecord| call.at + call.duration_ms;
    let from = index.checked_sub(1).map_or(f64::NEG_INFINITY, |previous| end(&turn.calls[previous]));
    let to = if index + 1 == turn.calls.len() { f64::INFINITY } else { end(call) };
    let mut whole = (**call).clone();
    whole.spans = turn.spans.iter().filter(|span| span.start_time >= from && span.start_time < to).cloned().collect();
    Some(whole)
  }
}

impl TurnRecord {
  fn keep_span(&mut self, mut span: HookSpan, limit: usize) {
    span.thread_id = String::new();
    self.spans.push_back(span);
    if self.spans.len() > limit {
      self.spans.pop_front();
      self.spans_dropped += 1;
    }
  }
}

impl Kept {
  /// The turn `turn` of `thread`, made if new; the thread becomes the most recently active.
  fn turn(&mut self, thread: &str, turn: &str, at: f64) -> &mut TurnRecord {
    self.clock += 1;
    let clock = self.clock;
    if !self.threads.contains_key(thread) && self.threads.len() >= self.limits.threads {
      let oldest = self.threads.iter().min_by_key(|(_, t)| t.active).map(|(id, _)| id.clone());
      if let Some(oldest) = oldest {
        self.threads.remove(&oldest);
      }
    }
    let limit = self.limits.turns_per_thread;
    // Looked up before it is made: a span or call of a known thread allocates nothing here.
    if !self.threads.contains_key(thread) {
      self.threads.insert(thread.to_owned(), ThreadRecord::default());
    }
    let record = self.threads.get_mut(thread).expect("just made");
    record.active = clock;
    // The newest turn first: nearly every span and call belongs to it.
    let newest = record.turns.back().is_some_and(|t| t.turn == turn);
    let found = if newest { Some(record.turns.len() - 1) } else { record.turns.iter().rposition(|t| t.turn == turn) };
    let index = match found {
      Some(index) => index,
      None => {
        record.turns.push_back(TurnRecord {
          turn: turn.to_owned(),
          started_at: at,
          calls: VecDeque::new(),
          spans: VecDeque::new(),
          spans_dropped: 0,
        });
        while record.turns.len() > limit.max(1) {
          record.turns.pop_front();
        }
        record.turns.len() - 1
      }
    };
    &mut record.turns[index]
  }
}

/// The harness's diagnostic sink with the inspector beside it: spans are made while either wants them, and each
/// gets them when it does.
pub struct InspectingSink {
  pub inner: Arc<dyn DiagnosticSink>,
  pub inspector: Arc<Inspector>,
}

impl DiagnosticSink for InspectingSink {
  fn diagnostic(&self, layer_id: &str, hook: &str, message: &str) {
    self.inner.diagnostic(layer_id, hook, message);
  }

  fn loop_diagnostic(&self, loop_id: &str, message: &str) {
    self.inner.loop_diagnostic(loop_id, message);
  }

  fn step_diagnostic(&self, step_id: &str, hook: &str, message: &str) {
    self.inner.step_diagnostic(step_id, hook, message);
  }

  fn tracing(&self) -> bool {
    self.inspector.is_open() || self.inner.tracing()
  }

  fn trace(&self, spans: Vec<HookSpan>) {
    match (self.inspector.is_open(), self.inner.tracing()) {
      (true, true) => {
        self.inspector.spans(spans.clone());
        self.inner.trace(spans);
      }
      (true, false) => self.inspector.spans(spans),
      (false, true) => self.inner.trace(spans),
      (false, false) => {}
    }
  }

  fn tracing_content(&self) -> bool {
    self.inner.tracing_content()
  }

  /// The inspector keeps model calls its own way; only an exporter takes these.
  fn trace_run(&self, span: crate::memory::trace::RunSpan) {
    if self.inner.tracing() {
      self.inner.trace_run(span);
    }
  }
}

#[cfg(test)]
mod tests;
