//! Layer and step descriptions as JS sends them (plain JSON with handles for user functions), turned into the
//! runtime's types. Validation itself is the runtime's (`LayerSet::register`); this only reads.

use std::sync::Arc;

use noetic_runtime::error::ConfigError;
use noetic_runtime::harness::{ModelRequest, ScriptedToolCall, ScriptedTurn, ToolDef, ToolImpl};
use noetic_runtime::items::Item;
use noetic_runtime::js_sketch::Sketch;
use noetic_runtime::memory::builtin::file_reference;
use noetic_runtime::memory::builtin::history_window;
use noetic_runtime::memory::builtin::layers::{
  durable_task_state_layer, file_reference_layer, history_window_layer, observational_memory_layer, plan_memory_layer,
  static_content_layer, temporal_memory_layer, working_memory_layer,
};
use noetic_runtime::memory::builtin::observational_memory;
use noetic_runtime::memory::builtin::plan_memory;
use noetic_runtime::memory::builtin::static_content;
use noetic_runtime::memory::builtin::steering;
use noetic_runtime::memory::builtin::steering_layer::steering_layer;
use noetic_runtime::memory::builtin::temporal_memory;
use noetic_runtime::memory::builtin::working_memory;
use noetic_runtime::memory::native::HostCallback;
use noetic_runtime::memory::registry::{
  Layer, LayerImpl, LayerSet, ProvidedFn, RawBudget, RawLayer, RawTimeouts, override_builtin, placement_of,
};
use noetic_runtime::memory::{Overflow, ProjectionPolicy, RecallMode};
use noetic_runtime::provider::{OpenRouterConfig, Timeouts};
use noetic_runtime::steps::builders;
use noetic_runtime::steps::{
  ContextIn, ContextOut, Emit, EveryStep, ForkMode, ForkStep, LazyFields, LlmStep, LoopStep, ModelParams, Step,
  StepAdapter, StructuredOutput, Until,
};
use serde_json::Value;

use crate::dispatcher::Dispatch;
use crate::js_callback::JsCallback;
use crate::protocol::number;

pub(crate) fn text(value: &Value, key: &str) -> Option<String> {
  value.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn describe_error(what: impl Into<String>) -> ConfigError {
  ConfigError::new(
    "INVALID_STEP",
    what,
    "Build steps with step.run / step.llm / loop / spawn, or give plain objects the same fields.",
  )
}

/// A built-in layer. Its host functions (a schema, an observer) are called through `host`; without one (when
/// layers are only validated) it is built without them.
fn native_layer(native: &Value, handle: Option<u64>, host: Option<&Dispatch>) -> Option<Layer> {
  let config = native.get("config").unwrap_or(&Value::Null);
  let callback = |name: &'static str| -> Option<Arc<dyn HostCallback>> {
    let wanted = Sketch::of(config).field(name).is_function();
    match (wanted, host, handle) {
      (true, Some(dispatch), Some(layer)) => Some(Arc::new(JsCallback { dispatch: dispatch.clone(), layer, name })),
      _ => None,
    }
  };
  let given = Sketch::of(config);
  let mut layer = match native.get("kind").and_then(Value::as_str)? {
    "working-memory" => working_memory_layer(working_memory::config_from(given), callback("schema")),
    "observational-memory" => {
      observational_memory_layer(observational_memory::config_from(given), callback("observer"))
    }
    "durable-task-state" => durable_task_state_layer(),
    "static-content" => static_content_layer(static_content::config_from(given).ok()?, callback("load")),
    "plan" => plan_memory_layer(plan_memory::config_from(given).ok()?, callback("onEnterSession"), callback("onExit")),
    "steering" => steering_layer(steering::config_from(given).ok()?, callback("predicates")),
    "temporal" => temporal_memory_layer(
      temporal_memory::config_from(given).ok()?,
      callback("now"),
      callback("extract"),
      callback("search"),
    ),
    "file-reference" => file_reference_layer(file_reference::config_from(given, "").ok()?),
    "history-window" => history_window_layer(history_window::max_items_from(given).ok()?),
    _ => return None,
  };
  layer.handle = handle;
  Some(layer)
}

/// Validates and registers a list of layer descriptions.
pub fn layer_set(layers: &Value, host: Option<&Dispatch>) -> Result<LayerSet, ConfigError> {
  let mut raws = Vec::new();
  let mut natives = Vec::new();
  for (index, layer) in layers.as_array().into_iter().flatten().enumerate() {
    let handle = layer.get("handle").and_then(Value::as_u64);
    if let Some(mut native) = layer.get("native").and_then(|native| native_layer(native, handle, host)) {
      // A built-in's recallMode can be set on its object (`{...workingMemory(), recallMode: 'eventual'}`).
      native.spec.recall_mode = RecallMode::parse(layer.get("recallMode").and_then(Value::as_str));
      if let Some(placement) = placement_of(native.id(), text(layer, "placement").as_deref())? {
        native.spec.placement = placement;
      }
      let timeouts = layer.get("timeouts").map(Sketch::of).filter(|given| !given.is_nullish()).map(RawTimeouts::of);
      override_builtin(&mut native, timeouts, layer.get("onInitError").and_then(Value::as_str))?;
      natives.push((index, native));
      continue;
    }
    let pairs = |key: &str| -> Vec<(String, Value)> {
      layer.get(key).and_then(Value::as_object).map(|o| o.clone().into_iter().collect()).unwrap_or_default()
    };
    raws.push(RawLayer {
      id: text(layer, "id"),
      slot: layer.get("slot").and_then(number),
      scope: text(layer, "scope"),
      budget: layer.get("budget").map_or(RawBudget::Omitted, |budget| RawBudget::of(Sketch::of(budget))),
      hooks: pairs("hooks").into_iter().map(|(k, v)| (k, v.as_str().unwrap_or("undefined").to_owned())).collect(),
      timeouts: layer.get("timeouts").map(Sketch::of).map(RawTimeouts::of).unwrap_or_default(),
      on_init_error: text(layer, "onInitError"),
      recall_mode: text(layer, "recallMode"),
      placement: text(layer, "placement"),
      provides: layer
        .get("provides")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| ProvidedFn {
          name: text(p, "name").unwrap_or_default(),
          description: text(p, "description").unwrap_or_default(),
          input_schema: Arc::new(p.get("inputSchema").cloned().unwrap_or(Value::Null)),
        })
        .collect(),
      imp: LayerImpl::Host(layer.get("handle").and_then(Value::as_u64).unwrap_or(0)),
    });
  }
  // Validate the JS layers, then put the built-ins back at their places in the caller's order.
  let registered = LayerSet::register(raws)?;
  let mut ordered: Vec<_> = registered.layers().to_vec();
  for (index, native) in natives {
    if ordered.iter().any(|layer| layer.id() == native.id()) {
      return Err(ConfigError::new(
        "DUPLICATE_LAYER_ID",
        format!("Two memory layers have the id '{}'.", native.id()),
        "Layer ids key state, storage and tools; give each layer its own id.",
      ));
    }
    ordered.insert(index.min(ordered.len()), Arc::new(native));
  }
  Ok(LayerSet::from_layers(ordered))
}

pub fn projection(value: &Value) -> Option<ProjectionPolicy> {
  let token_budget = value.get("tokenBudget").and_then(number)?;
  let response_reserve = value.get("responseReserve").and_then(number)?;
  Some(ProjectionPolicy {
    token_budget,
    response_reserve,
    overflow: value
      .get("overflow")
      .and_then(Value::as_str)
      .and_then(Overflow::parse)
      .unwrap_or(Overflow::SlidingWindow),
    overflow_model: text(value, "overflowModel"),
    window_size: value.get("windowSize").and_then(number),
  })
}

/// `{step, fields}`: the step object's handle and which of its fields are getters.
fn lazy_fields(value: &Value) -> Option<LazyFields> {
  Some(LazyFields {
    step: value.get("step").and_then(Value::as_u64)?,
    fields: serde_json::from_value(value.get("fields")?.clone()).ok()?,
  })
}

pub fn tool(value: &Value) -> ToolDef {
  ToolDef {
    name: text(value, "name").unwrap_or_default(),
    description: text(value, "description").unwrap_or_default(),
    input_schema: Arc::new(value.get("inputSchema").cloned().unwrap_or(Value::Null)),
    imp: ToolImpl::Host(value.get("handle").and_then(Value::as_u64).unwrap_or(0)),
  }
}

fn until(value: &Value) -> Result<Until, ConfigError> {
  let n = |key| value.get(key).and_then(number).unwrap_or(f64::NAN);
  let list = || -> Result<Vec<Until>, ConfigError> {
    value.get("of").and_then(Value::as_array).into_iter().flatten().map(until).collect()
  };
  Ok(match value.get("kind").and_then(Value::as_str) {
    Some("maxSteps") => Until::MaxSteps(n("n")),
    Some("maxCost") => Until::MaxCost(n("n")),
    Some("maxDuration") => Until::MaxDuration(n("n")),
    Some("noToolCalls") => Until::NoToolCalls,
    Some("never") => Until::Never,
    Some("any") => Until::Any(list()?),
    Some("all") => Until::All(list()?),
    Some("host") => Until::Host(value.get("handle").and_then(Value::as_u64).unwrap_or(0)),
    _ => return Err(describe_error("A loop's `until` is not a predicate function.")),
  })
}

/// A subprocess adapter as JS sends it: `{handle, inline}`.
pub(crate) fn adapter(value: &Value) -> Option<StepAdapter> {
  let handle = value.get("handle").and_then(Value::as_u64)?;
  Some(StepAdapter { handle, inline: value.get("inline").and_then(Value::as_bool) == Some(true) })
}

/// A step tree from its description.
pub fn step(value: &Value, host: Option<&Dispatch>) -> Result<Step, ConfigError> {
  let id = text(value, "id").unwrap_or_default();
  let handle = |key| value.get(key).and_then(Value::as_u64);
  Ok(match value.get("kind").and_then(Value::as_str) {
    Some("run") => Step::Run {
      execute: handle("execute").ok_or_else(|| describe_error(format!("step.run '{id}' has no execute function.")))?,
      retry: builders::retry_policy(value.get("retry").map_or(Sketch::undefined(), Sketch::of))?,
      subprocess: value.get("subprocess").and_then(adapter),
      in_place: value.get("inPlace").and_then(Value::as_bool) == Some(true),
      id,
    },
    Some("tool") => Step::Tool {
      tool: handle("tool").ok_or_else(|| describe_error(format!("step.tool '{id}' has no tool.")))?,
      args: handle("args"),
      id,
    },
    Some("branch") => Step::Branch {
      route: handle("route").ok_or_else(|| describe_error(format!("branch '{id}' has no route function.")))?,
      candidates: candidates(value, host)?,
      id,
    },
    Some("fork") => Step::Fork(ForkStep {
      mode: match value.get("mode").and_then(Value::as_str) {
        Some("race") => ForkMode::Race,
        Some("all") => ForkMode::All,
        Some("settle") => ForkMode::Settle,
        other => {
          return Err(describe_error(format!("fork '{id}' has mode {other:?}; expected 'race', 'all' or 'settle'.")));
        }
      },
      paths: handle("paths").ok_or_else(|| describe_error(format!("fork '{id}' has no paths function.")))?,
      merge: handle("merge"),
      concurrency: value.get("concurrency").and_then(number).map(|n| n.clamp(1.0, usize::MAX as f64) as usize),
      candidates: candidates(value, host)?,
      id,
    }),
    Some("llm") => Step::Llm(Box::new(LlmStep {
      model: text(value, "model").unwrap_or_default(),
      instructions: text(value, "instructions"),
      tools: value.get("tools").and_then(Value::as_array).map(|tools| tools.iter().map(tool).collect()),
      projection: value.get("projection").and_then(projection),
      lazy: value.get("lazy").and_then(lazy_fields),
      params: model_params(value.get("params")),
      emit: match value.get("emit") {
        Some(Value::Bool(false)) => Emit::None,
        Some(filter) => filter.get("filter").and_then(Value::as_u64).map_or(Emit::All, Emit::Filter),
        None => Emit::All,
      },
      output: value.get("output").and_then(|output| {
        Some(StructuredOutput {
          schema: output.get("schema")?.as_u64()?,
          json_schema: output.get("jsonSchema")?.clone(),
        })
      }),
      source: value.get("source").and_then(Value::as_u64),
      id,
    })),
    Some("loop") => Step::Loop(LoopStep {
      steps: value
        .get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| step(s, host).map(Arc::new))
        .collect::<Result<_, _>>()?,
      until: until(value.get("until").unwrap_or(&Value::Null))?,
      max_iterations: value.get("maxIterations").and_then(number).unwrap_or(1000.0),
      // A negative or NaN size keeps nothing, as upstream's splice would.
      max_history: value.get("maxHistorySize").and_then(number).map_or(
        noetic_runtime::steps::DEFAULT_LOOP_HISTORY,
        |n| {
          if n >= 0.0 { n.min(usize::MAX as f64) as usize } else { 0 }
        },
      ),
      prepare_next: handle("prepareNext"),
      on_error: handle("onError"),
      inbox: value.get("inbox").and_then(crate::channels::spec_of_json),
      park_timeout_ms: value.get("parkTimeout").and_then(number).unwrap_or(0.0),
      id,
    }),
    Some("every") => Step::Every(EveryStep {
      body: Arc::new(step(value.get("step").unwrap_or(&Value::Null), host)?),
      ms: value.get("ms").and_then(number).unwrap_or(0.0),
      jitter: value.get("jitter").and_then(number).unwrap_or(0.0),
      wake_on: value.get("wakeOn").and_then(crate::channels::spec_of_json),
      fail_on_error: value.get("onError").and_then(Value::as_str) == Some("fail"),
      id,
    }),
    Some("provide") => Step::Provide {
      child: Arc::new(step(value.get("child").unwrap_or(&Value::Null), host)?),
      memory: Arc::new(layer_set(value.get("memory").unwrap_or(&Value::Array(Vec::new())), host)?),
      id,
    },
    Some("spawn") => Step::Spawn {
      child: Arc::new(step(value.get("child").unwrap_or(&Value::Null), host)?),
      memory: match value.get("memory") {
        Some(layers @ Value::Array(_)) => Some(Arc::new(layer_set(layers, host)?)),
        _ => None,
      },
      timeout_ms: value.get("timeout").and_then(number),
      context_in: context_in(value.get("contextIn").unwrap_or(&Value::Null)),
      context_out: context_out(value.get("contextOut").unwrap_or(&Value::Null)),
      id,
    },
    Some(other) => {
      return Err(describe_error(format!("Step '{id}' has kind '{other}', which this version cannot run yet.")));
    }
    None => return Err(describe_error("A step has no `kind`.")),
  })
}

/// A spawn's `contextIn` as JS describes it: `{strategy, fn}` (JS has checked it).
fn context_in(value: &Value) -> ContextIn {
  let func = value.get("fn").and_then(Value::as_u64);
  match (value.get("strategy").and_then(Value::as_str), func) {
    (Some("inherit"), _) => ContextIn::Inherit,
    (Some("subset"), Some(func)) => ContextIn::Subset(func),
    (Some("custom"), Some(func)) => ContextIn::Custom(func),
    _ => ContextIn::Fresh,
  }
}

/// A spawn's `contextOut` as JS describes it: `{strategy, model?, prompt?, fn?}`.
fn context_out(value: &Value) -> ContextOut {
  let text = |key| value.get(key).and_then(Value::as_str).map(str::to_owned);
  match (value.get("strategy").and_then(Value::as_str), value.get("fn").and_then(Value::as_u64)) {
    (Some("summary"), _) => ContextOut::Summary { model: text("model"), prompt: text("prompt") },
    (Some("schema"), Some(func)) => ContextOut::Schema(func),
    _ => ContextOut::Full,
  }
}

/// The steps a branch or fork may choose at run time (`_optimizable`).
fn candidates(value: &Value, host: Option<&Dispatch>) -> Result<Vec<Arc<Step>>, ConfigError> {
  let listed = value.get("optimizable").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
  listed.iter().map(|s| step(s, host).map(Arc::new)).collect()
}

/// `step.params`: the sampling settings a provider is sent; anything not a finite number is left unset.
fn model_params(value: Option<&Value>) -> ModelParams {
  let field = |key| value.and_then(|v| v.get(key)).and_then(Value::as_f64).filter(|n| n.is_finite());
  ModelParams { temperature: field("temperature"), max_tokens: field("maxTokens"), top_p: field("topP") }
}

/// The OpenRouter provider's settings, as JS resolved them (the key from `llm.apiKey` or OPENROUTER_API_KEY).
pub fn openrouter(value: &Value) -> OpenRouterConfig {
  OpenRouterConfig {
    api_key: text(value, "apiKey").unwrap_or_default(),
    base_url: text(value, "baseUrl").filter(|url| !url.is_empty()),
    cache: value.get("cache").and_then(Value::as_bool).unwrap_or(false),
    timeouts: timeouts(value),
  }
}

/// The harness's `streamIdleTimeoutMs` and `llm.timeoutMs`, already checked in JS; absent ones keep the defaults.
fn timeouts(value: &Value) -> Timeouts {
  let defaults = Timeouts::default();
  let limit = |key: &str, default| value.get(key).and_then(number).map_or(default, Timeouts::from_ms);
  Timeouts {
    connect: defaults.connect,
    idle: limit("streamIdleTimeoutMs", defaults.idle),
    total: limit("timeoutMs", defaults.total),
  }
}

/// `harness.callModel`'s request: `{model, instructions?, params?}` and the items' JSON texts.
pub fn model_request(value: &Value, items: &[String]) -> Result<ModelRequest, String> {
  let items = items
    .iter()
    .map(|text| Item::from_json_text(text).map(Arc::new).map_err(|e| e.to_string()))
    .collect::<Result<_, _>>()?;
  Ok(ModelRequest {
    model: text(value, "model").unwrap_or_default(),
    instructions: text(value, "instructions"),
    items,
    params: model_params(value.get("params")),
    tools: value.get("tools").and_then(Value::as_array).into_iter().flatten().map(tool).collect(),
    context: None,
    output_schema: value.get("outputSchema").cloned(),
  })
}

/// The scripted model's turns.
pub fn script(value: &Value) -> Vec<ScriptedTurn> {
  value
    .as_array()
    .into_iter()
    .flatten()
    .map(|turn| ScriptedTurn {
      text: text(turn, "text"),
      tool_calls: turn
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|call| ScriptedToolCall {
          name: text(call, "name").unwrap_or_default(),
          arguments: match call.get("arguments") {
            Some(Value::String(text)) => text.clone(),
            Some(args) => args.to_string(),
            None => "{}".into(),
          },
        })
        .collect(),
      usage: turn.get("usage").and_then(|u| Some((u.get("inputTokens")?.as_f64()?, u.get("outputTokens")?.as_f64()?))),
    })
    .collect()
}
