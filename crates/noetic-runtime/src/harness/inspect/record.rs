//! What the inspector keeps of one model call: the context window as the model saw it, each layer's share of it,
//! the history kept and dropped, the hook spans around it, and the steering decisions about it and its tool calls.

use std::fmt::Write as _;
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
  /// With `contextCache`: the epoch, its re-anchor reason, each layer's band and what repeated.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub cache: Option<CacheRecord>,
}

/// What prompt-cache anchoring made of one call.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheRecord {
  pub epoch: String,
  pub age: u32,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub reanchor_reason: Option<&'static str>,
  pub anchor_tokens: u64,
  pub live_tokens: u64,
  pub update_tokens: u64,
  pub repeated_tokens: u64,
  /// `[layerId, band, served]` for each layer the request carried.
  pub bands: Vec<(String, &'static str, &'static str)>,
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
  /// Written directly, as `JSON.stringify` would: the live feed carries one for every model call.
  pub fn summary_json(&self) -> String {
    let mut out = Summary(String::with_capacity(512 + 200 * self.layers.len()));
    out.raw("{\"id\":").int(self.id as usize);
    out.key("threadId").text(&self.thread_id);
    if let Some(resource) = &self.resource_id {
      out.key("resourceId").text(resource);
    }
    out.key("turn").text(&self.turn).key("context").text(&self.context);
    out.key("stepId").text(&self.step_id).key("model").text(&self.model);
    out.key("at").num(self.at).key("durationMs").num(self.duration_ms);
    let w = &self.window;
    out.key("window").raw("{\"tokenBudget\":").num(w.token_budget);
    out.key("responseReserve").num(w.response_reserve).key("systemTokens").num(w.system_tokens);
    out.key("toolsTokens").num(w.tools_tokens).key("layerTokens").num(w.layer_tokens);
    out.key("historyTokens").num(w.history_tokens).raw("}");
    out.key("layers").raw("[");
    for (i, l) in self.layers.iter().enumerate() {
      out.raw(if i == 0 { "{\"id\":" } else { ",{\"id\":" }).text(&l.id);
      out.key("slot").num(l.slot).key("scope").text(l.scope).key("recallMode").text(l.recall_mode);
      out.key("budget").num(l.budget).key("used");
      match l.used {
        Some(used) => out.num(used),
        None => out.raw("null"),
      };
      out.key("yielded").num(l.yielded).key("items").int(l.items.len()).key("kept").int(l.kept);
      out.key("status").text(l.status);
      if let Some(error) = &l.error {
        out.key("error").text(error);
      }
      out.raw("}");
    }
    let h = &self.history;
    out.raw("]").key("history").raw("{\"total\":").int(h.total).key("kept").int(h.kept);
    out.key("dropped").int(h.dropped).key("overflow").text(h.overflow);
    out.key("summarized").bool(h.summarized).key("projected").bool(h.projected).raw("}");
    out.key("usage").raw("{\"inputTokens\":").num(self.usage.input_tokens);
    out.key("outputTokens").num(self.usage.output_tokens).raw("}");
    if let Some(steering) = &self.steering {
      out.key("steering").steering(steering);
    }
    out.key("toolCalls").raw("[");
    for (i, call) in self.tool_calls.iter().enumerate() {
      out.raw(if i == 0 { "{\"callId\":" } else { ",{\"callId\":" }).text(&call.call_id);
      out.key("name").text(&call.name).key("arguments").text(&call.arguments);
      if let Some(steering) = &call.steering {
        out.key("steering").steering(steering);
      }
      out.raw("}");
    }
    out.raw("]");
    if let Some(cache) = &self.cache {
      // Small and fixed in shape: serde's text is the summary's as well.
      out.key("cache").raw(&serde_json::to_string(cache).unwrap_or_else(|_| "null".into()));
    }
    out.raw("}");
    out.0
  }
}

/// A summary's JSON as it is written.
struct Summary(String);

impl Summary {
  fn raw(&mut self, text: &str) -> &mut Self {
    self.0.push_str(text);
    self
  }

  /// `,"name":`
  fn key(&mut self, name: &str) -> &mut Self {
    self.0.push_str(",\"");
    self.0.push_str(name);
    self.0.push_str("\":");
    self
  }

  fn text(&mut self, text: &str) -> &mut Self {
    crate::items::write_js_string(&mut self.0, text);
    self
  }

  fn num(&mut self, x: f64) -> &mut Self {
    let _ = crate::items::write_js_number(&mut self.0, x);
    self
  }

  fn int(&mut self, n: usize) -> &mut Self {
    let _ = write!(self.0, "{n}");
    self
  }

  fn bool(&mut self, b: bool) -> &mut Self {
    self.raw(if b { "true" } else { "false" })
  }

  fn steering(&mut self, steering: &SteeringRecord) -> &mut Self {
    self.raw("{\"action\":").text(steering.action);
    if let Some(guidance) = &steering.guidance {
      self.key("guidance").text(guidance);
    }
    self.key("by").raw("[");
    for (i, layer) in steering.by.iter().enumerate() {
      if i > 0 {
        self.raw(",");
      }
      self.text(layer);
    }
    self.raw("]}")
  }
}
