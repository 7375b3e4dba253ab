//! How JS reads a JSON value it holds: as a condition (truthiness) and as text (`String(value)`, what a template
//! literal prints). For messages and states that must come out as upstream's JS writes them.

use serde_json::Value;

/// JS's truthiness of a field (`undefined` when absent).
pub fn truthy(value: Option<&Value>) -> bool {
  match value {
    None | Some(Value::Null) => false,
    Some(Value::Bool(b)) => *b,
    Some(Value::Number(n)) => n.as_f64().is_some_and(|n| n != 0.0 && !n.is_nan()),
    Some(Value::String(text)) => !text.is_empty(),
    Some(Value::Array(_) | Value::Object(_)) => true,
  }
}

/// `String(value)` of a field (`undefined` when absent): an array joins its elements with commas, null ones empty.
pub fn string_of(value: Option<&Value>) -> String {
  match value {
    None => "undefined".to_owned(),
    Some(Value::Null) => "null".to_owned(),
    Some(Value::Bool(b)) => b.to_string(),
    Some(Value::Number(n)) => crate::js_number(n.as_f64().unwrap_or(f64::NAN)),
    Some(Value::String(text)) => text.clone(),
    Some(Value::Array(items)) => items
      .iter()
      .map(|item| if item.is_null() { String::new() } else { string_of(Some(item)) })
      .collect::<Vec<_>>()
      .join(","),
    Some(Value::Object(_)) => "[object Object]".to_owned(),
  }
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  #[test]
  fn values_read_as_js_reads_them() {
    assert!(!truthy(None) && !truthy(Some(&json!(0))) && !truthy(Some(&json!(""))) && truthy(Some(&json!([]))));
    assert_eq!(string_of(Some(&json!([1, null, "a", [2, 3]]))), "1,,a,2,3");
    assert_eq!(string_of(Some(&json!({ "a": 1 }))), "[object Object]");
    assert_eq!(string_of(None), "undefined");
    assert_eq!(string_of(Some(&json!(1.5e21))), "1.5e+21");
  }
}
