//! `JSON.stringify(value, null, 2)` exactly as JS prints it, for the text a layer renders into the prompt.
//!
//! Three things differ from serde_json's pretty printer: numbers use JS `Number#toString` (`1e+21`, `1.5e-7`,
//! no `.0`), object keys follow JS property order (array-index keys first, ascending, then the rest in insertion
//! order), and only the characters JS escapes are escaped.

use serde_json::{Map, Value};

/// `JSON.stringify(value, null, 2)`.
pub fn stringify_pretty(value: &Value) -> String {
  let mut out = String::new();
  write_value(&mut out, value, 0);
  out
}

/// Whether JS treats `key` as an array index, which it enumerates before every other key (ascending).
pub fn is_array_index(key: &str) -> bool {
  let canonical = key == "0" || (!key.starts_with('0') && !key.is_empty() && key.len() <= 10);
  // 2^32 - 1 is the largest length, so the largest index is one below it.
  canonical && key.bytes().all(|b| b.is_ascii_digit()) && key.parse::<u64>().is_ok_and(|n| n < u32::MAX as u64)
}

/// Sort key for JS property order: array indices first by value, then everything else (equal, so a stable sort
/// keeps insertion order).
fn js_key_rank(key: &str) -> (bool, u64) {
  match key.parse::<u64>() {
    Ok(index) if is_array_index(key) => (false, index),
    _ => (true, 0),
  }
}

/// The entries of `map` in the order JS would enumerate the same object.
pub fn js_ordered_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
  let mut entries: Vec<_> = map.iter().collect();
  if entries.iter().any(|(key, _)| is_array_index(key)) {
    entries.sort_by_key(|(key, _)| js_key_rank(key));
  }
  entries
}

/// Reorders `map` in place into JS property order; a no-op (and no allocation) without array-index keys.
pub fn reorder_like_js(map: &mut Map<String, Value>) {
  if !map.keys().any(|key| is_array_index(key)) {
    return;
  }
  let (mut indices, others): (Vec<_>, Vec<_>) =
    std::mem::take(map).into_iter().partition(|(key, _)| is_array_index(key));
  indices.sort_by_key(|(key, _)| js_key_rank(key));
  map.extend(indices);
  map.extend(others);
}

/// A double as a JSON value JS would write the same: whole numbers within 2^53 as integers (`3`, not `3.0`).
pub fn number_value(n: f64) -> Value {
  const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
  if n.fract() == 0.0 && n.abs() <= MAX_SAFE { Value::from(n as i64) } else { Value::from(n) }
}

/// JS `Number#toString()` for a double.
pub fn number_to_string(x: f64) -> String {
  crate::items::js_number_string(x)
}

/// A JSON string literal with JS's escaping.
pub fn write_string(out: &mut String, text: &str) {
  crate::items::write_js_string(out, text);
}

fn indent(out: &mut String, depth: usize) {
  for _ in 0..depth {
    out.push_str("  ");
  }
}

fn write_value(out: &mut String, value: &Value, depth: usize) {
  match value {
    Value::Null => out.push_str("null"),
    Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
    Value::Number(n) => match n.as_f64() {
      // Integers beyond 2^53 go through f64 too, which is what JS would hold.
      Some(x) if x.is_finite() => out.push_str(&number_to_string(x)),
      _ => out.push_str("null"),
    },
    Value::String(s) => write_string(out, s),
    Value::Array(items) if items.is_empty() => out.push_str("[]"),
    Value::Array(items) => {
      out.push('[');
      for (i, item) in items.iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { ",\n" });
        indent(out, depth + 1);
        write_value(out, item, depth + 1);
      }
      out.push('\n');
      indent(out, depth);
      out.push(']');
    }
    Value::Object(map) if map.is_empty() => out.push_str("{}"),
    Value::Object(map) => {
      out.push('{');
      for (i, (key, item)) in js_ordered_entries(map).into_iter().enumerate() {
        out.push_str(if i == 0 { "\n" } else { ",\n" });
        indent(out, depth + 1);
        write_string(out, key);
        out.push_str(": ");
        write_value(out, item, depth + 1);
      }
      out.push('\n');
      indent(out, depth);
      out.push('}');
    }
  }
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  #[test]
  fn numbers_print_like_js() {
    let cases = [
      (0.0, "0"),
      (-0.0, "0"),
      (1.0, "1"),
      (-42.0, "-42"),
      (0.1, "0.1"),
      (0.1 + 0.2, "0.30000000000000004"),
      (123.456, "123.456"),
      (1e20, "100000000000000000000"),
      (1e21, "1e+21"),
      (1.5e21, "1.5e+21"),
      (0.000001, "0.000001"),
      (0.0000015, "0.0000015"),
      (1e-7, "1e-7"),
      (1.5e-7, "1.5e-7"),
      (5e-324, "5e-324"),
      (f64::MAX, "1.7976931348623157e+308"),
      (9007199254740993.0, "9007199254740992"),
      (f64::NAN, "NaN"),
      (f64::NEG_INFINITY, "-Infinity"),
    ];
    for (x, expected) in cases {
      assert_eq!(number_to_string(x), expected, "{x:e}");
    }
  }

  #[test]
  fn pretty_layout_matches_js() {
    let value = json!({
      "a": 1,
      "b": [1, "x", {"c": null}],
      "d": {},
      "e": [],
      "f": {"g": true, "h": 2.5}
    });
    let expected = "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    \"x\",\n    {\n      \"c\": null\n    }\n  ],\n  \"d\": {},\n  \
                    \"e\": [],\n  \"f\": {\n    \"g\": true,\n    \"h\": 2.5\n  }\n}";
    assert_eq!(stringify_pretty(&value), expected);
    assert_eq!(stringify_pretty(&json!([])), "[]");
    assert_eq!(stringify_pretty(&json!("s")), "\"s\"");
    assert_eq!(stringify_pretty(&json!(12345678901234567890u64)), "12345678901234567000");
  }

  #[test]
  fn strings_escape_only_what_js_escapes() {
    let value = json!("q\" b\\ \u{8}\u{c}\n\r\t \u{1} \u{1f} \u{7f} é 😀 \u{2028}");
    assert_eq!(stringify_pretty(&value), "\"q\\\" b\\\\ \\b\\f\\n\\r\\t \\u0001 \\u001f \u{7f} é 😀 \u{2028}\"");
  }

  #[test]
  fn array_index_keys_come_first_in_ascending_order() {
    let value = json!({"b": 1, "10": 2, "a": 3, "2": 4, "01": 5, "-1": 6, "4294967295": 7, "4294967294": 8});
    assert_eq!(
      stringify_pretty(&value),
      "{\n  \"2\": 4,\n  \"10\": 2,\n  \"4294967294\": 8,\n  \"b\": 1,\n  \"a\": 3,\n  \"01\": 5,\n  \"-1\": 6,\n  \
       \"4294967295\": 7\n}"
    );
    let mut map = value.as_object().cloned().unwrap_or_default();
    reorder_like_js(&mut map);
    let keys: Vec<_> = map.keys().map(String::as_str).collect();
    assert_eq!(keys, ["2", "10", "4294967294", "b", "a", "01", "-1", "4294967295"]);
  }
}
