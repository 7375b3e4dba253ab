//! `@noetic-tools/core/unstable`'s budget and projection functions as JS calls them: their arguments read off a
//! sketch (`js_sketch`), checked with the messages users see, and turned into what [`allocate_budgets`],
//! [`assemble_view`](super::assemble_view) and [`check_budget`](super::check_budget) take. The same functions the
//! runtime uses for its own model calls, so a user's call and the runtime's agree.

use super::{BudgetAllocation, BudgetConfig, BudgetLimits, BudgetUsage, Overflow, ProjectionPolicy, allocate_budgets};
use crate::error::ConfigError;
use crate::js_sketch::Sketch;

const NUMBER_HINT: &str = "Pass a number (Infinity is allowed).";

/// `value` as a number (NaN and the infinities included), or the error naming `what`; `optional`: `undefined`
/// passes as none.
fn number(value: Sketch, what: &str, code: &str, optional: bool) -> Result<Option<f64>, ConfigError> {
  if let Some(n) = value.as_number() {
    return Ok(Some(n));
  }
  if optional && value.is_undefined() {
    return Ok(None);
  }
  Err(ConfigError::new(code, format!("{what} is {}; expected a number.", value.described()), NUMBER_HINT))
}

/// A layer's `budget`: a number is fixed, any object a range (a bound left out is 0), anything else automatic.
fn budget_of(budget: Sketch, id: &str) -> Result<BudgetConfig, ConfigError> {
  if let Some(n) = budget.as_number() {
    return Ok(BudgetConfig::Fixed(n));
  }
  if !budget.is_object() {
    return Ok(BudgetConfig::Auto);
  }
  let bound = |name: &str| {
    let what = format!("allocateBudgets: layer '{id}' budget.{name}");
    number(budget.field(name), &what, "INVALID_LAYER_BUDGET", true).map(|n| n.unwrap_or(0.0))
  };
  Ok(BudgetConfig::Range { min: bound("min")?, max: bound("max")? })
}

/// `allocateBudgets({layers, totalBudget, systemPromptTokens, responseReserve})`: the three numbers are checked
/// first, then each layer's budget in order.
pub fn allocate(args: Sketch) -> Result<BudgetAllocation, ConfigError> {
  let mut inputs = [0.0; 3];
  for (input, name) in inputs.iter_mut().zip(["totalBudget", "systemPromptTokens", "responseReserve"]) {
    *input =
      number(args.field(name), &format!("allocateBudgets: {name}"), "INVALID_BUDGET_INPUT", false)?.unwrap_or(f64::NAN);
  }
  let given = args.field("layers");
  let Some(layers) = given.as_array() else {
    return Err(ConfigError::new(
      "INVALID_BUDGET_INPUT",
      format!("allocateBudgets: layers is {}; expected an array of layers.", given.described()),
      "Pass the layers to share the budget between, as an array.",
    ));
  };
  let mut budgets = Vec::with_capacity(layers.len());
  for layer in &layers {
    let id = layer.field("id").js_string();
    let budget = budget_of(layer.field("budget"), &id)?;
    budgets.push((id, budget));
  }
  let borrowed: Vec<(&str, BudgetConfig)> = budgets.iter().map(|(id, budget)| (id.as_str(), *budget)).collect();
  allocate_budgets(&borrowed, inputs[0], inputs[1], inputs[2])
}

/// `assembleView`'s `policy`; an overflow it does not know is the default, the sliding window.
pub fn projection_policy(policy: Sketch) -> Result<ProjectionPolicy, ConfigError> {
  let field = |name: &str, optional: bool| {
    number(policy.field(name), &format!("assembleView: policy.{name}"), "INVALID_PROJECTION_POLICY", optional)
  };
  let token_budget = field("tokenBudget", false)?.unwrap_or(f64::NAN);
  let response_reserve = field("responseReserve", false)?.unwrap_or(f64::NAN);
  let window_size = field("windowSize", true)?;
  let overflow = policy.field("overflow").as_str().and_then(Overflow::parse).unwrap_or_default();
  Ok(ProjectionPolicy { token_budget, response_reserve, overflow, overflow_model: None, window_size })
}

/// `checkBudget(ctx, limits)`'s arguments as JS reads them: `{cost, steps, duration}` of the context and the
/// `maxCost`, `maxSteps` and `maxDuration` limits, each a number or left out.
pub fn budget_check(args: Sketch) -> Result<(BudgetUsage, BudgetLimits), ConfigError> {
  let limit =
    |name: &str| number(args.field(name), &format!("checkBudget: limits.{name}"), "INVALID_BUDGET_INPUT", true);
  let limits =
    BudgetLimits { max_cost: limit("maxCost")?, max_steps: limit("maxSteps")?, max_duration: limit("maxDuration")? };
  let used = |name: &str| args.field(name).as_number().unwrap_or(f64::NAN);
  Ok((BudgetUsage { cost: used("cost"), steps: used("steps"), duration: used("duration") }, limits))
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  #[test]
  fn a_budget_input_that_is_not_a_number_is_named() {
    let args = json!({ "layers": [], "totalBudget": 1000, "systemPromptTokens": "ten", "responseReserve": 0 });
    let error = allocate(Sketch::of(&args)).unwrap_err();
    assert_eq!(error.code, "INVALID_BUDGET_INPUT");
    assert_eq!(error.message, "allocateBudgets: systemPromptTokens is \"ten\"; expected a number.");
  }

  #[test]
  fn range_bounds_are_checked_and_a_missing_bound_is_zero() {
    let args = json!({
      "layers": [{ "id": "a", "budget": { "max": 100 } }, { "id": "b", "budget": { "min": { "$sketch": "a function", "type": "function" } } }],
      "totalBudget": 1000, "systemPromptTokens": 0, "responseReserve": 0,
    });
    let error = allocate(Sketch::of(&args)).unwrap_err();
    assert_eq!(error.code, "INVALID_LAYER_BUDGET");
    assert_eq!(error.message, "allocateBudgets: layer 'b' budget.min is a function; expected a number.");
    let ok = json!({
      "layers": [{ "id": "a", "budget": { "max": 100 } }, { "id": "b", "budget": 50 }, { "id": "c" }],
      "totalBudget": { "$sketch": "Infinity", "type": "number" }, "systemPromptTokens": 0, "responseReserve": 0,
    });
    let allocation = allocate(Sketch::of(&ok)).unwrap();
    let ids: Vec<&str> = allocation.allocations.iter().map(|a| a.layer_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
  }

  #[test]
  fn layers_that_are_not_an_array_are_refused() {
    let args = json!({ "totalBudget": 1, "systemPromptTokens": 0, "responseReserve": 0 });
    assert_eq!(
      allocate(Sketch::of(&args)).unwrap_err().message,
      "allocateBudgets: layers is undefined; expected an array of layers."
    );
  }

  #[test]
  fn a_policy_reads_its_numbers_and_defaults_its_overflow() {
    let policy = json!({ "tokenBudget": 500, "responseReserve": 50, "overflow": 7 });
    let read = projection_policy(Sketch::of(&policy)).unwrap();
    assert_eq!((read.token_budget, read.response_reserve, read.window_size), (500.0, 50.0, None));
    assert_eq!(read.overflow, Overflow::SlidingWindow);
    let bad = json!({ "tokenBudget": 500, "responseReserve": 50, "windowSize": null });
    assert_eq!(
      projection_policy(Sketch::of(&bad)).unwrap_err().message,
      "assembleView: policy.windowSize is null; expected a number."
    );
  }

  #[test]
  fn budget_limits_may_be_left_out_but_not_be_other_values() {
    let args = json!({ "cost": 1, "steps": 2, "duration": 3, "maxSteps": 5 });
    let (usage, limits) = budget_check(Sketch::of(&args)).unwrap();
    assert_eq!((usage.steps, limits.max_steps, limits.max_cost), (2.0, Some(5.0), None));
    let bad = json!({ "cost": 1, "steps": 2, "duration": 3, "maxCost": "1" });
    assert_eq!(
      budget_check(Sketch::of(&bad)).unwrap_err().message,
      "checkBudget: limits.maxCost is \"1\"; expected a number."
    );
  }
}
