//! What a session's streams read: every event (`getFullStream` and its filters) and the item snapshots folded from
//! the provider's events (`getItemStream`).

use crate::items::{write_joined_string, write_js_string};
use serde::Serialize;
use serde_json::{Value, json};

use super::events::EventLog;
use super::item_readers::ItemReaders;
use super::items::ItemFold;

/// What a session's streams read: every event (`getFullStream` and its filters), and the item snapshots each item
/// reader folds from the provider's events (`getItemStream`).
#[derive(Default)]
pub struct Streams {
  pub events: EventLog,
  pub items: ItemReaders,
}

impl Streams {
  /// A framework event: `{source: 'framework', type: '<agent>:<kind>', data}`. Serialized straight from `data`
  /// (every turn raises two), and only when someone may read it.
  pub fn framework<D: Serialize + ?Sized>(&self, agent: &str, kind: &str, data: &D) {
    self.events.emit_with(|| {
      let Ok(data) = serde_json::to_string(data) else { return String::new() };
      let mut text = String::with_capacity(48 + agent.len() + kind.len() + data.len());
      text.push_str(r#"{"source":"framework","type":"#);
      write_joined_string(&mut text, agent, ':', kind);
      text.push_str(r#","data":"#);
      text.push_str(&data);
      text.push('}');
      text
    });
  }

  /// A step's framework event, `data: {stepId, kind}`. Every step of a session reports twice, so the text is
  /// written directly rather than through a JSON value.
  pub fn step(&self, agent: &str, kind: &str, step_id: &str, step_kind: &str) {
    self.events.emit_with(|| {
      let mut text = String::with_capacity(80 + agent.len() + step_id.len());
      text.push_str(r#"{"source":"framework","type":"#);
      write_joined_string(&mut text, agent, ':', kind);
      text.push_str(r#","data":{"stepId":"#);
      write_js_string(&mut text, step_id);
      text.push_str(r#","kind":"#);
      write_js_string(&mut text, step_kind);
      text.push_str("}}");
      text
    });
  }

  /// A provider event, `{source: 'sdk', type, data, outputIndex?, contentIndex?}` with camelCased `data`, folded
  /// by the item readers there are.
  pub fn sdk(&self, kind: &str, data: Value) {
    let mut feeding = self.items.feeding();
    let wakes = if feeding.has_readers() && ItemFold::reads(kind) { feeding.feed(kind, &data) } else { Vec::new() };
    let mut event = json!({ "source": "sdk", "type": kind });
    for key in ["outputIndex", "contentIndex"] {
      if let Some(index) = data.get(key).filter(|index| index.is_number()) {
        event[key] = index.clone();
      }
    }
    event["data"] = data;
    self.events.emit(&event);
    drop(feeding);
    for wake in wakes {
      wake();
    }
  }

  /// A new item reader (`getItemStream`), which first folds the provider events still buffered, as a new reader of
  /// the full stream first reads them. It is a reader of the event log too, which keeps events while it is open.
  pub fn open_item_reader(&self) -> u64 {
    let mut feeding = self.items.feeding();
    let replayed = self.events.open_reader_replaying(|events| events.filter_map(provider_event).collect::<Vec<_>>());
    feeding.open(replayed)
  }

  pub fn close_item_reader(&self, reader: u64) {
    if self.items.close(reader) {
      self.events.close_reader();
    }
  }
}

/// What a filtered stream reads of the provider's events: the text deltas (`getTextStream`) or the reasoning ones
/// (`getReasoningStream`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deltas {
  Text,
  Reasoning,
}

impl Deltas {
  pub fn parse(name: &str) -> Option<Self> {
    match name {
      "text" => Some(Self::Text),
      "reasoning" => Some(Self::Reasoning),
      _ => None,
    }
  }

  fn types(self) -> &'static [&'static str] {
    match self {
      Self::Text => &["response.output_text.delta"],
      Self::Reasoning => {
        &["response.reasoning.delta", "response.reasoning_text.delta", "response.reasoning_summary_text.delta"]
      }
    }
  }

  /// The delta of a buffered event, when a provider sent it as one of these, with a string `delta`.
  pub fn of(self, text: &str) -> Option<String> {
    let event: Value = serde_json::from_str(text).ok()?;
    let kind = event.get("type").and_then(Value::as_str)?;
    if event.get("source").and_then(Value::as_str) != Some("sdk") || !self.types().contains(&kind) {
      return None;
    }
    event.get("data")?.get("delta")?.as_str().map(str::to_owned)
  }
}

/// A buffered event's kind and data when a provider sent it and an item fold reads it.
fn provider_event(text: &str) -> Option<(String, Value)> {
  let mut event: Value = serde_json::from_str(text).ok()?;
  let kind = event.get("type").and_then(Value::as_str).filter(|kind| ItemFold::reads(kind))?.to_owned();
  (event.get("source").and_then(Value::as_str) == Some("sdk")).then(|| (kind, event["data"].take()))
}

#[cfg(test)]
mod tests {
  use super::*;

  fn only_event(streams: &Streams) -> String {
    let cursor = streams.events.open_reader();
    let batch = streams.events.read(cursor, 10, Box::new(|| {})).expect("an event");
    batch.events[0].to_string()
  }

  #[test]
  fn a_framework_event_is_written_as_serde_would_write_it() {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Data {
      turn_id: &'static str,
      message_ids: Vec<&'static str>,
    }
    let streams = Streams::default();
    // An agent name that needs escaping, as the type joins it with the kind.
    streams.framework("my \"agent\"\n", "turn_started", &Data { turn_id: "t1", message_ids: vec!["m1"] });
    let expected = json!({
      "source": "framework",
      "type": "my \"agent\"\n:turn_started",
      "data": { "turnId": "t1", "messageIds": ["m1"] },
    });
    assert_eq!(only_event(&streams), serde_json::to_string(&expected).unwrap());

    let streams = Streams::default();
    streams.step("a\tb", "step_started", "chat", "llm");
    let expected =
      json!({ "source": "framework", "type": "a\tb:step_started", "data": { "stepId": "chat", "kind": "llm" } });
    assert_eq!(only_event(&streams), serde_json::to_string(&expected).unwrap());
  }

  #[test]
  fn a_filtered_stream_reads_the_string_deltas_of_its_provider_events_only() {
    let streams = Streams::default();
    let cursor = streams.events.open_reader();
    streams.sdk("response.output_text.delta", json!({ "delta": "Hel" }));
    streams.sdk("response.reasoning_summary_text.delta", json!({ "delta": "why" }));
    streams.sdk("response.output_text.delta", json!({ "delta": 7 }));
    streams.framework("agent", "response.output_text.delta", &json!({ "delta": "not a provider's" }));
    streams.sdk("response.output_text.delta", json!({ "delta": "lo" }));
    let batch = streams.events.read(cursor, 10, Box::new(|| {})).expect("events");
    let of = |deltas: Deltas| batch.events.iter().filter_map(|event| deltas.of(event)).collect::<Vec<_>>();
    assert_eq!(of(Deltas::Text), ["Hel", "lo"]);
    assert_eq!(of(Deltas::Reasoning), ["why"]);
  }
}
