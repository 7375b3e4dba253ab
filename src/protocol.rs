//! The JSON shapes that cross the dispatcher, and how errors travel back to JS as values.

use noetic_runtime::error::{ConfigError, NoeticError};
use noetic_runtime::harness::RunError;
use noetic_runtime::host::{HostError, HostRef, StepValue, StepValueRef};
use noetic_runtime::js_text::from_js_json;
use serde::Deserialize;
use serde_json::{Value, json};

/// Errors cross as JSON so that JS can rebuild the right class (or rethrow the very object a user function threw).
pub fn error_json(error: &RunError) -> Value {
  match error {
    RunError::Config(e) => config_json(e),
    RunError::Noetic(e) => noetic_json(e),
    RunError::Host(HostError::Thrown { message, error }) => {
      json!({ "kind": "thrown", "message": message, "handle": error })
    }
    RunError::Host(HostError::Config(e)) => config_json(e),
    RunError::Host(HostError::Noetic(e)) => noetic_json(e),
  }
}

pub fn config_json(e: &ConfigError) -> Value {
  json!({ "kind": "config", "code": e.code, "message": e.message, "hint": e.hint })
}

pub fn noetic_json(e: &NoeticError) -> Value {
  json!({ "kind": "noetic", "payload": e.payload, "message": e.message })
}

/// A sync napi error that JS turns back into the right error class.
pub fn to_napi(error: Value) -> napi::Error {
  napi::Error::new(napi::Status::GenericFailure, format!("NOETIC_ERROR:{error}"))
}

/// An error a JS function reported: `{message, handle?, config?, noetic?}`.
#[derive(Debug, Deserialize)]
pub struct JsFailure {
  pub message: String,
  pub handle: Option<HostRef>,
  pub config: Option<JsConfigError>,
  pub noetic: Option<JsNoeticError>,
}

#[derive(Debug, Deserialize)]
pub struct JsConfigError {
  pub code: String,
  pub message: String,
  pub hint: String,
}

#[derive(Debug, Deserialize)]
pub struct JsNoeticError {
  pub payload: Value,
  pub message: String,
}

impl From<JsFailure> for HostError {
  fn from(failure: JsFailure) -> Self {
    if let Some(c) = failure.config {
      return HostError::Config(ConfigError { code: c.code, message: c.message, hint: c.hint });
    }
    if let Some(n) = failure.noetic {
      let kind = n.payload.get("kind").and_then(Value::as_str).unwrap_or("step_failed").to_owned();
      return HostError::Noetic(NoeticError { kind, payload: n.payload, message: n.message });
    }
    HostError::Thrown { message: failure.message, error: failure.handle }
  }
}

/// `{ok: true, ...}` or `{ok: false, error}`: the envelope of every reply that can fail.
#[derive(Debug, Deserialize)]
pub struct Envelope<T> {
  pub ok: bool,
  #[serde(flatten)]
  pub value: Option<T>,
  pub error: Option<JsFailure>,
}

pub fn open<T>(text: &str) -> Result<T, HostError>
where
  T: for<'de> Deserialize<'de>,
{
  let envelope: Envelope<T> = from_js_json(text).map_err(|e| malformed(&e.to_string()))?;
  unwrap_envelope(envelope)
}

/// [`open`] for a reply that carries a step tree (a route's step, a fork's paths), read as deeply as a run's step.
pub fn open_steps<T>(text: &str) -> Result<T, HostError>
where
  T: for<'de> Deserialize<'de>,
{
  let envelope: Envelope<T> = step_text(text).map_err(HostError::Config)?;
  unwrap_envelope(envelope)
}

fn unwrap_envelope<T>(envelope: Envelope<T>) -> Result<T, HostError> {
  match (envelope.ok, envelope.value, envelope.error) {
    (true, Some(value), _) => Ok(value),
    (false, _, Some(error)) => Err(error.into()),
    _ => Err(malformed("neither a value nor an error")),
  }
}

pub fn malformed(what: &str) -> HostError {
  HostError::Thrown { message: format!("the JS side sent a malformed reply: {what}"), error: None }
}

/// A step value as JSON: `{t: 'undefined'|'text'|'json'|'host', v}`.
pub fn step_value_from(json: &Value) -> StepValue {
  match (json.get("t").and_then(Value::as_str), json.get("v")) {
    (Some("text"), Some(Value::String(text))) => StepValue::Text(text.clone()),
    (Some("json"), Some(value)) => StepValue::Json(value.clone()),
    (Some("host"), Some(value)) => value.as_u64().map_or(StepValue::Undefined, StepValue::Host),
    _ => StepValue::Undefined,
  }
}

pub fn step_value_json(value: &StepValue) -> Value {
  serde_json::to_value(StepValueRef::from(value)).unwrap_or(Value::Null)
}

/// How deeply JSON text that carries a step tree (a run's step, a harness's `initialStep`, a route's or a fork's
/// steps) may nest. A step inside a loop, fork, branch or spawn sits one or two levels below it, so this admits trees
/// some 500 steps deep (a JSON workflow at its 64-level limit among them), past the 128 levels other crossings take.
pub const STEP_TEXT_NESTING: usize = 1024;

/// JSON text carrying a step tree, read within [`STEP_TEXT_NESTING`]; deeper is `INVALID_STEP`, before anything
/// recurses into it.
pub fn step_text<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ConfigError> {
  noetic_runtime::js_text::from_js_json_nested(text, STEP_TEXT_NESTING).map_err(|error| {
    ConfigError::new(
      "INVALID_STEP",
      format!("The step tree cannot be run: {error}."),
      "Flatten it: a loop, a fork or a sequence of steps takes many steps at one level.",
    )
  })
}

/// Numbers JSON cannot carry (NaN, ±Infinity) cross as strings.
pub use noetic_runtime::js_text::described_number as number;
