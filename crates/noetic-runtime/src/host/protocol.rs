//! The shapes that cross the seam between the runtime and user code: the values the host keeps for the runtime
//! (`HostRef`), what hooks, steps, tools and models are called with, and what they answer. Data only: the `Host`
//! trait (`host/mod.rs`) is where they are sent, and the layers, tools and steps that carry host references import
//! them from here.

use std::fmt::Write as _;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ConfigError, NoeticError};
use crate::items::Item;
use crate::memory::{HookKind, StateWrite};

/// An opaque reference to a value the host keeps (a JS layer object, a step function, a JS value).
pub type HostRef = u64;

/// What the hook code sees of the execution (`ExecutionContext`); copied when the batch is built, as upstream.
#[derive(Debug, Clone)]
pub struct ExecInfo {
  pub execution_id: String,
  pub thread_id: String,
  pub resource_id: Option<String>,
  pub depth: u32,
  pub step_number: u64,
  pub token_usage: TokenCounts,
  pub cost: f64,
  /// Whether `callModel` is present on the hook's context (D8).
  pub has_model: bool,
  /// The root context of the run, which names its trace (D14); not sent to the host.
  pub trace_id: String,
  /// The span of the innermost traced step in flight when the batch was made, which an OpenTelemetry exporter hangs
  /// the hook spans under (DECISIONS O3); `None` outside any step or untraced. Not sent to the host.
  pub step_span: Option<String>,
}

impl Serialize for ExecInfo {
  /// Written as a list, `[executionId, threadId, resourceId, depth, stepNumber, inputTokens, outputTokens, cost,
  /// hasModel]` (`resourceId` null when there is none): every hook batch carries one, and JS builds the context
  /// object from it, where V8's JSON.parse built two objects a batch (this one and its token usage).
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    (
      &self.execution_id,
      &self.thread_id,
      &self.resource_id,
      self.depth,
      self.step_number,
      self.token_usage.input,
      self.token_usage.output,
      self.cost,
      self.has_model,
    )
      .serialize(serializer)
  }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TokenCounts {
  pub input: f64,
  pub output: f64,
}

/// When a hook's result replaces the layer's state (spec §6.3). The host applies it to the JS state object it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum WriteRule {
  /// init: whatever `result.state` is, `undefined` included.
  Always,
  /// recall, onItemAppend, steering, onReturn: only a defined `result.state`.
  IfDefined,
  /// store, onComplete: when the result has a `state` key, which may clear.
  IfKeyPresent,
  /// dispose, projectHistory.
  Never,
  /// onSpawn, into the child's execution: `result.childState` unless the result or it is `null`.
  ChildState,
  /// onReturn, into the parent's execution: a defined `result.parentState`.
  ParentState,
}

/// The per-phase arguments of one hook call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum HookArgs {
  /// The host gives the hook its storage under the layer's scoped prefix (`layers/<layerId>/<scopeKey>/`). Only the
  /// scope key is sent: then every call of a batch whose layers share a scope has the same arguments, sent once.
  #[serde(rename_all = "camelCase")]
  Init {
    scope_key: String,
  },
  Recall {
    budget: f64,
    query: String,
  },
  /// The response items are the log positions `[from, to)`: they were appended before store runs.
  #[serde(rename_all = "camelCase")]
  Store {
    response_from: usize,
    response_to: usize,
    /// Shared by every call of the batch (and compared by address first when the batch is written).
    usage: Arc<Value>,
  },
  OnComplete {
    outcome: &'static str,
  },
  /// The items arrive once, with the batch; each hook receives what the one before it passed on.
  OnItemAppend,
  Dispose,
  /// The function call's name as the model returned it, and its JSON-parsed arguments (not yet validated).
  #[serde(rename_all = "camelCase")]
  BeforeToolCall {
    tool_name: String,
    tool_args: Value,
  },
  /// The response's items arrive with the batch (its `items`).
  AfterModelCall {
    usage: Value,
  },
  /// The first hook receives the context's log as the host holds it; each next one what the one before returned.
  ProjectHistory,
  /// The batch runs in the child's execution; `parentState` is read from execution `parent_exec`.
  #[serde(rename_all = "camelCase")]
  OnSpawn {
    parent_exec: String,
  },
  /// The batch runs in the parent's execution; the child's state and log are execution `child_exec`'s. `result`
  /// is the child's output, piped through the hooks.
  #[serde(rename_all = "camelCase")]
  OnReturn {
    child_exec: String,
    result: StepValueRef,
  },
  /// A pinned layer's change (prompt-cache anchoring, DECISIONS K8): the items its pin holds and its fresh ones, and
  /// its recall budget. The hook answers a string (the reply's `result`) that replaces the full text in the update.
  RenderDelta {
    prev: ItemsJson,
    next: ItemsJson,
    budget: f64,
  },
}

/// Items sent as the JSON they are (arrays of objects on the host's side, with no second parse).
#[derive(Debug, Clone)]
pub struct ItemsJson(pub Vec<Arc<Item>>);

impl PartialEq for ItemsJson {
  fn eq(&self, other: &Self) -> bool {
    self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| a.json_text() == b.json_text())
  }
}

impl Serialize for ItemsJson {
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::{Error, SerializeSeq};
    let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
    for item in &self.0 {
      let raw: &serde_json::value::RawValue = serde_json::from_str(item.json_text()).map_err(S::Error::custom)?;
      seq.serialize_element(raw)?;
    }
    seq.end()
  }
}

/// One item of a projected history: the log's own item at a position, or an item the hook made (JSON text).
#[derive(Debug, Clone, PartialEq)]
pub enum ProjectedItem {
  Log(usize),
  Made(String),
}

/// Sent to the host as the log position (a number) or the item's JSON text (a string).
impl Serialize for ProjectedItem {
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    match self {
      ProjectedItem::Log(pos) => serializer.serialize_u64(*pos as u64),
      ProjectedItem::Made(text) => serializer.serialize_str(text),
    }
  }
}

/// What a steering hook decided (§14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SteeringAction {
  Allow,
  Deny,
  Guide,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct SteeringDecision {
  pub action: SteeringAction,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub guidance: Option<String>,
  /// The layers whose votes made the decision (the inspector shows them); filled by the vote, not by a layer.
  #[serde(skip)]
  pub by: Vec<String>,
}

impl SteeringDecision {
  pub const ALLOW: Self = Self { action: SteeringAction::Allow, guidance: None, by: Vec::new() };

  pub fn new(action: SteeringAction, guidance: Option<String>) -> Self {
    Self { action, guidance, by: Vec::new() }
  }
}

/// One hook call of a batch (written by [`HookBatch`]'s serialization).
#[derive(Debug, Clone)]
pub struct HookCall {
  pub layer: HostRef,
  pub layer_id: String,
  pub timeout_ms: f64,
  pub write: WriteRule,
  /// Serialize the new state for the durable mirror (the layer's scope is not `execution`).
  pub persist: bool,
  /// Stop the batch at this call if it fails: the calls after it do not run (init under `onInitError: 'throw'`).
  pub stop_on_error: bool,
  pub args: HookArgs,
}

#[derive(Debug, Clone)]
pub struct HookBatch {
  pub hook: HookKind,
  /// How the host runs the calls: the phase's policy, decided here, which the host's one loop follows.
  pub order: BatchOrder,
  /// The context whose log the hooks receive.
  pub context: String,
  pub exec: ExecInfo,
  pub calls: Vec<HookCall>,
  /// Log items the host has never seen (a model response made here), sent along so that reading them costs the
  /// host no request of its own.
  pub new_items: Option<NewItems>,
  /// onItemAppend: the items about to be appended, as JSON texts.
  pub items: Option<Vec<String>>,
  /// projectHistory: the history an earlier stage projected (else the hooks get the log).
  pub history: Option<Vec<ProjectedItem>>,
  /// recall: the host keeps the items each hook returned, under a key in its reply, until told to let them go
  /// ([`Host::release_recalled`]), so that the model call after it can name them instead of sending them back.
  pub keep_recalled: bool,
  /// The harness traces (D14): the host reports how long each hook took.
  pub timed: bool,
}

/// How a batch's calls run, one policy per phase (spec §14.1, DECISIONS D2, M5): the host has one loop that follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOrder {
  /// One after another. A call that fails with `stopOnError` (or whose error is to be rethrown) ends the batch, and
  /// with `stop_on_deny` so does a steering hook's deny: the first deny decides the vote.
  InTurn { stop_on_deny: bool },
  /// All started at once, their results applied in the calls' order: store hooks of different layers (D2).
  Together,
  /// One after another, each given what the one before passed on.
  Piped(Pipe),
}

/// What a piped batch passes from one hook to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Pipe {
  /// onItemAppend: the items about to be appended; once none are left, the rest of the hooks are not asked.
  Items,
  /// projectHistory: the history the view will show.
  History,
  /// onReturn: the spawn's output.
  Result,
}

impl BatchOrder {
  /// The policy of `phase`'s batches.
  pub fn of(phase: HookKind) -> Self {
    match phase {
      HookKind::Store => Self::Together,
      HookKind::OnItemAppend => Self::Piped(Pipe::Items),
      HookKind::ProjectHistory => Self::Piped(Pipe::History),
      HookKind::OnReturn => Self::Piped(Pipe::Result),
      HookKind::BeforeToolCall | HookKind::AfterModelCall => Self::InTurn { stop_on_deny: true },
      _ => Self::InTurn { stop_on_deny: false },
    }
  }
}

/// The JSON texts of the log items at positions `from..from + items.len()`.
#[derive(Debug, Clone, Serialize)]
pub struct NewItems {
  pub from: usize,
  pub items: Vec<String>,
}

impl Serialize for HookBatch {
  /// The calls are written as one flat list, `[layer, layerId, layer, layerId, ...]`: JS parses every byte of a
  /// batch, and an object per call cost it several times what the pair costs (V8 builds each with its own keys).
  /// Arguments every call shares (a recall's query, a store's response) are written once, as the batch's `args`,
  /// and so are the call options when every call has the same (the usual case: the batch's `each`); otherwise a
  /// call's own are in `own`, by position.
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Options {
      timeout_ms: f64,
      write: WriteRule,
      persist: bool,
      stop_on_error: bool,
    }
    /// The batch's shared options as a list, `[timeoutMs, write, persist, stopOnError]`: JS makes the object.
    struct Each(Options);
    impl Serialize for Each {
      fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Options { timeout_ms, write, persist, stop_on_error } = &self.0;
        (timeout_ms, write, persist, stop_on_error).serialize(serializer)
      }
    }
    #[derive(Serialize)]
    struct Own<'a> {
      #[serde(flatten, skip_serializing_if = "Option::is_none")]
      options: Option<Options>,
      #[serde(skip_serializing_if = "Option::is_none")]
      args: Option<&'a HookArgs>,
    }
    /// The calls' layers and their ids, in pairs.
    struct Pairs<'a>(&'a [HookCall]);
    impl Serialize for Pairs<'_> {
      fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.0.len() * 2))?;
        for call in self.0 {
          seq.serialize_element(&call.layer)?;
          seq.serialize_element(&call.layer_id)?;
        }
        seq.end()
      }
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Batch<'a> {
      phase: &'a str,
      /// `inTurn`, `together` or `piped`.
      order: &'a str,
      #[serde(skip_serializing_if = "std::ops::Not::not")]
      stop_on_deny: bool,
      #[serde(skip_serializing_if = "Option::is_none")]
      pipe: Option<Pipe>,
      /// Once a pipe has nothing left to pass on, the rest of the hooks are not asked.
      #[serde(skip_serializing_if = "std::ops::Not::not")]
      skip_when_empty: bool,
      context: &'a str,
      exec: &'a ExecInfo,
      calls: Pairs<'a>,
      #[serde(skip_serializing_if = "Option::is_none")]
      own: Option<Vec<Own<'a>>>,
      #[serde(skip_serializing_if = "Option::is_none")]
      each: Option<Each>,
      #[serde(skip_serializing_if = "Option::is_none")]
      args: Option<&'a HookArgs>,
      #[serde(skip_serializing_if = "Option::is_none")]
      new_items: Option<&'a NewItems>,
      #[serde(skip_serializing_if = "Option::is_none")]
      items: Option<&'a Vec<String>>,
      #[serde(skip_serializing_if = "Option::is_none")]
      history: Option<&'a Vec<ProjectedItem>>,
      #[serde(skip_serializing_if = "std::ops::Not::not")]
      keep_recalled: bool,
      #[serde(skip_serializing_if = "std::ops::Not::not")]
      timed: bool,
    }
    let options = |call: &HookCall| Options {
      timeout_ms: call.timeout_ms,
      write: call.write,
      persist: call.persist,
      stop_on_error: call.stop_on_error,
    };
    let first = self.calls.first();
    let shared = first.map(|first| &first.args).filter(|args| self.calls.iter().all(|call| &call.args == *args));
    let each = first.map(options).filter(|each| self.calls.iter().all(|call| options(call) == *each));
    let own = (shared.is_none() || each.is_none()).then(|| {
      self
        .calls
        .iter()
        .map(|call| Own {
          options: if each.is_some() { None } else { Some(options(call)) },
          args: if shared.is_some() { None } else { Some(&call.args) },
        })
        .collect()
    });
    let (order, stop_on_deny, pipe) = match self.order {
      BatchOrder::InTurn { stop_on_deny } => ("inTurn", stop_on_deny, None),
      BatchOrder::Together => ("together", false, None),
      BatchOrder::Piped(pipe) => ("piped", false, Some(pipe)),
    };
    Batch {
      phase: self.hook.name(),
      order,
      stop_on_deny,
      pipe,
      skip_when_empty: pipe == Some(Pipe::Items),
      context: &self.context,
      exec: &self.exec,
      calls: Pairs(&self.calls),
      own,
      each: each.map(Each),
      args: shared,
      new_items: self.new_items.as_ref(),
      items: self.items.as_ref(),
      history: self.history.as_ref(),
      keep_recalled: self.keep_recalled,
      timed: self.timed,
    }
    .serialize(serializer)
  }
}

impl HookBatch {
  pub fn new(phase: HookKind, context: String, exec: ExecInfo) -> Self {
    Self {
      hook: phase,
      order: BatchOrder::of(phase),
      context,
      exec,
      calls: Vec::new(),
      new_items: None,
      items: None,
      history: None,
      keep_recalled: false,
      timed: false,
    }
  }
}

/// How one hook call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum HookStatus {
  Ok,
  /// Not called: an earlier onItemAppend hook left no items, which ends the pipeline.
  Skipped,
  Threw(String),
  TimedOut(f64),
}

/// What a recall hook produced, normalised by the host: `null`/falsy, the bare-string shorthand, or items.
#[derive(Debug, Clone, PartialEq)]
pub enum RecallReply {
  Nothing,
  Text(String),
  /// Each item as the JSON text JS produced; `token_count` is the layer's own figure, trusted as is.
  Items {
    items: Vec<String>,
    token_count: Option<f64>,
    /// The host put the items to the layer's item schemas, so their types are admitted as they are.
    checked: bool,
    /// Under which key the host keeps these very items (when the batch asked it to keep them).
    key: Option<u32>,
  },
}

#[derive(Debug, Clone, PartialEq)]
pub struct HookReply {
  pub status: HookStatus,
  /// The thrown value, kept by the host, so that an init failure can rethrow the very same error.
  pub error: Option<HostRef>,
  pub state: StateWrite,
  pub recall: Option<RecallReply>,
  /// onItemAppend: the items this hook passed on, as JSON texts.
  pub items: Option<Vec<String>>,
  /// onItemAppend: how many items this hook passed on, when they were not sent (only the last hook's are: what a
  /// hook before it passed on is read from JS's objects by the next, and only counted here, for its span).
  pub item_count: Option<usize>,
  /// The host put `items` to the context's item schemas, so their types are admitted as they are.
  pub items_checked: bool,
  /// beforeToolCall / afterModelCall: the hook's decision as JS sketched it (`js_sketch`), read by the vote.
  pub decision: Option<serde_json::Value>,
  /// The hook threw what must propagate rather than be logged (a NoeticConfigError from a steering hook).
  pub rethrow: bool,
  /// projectHistory: the history the last hook returned.
  pub projected: Option<Vec<ProjectedItem>>,
  /// onItemAppend: the hook asked for a re-render (D23).
  pub rerender: Option<RerenderRequest>,
  /// onReturn: the result as the hooks so far have piped it, when one changed it.
  pub result: Option<StepValue>,
  /// How long the hook took, when the batch asked (`timed`).
  pub elapsed_ms: Option<f64>,
}

/// An onItemAppend hook's request that layers recall again before the model sees them (§13.2). Its `timing` is
/// only reported (`runAppendPipeline`): every request is met before the next model call (DECISIONS M5).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct RerenderRequest {
  pub scope: RerenderScope,
  #[serde(default = "batched")]
  pub timing: String,
}

fn batched() -> String {
  "batched".to_owned()
}

/// Which layers a re-render recalls: the requester, it and every layer at or after its slot, or all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum RerenderScope {
  #[serde(rename = "self")]
  OnlySelf,
  #[serde(rename = "slot-after")]
  SlotAfter,
  #[serde(rename = "all")]
  All,
}

impl HookReply {
  /// A reply with `status` that changes no state and carries nothing; fields that differ are set on top of it.
  pub fn of(status: HookStatus) -> Self {
    Self {
      status,
      error: None,
      state: StateWrite::Unchanged,
      recall: None,
      items: None,
      item_count: None,
      items_checked: false,
      decision: None,
      rethrow: false,
      projected: None,
      rerender: None,
      result: None,
      elapsed_ms: None,
    }
  }
}

/// A JS value a step produced or consumes. Strings cross as strings because the runtime reads them (an LLM step's
/// input becomes a user message); anything else stays in the host and is referred to.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum StepValue {
  #[default]
  Undefined,
  Text(String),
  /// Text a model replied with that holds a lone UTF-16 surrogate: `text` has U+FFFD in its place (B1), `json` is
  /// the text's exact JSON string literal, so that the message a next LLM step makes of it keeps JS's very text.
  Utf16Text {
    text: String,
    json: Box<str>,
  },
  Json(Value),
  Host(HostRef),
}

impl StepValue {
  pub fn as_text(&self) -> Option<&str> {
    match self {
      Self::Text(text) | Self::Utf16Text { text, .. } => Some(text),
      _ => None,
    }
  }
}

/// A failure from user code, or a typed error the user code threw that must keep its identity.
#[derive(Debug, Clone, PartialEq)]
pub enum HostError {
  /// A thrown value, kept by the host so that the caller gets the very same error object back.
  Thrown {
    message: String,
    error: Option<HostRef>,
  },
  Config(ConfigError),
  Noetic(NoeticError),
}

impl std::fmt::Display for HostError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      Self::Thrown { message, .. } => f.write_str(message),
      Self::Config(error) => error.fmt(f),
      Self::Noetic(error) => error.fmt(f),
    }
  }
}

/// A request to the user's test model (`_testCallModel`): the view as log positions and layer items.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCall {
  pub context: String,
  pub model: String,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub instructions: Option<String>,
  /// Not serialized: a host writes the layer items as the JSON texts they are (see [`ViewEntry::write_json`]).
  #[serde(skip)]
  pub view: Vec<ViewEntry>,
  pub tools: Vec<ToolRef>,
  /// The names among `tools` the step may call, when `tools` is more than that (upstream's `allowedToolNames`: a
  /// session's tools are all listed, and a step that lists its own is allowed those).
  #[serde(skip_serializing_if = "Option::is_none")]
  pub allowed_tool_names: Option<Vec<String>>,
  /// The LLM step's object in the host (the step's `source`); none for a call beside the step.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub step: Option<HostRef>,
  /// A call beside the conversation (a summary): its reply never enters the log, so the host keeps nothing of it.
  #[serde(skip_serializing_if = "std::ops::Not::not")]
  pub aside: bool,
  /// A step's call: the context's layers at the time of the call (their host objects, in order), whose item
  /// schemas the reply is put to.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub layers: Option<Vec<Option<HostRef>>>,
}

/// Part of the context window sent to a model: a run of consecutive log positions `[start, end)` the host
/// already holds (a kept history is mostly one run, so a long view costs a few entries), or a layer item.
#[derive(Debug, Clone)]
pub enum ViewEntry {
  Log {
    start: usize,
    end: usize,
  },
  /// A layer item; `kept`: the host holds it, as item `index` of what it keeps under `key` (see
  /// [`HookBatch::keep_recalled`]), so it is named rather than sent.
  Layer {
    item: Arc<Item>,
    kept: Option<(u32, usize)>,
  },
}

impl ViewEntry {
  /// The entries as one flat JSON array of triples: `0, start, end` for a run of the log, `1, key, index` for a
  /// layer item the host keeps, `2, item, 0` for one written as its own JSON text. Flat, because JS parses every
  /// byte of a model call and an object per entry cost it several times what the numbers cost (a view has an entry
  /// per recalled item).
  pub fn write_json(entries: &[ViewEntry], out: &mut String) {
    out.push('[');
    for (i, entry) in entries.iter().enumerate() {
      if i > 0 {
        out.push(',');
      }
      match entry {
        Self::Log { start, end } => {
          let _ = write!(out, "0,{start},{end}");
        }
        Self::Layer { kept: Some((key, index)), .. } => {
          let _ = write!(out, "1,{key},{index}");
        }
        Self::Layer { item, kept: None } => {
          out.push_str("2,");
          out.push_str(item.json_text());
          out.push_str(",0");
        }
      }
    }
    out.push(']');
  }
}

/// A tool as the host knows it.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ToolRef {
  /// A user tool object.
  Tool { handle: HostRef, name: String },
  /// A `provides` function of a JS layer, bound to an execution.
  #[serde(rename_all = "camelCase")]
  LayerFn { layer: HostRef, layer_id: String, name: String, context: String },
  /// A built-in layer's function, run in Rust when the model calls it; the host may run it too (a JS model calling
  /// the tool's `execute`), through the layer object it holds.
  #[serde(rename_all = "camelCase")]
  Native { layer: Option<HostRef>, layer_id: String, name: String },
}

/// What a model returned: items as JSON text, usage and cost.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
  pub items: Vec<String>,
  /// The host put the items to its item schemas (with the step's layers' and tools'), so their types are admitted
  /// as they are.
  pub items_checked: bool,
  pub input_tokens: f64,
  pub output_tokens: f64,
  pub cached_tokens: Option<f64>,
  /// Tokens the provider wrote to its prompt cache, when it said.
  pub cache_write_tokens: Option<f64>,
  pub cost: Option<f64>,
}

/// A tool call the runtime asks the host to run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
  pub tool: ToolRef,
  /// The model's arguments, JSON text.
  pub arguments: String,
  pub context: String,
  /// The function call being answered: its call id and the name the model used.
  pub call_id: String,
  pub name: String,
}

/// The outcome of a host tool call: the output text (or none for a `void` result) and whether it is an error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
  pub output: Option<String>,
  pub is_error: bool,
  /// A layer function that replaced its layer's state reports it, for the durable mirror.
  pub state: StateWrite,
  /// The result item as the tool's `decorateResultItem` made it (JSON text), to enter the log instead of the plain
  /// `function_call_output`.
  pub item: Option<String>,
}

/// A loop's snapshot for a JS `until` predicate.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UntilCall {
  pub predicate: HostRef,
  pub context: String,
  pub step_count: u64,
  pub elapsed_ms: f64,
  pub cost: f64,
  pub tokens: Value,
  pub depth: u32,
  pub last_output: StepValueRef,
  pub history: Vec<StepValueRef>,
  pub last_step_meta: Value,
}

/// How a step value crosses in a request.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "t", content = "v", rename_all = "camelCase")]
pub enum StepValueRef {
  Undefined,
  Text(String),
  Json(Value),
  Host(HostRef),
}

impl From<&StepValue> for StepValueRef {
  fn from(value: &StepValue) -> Self {
    match value {
      StepValue::Undefined => Self::Undefined,
      StepValue::Text(text) | StepValue::Utf16Text { text, .. } => Self::Text(text.clone()),
      StepValue::Json(json) => Self::Json(json.clone()),
      StepValue::Host(handle) => Self::Host(*handle),
    }
  }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepCall {
  pub step: HostRef,
  /// The subprocess adapter the call is handed to, as upstream's `executeRun` under an adapter; none calls it here.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub adapter: Option<HostRef>,
  pub step_id: String,
  pub context: String,
  pub input: StepValueRef,
}

/// A `step.tool` step: the tool, the `args` object laid over the input, and the step's input and context.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolStepCall {
  pub tool: HostRef,
  pub args: Option<HostRef>,
  pub step_id: String,
  pub context: String,
  pub input: StepValueRef,
}

/// A step-language function called with a step's input and context: a branch's route or a fork's paths.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepFnCall {
  pub func: HostRef,
  pub context: String,
  pub input: StepValueRef,
}

/// An LLM step's reply text to parse with its `output` schema.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputCall {
  pub schema: HostRef,
  pub step_id: String,
  pub raw: String,
}

/// A value the store took for a loop's inbox (held for the host until it has read it), and the parked senders the
/// taking let through, which the host resolves first. `awaited`: it came from a receive, whose result is awaited as
/// a promise's (a rejection other than a cancellation is no message); otherwise it is read as it is.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxCall {
  pub context: String,
  pub value: u32,
  pub resolve: Vec<u32>,
  pub awaited: bool,
}

/// A fork's `merge`, called with its paths' results in path order and the fork's context.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MergeCall {
  pub merge: HostRef,
  pub context: String,
  pub results: Vec<MergeInput>,
}

/// One path's result as `merge` receives it: its value (mode `all`), or its `SettleResult` (mode `settle`).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "t", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum MergeInput {
  Value {
    value: StepValueRef,
  },
  Fulfilled {
    step_id: String,
    value: StepValueRef,
  },
  /// `error`: the NoeticError payload, as JS revives it (see `NoeticError` causes).
  Rejected {
    step_id: String,
    error: Value,
  },
}

/// A request to resolve an LLM step's getter fields with the live context.
#[derive(Debug, Clone, Serialize)]
pub struct LazyCall {
  pub step: HostRef,
  pub context: String,
  pub fields: Vec<LazyField>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
  pub stop: bool,
  pub reason: Option<String>,
  /// What a predicate adds for the next iteration (`until.verified`'s feedback), handed to `prepareNext`.
  pub feedback: Option<Value>,
}

impl Verdict {
  pub fn of(stop: bool, reason: Option<String>) -> Self {
    Self { stop, reason, feedback: None }
  }

  /// The verdict as `prepareNext` receives it.
  pub fn to_json(&self) -> Value {
    let mut verdict = serde_json::json!({ "stop": self.stop });
    if let Some(reason) = &self.reason {
      verdict["reason"] = Value::String(reason.clone());
    }
    if let Some(feedback) = &self.feedback {
      verdict["feedback"] = feedback.clone();
    }
    verdict
  }
}

/// A step-language callback with plain arguments and the context last (a loop's `prepareNext` and `onError`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FnCall {
  pub func: HostRef,
  pub context: String,
  pub args: Vec<FnArg>,
}

/// One argument of an [`FnCall`]: a step value, plain JSON, or a NoeticError payload JS revives.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "t", content = "v", rename_all = "camelCase")]
pub enum FnArg {
  Value(StepValueRef),
  Json(Value),
  Noetic(Value),
}

/// An LLM step field given as a getter (`(ctx) => value`), resolved by the host each time the step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LazyField {
  Model,
  Instructions,
  Tools,
}

#[cfg(test)]
mod tests {
  use super::*;

  fn info() -> ExecInfo {
    ExecInfo {
      execution_id: "E".into(),
      thread_id: "T".into(),
      resource_id: None,
      depth: 0,
      step_number: 1,
      token_usage: TokenCounts::default(),
      cost: 0.0,
      has_model: false,
      trace_id: "E".into(),
      step_span: None,
    }
  }

  fn call(i: usize, write: WriteRule, stop_on_error: bool, args: HookArgs) -> HookCall {
    HookCall {
      layer: i as HostRef,
      layer_id: format!("l{i}"),
      timeout_ms: 5000.0,
      write,
      persist: true,
      stop_on_error,
      args,
    }
  }

  fn batch(queries: &[&str]) -> serde_json::Value {
    let mut batch = HookBatch::new(HookKind::Recall, "C".into(), info());
    for (i, query) in queries.iter().enumerate() {
      let args = HookArgs::Recall { budget: 100.0, query: (*query).into() };
      batch.calls.push(call(i, WriteRule::IfDefined, false, args));
    }
    serde_json::to_value(&batch).unwrap()
  }

  #[test]
  fn arguments_every_call_shares_are_written_once() {
    let shared = batch(&["q", "q", "q"]);
    assert_eq!(shared["args"], serde_json::json!({ "kind": "recall", "budget": 100.0, "query": "q" }));
    assert!(shared.get("own").is_none());
    let own = batch(&["q", "other"]);
    assert!(own.get("args").is_none());
    assert_eq!(own["own"][1]["args"]["query"], "other");
    // Options every call shares stay the batch's.
    assert!(own["own"][1].get("timeoutMs").is_none());
  }

  #[test]
  fn call_options_every_call_shares_are_written_once() {
    let shared = batch(&["q", "q"]);
    assert_eq!(shared["each"], serde_json::json!([5000.0, "ifDefined", true, false]));
    assert_eq!(shared["calls"], serde_json::json!([0, "l0", 1, "l1"]));

    let mut mixed = HookBatch::new(HookKind::Init, "C".into(), info());
    for (i, stop_on_error) in [false, true].into_iter().enumerate() {
      let args = HookArgs::Init { scope_key: "s".into() };
      mixed.calls.push(call(i, WriteRule::Always, stop_on_error, args));
    }
    let mixed = serde_json::to_value(&mixed).unwrap();
    assert!(mixed.get("each").is_none());
    assert!(mixed.get("args").is_some());
    assert_eq!(mixed["own"][0]["stopOnError"], false);
    assert_eq!(mixed["own"][1]["stopOnError"], true);
    assert_eq!(mixed["own"][1]["timeoutMs"], 5000.0);
    assert!(mixed["own"][1].get("args").is_none());
  }

  #[test]
  fn a_batch_says_how_its_calls_run_and_what_ends_it() {
    let order = |phase: HookKind| {
      let written = serde_json::to_value(HookBatch::new(phase, "C".into(), info())).unwrap();
      ["order", "stopOnDeny", "pipe", "skipWhenEmpty"].map(|key| written.get(key).cloned().unwrap_or(Value::Null))
    };
    let none = Value::Null;
    assert_eq!(order(HookKind::Recall), [serde_json::json!("inTurn"), none.clone(), none.clone(), none.clone()]);
    assert_eq!(order(HookKind::Store), [serde_json::json!("together"), none.clone(), none.clone(), none.clone()]);
    assert_eq!(
      order(HookKind::BeforeToolCall),
      [serde_json::json!("inTurn"), serde_json::json!(true), none.clone(), none.clone()]
    );
    assert_eq!(
      order(HookKind::OnItemAppend),
      [serde_json::json!("piped"), none.clone(), serde_json::json!("items"), serde_json::json!(true)]
    );
    assert_eq!(
      order(HookKind::ProjectHistory),
      [serde_json::json!("piped"), none.clone(), serde_json::json!("history"), none.clone()]
    );
    assert_eq!(
      order(HookKind::OnReturn),
      [serde_json::json!("piped"), none.clone(), serde_json::json!("result"), none]
    );
  }

  #[test]
  fn an_execution_is_written_as_a_list() {
    let mut exec = info();
    exec.token_usage = TokenCounts { input: 12.0, output: 3.0 };
    assert_eq!(serde_json::to_value(&exec).unwrap(), serde_json::json!(["E", "T", null, 0, 1, 12.0, 3.0, 0.0, false]));
    exec.resource_id = Some("R".into());
    exec.has_model = true;
    assert_eq!(serde_json::to_value(&exec).unwrap()[2], "R");
    assert_eq!(serde_json::to_value(&exec).unwrap()[8], true);
  }
}
