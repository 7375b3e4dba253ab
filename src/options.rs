//! The checks of a user's options as JS calls them (the harness's, a step builder's): a sketch of
//! the options in (`js/sketch.cjs`), the checked settings out, or the NoeticConfigError of the first bad option.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

use noetic_runtime::harness::api_checks;
use noetic_runtime::harness::options::{self, METHOD_NAMES, ModelEnv, OPTION_KEYS};
use noetic_runtime::js_sketch::Sketch;
use noetic_runtime::js_text::from_js_json;
use noetic_runtime::steps::builders;

use crate::protocol::{config_json, to_napi};

/// The option keys the checks read, and the method names they ask adapters about: what JS puts in the sketch.
#[napi(skip_typescript)]
pub fn harness_option_names() -> Value {
  serde_json::json!({
    "keys": OPTION_KEYS,
    "methods": METHOD_NAMES,
    "stepMethods": builders::METHOD_NAMES,
    "argMethods": api_checks::ARG_METHODS,
    "storageMethods": noetic_runtime::storage::STORAGE_METHODS,
  })
}

/// `env_api_key` and `env_base_url`: OPENROUTER_API_KEY and OPENROUTER_BASE_URL as JS's environment has them.
#[napi(catch_unwind, skip_typescript)]
pub fn harness_settings(sketch: Value, env_api_key: Option<String>, env_base_url: Option<String>) -> Result<Value> {
  let env = ModelEnv { api_key: env_api_key.as_deref(), base_url: env_base_url.as_deref() };
  options::checked(&sketch, &env).map_err(|e| to_napi(config_json(&e)))
}

/// A step builder's options (`builder`: `"step.run"`, `"loop"`, `"tool"`, ...), checked as upstream's builder
/// checks them; the method names the checks ask about are `builders::METHOD_NAMES`.
#[napi(catch_unwind, skip_typescript)]
pub fn check_step_options(builder: String, sketch: Value) -> Result<()> {
  builders::check(&builder, Sketch::of(&sketch)).map_err(|e| to_napi(config_json(&e)))
}

/// The options of `createContext` or `harness.run` (`call`: `"createContext"` or `"run"`), checked.
#[napi(catch_unwind, skip_typescript)]
pub fn check_call_options(call: String, sketch: String) -> Result<()> {
  let sketch: Value = from_js_json(&sketch).map_err(|e| Error::from_reason(e.to_string()))?;
  options::check_call_options(&call, Sketch::of(&sketch)).map_err(|e| to_napi(config_json(&e)))
}

/// A public call's arguments (`call` names it: `"createSqliteStorage"`, `"seedSessionHistory"`, ...), sketched as an
/// array as JSON text (napi converts an object several times slower than JSON crosses), checked
/// (`harness/api_checks.rs`).
#[napi(catch_unwind, skip_typescript)]
pub fn check_args(call: String, args: String) -> Result<()> {
  let args: Value = from_js_json(&args).map_err(|e| Error::from_reason(e.to_string()))?;
  api_checks::check(&call, Sketch::of(&args)).map_err(|e| to_napi(config_json(&e)))
}
