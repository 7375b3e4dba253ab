//! recall: every layer contributes items for this model call, in slot order, within its allocated budget. Atomic
//! layers are recalled here, in the hot path; eventual layers (D6) are served from the harness's cache instead,
//! which `eventual` refreshes in the background.

use std::collections::HashMap;

use crate::host::WriteRule;
use crate::memory::registry::Layer;
use crate::memory::{HookKind, RecallMode};

use super::eventual::{RecallCache, cache_key};
use super::recall_each::{RecallEntry, RecallTarget, Recalled, recall_each};
use super::{ExecScope, MemoryEnv};

/// Recalls every layer with a `recall` hook that passes the gate. Entries come back in slot order, ties in array
/// order, whichever way each was obtained. With a `cache`, eventual layers are served from it (nothing while cold)
/// and never recalled here; without one (`forceAtomicRecall`), every layer is atomic.
pub async fn recall_layers(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  budgets: &HashMap<String, f64>,
  query: &str,
  cache: Option<&RecallCache>,
  keep_recalled: bool,
) -> Vec<RecallEntry> {
  let exec = scope.exec_id();
  let layers = env.participants(scope, HookKind::Recall);
  let budget_of = |layer: &Layer| budgets.get(layer.id()).copied().unwrap_or(0.0);
  let mut slots: Vec<Option<RecallEntry>> = vec![None; layers.len()];
  let mut atomic = Vec::with_capacity(layers.len());
  for (index, layer) in layers.iter().enumerate() {
    match cache {
      Some(cache) if layer.spec.recall_mode == RecallMode::Eventual => {
        slots[index] = cache.serve(exec, &cache_key(scope, layer), layer, budget_of(layer));
      }
      _ => atomic.push((index, &***layer, budget_of(layer))),
    }
  }
  let targets: Vec<(&Layer, f64)> = atomic.iter().map(|&(_, layer, budget)| (layer, budget)).collect();
  let target =
    RecallTarget { exec, context: scope.context, info: &scope.info, item_types: scope.item_types, keep_recalled };
  let results = recall_each(env, &target, &targets, query, WriteRule::IfDefined).await;
  for ((index, layer, _), (recalled, write)) in atomic.into_iter().zip(results) {
    env.apply_host_write(exec, layer.id(), write);
    if let Recalled::Entry(entry) = recalled {
      slots[index] = Some(entry);
    }
  }
  slots.into_iter().flatten().collect()
}

/// Recalls again the layers re-render requests select (§13.2, D23: every request of one append pipeline is
/// coalesced into one recall, whatever its timing) and merges them into `recalled`: a layer's fresh entry replaces
/// its old one, a new one joins, and entries stay in slot order. A layer whose recall fails or gives nothing now
/// keeps its old entry.
pub async fn rerender_layers(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  requests: &[(String, f64, crate::host::RerenderRequest)],
  budgets: &HashMap<String, f64>,
  query: &str,
  recalled: &mut Vec<RecallEntry>,
) {
  use crate::host::RerenderScope;
  if requests.is_empty() {
    return;
  }
  let exec = scope.exec_id();
  let selected = |layer: &Layer| {
    requests.iter().any(|(id, slot, request)| match request.scope {
      RerenderScope::OnlySelf => layer.id() == id,
      RerenderScope::SlotAfter => layer.spec.slot >= *slot,
      RerenderScope::All => true,
    })
  };
  let layers: Vec<(&Layer, f64)> = scope
    .layers
    .in_slot_order()
    .filter(|layer| layer.has(HookKind::Recall) && !env.skipped(exec, layer) && selected(layer))
    .map(|layer| (&**layer, budgets.get(layer.id()).copied().unwrap_or(0.0)))
    .collect();
  let target = RecallTarget {
    exec,
    context: scope.context,
    info: &scope.info,
    item_types: scope.item_types,
    keep_recalled: false,
  };
  let outcomes = recall_each(env, &target, &layers, query, WriteRule::IfDefined).await;
  for ((layer, _), (recalled_now, write)) in layers.iter().zip(outcomes) {
    if !matches!(recalled_now, Recalled::Failed) {
      env.apply_host_write(exec, layer.id(), write);
    }
    let Recalled::Entry(entry) = recalled_now else { continue };
    match recalled.iter_mut().find(|old| old.layer_id == entry.layer_id) {
      Some(old) => *old = entry,
      None => recalled.push(entry),
    }
  }
  recalled.sort_by(|a, b| a.slot.total_cmp(&b.slot));
}
