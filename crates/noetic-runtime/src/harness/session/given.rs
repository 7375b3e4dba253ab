//! What an `execute(input, options)` call was given, read and checked here, in the one crossing the call makes.
//!
//! JS sends the message as JSON text: the items it made of the input (a string is one user message, made in JS
//! because the log keeps that very object), `given`, what the options' checks read (`check_options`), and `input`,
//! a sketch of the input two levels deep when it was not a string, by which the checks name what it was. The
//! options' `deliveryMode` and `resourceId` cross as JSON reads them, as before. Checks run in the order the call
//! made them in JS: the initial step, the options, the thread, the message id, the input; then the items against
//! the item types, the message's own layers and its delivery mode.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{DeliveryMode, QueuedMessage};
use crate::error::{ConfigError, NoeticError};
use crate::items::parse_js_item;
use crate::js_sketch::Sketch;
use crate::js_text::from_js_json;
use crate::memory::registry::LayerSet;

/// The session a call without a `threadId` reaches.
pub const DEFAULT_THREAD_ID: &str = "__default__";

/// Why a message was not queued: a call's error, or an item that is not one.
pub enum Refused {
  Config(ConfigError),
  Item(NoeticError),
}

impl From<ConfigError> for Refused {
  fn from(error: ConfigError) -> Self {
    Self::Config(error)
  }
}

/// Read into fields, not a `Value` tree: one goes with every turn. Each item is kept as its own raw text, so a lone
/// surrogate in one stays as JS wrote it until the item is read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageJson {
  id: Option<Value>,
  #[serde(default)]
  given: Value,
  /// Present (even as `null`) only when the input was not a string.
  #[serde(default, deserialize_with = "present")]
  input: Option<Value>,
  #[serde(default)]
  items: Vec<Box<RawValue>>,
  #[serde(default)]
  checked: bool,
  mode: Option<Value>,
  resource_id: Option<Value>,
  memory: Option<Value>,
  state: Option<u64>,
}

fn present<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Option<Value>, D::Error> {
  Value::deserialize(de).map(Some)
}

fn options_error(message: String, hint: &str) -> ConfigError {
  ConfigError::new("INVALID_EXECUTE_OPTIONS", message, hint)
}

/// The thread a session call names (`threadId`, a sketch): the default when null or absent.
pub fn thread_of(thread: Sketch<'_>, call: &str) -> Result<String, ConfigError> {
  if thread.is_nullish() {
    return Ok(DEFAULT_THREAD_ID.to_owned());
  }
  thread.as_str().map(str::to_owned).ok_or_else(|| {
    ConfigError::new(
      "INVALID_THREAD_ID",
      format!("{call}: threadId must be a string, got {}.", thread.type_of()),
      "Pass a string threadId, or leave it out for the default session.",
    )
  })
}

/// As upstream's runner takes it: an item is an object, not an array, whose `type` is a string.
fn is_item(value: Sketch<'_>) -> bool {
  value.is_record() && value.field("type").as_str().is_some()
}

/// `input` when it was not a string: an item, or an array of items.
fn check_input(input: Sketch<'_>) -> Result<(), ConfigError> {
  let got = match input.as_array() {
    Some(items) if items.iter().all(|item| is_item(*item)) => return Ok(()),
    Some(_) => "an array holding a non-item",
    None if is_item(input) => return Ok(()),
    None if input.is_nullish() && !input.is_undefined() => "null",
    None => input.type_of(),
  };
  Err(ConfigError::new(
    "INVALID_EXECUTE_INPUT",
    format!("execute(input): input must be a string, an item or an array of items; got {got}."),
    "Pass the user's text, or items such as createMessage('hi', 'user').",
  ))
}

/// The options' checks on `given`, `[typeof options ('null' for null), a sketch of its threadId, typeof its
/// messageId]`: an object, a string `threadId` (the thread, returned) and a string `messageId`. Three facts rather
/// than a sketch of the options: this crosses with every turn, and a sketch cost JS several times what it checks.
fn check_options(given: &Value) -> Result<String, ConfigError> {
  let fact = |i: usize| given.get(i).and_then(Value::as_str).unwrap_or("undefined");
  let options = fact(0);
  if options != "object" {
    let message = format!("execute(input, options): options must be an object, got {options}.");
    return Err(options_error(message, "Pass { threadId, deliveryMode, ... } or leave options out."));
  }
  let thread = thread_of(given.get(1).map_or_else(Sketch::undefined, Sketch::of), "execute")?;
  let id = fact(2);
  if id != "undefined" && id != "string" {
    let message = format!("execute: messageId must be a string, got {id}.");
    return Err(options_error(message, "Pass a string id, or leave it out for a random one."));
  }
  Ok(thread)
}

/// The message in `text` with its thread, checked; `has_step` whether the harness has an initial step; `types`
/// the item types admitted when JS did not put the items to its schemas; `layers` reads the message's own memory
/// (layer descriptions, which name the host's functions); `default_mode` the harness's delivery mode.
pub fn read_message(
  text: &str,
  has_step: bool,
  types: crate::items::ItemTypes,
  layers: impl FnOnce(&Value) -> Result<LayerSet, ConfigError>,
  default_mode: DeliveryMode,
) -> Result<(String, QueuedMessage), Refused> {
  let message: MessageJson = from_js_json(text).map_err(|e| {
    ConfigError::new("INVALID_EXECUTE_INPUT", format!("execute: malformed message from JS: {e}"), "This is a bug.")
  })?;
  if !has_step {
    return Err(super::turns::no_step().into());
  }
  let thread = check_options(&message.given)?;
  if let Some(input) = &message.input {
    check_input(Sketch::of(input))?;
  }
  let types = types.unless_checked(message.checked);
  let items = message
    .items
    .iter()
    .map(|item| parse_js_item(item.get(), types).map(Arc::new))
    .collect::<Result<Vec<_>, _>>()
    .map_err(Refused::Item)?;
  let layers = match &message.memory {
    Some(memory @ Value::Array(_)) => Some(Arc::new(layers(memory)?)),
    _ => None,
  };
  let queued = QueuedMessage {
    id: message.id.as_ref().and_then(Value::as_str).unwrap_or_default().to_owned(),
    items,
    mode: DeliveryMode::given(message.mode.as_ref(), default_mode)?,
    resource_id: message.resource_id.as_ref().and_then(Value::as_str).map(str::to_owned),
    layers,
    state: message.state,
  };
  Ok((thread, queued))
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;
  use crate::items::ItemTypes;

  fn read(message: Value, has_step: bool) -> Result<(String, QueuedMessage), Refused> {
    read_message(&message.to_string(), has_step, ItemTypes::Known, |_| unreachable!(), DeliveryMode::NextTurn)
  }

  fn refused(message: Value) -> ConfigError {
    match read(message, true) {
      Err(Refused::Config(error)) => error,
      Err(Refused::Item(error)) => panic!("an item error: {}", error.message),
      Ok(_) => panic!("queued"),
    }
  }

  fn item() -> Value {
    json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "hi" }] })
  }

  #[test]
  fn a_harness_without_a_step_refuses_first() {
    let Err(Refused::Config(error)) = read(json!({ "given": ["string"], "items": [] }), false) else { panic!() };
    assert_eq!(error.code, "NO_STEP_CONFIGURED");
  }

  #[test]
  fn options_must_be_an_object_with_string_ids() {
    let error = refused(json!({ "given": ["null"] }));
    assert_eq!(
      (error.code.as_str(), error.message.as_str()),
      ("INVALID_EXECUTE_OPTIONS", "execute(input, options): options must be an object, got null.")
    );
    assert!(refused(json!({ "given": ["number"] })).message.ends_with("got number."));
    let function = json!({ "$sketch": "a function", "type": "function" });
    let error = refused(json!({ "given": ["object", function] }));
    assert_eq!(
      (error.code.as_str(), error.message.as_str()),
      ("INVALID_THREAD_ID", "execute: threadId must be a string, got function.")
    );
    assert_eq!(
      refused(json!({ "given": ["object", null, "object"] })).message,
      "execute: messageId must be a string, got object."
    );
  }

  #[test]
  fn input_is_an_item_or_items_and_names_what_it_was() {
    for (input, got) in [
      (json!(null), "null"),
      (json!(false), "boolean"),
      (json!(42), "number"),
      (json!({ "no": "type" }), "object"),
      (json!([item(), 7]), "an array holding a non-item"),
      (json!({ "$sketch": "undefined", "type": "undefined" }), "undefined"),
    ] {
      let error = refused(json!({ "given": ["object"], "input": input, "items": [] }));
      assert_eq!(error.code, "INVALID_EXECUTE_INPUT");
      assert!(error.message.ends_with(&format!("got {got}.")), "{}", error.message);
    }
  }

  #[test]
  fn a_good_message_reads_its_thread_items_and_mode() {
    let message = json!({ "id": "m1", "given": ["object", "t", "undefined"], "input": [item()], "items": [item()], "mode": "interrupt" });
    let Ok((thread, queued)) = read(message, true) else { panic!() };
    assert_eq!((thread.as_str(), queued.id.as_str(), queued.items.len()), ("t", "m1", 1));
    assert_eq!(queued.mode, DeliveryMode::Interrupt);
    let Ok((thread, _)) = read(json!({ "given": ["object", null] }), true) else { panic!() };
    assert_eq!(thread, DEFAULT_THREAD_ID);
    let Err(Refused::Item(_)) = read(json!({ "given": ["object"], "items": [{ "type": "mystery" }] }), true) else {
      panic!()
    };
  }
}
