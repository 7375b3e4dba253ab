//! What hydrating a checked workflow node builds: one entry per node, children before their parents, each naming
//! the builder to call, with upstream's defaults filled in and its children as positions in the list. The host
//! builds the steps from the list front to back, so it never recurses into the tree.

use serde_json::{Map, Value, json};

use super::tree::{Shape, children};

/// The model an `llm` node without one runs on (upstream's default).
pub const DEFAULT_MODEL: &str = "openai/gpt-4o";

/// The build list of a node [`super::check_node`] accepted; the root is the last entry.
pub fn hydration_plan(checked: &Value) -> Vec<Value> {
  let mut plan: Vec<Value> = Vec::new();
  // Post-order without recursion: a node is entered (its children scheduled), then built once they are.
  let mut pending: Vec<(&Value, bool)> = vec![(checked, false)];
  // Positions of built nodes, in the order they were built, so a parent finds its children's positions.
  let mut built: Vec<usize> = Vec::new();
  while let Some((node, entered)) = pending.pop() {
    let kids = children(node, Shape::Workflow);
    if !entered {
      pending.push((node, true));
      pending.extend(kids.into_iter().rev().map(|(_, _, child)| (child, false)));
      continue;
    }
    // This node's children were the last ones built, in order.
    let positions = built.split_off(built.len() - kids.len());
    let entry = entry(node, &positions);
    plan.push(entry);
    built.push(plan.len() - 1);
  }
  plan
}

/// One node's entry: its own fields, with children replaced by their positions.
fn entry(node: &Value, children: &[usize]) -> Value {
  let field = |key: &str| node.get(key).cloned().unwrap_or(Value::Null);
  let kind = node.get("kind").and_then(Value::as_str).unwrap_or_default();
  let base = json!({ "kind": kind, "id": field("id") });
  let mut out: Map<String, Value> = base.as_object().cloned().unwrap_or_default();
  let mut put = |key: &str, value: Value| {
    out.insert(key.to_owned(), value);
  };
  match kind {
    "llm" => {
      put("model", node.get("model").cloned().unwrap_or_else(|| DEFAULT_MODEL.into()));
      put("instructions", field("instructions"));
      put("tools", field("tools"));
      put("params", field("params"));
    }
    "tool" => {
      put("toolName", field("toolName"));
      put("args", node.get("args").cloned().unwrap_or_else(|| json!({})));
    }
    "branch" => {
      let routes = node.get("routes").and_then(Value::as_array).map_or(0, Vec::len);
      let matches = node.get("routes").and_then(Value::as_array).into_iter().flatten().map(|r| r.get("match"));
      let targets: Vec<Value> =
        matches.zip(children).map(|(m, target)| json!({ "match": m, "target": target })).collect();
      put("routes", Value::Array(targets));
      put("default", children.get(routes).map_or(Value::Null, |&p| json!(p)));
    }
    "fork" => {
      let mode = field("mode");
      // A race takes the first to finish; the others merge, by default keeping the last path's output.
      let merge =
        if mode == "race" { Value::Null } else { node.get("merge").cloned().unwrap_or_else(|| "last".into()) };
      put("mode", mode);
      put("paths", json!(children));
      put("merge", merge);
      put("concurrency", field("concurrency"));
    }
    "spawn" => {
      put("child", json!(children.first()));
      put("timeout", field("timeout"));
    }
    "provide" => {
      put("child", json!(children.first()));
      put("layers", field("layers"));
    }
    "loop" => {
      put("body", json!(children.first()));
      put("until", field("until"));
      put("maxIterations", field("maxIterations"));
    }
    "sequence" => put("steps", json!(children)),
    _ => {
      put("step", json!(children.first()));
      put("ms", field("ms"));
      put("onError", field("onError"));
    }
  }
  Value::Object(out)
}
