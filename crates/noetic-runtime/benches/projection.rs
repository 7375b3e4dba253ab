//! One LLM step over histories of 1k, 10k and 100k items with five layers: recall, budgets, projection, the
//! model call and store. The step's cost should depend on what the view keeps, not on the log's length (A3).

use std::hint::black_box;
use std::sync::Arc;

use async_trait::async_trait;
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use noetic_runtime::harness::{ExecContext, Harness, HarnessConfig, Model};
use noetic_runtime::host::*;
use noetic_runtime::items::Pairing;
use noetic_runtime::items::{
  Item, ItemLog, assistant_message, create_message_with_id, function_call, function_call_output,
};
use noetic_runtime::memory::builtin::layers::{observational_memory_layer, working_memory_layer};
use noetic_runtime::memory::lifecycle::MemoryEnv;
use noetic_runtime::memory::registry::{LayerImpl, LayerSet, RawBudget, RawLayer, RawTimeouts};
use noetic_runtime::memory::state::{DiagnosticSink, StateStore};
use noetic_runtime::memory::{DEFAULT_PROJECTION, HistoryView, assemble_view};
use noetic_runtime::steps::{LlmStep, ModelParams, Step};
use noetic_runtime::storage::InMemoryStorage;

/// A host that answers instantly: recall with a short text, the model with one assistant message.
struct InstantHost;

#[async_trait]
impl Host for InstantHost {
  async fn run_hooks(&self, batch: HookBatch) -> Vec<HookReply> {
    batch
      .calls
      .iter()
      .map(|call| HookReply {
        recall: matches!(call.args, HookArgs::Recall { .. })
          .then(|| RecallReply::Text(format!("{} remembers", call.layer_id))),
        ..HookReply::of(HookStatus::Ok)
      })
      .collect()
  }
  async fn run_step(&self, _: StepCall) -> Result<StepValue, HostError> {
    Ok(StepValue::Undefined)
  }
  async fn call_model(&self, call: ModelCall) -> Result<ModelReply, HostError> {
    black_box(call.view.len());
    let reply = assistant_message("r", "fine").to_json_text();
    Ok(ModelReply {
      items: vec![reply],
      items_checked: false,
      input_tokens: 1.0,
      output_tokens: 1.0,
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

/// A history mixing ~400-character messages with tool-call pairs, as the spec's measurements did.
fn history(n: usize) -> Vec<Arc<Item>> {
  let text = "lorem ipsum dolor sit amet ".repeat(15);
  (0..n)
    .map(|i| {
      let id = format!("i{i}");
      Arc::new(match i % 4 {
        0 => create_message_with_id(&id, &text, "user").expect("message"),
        1 => assistant_message(&id, &text),
        2 => function_call(&id, format!("c{i}"), "lookup", "{\"q\":\"tea\"}"),
        _ => function_call_output(&id, format!("c{}", i - 1), Some("found it".into())),
      })
    })
    .collect()
}

fn js_layer(id: &str, slot: f64, handle: u64) -> RawLayer {
  RawLayer {
    id: Some(id.into()),
    slot: Some(slot),
    scope: Some("execution".into()),
    budget: RawBudget::Range { min: Some(100.0), max: Some(2000.0) },
    hooks: vec![("recall".into(), "function".into()), ("store".into(), "function".into())],
    timeouts: RawTimeouts::default(),
    on_init_error: None,
    recall_mode: None,
    placement: None,
    provides: vec![],
    imp: LayerImpl::Host(handle),
  }
}

fn harness() -> Harness {
  let js = LayerSet::register(vec![js_layer("a", 150.0, 1), js_layer("b", 250.0, 2), js_layer("c", 300.0, 3)])
    .expect("layers");
  let mut layers = js.layers().to_vec();
  layers.push(Arc::new(working_memory_layer(Default::default(), None)));
  layers.push(Arc::new(observational_memory_layer(Default::default(), None)));
  let env = MemoryEnv {
    host: Arc::new(InstantHost),
    states: Arc::new(StateStore::new()),
    sink: Arc::new(Quiet),
    storage: Arc::new(InMemoryStorage::new()),
  };
  let config = HarnessConfig {
    name: "bench".into(),
    layers: Arc::new(LayerSet::from_layers(layers)),
    projection: None,
    model: Model::Host,
    force_atomic_recall: false,
    initial_step: None,
    tools: Vec::new(),
  };
  Harness::new(config, env)
}

fn llm_step(c: &mut Criterion) {
  let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
  let harness = Arc::new(harness());
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
  let mut group = c.benchmark_group("llm_step_5_layers");
  for n in [1_000, 10_000, 100_000] {
    let items = history(n);
    group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
      b.to_async(&rt).iter_batched(
        || {
          let ctx =
            harness.open_context(ExecContext::new("E".into(), "T".into(), None, 0, None, Arc::clone(&harness.layers)));
          let mut state = ctx.state();
          for item in &items {
            state.log.push(Arc::clone(item));
          }
          drop(state);
          ctx
        },
        |ctx| {
          let harness = Arc::clone(&harness);
          let step = step.clone();
          async move {
            let out = harness.run_in(&ctx, &step, StepValue::Text("and now?".into())).await;
            harness.close_context(&ctx.id);
            // Returned, so that dropping the log happens outside the measurement.
            (black_box(out), ctx)
          }
        },
        BatchSize::LargeInput,
      );
    });
  }
  group.finish();
}

/// Projection alone over the log, from cached costs.
fn projection_only(c: &mut Criterion) {
  struct Log<'a>(&'a ItemLog);
  impl HistoryView for Log<'_> {
    fn len(&self) -> usize {
      self.0.len()
    }
    fn cost(&self, i: usize) -> u64 {
      self.0.get(i).map_or(0, |item| item.cost())
    }
    fn link(&self, i: usize) -> Pairing<u32> {
      self.0.pairing(i)
    }
  }
  let mut group = c.benchmark_group("assemble_view");
  for n in [1_000, 10_000, 100_000] {
    let mut log = ItemLog::new();
    for item in history(n) {
      log.push(item);
    }
    let layer_costs = [40, 60, 80, 120, 200];
    group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
      b.iter(|| black_box(assemble_view(&[], &layer_costs, &Log(&log), Some(&DEFAULT_PROJECTION))));
    });
  }
  group.finish();
}

criterion_group!(benches, llm_step, projection_only);
criterion_main!(benches);
