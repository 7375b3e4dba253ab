//! `@noetic-tools/core/unstable`: the budget and projection functions, exactly as the runtime uses them. Numbers cross as JS numbers (NaN and Infinity
//! included), items as their `JSON.stringify` text.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::collections::HashMap;

use noetic_runtime::items::Pairing;
use noetic_runtime::memory::{
  BudgetConfig, BudgetLimits, BudgetUsage, Overflow, ProjectionPolicy, allocate_budgets, assemble_view, check_budget,
};

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
