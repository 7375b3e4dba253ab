//! `@noetic-tools/core/unstable`: the budget and projection functions, exactly as the runtime uses them, and the
//! pure hooks of the built-in layers that JS calls directly. Numbers cross as JS numbers (NaN and Infinity
//! included), items as their `JSON.stringify` text.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::collections::HashMap;

use noetic_runtime::items::Pairing;
use noetic_runtime::memory::builtin::observational_memory::{self as om, ObservationalState};
use noetic_runtime::memory::builtin::working_memory as wm;
use noetic_runtime::memory::{
  BudgetConfig, BudgetLimits, BudgetUsage, Overflow, ProjectionPolicy, allocate_budgets, assemble_view, check_budget,
};
use serde_json::{Value, json};

use crate::describe::{om_config, wm_config};
use crate::protocol::{config_json, noetic_json, to_napi};

#[napi(object)]
pub struct BudgetInput {
  /// `number`, `range` or `auto` (anything else counts as auto, as upstream).
  pub kind: String,
  pub value: Option<f64>,
  pub min: Option<f64>,
  pub max: Option<f64>,
}

#[napi(object)]
pub struct BudgetOutput {
  pub allocated: Vec<f64>,
  pub history_budget: f64,
}

#[napi(catch_unwind, skip_typescript)]
pub fn allocate_budgets_native(
  ids: Vec<String>,
  budgets: Vec<BudgetInput>,
  total_budget: f64,
  system_prompt_tokens: f64,
  response_reserve: f64,
) -> Result<BudgetOutput> {
  let configs: Vec<BudgetConfig> = budgets
    .iter()
    .map(|b| match b.kind.as_str() {
      "number" => BudgetConfig::Fixed(b.value.unwrap_or(f64::NAN)),
      "range" => BudgetConfig::Range { min: b.min.unwrap_or(0.0), max: b.max.unwrap_or(0.0) },
      _ => BudgetConfig::Auto,
    })
    .collect();
  let layers: Vec<(&str, BudgetConfig)> = ids.iter().map(String::as_str).zip(configs).collect();
  let allocation = allocate_budgets(&layers, total_budget, system_prompt_tokens, response_reserve)
    .map_err(|e| to_napi(config_json(&e)))?;
  Ok(BudgetOutput {
    allocated: allocation.allocations.iter().map(|a| a.allocated).collect(),
    history_budget: allocation.history_budget,
  })
}

#[napi(object)]
pub struct PolicyInput {
  pub token_budget: f64,
  pub response_reserve: f64,
  pub overflow: Option<String>,
  pub window_size: Option<f64>,
}

#[napi(object)]
pub struct ViewOutput {
  pub layers: Vec<u32>,
  pub history: Vec<u32>,
}

/// Cost and tool link of an item from its JSON text; a value that is not an item still costs its length.
/// The tool link of a history item, from JS's `kinds` (0 none, 1 a call, 2 an output) and the call ids of the
/// linked items, in order.
fn links<'a>(kinds: &[u8], call_ids: &'a str) -> Vec<Pairing<u32>> {
  let mut ids = call_ids.split('\0');
  let mut numbers: HashMap<&'a str, u32> = HashMap::new();
  let mut number = |id: Option<&'a str>| {
    let next = numbers.len() as u32;
    *numbers.entry(id.unwrap_or_default()).or_insert(next)
  };
  kinds
    .iter()
    .map(|kind| match kind {
      1 => Pairing::Call(number(ids.next())),
      2 => Pairing::Output(number(ids.next())),
      _ => Pairing::Unlinked,
    })
    .collect()
}

/// `/unstable` `assembleView`'s plan from costs JS measured: every system and layer item's, and the history's
/// newest items, as many as could fit. Kept history indices count from the first of those.
#[napi(catch_unwind, skip_typescript)]
pub fn assemble_view_costs(
  system: Uint32Array,
  layers: Uint32Array,
  history: Uint32Array,
  history_kinds: Uint8Array,
  history_call_ids: String,
  policy: Option<PolicyInput>,
) -> ViewOutput {
  let system: Vec<u64> = system.iter().map(|&c| u64::from(c)).collect();
  let layers: Vec<u64> = layers.iter().map(|&c| u64::from(c)).collect();
  let history: Vec<(u64, Pairing<u32>)> =
    history.iter().map(|&c| u64::from(c)).zip(links(&history_kinds, &history_call_ids)).collect();
  let policy = policy.map(|p| ProjectionPolicy {
    token_budget: p.token_budget,
    response_reserve: p.response_reserve,
    overflow: p.overflow.as_deref().and_then(Overflow::parse).unwrap_or(Overflow::SlidingWindow),
    overflow_model: None,
    window_size: p.window_size,
  });
  let plan = assemble_view(&system, &layers, history.as_slice(), policy.as_ref());
  ViewOutput {
    layers: plan.layers_kept.iter().map(|&i| i as u32).collect(),
    history: plan.history_kept.iter().map(|&i| i as u32).collect(),
  }
}

#[napi(object)]
pub struct BudgetCheck {
  pub cost: f64,
  pub steps: f64,
  pub duration: f64,
  pub max_cost: Option<f64>,
  pub max_steps: Option<f64>,
  pub max_duration: Option<f64>,
}

#[napi(catch_unwind, skip_typescript)]
pub fn check_budget_native(check: BudgetCheck) -> Result<()> {
  let usage = BudgetUsage { cost: check.cost, steps: check.steps, duration: check.duration };
  let limits = BudgetLimits { max_cost: check.max_cost, max_steps: check.max_steps, max_duration: check.max_duration };
  check_budget(usage, limits).map_err(|e| to_napi(noetic_json(&e)))
}

fn maps(items: &Value) -> Vec<&serde_json::Map<String, Value>> {
  items.as_array().into_iter().flatten().filter_map(Value::as_object).collect()
}

/// A built-in layer's pure hook, for JS code that calls `layer.hooks.x(...)` directly. `params` carries the
/// state, the config and whatever the hook reads; the result is what the hook returns, minus JS-only wrapping.
/// `schema` is workingMemory's zod check, called synchronously: `null` when a value passes, else zod's message.
/// An observationalMemory hook that must distil answers `{distill: buffer}`; JS then awaits its observer and
/// calls `applyDistilled`.
#[napi(catch_unwind, skip_typescript)]
pub fn builtin_hook(
  kind: String,
  hook: String,
  params: Value,
  schema: Option<Function<Value, Value>>,
) -> Result<Value> {
  let fail = |message: String| Error::new(Status::GenericFailure, message);
  let state = params.get("state").cloned().unwrap_or(Value::Null);
  let config = params.get("config").cloned().unwrap_or(Value::Null);
  let items = params.get("items").cloned().unwrap_or(Value::Null);
  let check = |value: &Value| -> std::result::Result<(), String> {
    match schema.as_ref().map(|schema| schema.call(value.clone())) {
      None => Ok(()),
      Some(Ok(answer)) => wm::schema_verdict(answer),
      Some(Err(error)) => Err(error.reason.clone()),
    }
  };
  let check: Option<wm::SchemaCheck<'_>> = if schema.is_some() { Some(&check) } else { None };
  Ok(match (kind.as_str(), hook.as_str()) {
    ("working-memory", "initState") => wm::init_state(params.get("saved").cloned().filter(|v| !v.is_null()), check),
    ("working-memory", "recall") => wm::recall(&state).map_or(Value::Null, |(text, tokens)| json!([text, tokens])),
    ("working-memory", "store") => {
      wm::store(&state, &maps(&items), &wm_config(&config), check).map_err(fail)?.unwrap_or(Value::Null)
    }
    ("working-memory", "update") => {
      let update = params.get("args").and_then(Value::as_object).cloned().unwrap_or_default();
      wm::apply_update(&state, &update, check).map_err(fail)?
    }
    ("observational-memory", hook) => {
      let current = ObservationalState::from_value(&state).map_err(|e| fail(e.to_string()))?;
      let config = om_config(&config);
      let settle = |acc: om::Accumulated| match acc {
        om::Accumulated::Kept(next) => next.to_value(),
        om::Accumulated::Distill { new_buffer } => json!({ "distill": new_buffer }),
      };
      match hook {
        "initState" => om::init_state(params.get("saved").cloned().filter(|v| !v.is_null())),
        "recall" => {
          let budget = params.get("budget").and_then(Value::as_f64).unwrap_or(0.0);
          om::recall(&current, budget).map_or(Value::Null, |(text, tokens)| json!([text, tokens]))
        }
        "store" => settle(om::store(&current, &maps(&items), &config)),
        "onItemAppend" => om::on_item_append(&current, &maps(&items), &config).map_or(Value::Null, settle),
        "applyDistilled" => {
          let distilled = om::distilled(params.get("distilled").cloned().unwrap_or_default()).map_err(fail)?;
          om::apply_distilled(&current, distilled, &config).to_value()
        }
        _ => return Err(fail(format!("observational-memory has no hook '{hook}'"))),
      }
    }
    _ => return Err(fail(format!("{kind} has no hook '{hook}'"))),
  })
}
