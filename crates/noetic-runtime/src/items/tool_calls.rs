//! Tool-call helpers over item lists: orphan stripping (spec §1.5) and `findFunctionCall` (§1.6).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::item::Item;
use super::link::strip_unresolved_mask;

/// `stripUnresolvedToolCalls`: drops each `function_call` whose call id no output in `items` answers, and each
/// `function_call_output` whose call id no call in `items` made. Order is kept; everything else passes through.
///
/// Calls and outputs are paired by string `callId` only. An item of either type without a string `callId` is
/// kept (upstream would pair such items by the raw value, so two items lacking it would match each other).
pub fn strip_unresolved_tool_calls(items: &[Arc<Item>]) -> Vec<Arc<Item>> {
  let pairs: Vec<_> = items.iter().map(|item| item.link()).collect();
  let keep = strip_unresolved_mask(&pairs);
  items.iter().zip(keep).filter(|(_, keep)| *keep).map(|(item, _)| Arc::clone(item)).collect()
}

/// `findFunctionCall`: the parsed arguments of the first `function_call` that has a `callId`, is named exactly
/// `name`, and whose `arguments` text parses to a JSON object (not an array, not null). Calls whose arguments do
/// not parse, or parse to something else, are passed over.
pub fn find_function_call(items: &[Arc<Item>], name: &str) -> Option<Map<String, Value>> {
  let maps: Vec<&Map<String, Value>> = items.iter().map(|item| item.json()).collect();
  super::text::find_function_call(&maps, name)
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  fn it(v: Value) -> Arc<Item> {
    Arc::new(Item::from_value(v).expect("item"))
  }

  fn call(call_id: &str, name: &str, args: &str) -> Arc<Item> {
    it(json!({"type": "function_call", "callId": call_id, "name": name, "arguments": args}))
  }

  fn output(call_id: &str) -> Arc<Item> {
    it(json!({"type": "function_call_output", "callId": call_id, "output": "ok"}))
  }

  #[test]
  fn strips_both_sides_of_incomplete_pairs() {
    // §1.5: [output(x), user, call(y), call(z), output(z)] keeps [user, call(z), output(z)].
    let user = it(json!({"type": "message", "role": "user", "content": []}));
    let (cz, oz) = (call("z", "t", "{}"), output("z"));
    let items = vec![output("x"), Arc::clone(&user), call("y", "t", "{}"), Arc::clone(&cz), Arc::clone(&oz)];
    let kept = strip_unresolved_tool_calls(&items);
    assert_eq!(kept.len(), 3);
    assert!(Arc::ptr_eq(&kept[0], &user) && Arc::ptr_eq(&kept[1], &cz) && Arc::ptr_eq(&kept[2], &oz));
    // Membership only: an output before its call still pairs, and duplicates all survive.
    let items = vec![output("a"), call("a", "t", "{}"), call("a", "t", "{}")];
    assert_eq!(strip_unresolved_tool_calls(&items).len(), 3);
    assert!(strip_unresolved_tool_calls(&[]).is_empty());
  }

  #[test]
  fn finds_the_first_call_with_object_arguments() {
    let items = vec![
      call("1", "other", r#"{"a":1}"#),
      call("2", "plan", "not json"),
      call("3", "plan", "[1,2]"),
      call("4", "plan", "null"),
      call("5", "plan", "\"s\""),
      call("6", "plan", r#"{"step":2,"z":{"k":[true]}}"#),
      call("7", "plan", r#"{"step":3}"#),
    ];
    let found = find_function_call(&items, "plan").expect("call 6");
    assert_eq!(Value::Object(found), json!({"step": 2, "z": {"k": [true]}}));
    assert_eq!(find_function_call(&items, "Plan"), None);
    assert_eq!(find_function_call(&items, "missing"), None);
  }

  #[test]
  fn find_needs_call_id_and_a_function_call() {
    let items = vec![
      it(json!({"type": "function_call", "name": "plan", "arguments": "{\"no\":\"callId\"}"})),
      it(json!({"type": "function_call_output", "callId": "1", "name": "plan", "arguments": "{}"})),
      it(json!({"type": "function_call", "callId": "2", "name": "plan", "arguments": 5})),
      it(json!({"type": "function_call", "callId": null, "name": "plan", "arguments": "{\"ok\":1}"})),
    ];
    // A present-but-null callId counts as present, as upstream's `'callId' in item` does.
    assert_eq!(find_function_call(&items, "plan").map(Value::Object), Some(json!({"ok": 1})));
    assert_eq!(find_function_call(&items[..3], "plan"), None);
  }
}
