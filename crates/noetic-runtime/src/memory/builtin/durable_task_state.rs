//! `durableTaskState()`: task checkpoints, files and data that persist across the executions of a thread (spec
//! §20.8). Every store appends a checkpoint (the newest 50 are kept); a child's state merges back into the parent's.
//!
//! The state is `{checkpoints: [{timestamp, depth}], files: [...], data: {...}}`, but anything can be set through
//! `setLayerState`: a state whose lists are not lists is an error of the hook (as JS would throw), never a panic.

use serde_json::{Map, Value, json};

use super::js_json::stringify_pretty;
use crate::memory::{BudgetConfig, HookKind, HookSet, LayerSpec, Scope};
use crate::tokens::{estimate_tokens, utf16_prefix};

pub const ID: &str = "durable-task-state";
pub const NAME: &str = "Durable Task State";
/// WORKING_MEMORY + 10.
pub const SLOT: f64 = 110.0;
/// Without a cap the thread's checkpoint list would grow with every model call, forever.
pub const MAX_CHECKPOINTS: usize = 50;
const CLOSING: &str = "\n</task_state>";

/// The layer as the runtime sees it: thread-scoped (its point is to outlive one execution), budget {100, 800}.
pub fn layer_spec() -> LayerSpec {
  let mut spec = LayerSpec::new(ID, SLOT, Scope::Thread);
  spec.budget = BudgetConfig::Range { min: 100.0, max: 800.0 };
  spec.hooks =
    [HookKind::Init, HookKind::Recall, HookKind::Store, HookKind::OnSpawn, HookKind::OnReturn, HookKind::OnComplete]
      .into_iter()
      .collect::<HookSet>();
  spec.timeouts[HookKind::Store as usize] = Some(30_000.0);
  spec
}

pub fn default_state() -> Value {
  json!({ "checkpoints": [], "files": [], "data": {} })
}

/// init: the saved state (a saved `null` counts as none), or the empty one.
pub fn init_state(saved: Option<Value>) -> Value {
  saved.filter(|value| !value.is_null()).unwrap_or_else(default_state)
}

/// JS truthiness of a state (a recall of a falsy state gives nothing).
fn is_truthy(value: &Value) -> bool {
  match value {
    Value::Null => false,
    Value::Bool(b) => *b,
    Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
    Value::String(s) => !s.is_empty(),
    Value::Array(_) | Value::Object(_) => true,
  }
}

fn render(state: &Value) -> String {
  format!("<task_state>\n{}{CLOSING}", stringify_pretty(state))
}

/// recall: the state rendered in `<task_state>`, and its token estimate. With a positive budget, the oldest half
/// of the checkpoints goes while the render is over it; then, if still over, the text is cut to fit, closing tag
/// kept. A budget of 0 trims nothing (a zero share must not erase the task state).
pub fn recall(state: &Value, budget: f64) -> Option<(String, u64)> {
  if !is_truthy(state) {
    return None;
  }
  let mut view = state.clone();
  let mut text = render(&view);
  if budget > 0.0 {
    while estimate_tokens(&text) as f64 > budget {
      let Some(checkpoints) = view.get_mut("checkpoints").and_then(Value::as_array_mut).filter(|c| !c.is_empty())
      else {
        break;
      };
      let dropped = checkpoints.len().div_ceil(2);
      checkpoints.drain(..dropped);
      text = render(&view);
    }
    if estimate_tokens(&text) as f64 > budget {
      let room = (budget * 4.0 - CLOSING.len() as f64).max(0.0) as usize;
      text = format!("{}{CLOSING}", utf16_prefix(&text, room));
    }
  }
  let tokens = estimate_tokens(&text);
  Some((text, tokens))
}

fn checkpoint(now_ms: u64, depth: u32) -> Value {
  json!({ "timestamp": now_ms, "depth": depth })
}

/// Milliseconds since the epoch, as `Date.now()`.
pub fn now_ms() -> u64 {
  std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The list under `key` of an object state; `what` names the hook in the error when it is not a list.
fn list<'a>(state: &'a Value, key: &str, what: &str) -> Result<&'a [Value], String> {
  match state.get(key) {
    Some(Value::Array(items)) => Ok(items),
    other => Err(format!("{what}: state.{key} is not an array (got {})", describe(other))),
  }
}

fn describe(value: Option<&Value>) -> &'static str {
  match value {
    None => "undefined",
    Some(Value::Null) => "null",
    Some(Value::Bool(_)) => "a boolean",
    Some(Value::Number(_)) => "a number",
    Some(Value::String(_)) => "a string",
    Some(Value::Array(_)) => "an array",
    Some(Value::Object(_)) => "an object",
  }
}

/// The newest `MAX_CHECKPOINTS` of `checkpoints`.
fn capped(mut checkpoints: Vec<Value>) -> Vec<Value> {
  let excess = checkpoints.len().saturating_sub(MAX_CHECKPOINTS);
  checkpoints.drain(..excess);
  checkpoints
}

/// The state as an object to spread (a non-object spreads to nothing, as in JS).
fn spread(state: &Value) -> Map<String, Value> {
  state.as_object().cloned().unwrap_or_default()
}

/// store: one more checkpoint at `depth` (no state counts as the empty one). It always writes.
pub fn store(state: Option<&Value>, now_ms: u64, depth: u32) -> Result<Value, String> {
  let base = state.filter(|value| !value.is_null()).cloned().unwrap_or_else(default_state);
  let mut checkpoints = list(&base, "checkpoints", "store")?.to_vec();
  checkpoints.push(checkpoint(now_ms, depth));
  let mut next = spread(&base);
  next.insert("checkpoints".into(), Value::Array(capped(checkpoints)));
  Ok(Value::Object(next))
}

/// onReturn: the child's work merged into the parent's state (none counts as empty): checkpoints appended
/// (capped), files united in order, data merged with the child winning.
pub fn on_return(parent: Option<&Value>, child: &Value) -> Result<Value, String> {
  let parent = parent.filter(|value| !value.is_null()).cloned().unwrap_or_else(default_state);
  let checkpoints = [list(&parent, "checkpoints", "onReturn")?, list(child, "checkpoints", "onReturn")?].concat();
  let mut files: Vec<Value> = Vec::new();
  for file in [list(&parent, "files", "onReturn")?, list(child, "files", "onReturn")?].concat() {
    // A JS Set: equal primitives once; objects are distinct by identity, and the child's are copies.
    let primitive = !matches!(file, Value::Array(_) | Value::Object(_));
    if !(primitive && files.contains(&file)) {
      files.push(file);
    }
  }
  let mut data = parent.get("data").map(spread).unwrap_or_default();
  data.extend(child.get("data").map(spread).unwrap_or_default());
  Ok(json!({ "checkpoints": capped(checkpoints), "files": files, "data": data }))
}

/// onComplete: the outcome recorded as `data.__outcome`, with a checkpoint at depth 0; nothing for no state.
pub fn on_complete(state: &Value, outcome: &str, now_ms: u64) -> Result<Option<Value>, String> {
  if !is_truthy(state) {
    return Ok(None);
  }
  let mut data = state.get("data").map(spread).unwrap_or_default();
  data.insert("__outcome".into(), Value::String(outcome.to_owned()));
  let mut checkpoints = list(state, "checkpoints", "onComplete")?.to_vec();
  checkpoints.push(checkpoint(now_ms, 0));
  let mut next = spread(state);
  next.insert("data".into(), Value::Object(data));
  next.insert("checkpoints".into(), Value::Array(capped(checkpoints)));
  Ok(Some(Value::Object(next)))
}

#[cfg(test)]
mod tests {
  use super::*;

  fn with_checkpoints(n: usize) -> Value {
    let checkpoints: Vec<Value> = (0..n).map(|i| checkpoint(1_700_000_000_000 + i as u64, 0)).collect();
    json!({ "checkpoints": checkpoints, "files": ["a.ts"], "data": { "k": 1 } })
  }

  #[test]
  fn recall_halves_the_oldest_checkpoints_to_fit() {
    // §20.8 / §23: 8 checkpoints, a file and a data key at budget 60 keep the newest 2 (8 → 4 → 2).
    let (text, tokens) = recall(&with_checkpoints(8), 60.0).expect("a state recalls");
    assert_eq!(tokens, 60, "two 13-digit checkpoints render in exactly 60 tokens");
    let (fewer, _) = recall(&with_checkpoints(8), 59.0).expect("a state recalls");
    assert_eq!(fewer.matches("timestamp").count(), 1, "one token less halves once more");
    let shown: Value = serde_json::from_str(&text["<task_state>\n".len()..text.len() - CLOSING.len()]).expect("json");
    assert_eq!(shown["checkpoints"].as_array().map(Vec::len), Some(2));
    assert_eq!(shown["checkpoints"][1]["timestamp"], json!(1_700_000_000_007_u64), "the newest stay");
    assert_eq!(shown["files"], json!(["a.ts"]));
  }

  #[test]
  fn recall_cuts_the_text_when_checkpoints_are_not_enough_and_never_at_budget_zero() {
    let state = json!({ "checkpoints": [], "files": [], "data": { "notes": "x".repeat(400) } });
    let (text, tokens) = recall(&state, 20.0).expect("recalls");
    assert!(text.ends_with(CLOSING) && text.starts_with("<task_state>\n"));
    assert_eq!(text.len(), 80, "budget × 4 units, closing tag included");
    assert_eq!(tokens, 20);
    let (whole, _) = recall(&state, 0.0).expect("recalls");
    assert!(whole.contains(&"x".repeat(400)), "a zero budget trims nothing");
    assert_eq!(recall(&Value::Null, 100.0), None);
  }

  #[test]
  fn store_appends_a_capped_checkpoint_and_keeps_other_keys() {
    let next = store(Some(&with_checkpoints(50)), 42, 3).expect("stores");
    let checkpoints = next["checkpoints"].as_array().expect("list");
    assert_eq!(checkpoints.len(), 50);
    assert_eq!(checkpoints[49], json!({ "timestamp": 42, "depth": 3 }));
    assert_eq!(checkpoints[0]["timestamp"], json!(1_700_000_000_001_u64), "the oldest went");
    assert_eq!(next["files"], json!(["a.ts"]));
    assert_eq!(store(None, 1, 0).expect("stores")["checkpoints"].as_array().map(Vec::len), Some(1));
    let bad = store(Some(&json!({ "checkpoints": "no" })), 1, 0).expect_err("not a list");
    assert!(bad.contains("state.checkpoints is not an array"), "{bad}");
  }

  #[test]
  fn on_return_merges_the_child_into_the_parent() {
    let parent =
      json!({ "checkpoints": [{ "timestamp": 1, "depth": 0 }], "files": ["a", "b"], "data": { "x": 1, "y": 1 } });
    let child =
      json!({ "checkpoints": [{ "timestamp": 2, "depth": 1 }], "files": ["b", "c"], "data": { "y": 2, "z": 2 } });
    let merged = on_return(Some(&parent), &child).expect("merges");
    assert_eq!(
      merged,
      json!({
        "checkpoints": [{ "timestamp": 1, "depth": 0 }, { "timestamp": 2, "depth": 1 }],
        "files": ["a", "b", "c"],
        "data": { "x": 1, "y": 2, "z": 2 },
      })
    );
    // No parent state: the child's work is kept all the same.
    assert_eq!(on_return(None, &child).expect("merges")["files"], json!(["b", "c"]));
  }

  #[test]
  fn on_complete_records_the_outcome() {
    let done = on_complete(&with_checkpoints(1), "failure", 9).expect("ok").expect("a state");
    assert_eq!(done["data"], json!({ "k": 1, "__outcome": "failure" }));
    assert_eq!(done["checkpoints"][1], json!({ "timestamp": 9, "depth": 0 }));
    assert_eq!(on_complete(&Value::Null, "success", 9), Ok(None));
  }
}
