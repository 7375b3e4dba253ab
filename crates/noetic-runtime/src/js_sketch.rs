//! A user's JS value as the runtime's checks read it.
//!
//! JSON cannot say that a value is a function, `undefined`, `NaN` or an instance of a class, and a check must name
//! what it was given in the words JS uses. So JS sends a sketch (`js/sketch.cjs`): strings, booleans, `null`,
//! finite numbers, arrays and plain objects as they are; anything else as a tagged object
//! `{"$sketch": <how JS describes it>, "type": <its typeof>, "methods"?: [...], "fields"?: {...}}`, where `methods`
//! names those of the methods the checks ask about that it has, and `fields` holds an instance's own enumerable
//! fields. JS only describes; every check reads the sketch here.

use serde_json::Value;

use crate::js_number;

/// The key of a tagged value. Plain user objects keep their own keys, so only a sketch ever has this one.
const TAG: &str = "$sketch";

/// A sketched value, or `undefined` (a field that is absent).
#[derive(Clone, Copy)]
pub struct Sketch<'a>(Option<&'a Value>);

impl<'a> Sketch<'a> {
  pub fn of(value: &'a Value) -> Self {
    Self(Some(value))
  }

  /// A field that is absent.
  pub fn undefined() -> Self {
    Self(None)
  }

  fn tag(&self) -> Option<&'a str> {
    self.0?.get(TAG)?.as_str()
  }

  fn is_tagged(&self) -> bool {
    self.tag().is_some()
  }

  /// An object's field; `undefined` for anything else, as JS reads a missing property.
  pub fn field(&self, key: &str) -> Sketch<'a> {
    let fields = if self.is_tagged() { self.0.and_then(|v| v.get("fields")) } else { self.0 };
    match fields {
      Some(Value::Object(map)) => Sketch(map.get(key)),
      _ => Sketch(None),
    }
  }

  /// An object's own fields in their order (a sketched instance's too); none for anything else.
  pub fn entries(&self) -> Vec<(&'a str, Sketch<'a>)> {
    let fields = if self.is_tagged() { self.0.and_then(|v| v.get("fields")) } else { self.0 };
    match fields {
      Some(Value::Object(map)) => map.iter().map(|(key, value)| (key.as_str(), Sketch::of(value))).collect(),
      _ => Vec::new(),
    }
  }

  /// What JS's `typeof` answers.
  pub fn type_of(&self) -> &'a str {
    if let Some(kind) = self.0.filter(|_| self.is_tagged()).and_then(|v| v.get("type")).and_then(Value::as_str) {
      return kind;
    }
    match self.0 {
      None => "undefined",
      Some(Value::Bool(_)) => "boolean",
      Some(Value::Number(_)) => "number",
      Some(Value::String(_)) => "string",
      Some(Value::Null | Value::Array(_) | Value::Object(_)) => "object",
    }
  }

  /// `undefined` (absent or sketched so).
  pub fn is_undefined(&self) -> bool {
    self.type_of() == "undefined"
  }

  /// `null` or `undefined`: what `value == null` tests.
  pub fn is_nullish(&self) -> bool {
    self.is_undefined() || matches!(self.0, Some(Value::Null))
  }

  pub fn as_str(&self) -> Option<&'a str> {
    self.0?.as_str()
  }

  pub fn as_bool(&self) -> Option<bool> {
    self.0?.as_bool()
  }

  /// A number, `NaN` and the infinities included.
  pub fn as_number(&self) -> Option<f64> {
    match (self.0?, self.tag()) {
      (Value::Number(n), _) => n.as_f64(),
      (_, Some("NaN")) => Some(f64::NAN),
      (_, Some("Infinity")) => Some(f64::INFINITY),
      (_, Some("-Infinity")) => Some(f64::NEG_INFINITY),
      _ => None,
    }
  }

  pub fn as_array(&self) -> Option<Vec<Sketch<'a>>> {
    Some(self.0?.as_array()?.iter().map(Sketch::of).collect())
  }

  pub fn is_function(&self) -> bool {
    self.type_of() == "function"
  }

  /// An array, the elements of one sketched too deep to list included.
  pub fn is_array(&self) -> bool {
    self.as_array().is_some() || self.tag() == Some("an array")
  }

  /// `typeof value === 'object' && value !== null`: a record or an array.
  pub fn is_object(&self) -> bool {
    self.is_record() || self.is_array()
  }

  /// `typeof value === 'object'` and not `null` or an array: a plain object or an instance of a class.
  pub fn is_record(&self) -> bool {
    matches!(self.0, Some(Value::Object(_))) && self.type_of() == "object" && self.tag() != Some("an array")
  }

  /// The names among `methods` that are not functions on the value (own or inherited), as JS's
  /// `typeof value[name] !== 'function'` finds them.
  pub fn lacking<'m>(&self, methods: &[&'m str]) -> Vec<&'m str> {
    let listed = self.0.and_then(|v| v.get("methods")).and_then(Value::as_array);
    let has = |name: &str| {
      self.field(name).is_function() || listed.is_some_and(|names| names.iter().any(|n| n.as_str() == Some(name)))
    };
    methods.iter().copied().filter(|name| !has(name)).collect()
  }

  /// The value as JS's `describeValue` prints it in a message: a string quoted, `a function`, `an array`,
  /// `an object` or `a Foo`, a number or a keyword as `String()` prints it.
  pub fn described(&self) -> String {
    if let Some(tag) = self.tag() {
      return tag.to_owned();
    }
    match self.0 {
      None => "undefined".to_owned(),
      Some(Value::Null) => "null".to_owned(),
      Some(Value::Bool(b)) => b.to_string(),
      Some(Value::Number(n)) => js_number(n.as_f64().unwrap_or(f64::NAN)),
      Some(Value::String(s)) => Value::String(s.clone()).to_string(),
      Some(Value::Array(_)) => "an array".to_owned(),
      Some(Value::Object(_)) => "an object".to_owned(),
    }
  }
  /// What JS's `if (value)` takes as true.
  pub fn is_truthy(&self) -> bool {
    match self.0 {
      None | Some(Value::Null) => false,
      Some(Value::Bool(b)) => *b,
      Some(Value::String(s)) => !s.is_empty(),
      Some(Value::Number(n)) => n.as_f64() != Some(0.0),
      _ => !self.is_undefined() && self.as_number().is_none_or(|n| n != 0.0 && !n.is_nan()),
    }
  }

  /// Where the value holds something a JSON value cannot (a function, a symbol, a bigint, or `undefined` other than
  /// as a property, which JS's sketch leaves out as JSON does), as `<path> is <what>`, `at` naming the value itself;
  /// none when it is all JSON. A class instance's own fields count; a cycle does not.
  pub fn first_non_json(&self, at: &str) -> Option<String> {
    let Some(value) = self.0 else { return Some(format!("{at} is undefined")) };
    if self.is_tagged() {
      return match self.type_of() {
        "object" | "number" => value.get("fields").and_then(|fields| Sketch::of(fields).first_non_json(at)),
        _ => Some(format!("{at} is {}", self.described())),
      };
    }
    match value {
      Value::Array(items) => {
        items.iter().enumerate().find_map(|(i, item)| Sketch::of(item).first_non_json(&format!("{at}[{i}]")))
      }
      Value::Object(fields) => {
        fields.iter().find_map(|(key, field)| Sketch::of(field).first_non_json(&format!("{at}.{key}")))
      }
      _ => None,
    }
  }

  /// The value itself when it is plain JSON (not a tagged sketch): what a layer object can show as it was given.
  pub fn plain(&self) -> Option<&Value> {
    self.0.filter(|_| !self.is_tagged())
  }

  /// The sketch as it crossed, to be kept and read again (`Sketch::of`); `None` for a field that is absent.
  pub fn sketched(&self) -> Option<&'a Value> {
    self.0
  }

  /// The value as JS's `String(value)` prints it (a function as its description: its source never crosses).
  pub fn js_string(&self) -> String {
    if let Some(text) = self.as_str() {
      return text.to_owned();
    }
    if let Some(items) = self.as_array() {
      return items
        .iter()
        .map(|item| if item.is_nullish() { String::new() } else { item.js_string() })
        .collect::<Vec<_>>()
        .join(",");
    }
    if self.is_record() {
      return "[object Object]".to_owned();
    }
    self.described()
  }
}

/// A number as a sketch carries it: JSON for a finite one, tagged for `NaN` and the infinities.
pub fn number_sketch(n: f64) -> Value {
  if n.is_finite() { serde_json::json!(n) } else { serde_json::json!({ TAG: js_number(n), "type": "number" }) }
}

/// How settings the runtime answered record that a callback was given: a sketch of a function, so that reading the
/// settings back as a sketch finds one.
pub fn function_sketch() -> Value {
  serde_json::json!({ TAG: "a function", "type": "function" })
}

/// `'a', 'b'` and whether the list has more than one name: the missing-methods part of a message.
pub fn quoted_list(names: &[&str]) -> (String, &'static str) {
  let list = names.iter().map(|name| format!("'{name}'")).collect::<Vec<_>>().join(", ");
  (list, if names.len() > 1 { "s" } else { "" })
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  #[test]
  fn the_first_value_json_cannot_hold_is_named_by_its_path() {
    let function = json!({ "$sketch": "a function", "type": "function" });
    let params = json!({ "state": "", "items": [{ "type": "message" }, function] });
    assert_eq!(Sketch::of(&params).first_non_json("params").as_deref(), Some("params.items[1] is a function"));
    let instance =
      json!({ "$sketch": "a Note", "type": "object", "fields": { "at": { "$sketch": "10n", "type": "bigint" } } });
    assert_eq!(Sketch::of(&json!([instance])).first_non_json("p").as_deref(), Some("p[0].at is 10n"));
    let fine =
      json!({ "n": { "$sketch": "NaN", "type": "number" }, "cycle": { "$sketch": "an object", "type": "object" } });
    assert_eq!(Sketch::of(&fine).first_non_json("p"), None);
  }

  #[test]
  fn tagged_values_read_as_js_describes_them() {
    let value = json!({
      "name": "a",
      "n": 2.5,
      "inf": { "$sketch": "Infinity", "type": "number" },
      "run": { "$sketch": "a function", "type": "function" },
      "store": { "$sketch": "a Store", "type": "object", "methods": ["get", "set"], "fields": { "n": 1 } },
      "list": [1, "x"],
    });
    let s = Sketch::of(&value);
    assert_eq!(s.field("name").as_str(), Some("a"));
    assert_eq!(s.field("n").described(), "2.5");
    assert_eq!(s.field("inf").as_number(), Some(f64::INFINITY));
    assert!(s.field("run").is_function());
    assert!(!s.field("run").is_record());
    assert!(s.field("store").is_record());
    assert_eq!(s.field("store").lacking(&["get", "delete"]), vec!["delete"]);
    assert_eq!(s.field("store").described(), "a Store");
    assert_eq!(s.field("store").field("n").as_number(), Some(1.0));
    assert_eq!(s.field("inf").type_of(), "number");
    assert_eq!(s.field("list").described(), "an array");
    assert!(s.field("missing").is_nullish());
    assert_eq!(s.field("name").described(), "\"a\"");
  }

  #[test]
  fn a_plain_object_with_function_fields_has_those_methods() {
    let value = json!({ "get": { "$sketch": "a function", "type": "function" }, "set": 1 });
    assert_eq!(Sketch::of(&value).lacking(&["get", "set"]), vec!["set"]);
  }
}
