//! The harness driven through a scripted host: hook order, state rules, durable rehydration, failures, and the
//! built-in layers' tools called by the scripted model.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use noetic_runtime::harness::{
  Harness, HarnessConfig, Model, RunError, RunOptions, ScriptedModel, ScriptedToolCall, ScriptedTurn,
};
use noetic_runtime::host::*;
use noetic_runtime::memory::HookKind;
use noetic_runtime::memory::builtin::layers::working_memory_layer;
use noetic_runtime::memory::builtin::working_memory::WorkingMemoryConfig;
use noetic_runtime::memory::lifecycle::MemoryEnv;
use noetic_runtime::memory::native::HostCallback;
use noetic_runtime::memory::registry::{LayerImpl, LayerSet, RawBudget, RawLayer, RawTimeouts};
use noetic_runtime::memory::state::{DiagnosticSink, StateStore, StateWrite};
use noetic_runtime::steps::{LlmStep, LoopStep, ModelParams, Step, StepAdapter, Until};
use noetic_runtime::storage::{InMemoryStorage, Storage};
use serde_json::{Value, json};

/// A host whose JS layers are described by data: each layer records its calls and answers recall with text.
#[derive(Default)]
struct ScriptHost {
  calls: Mutex<Vec<String>>,
  failing_init: Mutex<Option<u64>>,
  /// The layer items of each model call, as JSON text.
  views: Mutex<Vec<Vec<String>>>,
  /// The executions the host was told had ended, in order.
  ended: Mutex<Vec<String>>,
}

#[async_trait]
impl Host for ScriptHost {
  async fn run_hooks(&self, batch: HookBatch) -> Vec<HookReply> {
    let mut replies = Vec::new();
    for call in &batch.calls {
      self.calls.lock().unwrap().push(format!("{}:{}", batch.hook.name(), call.layer_id));
      if batch.hook == HookKind::Init && *self.failing_init.lock().unwrap() == Some(call.layer) {
        replies.push(HookReply { error: Some(99), ..HookReply::of(HookStatus::Threw("boom".into())) });
        if call.stop_on_error {
          break;
        }
        continue;
      }
      let (state, recall) = match &call.args {
        HookArgs::Init { .. } => (StateWrite::Set { persist: None }, None),
        HookArgs::Recall { budget, .. } => {
          (StateWrite::Unchanged, Some(RecallReply::Text(format!("{} has {budget}", call.layer_id))))
        }
        HookArgs::Store { response_from, response_to, .. } => {
          (StateWrite::Set { persist: Some(json!({ "stored": response_to - response_from }).into()) }, None)
        }
        _ => (StateWrite::Unchanged, None),
      };
      replies.push(HookReply { state, recall, ..HookReply::of(HookStatus::Ok) });
    }
    replies
  }
  async fn run_step(&self, call: StepCall) -> Result<StepValue, HostError> {
    Ok(StepValue::Text(match call.adapter {
      Some(adapter) => format!("ran {} via {adapter}", call.step_id),
      None => format!("ran {}", call.step_id),
    }))
  }
  async fn call_model(&self, call: ModelCall) -> Result<ModelReply, HostError> {
    let layer_items = call
      .view
      .iter()
      .filter_map(|entry| match entry {
        ViewEntry::Layer { item, .. } => Some(item.to_json_text()),
        ViewEntry::Log { .. } => None,
      })
      .collect();
    self.views.lock().unwrap().push(layer_items);
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
    unreachable!("no JS tools here")
  }
  async fn eval_until(&self, _call: UntilCall) -> Result<Verdict, HostError> {
    Ok(Verdict { stop: true, reason: None, feedback: None })
  }
  fn release_context(&self, _context: &str) {}
  fn execution_ended(&self, exec: &str) {
    self.ended.lock().unwrap().push(exec.to_owned());
  }
}

#[derive(Default)]
struct Diagnostics(Mutex<Vec<String>>);

impl DiagnosticSink for Diagnostics {
  fn diagnostic(&self, layer_id: &str, hook: &str, message: &str) {
    self.0.lock().unwrap().push(format!("{layer_id}:{hook}:{message}"));
  }
}

fn js_layer(id: &str, slot: f64, scope: &str, handle: u64, hooks: &[&str]) -> RawLayer {
  RawLayer {
    id: Some(id.into()),
    slot: Some(slot),
    scope: Some(scope.into()),
    budget: RawBudget::Range { min: Some(100.0), max: Some(1000.0) },
    hooks: hooks.iter().map(|h| ((*h).to_owned(), "function".to_owned())).collect(),
    timeouts: RawTimeouts::default(),
    on_init_error: None,
    recall_mode: None,
    placement: None,
    provides: vec![],
    imp: LayerImpl::Host(handle),
  }
}

struct Fixture {
  harness: Harness,
  host: Arc<ScriptHost>,
  storage: Arc<InMemoryStorage>,
  diagnostics: Arc<Diagnostics>,
}

fn fixture(layers: LayerSet, script: Vec<ScriptedTurn>) -> Fixture {
  fixture_with(layers, Model::Scripted(ScriptedModel::new(script)), Arc::new(InMemoryStorage::new()))
}

fn fixture_with(layers: LayerSet, model: Model, storage: Arc<InMemoryStorage>) -> Fixture {
  let host = Arc::new(ScriptHost::default());
  let diagnostics = Arc::new(Diagnostics::default());
  let env = MemoryEnv {
    host: Arc::clone(&host) as Arc<dyn Host>,
    states: Arc::new(StateStore::new()),
    sink: Arc::clone(&diagnostics) as Arc<dyn DiagnosticSink>,
    storage: Arc::clone(&storage) as Arc<dyn Storage>,
  };
  let config = HarnessConfig {
    name: "t".into(),
    layers: Arc::new(layers),
    projection: None,
    model,
    force_atomic_recall: false,
    initial_step: None,
    tools: Vec::new(),
  };
  Fixture { harness: Harness::new(config, env), host, storage, diagnostics }
}

fn llm() -> Step {
  Step::Llm(Box::new(LlmStep {
    id: "s".into(),
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

fn thread(id: &str) -> RunOptions {
  RunOptions { thread_id: Some(id.into()), ..RunOptions::default() }
}

#[tokio::test]
async fn hooks_run_in_slot_order_and_the_execution_ends_with_complete_and_dispose() {
  let all = ["init", "recall", "store", "onComplete", "dispose"];
  let layers = LayerSet::register(vec![
    js_layer("late", 300.0, "thread", 1, &all),
    js_layer("early", 100.0, "execution", 2, &all),
  ])
  .unwrap();
  let f = fixture(layers, vec![]);
  let out = f.harness.run(&llm(), StepValue::Text("hi".into()), thread("T")).await.unwrap();
  assert_eq!(out, StepValue::Text("You said: hi".into()));
  let calls = f.host.calls.lock().unwrap().clone();
  assert_eq!(
    calls,
    [
      "init:early",
      "init:late",
      "recall:early",
      "recall:late",
      "store:early",
      "store:late",
      "onComplete:early",
      "onComplete:late",
      "dispose:late",
      "dispose:early",
    ]
  );
  // Per-execution state is dropped at the end (D15), and no context stays registered.
  assert_eq!(f.harness.env.states.live_executions(), 0);
  assert_eq!(f.harness.live_contexts(), 0);
}

#[tokio::test]
async fn store_state_is_mirrored_for_durable_scopes_only() {
  let layers = LayerSet::register(vec![
    js_layer("durable", 100.0, "thread", 1, &["init", "store"]),
    js_layer("scratch", 200.0, "execution", 2, &["init", "store"]),
  ])
  .unwrap();
  let f = fixture(layers, vec![]);
  f.harness.run(&llm(), StepValue::Text("hi".into()), thread("T1")).await.unwrap();
  // One response item (the assistant message) was stored.
  assert_eq!(f.storage.get_now("layers/durable/T1/state"), Some(json!({ "stored": 1 })));
  let keys = f.storage.list("layers/").await.unwrap();
  assert_eq!(keys, ["layers/durable/T1/state"]);
}

#[tokio::test]
async fn init_failure_aborts_the_run_with_the_thrown_error_and_later_layers_do_not_init() {
  let layers = LayerSet::register(vec![
    js_layer("a", 1.0, "thread", 1, &["init", "dispose"]),
    js_layer("b", 2.0, "thread", 2, &["init", "dispose"]),
  ])
  .unwrap();
  let f = fixture(layers, vec![]);
  *f.host.failing_init.lock().unwrap() = Some(1);
  let err = f.harness.run(&llm(), StepValue::Text("hi".into()), thread("T")).await.unwrap_err();
  assert_eq!(err, RunError::Host(HostError::Thrown { message: "boom".into(), error: Some(99) }));
  assert_eq!(*f.host.calls.lock().unwrap(), ["init:a"]);
  assert_eq!(*f.diagnostics.0.lock().unwrap(), ["a:init:boom"]);
  assert_eq!(f.harness.env.states.live_executions(), 0);
}

#[tokio::test]
async fn a_disabled_layer_is_skipped_and_the_run_goes_on() {
  let mut failing = js_layer("optional", 1.0, "thread", 1, &["init", "recall"]);
  failing.on_init_error = Some("disable".into());
  let layers = LayerSet::register(vec![failing, js_layer("other", 2.0, "thread", 2, &["init", "recall"])]).unwrap();
  let f = fixture(layers, vec![]);
  *f.host.failing_init.lock().unwrap() = Some(1);
  f.harness.run(&llm(), StepValue::Text("hi".into()), thread("T")).await.unwrap();
  assert_eq!(*f.host.calls.lock().unwrap(), ["init:optional", "init:other", "recall:other"]);
}

#[tokio::test]
async fn the_scripted_model_calls_working_memory_update_and_the_state_persists_and_rehydrates() {
  let layers = LayerSet::from_layers(vec![Arc::new(working_memory_layer(WorkingMemoryConfig::default(), None))]);
  let script = vec![
    ScriptedTurn {
      tool_calls: vec![ScriptedToolCall {
        name: "working-memory/update".into(),
        arguments: r#"{"name":"Ada"}"#.into(),
      }],
      ..ScriptedTurn::default()
    },
    ScriptedTurn { text: Some("noted".into()), ..ScriptedTurn::default() },
  ];
  let f = fixture(layers, script);
  let out = f.harness.run(&llm(), StepValue::Text("I am Ada".into()), thread("T")).await.unwrap();
  assert_eq!(out, StepValue::Text("noted".into()));
  assert_eq!(f.storage.get_now("layers/working-memory/T/state"), Some(json!({ "name": "Ada" })));

  // A later execution on the same thread rehydrates it and recalls it into the model's view; another thread
  // starts empty.
  let layers = LayerSet::from_layers(vec![Arc::new(working_memory_layer(WorkingMemoryConfig::default(), None))]);
  let g = fixture_with(layers, Model::Host, Arc::clone(&f.storage));
  g.harness.run(&llm(), StepValue::Text("who am I?".into()), thread("T")).await.unwrap();
  g.harness.run(&llm(), StepValue::Text("who am I?".into()), thread("U")).await.unwrap();
  let views = g.host.views.lock().unwrap().clone();
  assert_eq!(views.len(), 2);
  assert_eq!(views[0].len(), 1);
  assert!(views[0][0].contains(r#"<working_memory>\n{\n  \"name\": \"Ada\"\n}\n</working_memory>"#), "{}", views[0][0]);
  assert!(views[1].is_empty());
}

/// A schema that accepts an object only when its `name` is a string, as a host's zod check would answer.
struct NameIsText;

#[async_trait]
impl HostCallback for NameIsText {
  async fn call(&self, value: Value) -> Result<Value, String> {
    Ok(if value.get("name").is_some_and(Value::is_string) { Value::Null } else { json!("name: expected string") })
  }
}

#[tokio::test]
async fn working_memory_asks_its_host_schema_and_a_rejected_update_reaches_the_model_as_an_error() {
  let schema: Arc<dyn HostCallback> = Arc::new(NameIsText);
  let layers =
    LayerSet::from_layers(vec![Arc::new(working_memory_layer(WorkingMemoryConfig::default(), Some(schema)))]);
  let call = |arguments: &str| ScriptedTurn {
    tool_calls: vec![ScriptedToolCall { name: "working-memory/update".into(), arguments: arguments.into() }],
    ..ScriptedTurn::default()
  };
  let script = vec![call(r#"{"name":"Ada"}"#), call(r#"{"name":7}"#), ScriptedTurn::default()];
  let f = fixture(layers, script);
  let storage = Arc::clone(&f.storage);
  storage.set("layers/working-memory/T/state", json!({ "nick": "x" })).await.unwrap();
  f.harness.run(&llm(), StepValue::Text("hi".into()), thread("T")).await.unwrap();
  // The saved state failed the schema, so init started from `{}` (no `nick`); the first update passed, the second
  // was rejected and left the state as it was.
  assert_eq!(storage.get_now("layers/working-memory/T/state"), Some(json!({ "name": "Ada" })));
}

#[tokio::test]
async fn missing_model_and_missing_provider_are_config_errors() {
  let f = fixture(LayerSet::default(), vec![]);
  let blank = Step::Llm(Box::new(LlmStep {
    id: "s".into(),
    model: " ".into(),
    instructions: None,
    tools: None,
    projection: None,
    lazy: None,
    params: ModelParams::default(),
    output: None,
    emit: Default::default(),
    source: None,
  }));
  match f.harness.run(&blank, StepValue::Undefined, RunOptions::default()).await {
    Err(RunError::Config(error)) => assert_eq!(error.code, "MISSING_MODEL"),
    other => panic!("expected MISSING_MODEL, got {other:?}"),
  }
  let out = f
    .harness
    .run(
      &Step::Run { id: "r".into(), execute: 7, retry: None, subprocess: None, in_place: false },
      StepValue::Undefined,
      RunOptions::default(),
    )
    .await;
  assert_eq!(out.unwrap(), StepValue::Text("ran r".into()));
  let _: Value = json!(null);
}

#[tokio::test]
async fn a_step_run_is_handed_to_its_own_adapter_else_the_harness_unless_it_runs_in_place() {
  let adapter = |handle, inline| Some(StepAdapter { handle, inline });
  let run = |subprocess, in_place| Step::Run { id: "r".into(), execute: 7, retry: None, subprocess, in_place };
  for (harness_adapter, step, expected) in [
    (adapter(9, false), run(None, false), "ran r via 9"),
    (adapter(9, false), run(adapter(5, false), false), "ran r via 5"),
    (adapter(9, false), run(adapter(5, true), false), "ran r"),
    (adapter(9, false), run(None, true), "ran r"),
    (adapter(9, true), run(None, false), "ran r"),
    (None, run(None, false), "ran r"),
  ] {
    let harness = fixture(LayerSet::default(), vec![]).harness.with_subprocess(harness_adapter);
    let out = harness.run(&step, StepValue::Undefined, RunOptions::default()).await.unwrap();
    assert_eq!(out, StepValue::Text(expected.into()), "{harness_adapter:?} {step:?}");
  }
}

#[tokio::test]
async fn a_spawned_child_that_inherits_the_layers_drops_its_state_when_it_ends() {
  // Without init the layer is not skipped in the child (§5.2), so its store writes state there.
  let layers = LayerSet::register(vec![js_layer("loose", 1.0, "thread", 1, &["store"])]).unwrap();
  let f = fixture(layers, vec![]);
  let spawn = Step::Spawn {
    id: "child".into(),
    child: Arc::new(llm()),
    memory: None,
    timeout_ms: None,
    context_in: Default::default(),
    context_out: Default::default(),
  };
  f.harness.run(&spawn, StepValue::Text("hi".into()), thread("T")).await.unwrap();
  assert_eq!(*f.host.calls.lock().unwrap(), ["store:loose"]);
  assert_eq!(f.harness.env.states.live_executions(), 0);
  assert_eq!(f.harness.live_contexts(), 0);
}

#[tokio::test]
async fn layers_the_caller_names_run_their_phases_in_a_live_context() {
  use noetic_runtime::harness::{ExecContext, LayerCall, LayerCallResult, RecallSelect};
  let f = fixture(LayerSet::register(vec![]).unwrap(), vec![]);
  let no_layers = Arc::new(LayerSet::register(vec![]).unwrap());
  let ctx = f.harness.open_context(ExecContext::new("c1".into(), "T".into(), None, 0, None, no_layers));
  let named = Arc::new(
    LayerSet::register(vec![
      js_layer("late", 20.0, "thread", 2, &["init", "recall", "store", "dispose"]),
      js_layer("early", 10.0, "execution", 1, &["init", "recall"]),
    ])
    .unwrap(),
  );
  let call = |call| f.harness.call_layers(&ctx, Arc::clone(&named), call);
  assert!(matches!(call(LayerCall::Init).await.unwrap(), LayerCallResult::Done));
  let recall = LayerCall::Recall { query: "q".into(), budgets: None, select: RecallSelect::All };
  let LayerCallResult::Recalled(entries) = call(recall).await.unwrap() else { panic!("a recall gives entries") };
  let ids: Vec<_> = entries.iter().map(|e| e.layer_id.as_str()).collect();
  assert_eq!(ids, ["early", "late"], "slot order");
  let response = vec![Arc::new(noetic_runtime::items::create_message("done", "developer").unwrap())];
  call(LayerCall::Store { response, usage: json!({}) }).await.unwrap();
  // The thread-scoped layer's store write is mirrored as a step's would be; nothing entered the context's log.
  assert_eq!(f.storage.get_now("layers/late/T/state"), Some(json!({ "stored": 0 })));
  assert_eq!(ctx.state().log.len(), 0);
  call(LayerCall::Dispose).await.unwrap();
  let calls = f.host.calls.lock().unwrap().clone();
  assert_eq!(calls, ["init:early", "init:late", "recall:early", "recall:late", "store:late", "dispose:late"]);
  assert!(!f.harness.env.states.has("c1", "early"), "dispose drops the execution's state");
}

#[tokio::test]
async fn dropping_a_context_whose_execution_ended_tells_the_host_once() {
  use noetic_runtime::harness::{ExecContext, LayerCall};
  let layers = Arc::new(LayerSet::register(vec![js_layer("notes", 10.0, "thread", 1, &["init", "store"])]).unwrap());
  let f = fixture(LayerSet::register(vec![]).unwrap(), vec![]);
  // A context kept past its execution, as a session keeps its last turn's until the next turn moves the history on.
  let kept = f.harness.open_context(ExecContext::new("kept".into(), "T".into(), None, 0, None, Arc::clone(&layers)));
  f.harness.run_in(&kept, &llm(), StepValue::Text("hi".into())).await.unwrap();
  assert_eq!(*f.host.ended.lock().unwrap(), ["kept"], "the execution's end tells the host");
  f.harness.drop_context("kept");
  assert_eq!(*f.host.ended.lock().unwrap(), ["kept"], "dropping it afterwards has nothing left to end");

  // Layers run again after the execution ended (ctx.harness.initLayers) leave states the drop must still clear.
  let again = f.harness.open_context(ExecContext::new("again".into(), "T".into(), None, 0, None, Arc::clone(&layers)));
  f.harness.run_in(&again, &llm(), StepValue::Text("hi".into())).await.unwrap();
  f.harness.call_layers(&again, Arc::clone(&layers), LayerCall::Init).await.unwrap();
  assert!(f.harness.env.states.has("again", "notes"));
  f.harness.drop_context("again");
  assert!(!f.harness.env.states.has("again", "notes"), "the drop ends what the layers left");
  assert_eq!(*f.host.ended.lock().unwrap(), ["kept", "again", "again"]);
  assert_eq!(f.harness.env.states.live_executions(), 0);
}

/// Nested steps are polled one inside another, on whatever thread polls the run: a tree as deep as a description may
/// be must not overflow a small stack (the JS thread has 1 MB on Windows; a debug build's frames are large).
#[test]
fn loops_nested_nine_hundred_deep_run_on_a_small_stack() {
  let polling = std::thread::Builder::new().stack_size(512 * 1024).spawn(|| {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
      let mut step = Step::Run { id: "r".into(), execute: 7, retry: None, subprocess: None, in_place: false };
      for i in 0..900 {
        step = Step::Loop(LoopStep {
          id: format!("l{i}"),
          steps: vec![Arc::new(step)],
          until: Until::MaxSteps(1.0),
          max_iterations: 1000.0,
          max_history: 100,
          prepare_next: None,
          on_error: None,
          inbox: None,
          park_timeout_ms: 0.0,
        });
      }
      let harness = fixture(LayerSet::default(), vec![]).harness;
      let out = harness.run(&step, StepValue::Undefined, RunOptions::default()).await;
      // Taken apart level by level: dropping the tree whole would recurse as deep as it nests.
      while let Step::Loop(mut looped) = step {
        step = Arc::try_unwrap(looped.steps.pop().unwrap()).unwrap();
      }
      out
    })
  });
  assert_eq!(polling.unwrap().join().unwrap().unwrap(), StepValue::Text("ran r".into()));
}
