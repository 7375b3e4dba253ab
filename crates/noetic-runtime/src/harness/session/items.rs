//! What `getItemStream` yields: snapshots of the items a provider streams, each with `isComplete`, folded from
//! the provider's events as upstream's item stream folds them. The fold runs once per session, as the events
//! arrive; every reader of the item stream reads its output, as every reader of the full stream reads the events.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

#[derive(Default)]
pub struct ItemFold {
  /// Bumped by each `response.created`, so items of different rounds and turns never share a key.
  round: u64,
  items: HashMap<(u64, i64), Accumulated>,
}

struct Accumulated {
  item: Map<String, Value>,
  complete: bool,
}

impl Accumulated {
  fn snapshot(&self) -> Value {
    let mut item = self.item.clone();
    item.insert("isComplete".into(), Value::Bool(self.complete));
    Value::Object(item)
  }
}

fn index(data: &Value, or: i64) -> i64 {
  data.get("outputIndex").and_then(Value::as_i64).unwrap_or(or)
}

/// The accumulator an added item starts: a message or a function call with its text or arguments still empty.
fn started(item: &Map<String, Value>) -> Map<String, Value> {
  let id = item.get("id").cloned().unwrap_or_else(|| Value::String(uuid::Uuid::new_v4().to_string()));
  let field = |key: &str| item.get(key).filter(|v| v.is_string()).cloned().unwrap_or_else(|| json!(""));
  let started = match item.get("type").and_then(Value::as_str) {
    Some("message") => json!({
      "id": id, "type": "message", "role": "assistant", "status": "in_progress",
      "content": [{ "type": "output_text", "text": "" }],
    }),
    Some("function_call") => {
      let mut call = item.clone();
      call.insert("id".into(), id);
      call.insert("status".into(), json!("in_progress"));
      call.insert("callId".into(), field("callId"));
      call.insert("name".into(), field("name"));
      call.insert("arguments".into(), json!(""));
      Value::Object(call)
    }
    _ => Value::Object(item.clone()),
  };
  match started {
    Value::Object(map) => map,
    _ => Map::new(),
  }
}

impl ItemFold {
  /// Folds one provider event (its camelCased data); returns the snapshot it produces, if any.
  pub fn feed(&mut self, kind: &str, data: &Value) -> Option<Value> {
    match kind {
      "response.created" => {
        self.round += 1;
        None
      }
      "response.output_item.added" => {
        let item = data.get("item")?.as_object()?;
        let key = (self.round, index(data, self.items.len() as i64));
        let accumulated = Accumulated { item: started(item), complete: false };
        let snapshot = accumulated.snapshot();
        self.items.insert(key, accumulated);
        Some(snapshot)
      }
      "response.output_item.done" => {
        let accumulated = self.items.get_mut(&(self.round, index(data, -1)))?;
        accumulated.complete = true;
        if accumulated.item.contains_key("status") {
          accumulated.item.insert("status".into(), json!("completed"));
        }
        Some(accumulated.snapshot())
      }
      "response.output_text.delta" | "response.output_text.done" => {
        let accumulated = self.items.get_mut(&(self.round, index(data, 0)))?;
        if kind.ends_with(".done") {
          accumulated.complete = true;
        } else if let Some(delta) = data.get("delta").and_then(Value::as_str)
          && accumulated.item.get("type").and_then(Value::as_str) == Some("message")
          && let Some(Value::String(text)) = accumulated
            .item
            .get_mut("content")
            .and_then(Value::as_array_mut)
            .and_then(|parts| parts.last_mut())
            .and_then(|part| part.get_mut("text"))
        {
          text.push_str(delta);
        }
        Some(accumulated.snapshot())
      }
      "response.function_call_arguments.delta" | "response.function_call_arguments.done" => {
        let accumulated = self.items.get_mut(&(self.round, index(data, 0)))?;
        if kind.ends_with(".done") {
          accumulated.complete = true;
        } else if let (Some(delta), Some(Value::String(arguments))) =
          (data.get("delta").and_then(Value::as_str), accumulated.item.get_mut("arguments"))
        {
          arguments.push_str(delta);
        }
        Some(accumulated.snapshot())
      }
      _ => None,
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_streamed_message_grows_delta_by_delta_and_completes() {
    let mut fold = ItemFold::default();
    assert_eq!(fold.feed("response.created", &json!({})), None);
    let added =
      fold.feed("response.output_item.added", &json!({ "outputIndex": 0, "item": { "id": "m1", "type": "message" } }));
    assert_eq!(added.as_ref().map(|s| s["isComplete"].clone()), Some(json!(false)));
    fold.feed("response.output_text.delta", &json!({ "outputIndex": 0, "delta": "Hel" }));
    let grown = fold.feed("response.output_text.delta", &json!({ "outputIndex": 0, "delta": "lo" })).expect("snapshot");
    assert_eq!(grown["content"][0]["text"], "Hello");
    let done = fold.feed("response.output_item.done", &json!({ "outputIndex": 0 })).expect("snapshot");
    assert_eq!((done["status"].clone(), done["isComplete"].clone()), (json!("completed"), json!(true)));
  }

  #[test]
  fn function_call_arguments_accumulate_and_rounds_keep_items_apart() {
    let mut fold = ItemFold::default();
    fold.feed("response.created", &json!({}));
    let call =
      json!({ "outputIndex": 0, "item": { "id": "f", "type": "function_call", "callId": "c1", "name": "look" } });
    fold.feed("response.output_item.added", &call);
    fold.feed("response.function_call_arguments.delta", &json!({ "outputIndex": 0, "delta": "{\"q\":" }));
    let args = fold.feed("response.function_call_arguments.delta", &json!({ "outputIndex": 0, "delta": "1}" }));
    assert_eq!(args.map(|s| s["arguments"].clone()), Some(json!("{\"q\":1}")));
    fold.feed("response.created", &json!({}));
    // Round two's index 0 is a new item; a delta for an item never added yields nothing.
    assert_eq!(fold.feed("response.output_text.delta", &json!({ "outputIndex": 0, "delta": "x" })), None);
  }
}
