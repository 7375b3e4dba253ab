//! The Responses API's JSON, both ways. The wire is snake_case (`call_id`, `max_output_tokens`); the log holds
//! items camelCase, as upstream's SDK parses them (`callId`), so keys are converted at this boundary only.

use serde_json::{Map, Value, json};

use super::{ProviderRequest, Round};
use crate::items::{Item, assistant_message, check_known_type};
use crate::tools::wire_name;

/// What upstream's loop sends after a round that produced nothing usable, to nudge the model on.
const CONTINUE_NUDGE: &str = "continue";

/// The request body of one round. `nudge` appends the ephemeral "continue" message (not part of the log).
pub(super) fn request_body(request: &ProviderRequest<'_>, nudge: bool) -> Value {
  let (hoisted, rest): (Vec<&Item>, Vec<&Item>) =
    request.items.iter().map(|item| &**item).partition(|item| item.is_system_message());
  let mut input: Vec<Value> = rest.into_iter().map(input_item).collect();
  if let Some(marks) = request.cache {
    mark_breakpoints(&mut input, request.items, &marks.breakpoints);
  }
  if nudge {
    input.push(json!({ "type": "message", "role": "user", "content": CONTINUE_NUDGE }));
  }

  let mut body = Map::new();
  body.insert("model".into(), json!(request.model));
  body.insert("input".into(), Value::Array(input));
  if let Some(instructions) = instructions(request.instructions, &hoisted) {
    body.insert("instructions".into(), json!(instructions));
  }
  if !request.tools.is_empty() {
    let tools = request.tools.iter().map(|tool| {
      let parameters = match &*tool.input_schema {
        schema @ Value::Object(_) => schema.clone(),
        _ => json!({ "type": "object", "properties": {} }),
      };
      // As upstream's SDK sends a tool: a blank description as null, and `strict` unset (null).
      let description = if tool.description.is_empty() { Value::Null } else { json!(tool.description) };
      json!({ "type": "function", "name": tool.wire_name(), "description": description, "parameters": parameters, "strict": null })
    });
    body.insert("tools".into(), Value::Array(tools.collect()));
  }
  if let Some(schema) = request.output_schema {
    body.insert("text".into(), json!({ "format": { "type": "json_schema", "name": "output", "schema": schema } }));
  }
  let params = request.params;
  for (key, value) in
    [("temperature", params.temperature), ("max_output_tokens", params.max_tokens), ("top_p", params.top_p)]
  {
    if let Some(value) = value {
      body.insert(key.into(), number(value));
    }
  }
  // Streamed, so that deltas arrive as they are made and a stall between events is noticed.
  body.insert("stream".into(), json!(true));
  // The defaults upstream's SDK writes into every request: OpenRouter stores nothing, and picks the service tier.
  body.insert("service_tier".into(), json!("auto"));
  body.insert("store".into(), json!(false));
  if let Some(marks) = request.cache {
    body.insert("session_id".into(), json!(marks.session));
  }
  Value::Object(body)
}

/// Puts a `cache_control` breakpoint on the message that ends each cacheable part: the last message at or before
/// each breakpoint (a tool call or output carries no content to mark; a hoisted system message is not in `input`).
/// Providers that cache on their own ignore it; Anthropic's models cache only where it is.
fn mark_breakpoints(input: &mut [Value], items: &[std::sync::Arc<Item>], breakpoints: &[usize]) {
  // Each item's place in `input`, system messages having been hoisted out.
  let mut at = Vec::with_capacity(items.len());
  let mut next = 0;
  for item in items {
    at.push((!item.is_system_message()).then(|| {
      next += 1;
      next - 1
    }));
  }
  for &breakpoint in breakpoints {
    let marked = (0..=breakpoint.min(items.len().saturating_sub(1)))
      .rev()
      .filter_map(|i| at[i])
      .find(|&i| input[i].get("role").is_some() && input[i].get("content").is_some());
    let Some(message) = marked.and_then(|i| input[i].as_object_mut()) else { continue };
    let kind =
      if message.get("role").and_then(Value::as_str) == Some("assistant") { "output_text" } else { "input_text" };
    let content = message.get_mut("content").expect("found above");
    if let Value::String(text) = content {
      *content = json!([{ "type": kind, "text": std::mem::take(text) }]);
    }
    if let Some(Value::Object(part)) = content.as_array_mut().and_then(|parts| parts.last_mut()) {
      part.insert("cache_control".into(), json!({ "type": "ephemeral" }));
    }
  }
}

/// The step's instructions then the hoisted system messages, blank parts dropped, joined by a blank line.
fn instructions(step: Option<&str>, system: &[&Item]) -> Option<String> {
  let hoisted: Vec<String> = system.iter().map(|item| text_of(item.get("content"))).collect();
  let hoisted = (!hoisted.is_empty()).then(|| hoisted.join("\n\n"));
  let parts: Vec<&str> = [step, hoisted.as_deref()].into_iter().flatten().filter(|part| !part.is_empty()).collect();
  (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The text parts of a message's content joined, or the content itself when it is already a string.
fn text_of(content: Option<&Value>) -> String {
  match content {
    Some(Value::String(text)) => text.clone(),
    Some(Value::Array(parts)) => parts
      .iter()
      .filter(|part| matches!(part_type(part), "input_text" | "output_text"))
      .filter_map(|part| part.get("text").and_then(Value::as_str))
      .collect(),
    _ => String::new(),
  }
}

fn part_type(part: &Value) -> &str {
  part.get("type").and_then(Value::as_str).unwrap_or("")
}

/// One log item as a Responses API input item (upstream's `itemsToInput`). Every round reads the whole view, so
/// the item's fields are read without being kept (a long history must not end up parsed item by item).
fn input_item(item: &Item) -> Value {
  let fields = item.fields();
  let field = |key: &str| fields.get(key).cloned().unwrap_or(Value::Null);
  let text = |key: &str| fields.get(key).and_then(Value::as_str);
  match item.item_type() {
    "message" if fields.get("role").is_some() && fields.get("content").is_some() => {
      // Every message, the model's own included, goes back as an "easy" input message.
      json!({ "role": field("role"), "content": message_content(fields.get("content")) })
    }
    "function_call" => json!({
      "type": "function_call",
      "call_id": field("callId"),
      "id": text("id").map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned),
      // A call made under a tool's own name (`notes/add`, by another model) must match the declared wire name.
      "name": text("name").map_or(Value::Null, |name| Value::String(wire_name(name))),
      "arguments": field("arguments"),
    }),
    // A tool that returned nothing has no `output` in the log; the API wants a string.
    "function_call_output" => {
      json!({ "type": "function_call_output", "call_id": field("callId"), "output": fields.get("output").cloned().unwrap_or_else(|| json!("")) })
    }
    // Reasoning, server tool calls and other items round-trip as they came.
    _ => snake_keys(&Value::Object(fields.into_owned())),
  }
}

/// Plain text unless the message carries an image or a file, which need the structured parts.
fn message_content(content: Option<&Value>) -> Value {
  let Some(Value::Array(parts)) = content else {
    return Value::String(text_of(content));
  };
  if !parts.iter().any(|part| matches!(part_type(part), "input_image" | "input_file")) {
    return Value::String(text_of(content));
  }
  Value::Array(parts.iter().map(input_part).collect())
}

fn input_part(part: &Value) -> Value {
  let field = |key: &str| part.get(key).cloned();
  match part_type(part) {
    "input_text" | "output_text" => json!({ "type": "input_text", "text": field("text").unwrap_or_default() }),
    "input_image" => json!({
      "type": "input_image",
      "image_url": field("imageUrl").unwrap_or_default(),
      "detail": field("detail").unwrap_or_else(|| json!("auto")),
    }),
    "input_file" => {
      let mut file = Map::new();
      file.insert("type".into(), json!("input_file"));
      for (from, to) in
        [("filename", "filename"), ("fileData", "file_data"), ("fileUrl", "file_url"), ("fileId", "file_id")]
      {
        if let Some(value) = field(from) {
          file.insert(to.into(), value);
        }
      }
      Value::Object(file)
    }
    _ => snake_keys(part),
  }
}

/// A success body read: the round (when usable) or why it is not.
pub(super) enum Reply {
  Usable(Round),
  /// Failed, incomplete, or empty: upstream retries these with a nudge before giving up.
  Unusable(Unusable),
}

/// Why a response could not be used: its status (`completed` for one with no output) and upstream's words for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Unusable {
  pub status: String,
  pub message: String,
}

/// Reads a Responses API result (upstream's `providerTerminalError`, `extractOutputItems`, `extractUsage`).
pub(super) fn read_response(body: &Value) -> Result<Reply, super::ProviderError> {
  let Value::Object(body) = body else {
    return Err(super::ProviderError::Malformed("the body is not a JSON object".into()));
  };
  if let Some(problem) = terminal_problem(body) {
    return Ok(Reply::Unusable(problem));
  }
  let mut items = Vec::new();
  for output in body.get("output").and_then(Value::as_array).into_iter().flatten() {
    let item = Item::from_value(camel_keys(output))
      .map_err(|error| super::ProviderError::Malformed(format!("an output item: {error}")))?;
    check_known_type(&item).map_err(super::ProviderError::Item)?;
    items.push(std::sync::Arc::new(item));
  }
  let has_message = items.iter().any(|item| item.role() == Some("assistant"));
  if let Some(text) = body.get("output_text").and_then(Value::as_str)
    && !text.is_empty()
    && !has_message
  {
    items.insert(0, std::sync::Arc::new(assistant_message(uuid::Uuid::new_v4().to_string(), text)));
  }
  if items.is_empty() {
    let message = "LLM response completed with no output items".into();
    return Ok(Reply::Unusable(Unusable { status: "completed".into(), message }));
  }
  let usage = body.get("usage");
  let reported = |path: &str| usage.and_then(|usage| usage.pointer(path)).and_then(Value::as_f64);
  let count = |path: &str| reported(path).unwrap_or(0.0);
  Ok(Reply::Usable(Round {
    items,
    input_tokens: count("/input_tokens"),
    output_tokens: count("/output_tokens"),
    cached_tokens: count("/input_tokens_details/cached_tokens"),
    cost: count("/cost"),
    cache_read: reported("/input_tokens_details/cached_tokens"),
    cache_write: reported("/input_tokens_details/cache_write_tokens"),
  }))
}

/// A status other than `completed`, described as upstream does; no status at all counts as completed.
fn terminal_problem(body: &Map<String, Value>) -> Option<Unusable> {
  let status = match body.get("status") {
    None | Some(Value::Null) => return None,
    Some(Value::String(status)) => status.clone(),
    Some(other) => other.to_string(),
  };
  let detail = |object: &str, key: &str| {
    body
      .get(object)
      .and_then(|o| o.get(key))
      .and_then(Value::as_str)
      .map(|text| format!(": {text}"))
      .unwrap_or_default()
  };
  let message = match status.as_str() {
    "completed" => return None,
    "incomplete" => format!("LLM response incomplete{}", detail("incomplete_details", "reason")),
    "failed" => format!("LLM response failed{}", detail("error", "message")),
    other => format!("LLM response ended with status '{other}'"),
  };
  Some(Unusable { status, message })
}

/// Whole numbers go out as integers (`max_output_tokens: 500`, not `500.0`); strict servers reject the latter.
fn number(value: f64) -> Value {
  const EXACT: f64 = 9_007_199_254_740_992.0;
  if value.fract() == 0.0 && value.abs() < EXACT { json!(value as i64) } else { json!(value) }
}

/// Every object key in `value`, recursively, from camelCase to snake_case.
pub(super) fn snake_keys(value: &Value) -> Value {
  map_keys(value, &|key| {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
      if c.is_ascii_uppercase() {
        out.push('_');
        out.push(c.to_ascii_lowercase());
      } else {
        out.push(c);
      }
    }
    out
  })
}

/// Every object key in `value`, recursively, from snake_case to camelCase. A leading underscore stays.
pub(crate) fn camel_keys(value: &Value) -> Value {
  map_keys(value, &|key| {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for (i, c) in key.chars().enumerate() {
      if c == '_' && i > 0 {
        upper = true;
      } else if upper {
        out.push(c.to_ascii_uppercase());
        upper = false;
      } else {
        out.push(c);
      }
    }
    out
  })
}

fn map_keys(value: &Value, rename: &dyn Fn(&str) -> String) -> Value {
  match value {
    Value::Object(map) => {
      Value::Object(map.iter().map(|(key, value)| (rename(key), map_keys(value, rename))).collect())
    }
    Value::Array(values) => Value::Array(values.iter().map(|value| map_keys(value, rename)).collect()),
    other => other.clone(),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_breakpoint_marks_the_last_message_at_or_before_it() {
    use crate::items::{function_call, input_message};
    let items: Vec<std::sync::Arc<Item>> = vec![
      std::sync::Arc::new(input_message("s", "system", "hoisted")),
      std::sync::Arc::new(input_message("a", "developer", "anchor")),
      std::sync::Arc::new(assistant_message("b", "said")),
      std::sync::Arc::new(function_call("c", "call-1", "tool", "{}")),
      std::sync::Arc::new(input_message("d", "user", "live")),
    ];
    let mut input: Vec<Value> = items.iter().filter(|i| !i.is_system_message()).map(|i| input_item(i)).collect();
    // After the system message (nothing of it in the input), and after the tool call (its message is before it).
    mark_breakpoints(&mut input, &items, &[0, 1, 3]);
    assert_eq!(
      input[0]["content"],
      json!([{ "type": "input_text", "text": "anchor", "cache_control": { "type": "ephemeral" } }])
    );
    assert_eq!(
      input[1]["content"],
      json!([{ "type": "output_text", "text": "said", "cache_control": { "type": "ephemeral" } }])
    );
    assert_eq!(input[3]["content"], json!("live"), "no mark after the last breakpoint");
  }

  #[test]
  fn keys_convert_both_ways_and_values_are_left_alone() {
    let wire =
      json!({ "call_id": "c1", "summary": [{ "type": "summary_text", "text": "a_b" }], "encrypted_content": "x" });
    let log = camel_keys(&wire);
    assert_eq!(
      log,
      json!({ "callId": "c1", "summary": [{ "type": "summary_text", "text": "a_b" }], "encryptedContent": "x" })
    );
    assert_eq!(snake_keys(&log), wire);
  }

  #[test]
  fn a_structured_output_is_asked_for_as_the_responses_text_format() {
    let params = crate::steps::ModelParams::default();
    let schema = json!({ "type": "object", "properties": { "city": { "type": "string" } } });
    let request = |output_schema| ProviderRequest {
      model: "m",
      instructions: None,
      items: &[],
      tools: &[],
      params: &params,
      output_schema,
      deltas: None,
      nudge: false,
      cache: None,
    };
    let body = request_body(&request(Some(&schema)), false);
    assert_eq!(body["text"], json!({ "format": { "type": "json_schema", "name": "output", "schema": schema } }));
    assert!(request_body(&request(None), false).get("text").is_none());
  }

  #[test]
  fn tools_and_defaults_are_sent_as_upstreams_sdk_sends_them() {
    let params = crate::steps::ModelParams::default();
    let schema = json!({ "type": "object", "properties": {} });
    let tool = |description: &str| crate::tools::ToolDef {
      name: "notes/add".into(),
      description: description.into(),
      input_schema: std::sync::Arc::new(schema.clone()),
      imp: crate::tools::ToolImpl::Host(1),
    };
    let tools = [tool(""), tool("adds a note")];
    let request = ProviderRequest {
      model: "m",
      instructions: None,
      items: &[],
      tools: &tools,
      params: &params,
      output_schema: None,
      deltas: None,
      nudge: false,
      cache: None,
    };
    let body = request_body(&request, false);
    let sent = |description: Value| json!({ "type": "function", "name": "notes_add", "description": description, "parameters": schema, "strict": null });
    assert_eq!(body["tools"], json!([sent(Value::Null), sent(json!("adds a note"))]));
    assert_eq!((&body["service_tier"], &body["store"], &body["stream"]), (&json!("auto"), &json!(false), &json!(true)));
  }

  #[test]
  fn whole_numbers_are_sent_as_integers() {
    assert_eq!(number(500.0), json!(500));
    assert_eq!(number(0.7), json!(0.7));
  }

  #[test]
  fn blank_instructions_are_dropped_and_the_rest_joined() {
    let system = Item::from_value(
      json!({ "type": "message", "role": "system", "content": [{ "type": "input_text", "text": "Be brief." }] }),
    )
    .unwrap();
    assert_eq!(instructions(Some("Step."), &[&system]).as_deref(), Some("Step.\n\nBe brief."));
    assert_eq!(instructions(Some(""), &[&system]).as_deref(), Some("Be brief."));
    assert_eq!(instructions(None, &[]), None);
  }

  #[test]
  fn a_message_with_an_image_keeps_structured_parts() {
    let content = json!([{ "type": "input_text", "text": "look" }, { "type": "input_image", "imageUrl": "data:x" }]);
    assert_eq!(
      message_content(Some(&content)),
      json!([{ "type": "input_text", "text": "look" }, { "type": "input_image", "image_url": "data:x", "detail": "auto" }])
    );
  }
}
