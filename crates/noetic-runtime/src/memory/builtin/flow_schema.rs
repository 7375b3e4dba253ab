//! The plan tree planMemory's `setPlanTree` accepts (spec §20.5.1): a JSON flow of `llm`, `subagent`, `fork`,
//! `spawn` and `sequence` nodes. [`parse_flow`] checks a candidate and returns it with unknown keys dropped and
//! its keys in schema order (as zod hands a parsed object back); [`flow_depth`] measures a tree (the walk is
//! the workflows', [`crate::workflow::tree`]).

use serde_json::{Map, Value};

use crate::workflow::tree::{self, Shape};

/// Nesting past which a tree is refused before it is walked, so that hostile input cannot exhaust the stack.
pub const MAX_NESTING: usize = 256;

const KINDS: &str = "\"llm\", \"subagent\", \"fork\", \"spawn\" or \"sequence\"";
const FORK_MODES: [&str; 3] = ["all", "race", "settle"];

/// A checked flow node with only the schema's keys, or an error naming where the candidate goes wrong.
pub fn parse_flow(candidate: &Value) -> Result<Value, String> {
  parse_node(candidate, "plan tree", 0).map(Value::Object)
}

/// How deep a tree goes: leaves (`llm`, `subagent`) are 0; `sequence` and `fork` are one more than their
/// deepest child; `spawn` is one more than its child. Measured without recursion, checked or not.
pub fn flow_depth(node: &Value) -> usize {
  tree::depth(node, Shape::Flow)
}

/// Copies the fields of one node, checking each; `at` names the node in errors (`plan tree.steps[0]`).
fn parse_node(value: &Value, at: &str, nesting: usize) -> Result<Map<String, Value>, String> {
  if nesting > MAX_NESTING {
    return Err(format!("{at}: the tree is nested more than {MAX_NESTING} levels deep"));
  }
  let Value::Object(node) = value else { return Err(format!("{at} must be an object, got {}", kind_of(value))) };
  let kind = match node.get("kind") {
    Some(Value::String(kind)) => kind.as_str(),
    _ => return Err(format!("{at}.kind must be one of {KINDS}")),
  };
  let mut fields = Fields { node, at, out: Map::new() };
  fields.out.insert("kind".into(), Value::String(kind.to_owned()));
  fields.string("id", Need::NonEmpty)?;
  fields.string("subPlanRef", Need::Optional)?;
  match kind {
    "llm" => {
      fields.string("model", Need::Optional)?;
      fields.string("instructions", Need::Present)?;
      fields.string_list("tools")?;
    }
    "subagent" => {
      fields.string("preset", Need::NonEmpty)?;
      fields.string("prompt", Need::Present)?;
    }
    "fork" => {
      match node.get("mode") {
        Some(Value::String(mode)) if FORK_MODES.contains(&mode.as_str()) => {
          fields.out.insert("mode".into(), Value::String(mode.clone()));
        }
        _ => return Err(format!("{at}.mode must be \"all\", \"race\" or \"settle\"")),
      }
      fields.children("paths", nesting)?;
    }
    "spawn" => {
      let child = node.get("child").ok_or_else(|| format!("{at}.child is required"))?;
      let parsed = parse_node(child, &format!("{at}.child"), nesting + 1)?;
      fields.out.insert("child".into(), Value::Object(parsed));
    }
    "sequence" => fields.children("steps", nesting)?,
    _ => return Err(format!("{at}.kind must be one of {KINDS}, got \"{kind}\"")),
  }
  Ok(fields.out)
}

#[derive(Clone, Copy, PartialEq)]
enum Need {
  Optional,
  Present,
  NonEmpty,
}

/// The node being read and the checked copy being built.
struct Fields<'a> {
  node: &'a Map<String, Value>,
  at: &'a str,
  out: Map<String, Value>,
}

impl Fields<'_> {
  fn string(&mut self, key: &str, need: Need) -> Result<(), String> {
    match (self.node.get(key), need) {
      // As zod's `.optional()`: an absent key and an explicit `undefined` (which JSON cannot carry) both pass.
      (None, Need::Optional) => Ok(()),
      (Some(Value::String(text)), Need::NonEmpty) if text.is_empty() => {
        Err(format!("{}.{key} must be a non-empty string", self.at))
      }
      (Some(Value::String(text)), _) => {
        self.out.insert(key.to_owned(), Value::String(text.clone()));
        Ok(())
      }
      (other, _) => Err(format!("{}.{key} must be a string, got {}", self.at, other.map_or("nothing", kind_of))),
    }
  }

  fn string_list(&mut self, key: &str) -> Result<(), String> {
    let Some(value) = self.node.get(key) else { return Ok(()) };
    let all_strings = value.as_array().is_some_and(|list| list.iter().all(Value::is_string));
    if !all_strings {
      return Err(format!("{}.{key} must be a list of strings", self.at));
    }
    self.out.insert(key.to_owned(), value.clone());
    Ok(())
  }

  /// A non-empty list of child nodes.
  fn children(&mut self, key: &str, nesting: usize) -> Result<(), String> {
    let list = match self.node.get(key) {
      Some(Value::Array(list)) if !list.is_empty() => list,
      _ => return Err(format!("{}.{key} must be a list of at least one node", self.at)),
    };
    let parsed = list
      .iter()
      .enumerate()
      .map(|(i, child)| parse_node(child, &format!("{}.{key}[{i}]", self.at), nesting + 1).map(Value::Object))
      .collect::<Result<Vec<_>, _>>()?;
    self.out.insert(key.to_owned(), Value::Array(parsed));
    Ok(())
  }
}

fn kind_of(value: &Value) -> &'static str {
  match value {
    Value::Null => "null",
    Value::Bool(_) => "a boolean",
    Value::Number(_) => "a number",
    Value::String(_) => "a string",
    Value::Array(_) => "an array",
    Value::Object(_) => "an object",
  }
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  fn leaf(id: &str) -> Value {
    json!({"kind": "llm", "id": id, "instructions": "do it"})
  }

  #[test]
  fn a_valid_tree_comes_back_in_schema_order_without_unknown_keys() {
    let tree = json!({
      "steps": [{"instructions": "x", "tools": ["Read"], "id": "a", "kind": "llm", "extra": 1}],
      "id": "root",
      "kind": "sequence",
      "note": "dropped"
    });
    let parsed = parse_flow(&tree).expect("valid");
    assert_eq!(
      parsed,
      json!({"kind": "sequence", "id": "root", "steps": [
        {"kind": "llm", "id": "a", "instructions": "x", "tools": ["Read"]}
      ]})
    );
    let keys: Vec<_> = parsed["steps"][0].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    assert_eq!(keys, ["kind", "id", "instructions", "tools"]);
  }

  #[test]
  fn every_kind_parses() {
    let tree = json!({"kind": "fork", "id": "f", "mode": "race", "subPlanRef": "p2", "paths": [
      {"kind": "spawn", "id": "s", "child": {"kind": "subagent", "id": "sa", "preset": "explore", "prompt": ""}},
      leaf("l")
    ]});
    assert_eq!(parse_flow(&tree), Ok(tree));
  }

  #[test]
  fn bad_nodes_are_named_by_their_path() {
    let cases = [
      (json!(5), "plan tree must be an object, got a number"),
      (json!({"kind": "loop", "id": "x"}), "plan tree.kind must be one of"),
      (json!({"kind": "llm", "id": "", "instructions": "x"}), "plan tree.id must be a non-empty string"),
      (json!({"kind": "llm", "id": "a"}), "plan tree.instructions must be a string, got nothing"),
      (json!({"kind": "sequence", "id": "a", "steps": []}), "plan tree.steps must be a list of at least one node"),
      (json!({"kind": "fork", "id": "a", "mode": "any", "paths": [leaf("b")]}), "plan tree.mode must be"),
      (json!({"kind": "sequence", "id": "a", "steps": [leaf("b"), {"kind": "llm", "id": 3}]}), "plan tree.steps[1].id"),
      (json!({"kind": "llm", "id": "a", "instructions": "x", "tools": ["a", 1]}), "plan tree.tools must be a list"),
      (json!({"kind": "subagent", "id": "a", "preset": "", "prompt": "p"}), "plan tree.preset must be a non-empty"),
      (json!({"kind": "spawn", "id": "a"}), "plan tree.child is required"),
    ];
    for (tree, expected) in cases {
      let error = parse_flow(&tree).expect_err("invalid");
      assert!(error.starts_with(expected), "{error}");
    }
  }

  #[test]
  fn depth_counts_structural_levels() {
    assert_eq!(flow_depth(&leaf("a")), 0);
    let one = json!({"kind": "sequence", "id": "s", "steps": [leaf("a")]});
    assert_eq!(flow_depth(&one), 1);
    let two = json!({"kind": "fork", "id": "f", "mode": "all", "paths": [leaf("b"), one]});
    assert_eq!(flow_depth(&two), 2);
    assert_eq!(flow_depth(&json!({"kind": "spawn", "id": "p", "child": two})), 3);
  }

  #[test]
  fn hostile_nesting_is_refused_not_recursed() {
    let deep = (0..300).fold(leaf("x"), |child, i| json!({"kind": "spawn", "id": format!("n{i}"), "child": child}));
    let error = parse_flow(&deep).expect_err("too deep");
    assert!(error.contains("nested more than 256 levels"), "{error}");
  }
}
