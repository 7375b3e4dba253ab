//! Eventual recall (D6) through the harness: the model call is served from the cache and never waits for a
//! recall, refreshes run in the background after init and store, and none outlives its execution. The clock is
//! paused, so a "slow" recall takes virtual seconds and ordering is deterministic.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use noetic_runtime::harness::{ExecContext, Harness, HarnessConfig, Model, RunOptions};
use noetic_runtime::host::*;
use noetic_runtime::memory::lifecycle::MemoryEnv;
use noetic_runtime::memory::native::{NativeLayer, NativeRecall, NativeWrite};
use noetic_runtime::memory::registry::{Layer, LayerImpl, LayerSet, RawBudget, RawLayer, RawTimeouts};
use noetic_runtime::memory::state::{DiagnosticSink, StateStore, StateWrite};
use noetic_runtime::memory::trace::HookSpan;
use noetic_runtime::memory::{HookKind, HookSet, LayerSpec, RecallMode, Scope};
use noetic_runtime::steps::{LlmStep, Step, Until};
use noetic_runtime::storage::{InMemoryStorage, ScopedStorage};
use serde_json::{Value, json};
use tokio::time::Instant;

/// A host whose JS layers keep a version, bumped by each store, that their recall reports as `<id> v<n>`.
#[derive(Default)]
struct VersionHost {
  versions: Mutex<HashMap<String, u32>>,
  /// The delay of each successive recall of a layer, in order; none once used up.
  delays: Mutex<HashMap<String, VecDeque<Duration>>>,
  failing: Mutex<HashSet<String>>,
  recalls: Mutex<Vec<String>>,
  /// The layer texts each model call saw, and when it was made.
  views: Mutex<Vec<Vec<String>>>,
  model_calls: Mutex<Vec<Instant>>,
  /// How long the model takes to answer.
  model_delay: Mutex<Duration>,
  running: Arc<Running>,
}

/// Recalls under way, host and built-in: a refresh that outlived its run would still count.
#[derive(Default)]
struct Running(AtomicUsize);

struct InFlight(Arc<Running>);

impl InFlight {
  fn start(running: &Arc<Running>) -> Self {
    running.0.fetch_add(1, Ordering::SeqCst);
    Self(Arc::clone(running))
  }
}

impl Drop for InFlight {
  fn drop(&mut self) {
    self.0.0.fetch_sub(1, Ordering::SeqCst);
  }
}

impl VersionHost {
  async fn recall(&self, call: &HookCall) -> HookReply {
    let _in_flight = InFlight::start(&self.running);
    let version = self.versions.lock().unwrap().get(&call.layer_id).copied().unwrap_or(0);
    self.recalls.lock().unwrap().push(call.layer_id.clone());
    let delay = self.delays.lock().unwrap().get_mut(&call.layer_id).and_then(VecDeque::pop_front).unwrap_or_default();
    let (status, recall) =
      match tokio::time::timeout(Duration::from_secs_f64(call.timeout_ms / 1000.0), tokio::time::sleep(delay)).await {
        Err(_) => (HookStatus::TimedOut(call.timeout_ms), None),
        Ok(()) if self.failing.lock().unwrap().contains(&call.layer_id) => {
          (HookStatus::Threw("index offline".into()), None)
        }
        Ok(()) => (HookStatus::Ok, Some(RecallReply::Text(format!("{} v{version}", call.layer_id)))),
      };
    HookReply { recall, ..HookReply::of(status) }
  }
}

#[async_trait]
impl Host for VersionHost {
  async fn run_hooks(&self, batch: HookBatch) -> Vec<HookReply> {
    let mut replies = Vec::new();
    for call in &batch.calls {
      let reply = match &call.args {
        HookArgs::Recall { .. } => self.recall(call).await,
        HookArgs::Store { .. } => {
          *self.versions.lock().unwrap().entry(call.layer_id.clone()).or_default() += 1;
          HookReply { state: StateWrite::Set { persist: None }, ..HookReply::of(HookStatus::Ok) }
        }
        HookArgs::Init { .. } => {
          HookReply { state: StateWrite::Set { persist: None }, ..HookReply::of(HookStatus::Ok) }
        }
        _ => HookReply::of(HookStatus::Ok),
      };
      replies.push(reply);
    }
    replies
  }
  async fn run_step(&self, _call: StepCall) -> Result<StepValue, HostError> {
    Ok(StepValue::Undefined)
  }
  async fn call_model(&self, call: ModelCall) -> Result<ModelReply, HostError> {
    self.model_calls.lock().unwrap().push(Instant::now());
    let texts = call
      .view
      .iter()
      .filter_map(|entry| match entry {
        ViewEntry::Layer { item, .. } => serde_json::from_str::<Value>(item.json_text()).ok(),
        ViewEntry::Log { .. } => None,
      })
      .map(|item| item["content"][0]["text"].as_str().unwrap_or_default().to_owned())
      .collect();
    self.views.lock().unwrap().push(texts);
    let delay = *self.model_delay.lock().unwrap();
    tokio::time::sleep(delay).await;
    let reply = r#"{"id":"m1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok"}]}"#;
    Ok(ModelReply {
      items: vec![reply.into()],
      items_checked: false,
      input_tokens: 1.0,
      output_tokens: 1.0,
      cached_tokens: None,
      cache_write_tokens: None,
      cost: None,
    })
  }
  async fn call_tool(&self, _call: ToolCall) -> Result<ToolReply, HostError> {
    Err(HostError::Thrown { message: "no tools here".into(), error: None })
  }
  async fn eval_until(&self, _call: UntilCall) -> Result<Verdict, HostError> {
    Ok(Verdict { stop: true, reason: None, feedback: None })
  }
  fn release_context(&self, _context: &str) {}
}

/// The diagnostics as `layer:hook:message`, and every hook span as `layer:hook:status`.
#[derive(Default)]
struct Diagnostics(Mutex<Vec<String>>, Mutex<Vec<String>>);

impl DiagnosticSink for Diagnostics {
  fn diagnostic(&self, layer_id: &str, hook: &str, message: &str) {
    self.0.lock().unwrap().push(format!("{layer_id}:{hook}:{message}"));
  }

  fn tracing(&self) -> bool {
    true
  }

  fn trace(&self, spans: Vec<HookSpan>) {
    let status = |span: &HookSpan| serde_json::to_value(span.status).unwrap().as_str().unwrap_or_default().to_owned();
    self.1.lock().unwrap().extend(spans.iter().map(|span| format!("{}:{}:{}", span.layer_id, span.hook, status(span))));
  }
}

fn js_layer(id: &str, slot: f64, scope: &str, mode: &str, hooks: &[&str]) -> Arc<Layer> {
  let raw = RawLayer {
    id: Some(id.into()),
    slot: Some(slot),
    scope: Some(scope.into()),
    budget: RawBudget::Range { min: Some(100.0), max: Some(1000.0) },
    hooks: hooks.iter().map(|h| ((*h).to_owned(), "function".to_owned())).collect(),
    timeouts: RawTimeouts::ms(&[("recall", 10_000.0)]),
    on_init_error: None,
    recall_mode: Some(mode.into()),
    placement: None,
    provides: vec![],
    imp: LayerImpl::Host(1),
  };
  Arc::clone(&LayerSet::register(vec![raw]).unwrap().layers()[0])
}

/// The usual eventual layer: thread-scoped, with init, recall and store.
fn eventual(id: &str, slot: f64) -> Arc<Layer> {
  js_layer(id, slot, "thread", "eventual", &["init", "recall", "store"])
}

fn atomic(id: &str, slot: f64) -> Arc<Layer> {
  js_layer(id, slot, "thread", "atomic", &["recall"])
}

struct Fixture {
  harness: Harness,
  host: Arc<VersionHost>,
  diagnostics: Arc<Diagnostics>,
}

fn fixture(layers: Vec<Arc<Layer>>, force_atomic_recall: bool) -> Fixture {
  fixture_with(layers, force_atomic_recall, Arc::default())
}

/// `running` counts the recalls under way, the host's and those of built-in layers made with it.
fn fixture_with(layers: Vec<Arc<Layer>>, force_atomic_recall: bool, running: Arc<Running>) -> Fixture {
  let host = Arc::new(VersionHost { running, ..VersionHost::default() });
  let diagnostics = Arc::new(Diagnostics::default());
  let env = MemoryEnv {
    host: Arc::clone(&host) as Arc<dyn Host>,
    states: Arc::new(StateStore::new()),
    sink: Arc::clone(&diagnostics) as Arc<dyn DiagnosticSink>,
    storage: Arc::new(InMemoryStorage::new()),
  };
  let config = HarnessConfig {
    name: "t".into(),
    layers: Arc::new(LayerSet::from_layers(layers)),
    projection: None,
    model: Model::Host,
    force_atomic_recall,
    initial_step: None,
    tools: Vec::new(),
  };
  Fixture { harness: Harness::new(config, env), host, diagnostics }
}

impl Fixture {
  async fn turn(&self, thread: &str) {
    let options = RunOptions { thread_id: Some(thread.into()), ..RunOptions::default() };
    self.harness.run(&llm(), StepValue::Text("hi".into()), options).await.unwrap();
  }

  fn views(&self) -> Vec<Vec<String>> {
    self.host.views.lock().unwrap().clone()
  }

  fn delay_recalls(&self, layer: &str, delays: &[u64]) {
    let mut all = self.host.delays.lock().unwrap();
    all.entry(layer.to_owned()).or_default().extend(delays.iter().map(|s| Duration::from_secs(*s)));
  }

  /// Nothing of any execution is left: no state, no context, no refresh registered or still running.
  #[track_caller]
  fn assert_all_ended(&self) {
    assert_eq!(self.harness.env.states.live_executions(), 0);
    assert_eq!(self.harness.live_contexts(), 0);
    assert_eq!(self.harness.recall_cache.pending(), 0);
    assert_eq!(self.host.running.0.load(Ordering::SeqCst), 0, "a recall is still running");
  }
}

fn llm() -> Step {
  Step::Llm(Box::new(LlmStep {
    id: "s".into(),
    model: "m".into(),
    instructions: None,
    tools: None,
    projection: None,
    lazy: None,
    params: Default::default(),
    output: None,
    emit: Default::default(),
    source: None,
  }))
}

fn looped(steps: u32) -> Step {
  Step::Loop(noetic_runtime::steps::LoopStep {
    id: "l".into(),
    steps: vec![Arc::new(llm())],
    until: Until::MaxSteps(f64::from(steps)),
    max_iterations: 100.0,
    max_history: noetic_runtime::steps::DEFAULT_LOOP_HISTORY,
    prepare_next: None,
    on_error: None,
    inbox: None,
    park_timeout_ms: 0.0,
  })
}

fn strings(texts: &[&str]) -> Vec<String> {
  texts.iter().map(|t| (*t).to_owned()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_cold_cache_contributes_nothing_and_a_slow_recall_never_delays_the_model_call() {
  let f = fixture(vec![atomic("late", 100.0), eventual("slow", 50.0), atomic("early", 10.0)], false);
  // Both refreshes of the first turn (after init, after store) take 3 s.
  f.delay_recalls("slow", &[3, 3]);
  let start = Instant::now();
  f.turn("T").await;
  let model_at = f.host.model_calls.lock().unwrap()[0];
  assert_eq!(model_at - start, Duration::ZERO, "the model call waited for the eventual recall");
  // The run itself waits for the refresh after its last store: the next turn on the thread wants it.
  assert!(start.elapsed() >= Duration::from_secs(3));
  assert_eq!(f.views()[0], strings(&["early v0", "late v0"]));

  // The next turn sees the refresh made after the first turn's store, in slot order among the atomic layers.
  f.turn("T").await;
  assert_eq!(f.views()[1], strings(&["early v0", "slow v1", "late v0"]));
  // Another thread has its own key, cold.
  f.turn("U").await;
  assert_eq!(f.views()[2], strings(&["early v0", "late v0"]));
  f.assert_all_ended();
  assert!(f.diagnostics.0.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn force_atomic_recall_recalls_every_layer_in_the_hot_path() {
  let f = fixture(vec![eventual("slow", 50.0)], true);
  f.delay_recalls("slow", &[3]);
  let start = Instant::now();
  f.turn("T").await;
  let model_at = f.host.model_calls.lock().unwrap()[0];
  assert_eq!(model_at - start, Duration::from_secs(3));
  assert_eq!(f.views()[0], strings(&["slow v0"]));
  // No background refresh ran: one recall, the atomic one, and nothing cached.
  assert_eq!(*f.host.recalls.lock().unwrap(), ["slow"]);
  assert!(f.harness.recall_cache.is_empty());
  f.assert_all_ended();
}

#[tokio::test(start_paused = true)]
async fn a_finished_refresh_is_seen_by_the_next_model_call_of_the_same_run() {
  let f = fixture(vec![eventual("e", 50.0)], false);
  // The model takes a moment, long enough for a refresh started before it to finish.
  *f.host.model_delay.lock().unwrap() = Duration::from_millis(10);
  f.harness.run(&looped(3), StepValue::Text("hi".into()), RunOptions::default()).await.unwrap();
  // Call 1: cold. Call 2: the refresh after init finished during call 1 (the one after store 1 has not run yet).
  // Call 3: the refresh after store 1 finished during call 2.
  assert_eq!(f.views(), [strings(&[]), strings(&["e v0"]), strings(&["e v1"])]);
  f.assert_all_ended();
}

#[tokio::test(start_paused = true)]
async fn an_older_refresh_finishing_late_never_overwrites_a_newer_one() {
  let f = fixture(vec![eventual("e", 50.0)], false);
  // The refresh after init starts during the model call, sees v0 and takes 5 s; the one after the store sees v1 and
  // is instant, so it finishes first.
  *f.host.model_delay.lock().unwrap() = Duration::from_millis(10);
  f.delay_recalls("e", &[5, 0]);
  f.turn("T").await;
  f.turn("T").await;
  assert_eq!(f.views()[1], strings(&["e v1"]));
  f.assert_all_ended();
}

#[tokio::test(start_paused = true)]
async fn a_failing_refresh_is_a_diagnostic_and_the_previous_entry_stays() {
  let f = fixture(vec![eventual("e", 50.0)], false);
  f.turn("T").await;
  f.host.failing.lock().unwrap().insert("e".into());
  f.turn("T").await;
  f.turn("T").await;
  assert_eq!(f.views()[1..], [strings(&["e v1"]), strings(&["e v1"])]);
  let diagnostics = f.diagnostics.0.lock().unwrap().clone();
  // Turns 2 and 3 each refreshed after init and after store.
  assert_eq!(diagnostics, vec!["e:recall:index offline"; 4]);

  // A refresh that times out keeps it too.
  f.host.failing.lock().unwrap().clear();
  f.delay_recalls("e", &[60, 60]);
  f.turn("T").await;
  assert_eq!(
    f.diagnostics.0.lock().unwrap()[4..],
    ["e:recall:Timeout after 10000ms", "e:recall:Timeout after 10000ms"]
  );
  f.turn("T").await;
  assert_eq!(f.views()[4], strings(&["e v1"]));
  f.assert_all_ended();
}

/// A built-in-style layer: state `{n}`, bumped by store, recalled as `native n=<n>`, optionally slowly.
struct Counter {
  recall_delay: Mutex<Duration>,
  running: Arc<Running>,
}

#[async_trait]
impl NativeLayer for Counter {
  async fn init(&self, _storage: &ScopedStorage) -> Result<Option<Value>, String> {
    Ok(Some(json!({ "n": 0 })))
  }

  async fn recall(
    &self,
    state: Option<&Value>,
    _budget: f64,
    _exec: &noetic_runtime::host::ExecInfo,
  ) -> Result<Option<NativeRecall>, String> {
    let _in_flight = InFlight::start(&self.running);
    let delay = *self.recall_delay.lock().unwrap();
    tokio::time::sleep(delay).await;
    let n = state.and_then(|s| s["n"].as_u64()).unwrap_or_default();
    Ok(Some(NativeRecall { text: format!("native n={n}"), token_count: 3.0, state: None }))
  }

  async fn store(
    &self,
    state: Option<&Value>,
    _new_items: &[Arc<noetic_runtime::items::Item>],
    _exec: &ExecInfo,
  ) -> Result<NativeWrite, String> {
    let n = state.and_then(|s| s["n"].as_u64()).unwrap_or_default();
    Ok(NativeWrite::Set(json!({ "n": n + 1 })))
  }
}

fn native_layer(counter: Arc<Counter>, scope: Scope) -> Arc<Layer> {
  let mut spec = LayerSpec::new("counter", 100.0, scope);
  spec.hooks = [HookKind::Init, HookKind::Recall, HookKind::Store].into_iter().collect::<HookSet>();
  spec.recall_mode = RecallMode::Eventual;
  spec.timeouts[HookKind::Recall as usize] = Some(50.0);
  Arc::new(Layer { spec, imp: LayerImpl::Native(counter), provides: vec![], handle: None })
}

#[tokio::test(start_paused = true)]
async fn built_in_layers_refresh_in_the_background_under_their_recall_timeout() {
  let running = Arc::new(Running::default());
  let counter = Arc::new(Counter { recall_delay: Mutex::new(Duration::ZERO), running: Arc::clone(&running) });
  let f = fixture_with(vec![native_layer(Arc::clone(&counter), Scope::Thread)], false, running);
  f.turn("T").await;
  f.turn("T").await;
  assert_eq!(f.views(), [strings(&[]), strings(&["native n=1"])]);

  // Slower than its 50 ms recall timeout: a diagnostic each time, and the entry stays.
  *counter.recall_delay.lock().unwrap() = Duration::from_secs(1);
  let start = Instant::now();
  f.turn("T").await;
  assert!(start.elapsed() < Duration::from_secs(1), "a refresh outlived the layer's recall timeout");
  f.turn("T").await;
  assert_eq!(f.views()[2..], [strings(&["native n=1"]), strings(&["native n=1"])]);
  assert_eq!(
    f.diagnostics.0.lock().unwrap()[..2],
    ["counter:recall:Timeout after 50ms", "counter:recall:Timeout after 50ms"]
  );
  // Its spans say it timed out, not that it failed.
  let recalls: Vec<String> =
    f.diagnostics.1.lock().unwrap().iter().filter(|span| span.starts_with("counter:recall")).cloned().collect();
  assert_eq!(recalls[recalls.len() - 2..], ["counter:recall:timeout", "counter:recall:timeout"]);
  assert!(recalls[..2].iter().all(|span| span == "counter:recall:ok"), "{recalls:?}");
  f.assert_all_ended();
}

#[tokio::test(start_paused = true)]
async fn execution_entries_go_with_their_execution_and_no_refresh_outlives_it() {
  let scratch = js_layer("scratch", 50.0, "execution", "eventual", &["init", "recall", "store"]);
  // No init, so it also runs in a spawned child that inherits the layers (§5.2).
  let loose = js_layer("loose", 60.0, "execution", "eventual", &["recall", "store"]);
  let running = Arc::new(Running::default());
  let counter =
    Arc::new(Counter { recall_delay: Mutex::new(Duration::from_millis(20)), running: Arc::clone(&running) });
  let f = fixture_with(vec![scratch, loose, native_layer(counter, Scope::Execution)], false, running);
  // Every JS refresh would take 30 s: the run does not wait for refreshes whose entries die with it.
  f.delay_recalls("scratch", &[30; 20]);
  f.delay_recalls("loose", &[30; 30]);
  for run in 0..10 {
    let start = Instant::now();
    f.turn(&format!("T{run}")).await;
    assert!(start.elapsed() < Duration::from_secs(1), "run {run} waited for an execution-scoped refresh");
    f.assert_all_ended();
    assert!(f.harness.recall_cache.is_empty(), "run {run} left execution entries behind");
  }
  // A new execution starts cold every time.
  assert!(f.views().iter().all(Vec::is_empty));

  // A spawned child that inherits the layers ends its refreshes too.
  let spawn = Step::Spawn {
    id: "child".into(),
    child: Arc::new(llm()),
    memory: None,
    timeout_ms: None,
    context_in: Default::default(),
    context_out: Default::default(),
  };
  let start = Instant::now();
  f.harness.run(&spawn, StepValue::Text("hi".into()), RunOptions::default()).await.unwrap();
  assert!(start.elapsed() < Duration::from_secs(1));
  assert_eq!(f.views().last().unwrap(), &strings(&[]), "the child's first model call is cold");
  f.assert_all_ended();
  assert!(f.harness.recall_cache.is_empty());
}

#[tokio::test(start_paused = true)]
async fn each_run_of_a_kept_context_is_an_execution_whose_execution_keys_go_with_it() {
  let scratch = js_layer("scratch", 50.0, "execution", "eventual", &["init", "recall", "store"]);
  let f = fixture(vec![scratch], false);
  let ctx =
    f.harness.open_context(ExecContext::new("C".into(), "T".into(), None, 0, None, Arc::clone(&f.harness.layers)));
  f.harness.run_existing(&ctx, &llm(), StepValue::Text("one".into())).await.unwrap();
  assert_eq!(f.harness.recall_cache.pending(), 0);
  assert!(f.harness.recall_cache.is_empty(), "the run's execution key went with it");
  f.harness.run_existing(&ctx, &llm(), StepValue::Text("two".into())).await.unwrap();
  // Run 2 is an execution of its own: its execution-scoped layer starts cold, as it started empty.
  assert_eq!(f.views(), [strings(&[]), strings(&[])]);
  assert!(f.harness.recall_cache.is_empty());
  f.harness.drop_context("C");
  assert!(f.harness.recall_cache.is_empty());
  f.assert_all_ended();
}
