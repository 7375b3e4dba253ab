//! Budget allocation across memory layers (§10) and the cost/step/duration limit check.
//!
//! The arithmetic follows upstream operation by operation, in the same order, because allocations are fractional
//! and users compare them exactly. JS's `Math.max`/`Math.min` propagate NaN where Rust's `f64::max`/`min` drop it,
//! so the JS versions are used below.

use serde_json::json;

use super::layer::BudgetConfig;
use crate::error::{ConfigError, NoeticError};

/// The share one layer receives, in the order the layers were given.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerAllocation {
  pub layer_id: String,
  pub allocated: f64,
}

/// Result of [`allocate_budgets`]. `history_budget` is computed as upstream does but nothing reads it there.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetAllocation {
  pub allocations: Vec<LayerAllocation>,
  pub history_budget: f64,
}

/// Splits what remains of the context window after the system prompt and the response reserve: minimums first,
/// then 60% of the rest shared by headroom (finite layers capped at half the pool when any layer is unbounded) and
/// 40% set aside for history. Only NaN inputs are rejected; Infinity and fractions are accepted.
pub fn allocate_budgets(
  layers: &[(&str, BudgetConfig)],
  total_budget: f64,
  system_prompt_tokens: f64,
  response_reserve: f64,
) -> Result<BudgetAllocation, ConfigError> {
  for (field, value) in
    [("totalBudget", total_budget), ("systemPromptTokens", system_prompt_tokens), ("responseReserve", response_reserve)]
  {
    if value.is_nan() {
      return Err(ConfigError::new(
        "INVALID_BUDGET_INPUT",
        format!("allocateBudgets: {field} must be a number, got NaN."),
        "Give a real number; Infinity is accepted and means the budget is uncapped.",
      ));
    }
  }

  let available = total_budget - response_reserve - system_prompt_tokens;
  // NaN (from Infinity - Infinity) fails this test and flows through as NaN allocations, as upstream.
  if available <= 0.0 {
    return Ok(BudgetAllocation {
      allocations: layers.iter().map(|(id, _)| alloc(id, 0.0)).collect(),
      history_budget: 0.0,
    });
  }

  let mut remaining = available;
  let mut allocations = Vec::with_capacity(layers.len());
  for (id, budget) in layers {
    let min = budget.min();
    allocations.push(alloc(id, min));
    remaining -= min;
  }

  if remaining < 0.0 {
    // Σmin is recovered the way upstream does (available − remaining) so the scale rounds identically.
    let total_min = available - remaining;
    let scale = if total_min > 0.0 { available / total_min } else { 0.0 };
    for a in &mut allocations {
      a.allocated = (a.allocated * scale).floor();
    }
    return Ok(BudgetAllocation { allocations, history_budget: 0.0 });
  }

  let layer_pool = remaining * 0.6;
  let history_budget = remaining * 0.4;

  let headrooms: Vec<f64> =
    layers.iter().zip(&allocations).map(|((_, budget), a)| js_max(0.0, budget.max() - a.allocated)).collect();
  let total_max: f64 = headrooms.iter().fold(0.0, |sum, h| sum + h);

  if total_max > 0.0 {
    // NaN headrooms count as unbounded, as `Number.isFinite` does.
    let infinite_count = headrooms.iter().filter(|h| !h.is_finite()).count();
    let shares = finite_shares(&headrooms, layer_pool, infinite_count);
    let finite_used = shares.iter().fold(0.0, |sum, s| sum + s);
    let infinite_share = if infinite_count > 0 { (layer_pool - finite_used) / infinite_count as f64 } else { 0.0 };
    for ((a, &h), &share) in allocations.iter_mut().zip(&headrooms).zip(&shares) {
      let share = if h.is_finite() { share } else { infinite_share };
      a.allocated += js_min(share, h);
    }
  }

  Ok(BudgetAllocation { allocations, history_budget: js_max(0.0, history_budget) })
}

/// Each finite layer's proportional share of the pool, 0 for unbounded ones. With no unbounded layer the finite
/// layers split the whole pool uncapped (the caller caps at headroom and the excess is lost); otherwise they split
/// half of it, each capped at its headroom, and the unbounded layers get the rest.
fn finite_shares(headrooms: &[f64], layer_pool: f64, infinite_count: usize) -> Vec<f64> {
  let finite_total = headrooms.iter().filter(|h| h.is_finite()).fold(0.0, |sum, h| sum + h);
  let finite_pool = if infinite_count == 0 { layer_pool } else { layer_pool * 0.5 };
  headrooms
    .iter()
    .map(|&h| {
      if !h.is_finite() || finite_total == 0.0 {
        return 0.0;
      }
      let proportional = (h / finite_total) * finite_pool;
      if infinite_count == 0 { proportional } else { js_min(h, proportional) }
    })
    .collect()
}

fn alloc(id: &str, allocated: f64) -> LayerAllocation {
  LayerAllocation { layer_id: id.to_owned(), allocated }
}

/// `Math.max(a, b)`: NaN if either is NaN, and +0 beats −0.
pub(super) fn js_max(a: f64, b: f64) -> f64 {
  if a.is_nan() || b.is_nan() {
    f64::NAN
  } else if a == b {
    if a.is_sign_positive() { a } else { b }
  } else if a > b {
    a
  } else {
    b
  }
}

/// `Math.min(a, b)`: NaN if either is NaN, and −0 beats +0.
fn js_min(a: f64, b: f64) -> f64 {
  if a.is_nan() || b.is_nan() {
    f64::NAN
  } else if a == b {
    if a.is_sign_negative() { a } else { b }
  } else if a < b {
    a
  } else {
    b
  }
}

/// What an execution has used so far, as `ctx.cost`, `ctx.stepCount` and `ctx.elapsed` (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BudgetUsage {
  pub cost: f64,
  pub steps: f64,
  pub duration: f64,
}

/// `BudgetLimits`: each limit is optional; an absent one is not checked.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BudgetLimits {
  pub max_cost: Option<f64>,
  pub max_steps: Option<f64>,
  pub max_duration: Option<f64>,
}

/// `checkBudget`: fails with `budget_exceeded` on the first limit that usage strictly exceeds, checking cost, then
/// steps, then duration. Reaching a limit exactly is allowed.
pub fn check_budget(usage: BudgetUsage, limits: BudgetLimits) -> Result<(), NoeticError> {
  let checks = [
    ("cost", limits.max_cost, usage.cost),
    ("steps", limits.max_steps, usage.steps),
    ("duration", limits.max_duration, usage.duration),
  ];
  for (field, limit, actual) in checks {
    let Some(limit) = limit else { continue };
    if actual > limit {
      // `kind` first, so the payload's key order matches the object upstream builds.
      let payload = json!({ "kind": "budget_exceeded", "field": field, "limit": limit, "actual": actual });
      return Err(NoeticError::described("budget_exceeded", payload));
    }
  }
  Ok(())
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::tokens::estimate_tokens;

  fn range(min: f64, max: f64) -> BudgetConfig {
    BudgetConfig::Range { min, max }
  }

  fn allocated(result: &BudgetAllocation) -> Vec<f64> {
    result.allocations.iter().map(|a| a.allocated).collect()
  }

  #[test]
  fn typical_builtin_set_under_default_policy() {
    let layers = [
      ("wm", range(200.0, 1500.0)),
      ("om", range(500.0, 2500.0)),
      ("steering", range(0.0, 500.0)),
      ("plan", range(100.0, 3000.0)),
      ("historyWindow", BudgetConfig::Auto),
      ("temporal", range(0.0, 200.0)),
    ];
    let r = allocate_budgets(&layers, 128_000.0, 0.0, 4_000.0).unwrap();
    assert_eq!(allocated(&r), vec![1500.0, 2500.0, 500.0, 3000.0, 67_020.0, 200.0]);
    assert_eq!(r.history_budget, 49_280.0);
    let ids: Vec<&str> = r.allocations.iter().map(|a| a.layer_id.as_str()).collect();
    assert_eq!(ids, ["wm", "om", "steering", "plan", "historyWindow", "temporal"]);
  }

  #[test]
  fn tight_all_finite_splits_the_pool_by_headroom() {
    let layers = [("wm", range(200.0, 1500.0)), ("om", range(500.0, 2500.0))];
    let r = allocate_budgets(&layers, 8_000.0, 0.0, 4_000.0).unwrap();
    assert_eq!(allocated(&r), vec![980.0, 1700.0]);
    assert_eq!(r.history_budget, 1320.0);
  }

  #[test]
  fn all_finite_pool_beyond_headroom_is_lost() {
    // Pool 6000, but the only layer can take 100 more: the other 5900 go nowhere, history stays 0.4 × available.
    let r = allocate_budgets(&[("a", range(0.0, 100.0))], 10_000.0, 0.0, 0.0).unwrap();
    assert_eq!(allocated(&r), vec![100.0]);
    assert_eq!(r.history_budget, 4_000.0);
  }

  #[test]
  fn tight_with_an_auto_layer_caps_finite_layers_at_half_the_pool() {
    let layers = [("wm", range(200.0, 1500.0)), ("om", range(500.0, 2500.0)), ("auto", BudgetConfig::Auto)];
    let r = allocate_budgets(&layers, 8_000.0, 0.0, 4_000.0).unwrap();
    assert_eq!(allocated(&r), vec![590.0, 1100.0, 990.0]);
    assert_eq!(r.history_budget, 1320.0);
  }

  #[test]
  fn overcommitted_minimums_are_scaled_and_floored() {
    let layers = [("a", range(200.0, 1000.0)), ("b", range(500.0, 1000.0))];
    let r = allocate_budgets(&layers, 4_500.0, 0.0, 4_000.0).unwrap();
    assert_eq!(allocated(&r), vec![142.0, 357.0]);
    assert_eq!(r.history_budget, 0.0);
  }

  #[test]
  fn numeric_budget_is_a_cap_not_a_reservation() {
    let layers = [("a", BudgetConfig::Fixed(500.0)), ("b", BudgetConfig::Fixed(1500.0))];
    let r = allocate_budgets(&layers, 3_000.0, 0.0, 1_000.0).unwrap();
    assert_eq!(allocated(&r), vec![300.0, 900.0]);
    assert_eq!(r.history_budget, 800.0);
  }

  #[test]
  fn finite_layer_next_to_auto_is_clamped_at_half_the_pool() {
    for (f, expected) in [(2999.0, [2999.0, 3001.0]), (3000.0, [3000.0, 3000.0]), (3001.0, [3000.0, 3000.0])] {
      let layers = [("finite", range(0.0, f)), ("auto", BudgetConfig::Auto)];
      let r = allocate_budgets(&layers, 10_000.0, 0.0, 0.0).unwrap();
      assert_eq!(allocated(&r), expected.to_vec(), "F={f}");
    }
  }

  #[test]
  fn infinite_total_gives_infinite_auto_and_history() {
    let layers = [("finite", range(100.0, 1000.0)), ("auto", BudgetConfig::Auto)];
    let r = allocate_budgets(&layers, f64::INFINITY, 0.0, 4_000.0).unwrap();
    assert_eq!(allocated(&r), vec![1000.0, f64::INFINITY]);
    assert_eq!(r.history_budget, f64::INFINITY);
  }

  #[test]
  fn fractional_budgets_are_not_floored() {
    let r = allocate_budgets(&[("auto", BudgetConfig::Auto)], 0.5, 0.0, 0.0).unwrap();
    assert_eq!(allocated(&r), vec![0.3]);
    assert_eq!(r.history_budget, 0.2);
  }

  #[test]
  fn duplicate_ids_each_get_an_entry() {
    let layers = [("a", range(100.0, 200.0)), ("a", BudgetConfig::Auto)];
    let r = allocate_budgets(&layers, 10_000.0, 0.0, 0.0).unwrap();
    assert_eq!(allocated(&r), vec![200.0, 5840.0]);
  }

  #[test]
  fn default_policy_single_auto_layer_with_short_instructions() {
    let system = estimate_tokens("be nice");
    assert_eq!(system, 2);
    let r = allocate_budgets(&[("auto", BudgetConfig::Auto)], 128_000.0, system as f64, 4_000.0).unwrap();
    assert_eq!(allocated(&r), vec![74_398.8]);
  }

  #[test]
  fn min_above_max_allocates_min() {
    let r = allocate_budgets(&[("a", range(300.0, 100.0))], 10_000.0, 0.0, 0.0).unwrap();
    assert_eq!(allocated(&r), vec![300.0]);
  }

  #[test]
  fn empty_layer_list_leaves_history_its_share() {
    let r = allocate_budgets(&[], 10_000.0, 0.0, 0.0).unwrap();
    assert!(r.allocations.is_empty());
    assert_eq!(r.history_budget, 4_000.0);
  }

  #[test]
  fn nothing_available_gives_zero_everywhere() {
    let layers = [("a", range(100.0, 200.0)), ("b", BudgetConfig::Auto)];
    let r = allocate_budgets(&layers, 4_000.0, 10.0, 4_000.0).unwrap();
    assert_eq!(allocated(&r), vec![0.0, 0.0]);
    assert_eq!(r.history_budget, 0.0);
  }

  #[test]
  fn infinity_minus_infinity_is_nan_silently() {
    let layers = [("finite", range(100.0, 1000.0)), ("auto", BudgetConfig::Auto)];
    let r = allocate_budgets(&layers, f64::INFINITY, 0.0, f64::INFINITY).unwrap();
    assert!(allocated(&r).iter().all(|a| a.is_nan()));
    assert!(r.history_budget.is_nan());
  }

  #[test]
  fn nan_inputs_are_rejected_naming_the_field() {
    let cases = [
      (f64::NAN, 0.0, 0.0, "totalBudget"),
      (1.0, f64::NAN, 0.0, "systemPromptTokens"),
      (1.0, 0.0, f64::NAN, "responseReserve"),
    ];
    for (total, system, reserve, field) in cases {
      let err = allocate_budgets(&[], total, system, reserve).unwrap_err();
      assert_eq!(err.code, "INVALID_BUDGET_INPUT");
      assert!(err.message.contains(field), "{}", err.message);
      assert!(err.hint.contains("Infinity"));
    }
  }

  #[test]
  fn check_budget_uses_strict_comparison_in_fixed_order() {
    let limits = BudgetLimits { max_cost: Some(1.0), max_steps: Some(3.0), max_duration: Some(100.0) };
    assert!(check_budget(BudgetUsage { cost: 1.0, steps: 3.0, duration: 100.0 }, limits).is_ok());
    assert!(check_budget(BudgetUsage { cost: 9.0, steps: 9.0, duration: 9.0 }, BudgetLimits::default()).is_ok());

    let err = check_budget(BudgetUsage { cost: 1.5, steps: 4.0, duration: 101.0 }, limits).unwrap_err();
    assert_eq!(err.kind, "budget_exceeded");
    assert_eq!(err.payload, json!({ "kind": "budget_exceeded", "field": "cost", "limit": 1.0, "actual": 1.5 }));
    assert_eq!(err.message, "Budget exceeded: cost limit 1, actual 1.5");

    let err = check_budget(BudgetUsage { cost: 1.0, steps: 4.0, duration: 101.0 }, limits).unwrap_err();
    assert_eq!(err.payload["field"], "steps");
    assert_eq!(err.message, "Budget exceeded: steps limit 3, actual 4");

    let err = check_budget(BudgetUsage { cost: 0.0, steps: 0.0, duration: 250.5 }, limits).unwrap_err();
    assert_eq!(err.payload["field"], "duration");
    assert_eq!(err.message, "Budget exceeded: duration limit 100, actual 250.5");
  }

  #[test]
  fn numbers_print_as_js_does() {
    let cases = [
      (0.0, "0"),
      (-0.0, "0"),
      (5.0, "5"),
      (-12.25, "-12.25"),
      (0.1 + 0.2, "0.30000000000000004"),
      (74_398.8, "74398.8"),
      (1e21, "1e+21"),
      (1.5e21, "1.5e+21"),
      (123_456_789_012_345_680_000.0, "123456789012345680000"),
      (0.000001, "0.000001"),
      (1.5e-7, "1.5e-7"),
      (f64::INFINITY, "Infinity"),
      (f64::NEG_INFINITY, "-Infinity"),
      (f64::NAN, "NaN"),
    ];
    for (x, expected) in cases {
      assert_eq!(crate::js_number(x), expected);
    }
  }
}
