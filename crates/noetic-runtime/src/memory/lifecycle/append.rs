//! onItemAppend: input items about to enter the log pass through the layers in slot order (D7).

use std::sync::Arc;

use crate::items::Item;
use crate::memory::HookKind;
use crate::memory::registry::LayerImpl;

use super::store::apply_native;
use super::{ExecScope, MemoryEnv};

// TODO(D7, D23): JS onItemAppend hooks (transform, drop, inject, re-render) cross in one batch here.
pub async fn append_items(env: &MemoryEnv, scope: &ExecScope<'_>, items: &[Arc<Item>]) {
  let exec = scope.exec_id().to_owned();
  for layer in env.participants(scope, HookKind::OnItemAppend) {
    if let LayerImpl::Native(native) = &layer.imp {
      let state = env.state_json(&exec, layer.id());
      match native.on_item_append(state.as_ref(), items).await {
        Ok(write) => apply_native(env, &exec, layer.id(), write),
        Err(message) => env.diagnose(layer.id(), HookKind::OnItemAppend, &message),
      }
    }
  }
}
