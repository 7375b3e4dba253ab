//! The in-memory subprocess adapter as its JS wrapper (`js/subprocess.cjs`) calls it: sketches in, the runtime's
//! answers out as JSON, one sync call per adapter call. Internal: the wrapper is the public API.
//! `adapters::subprocess` decides.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde::Serialize;
use serde_json::{Value, json};

use noetic_runtime::adapters::subprocess::{InMemorySubprocess, serialized_error, serialized_value};
use noetic_runtime::js_date::iso_now;
use noetic_runtime::js_sketch::Sketch;

use crate::protocol::{config_json, to_napi};

fn json<T: Serialize>(value: T) -> Result<Value> {
  serde_json::to_value(value).map_err(|e| Error::from_reason(e.to_string()))
}

/// The layouts of upstream's `SerializedError`: `{ error, value }` for an `Error` and for anything else thrown.
#[napi(catch_unwind, skip_typescript)]
pub fn serialized_error_layouts() -> Result<Value> {
  Ok(json!({ "error": json(serialized_error())?, "value": json(serialized_value())? }))
}

#[napi(js_name = "NativeSubprocessRegistry")]
pub struct NativeSubprocessRegistry {
  inner: InMemorySubprocess,
}

#[napi]
impl NativeSubprocessRegistry {
  /// `createInMemorySubprocessAdapter(options)`, from a sketch of the options (checked).
  #[napi(constructor, catch_unwind)]
  pub fn new(options: Value) -> Result<Self> {
    let inner = InMemorySubprocess::new(Sketch::of(&options)).map_err(|e| to_napi(config_json(&e)))?;
    Ok(Self { inner })
  }

  #[napi(getter)]
  pub fn runs_inline(&self) -> bool {
    self.inner.runs_inline()
  }

  /// `spawn(request)`, from a sketch of what it needs (`InMemorySubprocess::spawn`).
  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn spawn(&mut self, facts: Value) -> Result<Value> {
    json(self.inner.spawn(Sketch::of(&facts), &iso_now()).map_err(|e| to_napi(config_json(&e)))?)
  }

  #[napi(catch_unwind)]
  pub fn abandon(&mut self, id: String) {
    self.inner.abandon(&id);
  }

  /// A run ended, well (`ok`) or not (with its serialized error's `code`); `null` when nothing changed.
  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn settle(&mut self, id: String, ok: bool, code: Option<String>) -> Result<Value> {
    json(self.inner.settle(&id, ok, code.as_deref(), &iso_now()))
  }

  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn stop(&mut self, id: String) -> Result<Value> {
    json(self.inner.stop(&id, &iso_now()))
  }

  #[napi(catch_unwind)]
  pub fn unsupported(&self, what: String) -> String {
    InMemorySubprocess::unsupported(&what)
  }

  /// Where `reattach(handleId)` reads (a sketch of the id); `null` without storage.
  #[napi(catch_unwind)]
  pub fn manifest_key(&self, handle_id: Value) -> Option<String> {
    self.inner.manifest_key(Sketch::of(&handle_id))
  }

  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn reattach(&mut self, facts: Value) -> Result<Value> {
    json(self.inner.reattach(Sketch::of(&facts), &iso_now()))
  }

  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn listing(&self) -> Result<Value> {
    json(self.inner.listing())
  }

  /// The handles of the manifests read (a sketch), those listed live by `listing` left out.
  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn listed(&self, manifests: Value, live: Vec<String>) -> Result<Value> {
    json(self.inner.listed(Sketch::of(&manifests), &live, &iso_now()))
  }

  #[napi(catch_unwind)]
  pub fn is_alive(&self, id: String) -> bool {
    self.inner.is_alive(&id)
  }

  #[napi(catch_unwind)]
  pub fn has_ended(&self, id: String) -> bool {
    self.inner.has_ended(&id)
  }
}
