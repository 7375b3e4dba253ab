//! A JS test model's reply (`_testCallModel`), read and checked where it arrives, so that a mistake names the field
//! instead of failing later in the runtime. JS sends what it has without judging it (`js/model-calls.cjs`): the
//! items as their JSON texts, the usage and the cost sketched (`js_sketch`), and the whole reply sketched only when
//! it holds no array of items, as then there is nothing else to send.

use serde_json::Value;

use super::ModelReply;
use crate::error::ConfigError;
use crate::js_sketch::Sketch;

const CODE: &str = "INVALID_MODEL_RESPONSE";
const HINT: &str = "Return { items: Item[], usage?: { inputTokens, outputTokens, cachedTokens? }, cost?: number }.";
/// The counts a reply may carry that must be numbers when given (`cacheWriteTokens` is read only if it is one).
const COUNTS: [&str; 3] = ["inputTokens", "outputTokens", "cachedTokens"];

/// A test model's reply as it crossed.
pub struct TestModelReply<'a> {
  /// The reply itself, sketched, when it held no array of items.
  pub shape: Option<&'a Value>,
  /// Each item's JSON text (a sketch for one JSON cannot write, such as `undefined`).
  pub items: Vec<String>,
  pub usage: Option<&'a Value>,
  pub cost: Option<&'a Value>,
  /// The host put the items to its item schemas.
  pub checked: bool,
}

fn refuse(what: String, expected: &str) -> ConfigError {
  ConfigError::new(CODE, format!("_testCallModel returned {what}; expected {expected}."), HINT)
}

/// A count or a cost as the runtime keeps it: a number that is not finite is none, as JSON would write it.
fn finite(value: Sketch) -> Option<f64> {
  value.as_number().filter(|n| n.is_finite())
}

fn sketch(value: Option<&Value>) -> Sketch<'_> {
  value.map_or_else(Sketch::undefined, Sketch::of)
}

impl TestModelReply<'_> {
  /// The reply the runtime uses, or the first thing wrong with it, in the order a reader would look: the reply,
  /// its items, its usage, its cost.
  pub fn read(self) -> Result<ModelReply, ConfigError> {
    if let Some(shape) = self.shape.map(Sketch::of) {
      return Err(match shape.is_object() {
        true => refuse(format!("items {}", shape.field("items").described()), "an array of items"),
        false => refuse(shape.described(), "an object { items, usage?, cost? }"),
      });
    }
    for (i, text) in self.items.iter().enumerate() {
      // A JSON text that opens an object is an item; a sketch (of `undefined`, a function) opens one too.
      if !text.starts_with('{') || text.starts_with(r#"{"$sketch""#) {
        let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let item = Sketch::of(&value);
        if !item.is_record() {
          return Err(refuse(format!("items[{i}] {}", item.described()), "an item object"));
        }
      }
    }
    let usage = sketch(self.usage);
    if !usage.is_nullish() {
      if !usage.is_object() {
        return Err(refuse(format!("usage {}", usage.described()), "an object"));
      }
      if let Some(field) =
        COUNTS.iter().find(|f| !usage.field(f).is_undefined() && usage.field(f).as_number().is_none())
      {
        return Err(refuse(format!("usage.{field} {}", usage.field(field).described()), "a number"));
      }
    }
    let cost = sketch(self.cost);
    if !cost.is_nullish() && cost.as_number().is_none() {
      return Err(refuse(format!("cost {}", cost.described()), "a number"));
    }
    Ok(ModelReply {
      items: self.items,
      items_checked: self.checked,
      input_tokens: finite(usage.field("inputTokens")).unwrap_or(0.0),
      output_tokens: finite(usage.field("outputTokens")).unwrap_or(0.0),
      cached_tokens: finite(usage.field("cachedTokens")),
      cache_write_tokens: finite(usage.field("cacheWriteTokens")),
      cost: finite(cost),
    })
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  fn reply<'a>(items: &[&str], usage: Option<&'a Value>, cost: Option<&'a Value>) -> TestModelReply<'a> {
    TestModelReply { shape: None, items: items.iter().map(|s| s.to_string()).collect(), usage, cost, checked: true }
  }

  fn message(result: Result<ModelReply, ConfigError>) -> String {
    result.err().expect("refused").to_string()
  }

  #[test]
  fn a_well_formed_reply_keeps_its_items_and_counts() {
    let usage = json!({ "inputTokens": 12, "outputTokens": 3, "cachedTokens": 8, "cacheWriteTokens": "x" });
    let read = reply(&[r#"{"type":"message"}"#], Some(&usage), Some(&json!(0.5))).read().unwrap();
    assert_eq!(read.items, vec![r#"{"type":"message"}"#.to_owned()]);
    assert_eq!((read.input_tokens, read.output_tokens, read.cached_tokens), (12.0, 3.0, Some(8.0)));
    assert_eq!((read.cache_write_tokens, read.cost, read.items_checked), (None, Some(0.5), true));
    // Absent fields, sketched as `undefined`, are none.
    let undefined = json!({ "$sketch": "undefined", "type": "undefined" });
    let read = reply(&[], Some(&undefined), Some(&undefined)).read().unwrap();
    assert_eq!((read.input_tokens, read.cached_tokens, read.cost), (0.0, None, None));
  }

  #[test]
  fn each_wrong_field_is_named_with_what_it_was() {
    let shape = |value: Value| {
      let reply = TestModelReply { shape: Some(&value), items: vec![], usage: None, cost: None, checked: false };
      message(reply.read())
    };
    assert!(
      shape(json!({ "$sketch": "undefined", "type": "undefined" })).contains("returned undefined; expected an object")
    );
    assert!(shape(json!({ "items": "nope" })).contains(r#"items "nope"; expected an array of items"#));
    assert!(shape(json!([1])).contains("items undefined"));
    assert!(
      message(reply(&["{}", r#""text""#], None, None).read()).contains(r#"items[1] "text"; expected an item object"#)
    );
    assert!(message(reply(&["[1]"], None, None).read()).contains("items[0] an array"));
    let function = r#"{"$sketch":"a function","type":"function"}"#;
    assert!(message(reply(&[function], None, None).read()).contains("items[0] a function"));
    let usage = json!({ "inputTokens": "3", "outputTokens": 1 });
    assert!(message(reply(&[], Some(&usage), None).read()).contains(r#"usage.inputTokens "3"; expected a number"#));
    assert!(message(reply(&[], Some(&json!(5)), None).read()).contains("usage 5; expected an object"));
    assert!(message(reply(&[], None, Some(&json!("0.01"))).read()).contains(r#"cost "0.01"; expected a number"#));
  }
}
