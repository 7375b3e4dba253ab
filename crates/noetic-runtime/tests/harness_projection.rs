//! The view an LLM step sends to the model equals upstream's `assembleView` on the spec's vectors (§23.1): system
//! messages hoisted and always kept, layer items skipped one by one, history cut newest-first.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use noetic_runtime::harness::{ExecContext, Harness, HarnessConfig, Model};
use noetic_runtime::host::*;
use noetic_runtime::items::Item;
use noetic_runtime::memory::lifecycle::MemoryEnv;
use noetic_runtime::memory::registry::{LayerImpl, LayerSet, RawBudget, RawLayer, RawTimeouts};
use noetic_runtime::memory::state::{DiagnosticSink, StateStore};
use noetic_runtime::memory::{Overflow, ProjectionPolicy};
use noetic_runtime::steps::{LlmStep, ModelParams, Step};
use noetic_runtime::storage::InMemoryStorage;
use serde_json::{Value, json};

fn message(id: &str, role: &str, text: &str) -> Value {
  let part = if role == "assistant" { "output_text" } else { "input_text" };
  json!({ "id": id, "type": "message", "role": role, "status": "completed", "content": [{ "type": part, "text": text }] })
}

/// Recalls the two fixed layer items of the vectors and records the view ids the model is sent.
#[derive(Default)]
struct VectorHost {
  views: Mutex<Vec<Vec<String>>>,
}

#[async_trait]
impl Host for VectorHost {
  async fn run_hooks(&self, batch: HookBatch) -> Vec<HookReply> {
    let items = vec![
      message("l1", "developer", &"A".repeat(200)).to_string(),
      message("l2", "developer", &"B".repeat(20)).to_string(),
    ];
    batch
      .calls
      .iter()
      .map(|_| HookReply {
        recall: Some(RecallReply::Items { items: items.clone(), token_count: Some(10.0), checked: false, key: None }),
        ..HookReply::of(HookStatus::Ok)
      })
      .collect()
  }
  async fn run_step(&self, _: StepCall) -> Result<StepValue, HostError> {
    unreachable!()
  }
  async fn call_model(&self, call: ModelCall) -> Result<ModelReply, HostError> {
    let ids = call
      .view
      .iter()
      .flat_map(|entry| match entry {
        ViewEntry::Layer { item, .. } => {
          vec![serde_json::from_str::<Value>(item.json_text()).unwrap()["id"].as_str().unwrap().to_owned()]
        }
        ViewEntry::Log { start, end } => (*start..*end).map(|pos| format!("log{pos}")).collect(),
      })
      .collect();
    self.views.lock().unwrap().push(ids);
    Ok(ModelReply {
      items: vec![message("r", "assistant", "ok").to_string()],
      items_checked: false,
      input_tokens: 0.0,
      output_tokens: 0.0,
      cached_tokens: None,
      cache_write_tokens: None,
      cost: None,
    })
  }
  async fn call_tool(&self, _: ToolCall) -> Result<ToolReply, HostError> {
    unreachable!()
  }
  async fn eval_until(&self, _: UntilCall) -> Result<Verdict, HostError> {
    unreachable!()
  }
  fn release_context(&self, _: &str) {}
}

struct Quiet;
impl DiagnosticSink for Quiet {
  fn diagnostic(&self, _: &str, _: &str, _: &str) {}
}

async fn view_for(token_budget: f64) -> Vec<String> {
  let host = Arc::new(VectorHost::default());
  let layer = RawLayer {
    id: Some("l".into()),
    slot: Some(1.0),
    scope: Some("execution".into()),
    budget: RawBudget::Omitted,
    hooks: vec![("recall".into(), "function".into())],
    timeouts: RawTimeouts::default(),
    on_init_error: None,
    recall_mode: None,
    placement: None,
    provides: vec![],
    imp: LayerImpl::Host(1),
  };
  let env = MemoryEnv {
    host: Arc::clone(&host) as Arc<dyn Host>,
    states: Arc::new(StateStore::new()),
    sink: Arc::new(Quiet),
    storage: Arc::new(InMemoryStorage::new()),
  };
  let config = HarnessConfig {
    name: "t".into(),
    layers: Arc::new(LayerSet::register(vec![layer]).unwrap()),
    projection: Some(ProjectionPolicy {
      token_budget,
      response_reserve: 20.0,
      overflow: Overflow::Truncate,
      overflow_model: None,
      window_size: None,
    }),
    model: Model::Host,
    force_atomic_recall: false,
    initial_step: None,
    tools: Vec::new(),
  };
  let harness = Harness::new(config, env);
  let ctx = harness.open_context(ExecContext::new("E".into(), "T".into(), None, 0, None, Arc::clone(&harness.layers)));
  // The history of the vectors, with the system message in the middle of it: it is hoisted to the front.
  let log = [
    message("h1", "user", "hello"),
    message("h2", "assistant", "hi"),
    message("s", "system", "sys"),
    json!({ "id": "h3", "type": "function_call", "callId": "c1", "name": "t", "arguments": "{}" }),
    json!({ "id": "h4", "type": "function_call_output", "status": "completed", "callId": "c1", "output": "ok" }),
    message("h5", "user", "more"),
  ];
  for item in log {
    ctx.state().log.push(Arc::new(Item::from_value(item).unwrap()));
  }
  let step = Step::Llm(Box::new(LlmStep {
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
  }));
  harness.run_in(&ctx, &step, StepValue::Undefined).await.unwrap();
  let views = host.views.lock().unwrap();
  // Name log positions by the vectors' ids.
  let names = ["h1", "h2", "s", "h3", "h4", "h5"];
  views[0]
    .iter()
    .map(|id| id.strip_prefix("log").map_or_else(|| id.clone(), |pos| names[pos.parse::<usize>().unwrap()].to_owned()))
    .collect()
}

#[tokio::test]
async fn the_step_view_matches_the_spec_vectors() {
  assert_eq!(view_for(400.0).await, ["s", "l1", "l2", "h1", "h2", "h3", "h4", "h5"]);
  assert_eq!(view_for(200.0).await, ["s", "l1", "l2", "h5"]);
  assert_eq!(view_for(150.0).await, ["s", "l1"]);
  assert_eq!(view_for(100.0).await, ["s", "l2"]);
  assert_eq!(view_for(60.0).await, ["s"]);
}
