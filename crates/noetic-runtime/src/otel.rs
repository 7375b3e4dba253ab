//! Our spans as OpenTelemetry spans (DECISIONS O1): which name, kind, attributes, status and events each of the
//! spans a harness exports becomes, and in which order they may be started.
//!
//! An OTel span's parent must exist when it starts, and the SDK picks its ids, so ours cannot name a parent in
//! advance. Our spans arrive child-first (a hook's span before its execution's, which ends last), so they wait here,
//! per trace, until the span of the trace's root arrives, and then go out parent first. JS starts each with its
//! parent's context and ends it at once with the recorded times: it decides nothing.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::memory::trace::STEP_SPAN;

/// More spans than this waiting (roots that never end: a detached step's, a context never released) go out as they
/// are, so that memory stays bounded.
const MAX_WAITING: usize = 10_000;

/// OTel's `SpanKind` values.
const INTERNAL: u8 = 0;
const CLIENT: u8 = 2;
/// OTel's `SpanStatusCode.ERROR`.
const ERROR: u8 = 2;

/// One span to start: `parent` is the id of a span started before it in the same answer, or none for a root.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OtelSpan {
  pub id: String,
  pub parent: Option<String>,
  pub name: String,
  pub kind: u8,
  pub start_time: f64,
  pub end_time: f64,
  pub attributes: Map<String, Value>,
  pub events: Vec<OtelEvent>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub status: Option<OtelStatus>,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct OtelEvent {
  pub name: String,
  pub attributes: Map<String, Value>,
  pub time: f64,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct OtelStatus {
  pub code: u8,
  pub message: String,
}

/// Spans waiting for their trace's root, and whether prompts and completions may be exported.
#[derive(Debug, Default)]
pub struct OtelBatcher {
  capture_content: bool,
  waiting: HashMap<String, Vec<Value>>,
  count: usize,
}

impl OtelBatcher {
  pub fn new(capture_content: bool) -> Self {
    Self { capture_content, ..Self::default() }
  }

  /// Takes a batch the harness exported (spans as JSON) and answers the spans ready to start, parents first.
  pub fn push(&mut self, spans: Vec<Value>) -> Vec<OtelSpan> {
    let mut ready = Vec::new();
    for span in spans {
      // The context span JS makes for `ctx.span` has the id of the runtime's execution span: that one stands for it.
      if span["name"] == "noetic.context" {
        continue;
      }
      let trace = text(&span["traceId"]).to_owned();
      let root = span["parentSpanId"].is_null();
      self.waiting.entry(trace.clone()).or_default().push(span);
      self.count += 1;
      if root && let Some(spans) = self.waiting.remove(&trace) {
        self.count -= spans.len();
        ready.extend(self.ordered(spans));
      }
    }
    if self.count > MAX_WAITING {
      for (_, spans) in std::mem::take(&mut self.waiting) {
        ready.extend(self.ordered(spans));
      }
      self.count = 0;
    }
    ready
  }

  /// Parents before children; a span whose parent is not among them starts as a root, naming the parent it had.
  fn ordered(&self, spans: Vec<Value>) -> Vec<OtelSpan> {
    let ids: HashSet<&str> = spans.iter().map(|span| text(&span["spanId"])).collect();
    let mut children: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut stack = Vec::new();
    for (at, span) in spans.iter().enumerate() {
      match parent_among(span, &ids) {
        Some(parent) => children.entry(parent).or_default().push(at),
        None => stack.push(at),
      }
    }
    stack.reverse();
    let mut out = Vec::with_capacity(spans.len());
    let mut seen = HashSet::new();
    while let Some(at) = stack.pop() {
      let span = &spans[at];
      let id = text(&span["spanId"]);
      if !seen.insert(at) {
        continue;
      }
      let mut mapped = map_span(span, self.capture_content);
      mapped.parent = parent_among(span, &ids).map(str::to_owned);
      if mapped.parent.is_none()
        && let Some(parent) = span["parentSpanId"].as_str()
      {
        mapped.attributes.insert("noetic.parent_span_id".into(), json!(parent));
      }
      out.push(mapped);
      if let Some(kids) = children.get(id) {
        stack.extend(kids.iter().rev());
      }
    }
    out
  }
}

/// A span's parent among `ids`: for a hook span, the step it ran in when that step's span is among them (O3), else
/// the parent it names; `None` when neither is (it then starts as a root).
fn parent_among<'a>(span: &'a Value, ids: &HashSet<&str>) -> Option<&'a str> {
  let own = text(&span["spanId"]);
  let step = span["attributes"][STEP_SPAN].as_str();
  let parent = span["parentSpanId"].as_str();
  [step, parent].into_iter().flatten().find(|candidate| ids.contains(candidate) && *candidate != own)
}

/// One span of ours (a `SpanImpl` as JSON) as an OTel span, with no parent yet.
pub fn map_span(span: &Value, capture_content: bool) -> OtelSpan {
  let name = text(&span["name"]);
  let start_time = span["startTime"].as_f64().unwrap_or(0.0);
  let end_time = span["endTime"].as_f64().unwrap_or(start_time);
  let given = span["attributes"].as_object().cloned().unwrap_or_default();
  let mut attributes = Map::new();
  let mut failure = None;
  for (key, value) in given {
    match key.as_str() {
      "error.message" => failure = value.as_str().map(str::to_owned),
      // Prompts and completions only when the user asked for them, as the conventions advise.
      "gen_ai.input.messages"
      | "gen_ai.output.messages"
      | "gen_ai.system_instructions"
      | "gen_ai.tool.call.arguments"
      | "gen_ai.tool.call.result"
        if !capture_content => {}
      _ if name.starts_with("memory.") && key.starts_with("memory.") => {}
      // The step a hook ran in is its parent here (O3), not an attribute.
      STEP_SPAN => {}
      // A hook's further attributes (the assembly's `cache.*`) are ours; a run span's are named already, or the
      // user's (what user code set on `ctx.span`, carried by its execution's span: O2), as are a user's span's.
      _ if key.starts_with("gen_ai.") || key.starts_with("noetic.") || !name.starts_with("memory.") => {
        attributes.insert(key, value);
      }
      _ => {
        attributes.insert(format!("noetic.{key}"), value);
      }
    }
  }
  let (otel_name, kind) = match name {
    "noetic.execution" => (with_target("invoke_agent", &attributes, "gen_ai.agent.name"), INTERNAL),
    "noetic.model_call" => (with_target("chat", &attributes, "gen_ai.request.model"), CLIENT),
    "noetic.tool_call" => (with_target("execute_tool", &attributes, "gen_ai.tool.name"), INTERNAL),
    "noetic.step" => (step_name(&attributes), INTERNAL),
    _ => (name.to_owned(), INTERNAL),
  };
  if let Some(memory) = span["memory"].as_object() {
    hook_attributes(memory, &mut attributes);
    if let Some(message) = memory.get("error").and_then(|error| error["message"].as_str()) {
      failure = Some(message.to_owned());
    }
  }
  let mut events: Vec<OtelEvent> = span["events"]
    .as_array()
    .into_iter()
    .flatten()
    .map(|event| OtelEvent {
      name: text(&event["name"]).to_owned(),
      attributes: event["attributes"].as_object().cloned().unwrap_or_default(),
      time: event["timestamp"].as_f64().unwrap_or(end_time),
    })
    .collect();
  let status = failure.map(|message| {
    let kind = attributes.get("noetic.status").and_then(Value::as_str).unwrap_or("error").to_owned();
    attributes.insert("error.type".into(), json!(kind));
    let mut exception = Map::new();
    exception.insert("exception.type".into(), json!(kind));
    exception.insert("exception.message".into(), json!(message));
    events.push(OtelEvent { name: "exception".into(), attributes: exception, time: end_time });
    OtelStatus { code: ERROR, message }
  });
  OtelSpan {
    id: text(&span["spanId"]).to_owned(),
    parent: None,
    name: otel_name,
    kind,
    start_time,
    end_time,
    attributes,
    events,
    status,
  }
}

/// A hook span's record (upstream's `MemoryTraceSpan`) under `noetic.`.
fn hook_attributes(memory: &Map<String, Value>, attributes: &mut Map<String, Value>) {
  for (from, to) in [
    ("layerId", "noetic.layer_id"),
    ("hook", "noetic.hook"),
    ("status", "noetic.status"),
    ("durationMs", "noetic.duration_ms"),
    ("itemCount", "noetic.item_count"),
  ] {
    if let Some(value) = memory.get(from) {
      attributes.insert(to.into(), value.clone());
    }
  }
  if let Some(budget) = memory.get("budget").and_then(Value::as_object) {
    for (key, value) in budget {
      attributes.insert(format!("noetic.budget.{key}"), value.clone());
    }
  }
}

/// `step <kind> <id>`: no GenAI operation names a step of ours (its model and tool calls have theirs).
fn step_name(attributes: &Map<String, Value>) -> String {
  let field = |key: &str| attributes.get(key).and_then(Value::as_str).unwrap_or_default();
  format!("step {} {}", field("noetic.step_kind"), field("noetic.step_id"))
}

/// `operation target`, as the conventions name GenAI spans, or the operation alone.
fn with_target(operation: &str, attributes: &Map<String, Value>, key: &str) -> String {
  match attributes.get(key).and_then(Value::as_str).filter(|target| !target.is_empty()) {
    Some(target) => format!("{operation} {target}"),
    None => operation.to_owned(),
  }
}

fn text(value: &Value) -> &str {
  value.as_str().unwrap_or_default()
}

#[cfg(test)]
mod tests;
