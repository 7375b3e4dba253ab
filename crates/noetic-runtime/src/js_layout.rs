//! The layout of an object JS builds out of its own values: which keys, in which order, and where each value comes
//! from. A subprocess handle's metadata, a manifest or a serialized error hold JS values that never cross (a
//! request's own metadata, a step's input, a thrown error's stack), but their shape is the runtime's all the same:
//! the runtime answers a layout, and JS's one builder (`shaped` in `js/subprocess.cjs`) follows it over the value it
//! builds from, its *source*.

use serde::Serialize;
use serde_json::Value;

/// One key of a layout. Keys are set in the order of the layout, so that `Object.keys` and `JSON.stringify` list them
/// so; a key set twice keeps its first place, as in an object literal.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Entry {
  /// `...source[from]`: a field's own enumerable keys and values, as a spread copies them (nothing for `null` or
  /// `undefined`).
  Spread { from: &'static str },
  /// `key: value`.
  Value { key: &'static str, value: Value },
  /// `key: source[from]`.
  Copy { key: &'static str, from: &'static str },
  /// `key: source[from] ?? value`, a copy of `value` for each object built (objects built never share an array).
  CopyOr { key: &'static str, from: &'static str, value: Value },
  /// `key: source[from]` when `from in source`, else no key.
  CopyIfIn { key: &'static str, from: &'static str },
  /// `key: source[from]` when it is a string, else no key.
  CopyIfString { key: &'static str, from: &'static str },
  /// `key: String(source)`.
  Text { key: &'static str },
}

pub type Layout = Vec<Entry>;

/// `key: value`.
pub fn value(key: &'static str, value: impl Into<Value>) -> Entry {
  Entry::Value { key, value: value.into() }
}

/// `key: source[key]`.
pub fn copy(key: &'static str) -> Entry {
  Entry::Copy { key, from: key }
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  #[test]
  fn entries_cross_as_js_reads_them() {
    let layout = vec![
      Entry::Spread { from: "metadata" },
      value("runtime", "in-memory"),
      copy("stepId"),
      Entry::CopyOr { key: "args", from: "args", value: json!([]) },
      Entry::CopyIfIn { key: "noeticError", from: "noeticError" },
      Entry::CopyIfString { key: "code", from: "code" },
      Entry::Text { key: "message" },
    ];
    assert_eq!(
      serde_json::to_value(&layout).unwrap(),
      json!([
        { "op": "spread", "from": "metadata" },
        { "op": "value", "key": "runtime", "value": "in-memory" },
        { "op": "copy", "key": "stepId", "from": "stepId" },
        { "op": "copyOr", "key": "args", "from": "args", "value": [] },
        { "op": "copyIfIn", "key": "noeticError", "from": "noeticError" },
        { "op": "copyIfString", "key": "code", "from": "code" },
        { "op": "text", "key": "message" },
      ])
    );
  }
}
