//! Where an LLM step meets prompt-cache anchoring (`contextCache`): its layers' fresh recalls become the bands the
//! request carries (see [`crate::memory::cache_anchor`]), and the provider's report on the first round is judged.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};

use super::context::ExecContext;
use super::run::Runner;
use crate::host::HookStatus;
use crate::host::ViewEntry;
use crate::items::Item;
use crate::memory::HookKind;
use crate::memory::cache_anchor::{Bands, LayerBand, LayerRender, Part, Served, lineage_key, text_hash};
use crate::memory::lifecycle::{self, RecallEntry};
use crate::memory::registry::LayerSet;
use crate::memory::trace::{HookSpan, TraceTarget};
use serde_json::{Value, json};

impl Runner {
  /// The served entries (anchor band, then live band) and the bands they make, when anchoring is on and the step
  /// has layers; the entries as they are otherwise. Between the plan and the update's text, the changed pinned
  /// layers that have `renderDelta` word their changes in one host batch (none when no such layer changed).
  pub(super) async fn anchor_layers(
    &self,
    ctx: &ExecContext,
    instructions: Option<&str>,
    layers: &LayerSet,
    recalled: Vec<RecallEntry>,
    (window, budgets): (f64, &HashMap<String, f64>),
  ) -> (Vec<RecallEntry>, Option<Bands>) {
    let Some(cache) = &self.cache else { return (recalled, None) };
    let mut recalled: Vec<Option<RecallEntry>> = recalled.into_iter().map(Some).collect();
    let renders = layers
      .layers()
      .iter()
      .map(|layer| {
        let entry =
          recalled.iter_mut().find(|e| e.as_ref().is_some_and(|e| e.layer_id == layer.id())).and_then(Option::take);
        LayerRender {
          layer_id: layer.id().to_owned(),
          slot: layer.spec.slot,
          placement: layer.spec.placement,
          host_key: entry.as_ref().and_then(|e| e.host_key),
          token_count: entry.as_ref().and_then(|e| e.token_count),
          items: entry.map(|e| e.items).unwrap_or_default(),
          render_delta: layer.has(HookKind::RenderDelta),
        }
      })
      .collect();
    let key = lineage_key(ctx.depth, &ctx.thread_id, &ctx.id);
    let history = (ctx.state().log.len(), window);
    let instructions = text_hash(instructions.unwrap_or_default());
    let plan = cache.store.lock().unwrap_or_else(PoisonError::into_inner).plan(
      &key,
      instructions,
      renders,
      history,
      &cache.config,
    );
    let texts = if plan.asks().is_empty() {
      Vec::new()
    } else {
      Box::pin(lifecycle::render_deltas(&self.env, &self.scope(ctx), plan.asks(), budgets)).await
    };
    let state = ctx.state();
    let cost = |item: &Item| state.log.cost_of(item);
    let (assembly, store_cut) = {
      let mut store = cache.store.lock().unwrap_or_else(PoisonError::into_inner);
      let assembly = store.publish(plan, texts, &cache.config, &cost);
      (assembly, store.history_cut(&key))
    };
    let tokens = |served: &[Served]| served.iter().flat_map(|s| &s.items).map(|item| cost(item)).sum::<u64>();
    let (anchor_tokens, live_tokens) = (tokens(&assembly.anchor), tokens(&assembly.live));
    let delta_tokens = assembly.updates.iter().map(|update| update.tokens).sum();
    drop(state);
    let live_from = assembly.anchor.len();
    let start_breaks = assembly.start_breaks;
    let served: Vec<Served> = assembly.anchor.into_iter().chain(assembly.live).collect();
    let bands = Bands {
      key,
      live_from,
      updates: assembly.updates,
      epoch: assembly.epoch,
      layers: served
        .iter()
        .map(|s| LayerBand {
          layer_id: s.layer_id.clone(),
          band: s.band,
          pinned: s.pinned,
          changed: s.changed,
          churn_rate: s.churn_rate,
        })
        .collect(),
      anchor_tokens,
      live_tokens,
      delta_tokens,
      repeated_tokens: 0,
      history_cut: store_cut,
      start_breaks,
    };
    let entries = served
      .into_iter()
      .map(|s| RecallEntry {
        layer_id: s.layer_id,
        slot: s.slot,
        items: s.items,
        token_count: s.token_count,
        host_key: s.host_key,
      })
      .collect();
    (entries, Some(bands))
  }

  /// Measures how much of the request in `entries` repeats the previous one of its lineage, by item identity.
  pub(super) fn note_request(&self, ctx: &ExecContext, entries: &[ViewEntry], cut: usize, bands: &mut Bands) {
    let Some(cache) = &self.cache else { return };
    let state = ctx.state();
    let address = |item: &Arc<Item>| Arc::as_ptr(item) as usize;
    let mut request = Vec::with_capacity(entries.len());
    let mut held = Vec::new();
    for entry in entries {
      match entry {
        ViewEntry::Log { start, end } => {
          if let (Some(first), Some(last)) = (state.log.get(*start), end.checked_sub(1).and_then(|e| state.log.get(e)))
            && start < end
          {
            let cost = state.log.range_cost(*start..*end);
            request.push(Part::Log { start: *start, end: *end, first: address(first), last: address(last), cost });
          }
        }
        ViewEntry::Layer { item, .. } => {
          request.push(Part::Item { at: address(item), cost: state.log.cost_of(item) });
          held.push(Arc::clone(item));
        }
      }
    }
    let mut store = cache.store.lock().unwrap_or_else(PoisonError::into_inner);
    let address_at = |pos: usize| state.log.get(pos).map(address);
    let range_cost = |start: usize, end: usize| state.log.range_cost(start..end);
    bands.repeated_tokens = store.repeated_start(&bands.key, request, held, &address_at, &range_cost);
    drop(state);
    store.hold_history_cut(&bands.key, cut);
  }

  /// A `memory.assemble` span for an anchored call, when the harness traces: the epoch, why it began, what
  /// repeated, and each layer's band.
  pub(super) fn trace_assembly(&self, ctx: &ExecContext, bands: &Bands) {
    if !self.env.sink.tracing() {
      return;
    }
    let step = ctx.state().traced_frame(None);
    let target =
      TraceTarget { trace_id: &ctx.root, context: &ctx.id, thread_id: &ctx.thread_id, step_span: step.as_deref() };
    let mut span = HookSpan::timed(target, "", HookKind::Recall, 0.0, &HookStatus::Ok);
    span.hook = "assemble";
    let facts = json!({
      "cache.epoch": bands.epoch.id,
      "cache.epoch_age": bands.epoch.age,
      "cache.anchor_tokens": bands.anchor_tokens,
      "cache.live_tokens": bands.live_tokens,
      "cache.update_tokens": bands.delta_tokens,
      "cache.repeated_tokens": bands.repeated_tokens,
      "cache.bands": bands.layers.iter().map(|l| format!("{}:{}", l.layer_id, l.band.as_str())).collect::<Vec<_>>().join(","),
    });
    if let Value::Object(mut map) = facts {
      if let Some(reason) = bands.epoch.reanchor_reason {
        map.insert("cache.reanchor_reason".into(), json!(reason.as_str()));
      }
      span.attributes = map;
    }
    self.env.sink.trace(vec![span]);
  }

  /// Judges the first round's cache report: a miss asks the next assembly to re-anchor.
  pub(super) fn judge_cache(&self, bands: &Bands, system_tokens: u64, read: Option<f64>, write: Option<f64>) {
    let Some(cache) = &self.cache else { return };
    let expected = (system_tokens + bands.anchor_tokens) as f64;
    cache.store.lock().unwrap_or_else(PoisonError::into_inner).note_outcome(
      &bands.key,
      read,
      write,
      expected,
      &cache.config,
    );
  }
}
