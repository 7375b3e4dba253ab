//! What an anchored request is made of, as the view, the usage and the inspector read it.

use super::{Band, EpochFacts, Update};

/// One layer's part in an anchored request, as `lastLayerUsage` shows it.
#[derive(Debug, Clone)]
pub struct LayerBand {
  pub layer_id: String,
  pub band: Band,
  pub pinned: bool,
  pub changed: bool,
  pub churn_rate: f64,
}

/// An anchored request's shape: which recalled entries go after the history, and the epoch's updates.
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
  /// Tokens of the anchor band, the live band and the epoch's updates.
  pub anchor_tokens: u64,
  pub live_tokens: u64,
  pub delta_tokens: u64,
  /// Tokens at the start of this request that repeat the previous request's start (set once the view is made).
  pub repeated_tokens: u64,
  /// Where the lineage's last request began its history (an index into the history), held while it fits.
  pub history_cut: Option<usize>,
  /// The request's start breaks before its history anyway (see [`super::Assembly::start_breaks`]).
  pub start_breaks: bool,
}
