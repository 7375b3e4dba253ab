//! A checkpoint store's decisions (`createCheckpointStore` in `js/checkpoint.cjs`): upstream's key layout, which
//! stored keys name a snapshot, and why a stored snapshot cannot be restored or a checkpoint call is refused. JS keeps the snapshot in the user's
//! storage and checks it against the zod schema users hold.

use serde_json::{Value, json};

use super::mismatch;
use crate::error::ConfigError;

const EXEC_PREFIX: &str = "execution:";
const SNAPSHOT_SUFFIX: &str = ":snapshot";

/// Upstream's `CheckpointKeys`, so that a storage shared with upstream's runtime reads the same.
pub fn keys() -> Value {
  json!({
    "ExecPrefix": EXEC_PREFIX,
    "SnapshotSuffix": SNAPSHOT_SUFFIX,
    "FrontierSuffix": ":frontier",
    "LayersSuffix": ":layers:",
    "CwdSuffix": ":cwd",
    "AskUserSuffix": ":askUser",
    "ItemLogSuffix": ":itemLog",
  })
}

/// `[{executionId}]` for the stored keys (a storage's `list`) that name a snapshot, in their order.
pub fn execution_ids(keys: &Value) -> Value {
  let id = |key: &Value| {
    let inner = key.as_str()?.strip_prefix(EXEC_PREFIX)?.strip_suffix(SNAPSHOT_SUFFIX)?;
    (!inner.is_empty()).then(|| json!({ "executionId": inner }))
  };
  keys.as_array().map_or_else(Vec::new, |keys| keys.iter().filter_map(id).collect()).into()
}

/// Why a checkpoint call is refused, as JS reports it: `{live: true}` (`restore` of an execution this harness still
/// has), `{foreignContext: true}` (`checkpoint` of another harness's context, or of no context); or why a stored
/// snapshot cannot be restored: `{notJson: detail}` (the storage could not read its text), `{schema: {version, path,
/// message}}` (the zod schema's first issue; `version` as JS prints the snapshot's `schemaVersion`, or `unknown`) or
/// `{items: detail}` (the item log was refused).
pub fn refusal(execution_id: &str, reason: &Value) -> ConfigError {
  if reason.get("live").is_some() {
    return ConfigError::new(
      "CHECKPOINT_EXECUTION_LIVE",
      format!("harness.restore(\"{execution_id}\"): this harness still has that execution's context."),
      "Go on with the live context, or restore in another harness (another process, after a restart).",
    );
  }
  if reason.get("foreignContext").is_some() {
    return ConfigError::new(
      "INVALID_CONTEXT",
      "harness.checkpoint(ctx) needs a context of this harness.",
      "Pass the ctx a step of this harness was given, or one from its createContext() or restore().",
    );
  }
  let text = |key: &str| reason.get(key).and_then(Value::as_str);
  if let Some(detail) = text("notJson") {
    return mismatch(execution_id, &format!("its stored text is not JSON ({detail})"));
  }
  if let Some(detail) = text("items") {
    return mismatch(execution_id, &format!("its item log was refused ({detail})"));
  }
  let schema = &reason["schema"];
  let version = schema["version"].as_str().unwrap_or("unknown");
  let message = schema["message"].as_str().unwrap_or_default();
  let path: Vec<String> = schema["path"].as_array().into_iter().flatten().map(path_part).collect();
  let at = if path.is_empty() { "the snapshot".to_owned() } else { path.join(".") };
  mismatch(execution_id, &format!("it failed schema validation (observed schemaVersion={version}; {at}: {message})"))
}

/// A zod path's part as `Array.prototype.join` prints it: a key, or an index.
fn path_part(part: &Value) -> String {
  match part {
    Value::String(key) => key.clone(),
    Value::Number(n) => crate::js_number(n.as_f64().unwrap_or(f64::NAN)),
    other => other.to_string(),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn only_keys_of_a_snapshot_with_an_id_name_an_execution() {
    let stored = json!(["execution:a:snapshot", "execution:stray", "execution::snapshot", 7, "execution:b:c:snapshot"]);
    assert_eq!(execution_ids(&stored), json!([{ "executionId": "a" }, { "executionId": "b:c" }]));
    assert_eq!(execution_ids(&json!({})), json!([]));
    assert_eq!(keys()["ExecPrefix"], "execution:");
    assert_eq!(keys()["SnapshotSuffix"], ":snapshot");
  }

  #[test]
  fn a_refusal_says_why_in_upstreams_code_and_our_words() {
    let corrupt = refusal("e1", &json!({ "notJson": "Unexpected token" }));
    assert_eq!(corrupt.code, "CHECKPOINT_SCHEMA_MISMATCH");
    assert_eq!(
      corrupt.message,
      "Checkpoint snapshot for execution \"e1\" cannot be restored: its stored text is not JSON (Unexpected token)."
    );
    assert!(corrupt.hint.starts_with("The snapshot was written by another runtime version"));
    let items = refusal("e1", &json!({ "items": "items[1]: not an item" }));
    assert!(items.message.ends_with("cannot be restored: its item log was refused (items[1]: not an item)."));
    let schema =
      json!({ "schema": { "version": "2", "path": ["frontier", 0, "stepId"], "message": "Expected string" } });
    assert!(
      refusal("e1", &schema)
        .message
        .ends_with("it failed schema validation (observed schemaVersion=2; frontier.0.stepId: Expected string).")
    );
    let live = refusal("e1", &json!({ "live": true }));
    assert_eq!(live.code, "CHECKPOINT_EXECUTION_LIVE");
    assert_eq!(live.message, "harness.restore(\"e1\"): this harness still has that execution's context.");
    assert_eq!(refusal("", &json!({ "foreignContext": true })).code, "INVALID_CONTEXT");
    let whole = json!({ "schema": { "version": "unknown", "path": [], "message": "Expected object" } });
    assert!(
      refusal("e1", &whole).message.ends_with("(observed schemaVersion=unknown; the snapshot: Expected object).")
    );
  }
}
