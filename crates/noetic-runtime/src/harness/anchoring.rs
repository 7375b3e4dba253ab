//! Where an LLM step meets prompt-cache anchoring (`contextCache`): its layers' fresh recalls become the bands the
//! request carries (see [`crate::memory::cache_anchor`]), and the provider's report on the first round is judged.

use std::sync::{Arc, PoisonError};

use super::context::ExecContext;
use super::run::Runner;
use crate::host::ViewEntry;
use crate::items::Item;
use crate::memory::cache_anchor::{Band, EpochFacts, LayerRender, Served, Update, lineage_key, text_hash};
use crate::memory::lifecycle::RecallEntry;
use crate::memory::registry::LayerSet;

/// One layer's part in an anchored request, as `lastLayerUsage` shows it.
#[derive(Debug, Clone)]
pub struct LayerBand {
  pub layer_id: String,
  pub band: Band,
  pub pinned: bool,
  pub changed: bool,
  pub churn_rate: f64,
}

/// An anchored request's shape: which recalled entries go after the history, and the changes message.
#[derive(Debug, Clone)]
pub struct Bands {
  /// The lineage the epoch belongs to.
  pub key: String,
  /// Entries before this index are the anchor band (before the history); the rest are the live band (after it).
  pub live_from: usize,
  /// The epoch's update messages, each to stand before the log item at its `at`.
  pub updates: Vec<Update>,
  pub epoch: EpochFacts,
  pub layers: Vec<LayerBand>,
  /// Tokens of the anchor band, the live band and the changes message.
  pub anchor_tokens: u64,
  pub live_tokens: u64,
  pub delta_tokens: u64,
  /// Tokens at the start of this request that repeat the previous request's start (set once the view is made).
  pub repeated_tokens: u64,
  /// Where the lineage's last request began its history (an index into the history), held while it fits.
  pub history_cut: Option<usize>,
}

impl Runner {
  /// The served entries (anchor band, then live band) and the bands they make, when anchoring is on and the step
  /// has layers; the entries as they are otherwise.
  pub(super) fn anchor_layers(
    &self,
    ctx: &ExecContext,
    instructions: Option<&str>,
    layers: &LayerSet,
    recalled: Vec<RecallEntry>,
    window: f64,
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
        }
      })
      .collect();
    let key = lineage_key(ctx.depth, &ctx.thread_id, &ctx.id);
    let state = ctx.state();
    let cost = |item: &Item| state.log.cost_of(item);
    let (assembly, store_cut) = {
      let mut store = cache.store.lock().unwrap_or_else(PoisonError::into_inner);
      let history = (state.log.len(), window);
      let assembly =
        store.assemble(&key, text_hash(instructions.unwrap_or_default()), renders, history, &cache.config, &cost);
      (assembly, store.history_cut(&key))
    };
    let tokens = |served: &[Served]| served.iter().flat_map(|s| &s.items).map(|item| cost(item)).sum::<u64>();
    let (anchor_tokens, live_tokens) = (tokens(&assembly.anchor), tokens(&assembly.live));
    let delta_tokens = assembly.updates.iter().map(|update| update.tokens).sum();
    drop(state);
    let live_from = assembly.anchor.len();
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
    let mut request = Vec::new();
    for entry in entries {
      match entry {
        ViewEntry::Log { start, end } => {
          for pos in *start..*end {
            if let Some(item) = state.log.get(pos) {
              request.push((Arc::clone(item), state.log.cost_at(pos)));
            }
          }
        }
        ViewEntry::Layer { item, .. } => request.push((Arc::clone(item), state.log.cost_of(item))),
      }
    }
    drop(state);
    let mut store = cache.store.lock().unwrap_or_else(PoisonError::into_inner);
    bands.repeated_tokens = store.repeated_start(&bands.key, request);
    store.hold_history_cut(&bands.key, cut);
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
