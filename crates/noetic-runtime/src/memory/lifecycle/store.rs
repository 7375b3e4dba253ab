//! store: after a response is accepted, every layer sees the new items. JS store hooks may run concurrently, but
//! their results are applied in slot order (D2).

use std::sync::Arc;

use crate::host::{HookArgs, HookBatch, NewItems, WriteRule};
use crate::items::Item;
use crate::memory::HookKind;
use crate::memory::native::NativeWrite;
use crate::memory::registry::LayerImpl;
use crate::memory::state::StateValue;

use super::{ExecScope, MemoryEnv, host_call};

/// `response` holds the new items, which are also the log positions `[from, to)` when `response_range` is given
/// (otherwise they are sent as they are: `ctx.harness.storeLayers` with a response of its own).
/// `host_has_items`: the response came from the host (a JS test model), which holds its items already.
pub async fn store_layers(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  response: &[Arc<Item>],
  response_range: Option<(usize, usize)>,
  usage: serde_json::Value,
  host_has_items: bool,
) {
  let exec = scope.exec_id().to_owned();
  let usage = Arc::new(usage);
  let layers = env.participants(scope, HookKind::Store);
  let mut batch = HookBatch::new(HookKind::Store, scope.context.to_owned(), scope.info.clone());
  let mut batch_layers = Vec::new();
  for layer in layers {
    match &layer.imp {
      LayerImpl::Native(native) => {
        let state = env.state_json(&exec, layer.id());
        let store = native.store(state.as_ref(), response, &scope.info);
        env.write_native(scope.trace_target(), &exec, layer, HookKind::Store, store).await;
      }
      LayerImpl::Host(_) => {
        let (response_from, response_to) = response_range.unwrap_or_default();
        let args = HookArgs::Store { response_from, response_to, usage: Arc::clone(&usage) };
        if let Some(call) = host_call(layer, HookKind::Store, WriteRule::IfKeyPresent, args) {
          batch.calls.push(call);
          batch_layers.push(layer);
        }
      }
    }
  }
  if !batch.calls.is_empty() && !host_has_items {
    let items = response.iter().map(|item| item.to_json_text()).collect();
    match response_range {
      Some((from, _)) => batch.new_items = Some(NewItems { from, items }),
      None => batch.items = Some(items),
    }
  }
  let replies = env.run_batch(batch).await;
  env.settle(&exec, HookKind::Store, batch_layers, replies);
  env.states.flush(&exec).await;
}

pub(super) fn apply_native(env: &MemoryEnv, exec: &str, layer: &str, write: NativeWrite) {
  match write {
    NativeWrite::Unchanged => {}
    NativeWrite::Set(value) => env.states.set(exec, layer, StateValue::Json(value), None, &env.sink),
    NativeWrite::Clear => env.states.set(exec, layer, StateValue::Undefined, None, &env.sink),
  }
}
