//! Sessions: the queue, turns, delivery modes, responses, aborts, history and events of `harness.execute`.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use noetic_runtime::harness::session::{DeliveryMode, QueuedMessage, Status, TurnOutcome};
use noetic_runtime::harness::{Harness, HarnessConfig, Model, ScriptedModel, ScriptedTurn};
use noetic_runtime::host::*;
use noetic_runtime::items::{Item, create_message};
use noetic_runtime::memory::lifecycle::MemoryEnv;
use noetic_runtime::memory::registry::LayerSet;
use noetic_runtime::memory::state::{DiagnosticSink, StateStore};
use noetic_runtime::steps::{LlmStep, ModelParams, Step};
use noetic_runtime::storage::InMemoryStorage;
use serde_json::Value;
use tokio::sync::{Semaphore, oneshot};

/// A host whose step function answers `reply <n>` for its n-th call, and can be made to wait until released.
#[derive(Default)]
struct GateHost {
  calls: Mutex<Vec<String>>,
  gate: Option<Arc<Semaphore>>,
  fail_first: bool,
}

#[async_trait]
impl Host for GateHost {
  async fn run_hooks(&self, batch: HookBatch) -> Vec<HookReply> {
    batch.calls.iter().map(|_| HookReply::of(HookStatus::Ok)).collect()
  }
  async fn run_step(&self, call: StepCall) -> Result<StepValue, HostError> {
    let n = {
      let mut calls = self.calls.lock().unwrap();
      calls.push(call.context.clone());
      calls.len()
    };
    if let Some(gate) = &self.gate {
      gate.acquire().await.expect("gate").forget();
    }
    if self.fail_first && n == 1 {
      return Err(HostError::Thrown { message: "first-turn-boom".into(), error: None });
    }
    Ok(StepValue::Text(format!("reply {n}")))
  }
  async fn call_model(&self, _call: ModelCall) -> Result<ModelReply, HostError> {
    unreachable!("no test model here")
  }
  async fn call_tool(&self, _call: ToolCall) -> Result<ToolReply, HostError> {
    unreachable!("no JS tools here")
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

fn harness(host: GateHost, step: Option<Step>, model: Model) -> (Arc<Harness>, Arc<GateHost>) {
  let host = Arc::new(host);
  let env = MemoryEnv {
    host: Arc::clone(&host) as Arc<dyn Host>,
    states: Arc::new(StateStore::new()),
    sink: Arc::new(Silent),
    storage: Arc::new(InMemoryStorage::new()),
  };
  let config = HarnessConfig {
    name: "agent".into(),
    layers: Arc::new(LayerSet::default()),
    projection: None,
    model,
    force_atomic_recall: false,
    initial_step: step.map(Arc::new),
    tools: Vec::new(),
  };
  (Arc::new(Harness::new(config, env)), host)
}

fn run_step() -> Step {
  Step::Run { id: "turn".into(), execute: 1, retry: None, subprocess: None, in_place: false }
}

fn llm_step() -> Step {
  Step::Llm(Box::new(LlmStep {
    id: "chat".into(),
    model: "m".into(),
    instructions: None,
    tools: None,
    projection: None,
    params: ModelParams::default(),
    output: None,
    emit: Default::default(),
    source: None,
    lazy: None,
  }))
}

fn message(id: &str, text: &str, mode: DeliveryMode) -> QueuedMessage {
  QueuedMessage {
    id: id.into(),
    items: vec![Arc::new(create_message(text, "user").expect("message"))],
    mode,
    resource_id: None,
    layers: None,
    state: None,
  }
}

/// Queues a message and spawns the session's turns when it started them.
fn execute(harness: &Arc<Harness>, thread: &str, message: QueuedMessage) {
  if let Some(drain) = harness.execute_message(thread, message).expect("a step is configured") {
    tokio::spawn(drain);
  }
}

async fn response(harness: &Arc<Harness>, thread: &str) -> TurnOutcome {
  let (send, receive) = oneshot::channel();
  harness.agent_response(thread, Box::new(move |outcome| drop(send.send(outcome))));
  receive.await.expect("answered")
}

fn text(outcome: &TurnOutcome) -> String {
  outcome.as_ref().map(|r| r.text.as_str().unwrap_or_default().to_owned()).unwrap_or_else(|e| format!("error: {e}"))
}

fn events(harness: &Harness, thread: &str) -> Vec<Value> {
  let streams = Arc::clone(&harness.session(thread).streams);
  let cursor = streams.events.open_reader();
  let batch = streams.events.read(cursor, 1000, Box::new(|| {}));
  batch.map(|b| b.events.iter().map(|e| serde_json::from_str(e).expect("json")).collect()).unwrap_or_default()
}

fn event_types(harness: &Harness, thread: &str) -> Vec<String> {
  events(harness, thread).iter().map(|e| e["type"].as_str().unwrap_or_default().to_owned()).collect()
}

async fn wait_for_calls(host: &GateHost, n: usize) {
  for _ in 0..200 {
    if host.calls.lock().unwrap().len() >= n {
      return;
    }
    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
  }
  panic!("the step was not called {n} times");
}

async fn wait_idle(harness: &Harness, thread: &str) {
  for _ in 0..200 {
    if harness.session(thread).status() == Status::Idle {
      return;
    }
    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
  }
  panic!("the session did not go idle");
}

#[tokio::test]
async fn the_first_turn_starts_inside_execute_and_answers_with_its_text() {
  let (harness, _) = harness(GateHost::default(), Some(run_step()), Model::None);
  execute(&harness, "T", message("m1", "hello", DeliveryMode::NextTurn));
  assert!(matches!(harness.session("T").status(), Status::Generating { .. }));
  assert_eq!(text(&response(&harness, "T").await), "reply 1");
  assert_eq!(harness.session("T").status(), Status::Idle);
  let events = events(&harness, "T");
  assert_eq!(events[0]["type"], "agent:turn_started");
  assert_eq!(events[0]["data"]["messageIds"], serde_json::json!(["m1"]));
  assert_eq!(event_types(&harness, "T").last().map(String::as_str), Some("agent:turn_completed"));
}

#[tokio::test]
async fn messages_queued_during_a_turn_run_together_in_the_next_one() {
  let gate = Arc::new(Semaphore::new(0));
  let host = GateHost { gate: Some(Arc::clone(&gate)), ..GateHost::default() };
  let (harness, host) = harness(host, Some(run_step()), Model::None);
  execute(&harness, "T", message("a", "first", DeliveryMode::NextTurn));
  wait_for_calls(&host, 1).await;
  execute(&harness, "T", message("b", "second", DeliveryMode::NextTurn));
  execute(&harness, "T", message("c", "third", DeliveryMode::BetweenRounds));
  assert_eq!(harness.session("T").queue_size(), 2);
  gate.add_permits(2);
  assert_eq!(text(&response(&harness, "T").await), "reply 2");
  let started: Vec<Value> = events(&harness, "T")
    .into_iter()
    .filter(|e| e["type"] == "agent:turn_started")
    .map(|e| e["data"]["messageIds"].clone())
    .collect();
  assert_eq!(started, [serde_json::json!(["a"]), serde_json::json!(["b", "c"])]);
  // Both turns ran in the session's one context, whose log holds every message.
  let ctx = harness.session("T").context().expect("context");
  assert_eq!(ctx.state().log.len(), 3);
}

#[tokio::test]
async fn an_interrupt_aborts_the_turn_in_flight_and_runs_first() {
  let gate = Arc::new(Semaphore::new(0));
  let host = GateHost { gate: Some(Arc::clone(&gate)), ..GateHost::default() };
  let (harness, host) = harness(host, Some(run_step()), Model::None);
  execute(&harness, "T", message("a", "first", DeliveryMode::NextTurn));
  wait_for_calls(&host, 1).await;
  execute(&harness, "T", message("queued", "later", DeliveryMode::NextTurn));
  execute(&harness, "T", message("now", "stop that", DeliveryMode::Interrupt));
  assert!(matches!(harness.session("T").status(), Status::Aborting { .. }));
  gate.add_permits(10);
  // A waiter registered during the aborted turn would get its error; ask once the restarted turn is done.
  wait_for_calls(&host, 2).await;
  wait_idle(&harness, "T").await;
  let final_text = text(&response(&harness, "T").await);
  let types = event_types(&harness, "T");
  assert!(types.contains(&"agent:turn_aborted".to_owned()), "{types:?}");
  let started: Vec<Value> = events(&harness, "T")
    .into_iter()
    .filter(|e| e["type"] == "agent:turn_started")
    .map(|e| e["data"]["messageIds"].clone())
    .collect();
  assert_eq!(started.last(), Some(&serde_json::json!(["now", "queued"])));
  assert_eq!(final_text, "reply 2");
}

#[tokio::test]
async fn abort_keeps_queued_messages_which_drive_a_fresh_turn() {
  let gate = Arc::new(Semaphore::new(0));
  let host = GateHost { gate: Some(Arc::clone(&gate)), ..GateHost::default() };
  let (harness, host) = harness(host, Some(run_step()), Model::None);
  execute(&harness, "T", message("a", "first", DeliveryMode::NextTurn));
  wait_for_calls(&host, 1).await;
  execute(&harness, "T", message("b", "follow-up", DeliveryMode::NextTurn));
  let (ended, ended_rx) = oneshot::channel();
  harness.abort_session("T", "user", Box::new(move |outcome| drop(ended.send(outcome))));
  gate.add_permits(10);
  let aborted = ended_rx.await.expect("told");
  assert!(aborted.is_err(), "the aborted turn ends with an error");
  assert_eq!(text(&response(&harness, "T").await), "reply 2");
  assert_eq!(host.calls.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_failed_turn_fails_its_waiters_and_the_next_turn_answers_later_ones() {
  let host = GateHost { fail_first: true, ..GateHost::default() };
  let (harness, _) = harness(host, Some(run_step()), Model::None);
  execute(&harness, "T", message("a", "first", DeliveryMode::NextTurn));
  assert!(text(&response(&harness, "T").await).contains("first-turn-boom"));
  // Idle with nothing queued: the failure is answered at once; with a message queued, the next turn answers.
  assert!(response(&harness, "T").await.is_err());
  execute(&harness, "T", message("b", "second", DeliveryMode::NextTurn));
  assert_eq!(text(&response(&harness, "T").await), "reply 2");
}

#[tokio::test]
async fn the_history_grows_turn_by_turn_each_turn_in_a_context_of_its_own() {
  let script = (1..=3).map(|i| ScriptedTurn { text: Some(format!("answer {i}")), ..ScriptedTurn::default() }).collect();
  let (harness, _) = harness(GateHost::default(), Some(llm_step()), Model::Scripted(ScriptedModel::new(script)));
  let mut contexts = Vec::new();
  for i in 1..=3 {
    execute(&harness, "T", message(&format!("m{i}"), &format!("question {i}"), DeliveryMode::NextTurn));
    let outcome = response(&harness, "T").await;
    let reply = outcome.expect("answered");
    assert_eq!(reply.text.as_str(), Some(format!("answer {i}").as_str()));
    assert_eq!(reply.log_len, 2 * i, "question and answer of every turn so far");
    contexts.push(reply.context_id.clone());
  }
  contexts.dedup();
  assert_eq!(contexts.len(), 3, "every turn is an execution in a fresh context");
  assert_eq!(harness.live_contexts(), 1, "only the last turn's context holds the history");
  // Another thread is its own session.
  execute(&harness, "U", message("u1", "elsewhere", DeliveryMode::NextTurn));
  assert_eq!(response(&harness, "U").await.expect("answered").log_len, 1 + 1);
}

#[tokio::test]
async fn seeding_replaces_the_history_and_the_next_turn_takes_it_over() {
  let (harness, _) = harness(GateHost::default(), Some(run_step()), Model::None);
  let seeded: Vec<Arc<Item>> =
    (0..3).map(|i| Arc::new(create_message(format!("old {i}"), "user").expect("item"))).collect();
  let seeded_ctx = harness.seed_session("T", seeded.clone()).expect("seeded");
  execute(&harness, "T", message("a", "new", DeliveryMode::NextTurn));
  let first = response(&harness, "T").await.expect("answered");
  assert_ne!(first.context_id, seeded_ctx, "the turn ran in a context of its own");
  assert_eq!(first.log_len, 4, "the seeded history and the turn's input");
  assert!(harness.context(&seeded_ctx).is_none(), "the seed's context closed once the turn took its history");
  let mut other = message("b", "as someone else", DeliveryMode::NextTurn);
  other.resource_id = Some("R2".into());
  execute(&harness, "T", other);
  let second = response(&harness, "T").await.expect("answered");
  assert_ne!(second.context_id, first.context_id);
  assert_eq!(second.log_len, 5, "the fresh context starts from the history");
  assert_eq!(harness.session("T").context().and_then(|c| c.resource_id.clone()).as_deref(), Some("R2"));
  // Seeding again replaces it all.
  harness.seed_session("T", seeded[..1].to_vec()).expect("seeded");
  assert_eq!(harness.session("T").context().map(|c| c.state().log.len()), Some(1));
}

#[tokio::test]
async fn execute_without_an_initial_step_is_no_step_configured() {
  let (harness, _) = harness(GateHost::default(), None, Model::None);
  let error = harness.execute_message("T", message("a", "hi", DeliveryMode::NextTurn)).err().expect("refused");
  assert_eq!(error.code, "NO_STEP_CONFIGURED");
  assert_eq!(harness.existing_session("T").map(|s| s.queue_size()), None, "nothing queued, no session made");
}
