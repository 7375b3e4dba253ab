//! recall: every layer contributes items for this model call, in slot order, within its allocated budget. Atomic
//! layers are recalled here, in the hot path; eventual layers (D6) are served from the harness's cache instead,
//! which `eventual` refreshes in the background.

use std::collections::HashMap;
use std::sync::Arc;

use crate::host::{ExecInfo, HookArgs, HookBatch, HookStatus, RecallReply, WriteRule};
use crate::items::{Item, ItemTypes, check_item_type, create_message};
use crate::memory::native::{NativeLayer, NativeRecall, NativeWrite};
use crate::memory::registry::{Layer, LayerImpl};
use crate::memory::{HookKind, RecallMode, StateWrite};
use crate::tokens::estimate_tokens;

use super::eventual::{RecallCache, cache_key};
use super::{ExecScope, MemoryEnv, failure, host_call, status_of, within};
use crate::memory::trace::{SpanBudget, TraceTarget};

/// One layer's contribution: its items and the token count it reported (trusted as is, §9.1).
#[derive(Debug, Clone)]
pub struct RecallEntry {
  pub layer_id: String,
  pub slot: f64,
  pub items: Vec<Arc<Item>>,
  pub token_count: Option<f64>,
  /// The host keeps these very items under this key (a recall made with `keep_recalled`).
  pub host_key: Option<u32>,
}

/// How one layer's recall ended. A failure has already been reported as a diagnostic.
pub(super) enum Recalled {
  Entry(RecallEntry),
  Nothing,
  Failed,
}

/// The execution a recall reads state from, the context whose log its hooks see, and what they see of it.
pub(super) struct RecallTarget<'a> {
  pub exec: &'a str,
  pub context: &'a str,
  pub info: &'a ExecInfo,
  pub item_types: ItemTypes,
  /// Ask the host to keep the items its hooks return (see [`HookBatch::keep_recalled`]).
  pub keep_recalled: bool,
}

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

/// Recalls each `(layer, budget)`: built-ins in Rust, then every JS layer in one host batch. One outcome per layer,
/// in the order given, with the state write the host reported (applying it is the caller's decision).
pub(super) async fn recall_each(
  env: &MemoryEnv,
  target: &RecallTarget<'_>,
  layers: &[(&Layer, f64)],
  query: &str,
  write: WriteRule,
) -> Vec<(Recalled, StateWrite)> {
  let mut outcomes: Vec<(Recalled, StateWrite)> =
    layers.iter().map(|_| (Recalled::Failed, StateWrite::Unchanged)).collect();
  let mut batch = HookBatch::new(HookKind::Recall, target.context.to_owned(), target.info.clone());
  batch.keep_recalled = target.keep_recalled;
  let mut batch_index = Vec::new();
  for (index, &(layer, budget)) in layers.iter().enumerate() {
    match &layer.imp {
      LayerImpl::Native(native) => outcomes[index].0 = recall_native(env, target, layer, native, budget).await,
      LayerImpl::Host(_) => {
        let args = HookArgs::Recall { budget, query: query.to_owned() };
        if let Some(call) = host_call(layer, HookKind::Recall, write, args) {
          batch.calls.push(call);
          batch_index.push(index);
        }
      }
    }
  }
  let replies = env.run_batch(batch).await;
  for (index, reply) in batch_index.into_iter().zip(replies) {
    let layer = layers[index].0;
    if let Some(message) = failure(&reply.status) {
      env.diagnose(layer.id(), HookKind::Recall, &message);
      continue;
    }
    let kept = match &reply.recall {
      Some(RecallReply::Items { key, .. }) => *key,
      _ => None,
    };
    let recalled = match normalise(reply.recall, target.item_types) {
      Ok(Some((items, token_count, host_key))) => {
        Recalled::Entry(RecallEntry { host_key, ..entry(layer, items, token_count) })
      }
      Ok(None) => Recalled::Nothing,
      Err(message) => {
        // What the host kept for items that never became an entry is let go at once.
        if let Some(key) = kept {
          env.host.release_recalled(&[key]);
        }
        env.diagnose(layer.id(), HookKind::Recall, &message);
        Recalled::Failed
      }
    };
    outcomes[index] = (recalled, reply.state);
  }
  outcomes
}

/// A built-in recall, under the layer's recall timeout like a JS one, its state change (if any) applied.
async fn recall_native(
  env: &MemoryEnv,
  target: &RecallTarget<'_>,
  layer: &Layer,
  native: &Arc<dyn NativeLayer>,
  budget: f64,
) -> Recalled {
  let state = env.state_json(target.exec, layer.id());
  let started = std::time::Instant::now();
  let (outcome, status) =
    match within(layer.spec.timeout_ms(HookKind::Recall), native.recall(state.as_ref(), budget, target.info)).await {
      Ok(outcome) => {
        let status = status_of(&outcome);
        (outcome, status)
      }
      Err(ms) => (Err(format!("Timeout after {}ms", crate::js_number(ms))), HookStatus::TimedOut(ms)),
    };
  let trace =
    TraceTarget { trace_id: &target.info.trace_id, context: target.context, thread_id: &target.info.thread_id };
  if let Some(mut span) = env.native_span(trace, layer, HookKind::Recall, started, &status) {
    if let Ok(recalled) = &outcome {
      let used = recalled.as_ref().map_or(0.0, |recalled| recalled.token_count);
      span.item_count = Some(usize::from(recalled.is_some()));
      span.budget = Some(SpanBudget::new(budget, used));
    }
    env.sink.trace(vec![span]);
  }
  let made = match outcome {
    Ok(Some(NativeRecall { text, token_count, state })) => {
      if let Some(state) = state {
        super::store::apply_native(env, target.exec, layer.id(), NativeWrite::Set(state));
      }
      create_message(&text, "developer").map(|item| Some((item, token_count))).map_err(|error| error.message)
    }
    Ok(None) => Ok(None),
    Err(message) => Err(message),
  };
  match made {
    Ok(Some((item, token_count))) => Recalled::Entry(entry(layer, vec![Arc::new(item)], Some(token_count))),
    Ok(None) => Recalled::Nothing,
    Err(message) => {
      env.diagnose(layer.id(), HookKind::Recall, &message);
      Recalled::Failed
    }
  }
}

fn entry(layer: &Layer, items: Vec<Arc<Item>>, token_count: Option<f64>) -> RecallEntry {
  RecallEntry { layer_id: layer.spec.id.clone(), slot: layer.spec.slot, items, token_count, host_key: None }
}

/// A layer's recalled items, its self-reported token count, and the key the host keeps the items under.
type RecalledItems = (Vec<Arc<Item>>, Option<f64>, Option<u32>);

/// Turns a recall reply into items: the string shorthand becomes one developer message costed by its raw text.
fn normalise(reply: Option<RecallReply>, types: ItemTypes) -> Result<Option<RecalledItems>, String> {
  match reply {
    None | Some(RecallReply::Nothing) => Ok(None),
    Some(RecallReply::Text(text)) if text.is_empty() => Ok(None),
    Some(RecallReply::Text(text)) => {
      let item = create_message(&text, "developer").map_err(|e| e.message)?;
      Ok(Some((vec![Arc::new(item)], Some(estimate_tokens(&text) as f64), None)))
    }
    Some(RecallReply::Items { items, token_count, checked, key }) => {
      let types = types.unless_checked(checked);
      let mut parsed = Vec::with_capacity(items.len());
      for text in items {
        let item = Item::from_json_text(&text).map_err(|e| e.to_string())?;
        check_item_type(&item, types).map_err(|e| e.message)?;
        parsed.push(Arc::new(item));
      }
      Ok(Some((parsed, token_count, key)))
    }
  }
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
