//! `toolMemoryLayer(tools, opts)`: one layer per memory the tools declare. A tool's `memory.id`, else its name,
//! names the memory; tools naming one id share the first declaration's. JS sends a sketch of both arguments and
//! gets back each layer's metadata with the index of the tool whose declaration it runs; it adds the hooks, which
//! call that declaration's `init` and `recall`.

use serde_json::{Value, json};

use crate::error::ConfigError;
use crate::js_sketch::Sketch;

/// WORKING_MEMORY + 10: below working memory's own recall.
pub const DEFAULT_SLOT: f64 = 110.0;

fn fail(code: &str, message: String, hint: &str) -> Result<Vec<Value>, ConfigError> {
  Err(ConfigError::new(code, message, hint))
}

/// `[{tool, id, name, slot, scope}]`, in the order the memories are first declared, from a sketch of
/// `[tools, opts]`. A tool without a (truthy) `memory` adds none. An id or slot that JSON cannot carry shows as
/// JSON writes it.
pub fn layers(args: Sketch<'_>) -> Result<Vec<Value>, ConfigError> {
  let given = args.as_array().unwrap_or_default();
  let arg = |i: usize| given.get(i).copied().unwrap_or_else(Sketch::undefined);
  let Some(tools) = arg(0).as_array() else {
    let message = format!("toolMemoryLayer(tools): tools is {}; expected an array of tools.", arg(0).described());
    return fail("INVALID_TOOLS", message, "Pass the tools whose `memory` declarations should become layers.");
  };
  let slot = arg(1).field("slot");
  let slot = if slot.is_nullish() { json!(DEFAULT_SLOT) } else { slot.plain().cloned().unwrap_or(Value::Null) };
  let mut ids: Vec<Value> = Vec::new();
  let mut out = Vec::new();
  for (index, tool) in tools.iter().enumerate() {
    let memory = tool.field("memory");
    if !memory.is_truthy() {
      continue;
    }
    if !(memory.field("init").is_function() && memory.field("recall").is_function()) {
      let message = format!(
        "toolMemoryLayer: the memory of tool '{}' needs init() and recall(state) functions.",
        tool.field("name").js_string()
      );
      let hint = "Declare memory: { id?, init: () => state, recall: (state) => text | null }.";
      return fail("INVALID_TOOL_MEMORY", message, hint);
    }
    let named = if memory.field("id").is_nullish() { tool.field("name") } else { memory.field("id") };
    let id = named.plain().cloned().unwrap_or(Value::Null);
    if ids.contains(&id) {
      continue;
    }
    ids.push(id.clone());
    out.push(json!({ "tool": index, "id": id, "name": id, "slot": slot, "scope": "execution" }));
  }
  Ok(out)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn function() -> Value {
    json!({ "$sketch": "a function", "type": "function" })
  }

  fn tool(name: &str, id: Option<&str>) -> Value {
    json!({ "name": name, "memory": { "id": id, "init": function(), "recall": function() } })
  }

  #[test]
  fn one_layer_per_memory_id_first_declaration_wins() {
    let args =
      json!([[tool("a", Some("notes")), { "name": "plain" }, tool("b", Some("notes")), tool("c", None)], null]);
    let layers = layers(Sketch::of(&args)).unwrap();
    let picked: Vec<_> = layers.iter().map(|l| (l["tool"].clone(), l["id"].clone())).collect();
    assert_eq!(picked, vec![(json!(0), json!("notes")), (json!(3), json!("c"))]);
    assert_eq!((layers[0]["slot"].clone(), layers[0]["scope"].clone()), (json!(110.0), json!("execution")));
  }

  #[test]
  fn a_given_slot_is_used_as_given() {
    let args = json!([[tool("a", None)], { "slot": 7 }]);
    assert_eq!(layers(Sketch::of(&args)).unwrap()[0]["slot"], json!(7));
  }

  #[test]
  fn bad_tools_are_refused() {
    assert_eq!(layers(Sketch::of(&json!(["x"]))).unwrap_err().code, "INVALID_TOOLS");
    let args = json!([[{ "name": "notes", "memory": { "init": function() } }]]);
    let error = layers(Sketch::of(&args)).unwrap_err();
    assert_eq!(error.message, "toolMemoryLayer: the memory of tool 'notes' needs init() and recall(state) functions.");
  }
}
