//! onItemAppend: input items about to enter the log pass through the layers in slot order (D7), each layer
//! receiving what the one before it passed on. A layer may transform, drop or add items; once none are left, the
//! pipeline ends and later layers are not asked.
//!
//! Consecutive JS layers go to the host in one batch, which chains them there; built-in layers only observe, so
//! they run here on the items as they stand at their slot.
//!
//! TODO(D7, D23): only the step's input passes through here so far, not tool outputs or injected messages; a
//! `rerender` request is not acted on, because the recall that follows the input already sees the new state.

use std::sync::Arc;

use crate::error::NoeticError;
use crate::host::{HookArgs, HookBatch, HookStatus, WriteRule};
use crate::items::{Item, parse_js_item};
use crate::memory::HookKind;
use crate::memory::registry::{Layer, LayerImpl};

use super::store::apply_native;
use super::{ExecScope, MemoryEnv, host_call};

/// The items to append after every layer has had its say. An item a JS layer made that is not a valid item fails
/// the step, as an invalid item appended to the log would.
pub async fn append_items(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  items: Vec<Arc<Item>>,
) -> Result<Vec<Arc<Item>>, NoeticError> {
  let exec = scope.exec_id().to_owned();
  let layers = env.participants(scope, HookKind::OnItemAppend);
  let mut current = items;
  let mut next = 0;
  while next < layers.len() && !current.is_empty() {
    let layer = layers[next];
    if let LayerImpl::Native(native) = &layer.imp {
      let state = env.state_json(&exec, layer.id());
      let started = std::time::Instant::now();
      let outcome = native.on_item_append(state.as_ref(), &current).await;
      env.trace_native(scope.trace_target(), layer, HookKind::OnItemAppend, started, &outcome);
      match outcome {
        Ok(write) => apply_native(env, &exec, layer.id(), write),
        Err(message) => env.diagnose(layer.id(), HookKind::OnItemAppend, &message),
      }
      next += 1;
      continue;
    }
    let group: Vec<&Arc<Layer>> =
      layers[next..].iter().copied().take_while(|layer| matches!(layer.imp, LayerImpl::Host(_))).collect();
    next += group.len();
    current = run_host_group(env, scope, &exec, group, current).await?;
  }
  Ok(current)
}

/// One batch for a run of JS layers; the result is the last list a hook passed on.
async fn run_host_group(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  exec: &str,
  group: Vec<&Arc<Layer>>,
  items: Vec<Arc<Item>>,
) -> Result<Vec<Arc<Item>>, NoeticError> {
  let mut batch = HookBatch::new(HookKind::OnItemAppend, scope.context.to_owned(), scope.info.clone());
  let mut called = Vec::new();
  for layer in group {
    if let Some(call) = host_call(layer, HookKind::OnItemAppend, WriteRule::IfDefined, HookArgs::OnItemAppend) {
      batch.calls.push(call);
      called.push(layer);
    }
  }
  batch.items = Some(items.iter().map(|item| item.to_json_text()).collect());
  let replies = env.run_batch(batch).await;
  let passed_on = replies
    .iter()
    .rev()
    .find(|reply| reply.status == HookStatus::Ok)
    .and_then(|reply| reply.items.clone().map(|texts| (texts, scope.item_types.unless_checked(reply.items_checked))));
  env.settle(exec, HookKind::OnItemAppend, called, replies);
  match passed_on {
    Some((texts, types)) => texts.iter().map(|text| parse_js_item(text, types).map(Arc::new)).collect(),
    None => Ok(items),
  }
}
