//! The end of an execution (D15): onComplete with its outcome, then dispose in reverse slot order, then the
//! execution's state is dropped so that memory does not grow turn after turn.

use crate::host::{HookArgs, HookBatch, WriteRule};
use crate::memory::HookKind;
use std::sync::Arc;

use crate::memory::registry::{Layer, LayerImpl};

use super::{ExecScope, MemoryEnv, host_call};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
  Success,
  Failure,
  Aborted,
}

impl Outcome {
  pub fn as_str(self) -> &'static str {
    match self {
      Self::Success => "success",
      Self::Failure => "failure",
      Self::Aborted => "aborted",
    }
  }
}

pub async fn complete_layers(env: &MemoryEnv, scope: &ExecScope<'_>, outcome: Outcome) {
  let exec = scope.exec_id().to_owned();
  for layer in env.participants(scope, HookKind::OnComplete) {
    if let LayerImpl::Native(native) = &layer.imp {
      let state = env.state_json(&exec, layer.id());
      let complete = native.on_complete(state.as_ref(), outcome.as_str());
      env.write_native(scope.trace_target(), &exec, layer, HookKind::OnComplete, complete).await;
    }
  }
  run_host_only(env, scope, HookKind::OnComplete, WriteRule::IfKeyPresent, || HookArgs::OnComplete {
    outcome: outcome.as_str(),
  })
  .await;
  env.states.flush(scope.exec_id()).await;
}

/// dispose, then flush and drop the execution's states.
pub async fn dispose_layers(env: &MemoryEnv, scope: &ExecScope<'_>) {
  run_host_only(env, scope, HookKind::Dispose, WriteRule::Never, || HookArgs::Dispose).await;
  let exec = scope.exec_id();
  env.states.flush(exec).await;
  end_execution(env, scope.layers.layers(), exec);
}

/// Drops the execution's states, and tells the built-ins, which may keep something of their own for it.
pub fn end_execution(env: &MemoryEnv, layers: &[Arc<Layer>], exec: &str) {
  env.states.cleanup(exec);
  let mut host_layers = false;
  for layer in layers {
    match &layer.imp {
      LayerImpl::Native(native) => native.execution_ended(exec),
      LayerImpl::Host(_) => host_layers = true,
    }
  }
  // The host holds its layers' states too; a context that outlives the execution (createContext, a session's
  // history) is not released, so it is told.
  if host_layers {
    env.host.execution_ended(exec);
  }
}

/// The JS layers of a phase, in one batch (the built-ins have no dispose, and run their onComplete natively).
async fn run_host_only(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  hook: HookKind,
  write: WriteRule,
  args: impl Fn() -> HookArgs,
) {
  let exec = scope.exec_id().to_owned();
  let mut batch = HookBatch::new(hook, scope.context.to_owned(), scope.info.clone());
  let mut batch_layers = Vec::new();
  for layer in env.participants(scope, hook) {
    if matches!(layer.imp, LayerImpl::Host(_))
      && let Some(call) = host_call(layer, hook, write, args())
    {
      batch.calls.push(call);
      batch_layers.push(layer);
    }
  }
  let replies = env.run_batch(batch).await;
  env.settle(&exec, hook, batch_layers, replies);
}
