//! What `getItemStream` yields: snapshots of the items a provider streams, each with `isComplete`, folded from
//! the provider's events as upstream's item stream folds them. Each reader of the item stream folds for itself
//! (see `item_readers`); a fold keeps each item once, growing it delta by delta, and makes a snapshot only when
//! asked.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

/// Which item an event changed: the round it streamed in and its output index.
pub type ItemKey = (u64, i64);

#[derive(Default)]
pub struct ItemFold {
  /// Bumped by each `response.created`, so items of different rounds and turns never share a key.
  round: u64,
  items: HashMap<ItemKey, Accumulated>,
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

/// What one provider event did to an item, as a reader replays it on its own copy.
#[derive(Debug, PartialEq)]
pub enum Change<'a> {
  /// The item started, or it is done (its status now `completed`): either way it is sent whole.
  Whole(ItemKey),
  /// Text appended to a message's last content part.
  Text(ItemKey, &'a str),
  /// Text appended to a function call's arguments.
  Arguments(ItemKey, &'a str),
  /// The item's text or arguments are complete; nothing else changed.
  Complete(ItemKey),
  /// Nothing changed (a text delta for an item that is not a message), yet upstream yields the item again.
  Same(ItemKey),
}

#[cfg(test)]
impl Change<'_> {
  pub fn key(&self) -> ItemKey {
    match *self {
      Self::Whole(key) | Self::Text(key, _) | Self::Arguments(key, _) | Self::Complete(key) | Self::Same(key) => key,
    }
  }
}

impl ItemFold {
  /// Folds one provider event (its camelCased data); returns what it did to which item, if anything.
  pub fn feed<'a>(&mut self, kind: &str, data: &'a Value) -> Option<Change<'a>> {
    let delta = data.get("delta").and_then(Value::as_str);
    match kind {
      "response.created" => {
        self.round += 1;
        None
      }
      "response.output_item.added" => {
        let item = data.get("item")?.as_object()?;
        let key = (self.round, index(data, self.items.len() as i64));
        self.items.insert(key, Accumulated { item: started(item), complete: false });
        Some(Change::Whole(key))
      }
      "response.output_item.done" => {
        let key = (self.round, index(data, -1));
        let accumulated = self.items.get_mut(&key)?;
        accumulated.complete = true;
        if accumulated.item.contains_key("status") {
          accumulated.item.insert("status".into(), json!("completed"));
        }
        Some(Change::Whole(key))
      }
      "response.output_text.delta" | "response.output_text.done" => {
        let key = (self.round, index(data, 0));
        let accumulated = self.items.get_mut(&key)?;
        if kind.ends_with(".done") {
          accumulated.complete = true;
          return Some(Change::Complete(key));
        }
        if let Some(delta) = delta
          && accumulated.item.get("type").and_then(Value::as_str) == Some("message")
          && let Some(Value::String(text)) = accumulated
            .item
            .get_mut("content")
            .and_then(Value::as_array_mut)
            .and_then(|parts| parts.last_mut())
            .and_then(|part| part.get_mut("text"))
        {
          text.push_str(delta);
          return Some(Change::Text(key, delta));
        }
        Some(Change::Same(key))
      }
      "response.function_call_arguments.delta" | "response.function_call_arguments.done" => {
        let key = (self.round, index(data, 0));
        let accumulated = self.items.get_mut(&key)?;
        if kind.ends_with(".done") {
          accumulated.complete = true;
          return Some(Change::Complete(key));
        }
        if let (Some(delta), Some(Value::String(arguments))) = (delta, accumulated.item.get_mut("arguments")) {
          arguments.push_str(delta);
          return Some(Change::Arguments(key, delta));
        }
        Some(Change::Same(key))
      }
      _ => None,
    }
  }

  /// Every item it holds, in the order they streamed.
  pub fn keys(&self) -> Vec<ItemKey> {
    let mut keys: Vec<ItemKey> = self.items.keys().copied().collect();
    keys.sort_unstable();
    keys
  }

  /// The item as it stands, with `isComplete`.
  pub fn snapshot(&self, key: ItemKey) -> Option<Value> {
    self.items.get(&key).map(Accumulated::snapshot)
  }

  /// Whether `kind` is an event this fold reads: only those need their data looked at.
  pub fn reads(kind: &str) -> bool {
    kind == "response.created" || kind.starts_with("response.output_") || kind.starts_with("response.function_call_")
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_streamed_message_grows_delta_by_delta_and_completes() {
    let mut fold = ItemFold::default();
    let mut feed =
      |kind: &str, data: Value| fold.feed(kind, &data).map(|change| change.key()).and_then(|key| fold.snapshot(key));
    assert_eq!(feed("response.created", json!({})), None);
    let added =
      feed("response.output_item.added", json!({ "outputIndex": 0, "item": { "id": "m1", "type": "message" } }));
    assert_eq!(added.as_ref().map(|s| s["isComplete"].clone()), Some(json!(false)));
    feed("response.output_text.delta", json!({ "outputIndex": 0, "delta": "Hel" }));
    let grown = feed("response.output_text.delta", json!({ "outputIndex": 0, "delta": "lo" })).expect("snapshot");
    assert_eq!(grown["content"][0]["text"], "Hello");
    let done = feed("response.output_item.done", json!({ "outputIndex": 0 })).expect("snapshot");
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
    let delta = json!({ "outputIndex": 0, "delta": "1}" });
    assert_eq!(fold.feed("response.function_call_arguments.delta", &delta), Some(Change::Arguments((1, 0), "1}")));
    assert_eq!(fold.snapshot((1, 0)).map(|s| s["arguments"].clone()), Some(json!("{\"q\":1}")));
    fold.feed("response.created", &json!({}));
    // Round two's index 0 is a new item; a delta for an item never added yields nothing.
    assert_eq!(fold.feed("response.output_text.delta", &json!({ "outputIndex": 0, "delta": "x" })), None);
  }
}
