//! Checkpoints: the snapshot of a context the runtime writes, and what it takes back on a restore. JS puts in its
//! own values and keeps the snapshot in the user's `CheckpointStore` (`js/checkpoint.cjs`).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use noetic_runtime::harness::checkpoint::{Restored, SavedUsage, mismatch};
use noetic_runtime::memory::lifecycle::RestoredStates;
use serde_json::Value;

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

  /// Puts a snapshot back into `context`, a context just made for it: `restored` is `{nativeLayers: {id: state},
  /// hostLayers: [id], usage?}` JSON (JS has put its own layers' states back already).
  #[napi(catch_unwind)]
  pub fn restore_checkpoint(&self, context: String, restored: String) -> Result<()> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    let restored = parse(&restored)?;
    let bad = |why: &str| to_napi(config_json(&mismatch(&context, why)));
    let native = match restored.get("nativeLayers") {
      Some(Value::Object(states)) => states.iter().map(|(id, state)| (id.clone(), state.clone())).collect(),
      _ => Default::default(),
    };
    let host = match restored.get("hostLayers") {
      Some(Value::Array(ids)) => ids.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
      _ => Vec::new(),
    };
    let usage = match restored.get("usage") {
      None | Some(Value::Null) => None,
      Some(usage) => Some(
        serde_json::from_value::<SavedUsage>(usage.clone())
          .map_err(|_| bad("its usage is not {stepCount, tokens: {input, output}, cost}"))?,
      ),
    };
    let restored = Restored { layers: RestoredStates { native, host }, usage };
    self.inner.restore_checkpoint(&ctx, &restored).map_err(|e| to_napi(config_json(&e)))
  }
}
