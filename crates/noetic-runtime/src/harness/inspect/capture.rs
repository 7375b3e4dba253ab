//! Turns what an LLM step knows once its model has answered into the inspector's record of the call.

use super::record::CacheRecord;
use crate::memory::cache_anchor::Bands;
use std::collections::HashMap;
use std::sync::Arc;

use super::record::{
  CallUsage, HistoryRecord, HistoryRun, LayerRecord, ModelCallRecord, SteeringRecord, ToolCallRecord, WindowItems,
  WindowRecord,
};
use crate::harness::ExecContext;
use crate::harness::usage::FixedCosts;
use crate::items::Item;
use crate::memory::lifecycle::RecallEntry;
use crate::memory::registry::LayerSet;
use crate::memory::{HookKind, Overflow, ProjectionPolicy, RecallMode};
use crate::provider::Round;
use crate::steps::LlmStep;

/// What the projection made of the window (the LLM step's `project` fills it only while the inspector is open).
#[derive(Debug, Clone, Default)]
pub struct WindowShape {
  /// Per layer item of the recall (in recall order, flattened), whether the window kept it, and its cost.
  pub layer_items: Vec<(bool, u64)>,
  pub history_total: usize,
  pub history_kept: usize,
  pub history_tokens: u64,
  pub dropped: usize,
  pub summarized: bool,
  pub projected: bool,
  /// The window's own items: system messages, the overflow summary when one stood in, and the history kept (shared
  /// with the log, not copied).
  pub system_items: Vec<Arc<Item>>,
  pub summary_item: Option<Arc<Item>>,
  pub history_runs: Vec<HistoryRun>,
  /// The newest of the dropped items, nearest the window (at most [`DROPPED_SHOWN`]).
  pub dropped_items: Vec<Arc<Item>>,
}

/// How many dropped items a record keeps to show: enough to see what went, not the whole of a long thread.
pub const DROPPED_SHOWN: usize = 50;

/// Everything the record is made of.
pub struct CallFacts<'a> {
  pub id: u64,
  pub ctx: &'a ExecContext,
  pub step: &'a LlmStep,
  /// What the step's instructions and tools take of the window.
  pub fixed: FixedCosts,
  pub layers: &'a LayerSet,
  pub budgets: &'a HashMap<String, f64>,
  /// The recall entries' layer ids in recall order, each with its item count: how `shape.layer_items` divides.
  pub recall_order: &'a [(String, usize)],
  /// The layers' recall entries after the call (the tool loop may have recalled again between its rounds).
  pub recalled: &'a [RecallEntry],
  pub shape: WindowShape,
  pub policy: &'a ProjectionPolicy,
  pub response: &'a Round,
  pub steering: Option<SteeringRecord>,
  pub at: f64,
  pub duration_ms: f64,
  /// With `contextCache`, the request's bands.
  pub bands: Option<&'a Bands>,
}

pub fn capture(facts: CallFacts<'_>) -> ModelCallRecord {
  let shape = &facts.shape;
  // Which of each layer's items the window kept, and what those cost, from the flattened shape. A few entries
  // (one per layer that recalled): scanned, not hashed.
  let mut kept: Vec<(&str, usize, u64)> = Vec::with_capacity(facts.recall_order.len());
  let mut items = shape.layer_items.iter();
  for (layer_id, count) in facts.recall_order {
    let (mut n, mut cost) = (0, 0);
    for &(was_kept, item_cost) in items.by_ref().take(*count) {
      if was_kept {
        n += 1;
        cost += item_cost;
      }
    }
    match kept.iter_mut().find(|entry| entry.0 == layer_id) {
      Some(entry) => (entry.1, entry.2) = (entry.1 + n, entry.2 + cost),
      None => kept.push((layer_id, n, cost)),
    }
  }
  let layers: Vec<LayerRecord> = facts
    .layers
    .in_slot_order()
    .map(|layer| {
      let id = layer.id();
      let budget = facts.budgets.get(id).copied().unwrap_or(0.0);
      // The figures lastLayerUsage gives for this call: a layer's last entry, when it recalled twice.
      let entry = facts.recalled.iter().rev().find(|entry| entry.layer_id == id);
      let used = entry.and_then(|entry| entry.token_count);
      LayerRecord {
        id: id.to_owned(),
        slot: layer.spec.slot,
        scope: layer.spec.scope.as_str(),
        recall_mode: match layer.spec.recall_mode {
          RecallMode::Atomic => "atomic",
          RecallMode::Eventual => "eventual",
        },
        budget,
        used,
        yielded: (budget - used.unwrap_or(0.0)).max(0.0),
        items: entry.map(|entry| entry.items.clone()).unwrap_or_default(),
        kept: kept.iter().find(|k| k.0 == id).map_or(0, |k| k.1),
        status: if layer.has(HookKind::Recall) { "ok" } else { "none" },
        error: None,
      }
    })
    .collect();
  let layer_tokens: u64 = kept.iter().map(|k| k.2).sum();
  let tool_calls = facts
    .response
    .items
    .iter()
    .filter(|item| item.item_type() == "function_call")
    .map(|item| ToolCallRecord {
      call_id: item.call_id().unwrap_or_default().to_owned(),
      name: item.name().unwrap_or_default().to_owned(),
      arguments: item.arguments().unwrap_or_default().to_owned(),
      steering: None,
    })
    .collect();
  ModelCallRecord {
    id: facts.id,
    thread_id: facts.ctx.thread_id.clone(),
    resource_id: facts.ctx.resource_id.clone(),
    turn: facts.ctx.root.clone(),
    context: facts.ctx.id.clone(),
    step_id: facts.step.id.clone(),
    model: facts.step.model.clone(),
    at: facts.at,
    duration_ms: facts.duration_ms,
    window: WindowRecord {
      token_budget: facts.policy.token_budget,
      response_reserve: facts.policy.response_reserve,
      system_tokens: facts.fixed.system_tokens as f64,
      tools_tokens: facts.fixed.tools_tokens as f64,
      layer_tokens: layer_tokens as f64,
      history_tokens: shape.history_tokens as f64,
    },
    layers,
    history: HistoryRecord {
      total: shape.history_total,
      kept: shape.history_kept,
      dropped: shape.dropped,
      overflow: match facts.policy.overflow {
        Overflow::Truncate => "truncate",
        Overflow::Summarize => "summarize",
        Overflow::SlidingWindow => "sliding_window",
      },
      summarized: shape.summarized,
      projected: shape.projected,
    },
    window_items: WindowItems {
      system: facts.shape.system_items,
      summary: facts.shape.summary_item,
      history_runs: facts.shape.history_runs,
      history: Vec::new(),
      history_gone: false,
      dropped: facts.shape.dropped_items,
    },
    usage: CallUsage { input_tokens: facts.response.input_tokens, output_tokens: facts.response.output_tokens },
    steering: facts.steering,
    tool_calls,
    spans: Vec::new(),
    cache: facts.bands.map(|bands| CacheRecord {
      epoch: bands.epoch.id.clone(),
      age: bands.epoch.age,
      reanchor_reason: bands.epoch.reanchor_reason.map(|reason| reason.as_str()),
      anchor_tokens: bands.anchor_tokens,
      live_tokens: bands.live_tokens,
      update_tokens: bands.delta_tokens,
      repeated_tokens: bands.repeated_tokens,
      bands: bands
        .layers
        .iter()
        .map(|l| (l.layer_id.clone(), l.band.as_str(), if l.pinned { "pinned" } else { "fresh" }))
        .collect(),
    }),
  }
}
