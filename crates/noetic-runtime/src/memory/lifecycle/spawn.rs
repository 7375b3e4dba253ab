//! onSpawn and onReturn (§15.3): a spawn's child that inherits its parent's layers gets each layer's state, and
//! its first items, from the parent through onSpawn; when it succeeds, onReturn hands its state back and may
//! transform its output. Both run in slot order, JS layers of a phase in one batch.

use std::sync::Arc;

use crate::error::NoeticError;
use crate::host::{HookArgs, HookBatch, StepValue, StepValueRef, WriteRule};
use crate::items::{Item, parse_js_item};
use crate::memory::registry::LayerImpl;
use crate::memory::state::StateValue;
use crate::memory::{HookKind, STATE_KEY, resolve_scope_key, scoped_key};

use super::{ExecScope, MemoryEnv, failure, host_call};

/// Runs onSpawn for the layers the parent's gate lets through, writing each child state into the child's
/// execution; the items the hooks gave, in slot order, are the child's first. Durable layers mirror in the child
/// too (D16). An item that is not a valid item fails the spawn.
pub async fn spawn_layers(
  env: &MemoryEnv,
  parent: &ExecScope<'_>,
  child: &ExecScope<'_>,
) -> Result<Vec<Arc<Item>>, NoeticError> {
  let child_exec = child.exec_id().to_owned();
  let layers = env.participants(parent, HookKind::OnSpawn);
  let mut items: Vec<Vec<Arc<Item>>> = vec![Vec::new(); layers.len()];
  let mut batch = HookBatch::new(HookKind::OnSpawn, child.context.to_owned(), child.info.clone());
  let mut batch_index = Vec::new();
  for (index, layer) in layers.iter().enumerate() {
    match &layer.imp {
      LayerImpl::Native(native) => {
        let state = env.state_json(parent.exec_id(), layer.id());
        let hand_over = native.on_spawn(state.as_ref());
        env.write_native(child.trace_target(), &child_exec, layer, HookKind::OnSpawn, hand_over).await;
      }
      LayerImpl::Host(_) => {
        let args = HookArgs::OnSpawn { parent_exec: parent.exec_id().to_owned() };
        if let Some(call) = host_call(layer, HookKind::OnSpawn, WriteRule::ChildState, args) {
          batch.calls.push(call);
          batch_index.push(index);
        }
      }
    }
  }
  let replies = env.run_batch(batch).await;
  for (index, reply) in batch_index.into_iter().zip(replies) {
    let layer = layers[index];
    if let Some(message) = failure(&reply.status) {
      env.diagnose(layer.id(), HookKind::OnSpawn, &message);
      continue;
    }
    env.apply_host_write(&child_exec, layer.id(), reply.state);
    let types = child.item_types.unless_checked(reply.items_checked);
    for text in reply.items.iter().flatten() {
      items[index].push(Arc::new(parse_js_item(text, types)?));
    }
  }
  for layer in child.layers.layers().iter().filter(|layer| layer.spec.scope.is_durable()) {
    let scope_key = resolve_scope_key(layer.spec.scope, child.thread_id, child.resource_id, &child_exec);
    let key = scoped_key(layer.id(), scope_key, STATE_KEY);
    env.states.register_durable(&child_exec, layer.id(), Arc::clone(&env.storage), key);
  }
  Ok(items.into_iter().flatten().collect())
}

/// Runs onReturn for the layers that have a state in the child (a value: the parent's gate is not asked, as
/// upstream), each getting the output as the hooks before it left it; parent states they return are written to the
/// parent. Returns the output, transformed or not.
pub async fn return_layers(
  env: &MemoryEnv,
  parent: &ExecScope<'_>,
  child: &ExecScope<'_>,
  output: StepValue,
) -> StepValue {
  let (parent_exec, child_exec) = (parent.exec_id().to_owned(), child.exec_id().to_owned());
  let has_child_state =
    |layer: &str| matches!(env.states.get(&child_exec, layer), Some(StateValue::Host | StateValue::Json(_)));
  let layers: Vec<_> =
    child.layers.in_slot_order().filter(|layer| layer.has(HookKind::OnReturn) && has_child_state(layer.id())).collect();
  let mut batch = HookBatch::new(HookKind::OnReturn, parent.context.to_owned(), parent.info.clone());
  let mut called = Vec::new();
  let result = StepValueRef::from(&output);
  for layer in layers {
    // Built-ins hand their state back natively and leave the output alone.
    if let LayerImpl::Native(native) = &layer.imp {
      let Some(child_state) = env.state_json(&child_exec, layer.id()) else { continue };
      let parent_state = env.state_json(&parent_exec, layer.id());
      let hand_back = native.on_return(parent_state.as_ref(), &child_state);
      env.write_native(parent.trace_target(), &parent_exec, layer, HookKind::OnReturn, hand_back).await;
      continue;
    }
    let args = HookArgs::OnReturn { child_exec: child_exec.clone(), result: result.clone() };
    if let Some(call) = host_call(layer, HookKind::OnReturn, WriteRule::ParentState, args) {
      batch.calls.push(call);
      called.push(layer);
    }
  }
  let replies = env.run_batch(batch).await;
  let piped = replies.iter().rev().find_map(|reply| reply.result.clone());
  env.settle(&parent_exec, HookKind::OnReturn, called, replies);
  env.states.flush(&parent_exec).await;
  env.states.flush(&child_exec).await;
  piped.unwrap_or(output)
}
