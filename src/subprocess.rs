//! The registry behind `createInMemorySubprocessAdapter()` as its JS wrapper (`js/subprocess.cjs`) sees it: one
//! sync call per transition, answered with the handle's new state, or `null` when the transition does not apply.
//! Internal: the wrapper is the public API.

use napi_derive::napi;
use noetic_runtime::adapters::subprocess::{HandleRecord, Outcome, SubprocessRegistry};
use noetic_runtime::js_date::iso_now;

/// A handle without its metadata, shaped as upstream's `SubprocessHandle` fields.
#[napi(object, js_name = "NativeSubprocessHandleState")]
pub struct HandleState {
  pub id: String,
  pub status: String,
  pub started_at: String,
  pub updated_at: String,
}

impl From<&HandleRecord> for HandleState {
  fn from(record: &HandleRecord) -> Self {
    Self {
      id: record.id.clone(),
      status: record.status.as_str().to_owned(),
      started_at: record.started_at.clone(),
      updated_at: record.updated_at.clone(),
    }
  }
}

#[napi(js_name = "NativeSubprocessRegistry")]
pub struct NativeSubprocessRegistry {
  inner: SubprocessRegistry,
}

#[napi]
impl NativeSubprocessRegistry {
  #[napi(constructor, catch_unwind)]
  pub fn new() -> Self {
    Self { inner: SubprocessRegistry::new() }
  }

  #[napi(catch_unwind)]
  pub fn spawn(&mut self) -> HandleState {
    (&self.inner.spawn(&iso_now())).into()
  }

  #[napi(catch_unwind)]
  pub fn get(&self, id: String) -> Option<HandleState> {
    self.inner.get(&id).map(Into::into)
  }

  /// A run ended, well (`ok`) or not.
  #[napi(catch_unwind)]
  pub fn settle(&mut self, id: String, ok: bool) -> Option<HandleState> {
    let outcome = if ok { Outcome::Completed } else { Outcome::Failed };
    self.inner.settle(&id, outcome, &iso_now()).as_ref().map(Into::into)
  }

  #[napi(catch_unwind)]
  pub fn stop(&mut self, id: String) -> Option<HandleState> {
    self.inner.stop(&id, &iso_now()).as_ref().map(Into::into)
  }

  #[napi(catch_unwind)]
  pub fn reattach(&mut self, id: String, started_at: String) -> HandleState {
    (&self.inner.reattach(&id, &started_at, &iso_now())).into()
  }

  /// The state of a handle known only from a manifest, without taking it in.
  #[napi(catch_unwind)]
  pub fn from_manifest(id: String, started_at: String) -> HandleState {
    (&HandleRecord::from_manifest(&id, &started_at, &iso_now())).into()
  }

  #[napi(catch_unwind)]
  pub fn is_alive(&self, id: String) -> bool {
    self.inner.is_alive(&id)
  }

  /// The live handles' ids, in the order they became live.
  #[napi(catch_unwind)]
  pub fn live_ids(&self) -> Vec<String> {
    self.inner.live().into_iter().map(|record| record.id.clone()).collect()
  }
}
