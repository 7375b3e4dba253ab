//! The layer state store: one state per (execution, layer), the disabled set, and the durable write-through that
//! mirrors every state write of a non-`execution` layer to its scoped storage.
//!
//! A JS layer's state object stays in JS (A4: in-place mutation must survive), so for those layers this store only
//! records that a state exists; what gets persisted is the JSON that JS serialized at write time.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Waker};

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::Value;
use tokio::sync::Notify;

use crate::js_text::js_json_text;
use crate::storage::Storage;

/// Where a non-fatal layer failure goes: `(layer id, hook name, message)`. The hook is `persist` for mirror writes.
pub trait DiagnosticSink: Send + Sync {
  fn diagnostic(&self, layer_id: &str, hook: &str, message: &str);

  /// A loop's `until` predicate threw (the loop stops, as upstream). Sinks that tell loops from layers override
  /// this; by default it is reported under the loop's id with hook `until`.
  fn loop_diagnostic(&self, loop_id: &str, message: &str) {
    self.step_diagnostic(loop_id, "until", message);
  }

  /// Something a step went on past (an `every` iteration that failed under `onError: 'continue'`), reported under
  /// the step's id with `hook` naming what.
  fn step_diagnostic(&self, step_id: &str, hook: &str, message: &str) {
    self.diagnostic(step_id, hook, message);
  }

  /// Whether hook spans are wanted (D14): a sink that exports none is never handed any.
  fn tracing(&self) -> bool {
    false
  }

  /// The spans of one phase's hooks.
  fn trace(&self, _spans: Vec<super::trace::HookSpan>) {}

  /// Whether the exporter asked for prompts and completions in model-call spans (O1; off unless the user opts in).
  fn tracing_content(&self) -> bool {
    false
  }

  /// One of the runtime's own spans (an execution, a model call), when [`DiagnosticSink::tracing`].
  fn trace_run(&self, _span: super::trace::RunSpan) {}
}

/// A layer's state as the runtime holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum StateValue {
  /// A built-in layer's state.
  Json(Value),
  /// The state exists but is `undefined` (init returned no state, or store cleared it).
  Undefined,
  /// A JS layer's state; the object lives in JS.
  Host,
}

/// What a write leaves in durable storage.
#[derive(Debug, Clone, PartialEq)]
pub enum Persist {
  Write(StateJson),
  Delete,
}

/// A state to persist: a built-in's value, or the JSON text JS serialized at write time, which goes to the store as
/// it is (a store of text never parses it).
#[derive(Debug, Clone, PartialEq)]
pub enum StateJson {
  Value(Value),
  Text(String),
}

impl From<Value> for StateJson {
  fn from(value: Value) -> Self {
    Self::Value(value)
  }
}

impl StateValue {
  fn persisted(&self) -> Option<Persist> {
    match self {
      Self::Json(value) => Some(Persist::Write(StateJson::Value(value.clone()))),
      Self::Undefined => Some(Persist::Delete),
      Self::Host => None,
    }
  }
}

#[derive(Default)]
struct ExecStates {
  states: FxHashMap<String, StateValue>,
  disabled: FxHashSet<String>,
  mirrors: FxHashMap<String, Arc<Mirror>>,
}

type ExecMap = hashbrown::HashMap<String, ExecStates, rustc_hash::FxBuildHasher>;

#[derive(Default)]
pub struct StateStore {
  // Looked up several times per hook call by execution and layer id, which the runtime makes: a fast hash, and no
  // key copied when the entry is there.
  execs: Mutex<ExecMap>,
}

fn exec_entry<'a>(execs: &'a mut ExecMap, exec: &str) -> &'a mut ExecStates {
  execs.entry_ref(exec).or_default()
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
  mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl StateStore {
  pub fn new() -> Self {
    Self::default()
  }

  pub fn get(&self, exec: &str, layer: &str) -> Option<StateValue> {
    lock(&self.execs).get(exec)?.states.get(layer).cloned()
  }

  /// Whether a state entry exists, even an `undefined` one: "init ran" as opposed to "init never ran".
  pub fn has(&self, exec: &str, layer: &str) -> bool {
    lock(&self.execs).get(exec).is_some_and(|e| e.states.contains_key(layer))
  }

  /// Writes a state and mirrors it when the pair has a durable target. For a JS layer (`StateValue::Host`) the
  /// caller passes what to persist, serialized by JS at write time.
  pub fn set(
    &self,
    exec: &str,
    layer: &str,
    value: StateValue,
    host_persist: Option<Persist>,
    sink: &Arc<dyn DiagnosticSink>,
  ) {
    let persist = value.persisted().or(host_persist);
    let mirror = {
      let mut execs = lock(&self.execs);
      let entry = exec_entry(&mut execs, exec);
      match entry.states.get_mut(layer) {
        Some(slot) => *slot = value,
        None => {
          entry.states.insert(layer.to_owned(), value);
        }
      }
      entry.mirrors.get(layer).cloned()
    };
    if let (Some(mirror), Some(persist)) = (mirror, persist) {
      mirror.write(persist, Arc::clone(sink));
    }
  }

  /// Registers (or replaces, clean) the durable target of a layer in an execution.
  pub fn register_durable(&self, exec: &str, layer: &str, storage: Arc<dyn Storage>, key: String) {
    let mirror = Arc::new(Mirror::new(layer.to_owned(), storage, key));
    exec_entry(&mut lock(&self.execs), exec).mirrors.insert(layer.to_owned(), mirror);
  }

  pub fn disable(&self, exec: &str, layer: &str) {
    exec_entry(&mut lock(&self.execs), exec).disabled.insert(layer.to_owned());
  }

  /// Whether the gate keeps `layer` out of `exec`'s phases: it is disabled, or it `needs_state` (it has an init) and
  /// has none. [`StateStore::is_disabled`] and [`StateStore::has`] under one lock, as every phase asks it of every
  /// layer.
  pub fn kept_out(&self, exec: &str, layer: &str, needs_state: bool) -> bool {
    match lock(&self.execs).get(exec) {
      Some(entry) => entry.disabled.contains(layer) || (needs_state && !entry.states.contains_key(layer)),
      None => needs_state,
    }
  }

  pub fn is_disabled(&self, exec: &str, layer: &str) -> bool {
    lock(&self.execs).get(exec).is_some_and(|e| e.disabled.contains(layer))
  }

  /// Awaits every mirror write of the execution that is in flight or pending when this is called.
  pub async fn flush(&self, exec: &str) {
    let mirrors: Vec<Arc<Mirror>> =
      lock(&self.execs).get(exec).map(|e| e.mirrors.values().cloned().collect()).unwrap_or_default();
    for mirror in mirrors {
      mirror.idle().await;
    }
  }

  /// Drops the execution's states, registrations and disabled set. Writes already in flight still finish.
  pub fn cleanup(&self, exec: &str) {
    lock(&self.execs).remove(exec);
  }

  /// Number of executions with live state; a harness that cleans up keeps this flat across turns (D15).
  pub fn live_executions(&self) -> usize {
    lock(&self.execs).len()
  }
}

/// One durable target. Writes coalesce: latest value wins, at most one storage call in flight.
struct Mirror {
  layer: String,
  storage: Arc<dyn Storage>,
  key: String,
  pending: Mutex<MirrorQueue>,
  idle: Notify,
}

#[derive(Default)]
struct MirrorQueue {
  latest: Option<Persist>,
  running: bool,
}

impl Mirror {
  fn new(layer: String, storage: Arc<dyn Storage>, key: String) -> Self {
    Self { layer, storage, key, pending: Mutex::default(), idle: Notify::new() }
  }

  fn write(self: Arc<Self>, persist: Persist, sink: Arc<dyn DiagnosticSink>) {
    // A store that answers at once is written below, inline, and its refusal is reported in order with the write.
    // Another is written by a task, so JS's text that it would refuse (nested too deep) is refused here and now:
    // reported later, it could reach JS after the run the write belongs to has ended.
    let persist = match persist {
      Persist::Write(StateJson::Text(text)) if !self.storage.answers_at_once() => match js_json_text(text) {
        Ok(text) => Persist::Write(StateJson::Text(text)),
        Err(error) => return sink.diagnostic(&self.layer, "persist", &error),
      },
      persist => persist,
    };
    let mut queue = lock(&self.pending);
    if queue.running {
      queue.latest = Some(persist);
      return;
    }
    // The value of the write that starts the loop is taken now, so a burst persists its first value and its last.
    queue.running = true;
    drop(queue);
    // A store in memory is written here and now: a task of its own would cost a thread hand-off each write.
    let at_once = self.storage.answers_at_once();
    let mut drain = Box::pin(async move { self.drain(persist, sink).await });
    if !at_once || drain.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending() {
      tokio::spawn(drain);
    }
  }

  async fn drain(&self, first: Persist, sink: Arc<dyn DiagnosticSink>) {
    let mut next = first;
    loop {
      let outcome = match next {
        Persist::Write(StateJson::Value(value)) => self.storage.set(&self.key, value).await,
        Persist::Write(StateJson::Text(text)) => self.storage.set_json(&self.key, text).await,
        Persist::Delete => self.storage.delete(&self.key).await,
      };
      if let Err(error) = outcome {
        sink.diagnostic(&self.layer, "persist", &error.message);
      }
      let mut queue = lock(&self.pending);
      match queue.latest.take() {
        Some(latest) => next = latest,
        None => {
          queue.running = false;
          break;
        }
      }
    }
    self.idle.notify_waiters();
  }

  async fn idle(&self) {
    loop {
      let notified = self.idle.notified();
      tokio::pin!(notified);
      // Register before checking, so a drain that ends in between still wakes us.
      notified.as_mut().enable();
      if !lock(&self.pending).running {
        return;
      }
      notified.await;
    }
  }
}

#[cfg(test)]
mod tests {
  use async_trait::async_trait;
  use serde_json::json;

  use super::*;
  use crate::storage::{InMemoryStorage, StorageError, StorageResult};

  #[test]
  fn the_gate_keeps_out_disabled_layers_and_layers_whose_init_left_no_state() {
    let store = StateStore::new();
    let sink: Arc<dyn DiagnosticSink> = Arc::new(Collect::default());
    // No execution yet: a layer with an init has no state; one without is let in.
    assert!(store.kept_out("E", "a", true));
    assert!(!store.kept_out("E", "a", false));
    store.set("E", "a", StateValue::Undefined, None, &sink);
    assert!(!store.kept_out("E", "a", true), "an undefined state is still a state");
    assert!(store.kept_out("E", "b", true));
    assert!(!store.kept_out("E", "b", false));
    store.disable("E", "b");
    assert!(store.kept_out("E", "b", false), "disabled keeps it out either way");
    store.disable("E", "a");
    assert!(store.kept_out("E", "a", true));
  }

  #[derive(Default)]
  struct Collect(Mutex<Vec<String>>);

  impl DiagnosticSink for Collect {
    fn diagnostic(&self, layer_id: &str, hook: &str, message: &str) {
      lock(&self.0).push(format!("{layer_id}:{hook}:{message}"));
    }
  }

  /// A store whose writes are slow and counted, to observe coalescing.
  #[derive(Default)]
  struct SlowStorage {
    inner: InMemoryStorage,
    writes: Mutex<Vec<Value>>,
    fail: bool,
  }

  #[async_trait]
  impl Storage for SlowStorage {
    async fn get(&self, key: &str) -> StorageResult<Option<Value>> {
      self.inner.get(key).await
    }
    async fn set(&self, key: &str, value: Value) -> StorageResult<()> {
      tokio::time::sleep(std::time::Duration::from_millis(5)).await;
      lock(&self.writes).push(value.clone());
      if self.fail {
        return Err(StorageError::new("disk full"));
      }
      self.inner.set(key, value).await
    }
    async fn delete(&self, key: &str) -> StorageResult<()> {
      self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> StorageResult<Vec<String>> {
      self.inner.list(prefix).await
    }
  }

  #[tokio::test]
  async fn a_burst_of_writes_persists_the_first_and_the_last() {
    let store = StateStore::new();
    let sink: Arc<dyn DiagnosticSink> = Arc::new(Collect::default());
    let storage = Arc::new(SlowStorage::default());
    store.register_durable("E", "w", Arc::clone(&storage) as Arc<dyn Storage>, "layers/w/T/state".into());
    for n in 0..10 {
      store.set("E", "w", StateValue::Json(json!(n)), None, &sink);
    }
    store.flush("E").await;
    assert_eq!(*lock(&storage.writes), vec![json!(0), json!(9)]);
    assert_eq!(storage.inner.get_now("layers/w/T/state"), Some(json!(9)));
  }

  #[tokio::test]
  async fn clearing_deletes_the_durable_key_and_keeps_an_entry() {
    let store = StateStore::new();
    let sink: Arc<dyn DiagnosticSink> = Arc::new(Collect::default());
    let storage = Arc::new(InMemoryStorage::new());
    store.register_durable("E", "w", Arc::clone(&storage) as Arc<dyn Storage>, "k".into());
    store.set("E", "w", StateValue::Json(json!({"a": 1})), None, &sink);
    store.flush("E").await;
    assert_eq!(storage.get_now("k"), Some(json!({"a": 1})));
    store.set("E", "w", StateValue::Undefined, None, &sink);
    store.flush("E").await;
    assert_eq!(storage.get_now("k"), None);
    assert!(store.has("E", "w"));
    assert_eq!(store.get("E", "w"), Some(StateValue::Undefined));
  }

  #[test]
  fn a_store_in_memory_is_written_at_once_without_a_runtime() {
    // No tokio runtime here: a write that needed a task of its own would panic.
    let store = StateStore::new();
    let sink: Arc<dyn DiagnosticSink> = Arc::new(Collect::default());
    let storage = Arc::new(InMemoryStorage::new());
    store.register_durable("E", "w", Arc::clone(&storage) as Arc<dyn Storage>, "k".into());
    store.set("E", "w", StateValue::Json(json!({"n": 1})), None, &sink);
    assert_eq!(storage.get_now("k"), Some(json!({"n": 1})));
    store.set("E", "w", StateValue::Json(json!({"n": 2})), None, &sink);
    assert_eq!(storage.get_now("k"), Some(json!({"n": 2})));
  }

  #[tokio::test]
  async fn host_states_persist_what_js_serialized() {
    let store = StateStore::new();
    let sink: Arc<dyn DiagnosticSink> = Arc::new(Collect::default());
    let storage = Arc::new(InMemoryStorage::new());
    store.register_durable("E", "js", Arc::clone(&storage) as Arc<dyn Storage>, "k".into());
    store.set("E", "js", StateValue::Host, Some(Persist::Write(StateJson::Text(r#"{"entries":["x"]}"#.into()))), &sink);
    store.flush("E").await;
    assert_eq!(storage.get_now("k"), Some(json!({"entries": ["x"]})));
  }

  #[tokio::test]
  async fn failed_writes_become_persist_diagnostics() {
    let store = StateStore::new();
    let collect = Arc::new(Collect::default());
    let sink: Arc<dyn DiagnosticSink> = Arc::clone(&collect) as Arc<dyn DiagnosticSink>;
    let storage = Arc::new(SlowStorage { fail: true, ..SlowStorage::default() });
    store.register_durable("E", "w", storage as Arc<dyn Storage>, "k".into());
    store.set("E", "w", StateValue::Json(json!(1)), None, &sink);
    store.flush("E").await;
    assert_eq!(*lock(&collect.0), vec!["w:persist:disk full".to_owned()]);
  }

  #[tokio::test]
  async fn js_text_a_task_store_would_refuse_is_reported_at_the_write_itself() {
    let store = StateStore::new();
    let collect = Arc::new(Collect::default());
    let sink: Arc<dyn DiagnosticSink> = Arc::clone(&collect) as Arc<dyn DiagnosticSink>;
    let storage = Arc::new(SlowStorage::default());
    store.register_durable("E", "js", Arc::clone(&storage) as Arc<dyn Storage>, "k".into());
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    store.set("E", "js", StateValue::Host, Some(Persist::Write(StateJson::Text(deep))), &sink);
    // Before any task ran: the report is in order with the write.
    assert_eq!(lock(&collect.0).len(), 1);
    assert!(lock(&collect.0)[0].starts_with("js:persist:the value nests deeper than 128 levels"));
    store.flush("E").await;
    assert!(lock(&storage.writes).is_empty(), "nothing was written");
  }

  #[tokio::test]
  async fn unregistered_and_cleaned_up_executions() {
    let store = StateStore::new();
    let sink: Arc<dyn DiagnosticSink> = Arc::new(Collect::default());
    assert!(!store.has("E", "w"));
    store.set("E", "w", StateValue::Json(json!(1)), None, &sink);
    store.disable("E", "x");
    assert!(store.is_disabled("E", "x"));
    assert_eq!(store.live_executions(), 1);
    store.cleanup("E");
    assert!(!store.has("E", "w"));
    assert!(!store.is_disabled("E", "x"));
    assert_eq!(store.live_executions(), 0);
  }
}

/// What a hook call did to its layer's state, as reported back for the store and the mirror.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum StateWrite {
  #[default]
  Unchanged,
  /// A new state; `persist` is its JSON when the layer is durable.
  Set { persist: Option<StateJson> },
  /// The state became `undefined`.
  Cleared,
}
