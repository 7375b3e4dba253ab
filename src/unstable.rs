//! `@noetic-tools/core/unstable`: the budget and projection functions, exactly as the runtime uses them. Numbers cross as JS numbers (NaN and Infinity
//! included), items as their `JSON.stringify` text.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::collections::HashMap;

use noetic_runtime::items::Pairing;
use noetic_runtime::js_sketch::Sketch;
use noetic_runtime::js_text::from_js_json;
use noetic_runtime::memory::{assemble_view, check_budget, unstable};
use serde_json::Value;

use crate::protocol::{config_json, noetic_json, to_napi};

#[napi(object)]
pub struct BudgetOutput {
  pub allocated: Vec<f64>,
  pub history_budget: f64,
}

/// `allocateBudgets`'s argument, sketched (`js/sketch.cjs`): checked and split by the runtime's allocation.
#[napi(catch_unwind, skip_typescript)]
pub fn allocate_budgets_native(args: Value) -> Result<BudgetOutput> {
  let allocation = unstable::allocate(Sketch::of(&args)).map_err(|e| to_napi(config_json(&e)))?;
  Ok(BudgetOutput {
    allocated: allocation.allocations.iter().map(|a| a.allocated).collect(),
    history_budget: allocation.history_budget,
  })
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
  policy: Option<String>,
) -> Result<ViewOutput> {
  let system: Vec<u64> = system.iter().map(|&c| u64::from(c)).collect();
  let layers: Vec<u64> = layers.iter().map(|&c| u64::from(c)).collect();
  let history: Vec<(u64, Pairing<u32>)> =
    history.iter().map(|&c| u64::from(c)).zip(links(&history_kinds, &history_call_ids)).collect();
  // As JSON text: on this hot path napi's conversion of an object into a serde value cost twice the call.
  let policy = match policy {
    Some(text) => {
      let given: Value = from_js_json(&text).map_err(|e| Error::from_reason(e.to_string()))?;
      Some(unstable::projection_policy(Sketch::of(&given)).map_err(|e| to_napi(config_json(&e)))?)
    }
    None => None,
  };
  let plan = assemble_view(&system, &layers, history.as_slice(), policy.as_ref());
  Ok(ViewOutput {
    layers: plan.layers_kept.iter().map(|&i| i as u32).collect(),
    history: plan.history_kept.iter().map(|&i| i as u32).collect(),
  })
}

/// `checkBudget`'s usage and limits, sketched: the limits checked, then the usage held to them.
#[napi(catch_unwind, skip_typescript)]
pub fn check_budget_native(args: Value) -> Result<()> {
  let (usage, limits) = unstable::budget_check(Sketch::of(&args)).map_err(|e| to_napi(config_json(&e)))?;
  check_budget(usage, limits).map_err(|e| to_napi(noetic_json(&e)))
}
