//! Text pulled out of items for the built-in layers: upstream's `collectOutputText`, `collectInputText`,
//! `extractAssistantText` and `findFunctionCall` (spec §1.2, §1.6).
//!
//! Items arrive as their JSON objects. Anything malformed (missing content, non-object parts, non-string texts)
//! contributes nothing instead of failing, where upstream would have thrown or stringified.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

type Item = Map<String, Value>;

fn str_field<'a>(object: &'a Item, key: &str) -> Option<&'a str> {
  object.get(key).and_then(Value::as_str)
}

fn is_message(item: &Item) -> bool {
  str_field(item, "type") == Some("message")
}

fn is_assistant_message(item: &Item) -> bool {
  is_message(item) && str_field(item, "role") == Some("assistant")
}

/// The object parts of a message's `content` array; anything else in (or instead of) the array is ignored.
fn parts(item: &Item) -> impl Iterator<Item = &Item> {
  item.get("content").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_object)
}

/// The `output_text` parts of a message, joined with nothing in between.
fn output_text_of(item: &Item) -> String {
  parts(item)
    .filter(|part| str_field(part, "type") == Some("output_text"))
    .filter_map(|part| str_field(part, "text"))
    .collect()
}

/// A message's `content` as raw JSON: each part's `type` and `text` as written, the rest skipped unparsed.
#[derive(serde::Deserialize)]
struct RawMessage<'a> {
  #[serde(borrow)]
  content: Vec<RawPart<'a>>,
}

#[derive(serde::Deserialize)]
struct RawPart<'a> {
  #[serde(rename = "type", borrow)]
  kind: Option<&'a RawValue>,
  #[serde(borrow)]
  text: Option<&'a RawValue>,
}

/// The JSON string literal of a message's joined `output_text` (`item_text` is the message's JSON text), when it
/// holds a lone surrogate escape: the text then cannot be a Rust string as it is (B1). `None` otherwise, or for a
/// message whose content is not a list of part objects.
pub fn output_text_literal(item_text: &str) -> Option<String> {
  // A cheap test first: no surrogate escape, nothing to keep.
  if !item_text.contains("\\ud") && !item_text.contains("\\uD") {
    return None;
  }
  let message: RawMessage<'_> = serde_json::from_str(item_text).ok()?;
  let mut inner = String::new();
  for part in &message.content {
    if part.kind.map(RawValue::get) != Some("\"output_text\"") {
      continue;
    }
    // A string literal's inside: the parts' texts joined with nothing between, as their values are.
    let Some(text) = part.text.map(RawValue::get).filter(|text| text.starts_with('"')) else { continue };
    inner.push_str(&text[1..text.len() - 1]);
  }
  let literal = format!("\"{inner}\"");
  // Only when the literal is not a Rust string as it is (a lone surrogate; serde refuses those).
  serde_json::from_str::<String>(&literal).is_err().then_some(literal)
}

/// A message's joined `output_text` read straight from its JSON text (`item_text`), as [`extract_assistant_text`]
/// reads it from the parsed fields, without parsing the rest: the model's answer ends every LLM step, and building
/// its fields as a map (a hash per key) cost more than the step's other work on the answer. `None` when the text is
/// not the usual shape (content not a list of part objects, a part's type or text not a plain string, a duplicate
/// key): the caller then reads the parsed fields.
pub fn output_text_of_json(item_text: &str) -> Option<String> {
  let message: RawMessage<'_> = serde_json::from_str(item_text).ok()?;
  let mut joined = String::new();
  for part in &message.content {
    match part.kind.map(RawValue::get) {
      Some("\"output_text\"") => {}
      // A type written with escapes, or not a string: the parsed fields decide.
      Some(kind) if kind.contains('\\') || !kind.starts_with('"') => return None,
      _ => continue,
    }
    let Some(text) = part.text.map(RawValue::get) else { continue };
    if !text.starts_with('"') {
      return None;
    }
    let inner = &text[1..text.len() - 1];
    if inner.contains('\\') {
      joined.push_str(&serde_json::from_str::<String>(text).ok()?);
    } else {
      joined.push_str(inner);
    }
  }
  Some(joined)
}

/// [`extract_assistant_text`] of one log item: its text when it is an assistant message, else `""`.
pub fn assistant_text_of(item: &super::item::Item) -> String {
  if item.item_type() != "message" || item.role() != Some("assistant") {
    return String::new();
  }
  output_text_of_json(item.json_text()).unwrap_or_else(|| extract_assistant_text(&[&*item.fields()]))
}

/// One string per assistant message: its `output_text` parts joined, empty results dropped.
pub fn collect_output_text(items: &[&Item]) -> Vec<String> {
  items
    .iter()
    .filter(|item| is_assistant_message(item))
    .map(|item| output_text_of(item))
    .filter(|text| !text.is_empty())
    .collect()
}

/// Text from input-side items, in item order: every message (any role) gives the join of all parts that carry a
/// string `text`, and every `function_call_output` gives its `output`. Empty strings are dropped.
pub fn collect_input_text(items: &[&Item]) -> Vec<String> {
  let mut texts = Vec::new();
  for item in items {
    if is_message(item) {
      let text: String = parts(item).filter_map(|part| str_field(part, "text")).collect();
      if !text.is_empty() {
        texts.push(text);
      }
    } else if str_field(item, "type") == Some("function_call_output")
      && let Some(output) = str_field(item, "output")
      && !output.is_empty()
    {
      texts.push(output.to_owned());
    }
  }
  texts
}

/// The joined `output_text` of the last assistant message, or `""` when there is none.
pub fn extract_assistant_text(items: &[&Item]) -> String {
  items.iter().rev().find(|item| is_assistant_message(item)).map(|item| output_text_of(item)).unwrap_or_default()
}

/// The parsed arguments of the first `function_call` named exactly `name` that has both `callId` and `name` keys
/// and whose `arguments` string parses to a JSON object. Calls with unparsable or non-object arguments are
/// skipped, so a later good call can still match.
pub(crate) fn find_function_call(items: &[&Item], name: &str) -> Option<Map<String, Value>> {
  items
    .iter()
    .filter(|item| str_field(item, "type") == Some("function_call"))
    // Upstream tests for the presence of both keys, whatever their values.
    .filter(|item| item.contains_key("callId") && str_field(item, "name") == Some(name))
    .find_map(|item| match crate::js_text::from_js_json::<Value>(str_field(item, "arguments")?) {
      Ok(Value::Object(args)) => Some(args),
      _ => None,
    })
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  fn objects(values: &[Value]) -> Vec<&Item> {
    values.iter().filter_map(Value::as_object).collect()
  }

  fn assistant(parts: Value) -> Value {
    json!({"type": "message", "role": "assistant", "content": parts})
  }

  fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
  }

  fn call(call_id: &str, name: &str, arguments: &str) -> Value {
    json!({"type": "function_call", "callId": call_id, "name": name, "arguments": arguments})
  }

  #[test]
  fn an_answer_read_from_its_text_is_the_answer_read_from_its_fields() {
    use crate::items::Item as LogItem;
    let cases = [
      json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}, {"type": "output_text", "text": "b\"q é"}]}),
      json!({"type": "message", "role": "assistant", "content": [{"type": "reasoning", "text": "no"}, {"text": "untyped"}, {"type": "output_text", "text": "yes"}]}),
      json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": 7}, {"type": "output_text", "text": "kept"}]}),
      json!({"type": "message", "role": "assistant", "content": ["not a part", {"type": "output_text", "text": "x"}]}),
      json!({"type": "message", "role": "assistant", "content": "not a list"}),
      json!({"type": "message", "role": "assistant"}),
      json!({"type": "message", "role": "user", "content": [{"type": "output_text", "text": "not an answer"}]}),
      json!({"type": "function_call", "role": "assistant", "content": [{"type": "output_text", "text": "not a message"}]}),
    ];
    for case in cases {
      let item = LogItem::from_value(case.clone()).expect("item");
      let fields = case.as_object().expect("object");
      assert_eq!(assistant_text_of(&item), extract_assistant_text(&[fields]), "{case}");
    }
    // Escapes in a part's type or a duplicate key: the text is not read directly, and the fields decide.
    assert_eq!(output_text_of_json(r#"{"content":[{"type":"output\u005ftext","text":"x"}]}"#), None);
    assert_eq!(output_text_of_json(r#"{"content":[{"type":"output_text","text":"x","text":"y"}]}"#), None);
  }

  #[test]
  fn output_text_is_one_string_per_assistant_message() {
    let items = [
      user("ignored"),
      assistant(json!([
        {"type": "output_text", "text": "Hel", "annotations": []},
        {"type": "refusal", "refusal": "no"},
        {"type": "output_text", "text": "lo"},
      ])),
      // A message whose output text is empty is dropped, as is one with no usable content.
      assistant(json!([{"type": "output_text", "text": ""}])),
      assistant(json!("not an array")),
      assistant(json!([{"type": "refusal", "refusal": "only a refusal"}])),
      assistant(json!([{"type": "output_text", "text": "second"}])),
    ];
    assert_eq!(collect_output_text(&objects(&items)), vec!["Hello", "second"]);
  }

  #[test]
  fn input_text_takes_every_message_role_and_tool_outputs_in_order() {
    let items = [
      json!({"type": "function_call_output", "callId": "c1", "output": "tool said"}),
      user("hi"),
      json!({"type": "message", "role": "developer", "content": [
        {"type": "input_text", "text": "a"},
        {"type": "input_image", "imageUrl": "x"},
        {"type": "input_text", "text": "b"},
      ]}),
      // Assistant messages count too: any part with a string `text`.
      assistant(json!([{"type": "output_text", "text": "said"}])),
      json!({"type": "function_call_output", "callId": "c2", "output": ""}),
      json!({"type": "function_call", "callId": "c3", "name": "f", "arguments": "{}"}),
      json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": ""}]}),
      json!({"type": "reasoning", "content": [{"type": "reasoning_text", "text": "hidden"}]}),
    ];
    assert_eq!(collect_input_text(&objects(&items)), vec!["tool said", "hi", "ab", "said"]);
  }

  #[test]
  fn assistant_text_comes_from_the_last_assistant_message() {
    let items = [
      assistant(json!([{"type": "output_text", "text": "first"}])),
      assistant(json!([{"type": "output_text", "text": "la"}, {"type": "output_text", "text": "st"}])),
      user("after"),
    ];
    assert_eq!(extract_assistant_text(&objects(&items)), "last");
    assert_eq!(extract_assistant_text(&objects(&[user("only user")])), "");
    // The last assistant message wins even when its text is empty.
    let items = [assistant(json!([{"type": "output_text", "text": "earlier"}])), assistant(json!([]))];
    assert_eq!(extract_assistant_text(&objects(&items)), "");
  }

  #[test]
  fn function_call_lookup_skips_unusable_calls() {
    let items = [
      call("c0", "updateWorkingMemoryX", r#"{"a": 0}"#),
      call("c1", "updateWorkingMemory", "not json"),
      call("c2", "updateWorkingMemory", "[1, 2]"),
      call("c3", "updateWorkingMemory", "null"),
      json!({"type": "function_call", "name": "updateWorkingMemory", "arguments": r#"{"noCallId": true}"#}),
      call("c4", "updateWorkingMemory", r#"{"a": 1}"#),
      call("c5", "updateWorkingMemory", r#"{"a": 2}"#),
    ];
    let found = find_function_call(&objects(&items), "updateWorkingMemory");
    assert_eq!(found, json!({"a": 1}).as_object().cloned());
    assert_eq!(find_function_call(&objects(&items), "other"), None);
    assert_eq!(find_function_call(&[], "updateWorkingMemory"), None);
  }

  #[test]
  fn function_call_needs_the_keys_present_not_truthy() {
    let items = [json!({"type": "function_call", "callId": null, "name": "f", "arguments": "{}"})];
    assert_eq!(find_function_call(&objects(&items), "f"), Some(Map::new()));
    // Non-string arguments never parse to an object.
    let items = [json!({"type": "function_call", "callId": "c", "name": "f", "arguments": {"a": 1}})];
    assert_eq!(find_function_call(&objects(&items), "f"), None);
  }

  #[test]
  fn an_output_text_literal_is_kept_only_for_a_lone_surrogate() {
    let lone = r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ab \ud835"},{"type":"refusal","refusal":"no"},{"type":"output_text","text":"\n!"}]}"#;
    assert_eq!(output_text_literal(lone).as_deref(), Some(r#""ab \ud835\n!""#));
    let paired = r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"\ud835\udd18 ok"}]}"#;
    assert_eq!(output_text_literal(paired), None, "a pair is a Rust string");
    let plain = r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"plain"}]}"#;
    assert_eq!(output_text_literal(plain), None);
    assert_eq!(output_text_literal(r#"{"type":"message","content":"\ud835"}"#), None, "content not a list");
  }
}
