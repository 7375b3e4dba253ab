//! Prompt-cache anchoring (`contextCache`, issue 55): layers' output held byte-stable at the start of the request,
//! so that a provider serves the repeated start of each request from its cache.
//!
//! With anchoring on, a request is: the instructions, the **anchor band** (the output of anchored layers as it was
//! pinned when the epoch began, replayed unchanged), the history, then the **live band** (layers that change too
//! often to pin, rendered fresh). When a pinned layer's output changes, an **update** message saying what changed
//! is placed in the history where the change was seen, and stays there: later requests repeat it as part of their
//! start, where a message re-sent at the end of every request would never be cached (upstream 5.x's one
//! supersede block after the live band). An **epoch** is the run of assemblies that replay the same pins; it ends
//! for a recorded reason (cold start, instructions changed, a cache miss the provider reported, age, the updates
//! outgrowing their share of the request's cacheable start).
//!
//! `auto` layers move between the bands at epoch boundaries by how often their output changes (churn). Every
//! layer is watched on every assembly whatever its band, so one demoted to live returns to the anchor when it
//! settles (upstream 5.x only watched pinned layers, so a demoted layer stayed live for good).
//!
//! State is per lineage: a thread at top level, an execution below it (a child assembles a different view). It lives
//! in memory only, bounded to [`MAX_LINEAGES`]; a session reloaded in another process starts a new epoch.

mod bands;
mod config;
mod delta;
mod repeat;

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

pub use self::bands::{Bands, LayerBand};
pub use self::config::CacheConfig;
pub use self::delta::{Change, changes_message};
pub use self::repeat::Part;
use crate::items::Item;

/// Lineages kept per harness; the least recently used goes first.
pub const MAX_LINEAGES: usize = 256;

/// Judged assemblies in a row that may miss before the provider's figures stop being trusted: a provider that
/// never caches would otherwise re-anchor every turn, for nothing.
const MAX_CONSECUTIVE_MISSES: u32 = 3;

/// Where a layer asks to be: upstream 5.x's `placement`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
  Anchor,
  Live,
  #[default]
  Auto,
}

impl Placement {
  pub fn parse(text: &str) -> Option<Self> {
    match text {
      "anchor" => Some(Self::Anchor),
      "live" => Some(Self::Live),
      "auto" => Some(Self::Auto),
      _ => None,
    }
  }
}

/// The part of the request a layer's output went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Band {
  Anchor,
  Live,
}

impl Band {
  pub fn as_str(self) -> &'static str {
    match self {
      Self::Anchor => "anchor",
      Self::Live => "live",
    }
  }
}

/// Why an epoch began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReanchorReason {
  ColdStart,
  InstructionsChanged,
  CacheMiss,
  DeltaOverflow,
  MaxAge,
}

impl ReanchorReason {
  pub fn as_str(self) -> &'static str {
    match self {
      Self::ColdStart => "cold-start",
      Self::InstructionsChanged => "instructions-changed",
      Self::CacheMiss => "cache-miss",
      Self::DeltaOverflow => "delta-overflow",
      Self::MaxAge => "max-age",
    }
  }
}

/// One layer's fresh recall, in slot order; a layer that recalled nothing comes with no items (so a retraction is
/// seen).
#[derive(Debug, Clone)]
pub struct LayerRender {
  pub layer_id: String,
  pub slot: f64,
  pub placement: Placement,
  pub items: Vec<Arc<Item>>,
  /// Where the host keeps these very items, when it does (fresh items only).
  pub host_key: Option<u32>,
  pub token_count: Option<f64>,
  /// The layer has a `renderDelta` hook, to word a change of its pin.
  pub render_delta: bool,
}

/// What the request carries of one layer.
#[derive(Debug, Clone)]
pub struct Served {
  pub layer_id: String,
  pub slot: f64,
  pub band: Band,
  pub items: Vec<Arc<Item>>,
  pub host_key: Option<u32>,
  pub token_count: Option<f64>,
  /// A replay of an earlier render, held for the cache.
  pub pinned: bool,
  /// What the served items say, ids aside.
  pub content: u64,
  /// The fresh output differed from what is served (a pinned layer's change went to an update).
  pub changed: bool,
  /// Share of watched assemblies in which the layer's output changed.
  pub churn_rate: f64,
}

/// The epoch behind one assembly, as `lastLayerUsage` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochFacts {
  pub id: String,
  /// Assemblies served by the epoch, this one included.
  pub age: u32,
  /// Set only on the assembly that began the epoch.
  pub reanchor_reason: Option<ReanchorReason>,
}

/// The layers' part of one request.
#[derive(Debug, Clone)]
pub struct Assembly {
  pub anchor: Vec<Served>,
  pub live: Vec<Served>,
  /// What changed in pinned layers at this assembly (its update, if any, is the last of `updates`).
  pub changes: Vec<Change>,
  /// Every update of the epoch, oldest first.
  pub updates: Vec<Update>,
  pub epoch: EpochFacts,
  /// The request's start breaks before the history anyway: the instructions or the anchor band's content differ from
  /// the lineage's last request (a re-anchor that changed a pin, new instructions, a first request).
  pub start_breaks: bool,
}

/// An assembly between [`CacheStore::plan`] and [`CacheStore::publish`]: its bands and changes, with what publishing
/// needs (a re-anchor when the update overflows composes again from the same recalls).
#[derive(Debug)]
pub struct Plan {
  key: String,
  instructions: u64,
  renders: Vec<LayerRender>,
  contents: Vec<u64>,
  changed_since_seen: Vec<bool>,
  at: usize,
  window: f64,
  assembly: Assembly,
  asks: Vec<DeltaAsk>,
}

impl Plan {
  /// The changes a layer's `renderDelta` may word, in the order the update names them.
  pub fn asks(&self) -> &[DeltaAsk] {
    &self.asks
  }
}

/// A changed pinned layer that has a `renderDelta` hook: its pin's items (what the model still sees in the anchor)
/// and its fresh ones; `change` is the change of the plan that its text would replace.
#[derive(Debug, Clone)]
pub struct DeltaAsk {
  pub change: usize,
  pub layer_id: String,
  pub prev: Vec<Arc<Item>>,
  pub next: Vec<Arc<Item>>,
}

/// An update message and where it stands: before the log item at `at` (the log's length when it was made).
#[derive(Debug, Clone)]
pub struct Update {
  pub at: usize,
  pub item: Arc<Item>,
  pub tokens: u64,
}

#[derive(Debug, Clone, Default)]
struct Churn {
  observed: f64,
  changed: f64,
}

impl Churn {
  fn rate(&self) -> f64 {
    if self.observed == 0.0 { 0.0 } else { self.changed / self.observed }
  }
}

#[derive(Debug, Clone)]
struct Pin {
  items: Vec<Arc<Item>>,
  content: u64,
  token_count: Option<f64>,
}

#[derive(Debug)]
struct Epoch {
  generation: u32,
  pins: HashMap<String, Pin>,
  /// The band each `auto` layer holds for this epoch.
  auto_band: HashMap<String, Band>,
  instructions: u64,
  assemblies: u32,
  cache_blind: bool,
  misses: u32,
  /// What the model was last told of each anchored layer, by content: its pin, or its latest update.
  published: HashMap<String, u64>,
  updates: Vec<Update>,
}

#[derive(Debug)]
struct Lineage {
  epoch: Epoch,
  /// Each layer's output as last seen, by content (ids aside).
  last_seen: HashMap<String, u64>,
  pending: Option<ReanchorReason>,
  /// Where the last request's history began, held while the history from there fits (see
  /// [`crate::memory::assemble_view_from`]).
  history_cut: Option<usize>,
  /// The instructions and the anchor band's content of the last assembly: a request whose start differs breaks
  /// before its history, so the history's cut may move then for free.
  last_start: Option<u64>,
  /// The last request's parts by identity, with their costs: what the next one's repeated start is measured on.
  last_request: Vec<Part>,
  /// Its items that nothing else holds (layer items and updates; the log holds its own), held so that no new item
  /// can take one's address.
  last_held: Vec<Arc<Item>>,
}

/// A harness's anchoring state.
#[derive(Debug, Default)]
pub struct CacheStore {
  lineages: HashMap<String, Lineage>,
  /// Least recently used first.
  order: VecDeque<String>,
  /// Churn per layer id, outliving epochs and shared by lineages, so that a new thread does not relearn it.
  churn: HashMap<String, Churn>,
}

/// The lineage of an assembly: a thread at top level, an execution below it.
pub fn lineage_key(depth: u32, thread_id: &str, execution_id: &str) -> String {
  if depth == 0 { format!("t:{thread_id}") } else { format!("x:{execution_id}") }
}

/// A hash of text, for the instructions an epoch was anchored against.
pub fn text_hash(text: &str) -> u64 {
  let mut hasher = std::collections::hash_map::DefaultHasher::new();
  text.hash(&mut hasher);
  hasher.finish()
}

/// What a layer's items say, ids aside: a layer that makes its message afresh each recall (a new id each time)
/// has not changed. Read from each item's text by its top-level fields, unparsed below them (every layer's items are
/// hashed on every assembly, and most are new objects each time, never parsed otherwise). Hashed with Fx, several
/// times faster than SipHash over a layer's text: nothing here needs SipHash's keyed resistance (its keys would be
/// fixed and known anyway), and this is half an assembly's time with SipHash.
fn content_of(items: &[Arc<Item>]) -> u64 {
  let mut hasher = rustc_hash::FxHasher::default();
  for item in items {
    let text = item.json_text();
    match serde_json::from_str::<std::collections::BTreeMap<&str, &serde_json::value::RawValue>>(text) {
      Ok(fields) => {
        for (key, value) in fields.iter().filter(|(key, _)| **key != "id") {
          key.hash(&mut hasher);
          value.get().hash(&mut hasher);
        }
      }
      // A key with an escape in it cannot be borrowed: the whole text stands for the item.
      Err(_) => text.hash(&mut hasher),
    }
  }
  items.len().hash(&mut hasher);
  hasher.finish()
}

/// The start of a request up to its history, by content: the instructions, then each anchored layer's items.
fn start_signature(instructions: u64, anchor: &[Served]) -> u64 {
  let mut hasher = std::collections::hash_map::DefaultHasher::new();
  instructions.hash(&mut hasher);
  for served in anchor {
    served.layer_id.hash(&mut hasher);
    served.content.hash(&mut hasher);
  }
  hasher.finish()
}

impl CacheStore {
  /// The layers' part of the next request of `key`, given their fresh recalls in slot order, the log's length (where
  /// an update made now stands) and the window's token budget (what carried updates are measured against). `cost`
  /// is an item's cost as the view counts it. [`Self::plan`] then [`Self::publish`] with no hook's text.
  pub fn assemble(
    &mut self,
    key: &str,
    instructions: u64,
    renders: Vec<LayerRender>,
    history: (usize, f64),
    config: &CacheConfig,
    cost: &dyn Fn(&Item) -> u64,
  ) -> Assembly {
    let plan = self.plan(key, instructions, renders, history, config);
    self.publish(plan, Vec::new(), config, cost)
  }

  /// What changed: the bands and the changes of pinned layers, and which changes a layer's `renderDelta` may word
  /// (`Plan::asks`). Nothing is published yet: the hooks run between this and [`Self::publish`], with the store free.
  pub fn plan(
    &mut self,
    key: &str,
    instructions: u64,
    renders: Vec<LayerRender>,
    (at, window): (usize, f64),
    config: &CacheConfig,
  ) -> Plan {
    self.touch(key);
    let reason = match self.lineages.get_mut(key) {
      None => Some(ReanchorReason::ColdStart),
      Some(lineage) if lineage.epoch.instructions != instructions => Some(ReanchorReason::InstructionsChanged),
      Some(lineage) => match lineage.pending.take() {
        Some(reason) => Some(reason),
        None if lineage.epoch.assemblies >= config.max_epoch_assemblies => Some(ReanchorReason::MaxAge),
        None => None,
      },
    };
    if reason.is_some() {
      self.open_epoch(key, instructions, &renders, config);
    }
    let contents: Vec<u64> = renders.iter().map(|render| content_of(&render.items)).collect();
    let changed_since_seen = self.observe(key, &renders, &contents);
    let (assembly, asks) = self.compose(key, &renders, &contents, &changed_since_seen, reason, config);
    Plan { key: key.to_owned(), instructions, renders, contents, changed_since_seen, at, window, assembly, asks }
  }

  /// Writes `plan`'s update, each change that `texts` (one per ask, in order) words with a non-empty text replacing
  /// its full text; every other change keeps it (a hook that failed, timed out or said nothing is never skipped).
  pub fn publish(
    &mut self,
    plan: Plan,
    texts: Vec<Option<String>>,
    config: &CacheConfig,
    cost: &dyn Fn(&Item) -> u64,
  ) -> Assembly {
    let Plan { key, instructions, renders, contents, changed_since_seen, at, window, mut assembly, asks } = plan;
    for (ask, text) in asks.iter().zip(texts) {
      if let Some(text) = text.filter(|text| !text.is_empty()) {
        assembly.changes[ask.change].reword(text);
      }
    }
    let update =
      changes_message(&assembly.changes, at).map(Arc::new).map(|item| Update { at, tokens: cost(&item), item });
    // Evicted while the hooks ran (another 256 lineages assembled meanwhile): this request still carries its update.
    let Some(lineage) = self.lineages.get_mut(&key) else {
      assembly.updates = update.into_iter().collect();
      assembly.start_breaks = true;
      return assembly;
    };
    if let Some(update) = update {
      let epoch = &mut lineage.epoch;
      epoch.updates.push(update);
      // The updates outgrew their share of the window: begin again now, which costs one request's start, rather than
      // carry them on every request. Measured against the window, not the anchor (upstream 5.x): an update is
      // repeated from the cache on later requests, so what it costs is room, and a large layer's change early in a
      // thread would otherwise re-anchor, and break the whole start, every time it changed.
      let carried: u64 = epoch.updates.iter().map(|update| update.tokens).sum();
      if carried as f64 > config.delta_budget_fraction * window {
        self.open_epoch(&key, instructions, &renders, config);
        let reason = Some(ReanchorReason::DeltaOverflow);
        // A fresh epoch pins every layer: nothing changed, so nothing is asked of a hook.
        assembly = self.compose(&key, &renders, &contents, &changed_since_seen, reason, config).0;
      }
    }
    let lineage = self.lineages.get_mut(&key).expect("opened above");
    let start = start_signature(instructions, &assembly.anchor);
    assembly.start_breaks = lineage.last_start.replace(start) != Some(start);
    let epoch = &mut lineage.epoch;
    epoch.assemblies += 1;
    assembly.epoch.age = epoch.assemblies;
    assembly.updates = epoch.updates.clone();
    assembly
  }

  /// Judges the first round of a model call from what the provider reported: a miss (after the epoch's first
  /// assemblies, which write the cache) asks the next assembly to re-anchor. A provider that reports nothing, or
  /// misses again and again, is no longer asked.
  pub fn note_outcome(
    &mut self,
    key: &str,
    cached_tokens: Option<f64>,
    cache_write_tokens: Option<f64>,
    expected_tokens: f64,
    config: &CacheConfig,
  ) {
    let Some(lineage) = self.lineages.get_mut(key) else { return };
    let epoch = &mut lineage.epoch;
    if epoch.cache_blind {
      return;
    }
    let Some(cached) = cached_tokens else {
      epoch.cache_blind = true;
      return;
    };
    if cache_write_tokens.unwrap_or(0.0) > 0.0 && cached == 0.0 {
      return;
    }
    if epoch.assemblies < config.min_epoch_assemblies {
      return;
    }
    if cached >= config.min_cached_tokens.min(expected_tokens * 0.5) {
      epoch.misses = 0;
      return;
    }
    epoch.misses += 1;
    if epoch.misses >= MAX_CONSECUTIVE_MISSES {
      epoch.cache_blind = true;
    } else {
      lineage.pending = Some(ReanchorReason::CacheMiss);
    }
  }

  /// Whether the provider was found to report no cache figures for `key` (or to miss persistently).
  pub fn cache_blind(&self, key: &str) -> bool {
    self.lineages.get(key).is_some_and(|lineage| lineage.epoch.cache_blind)
  }

  /// Tokens at the start of `request` (its parts, see [`Part`]) that repeat the previous request of `key`; the
  /// request is remembered for the next, `held` keeping alive its items that nothing else holds. `address_at` and
  /// `range_cost` read the context's log as it is now.
  pub fn repeated_start(
    &mut self,
    key: &str,
    request: Vec<Part>,
    held: Vec<Arc<Item>>,
    address_at: &dyn Fn(usize) -> Option<usize>,
    range_cost: &dyn Fn(usize, usize) -> u64,
  ) -> u64 {
    let Some(lineage) = self.lineages.get_mut(key) else { return 0 };
    let repeated = repeat::repeated_cost(&lineage.last_request, &request, address_at, range_cost);
    lineage.last_request = request;
    lineage.last_held = held;
    repeated
  }

  /// Where `key`'s last request began its history.
  pub fn history_cut(&self, key: &str) -> Option<usize> {
    self.lineages.get(key).and_then(|lineage| lineage.history_cut)
  }

  /// Holds where `key`'s request began its history, for the next one.
  pub fn hold_history_cut(&mut self, key: &str, cut: usize) {
    if let Some(lineage) = self.lineages.get_mut(key) {
      lineage.history_cut = Some(cut);
    }
  }

  /// Drops the lineage of an execution below the top level when its context closes (a spawn's child, a fork's
  /// path): its requests end with it, so its epoch would only take the place of a live lineage until evicted. A
  /// top-level execution's lineage is its thread's, which outlives it; nothing is dropped for one.
  pub fn forget_execution(&mut self, execution_id: &str) {
    let key = lineage_key(1, "", execution_id);
    if self.lineages.remove(&key).is_some() {
      self.order.retain(|k| *k != key);
    }
  }

  fn touch(&mut self, key: &str) {
    // Most assemblies are of the lineage that assembled last.
    if self.order.back().is_some_and(|last| last == key) {
      return;
    }
    if let Some(at) = self.order.iter().position(|k| k == key) {
      self.order.remove(at);
    }
    self.order.push_back(key.to_owned());
    while self.order.len() > MAX_LINEAGES {
      if let Some(oldest) = self.order.pop_front() {
        self.lineages.remove(&oldest);
      }
    }
  }

  /// Begins an epoch for `key`: no pins, and each `auto` layer's band chosen from its churn, with a gap between the
  /// thresholds so that a layer near one does not flip every epoch.
  fn open_epoch(&mut self, key: &str, instructions: u64, renders: &[LayerRender], config: &CacheConfig) {
    let previous = self.lineages.remove(key);
    let mut auto_band = HashMap::new();
    for render in renders.iter().filter(|render| render.placement == Placement::Auto) {
      let current = previous.as_ref().and_then(|lineage| lineage.epoch.auto_band.get(&render.layer_id).copied());
      let band = current.unwrap_or(Band::Anchor);
      let band = match self.churn.get(&render.layer_id) {
        Some(churn) if churn.observed >= config.min_churn_samples => {
          let rate = churn.rate();
          if rate >= config.auto_demote_churn {
            Band::Live
          } else if rate <= config.auto_promote_churn {
            Band::Anchor
          } else {
            band
          }
        }
        _ => band,
      };
      auto_band.insert(render.layer_id.clone(), band);
    }
    for render in renders {
      if let Some(churn) = self.churn.get_mut(&render.layer_id) {
        churn.observed *= config.churn_decay;
        churn.changed *= config.churn_decay;
      }
    }
    let previous_cut = previous.as_ref().and_then(|lineage| lineage.history_cut);
    let last_start = previous.as_ref().and_then(|lineage| lineage.last_start);
    let (generation, cache_blind, misses, last_seen, (last_request, last_held)) = match previous {
      Some(lineage) => (
        lineage.epoch.generation + 1,
        lineage.epoch.cache_blind,
        // A miss began this epoch: forgetting it would never let a provider that does not cache be given up on.
        lineage.epoch.misses,
        lineage.last_seen,
        (lineage.last_request, lineage.last_held),
      ),
      None => (0, false, 0, HashMap::new(), (Vec::new(), Vec::new())),
    };
    let epoch = Epoch {
      generation,
      pins: HashMap::new(),
      auto_band,
      instructions,
      assemblies: 0,
      cache_blind,
      misses,
      published: HashMap::new(),
      updates: Vec::new(),
    };
    // The history's cut outlives epochs: a new anchor need not move it.
    let history_cut = previous_cut;
    self.lineages.insert(
      key.to_owned(),
      Lineage { epoch, last_seen, pending: None, last_request, last_held, history_cut, last_start },
    );
  }

  /// Watches every layer, whatever its band: whether its output changed since it was last seen.
  fn observe(&mut self, key: &str, renders: &[LayerRender], contents: &[u64]) -> Vec<bool> {
    let lineage = self.lineages.get_mut(key).expect("opened before");
    renders
      .iter()
      .zip(contents)
      .map(|(render, &content)| {
        let seen = lineage.last_seen.insert(render.layer_id.clone(), content);
        if render.items.is_empty() && seen.is_none() {
          return false;
        }
        let churn = self.churn.entry(render.layer_id.clone()).or_default();
        churn.observed += 1.0;
        let changed = seen.is_some_and(|seen| seen != content);
        if changed {
          churn.changed += 1.0;
        }
        changed
      })
      .collect()
  }

  fn compose(
    &mut self,
    key: &str,
    renders: &[LayerRender],
    contents: &[u64],
    changed_since_seen: &[bool],
    reason: Option<ReanchorReason>,
    config: &CacheConfig,
  ) -> (Assembly, Vec<DeltaAsk>) {
    let lineage = self.lineages.get_mut(key).expect("opened before");
    let mut asks = Vec::new();
    let epoch = &mut lineage.epoch;
    let fresh_epoch = epoch.assemblies == 0;
    let mut assembly = Assembly {
      anchor: Vec::new(),
      live: Vec::new(),
      changes: Vec::new(),
      updates: Vec::new(),
      epoch: EpochFacts { id: format!("{key}#{}", epoch.generation), age: 0, reanchor_reason: reason },
      start_breaks: false,
    };
    for ((render, &content), &changed) in renders.iter().zip(contents).zip(changed_since_seen) {
      let churn = self.churn.get(&render.layer_id);
      let churn_rate = churn.map_or(0.0, Churn::rate);
      // An `auto` layer found to churn mid-epoch goes live at once; its pin stays where it was, so the request's
      // start still repeats, and is gone at the next epoch. Going back to the anchor waits for an epoch boundary.
      let churning =
        churn.is_some_and(|c| c.observed >= config.min_churn_samples && c.rate() >= config.auto_demote_churn);
      if render.placement == Placement::Auto && churning {
        epoch.auto_band.insert(render.layer_id.clone(), Band::Live);
      }
      let band = match render.placement {
        Placement::Anchor => Band::Anchor,
        Placement::Live => Band::Live,
        Placement::Auto => *epoch.auto_band.entry(render.layer_id.clone()).or_insert(Band::Anchor),
      };
      let served = |items: Vec<Arc<Item>>, host_key, token_count, pinned, changed, content| Served {
        layer_id: render.layer_id.clone(),
        slot: render.slot,
        band,
        items,
        host_key,
        token_count,
        pinned,
        content,
        changed,
        churn_rate,
      };
      // The layer as it renders now, served where it stands (live, or pinned by a fresh epoch).
      let as_rendered = || served(render.items.clone(), render.host_key, render.token_count, false, changed, content);
      if band == Band::Live {
        if let Some(pin) = epoch.pins.get(&render.layer_id) {
          assembly.anchor.push(Served {
            band: Band::Anchor,
            ..served(pin.items.clone(), None, pin.token_count, true, true, pin.content)
          });
        }
        if !render.items.is_empty() {
          assembly.live.push(as_rendered());
        }
        continue;
      }
      // What the model was told last of this layer: an update is made only when that is no longer so.
      let published = epoch.published.get(&render.layer_id).copied();
      let news = published != Some(content) && !(published.is_none() && render.items.is_empty());
      match epoch.pins.get(&render.layer_id) {
        Some(pin) => {
          if news && render.items.is_empty() {
            assembly.changes.push(Change::retract(&render.layer_id));
          } else if news {
            // A changed (not retracted) pinned layer: its hook, if it has one, may word the change.
            if render.render_delta {
              asks.push(DeltaAsk {
                change: assembly.changes.len(),
                layer_id: render.layer_id.clone(),
                prev: pin.items.clone(),
                next: render.items.clone(),
              });
            }
            assembly.changes.push(Change::replace(&render.layer_id, &render.items));
          }
          let stale = pin.content != content;
          assembly.anchor.push(served(pin.items.clone(), None, pin.token_count, !fresh_epoch, stale, pin.content));
        }
        None if render.items.is_empty() && news => assembly.changes.push(Change::retract(&render.layer_id)),
        None if render.items.is_empty() => {}
        None if fresh_epoch => {
          epoch.pins.insert(
            render.layer_id.clone(),
            Pin { items: render.items.clone(), content, token_count: render.token_count },
          );
          assembly.anchor.push(as_rendered());
        }
        // A layer that began to recall mid-epoch: inserting it into the anchor would break the repeated start.
        None if news && published.is_none() => assembly.changes.push(Change::add(&render.layer_id, &render.items)),
        None if news => assembly.changes.push(Change::replace(&render.layer_id, &render.items)),
        None => {}
      }
      if news || (fresh_epoch && !render.items.is_empty()) {
        epoch.published.insert(render.layer_id.clone(), content);
      }
    }
    (assembly, asks)
  }
}

#[cfg(test)]
mod tests;
