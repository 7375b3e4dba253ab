//! Checkpoints: the frontier of steps in flight, what the runtime gives a snapshot, and a restore that puts layer
//! states and counters back in place of init (and mirrors later writes as the original context would have).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use noetic_runtime::harness::checkpoint::{RestoreError, Restored, SavedTokens, SavedUsage};
use noetic_runtime::harness::{ExecContext, Harness, HarnessConfig, Model, ScriptedModel};
use noetic_runtime::host::*;
use noetic_runtime::memory::HookKind;
use noetic_runtime::memory::builtin::layers::working_memory_layer;
use noetic_runtime::memory::builtin::working_memory::WorkingMemoryConfig;
use noetic_runtime::memory::lifecycle::{MemoryEnv, RestoredStates};
use noetic_runtime::memory::registry::{Layer, LayerImpl, LayerSet, RawBudget, RawLayer, RawTimeouts};
use noetic_runtime::memory::state::{DiagnosticSink, StateStore, StateValue, StateWrite};
use noetic_runtime::steps::{LlmStep, ModelParams, Step};
use noetic_runtime::storage::{InMemoryStorage, Storage};
use serde_json::json;
use tokio::sync::{Notify, oneshot};

/// A host whose `step.run` waits to be let go once it has said it started, so the test can look at the context
/// while the step is in flight; its JS layer records hook calls and stores a count.
#[derive(Default)]
struct Host_ {
  calls: Mutex<Vec<String>>,
  started: Notify,
  go: Notify,
}

#[async_trait]
impl Host for Host_ {
  async fn run_hooks(&self, batch: HookBatch) -> Vec<HookReply> {
    batch
      .calls
      .iter()
      .map(|call| {
        self.calls.lock().unwrap().push(format!("{}:{}", batch.hook.name(), call.layer_id));
        let state = match (batch.hook, &call.args) {
          (HookKind::Init, _) => StateWrite::Set { persist: Some(json!({ "fresh": true }).into()) },
          (HookKind::Store, _) => StateWrite::Set { persist: Some(json!({ "stored": true }).into()) },
          _ => StateWrite::Unchanged,
        };
        HookReply { state, ..HookReply::of(HookStatus::Ok) }
      })
      .collect()
  }
  async fn run_step(&self, call: StepCall) -> Result<StepValue, HostError> {
    self.started.notify_one();
    self.go.notified().await;
    Ok(StepValue::Text(format!("ran {}", call.step_id)))
  }
  async fn call_model(&self, _call: ModelCall) -> Result<ModelReply, HostError> {
    unreachable!("the scripted model answers")
  }
  async fn call_tool(&self, _call: ToolCall) -> Result<ToolReply, HostError> {
    unreachable!("no tools here")
  }
  async fn eval_until(&self, _call: UntilCall) -> Result<Verdict, HostError> {
    Ok(Verdict { stop: true, reason: None, feedback: None })
  }
  fn release_context(&self, _context: &str) {}
}

struct Quiet;
impl DiagnosticSink for Quiet {
  fn diagnostic(&self, layer_id: &str, hook: &str, message: &str) {
    panic!("unexpected diagnostic {layer_id}:{hook}:{message}");
  }
}

fn js_layer(id: &str, handle: u64) -> Arc<Layer> {
  let raw = RawLayer {
    id: Some(id.into()),
    slot: Some(10.0),
    scope: Some("thread".into()),
    budget: RawBudget::Range { min: Some(0.0), max: Some(1000.0) },
    hooks: ["init", "store"].iter().map(|h| ((*h).to_owned(), "function".to_owned())).collect(),
    timeouts: RawTimeouts::default(),
    on_init_error: None,
    recall_mode: None,
    placement: None,
    provides: vec![],
    imp: LayerImpl::Host(handle),
  };
  Arc::clone(&LayerSet::register(vec![raw]).unwrap().layers()[0])
}

fn layers() -> Arc<LayerSet> {
  Arc::new(LayerSet::from_layers(vec![
    js_layer("notes", 1),
    Arc::new(working_memory_layer(WorkingMemoryConfig::default(), None)),
  ]))
}

fn harness(storage: &Arc<InMemoryStorage>) -> (Harness, Arc<Host_>) {
  let host = Arc::new(Host_::default());
  let env = MemoryEnv {
    host: Arc::clone(&host) as Arc<dyn Host>,
    states: Arc::new(StateStore::new()),
    sink: Arc::new(Quiet),
    storage: Arc::clone(storage) as Arc<dyn Storage>,
  };
  let config = HarnessConfig {
    name: "t".into(),
    layers: layers(),
    projection: None,
    model: Model::Scripted(ScriptedModel::new(vec![])),
    force_atomic_recall: false,
    initial_step: None,
    tools: Vec::new(),
  };
  (Harness::new(config, env), host)
}

fn llm() -> Step {
  Step::Llm(Box::new(LlmStep {
    id: "talk".into(),
    model: "m".into(),
    instructions: None,
    tools: None,
    projection: None,
    lazy: None,
    params: ModelParams::default(),
    output: None,
    emit: Default::default(),
    source: None,
  }))
}

#[tokio::test]
async fn the_frontier_holds_the_steps_in_flight_outermost_first_and_empties_when_they_end() {
  let storage = Arc::new(InMemoryStorage::new());
  let (harness, host) = harness(&storage);
  let ctx = harness.open_context(ExecContext::new("c".into(), "T".into(), Some("R".into()), 0, None, layers()));
  let inner = Arc::new(Step::Run { id: "work".into(), execute: 7, retry: None, subprocess: None, in_place: false });
  let step = Step::Provide { id: "outer".into(), child: inner, memory: Arc::new(LayerSet::from_layers(vec![])) };
  let (seen_tx, seen_rx) = oneshot::channel();
  let watch = async {
    host.started.notified().await;
    let _ = seen_tx.send(harness.snapshot(&ctx));
    host.go.notify_one();
  };
  let (out, ()) = tokio::join!(harness.run_existing(&ctx, &step, StepValue::Text("in".into())), watch);
  assert_eq!(out.unwrap(), StepValue::Text("ran work".into()));
  let parts = serde_json::to_value(seen_rx.await.unwrap()).unwrap();
  assert_eq!(
    parts["frontier"],
    json!([
      { "stepId": "outer", "input": { "t": "text", "v": "in" } },
      { "stepId": "work", "input": { "t": "text", "v": "in" } },
    ])
  );
  assert_eq!((parts["threadId"].clone(), parts["resourceId"].clone()), (json!("T"), json!("R")));
  assert_eq!(parts["usage"]["stepCount"], json!(2.0));
  // Once the run is over nothing is in flight.
  assert_eq!(serde_json::to_value(harness.snapshot(&ctx)).unwrap()["frontier"], json!([]));
}

#[tokio::test]
async fn a_restored_context_takes_the_states_and_counters_back_and_its_layers_do_not_init_again() {
  let storage = Arc::new(InMemoryStorage::new());
  let (first, _) = harness(&storage);
  let ctx = first.open_context(ExecContext::new("exec-1".into(), "T".into(), None, 0, None, layers()));
  let sink: Arc<dyn DiagnosticSink> = Arc::new(Quiet);
  first.env.states.set("exec-1", "notes", StateValue::Host, None, &sink);
  first.env.states.set("exec-1", "working-memory", StateValue::Json(json!({ "name": "Ada" })), None, &sink);
  {
    let mut state = ctx.state();
    state.step_count = 4;
    state.tokens.input = 10.0;
    state.tokens.output = 5.0;
    state.cost = 0.25;
  }
  let parts = serde_json::to_value(first.snapshot(&ctx)).unwrap();
  // A JS layer's state is the host's to put in, where the null holds its place; a built-in's comes as it is.
  assert_eq!(parts["layers"], json!({ "notes": null, "working-memory": { "name": "Ada" } }));
  assert_eq!(parts["hostLayers"], json!(["notes"]));
  assert_eq!(
    (parts["schemaVersion"].clone(), parts["executionId"].clone(), parts["askUser"].clone(), parts["cwd"].clone()),
    (json!(1), json!("exec-1"), json!([]), json!(null))
  );
  assert!(parts.get("resourceId").is_none(), "a context without a resource writes none");
  assert_eq!(parts["usage"], json!({ "stepCount": 4.0, "tokens": { "input": 10.0, "output": 5.0 }, "cost": 0.25 }));

  // Another harness (another process) restores it into a context of the same id.
  let (second, host) = harness(&storage);
  let restored_ctx = second.open_context(ExecContext::new("exec-1".into(), "T".into(), None, 0, None, layers()));
  let restored = Restored {
    layers: RestoredStates {
      native: [("working-memory".to_owned(), json!({ "name": "Ada" }))].into(),
      host: vec!["notes".into()],
    },
    usage: Some(SavedUsage {
      step_count: 4.0,
      tokens: SavedTokens { input: 10.0, output: 5.0, cached: None },
      cost: 0.25,
    }),
  };
  second.restore_checkpoint(&restored_ctx, &restored).unwrap();
  assert_eq!(second.env.states.get("exec-1", "working-memory"), Some(StateValue::Json(json!({ "name": "Ada" }))));
  assert_eq!(second.env.states.get("exec-1", "notes"), Some(StateValue::Host));
  second.run_existing(&restored_ctx, &llm(), StepValue::Text("hi".into())).await.unwrap();
  let calls = host.calls.lock().unwrap().clone();
  assert_eq!(calls, ["store:notes"], "no init over restored states");
  // The thread-scoped JS layer mirrors its later writes, as after init.
  second.env.states.flush("exec-1").await;
  assert_eq!(storage.get_now("layers/notes/T/state"), Some(json!({ "stored": true })));
  // The counters went on from the snapshot's (one more step).
  assert_eq!(restored_ctx.state().step_count, 5);
  assert_eq!(restored_ctx.state().cost, 0.25);
}

#[tokio::test]
async fn counters_no_context_can_hold_are_a_schema_mismatch() {
  let storage = Arc::new(InMemoryStorage::new());
  let (harness, _) = harness(&storage);
  let ctx = harness.open_context(ExecContext::new("x".into(), "T".into(), None, 0, None, layers()));
  for usage in [
    SavedUsage { step_count: -1.0, ..SavedUsage::default() },
    SavedUsage { step_count: 1.5, ..SavedUsage::default() },
    SavedUsage { cost: f64::NAN, ..SavedUsage::default() },
  ] {
    let restored = Restored { usage: Some(usage), ..Restored::default() };
    let error = harness.restore_checkpoint(&ctx, &restored).unwrap_err();
    assert_eq!(error.code, "CHECKPOINT_SCHEMA_MISMATCH");
    assert!(error.message.contains("\"x\""), "{}", error.message);
  }
  // Nothing was put back.
  assert!(!ctx.state().layers_ready);
}

#[tokio::test]
async fn a_saved_snapshot_is_split_by_layer_kind_in_the_contexts_order_and_only_built_ins_are_read() {
  let storage = Arc::new(InMemoryStorage::new());
  let (harness, _) = harness(&storage);
  let ctx = harness.open_context(ExecContext::new("s".into(), "T".into(), None, 0, None, layers()));
  let mut asked = Vec::new();
  // The snapshot names a layer the context lacks; only the built-in's state is read.
  let saved = json!({
    "layers": ["working-memory", "gone", "notes"],
    "usage": { "stepCount": 2, "tokens": { "input": 1, "output": 1 }, "cost": 0 },
  });
  let host = harness
    .restore_saved(&ctx, &saved, |id| {
      asked.push(id.to_owned());
      Ok::<_, ()>(Some(json!({ "name": "Bo" })))
    })
    .unwrap();
  assert_eq!(host, ["notes"]);
  assert_eq!(asked, ["working-memory"]);
  assert_eq!(harness.env.states.get("s", "working-memory"), Some(StateValue::Json(json!({ "name": "Bo" }))));
  assert_eq!(harness.env.states.get("s", "notes"), Some(StateValue::Host));
  assert_eq!(ctx.state().step_count, 2);

  // A built-in whose saved state is undefined stays without one; a failed read is the host's error, as it was.
  let other = harness.open_context(ExecContext::new("t".into(), "T".into(), None, 0, None, layers()));
  let none = harness.restore_saved(&other, &json!({ "layers": ["working-memory"] }), |_| Ok::<_, ()>(None)).unwrap();
  assert!(none.is_empty());
  assert_eq!(harness.env.states.get("t", "working-memory"), None);
  let failed = harness.restore_saved(&other, &json!({ "layers": ["working-memory"] }), |_| Err("thrown"));
  assert!(matches!(failed, Err(RestoreError::Host("thrown"))));
  // Counters of the wrong shape are refused before anything is put back.
  let third = harness.open_context(ExecContext::new("u".into(), "T".into(), None, 0, None, layers()));
  let refused = harness
    .restore_saved(&third, &json!({ "layers": ["notes"], "usage": { "stepCount": "x" } }), |_| Ok::<_, ()>(None));
  let Err(RestoreError::Refused(error)) = refused else { panic!("refused") };
  assert_eq!(error.code, "CHECKPOINT_SCHEMA_MISMATCH");
  assert!(error.message.contains("its usage is not {stepCount, tokens: {input, output}, cost}"));
  assert_eq!(harness.env.states.get("u", "notes"), None);
}
