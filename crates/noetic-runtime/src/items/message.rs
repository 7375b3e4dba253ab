//! Item constructors with upstream's exact shapes and key orders. Key order never changes an item's cost, but it
//! decides the JSON text, and fixtures and snapshots compare that byte for byte.

use serde_json::{Map, Value, json};

use super::item::Item;
use crate::error::ConfigError;

/// `createMessage(text, role)`: a new `user` or `developer` input message with a random UUID v4 id.
/// Keys: id, status, type, role, content.
pub fn create_message(text: impl Into<String>, role: &str) -> Result<Item, ConfigError> {
  create_message_with_id(uuid::Uuid::new_v4().to_string(), text, role)
}

/// [`create_message`] with a given id.
pub fn create_message_with_id(id: impl Into<String>, text: impl Into<String>, role: &str) -> Result<Item, ConfigError> {
  if role != "user" && role != "developer" {
    return Err(ConfigError::new(
      "INVALID_MESSAGE_ROLE",
      format!("createMessage accepts the roles 'user' and 'developer', not '{role}'."),
      "Use role 'user' or 'developer'; system instructions go in the step's instructions.",
    ));
  }
  Ok(build([
    ("id", Value::String(id.into())),
    ("status", json!("completed")),
    ("type", json!("message")),
    ("role", json!(role)),
    ("content", text_content("input_text", text.into())),
  ]))
}

/// [`create_message`] of a text given as its JSON string literal (one that holds a lone surrogate escape, which a
/// Rust string cannot): the item keeps the literal, so its text and cost are those JS's `createMessage` gives.
/// `None` if `literal` is not a JSON string.
pub fn create_message_from_literal(literal: &str, role: &str) -> Option<Item> {
  // One JSON string and nothing else (lone surrogate escapes admitted).
  if (role != "user" && role != "developer") || crate::js_text::from_js_json::<String>(literal).is_err() {
    return None;
  }
  let id = uuid::Uuid::new_v4();
  let text = format!(
    r#"{{"id":"{id}","status":"completed","type":"message","role":"{role}","content":[{{"type":"input_text","text":{literal}}}]}}"#
  );
  Item::from_json_text(&text).ok()
}

/// An input message in the order the rest of upstream builds them (the session's user turn, injected and nudge
/// messages, the spec's fixtures): id, type, role, status, content. The role is not checked.
pub fn input_message(id: impl Into<String>, role: &str, text: impl Into<String>) -> Item {
  build([
    ("id", Value::String(id.into())),
    ("type", json!("message")),
    ("role", json!(role)),
    ("status", json!("completed")),
    ("content", text_content("input_text", text.into())),
  ])
}

/// A completed assistant message with one `output_text` part: id, type, role, status,
/// content `[{type: "output_text", text}]`.
///
/// This is the message upstream itself builds for a model response (the fallback in `extractOutputItems`) and
/// the shape of the spec's fixtures. Messages parsed from a provider response keep that response's own fields
/// (`annotations`, `logprobs`, `phase`, ...) instead; they are not made here.
pub fn assistant_message(id: impl Into<String>, text: impl Into<String>) -> Item {
  build([
    ("id", Value::String(id.into())),
    ("type", json!("message")),
    ("role", json!("assistant")),
    ("status", json!("completed")),
    ("content", text_content("output_text", text.into())),
  ])
}

/// A completed function call, keys in the order the OpenRouter SDK's parsed `function_call` output item has them
/// (upstream's log holds that object): arguments, callId, id, name, status, type.
pub fn function_call(
  id: impl Into<String>,
  call_id: impl Into<String>,
  name: impl Into<String>,
  arguments: impl Into<String>,
) -> Item {
  build([
    ("arguments", Value::String(arguments.into())),
    ("callId", Value::String(call_id.into())),
    ("id", Value::String(id.into())),
    ("name", Value::String(name.into())),
    ("status", json!("completed")),
    ("type", json!("function_call")),
  ])
}

/// A completed tool result, as upstream's tool loop makes it: id, status, type, callId, output. A tool that
/// returned `undefined` has no output, and upstream's item then has no `output` field in its JSON either.
pub fn function_call_output(id: impl Into<String>, call_id: impl Into<String>, output: Option<String>) -> Item {
  let mut map: Map<String, Value> = [
    ("id", Value::String(id.into())),
    ("status", json!("completed")),
    ("type", json!("function_call_output")),
    ("callId", Value::String(call_id.into())),
  ]
  .into_iter()
  .map(|(k, v)| (k.to_owned(), v))
  .collect();
  if let Some(output) = output {
    map.insert("output".to_owned(), Value::String(output));
  }
  Item::from_checked_map(map)
}

fn text_content(part_type: &str, text: String) -> Value {
  json!([{ "type": part_type, "text": text }])
}

fn build<const N: usize>(fields: [(&str, Value); N]) -> Item {
  let map: Map<String, Value> = fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
  // Every constructor above sets a non-empty string `type`.
  Item::from_checked_map(map)
}

#[cfg(test)]
mod tests {
  use std::sync::Arc;

  use super::*;
  use crate::items::{ItemLog, Pairing};
  use crate::tokens::{estimate_tokens, tokens_for_units, utf16_len};

  // The §23 fixtures, built as JSON text in exactly the documented key order.
  fn message_text(id: &str, role: &str, text: &str) -> String {
    let part = if role == "assistant" { "output_text" } else { "input_text" };
    format!(
      r#"{{"id":"{id}","type":"message","role":"{role}","status":"completed","content":[{{"type":"{part}","text":"{text}"}}]}}"#
    )
  }

  fn call_text(id: &str, call_id: &str) -> String {
    format!(r#"{{"id":"{id}","type":"function_call","callId":"{call_id}","name":"t","arguments":"{{}}"}}"#)
  }

  fn output_text(id: &str, call_id: &str) -> String {
    format!(r#"{{"id":"{id}","type":"function_call_output","status":"completed","callId":"{call_id}","output":"ok"}}"#)
  }

  fn fixture_map(text: &str) -> Map<String, Value> {
    match serde_json::from_str(text) {
      Ok(Value::Object(map)) => map,
      _ => Map::new(),
    }
  }

  #[test]
  fn spec_23_1_item_costs() {
    let long = "A".repeat(200);
    let short = "B".repeat(20);
    let fixtures = [
      (message_text("s", "system", "sys"), 28),
      (message_text("l1", "developer", &long), 78),
      (message_text("l2", "developer", &short), 33),
      (message_text("h1", "user", "hello"), 28),
      (message_text("h2", "assistant", "hi"), 29),
      (call_text("h3", "c1"), 19),
      (output_text("h4", "c1"), 23),
      (message_text("h5", "user", "more"), 28),
    ];
    for (text, cost) in &fixtures {
      let from_text = Item::from_json_text(text).expect("fixture parses");
      assert_eq!(from_text.cost(), *cost, "from_json_text {text}");
      let from_map = Item::from_map(fixture_map(text)).expect("fixture map");
      assert_eq!(from_map.cost(), *cost, "from_map {text}");
      assert_eq!(from_map.to_json_text(), *text);
    }
    // The constructors for the same shapes.
    assert_eq!(input_message("s", "system", "sys").to_json_text(), fixtures[0].0);
    assert_eq!(input_message("l1", "developer", long).cost(), 78);
    assert_eq!(input_message("h1", "user", "hello").cost(), 28);
    assert_eq!(assistant_message("h2", "hi").to_json_text(), fixtures[4].0);
    assert_eq!(assistant_message("h2", "hi").cost(), 29);
    // The log's running totals agree.
    let mut log = ItemLog::new();
    for (text, _) in &fixtures {
      log.push(Arc::new(Item::from_json_text(text).expect("fixture")));
    }
    assert_eq!(log.total_cost(), 28 + 78 + 33 + 28 + 29 + 19 + 23 + 28);
    assert_eq!(log.range_cost(3..), 28 + 29 + 19 + 23 + 28);
    assert_eq!(log.system_positions(), &[0]);
  }

  #[test]
  fn spec_23_2_estimates() {
    assert_eq!(estimate_tokens("😀"), 1);
    assert_eq!(estimate_tokens("abcde"), 2);
    assert_eq!(estimate_tokens(""), 0);
  }

  #[test]
  fn create_message_shape_and_roles() {
    let m = create_message_with_id("m1", "hi", "user").expect("user");
    assert_eq!(
      m.to_json_text(),
      r#"{"id":"m1","status":"completed","type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#
    );
    let dev = create_message("note", "developer").expect("developer");
    let id = dev.id().expect("id");
    assert_eq!(uuid::Uuid::parse_str(id).map(|u| u.get_version_num()), Ok(4));
    assert_eq!(id, id.to_lowercase());
    let keys: Vec<&str> = dev.json().keys().map(String::as_str).collect();
    assert_eq!(keys, ["id", "status", "type", "role", "content"]);
    // A 36-character id: the cost is fixed by the text alone.
    let expected = r#"{"id":"","status":"completed","type":"message","role":"developer","content":[{"type":"input_text","text":"note"}]}"#;
    assert_eq!(dev.cost(), tokens_for_units(utf16_len(expected) + 36));
    assert_ne!(create_message("x", "user").ok().and_then(|m| m.id().map(str::to_owned)), Some(id.to_owned()));
    for bad in ["system", "assistant", ""] {
      let err = create_message("x", bad).expect_err("rejected role");
      assert_eq!(err.code, "INVALID_MESSAGE_ROLE");
    }
  }

  #[test]
  fn tool_item_shapes() {
    let c = function_call("fc_1", "call_1", "search", r#"{"q":"x"}"#);
    assert_eq!(
      c.to_json_text(),
      r#"{"arguments":"{\"q\":\"x\"}","callId":"call_1","id":"fc_1","name":"search","status":"completed","type":"function_call"}"#
    );
    assert_eq!(c.link(), Pairing::Call("call_1"));
    assert_eq!(c.cost(), tokens_for_units(utf16_len(&c.to_json_text())));
    let o = function_call_output("out_1", "call_1", Some("done".into()));
    let silent = function_call_output("out_2", "call_2", None);
    assert_eq!(
      silent.to_json_text(),
      r#"{"id":"out_2","status":"completed","type":"function_call_output","callId":"call_2"}"#
    );
    assert_eq!(
      o.to_json_text(),
      r#"{"id":"out_1","status":"completed","type":"function_call_output","callId":"call_1","output":"done"}"#
    );
    assert_eq!(o.link(), Pairing::Output("call_1"));
    assert_eq!(o.cost(), tokens_for_units(utf16_len(&o.to_json_text())));
  }

  #[test]
  fn a_message_from_a_literal_is_the_one_create_message_makes() {
    let plain = create_message_from_literal(r#""hello \"you\"""#, "user").expect("message");
    let id = plain.fields().get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let made = create_message_with_id(id, "hello \"you\"", "user").expect("message");
    assert_eq!(plain.json_text(), made.json_text());
    // A lone surrogate stays as JS's JSON spells it, and is costed so (6 units, not U+FFFD's 1).
    let lone = create_message_from_literal(r#""cut \ud835""#, "user").expect("message");
    assert!(lone.json_text().ends_with(r#""text":"cut \ud835"}]}"#));
    assert_eq!(lone.cost(), tokens_for_units(lone.json_text().len()));
    assert!(create_message_from_literal(r#""a","x":"b""#, "user").is_none(), "not one string");
    assert!(create_message_from_literal(r#""a""#, "assistant").is_none());
  }
}
