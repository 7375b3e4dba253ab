//! The two error families of the public API: configuration errors (bad input, found before or while running) and
//! runtime errors with a discriminated `kind`, as upstream's `NoeticConfigError` and `NoeticError`.

pub mod messages;

use std::fmt;

use serde::Serialize;

/// `NoeticConfigError`: a stable `code`, a message, and a hint that says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigError {
  pub code: String,
  pub message: String,
  pub hint: String,
}

impl ConfigError {
  pub fn new(code: &str, message: impl Into<String>, hint: impl Into<String>) -> Self {
    Self { code: code.to_owned(), message: message.into(), hint: hint.into() }
  }
}

impl fmt::Display for ConfigError {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "[{}] {}", self.code, self.message)
  }
}

impl std::error::Error for ConfigError {}

/// `NoeticError`: the runtime failures users match on by `kind`. The payload is kept as JSON so that it crosses
/// to JS unchanged (`noeticError` on the JS error object).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoeticError {
  pub kind: String,
  /// The whole `noeticError` object, `kind` included.
  pub payload: serde_json::Value,
  pub message: String,
}

impl NoeticError {
  /// `kind` is the payload's first key, as in upstream's payloads (JS code that lists or prints them sees that order).
  pub fn new(kind: &str, payload: serde_json::Value, message: impl Into<String>) -> Self {
    let mut fields = serde_json::Map::new();
    fields.insert("kind".into(), kind.into());
    if let serde_json::Value::Object(given) = payload {
      fields.extend(given.into_iter().filter(|(key, _)| key != "kind"));
    }
    Self { kind: kind.to_owned(), payload: serde_json::Value::Object(fields), message: message.into() }
  }

  /// A `kind` with upstream's message for its payload ([`messages`]).
  pub fn described(kind: &str, payload: serde_json::Value) -> Self {
    let mut error = Self::new(kind, payload, String::new());
    error.message = messages::describe(&error.payload);
    error
  }

  /// `steering_denied`: a layer's afterModelCall denied the model's response.
  pub fn steering_denied(guidance: Option<&str>) -> Self {
    Self::described("steering_denied", serde_json::json!({ "guidance": guidance }))
  }

  /// `cancelled`: the context was aborted.
  pub fn cancelled(reason: &str) -> Self {
    Self::described("cancelled", serde_json::json!({ "reason": reason }))
  }
}

impl fmt::Display for NoeticError {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str(&self.message)
  }
}

impl std::error::Error for NoeticError {}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_payload_starts_with_its_kind() {
    let error = NoeticError::new(
      "step_failed",
      serde_json::json!({ "stepId": "s", "kind": "stale", "retriesExhausted": false }),
      "m",
    );
    assert_eq!(
      serde_json::to_string(&error.payload).ok().as_deref(),
      Some(r#"{"kind":"step_failed","stepId":"s","retriesExhausted":false}"#)
    );
    let bare = NoeticError::new("cancelled", serde_json::Value::Null, "Cancelled");
    assert_eq!(serde_json::to_string(&bare.payload).ok().as_deref(), Some(r#"{"kind":"cancelled"}"#));
  }
}
