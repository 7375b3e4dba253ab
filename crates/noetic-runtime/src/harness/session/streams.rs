//! What a session's streams read: every event (`getFullStream` and its filters) and the item snapshots folded from
//! the provider's events (`getItemStream`).

use std::sync::{Mutex, PoisonError};

use crate::items::write_js_string;
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

  /// A step's framework event, `data: {stepId, kind}`. Every step of a session reports twice, so the text is
  /// written directly rather than through a JSON value.
  pub fn step(&self, agent: &str, kind: &str, step_id: &str, step_kind: &str) {
    self.events.emit_with(|| {
      let mut text = String::with_capacity(80 + agent.len() + step_id.len());
      text.push_str(r#"{"source":"framework","type":"#);
      write_js_string(&mut text, &format!("{agent}:{kind}"));
      text.push_str(r#","data":{"stepId":"#);
      write_js_string(&mut text, step_id);
      text.push_str(r#","kind":"#);
      write_js_string(&mut text, step_kind);
      text.push_str("}}");
      text
    });
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
