//! Upstream's message for each kind of `NoeticError`, written once as templates: the runtime fills them from the
//! payloads it builds, and JS (`js/errors.cjs`) fills the same templates from a payload user code hands to
//! `new NoeticErrorImpl(...)`. A template is data rather than a function because a JS payload holds JS values (an
//! Error as `cause`, arrays of step values, a zod schema) that JSON cannot carry or that would cost a crossing per
//! error: JS reads each field a template names and interpolates it as a template literal would, so what user code
//! sees is what upstream's formatter gives, getters and `toString`s included. The templates cross once, at load.

use std::borrow::Cow;

use serde_json::{Value, json};

/// One piece of a message: text as it is, a field of the payload interpolated, or a choice on a field's truth.
enum Part {
  Text(&'static str),
  /// `${payload?.a?.b}`.
  Field(&'static [&'static str]),
  /// `payload?.a ? then : otherwise`.
  If(&'static [&'static str], &'static [Part], &'static [Part]),
}

use Part::{Field, If, Text};

/// Upstream's messages, by kind (its `formatMessage`). Fields a payload lacks read as `undefined`, as JS's
/// optional chaining gives them (upstream throws on a `step_failed` without `cause`; ours says `undefined`).
const KINDS: &[(&str, &[Part])] = &[
  ("step_failed", &[Text("Step '"), Field(&["stepId"]), Text("' failed: "), Field(&["cause", "message"])]),
  ("llm_refused", &[Text("LLM refused at step '"), Field(&["stepId"]), Text("': "), Field(&["refusal"])]),
  ("llm_parse_error", &[Text("LLM parse error at step '"), Field(&["stepId"]), Text("': failed to parse output")]),
  (
    "llm_rate_limit",
    &[
      Text("LLM rate limited at step '"),
      Field(&["stepId"]),
      Text("'"),
      If(&["retryAfter"], &[Text(" (retry after "), Field(&["retryAfter"]), Text("ms)")], &[]),
    ],
  ),
  (
    "fork_partial",
    &[
      Text("Fork '"),
      Field(&["stepId"]),
      Text("' partial failure: "),
      Field(&["succeeded", "length"]),
      Text(" succeeded, "),
      Field(&["failed", "length"]),
      Text(" failed"),
    ],
  ),
  (
    "channel_timeout",
    &[Text("Channel '"), Field(&["channelName"]), Text("' timed out after "), Field(&["timeout"]), Text("ms")],
  ),
  ("channel_closed", &[Text("Channel '"), Field(&["channelName"]), Text("' is closed")]),
  ("cancelled", &[If(&["reason"], &[Text("Cancelled: "), Field(&["reason"])], &[Text("Cancelled")])]),
  (
    "budget_exceeded",
    &[
      Text("Budget exceeded: "),
      Field(&["field"]),
      Text(" limit "),
      Field(&["limit"]),
      Text(", actual "),
      Field(&["actual"]),
    ],
  ),
  (
    "steering_denied",
    &[If(&["guidance"], &[Text("Steering denied: "), Field(&["guidance"])], &[Text("Steering denied")])],
  ),
  (
    "item_schema_mismatch",
    &[If(
      &["itemType"],
      &[Text("Item type '"), Field(&["itemType"]), Text("' did not match any registered item extension schema.")],
      &[Text("Item did not match any registered "), Field(&["category"]), Text(" extension schema.")],
    )],
  ),
  (
    "handle_evicted",
    &[
      Text("Subprocess handle '"),
      Field(&["handleId"]),
      Text("' evicted (step '"),
      Field(&["stepId"]),
      Text("'): adapter returned null for "),
      Field(&["gracePeriodMs"]),
      Text("ms"),
    ],
  ),
];

/// The message of a kind upstream does not know.
const UNKNOWN: &[Part] = &[Text("NoeticError: unknown kind")];

fn template(kind: Option<&str>) -> &'static [Part] {
  KINDS.iter().find(|(name, _)| Some(*name) == kind).map_or(UNKNOWN, |(_, parts)| parts)
}

/// The message of a payload the runtime built (its `kind` among its fields).
pub fn describe(payload: &Value) -> String {
  let mut out = String::new();
  fill(template(payload.get("kind").and_then(Value::as_str)), payload, &mut out);
  out
}

fn fill(parts: &[Part], payload: &Value, out: &mut String) {
  for part in parts {
    match part {
      Text(text) => out.push_str(text),
      Field(path) => out.push_str(&crate::js_value::string_of(read(payload, path).as_deref())),
      If(path, then, otherwise) => {
        fill(if crate::js_value::truthy(read(payload, path).as_deref()) { then } else { otherwise }, payload, out)
      }
    }
  }
}

/// `value?.a?.b` over JSON: an array's or a string's `length` included (a string's in UTF-16 units, as JS counts).
fn read<'a>(value: &'a Value, path: &[&str]) -> Option<Cow<'a, Value>> {
  let mut at = Cow::Borrowed(value);
  for key in path {
    // Only a length is made here, and a number has no fields.
    let Cow::Borrowed(value) = at else { return None };
    at = match (value, *key) {
      (Value::Object(fields), key) => Cow::Borrowed(fields.get(key)?),
      (Value::Array(items), "length") => Cow::Owned(json!(items.len())),
      (Value::Array(items), index) => Cow::Borrowed(items.get(index.parse::<usize>().ok()?)?),
      (Value::String(text), "length") => Cow::Owned(json!(text.encode_utf16().count())),
      _ => return None,
    };
  }
  Some(at)
}

/// The templates as JS fills them: `{kinds: {kind: parts}, unknown: parts}`, where a part is a string, `{path}` or
/// `{path, then, else}`.
pub fn templates_json() -> Value {
  fn parts(template: &[Part]) -> Value {
    template
      .iter()
      .map(|part| match part {
        Text(text) => json!(text),
        Field(path) => json!({ "path": path }),
        If(path, then, otherwise) => json!({ "path": path, "then": parts(then), "else": parts(otherwise) }),
      })
      .collect()
  }
  let kinds: serde_json::Map<String, Value> = KINDS.iter().map(|(kind, p)| ((*kind).to_owned(), parts(p))).collect();
  json!({ "kinds": kinds, "unknown": parts(UNKNOWN) })
}

#[cfg(test)]
mod tests;
