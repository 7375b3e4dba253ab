//! Persisted sessions: harnesses sharing one storage take turns on a thread and see one history; turns appended at
//! the same moment are both kept, in order; an idle session leaves memory and comes back from storage.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use noetic_runtime::harness::session::{DeliveryMode, QueuedMessage, TurnOutcome};
use noetic_runtime::harness::{Harness, HarnessConfig, Model};
use noetic_runtime::host::*;
use noetic_runtime::items::create_message;
use noetic_runtime::memory::lifecycle::MemoryEnv;
use noetic_runtime::memory::registry::LayerSet;
use noetic_runtime::memory::state::{DiagnosticSink, StateStore};
use noetic_runtime::steps::Step;
use noetic_runtime::storage::{InMemoryStorage, Storage, StorageError, StorageResult};
use serde_json::Value;
use tokio::sync::{Semaphore, oneshot};

/// A host whose step answers at once, or once released when it has a gate.
#[derive(Default)]
struct StepHost {
  gate: Option<Arc<Semaphore>>,
}

#[async_trait]
impl Host for StepHost {
  async fn run_hooks(&self, batch: HookBatch) -> Vec<HookReply> {
    batch.calls.iter().map(|_| HookReply::of(HookStatus::Ok)).collect()
  }
  async fn run_step(&self, _call: StepCall) -> Result<StepValue, HostError> {
    if let Some(gate) = &self.gate {
      gate.acquire().await.expect("gate").forget();
    }
    Ok(StepValue::Text("done".into()))
  }
  async fn call_model(&self, _call: ModelCall) -> Result<ModelReply, HostError> {
    unreachable!("no model here")
  }
  async fn call_tool(&self, _call: ToolCall) -> Result<ToolReply, HostError> {
    unreachable!("no tools here")
  }
  async fn eval_until(&self, _call: UntilCall) -> Result<Verdict, HostError> {
    Ok(Verdict { stop: true, reason: None, feedback: None })
  }
  fn release_context(&self, _context: &str) {}
}

struct Silent;
impl DiagnosticSink for Silent {
  fn diagnostic(&self, _layer_id: &str, _hook: &str, _message: &str) {}
}

fn harness(storage: Arc<dyn Storage>, host: StepHost, idle: Option<Duration>) -> Arc<Harness> {
  let env = MemoryEnv {
    host: Arc::new(host) as Arc<dyn Host>,
    states: Arc::new(StateStore::new()),
    sink: Arc::new(Silent),
    storage,
  };
  let config = HarnessConfig {
    name: "agent".into(),
    layers: Arc::new(LayerSet::default()),
    projection: None,
    model: Model::None,
    force_atomic_recall: false,
    initial_step: Some(Arc::new(Step::Run {
      id: "turn".into(),
      execute: 1,
      retry: None,
      subprocess: None,
      in_place: false,
    })),
    tools: Vec::new(),
  };
  Arc::new(Harness::new(config, env).with_persisted_sessions(idle))
}

fn message(text: &str) -> QueuedMessage {
  QueuedMessage {
    id: format!("id-{text}"),
    items: vec![Arc::new(create_message(text, "user").expect("message"))],
    mode: DeliveryMode::NextTurn,
    resource_id: None,
    layers: None,
    state: None,
  }
}

fn execute(harness: &Arc<Harness>, thread: &str, text: &str) {
  if let Some(drain) = harness.execute_message(thread, message(text)).expect("a step") {
    tokio::spawn(drain);
  }
}

async fn response(harness: &Arc<Harness>, thread: &str) -> TurnOutcome {
  let (send, receive) = oneshot::channel();
  harness.agent_response(thread, Box::new(move |outcome| drop(send.send(outcome))));
  receive.await.expect("answered")
}

async fn turn(harness: &Arc<Harness>, thread: &str, text: &str) -> TurnOutcome {
  execute(harness, thread, text);
  response(harness, thread).await
}

/// The texts of the session's history in memory.
fn history(harness: &Harness, thread: &str) -> Vec<String> {
  let ctx = harness.session(thread).context().expect("a history");
  let state = ctx.state();
  state
    .log
    .items()
    .iter()
    .map(|item| item.get("content").and_then(|c| c[0]["text"].as_str()).unwrap_or_default().to_owned())
    .collect()
}

/// The texts of the stored history, entry by entry.
async fn stored(storage: &dyn Storage, thread: &str) -> Vec<Vec<String>> {
  let entries = storage.read_texts(&format!("sessions/{thread}/"), "").await.expect("read");
  entries
    .iter()
    .map(|stored| {
      let items: Vec<Value> = serde_json::from_str(stored.text.as_deref().expect("text")).expect("an array");
      items.iter().map(|item| item["content"][0]["text"].as_str().unwrap_or_default().to_owned()).collect()
    })
    .collect()
}

#[tokio::test]
async fn harnesses_taking_turns_on_one_thread_see_one_history_in_order() {
  let storage: Arc<dyn Storage> = Arc::new(InMemoryStorage::new());
  let (a, b) = (
    harness(Arc::clone(&storage), StepHost::default(), None),
    harness(Arc::clone(&storage), StepHost::default(), None),
  );
  for (i, h) in [&a, &b, &a, &b, &a].into_iter().enumerate() {
    turn(h, "T", &format!("m{i}")).await.expect("the turn ran");
  }
  let all: Vec<String> = (0..5).map(|i| format!("m{i}")).collect();
  assert_eq!(history(&a, "T"), all);
  // b's next turn catches up before it runs.
  turn(&b, "T", "m5").await.expect("ran");
  assert_eq!(history(&b, "T"), [all.clone(), vec!["m5".to_owned()]].concat());
  // One entry a turn, each with only that turn's items.
  assert_eq!(stored(&*storage, "T").await, (0..6).map(|i| vec![format!("m{i}")]).collect::<Vec<_>>());
}

#[tokio::test]
async fn two_turns_stored_at_the_same_moment_are_both_kept_one_after_the_other() {
  let storage: Arc<dyn Storage> = Arc::new(InMemoryStorage::new());
  let gate = Arc::new(Semaphore::new(0));
  let a = harness(Arc::clone(&storage), StepHost { gate: Some(Arc::clone(&gate)) }, None);
  let b = harness(Arc::clone(&storage), StepHost { gate: Some(Arc::clone(&gate)) }, None);
  // Both turns start from the same (empty) history and are in flight together.
  execute(&a, "T", "from a");
  execute(&b, "T", "from b");
  tokio::time::sleep(Duration::from_millis(20)).await;
  gate.add_permits(2);
  response(&a, "T").await.expect("a ran");
  response(&b, "T").await.expect("b ran");
  let entries = stored(&*storage, "T").await;
  assert_eq!(entries.len(), 2);
  let mut texts: Vec<String> = entries.concat();
  texts.sort();
  assert_eq!(texts, ["from a", "from b"]);
  // Whichever went second reads the stored order back on its next turn; the other catches up.
  gate.add_permits(2);
  turn(&a, "T", "a again").await.expect("ran");
  turn(&b, "T", "b again").await.expect("ran");
  let order = [entries.concat(), vec!["a again".to_owned(), "b again".to_owned()]].concat();
  assert_eq!(history(&b, "T"), order);
  assert_eq!(stored(&*storage, "T").await.concat(), order);
}

#[tokio::test]
async fn an_idle_session_leaves_memory_and_its_next_turn_reads_the_history_back() {
  let storage: Arc<dyn Storage> = Arc::new(InMemoryStorage::new());
  let h = harness(Arc::clone(&storage), StepHost::default(), Some(Duration::from_millis(30)));
  turn(&h, "T", "one").await.expect("ran");
  turn(&h, "T", "two").await.expect("ran");
  for _ in 0..200 {
    if h.existing_session("T").is_none() {
      break;
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
  }
  assert!(h.existing_session("T").is_none(), "the idle session was dropped");
  assert_eq!(h.live_contexts(), 0, "its history went with it");
  turn(&h, "T", "three").await.expect("ran");
  assert_eq!(history(&h, "T"), ["one", "two", "three"]);
}

#[tokio::test]
async fn evicting_by_hand_drops_only_an_idle_session() {
  let storage: Arc<dyn Storage> = Arc::new(InMemoryStorage::new());
  let gate = Arc::new(Semaphore::new(0));
  let h = harness(Arc::clone(&storage), StepHost { gate: Some(Arc::clone(&gate)) }, None);
  execute(&h, "T", "one");
  assert!(!h.evict_session("T"), "a session with a turn in flight stays");
  gate.add_permits(1);
  response(&h, "T").await.expect("ran");
  assert!(h.evict_session("T"));
  assert!(!h.evict_session("T"), "nothing left to drop");
  gate.add_permits(1);
  turn(&h, "T", "two").await.expect("ran");
  assert_eq!(history(&h, "T"), ["one", "two"]);
}

/// A store that can be switched off, as a database that went away.
struct Flaky {
  inner: InMemoryStorage,
  down: std::sync::atomic::AtomicBool,
}

impl Flaky {
  fn check(&self) -> StorageResult<()> {
    if self.down.load(std::sync::atomic::Ordering::SeqCst) {
      return Err(StorageError::new("connection refused"));
    }
    Ok(())
  }
}

#[async_trait]
impl Storage for Flaky {
  async fn get(&self, key: &str) -> StorageResult<Option<Value>> {
    self.check()?;
    self.inner.get(key).await
  }
  async fn set(&self, key: &str, value: Value) -> StorageResult<()> {
    self.check()?;
    self.inner.set(key, value).await
  }
  async fn delete(&self, key: &str) -> StorageResult<()> {
    self.check()?;
    self.inner.delete(key).await
  }
  async fn list(&self, prefix: &str) -> StorageResult<Vec<String>> {
    self.check()?;
    self.inner.list(prefix).await
  }
}

#[tokio::test]
async fn a_storage_outage_fails_the_turn_with_a_code_and_loses_nothing_stored() {
  let flaky = Arc::new(Flaky { inner: InMemoryStorage::new(), down: Default::default() });
  let h = harness(Arc::clone(&flaky) as Arc<dyn Storage>, StepHost::default(), None);
  turn(&h, "T", "kept").await.expect("ran");
  flaky.down.store(true, std::sync::atomic::Ordering::SeqCst);
  let failed = turn(&h, "T", "lost").await.expect_err("the turn cannot be stored");
  assert!(failed.to_string().contains("could not be"), "{failed}");
  let RunErrorCode(code) = code_of(&failed);
  assert_eq!(code, "STORAGE_UNAVAILABLE");
  flaky.down.store(false, std::sync::atomic::Ordering::SeqCst);
  turn(&h, "T", "after").await.expect("ran");
  // The unacknowledged turn is gone; the acknowledged one and the next are there, in memory and stored.
  assert_eq!(history(&h, "T"), ["kept", "after"]);
  assert_eq!(stored(&flaky.inner, "T").await.concat(), ["kept", "after"]);
}

struct RunErrorCode(String);

fn code_of(error: &noetic_runtime::harness::RunError) -> RunErrorCode {
  match error {
    noetic_runtime::harness::RunError::Config(config) => RunErrorCode(config.code.clone()),
    other => RunErrorCode(format!("not a config error: {other}")),
  }
}
