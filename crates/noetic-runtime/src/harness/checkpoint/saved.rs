//! A snapshot given back by the host for a restore: the runtime picks, in the context's layer order, which saved
//! states are built-in layers' (read as JSON from the host's snapshot) and which are the host's own (it puts them
//! back itself: they are JS values, which need not survive JSON), and reads the counters.

use serde_json::Value;

use super::{Restored, SavedUsage, mismatch};
use crate::error::ConfigError;
use crate::harness::{ExecContext, Runner};
use crate::memory::lifecycle::RestoredStates;
use crate::memory::registry::LayerImpl;

/// A restore that could not be done: the snapshot is refused, or reading a state from the host failed.
#[derive(Debug)]
pub enum RestoreError<E> {
  Refused(ConfigError),
  Host(E),
}

impl Runner {
  /// Restores `ctx` from what the host sends, `{layers: [id], usage?}` (`layers`: the ids the snapshot has a state
  /// for). `native_state` reads a built-in layer's saved state as JSON (`None` when it is `undefined`). Answers the
  /// host's layers whose states it puts back, in the context's order.
  pub fn restore_saved<E>(
    &self,
    ctx: &ExecContext,
    saved: &Value,
    mut native_state: impl FnMut(&str) -> Result<Option<Value>, E>,
  ) -> Result<Vec<String>, RestoreError<E>> {
    let usage = match saved.get("usage") {
      None | Some(Value::Null) => None,
      Some(usage) => Some(serde_json::from_value::<SavedUsage>(usage.clone()).map_err(|_| {
        RestoreError::Refused(mismatch(&ctx.id, "its usage is not {stepCount, tokens: {input, output}, cost}"))
      })?),
    };
    let ids: Vec<&str> =
      saved.get("layers").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut layers = RestoredStates::default();
    for layer in ctx.layers().layers().iter().filter(|layer| ids.contains(&layer.id())) {
      match &layer.imp {
        LayerImpl::Native(_) => {
          if let Some(state) = native_state(layer.id()).map_err(RestoreError::Host)? {
            layers.native.insert(layer.id().to_owned(), state);
          }
        }
        LayerImpl::Host(_) => layers.host.push(layer.id().to_owned()),
      }
    }
    let host = layers.host.clone();
    self.restore_checkpoint(ctx, &Restored { layers, usage }).map_err(RestoreError::Refused)?;
    Ok(host)
  }
}
