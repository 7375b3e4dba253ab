//! Reading a recorded call whole, for the page: its history is read back from the log it came from.

use crate::harness::Harness;
use crate::memory::{STATE_KEY, resolve_scope_key};
use crate::storage::scoped_key;

impl Harness {
  /// Recorded call `id` as JSON, with its history read back from the context that made it, or from its session's
  /// current context once that one has ended (a session's turns hand the one log on). `None` once no longer kept.
  pub fn inspected_call(&self, id: u64) -> Option<String> {
    let mut call = self.inspector.call(id)?;
    let ctx = self
      .context(&call.context)
      .or_else(|| self.existing_session(&call.thread_id).and_then(|session| session.context()));
    match ctx {
      Some(ctx) => call.window_items.read_history(Some(&ctx.state().log)),
      None => call.window_items.read_history(None),
    }
    serde_json::to_string(&call).ok()
  }
}

/// One of the harness's layers as the page's state panel shows it, for one thread: where its durable state lives.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InspectedLayer<'a> {
  pub id: &'a str,
  pub slot: f64,
  pub scope: &'static str,
  pub recall_mode: &'static str,
  /// `None` for an execution-scoped layer, whose state lives only as long as an execution.
  pub scope_key: Option<&'a str>,
  pub state_key: Option<String>,
}

impl Harness {
  /// The harness's layers, in the order they were given, with the storage key of their state for `thread_id`
  /// (what the next turn's init reads).
  pub fn inspected_layers<'a>(&'a self, thread_id: &'a str, resource_id: Option<&'a str>) -> Vec<InspectedLayer<'a>> {
    self
      .layers
      .layers()
      .iter()
      .map(|layer| {
        let spec = &layer.spec;
        let scope_key = spec.scope.is_durable().then(|| resolve_scope_key(spec.scope, thread_id, resource_id, ""));
        InspectedLayer {
          id: &spec.id,
          slot: spec.slot,
          scope: spec.scope.as_str(),
          recall_mode: spec.recall_mode.as_str(),
          scope_key,
          state_key: scope_key.map(|key| scoped_key(&spec.id, key, STATE_KEY)),
        }
      })
      .collect()
  }
}
