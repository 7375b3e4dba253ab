//! What the inspector keeps of one model call: the context window as the model saw it, each layer's share of it,
//! the history kept and dropped, the hook spans around it, and the steering decisions about it and its tool calls.

use std::sync::Arc;

use serde::Serialize;

use crate::items::Item;
use crate::memory::trace::HookSpan;

/// One model call of a turn. Serialized whole when the page asks for it; [`ModelCallRecord::summary`] is what the
/// live feed carries (no item texts, no spans), so that a connected page costs a turn little.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCallRecord {
  pub id: u64,
  pub thread_id: String,
  /// The resource of the call's context, when it has one: where resource-scoped layers keep their state.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub resource_id: Option<String>,
  /// The root context of the execution the call belongs to: a session's turn, or one `run`.
  pub turn: String,
  pub context: String,
  pub step_id: String,
  pub model: String,
  /// Milliseconds since the Unix epoch when the call was made, as `Date.now()`.
  pub at: f64,
  pub duration_ms: f64,
  pub window: WindowRecord,
  pub layers: Vec<LayerRecord>,
  pub history: HistoryRecord,
  pub usage: CallUsage,
  /// The layers' afterModelCall decision when it was not a plain allow.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub steering: Option<SteeringRecord>,
  pub tool_calls: Vec<ToolCallRecord>,
  /// The window's items besides the layers': not in the summary.
  pub window_items: WindowItems,
  #[serde(skip_serializing_if = "Vec::is_empty")]
  pub spans: Vec<HookSpan>,
}

/// The items of the window that are not layer items, and the newest of those dropped, as JSON texts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WindowItems {
  #[serde(serialize_with = "json_texts")]
  pub system: Vec<Arc<Item>>,
  #[serde(serialize_with = "json_text")]
  pub summary: Option<Arc<Item>>,
  /// Where the history kept lies in the context's log: read back when the call is opened (see
  /// [`super::Inspector::call`]), so that recording a call costs its runs, not an item each.
  #[serde(skip)]
  pub history_runs: Vec<HistoryRun>,
  /// The history kept, once read back.
  #[serde(serialize_with = "json_texts")]
  pub history: Vec<Arc<Item>>,
  /// The log no longer holds the history this call kept (the session left memory, or a seed replaced it).
  #[serde(skip_serializing_if = "std::ops::Not::not")]
  pub history_gone: bool,
  #[serde(serialize_with = "json_texts")]
  pub dropped: Vec<Arc<Item>>,
}

/// A stretch of the history kept: log positions `start..end` whose first item is `first` (how a later read knows
/// the log still holds them), or an item a layer's projectHistory made.
#[derive(Debug, Clone)]
pub enum HistoryRun {
  Log { start: usize, end: usize, first: Arc<Item> },
  Made(Arc<Item>),
}

impl WindowItems {
  /// Reads the history kept back from `log`, which should be the log the call's history came from.
  pub fn read_history(&mut self, log: Option<&crate::items::ItemLog>) {
    let mut history = Vec::new();
    for run in &self.history_runs {
      match run {
        HistoryRun::Made(item) => history.push(Arc::clone(item)),
        HistoryRun::Log { start, end, first } => {
          let holds =
            log.is_some_and(|log| log.len() >= *end && log.get(*start).is_some_and(|at| Arc::ptr_eq(at, first)));
          let Some(log) = log.filter(|_| holds) else {
            self.history_gone = true;
            return;
          };
          history.extend((*start..*end).filter_map(|pos| log.get(pos).cloned()));
        }
      }
    }
    self.history = history;
  }
}

/// How the window's token budget was spent.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowRecord {
  pub token_budget: f64,
  pub response_reserve: f64,
  pub system_tokens: f64,
  pub tools_tokens: f64,
  /// What the kept layer items cost, as the projection costed them.
  pub layer_tokens: f64,
  pub history_tokens: f64,
}

/// One layer of the call: its budget, what its recall gave and what of it the window kept.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerRecord {
  pub id: String,
  pub slot: f64,
  pub scope: &'static str,
  pub recall_mode: &'static str,
  pub budget: f64,
  /// `tokenCount` as `lastLayerUsage` reports it (`None`: the recall gave no count and the item is uncounted).
  pub used: Option<f64>,
  pub yielded: f64,
  /// The recalled items, as their JSON texts.
  #[serde(serialize_with = "json_texts")]
  pub items: Vec<Arc<Item>>,
  /// How many of `items` the window kept (the rest did not fit).
  pub kept: usize,
  /// `ok`, `error`, `timeout` or `skipped` from the recall's span; `none` for a layer without a recall hook.
  pub status: &'static str,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub error: Option<String>,
}

/// The history's part of the window.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryRecord {
  /// Items in the log, system messages included.
  pub total: usize,
  pub kept: usize,
  /// Items the budget dropped (beyond what an earlier overflow summary stands for).
  pub dropped: usize,
  /// `truncate`, `summarize` or `sliding_window`, as the projection policy names it.
  pub overflow: &'static str,
  /// An overflow summary stood in the window for older history.
  pub summarized: bool,
  /// A layer's projectHistory hook gave the history the window drew from.
  pub projected: bool,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallUsage {
  pub input_tokens: f64,
  pub output_tokens: f64,
}

/// A steering decision and the layers that made it.
#[derive(Debug, Clone, Serialize)]
pub struct SteeringRecord {
  pub action: &'static str,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub guidance: Option<String>,
  pub by: Vec<String>,
}

impl SteeringRecord {
  pub fn of(decision: &crate::host::SteeringDecision) -> Self {
    use crate::host::SteeringAction;
    let action = match decision.action {
      SteeringAction::Allow => "allow",
      SteeringAction::Deny => "deny",
      SteeringAction::Guide => "guide",
    };
    Self { action, guidance: decision.guidance.clone(), by: decision.by.clone() }
  }
}

/// A function call the model made, with the layers' beforeToolCall decision once the tool loop asked them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRecord {
  pub call_id: String,
  pub name: String,
  pub arguments: String,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub steering: Option<SteeringRecord>,
}

fn json_text<S: serde::Serializer>(item: &Option<Arc<Item>>, serializer: S) -> Result<S::Ok, S::Error> {
  match item {
    Some(item) => serde_json::value::RawValue::from_string(item.json_text().to_owned())
      .map_err(serde::ser::Error::custom)?
      .serialize(serializer),
    None => serializer.serialize_none(),
  }
}

fn json_texts<S: serde::Serializer>(items: &[Arc<Item>], serializer: S) -> Result<S::Ok, S::Error> {
  use serde::ser::SerializeSeq;
  let mut seq = serializer.serialize_seq(Some(items.len()))?;
  for item in items {
    let raw =
      serde_json::value::RawValue::from_string(item.json_text().to_owned()).map_err(serde::ser::Error::custom)?;
    seq.serialize_element(&raw)?;
  }
  seq.end()
}

impl ModelCallRecord {
  /// The record without what is large, as JSON text: no item texts (layers give their item counts) and no spans.
  pub fn summary_json(&self) -> String {
    serde_json::to_string(&SummaryView(self)).unwrap_or_default()
  }
}

/// A record as its summary (see [`ModelCallRecord::summary_json`]).
struct SummaryView<'a>(&'a ModelCallRecord);

impl Serialize for SummaryView<'_> {
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let r = self.0;
    let layers: Vec<LayerSummary<'_>> = r.layers.iter().map(LayerSummary).collect();
    let mut map = serializer.serialize_map(None)?;
    map.serialize_entry("id", &r.id)?;
    map.serialize_entry("threadId", &r.thread_id)?;
    if let Some(resource) = &r.resource_id {
      map.serialize_entry("resourceId", resource)?;
    }
    map.serialize_entry("turn", &r.turn)?;
    map.serialize_entry("context", &r.context)?;
    map.serialize_entry("stepId", &r.step_id)?;
    map.serialize_entry("model", &r.model)?;
    map.serialize_entry("at", &r.at)?;
    map.serialize_entry("durationMs", &r.duration_ms)?;
    map.serialize_entry("window", &r.window)?;
    map.serialize_entry("layers", &layers)?;
    map.serialize_entry("history", &r.history)?;
    map.serialize_entry("usage", &r.usage)?;
    if let Some(steering) = &r.steering {
      map.serialize_entry("steering", steering)?;
    }
    map.serialize_entry("toolCalls", &r.tool_calls)?;
    map.end()
  }
}

struct LayerSummary<'a>(&'a LayerRecord);

impl Serialize for LayerSummary<'_> {
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let l = self.0;
    let mut map = serializer.serialize_map(None)?;
    map.serialize_entry("id", &l.id)?;
    map.serialize_entry("slot", &l.slot)?;
    map.serialize_entry("scope", l.scope)?;
    map.serialize_entry("recallMode", l.recall_mode)?;
    map.serialize_entry("budget", &l.budget)?;
    map.serialize_entry("used", &l.used)?;
    map.serialize_entry("yielded", &l.yielded)?;
    map.serialize_entry("items", &l.items.len())?;
    map.serialize_entry("kept", &l.kept)?;
    map.serialize_entry("status", l.status)?;
    if let Some(error) = &l.error {
      map.serialize_entry("error", error)?;
    }
    map.end()
  }
}
