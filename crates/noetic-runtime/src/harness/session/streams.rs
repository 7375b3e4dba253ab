//! What a session's streams read: every event (`getFullStream` and its filters) and the item snapshots folded from
//! the provider's events (`getItemStream`).

use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};

use super::events::EventLog;
use super::items::ItemFold;

/// What a session's streams read: every event (`getFullStream` and its filters), and the item snapshots folded
/// from the provider's events (`getItemStream`).
#[derive(Default)]
pub struct Streams {
  pub events: EventLog,
  pub items: EventLog,
  fold: Mutex<ItemFold>,
}

impl Streams {
  /// A framework event: `{source: 'framework', type: '<agent>:<kind>', data}`.
  pub fn framework(&self, agent: &str, kind: &str, data: Value) {
    self.events.emit(&json!({ "source": "framework", "type": format!("{agent}:{kind}"), "data": data }));
  }

  /// A provider event, `{source: 'sdk', type, data, outputIndex?, contentIndex?}` with camelCased `data`.
  pub fn sdk(&self, kind: &str, data: Value) {
    let snapshot = self.fold.lock().unwrap_or_else(PoisonError::into_inner).feed(kind, &data);
    let mut event = json!({ "source": "sdk", "type": kind });
    for key in ["outputIndex", "contentIndex"] {
      if let Some(index) = data.get(key).filter(|index| index.is_number()) {
        event[key] = index.clone();
      }
    }
    event["data"] = data;
    self.events.emit(&event);
    if let Some(snapshot) = snapshot {
      self.items.emit(&snapshot);
    }
  }
}
