//! renderDelta (prompt-cache anchoring, DECISIONS K8): a changed pinned layer words its own change for the update
//! message. Every asked layer is one call of one host batch; a hook that fails, times out or answers no text leaves
//! the full text in place (upstream 5.x: the update is owed, so a hook's failure never drops it). No state is written
//! and no diagnostic is made (upstream swallows the failure); a traced harness shows each call's span.

use std::collections::HashMap;

use crate::host::{HookArgs, HookBatch, HookStatus, ItemsJson, WriteRule};
use crate::memory::HookKind;
use crate::memory::cache_anchor::DeltaAsk;

use super::{ExecScope, MemoryEnv, host_call};

/// Each ask's text, in order: `None` where the layer's hook gave none. No crossing when no ask has a JS hook.
pub async fn render_deltas(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  asks: &[DeltaAsk],
  budgets: &HashMap<String, f64>,
) -> Vec<Option<String>> {
  let mut batch = HookBatch::new(HookKind::RenderDelta, scope.context.to_owned(), scope.info.clone());
  let mut called = Vec::new();
  for (at, ask) in asks.iter().enumerate() {
    let Some(layer) = scope.layers.get(&ask.layer_id) else { continue };
    if !layer.has(HookKind::RenderDelta) || env.skipped(scope.exec_id(), layer) {
      continue;
    }
    let args = HookArgs::RenderDelta {
      prev: ItemsJson(ask.prev.clone()),
      next: ItemsJson(ask.next.clone()),
      budget: budgets.get(&ask.layer_id).copied().unwrap_or(0.0),
    };
    if let Some(call) = host_call(layer, HookKind::RenderDelta, WriteRule::Never, args) {
      batch.calls.push(call);
      called.push(at);
    }
  }
  let mut texts = vec![None; asks.len()];
  let replies = env.run_batch(batch).await;
  for (at, reply) in called.into_iter().zip(replies) {
    if reply.status == HookStatus::Ok {
      texts[at] = reply.result.as_ref().and_then(|value| value.as_text()).map(str::to_owned);
    }
  }
  texts
}
