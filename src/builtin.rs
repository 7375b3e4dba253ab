//! The built-in layers' JS faces: their factories' answers and their hooks' steps, for JS code that calls
//! `layer.hooks.x(...)` directly (in a harness the runtime calls them natively). Everything is decided in
//! `noetic_runtime::memory::builtin::faces`; this converts.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

use noetic_runtime::js_sketch::Sketch;
use noetic_runtime::memory::builtin::faces::{self, steps::HookError};
use noetic_runtime::memory::builtin::{tool_memory, working_memory as wm};

use crate::protocol::{config_json, to_napi};

/// A built-in layer's factory call: its config, sketched by JS, checked, and answered as `{settings, layer,
/// members, callbacks}` (the settings JS holds, the metadata of upstream's layer object, the description of its
/// hooks and provided functions, the callbacks the harness may call). A bad config throws the NoeticConfigError
/// upstream's factory throws. `cwd` is the working directory fileReference takes a relative `baseDir` from.
#[napi(catch_unwind, skip_typescript)]
pub fn builtin_layer(kind: String, config: Value, cwd: Option<String>) -> Result<Value> {
  match faces::builtin_layer(&kind, Sketch::of(&config), cwd.as_deref().unwrap_or("")) {
    Some(answer) => answer.map_err(|e| to_napi(config_json(&e))),
    None => Err(Error::new(Status::InvalidArg, format!("no built-in layer '{kind}'"))),
  }
}

/// `toolMemoryLayer(tools, opts)`, its arguments sketched by JS as JSON text: each layer's metadata and the index
/// of the tool whose memory it runs, as JSON text (`memory::builtin::tool_memory`).
#[napi(catch_unwind, skip_typescript)]
pub fn tool_memory_layers(args: String) -> Result<String> {
  let args: Value = serde_json::from_str(&args).map_err(|e| Error::new(Status::InvalidArg, e.to_string()))?;
  let layers = tool_memory::layers(Sketch::of(&args)).map_err(|e| to_napi(config_json(&e)))?;
  Ok(Value::Array(layers).to_string())
}

/// After a built-in hook's params failed to convert: the NoeticConfigError naming the value that is not JSON
/// (`params` sketched with every level and instance), or nothing when none is found.
#[napi(catch_unwind, skip_typescript)]
pub fn check_hook_params(kind: String, hook: String, params: Value) -> Result<()> {
  match faces::hook_params_error(&kind, &hook, Sketch::of(&params)) {
    Some(error) => Err(to_napi(config_json(&error))),
    None => Ok(()),
  }
}

/// One step of a built-in layer's hook called directly from JS (`faces::hook`): the next step as JSON. `config`
/// is the settings the face holds; `schema` workingMemory's zod check, called synchronously: `null` when a value
/// passes, else zod's message.
#[napi(catch_unwind, skip_typescript)]
pub fn builtin_hook(
  kind: String,
  hook: String,
  params: Value,
  config: Value,
  schema: Option<Function<Value, Value>>,
) -> Result<Value> {
  let check = |value: &Value| -> std::result::Result<(), String> {
    match schema.as_ref().map(|schema| schema.call(value.clone())) {
      None => Ok(()),
      Some(Ok(answer)) => wm::schema_verdict(answer),
      Some(Err(error)) => Err(error.reason.clone()),
    }
  };
  let check: Option<wm::SchemaCheck<'_>> = if schema.is_some() { Some(&check) } else { None };
  faces::hook(&kind, &hook, &params, &config, check).map_err(|error| match error {
    HookError::Failed(message) => Error::new(Status::GenericFailure, message),
    HookError::Config(error) => to_napi(config_json(&error)),
  })
}
