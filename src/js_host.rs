//! The runtime's `Host`, implemented by sending requests through the dispatcher to the JS side.

use std::sync::Arc;

use async_trait::async_trait;
use noetic_runtime::harness::{RunError, StepSource};
use noetic_runtime::host::*;
use noetic_runtime::items::Item;
use noetic_runtime::js_text::from_js_json;
use noetic_runtime::memory::StateWrite;
use noetic_runtime::memory::state::StateJson;
use noetic_runtime::steps::Step;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::describe;
use crate::dispatcher::Dispatch;
use crate::protocol::{JsFailure, error_json, malformed, open, open_steps, step_value_from};

/// A context's fixed fields as JS reads them (`ctx.threadId`, `ctx.layers`): ids, depth, and its layers' ids and
/// handles.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContextStatic<'a> {
  thread_id: &'a str,
  resource_id: Option<&'a str>,
  depth: u32,
  parent: Option<&'a str>,
  root: &'a str,
  /// Not in a turn's note: `provide` changes them while the context runs, so JS asks when it reads them.
  #[serde(skip_serializing_if = "Option::is_none")]
  layers: Option<Vec<LayerOf<'a>>>,
}

#[derive(Serialize)]
struct LayerOf<'a> {
  id: &'a str,
  handle: Option<HostRef>,
}

impl<'a> ContextStatic<'a> {
  /// With the context's layers as they are now.
  pub(crate) fn of(facts: &ContextFacts<'a>) -> Self {
    let layers = facts.layers.layers().iter().map(|l| LayerOf { id: l.id(), handle: l.handle }).collect();
    Self { layers: Some(layers), ..Self::fixed(facts) }
  }

  /// The fields that never change.
  fn fixed(facts: &ContextFacts<'a>) -> Self {
    Self {
      thread_id: facts.thread_id,
      resource_id: facts.resource_id,
      depth: facts.depth,
      parent: facts.parent,
      root: facts.root,
      layers: None,
    }
  }
}

pub struct JsHost {
  pub dispatch: Dispatch,
}

/// A request as it crosses: `{op, call}`, serialized straight to text (a view can list many entries, and a
/// `serde_json::Value` tree of them would cost more than the crossing).
#[derive(serde::Serialize)]
struct Request<'a, T> {
  op: &'a str,
  call: T,
}

impl JsHost {
  /// A notification (no reply), written straight from `note`: several go each turn.
  fn notify(&self, note: &impl Serialize) {
    if let Ok(text) = json_text(note, 192) {
      self.dispatch.notify(text);
    }
  }

  async fn request<T: serde::Serialize>(&self, op: &str, call: T) -> Result<String, HostError> {
    let text = json_text(&Request { op, call }, 1024).map_err(|e| malformed(&e.to_string()))?;
    self.dispatch.call(text).await.map_err(|message| HostError::Thrown { message, error: None })
  }
}

/// `value`'s JSON text, written into a buffer sized for the message at hand: `serde_json::to_string` starts at 128
/// bytes and doubles, so a hook batch of a kilobyte or two was copied four or five times as it was written.
fn json_text(value: &impl Serialize, capacity: usize) -> serde_json::Result<String> {
  let mut out = Vec::with_capacity(capacity);
  serde_json::to_writer(&mut out, value)?;
  // SAFETY: serde_json writes UTF-8 only (as its own `to_string` relies on).
  Ok(unsafe { String::from_utf8_unchecked(out) })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsHookReply {
  status: JsStatus,
  message: Option<String>,
  ms: Option<f64>,
  error: Option<HostRef>,
  state: Option<JsStateWrite>,
  /// The new state's JSON text (in a one-element array: a state of `null` is still a write), parsed apart from the
  /// reply so that a state Rust cannot hold fails only its write.
  persist: Option<(Box<RawValue>,)>,
  recall: Option<JsRecall>,
  items: Option<Vec<Box<RawValue>>>,
  item_count: Option<usize>,
  #[serde(default)]
  items_checked: bool,
  decision: Option<Value>,
  #[serde(default)]
  rethrow: bool,
  /// projectHistory: a log position (a number) or an item the hook made, per item of the projected history.
  projected: Option<Vec<Box<RawValue>>>,
  rerender: Option<RerenderRequest>,
  /// onReturn: the output as this hook left it, as a step value reference.
  result: Option<Value>,
  /// The hook's time in whole microseconds: an integer is written and read far faster than a double's digits.
  elapsed_us: Option<f64>,
}

// A reply's words, read as enums: each reply has two or three, and a `String` for each was an allocation.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum JsStatus {
  Ok,
  Skipped,
  Timeout,
  #[serde(other)]
  Threw,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum JsStateWrite {
  Set,
  Clear,
  #[serde(other)]
  Unchanged,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum JsRecallKind {
  Text,
  Items,
  #[serde(other)]
  Nothing,
}

fn state_write(state: Option<JsStateWrite>, persist: Option<StateJson>) -> StateWrite {
  match state {
    Some(JsStateWrite::Set) => StateWrite::Set { persist },
    Some(JsStateWrite::Clear) => StateWrite::Cleared,
    _ => StateWrite::Unchanged,
  }
}

/// What a recall hook returned (`kind`): nothing, a text, or items, each its own JSON text as JS wrote it. A plain
/// struct, not a tagged enum: serde buffers a tagged enum's fields, and raw JSON cannot be read from that buffer.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsRecall {
  kind: JsRecallKind,
  text: Option<String>,
  items: Option<Vec<Box<RawValue>>>,
  token_count: Option<f64>,
  #[serde(default)]
  checked: bool,
  /// Where JS keeps these items, when the batch asked it to (`keepRecalled`).
  key: Option<u32>,
}

fn texts(raw: Vec<Box<RawValue>>) -> Vec<String> {
  raw.into_iter().map(|item| String::from(Box::<str>::from(item))).collect()
}

impl From<JsRecall> for RecallReply {
  fn from(recall: JsRecall) -> Self {
    match recall.kind {
      JsRecallKind::Text => RecallReply::Text(recall.text.unwrap_or_default()),
      JsRecallKind::Items => RecallReply::Items {
        items: texts(recall.items.unwrap_or_default()),
        token_count: recall.token_count,
        checked: recall.checked,
        key: recall.key,
      },
      JsRecallKind::Nothing => RecallReply::Nothing,
    }
  }
}

/// One reply of a batch, made the runtime's as it is read: read as a list of `JsHookReply` (a large struct of
/// options), a batch's replies were grown by copying them all and then copied again into the runtime's.
#[derive(Deserialize)]
#[serde(from = "JsHookReply")]
struct ReadReply(HookReply);

impl From<JsHookReply> for ReadReply {
  fn from(reply: JsHookReply) -> Self {
    Self(reply.into_reply())
  }
}

impl JsHookReply {
  /// The runtime's reply. A persisted state that cannot be read (nested too deep) is a `persist` diagnostic for
  /// `layer`, and only its write is dropped: the state itself is still set.
  fn into_reply(self) -> HookReply {
    // Stored as JS wrote it: a store of text keeps it unparsed, others parse it (a failure is a persist diagnostic).
    let persist = self.persist.map(|(text,)| StateJson::Text(String::from(Box::<str>::from(text))));
    let status = match self.status {
      JsStatus::Ok => HookStatus::Ok,
      JsStatus::Skipped => HookStatus::Skipped,
      JsStatus::Timeout => HookStatus::TimedOut(self.ms.unwrap_or(0.0)),
      JsStatus::Threw => HookStatus::Threw(self.message.unwrap_or_else(|| "the hook failed".into())),
    };
    HookReply {
      status,
      error: self.error,
      state: state_write(self.state, persist),
      recall: self.recall.map(RecallReply::from),
      items: self.items.map(texts),
      item_count: self.item_count,
      items_checked: self.items_checked,
      decision: self.decision,
      rethrow: self.rethrow,
      projected: self.projected.map(|entries| {
        entries
          .into_iter()
          .map(|entry| match entry.get().parse::<usize>() {
            Ok(pos) => ProjectedItem::Log(pos),
            Err(_) => ProjectedItem::Made(entry.get().to_owned()),
          })
          .collect()
      }),
      rerender: self.rerender,
      result: self.result.as_ref().map(step_value_from),
      elapsed_ms: self.elapsed_us.map(|us| us / 1000.0),
    }
  }
}

#[derive(Deserialize)]
struct JsValue {
  value: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsModelReply {
  /// Not under `open`'s envelope: a flattened field cannot hold raw JSON.
  ok: bool,
  error: Option<JsFailure>,
  #[serde(default)]
  items: Vec<Box<RawValue>>,
  #[serde(default)]
  checked: bool,
  /// The reply, the usage and the cost as JS sketched them, read by the runtime (`host::model_reply`).
  shape: Option<Value>,
  usage: Option<Value>,
  cost: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsToolReply {
  output: Option<String>,
  #[serde(default)]
  is_error: bool,
  /// The decorated result item's JSON text.
  item: Option<String>,
}

#[derive(Deserialize)]
struct JsVerdict {
  stop: bool,
  reason: Option<String>,
  feedback: Option<Value>,
}

#[async_trait]
impl Host for JsHost {
  async fn run_hooks(&self, batch: HookBatch) -> Vec<HookReply> {
    let count = batch.calls.len();
    let failed = |message: String| (0..count).map(|_| HookReply::of(HookStatus::Threw(message.clone()))).collect();
    match self.request("hooks", &batch).await {
      Ok(text) => match from_js_json::<Vec<ReadReply>>(&text) {
        Ok(replies) => replies.into_iter().take(count).map(|ReadReply(reply)| reply).collect(),
        Err(error) => failed(malformed(&error.to_string()).to_string()),
      },
      Err(error) => failed(error.to_string()),
    }
  }

  async fn run_step(&self, call: StepCall) -> Result<StepValue, HostError> {
    let text = self.request("step", call).await?;
    Ok(step_value_from(&open::<JsValue>(&text)?.value))
  }

  async fn call_model(&self, call: ModelCall) -> Result<ModelReply, HostError> {
    // The call's own fields, then its view, whose layer items go in as the JSON texts they are.
    let mut message = json_text(&Request { op: "model", call: &call }, 1024).map_err(|e| malformed(&e.to_string()))?;
    debug_assert!(message.ends_with("}}"), "a model call serializes as an object with fields");
    message.truncate(message.len() - 2);
    message.push_str(r#","view":"#);
    ViewEntry::write_json(&call.view, &mut message);
    message.push_str("}}");
    let text = self.dispatch.call(message).await.map_err(|message| HostError::Thrown { message, error: None })?;
    let reply: JsModelReply = from_js_json(&text).map_err(|e| malformed(&e.to_string()))?;
    if !reply.ok {
      return Err(reply.error.map_or_else(|| malformed("neither a value nor an error"), HostError::from));
    }
    let read = model_reply::TestModelReply {
      shape: reply.shape.as_ref(),
      items: texts(reply.items),
      usage: reply.usage.as_ref(),
      cost: reply.cost.as_ref(),
      checked: reply.checked,
    };
    read.read().map_err(HostError::Config)
  }

  async fn send_held_items(&self, context: &str) -> Result<(), HostError> {
    let text = self.request("heldItems", json!({ "context": context })).await?;
    open::<Value>(&text).map(drop)
  }

  async fn run_tool_step(&self, call: ToolStepCall) -> Result<StepValue, HostError> {
    let text = self.request("toolStep", call).await?;
    Ok(step_value_from(&open::<JsValue>(&text)?.value))
  }

  async fn call_fn(&self, call: FnCall) -> Result<StepValue, HostError> {
    let text = self.request("fn", call).await?;
    Ok(step_value_from(&open::<JsValue>(&text)?.value))
  }

  async fn merge(&self, call: MergeCall) -> Result<StepValue, HostError> {
    let text = self.request("merge", call).await?;
    Ok(step_value_from(&open::<JsValue>(&text)?.value))
  }

  async fn parse_output(&self, call: OutputCall) -> Result<StepValue, HostError> {
    let text = self.request("parseOutput", call).await?;
    Ok(step_value_from(&open::<JsValue>(&text)?.value))
  }

  async fn recv_inbox(&self, call: InboxCall) -> Result<Option<String>, HostError> {
    let text = self.request("inbox", call).await?;
    let reply: Value = open(&text)?;
    Ok(reply.get("message").and_then(Value::as_str).map(str::to_owned))
  }

  fn context_aborted(&self, context: &ContextFacts<'_>, reason: &str) {
    let facts = ContextStatic::fixed(context);
    self
      .dispatch
      .notify(json!({ "op": "aborted", "context": context.id, "reason": reason, "static": facts }).to_string());
  }

  fn every_iteration_failed(&self, context: &str, step_id: &str, error: &HostError) {
    let error = error_json(&RunError::Host(error.clone()));
    self
      .dispatch
      .notify(json!({ "op": "everyFailed", "context": context, "stepId": step_id, "error": error }).to_string());
  }

  fn adopt_state(&self, from_context: &str, into_context: &str) {
    self.dispatch.notify(json!({ "op": "adoptState", "from": from_context, "into": into_context }).to_string());
  }

  async fn resolve_lazy(&self, call: LazyCall) -> Result<LazyValues, HostError> {
    let text = self.request("lazy", call).await?;
    let reply: Value = open(&text)?;
    let string = |key| reply.get(key).and_then(Value::as_str).map(str::to_owned);
    Ok(LazyValues {
      model: string("model"),
      instructions: string("instructions"),
      tools: reply.get("tools").and_then(Value::as_array).map(|tools| tools.iter().map(describe::tool).collect()),
    })
  }

  async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostError> {
    let text = self.request("tool", call).await?;
    let reply: JsToolReply = open(&text)?;
    Ok(ToolReply {
      output: reply.output,
      is_error: reply.is_error,
      // A layer function called as a tool mirrors its own state (`hostStateWritten`).
      state: StateWrite::Unchanged,
      item: reply.item,
    })
  }

  async fn eval_until(&self, call: UntilCall) -> Result<Verdict, HostError> {
    let text = self.request("until", call).await?;
    let verdict: JsVerdict = open(&text)?;
    Ok(Verdict { stop: verdict.stop, reason: verdict.reason, feedback: verdict.feedback })
  }

  fn set_context_state(&self, context: &str, state: HostRef) {
    // A notification: it reaches JS before any request the turn makes next, as the dispatcher's queue is in order.
    self.dispatch.notify(json!({ "op": "contextState", "context": context, "state": state }).to_string());
  }

  fn release_recalled(&self, keys: &[u32]) {
    #[derive(Serialize)]
    struct Note<'a> {
      op: &'static str,
      keys: &'a [u32],
    }
    self.notify(&Note { op: "releaseRecalled", keys });
  }

  fn model_items_placed(&self, context: &str, from: usize) {
    #[derive(Serialize)]
    struct Note<'a> {
      op: &'static str,
      context: &'a str,
      from: usize,
    }
    self.notify(&Note { op: "modelItems", context, from });
  }

  fn turn_input(&self, context: &ContextFacts<'_>, from: usize, messages: &[&str], adopted: bool) {
    #[derive(Serialize)]
    struct Note<'a> {
      op: &'static str,
      context: &'a str,
      thread: &'a str,
      from: usize,
      messages: &'a [&'a str],
      adopted: bool,
      /// What `contextStatic` answers but the layers, so that JS need not ask.
      #[serde(rename = "static")]
      facts: ContextStatic<'a>,
    }
    let facts = ContextStatic::fixed(context);
    self.notify(&Note {
      op: "turnInput",
      context: context.id,
      thread: context.thread_id,
      from,
      messages,
      adopted,
      facts,
    });
  }

  fn history_settled(&self, context: &str, from: usize, items: &[Arc<Item>]) {
    // Written by hand: the items go in as the JSON texts they are.
    let mut note =
      String::with_capacity(64 + context.len() + items.iter().map(|i| i.json_text().len() + 1).sum::<usize>());
    note.push_str(r#"{"op":"historySettled","context":"#);
    note.push_str(&serde_json::to_string(context).unwrap_or_default());
    note.push_str(&format!(r#","from":{from},"items":["#));
    for (i, item) in items.iter().enumerate() {
      if i > 0 {
        note.push(',');
      }
      note.push_str(&item.to_json_text());
    }
    note.push_str("]}");
    self.dispatch.notify(note);
  }

  fn turn_value(&self, context: &str, value: HostRef) {
    self.dispatch.notify(json!({ "op": "turnValue", "context": context, "value": value }).to_string());
  }

  fn execution_ended(&self, exec: &str) {
    #[derive(Serialize)]
    struct Note<'a> {
      op: &'static str,
      execution: &'a str,
    }
    self.notify(&Note { op: "executionEnded", execution: exec });
  }

  fn history_moved(&self, from: &str, to: &str) {
    #[derive(Serialize)]
    struct Note<'a> {
      op: &'static str,
      from: &'a str,
      to: &'a str,
    }
    self.notify(&Note { op: "historyMoved", from, to });
  }

  fn history_cut(&self, context: &str, len: usize) {
    #[derive(Serialize)]
    struct Note<'a> {
      op: &'static str,
      context: &'a str,
      length: usize,
    }
    self.notify(&Note { op: "historyCut", context, length: len });
  }

  fn release_context(&self, context: &str) {
    #[derive(Serialize)]
    struct Note<'a> {
      op: &'static str,
      context: &'a str,
    }
    self.notify(&Note { op: "release", context });
  }
}

/// The steps a route or a fork's paths return, described by JS as the steps of a run are.
#[async_trait]
impl StepSource for JsHost {
  async fn route(&self, call: StepFnCall) -> Result<Option<Step>, HostError> {
    let text = self.request("route", call).await?;
    let reply: Value = open_steps(&text)?;
    match reply.get("step") {
      None | Some(Value::Null) => Ok(None),
      Some(step) => describe::step(step, Some(&self.dispatch)).map(Some).map_err(HostError::Config),
    }
  }

  async fn fork_paths(&self, call: StepFnCall) -> Result<Vec<Step>, HostError> {
    let text = self.request("forkPaths", call).await?;
    let reply: Value = open_steps(&text)?;
    let paths = reply.get("paths").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    paths.iter().map(|step| describe::step(step, Some(&self.dispatch)).map_err(HostError::Config)).collect()
  }
}
