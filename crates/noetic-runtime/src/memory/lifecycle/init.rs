//! init: rehydrate each layer's state, then register durable targets for every non-`execution` layer.

use std::sync::Arc;

use crate::host::{HookArgs, HookBatch, WriteRule};
use crate::memory::registry::LayerImpl;
use crate::memory::state::{StateValue, StateWrite};
use crate::memory::{HookKind, OnInitError, STATE_KEY, resolve_scope_key, scoped_key};
use crate::storage::ScopedStorage;

use super::{ExecScope, MemoryEnv, failure, host_call};

/// A layer's init failed under `onInitError: 'throw'`: the execution must not run.
#[derive(Debug, Clone, PartialEq)]
pub struct InitFailure {
  pub layer_id: String,
  pub message: String,
  /// What the hook threw, when the host keeps it.
  pub error: Option<crate::host::HostRef>,
}

impl std::fmt::Display for InitFailure {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    write!(f, "memory layer '{}' failed to initialise: {}", self.layer_id, self.message)
  }
}

/// Runs init in slot order. Built-in layers run in Rust before the JS batch; a `throw` failure stops the layers
/// after it, as upstream's sequential loop does.
pub async fn init_layers(env: &MemoryEnv, scope: &ExecScope<'_>) -> Result<(), InitFailure> {
  let exec = scope.exec_id().to_owned();
  let key_of = |scope_kind| resolve_scope_key(scope_kind, scope.thread_id, scope.resource_id, &exec);
  let mut batch = HookBatch::new(HookKind::Init, scope.context.to_owned(), scope.info.clone());
  let mut batch_layers = Vec::new();
  for layer in scope.layers.in_slot_order().filter(|layer| layer.has(HookKind::Init)) {
    let scope_key = key_of(layer.spec.scope);
    match &layer.imp {
      LayerImpl::Native(native) => {
        let storage = ScopedStorage::new(Arc::clone(&env.storage), layer.id(), scope_key);
        match env.run_native(scope.trace_target(), layer, HookKind::Init, native.init(&storage)).await {
          Ok(state) => {
            let value = state.map_or(StateValue::Undefined, StateValue::Json);
            env.states.set(&exec, layer.id(), value, None, &env.sink);
          }
          Err(message) => fail(env, &exec, layer.id(), layer.spec.on_init_error, message, None)?,
        }
      }
      LayerImpl::Host(_) => {
        let args = HookArgs::Init { scope_key: scope_key.to_owned() };
        if let Some(mut call) = host_call(layer, HookKind::Init, WriteRule::Always, args) {
          call.stop_on_error = layer.spec.on_init_error == OnInitError::Throw;
          // The JS state is written before durable targets exist, so rehydrated state is not written back.
          call.persist = false;
          batch.calls.push(call);
          batch_layers.push(layer);
        }
      }
    }
  }
  let replies = env.run_batch(batch).await;
  for (layer, reply) in batch_layers.iter().zip(replies) {
    match failure(&reply.status) {
      None => {
        let write = match reply.state {
          StateWrite::Unchanged => StateWrite::Cleared,
          other => other,
        };
        env.apply_host_write(&exec, layer.id(), write);
      }
      Some(message) => fail(env, &exec, layer.id(), layer.spec.on_init_error, message, reply.error)?,
    }
  }
  register_durable_layers(env, scope);
  Ok(())
}

/// Every durable layer mirrors, with or without init (§5.3), children included (D16).
fn register_durable_layers(env: &MemoryEnv, scope: &ExecScope<'_>) {
  let exec = scope.exec_id();
  for layer in scope.layers.layers().iter().filter(|layer| layer.spec.scope.is_durable()) {
    let scope_key = resolve_scope_key(layer.spec.scope, scope.thread_id, scope.resource_id, exec);
    let key = scoped_key(layer.id(), scope_key, STATE_KEY);
    env.states.register_durable(exec, layer.id(), Arc::clone(&env.storage), key);
  }
}

/// Puts back the layer states a checkpoint saved, in place of init: a built-in's state as it was saved, and the
/// presence of a JS layer's (whose object the host has put back), so the gate lets those layers run; a layer the
/// checkpoint has no state for stays without one. Nothing is written back to durable storage, and later writes
/// mirror as they would have.
pub fn restore_layers(env: &MemoryEnv, scope: &ExecScope<'_>, saved: &RestoredStates) {
  let exec = scope.exec_id();
  for layer in scope.layers.layers().iter() {
    let value = match &layer.imp {
      LayerImpl::Native(_) => saved.native.get(layer.id()).cloned().map(StateValue::Json),
      LayerImpl::Host(_) => saved.host.iter().any(|id| id == layer.id()).then_some(StateValue::Host),
    };
    if let Some(value) = value {
      env.states.set(exec, layer.id(), value, None, &env.sink);
    }
  }
  register_durable_layers(env, scope);
}

/// The layer states of a checkpoint, as [`restore_layers`] takes them.
#[derive(Debug, Clone, Default)]
pub struct RestoredStates {
  /// Built-in layers' states, by layer id.
  pub native: std::collections::HashMap<String, serde_json::Value>,
  /// The JS layers whose state the host has put back.
  pub host: Vec<String>,
}

fn fail(
  env: &MemoryEnv,
  exec: &str,
  layer: &str,
  policy: OnInitError,
  message: String,
  error: Option<crate::host::HostRef>,
) -> Result<(), InitFailure> {
  env.diagnose(layer, HookKind::Init, &message);
  match policy {
    OnInitError::Disable => {
      env.states.disable(exec, layer);
      Ok(())
    }
    OnInitError::Throw => Err(InitFailure { layer_id: layer.to_owned(), message, error }),
  }
}
