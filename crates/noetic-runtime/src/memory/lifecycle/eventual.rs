//! Eventual recall (DECISIONS D6, documented; upstream only memoises and blocks the model call on a cold entry).
//!
//! An eventual layer is never recalled in the hot path. A model call gets whatever the layer's cache entry holds
//! when the step's recall phase runs (nothing while it is cold), and the entry is refreshed in the background after
//! init and after every step's store phase; a later model call sees a refresh that has finished.
//!
//! * Key: `<scope key>:<layer id>`, as upstream. A thread, resource or global layer's entry serves every execution
//!   of that thread, resource or harness, so the next turn starts warm; an `execution` layer's key is its
//!   execution's, and its entries go when the execution ends (D15).
//! * Bound: the cache lives in the harness. Execution keys go with their execution; past `capacity` keys, the least
//!   recently used durable key is evicted, which only makes it cold again.
//! * Budget: the last allocation the layer got under this key, recorded at each recall phase. Before there is one
//!   (a refresh after init), the allocation the caller passes: the harness policy's with no system prompt, as
//!   upstream's `harness.recallLayers` allocates.
//! * Query: empty. A refresh cannot know the input of the model call it will serve.
//! * Order: each refresh takes a generation from one counter, and a result is kept only if it is newer than the one
//!   in the entry, so a slow old refresh never overwrites a newer one. A refresh that returns nothing empties the
//!   entry (the layer has nothing to say now); one that fails or times out leaves it as it was, with a diagnostic.
//! * State: a refresh's `result.state` is ignored. It runs while the step writes state (store, layer functions,
//!   onItemAppend) and can finish after those writes, so applying it could undo a newer state or persist an older
//!   one. In-place mutation of the state object still survives (A4). Atomic recalls write state as §6.3 says.
//! * Lifetime: when an execution ends, its refreshes of durable keys are awaited (the next turn wants them) and
//!   those of execution keys are aborted (their entries are about to go), before onComplete and dispose. So no
//!   refresh outlives its execution or reads state that dispose drops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::task::JoinHandle;

use crate::host::WriteRule;
use crate::memory::registry::Layer;
use crate::memory::{HookKind, RecallMode, Scope, resolve_scope_key};

use super::recall_each::{RecallEntry, RecallTarget, Recalled, recall_each};
use super::{ExecScope, MemoryEnv};

/// How many keys the cache holds before it evicts durable ones.
pub const DEFAULT_CAPACITY: usize = 4096;

/// The harness's eventual-recall entries and the background refreshes that fill them.
pub struct RecallCache {
  inner: Mutex<Inner>,
  capacity: usize,
}

#[derive(Default)]
struct Inner {
  keys: HashMap<String, Cached>,
  execs: HashMap<String, ExecRefreshes>,
  /// One counter for refresh generations and for recency of use.
  clock: u64,
}

#[derive(Default)]
struct Cached {
  entry: Option<RecallEntry>,
  /// The layer's latest allocation under this key.
  budget: Option<f64>,
  /// The generation of the refresh whose result `entry` holds.
  applied: u64,
  used: u64,
  /// An `execution` key: it goes with its execution, never by eviction.
  execution: bool,
}

/// What an execution has in the cache: its refreshes, and the execution keys to drop when it ends.
#[derive(Default)]
struct ExecRefreshes {
  tasks: Vec<Refresh>,
  keys: Vec<String>,
}

struct Refresh {
  task: JoinHandle<()>,
  durable: bool,
}

pub(super) fn cache_key(scope: &ExecScope<'_>, layer: &Layer) -> String {
  let scope_key = resolve_scope_key(layer.spec.scope, scope.thread_id, scope.resource_id, scope.exec_id());
  format!("{scope_key}:{}", layer.id())
}

impl Default for RecallCache {
  fn default() -> Self {
    Self::with_capacity(DEFAULT_CAPACITY)
  }
}

impl RecallCache {
  pub fn new() -> Self {
    Self::default()
  }

  pub fn with_capacity(capacity: usize) -> Self {
    Self { inner: Mutex::default(), capacity: capacity.max(1) }
  }

  fn lock(&self) -> MutexGuard<'_, Inner> {
    self.inner.lock().unwrap_or_else(PoisonError::into_inner)
  }

  /// What an eventual layer contributes to this model call; `budget` becomes its latest allocation.
  pub(super) fn serve(&self, exec: &str, key: &str, layer: &Layer, budget: f64) -> Option<RecallEntry> {
    let mut inner = self.lock();
    let cached = inner.touch(exec, key, layer, self.capacity);
    cached.budget = Some(budget);
    cached.entry.clone()
  }

  /// Keeps a finished refresh's result unless a newer one was kept since, or the key is gone (its execution ended
  /// or it was evicted).
  fn keep(&self, key: &str, generation: u64, recalled: Recalled) {
    let entry = match recalled {
      Recalled::Failed => return,
      Recalled::Nothing => None,
      Recalled::Entry(entry) => Some(entry),
    };
    if let Some(cached) = self.lock().keys.get_mut(key)
      && generation > cached.applied
    {
      cached.entry = entry;
      cached.applied = generation;
    }
  }

  /// The execution ends: abort its refreshes of execution keys, await the others, then drop its execution keys.
  pub async fn finish(&self, exec: &str) {
    let Some(ExecRefreshes { tasks, keys }) = self.lock().execs.remove(exec) else { return };
    for refresh in tasks.iter().filter(|refresh| !refresh.durable) {
      refresh.task.abort();
    }
    for refresh in tasks {
      // A cancelled refresh has nothing to keep; a panicked one kept nothing.
      let _ = refresh.task.await;
    }
    let mut inner = self.lock();
    for key in keys {
      inner.keys.remove(&key);
    }
  }

  /// A run in a context that stays open ends: await its refreshes, keeping its entries for the next run.
  pub async fn wait(&self, exec: &str) {
    let tasks = self.lock().execs.get_mut(exec).map(|refreshes| std::mem::take(&mut refreshes.tasks));
    for refresh in tasks.unwrap_or_default() {
      let _ = refresh.task.await;
    }
  }

  /// Forgets an execution without waiting: its refreshes are aborted and its execution keys dropped.
  pub fn close(&self, exec: &str) {
    let Some(ExecRefreshes { tasks, keys }) = self.lock().execs.remove(exec) else { return };
    for refresh in tasks {
      refresh.task.abort();
    }
    let mut inner = self.lock();
    for key in keys {
      inner.keys.remove(&key);
    }
  }

  /// Number of keys held.
  pub fn len(&self) -> usize {
    self.lock().keys.len()
  }

  pub fn is_empty(&self) -> bool {
    self.len() == 0
  }

  /// Refreshes started and not yet finished, across executions.
  pub fn pending(&self) -> usize {
    self.lock().execs.values().flat_map(|refreshes| &refreshes.tasks).filter(|r| !r.task.is_finished()).count()
  }
}

impl Inner {
  fn touch(&mut self, exec: &str, key: &str, layer: &Layer, capacity: usize) -> &mut Cached {
    self.clock += 1;
    let used = self.clock;
    let execution = layer.spec.scope == Scope::Execution;
    if !self.keys.contains_key(key) {
      if execution {
        self.execs.entry(exec.to_owned()).or_default().keys.push(key.to_owned());
      } else if self.keys.len() >= capacity {
        self.evict();
      }
    }
    let cached = self.keys.entry(key.to_owned()).or_insert_with(|| Cached { execution, ..Cached::default() });
    cached.used = used;
    cached
  }

  /// Drops the least recently used durable key.
  fn evict(&mut self) {
    let victim =
      self.keys.iter().filter(|(_, cached)| !cached.execution).min_by_key(|(_, cached)| cached.used).map(|(k, _)| k);
    if let Some(key) = victim.cloned() {
      self.keys.remove(&key);
    }
  }
}

/// Starts a background refresh of each eventual layer that takes part in recall in this execution (the skip gate
/// applies). `budgets` is the allocation for a key that has none recorded yet.
pub fn refresh_eventual(
  env: &MemoryEnv,
  cache: &Arc<RecallCache>,
  scope: &ExecScope<'_>,
  budgets: &HashMap<String, f64>,
) {
  let exec = scope.exec_id();
  // Not `participants`: a layer the gate keeps out is not refreshed, which is no hook call to trace as skipped.
  let refreshed = |layer: &&Arc<Layer>| {
    layer.has(HookKind::Recall) && layer.spec.recall_mode == RecallMode::Eventual && !env.skipped(exec, layer)
  };
  for layer in scope.layers.in_slot_order().filter(refreshed) {
    let key = cache_key(scope, layer);
    let mut inner = cache.lock();
    let cached = inner.touch(exec, &key, layer, cache.capacity);
    let budget = cached.budget.unwrap_or_else(|| budgets.get(layer.id()).copied().unwrap_or(0.0));
    let generation = inner.clock;
    let (env, owner, layer) = (env.clone(), Arc::clone(cache), Arc::clone(layer));
    let (context, info, exec_id, item_types) =
      (scope.context.to_owned(), scope.info.clone(), exec.to_owned(), scope.item_types);
    let durable = layer.spec.scope.is_durable();
    let task = tokio::spawn(async move {
      let target = RecallTarget { exec: &exec_id, context: &context, info: &info, item_types, keep_recalled: false };
      let outcome = recall_each(&env, &target, &[(&layer, budget)], "", WriteRule::Never).await;
      if let Some((recalled, _state)) = outcome.into_iter().next() {
        owner.keep(&key, generation, recalled);
      }
    });
    let refreshes = inner.execs.entry(exec.to_owned()).or_default();
    refreshes.tasks.retain(|refresh| !refresh.task.is_finished());
    refreshes.tasks.push(Refresh { task, durable });
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::memory::LayerSpec;

  fn layer(id: &str, scope: Scope) -> Layer {
    Layer {
      spec: LayerSpec::new(id, 1.0, scope),
      imp: crate::memory::registry::LayerImpl::Host(0),
      provides: vec![],
      handle: None,
    }
  }

  #[test]
  fn past_capacity_the_least_recently_used_durable_key_goes_and_execution_keys_stay() {
    let cache = RecallCache::with_capacity(3);
    let (a, b, c, e) =
      (layer("a", Scope::Thread), layer("b", Scope::Thread), layer("c", Scope::Global), layer("e", Scope::Execution));
    cache.serve("E", "E:e", &e, 1.0);
    cache.serve("E", "T:a", &a, 1.0);
    cache.serve("E", "T:b", &b, 1.0);
    // `a` is used again, so `b` is the least recently used durable key when `c` arrives.
    cache.serve("E", "T:a", &a, 1.0);
    cache.serve("E", "__global__:c", &c, 1.0);
    let keys = |cache: &RecallCache| {
      let mut keys: Vec<String> = cache.lock().keys.keys().cloned().collect();
      keys.sort();
      keys
    };
    assert_eq!(keys(&cache), ["E:e", "T:a", "__global__:c"]);
    // The execution key goes with its execution, not before.
    cache.close("E");
    assert_eq!(keys(&cache), ["T:a", "__global__:c"]);
  }

  #[test]
  fn a_result_is_kept_only_if_newer_than_the_one_held_and_a_failure_keeps_it() {
    let cache = RecallCache::new();
    let a = layer("a", Scope::Thread);
    cache.serve("E", "T:a", &a, 1.0);
    let recalled = |text: &str| {
      let item = crate::items::create_message(text, "developer").unwrap();
      Recalled::Entry(RecallEntry {
        layer_id: "a".into(),
        slot: 1.0,
        items: vec![Arc::new(item)],
        token_count: None,
        host_key: None,
      })
    };
    let text = |cache: &RecallCache| {
      cache.serve("E", "T:a", &a, 1.0).map(|entry| entry.items[0].to_json_text()).unwrap_or_default()
    };
    cache.keep("T:a", 7, recalled("new"));
    cache.keep("T:a", 5, recalled("old"));
    assert!(text(&cache).contains("new"));
    cache.keep("T:a", 8, Recalled::Failed);
    assert!(text(&cache).contains("new"));
    cache.keep("T:a", 9, Recalled::Nothing);
    assert_eq!(text(&cache), "");
    // A key that is gone is not brought back by a late result.
    cache.keep("T:gone", 10, recalled("late"));
    assert_eq!(cache.len(), 1);
  }
}
