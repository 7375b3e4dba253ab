//! `startInspector` as JS calls it: the runtime checks the options, serves the page and records
//! (`harness/inspect/server.rs`); this converts.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use serde_json::value::RawValue;

use noetic_runtime::harness::inspect::{given, options};
use noetic_runtime::js_sketch::Sketch;
use noetic_runtime::js_text::from_js_json;

use crate::guard::guarded;
use crate::harness::NativeHarness;
use crate::protocol::{config_json, to_napi};

#[napi]
impl NativeHarness {
  /// Starts the inspector with `options` (a sketch of what JS was given); resolves to the page's URL. `names`:
  /// `[[layerId, name], ...]` as JSON, the names JS has for the layers.
  #[napi(catch_unwind, ts_return_type = "Promise<string>")]
  pub fn inspector_start<'env>(
    &self,
    env: &'env Env,
    options: Value,
    names: String,
  ) -> Result<PromiseRaw<'env, String>> {
    let options = options::checked(Sketch::of(&options)).map_err(|e| to_napi(config_json(&e)))?;
    let names: Vec<(String, Box<RawValue>)> =
      from_js_json(&names).map_err(|e| Error::new(Status::InvalidArg, format!("malformed layer names: {e}")))?;
    let names = names.into_iter().map(|(id, name)| (id, name.get().to_owned())).collect();
    let listening = self.inner.start_inspector(options, names).map_err(|e| to_napi(config_json(&e)))?;
    env.spawn_future(guarded(async move { listening.await.map_err(|e| to_napi(config_json(&e))) }))
  }

  /// Stops recording at once; resolves when the server has stopped.
  #[napi(catch_unwind, ts_return_type = "Promise<void>")]
  pub fn inspector_close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
    let closing = self.inner.close_inspector();
    env.spawn_future(guarded(async move {
      closing.await;
      Ok(())
    }))
  }
}

/// Notes a thread id JS was given that holds a lone surrogate, as `JSON.stringify` wrote it: the inspector names the
/// thread so.
#[napi(catch_unwind, skip_typescript)]
pub fn note_given_thread_id(literal: String) -> Result<()> {
  given::note_given_thread_id(&literal).map_err(|message| Error::new(Status::InvalidArg, message))
}
