//! Checkpoints: the snapshot of a context the runtime writes, what it takes back on a restore, and the store's keys
//! and refusals. JS puts in its own values and keeps the snapshot in the user's `CheckpointStore`
//! (`js/checkpoint.cjs`).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use noetic_runtime::harness::checkpoint::{RestoreError, store};

use super::{NativeHarness, missing_context, parse};
use crate::protocol::{config_json, to_napi};

#[napi]
impl NativeHarness {
  /// The snapshot of `context`, as JSON, with what JS holds left for it to put in (see `Snapshot`).
  #[napi(catch_unwind)]
  pub fn checkpoint_snapshot(&self, context: String) -> Result<String> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    serde_json::to_string(&self.inner.snapshot(&ctx)).map_err(|e| Error::from_reason(e.to_string()))
  }

  /// Puts a snapshot back into `context`, a context just made for it (`Runner::restore_saved`): `saved` is
  /// `{layers: [id], usage?}` JSON, `native_state` gives a built-in layer's saved state as JSON text. Answers the
  /// JS layers whose states JS puts back.
  #[napi(catch_unwind)]
  pub fn restore_checkpoint(
    &self,
    context: String,
    saved: String,
    native_state: Function<String, Option<String>>,
  ) -> Result<Vec<String>> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    let read = |id: &str| native_state.call(id.to_owned())?.as_deref().map(parse).transpose();
    self.inner.restore_saved(&ctx, &parse(&saved)?, read).map_err(|error| match error {
      RestoreError::Refused(e) => to_napi(config_json(&e)),
      RestoreError::Host(e) => e,
    })
  }
}

/// Upstream's `CheckpointKeys` as JSON text.
#[napi(skip_typescript)]
pub fn checkpoint_keys() -> String {
  store::keys().to_string()
}

/// The execution ids among a storage's keys (JSON text), as `[{executionId}]` JSON text.
#[napi(catch_unwind, skip_typescript)]
pub fn checkpoint_ids(keys: String) -> Result<String> {
  Ok(store::execution_ids(&parse(&keys)?).to_string())
}

/// Why a stored snapshot cannot be restored (`store::refusal`), as the NoeticConfigError's JSON text.
#[napi(catch_unwind, skip_typescript)]
pub fn checkpoint_refusal(execution_id: String, reason: String) -> Result<String> {
  Ok(config_json(&store::refusal(&execution_id, &parse(&reason)?)).to_string())
}
