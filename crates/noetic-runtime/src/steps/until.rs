//! Loop predicates. The built-in ones are evaluated here without crossing; a JS predicate is a host call.

use crate::host::HostRef;

#[derive(Debug, Clone)]
pub enum Until {
  MaxSteps(f64),
  MaxCost(f64),
  MaxDuration(f64),
  NoToolCalls,
  Never,
  Any(Vec<Until>),
  All(Vec<Until>),
  Host(HostRef),
}

/// What a built-in predicate reads from the loop.
pub struct LoopFacts {
  pub step_count: u64,
  pub cost: f64,
  pub elapsed_ms: f64,
  /// Tool calls in the last model response, when the last step was an LLM step.
  pub last_tool_calls: usize,
}

/// A verdict, or `None` when the predicate is the host's to evaluate.
pub(crate) fn evaluate_native(until: &Until, facts: &LoopFacts) -> Option<(bool, Option<String>)> {
  let verdict = |stop: bool, reason: String| Some((stop, stop.then_some(reason)));
  match until {
    Until::MaxSteps(n) => {
      verdict(facts.step_count as f64 >= *n, format!("Reached max steps ({})", crate::js_number(*n)))
    }
    Until::MaxCost(usd) => verdict(facts.cost >= *usd, format!("Reached max cost (${})", crate::js_number(*usd))),
    Until::MaxDuration(ms) => {
      verdict(facts.elapsed_ms >= *ms, format!("Reached max duration ({}ms)", crate::js_number(*ms)))
    }
    Until::NoToolCalls => {
      if facts.step_count < 1 {
        return Some((false, None));
      }
      verdict(facts.last_tool_calls == 0, "No tool calls in last response".into())
    }
    Until::Never => Some((false, None)),
    Until::Any(_) | Until::All(_) | Until::Host(_) => None,
  }
}
