//! What the in-memory subprocess adapter's objects hold and in which order, as layouts JS fills with its own values
//! (`js_layout`): a handle's metadata, the manifest a step leaves in storage and the metadata of a handle read back
//! from one, the request a replay runs, and upstream's `SerializedError`. Also the storage keys, which are
//! upstream's, so that a storage shared with upstream's adapter reads the same.

use serde::Serialize;
use serde_json::json;

use crate::js_layout::{Entry, Layout, copy, value};
use crate::js_sketch::Sketch;

/// The layouts that depend on nothing but their source, which JS asks for once: a step's and a process's metadata
/// (source: the request), a manifest's handle metadata and its replay request (source: the manifest), and upstream's
/// `SerializedError` of an `Error` and of anything else thrown (source: what was thrown).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Layouts {
  pub step: Layout,
  pub process: Layout,
  pub manifest_metadata: Layout,
  pub replay_request: Layout,
  pub error: Layout,
  pub value: Layout,
}

impl Layouts {
  pub fn new() -> Self {
    Self {
      step: step_metadata(),
      process: process_metadata(),
      manifest_metadata: manifest_metadata(),
      replay_request: replay_request(),
      error: serialized_error(),
      value: serialized_value(),
    }
  }
}

impl Default for Layouts {
  fn default() -> Self {
    Self::new()
  }
}

/// Where every manifest is kept: this prefix and the handle's id.
pub const MANIFEST_PREFIX: &str = "inMemorySubprocess:manifest:";

/// What the adapter says of every handle it runs.
const RUNTIME: &str = "in-memory";

pub fn manifest_key(handle_id: &str) -> String {
  format!("{MANIFEST_PREFIX}{handle_id}")
}

/// A step request's handle (source: the request): the request's own metadata, then the adapter's fields over it.
pub fn step_metadata() -> Layout {
  vec![
    Entry::Spread { from: "metadata" },
    value("runtime", RUNTIME),
    value("kind", "step"),
    copy("stepId"),
    copy("executionId"),
  ]
}

/// A process request's handle (source: the request). `args` defaults to an empty array of its own.
pub fn process_metadata() -> Layout {
  vec![
    Entry::Spread { from: "metadata" },
    value("runtime", RUNTIME),
    copy("command"),
    Entry::CopyOr { key: "args", from: "args", value: json!([]) },
    copy("cwd"),
  ]
}

/// The manifest a step request leaves in storage while it runs (source: the request). A reattached in-memory handle
/// can only be run again from its input: there is no process to rebind to, so its mode is `replay`.
pub fn manifest(handle_id: &str, started_at: &str) -> Layout {
  vec![
    value("kind", "step"),
    value("handleId", handle_id),
    copy("stepId"),
    copy("executionId"),
    copy("serializedInput"),
    copy("overrides"),
    value("startedAt", started_at),
    value("reattachMode", "replay"),
  ]
}

/// A handle read back from a manifest (source: the manifest).
pub fn manifest_metadata() -> Layout {
  vec![value("runtime", RUNTIME), value("kind", "step"), copy("stepId"), copy("executionId"), copy("reattachMode")]
}

/// The step request a replay runs (source: the manifest).
pub fn replay_request() -> Layout {
  vec![value("kind", "step"), copy("stepId"), copy("serializedInput"), copy("executionId"), copy("overrides")]
}

/// Upstream's `SerializedError` of an `Error` (source: the error). A NoeticError keeps its structured payload so
/// that it can be rebuilt with its kind; a config error keeps its `code` and `hint` (DECISIONS M21).
pub fn serialized_error() -> Layout {
  vec![
    copy("message"),
    copy("name"),
    copy("stack"),
    Entry::CopyIfIn { key: "noeticError", from: "noeticError" },
    Entry::CopyIfString { key: "code", from: "code" },
    Entry::CopyIfString { key: "hint", from: "hint" },
  ]
}

/// Upstream's `SerializedError` of anything else thrown (source: the value): its text.
pub fn serialized_value() -> Layout {
  vec![Entry::Text { key: "message" }]
}

/// What a manifest must hold to be read back (upstream's `isStepManifest`); anything else under the prefix is not
/// one. The sketch is one level deep. Answers the handle's id and start.
pub fn step_manifest<'a>(value: Sketch<'a>) -> Option<(&'a str, &'a str)> {
  let text = |key| value.field(key).as_str();
  let ok = value.is_object()
    && text("kind") == Some("step")
    && text("stepId").is_some()
    && text("executionId").is_some()
    && value.field("overrides").is_object();
  Some((text("handleId")?, text("startedAt")?)).filter(|_| ok)
}

/// The warning for a manifest that could not be written (`"persist"`) or cleared (`"clear"`).
pub fn storage_warning(what: &str, handle_id: &str) -> String {
  format!("createInMemorySubprocessAdapter: failed to {what} manifest for \"{handle_id}\":")
}

#[cfg(test)]
mod tests {
  use serde_json::{Value, json};

  use super::*;

  fn keys(layout: &Layout) -> Vec<&'static str> {
    layout
      .iter()
      .filter_map(|entry| match entry {
        Entry::Spread { .. } => None,
        Entry::Value { key, .. }
        | Entry::Copy { key, .. }
        | Entry::CopyOr { key, .. }
        | Entry::CopyIfIn { key, .. }
        | Entry::CopyIfString { key, .. }
        | Entry::Text { key } => Some(*key),
      })
      .collect()
  }

  #[test]
  fn objects_have_upstreams_keys_in_its_order() {
    assert_eq!(keys(&step_metadata()), ["runtime", "kind", "stepId", "executionId"]);
    assert_eq!(keys(&process_metadata()), ["runtime", "command", "args", "cwd"]);
    assert_eq!(
      keys(&manifest("h", "t")),
      ["kind", "handleId", "stepId", "executionId", "serializedInput", "overrides", "startedAt", "reattachMode"]
    );
    assert_eq!(keys(&manifest_metadata()), ["runtime", "kind", "stepId", "executionId", "reattachMode"]);
    assert_eq!(keys(&replay_request()), ["kind", "stepId", "serializedInput", "executionId", "overrides"]);
    assert_eq!(keys(&serialized_error()), ["message", "name", "stack", "noeticError", "code", "hint"]);
    // The request's own metadata comes first, so the adapter's fields win over it.
    assert_eq!(step_metadata()[0], Entry::Spread { from: "metadata" });
    assert!(manifest("h", "t").contains(&value("handleId", "h")));
  }

  #[test]
  fn keys_are_upstreams() {
    assert_eq!(manifest_key("subprocess-1"), "inMemorySubprocess:manifest:subprocess-1");
    assert_eq!(
      storage_warning("clear", "subprocess-1"),
      r#"createInMemorySubprocessAdapter: failed to clear manifest for "subprocess-1":"#
    );
  }

  #[test]
  fn only_a_step_manifest_reads_back() {
    let good = json!({
      "kind": "step", "handleId": "h", "stepId": "s", "executionId": "e", "startedAt": "t",
      "overrides": { "$sketch": "an object", "type": "object", "methods": [] },
      "serializedInput": { "$sketch": "a Map", "type": "object", "methods": [] },
    });
    assert_eq!(step_manifest(Sketch::of(&good)), Some(("h", "t")));
    let with = |key: &str, v: Value| {
      let mut m = good.clone();
      m[key] = v;
      step_manifest(Sketch::of(&m)).map(|(id, started)| (id.to_owned(), started.to_owned()))
    };
    let read = Some(("h".to_owned(), "t".to_owned()));
    assert_eq!(with("kind", json!("process")), None);
    assert_eq!(with("handleId", json!(1)), None);
    assert_eq!(with("startedAt", Value::Null), None);
    assert_eq!(with("overrides", Value::Null), None);
    assert_eq!(with("overrides", json!([])), read, "an array is an object to upstream's check");
    assert_eq!(step_manifest(Sketch::of(&json!("not a manifest"))), None);
    assert_eq!(step_manifest(Sketch::of(&json!({ "kind": "step", "handleId": "junk" }))), None);
  }
}
