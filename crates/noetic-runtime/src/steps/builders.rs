//! The checks upstream's step builders (`step.run`, `loop`, `fork`, `tool`, ...) make when a step is built, with
//! its codes and texts: the id first, then what the step cannot run without. JS sends the builder's name and a
//! [`Sketch`] of its options.

use super::{Backoff, RetryPolicy};
use crate::ConfigError;
use crate::js_sketch::Sketch;

/// The method names these checks ask about (a spawn's `contextOut` schema).
pub const METHOD_NAMES: &[&str] = &["safeParse"];

/// Checks the options of the builder `builder` (its JS name: `"step.run"`, `"loop"`, `"tool"`, ...).
pub fn check(builder: &str, opts: Sketch) -> Result<(), ConfigError> {
  if builder == "tool" {
    return check_tool(opts);
  }
  require_id(opts, builder)?;
  let id = opts.field("id").as_str().unwrap_or_default();
  match builder {
    "step.run" => need(
      opts.field("execute").is_function(),
      "MISSING_EXECUTE_FUNCTION",
      "step.run() requires an execute function.".into(),
      "Provide an async execute function, e.g. execute: async (input, ctx) => result.",
    ),
    "step.llm" => {
      // Only a model given as a blank string is refused here, as upstream: a getter's model, or none, is checked
      // when the step runs.
      need(
        !opts.field("model").as_str().is_some_and(|m| js_trim(m).is_empty()),
        "MISSING_MODEL",
        "step.llm() requires a non-empty model.".into(),
        "Pass a model identifier, e.g. model: 'anthropic/claude-sonnet-4-20250514'.",
      )?;
      check_projection(opts.field("projection"), &format!("step.llm '{id}'"))
    }
    "step.tool" => need(
      opts.field("tool").is_object(),
      "MISSING_TOOL",
      "step.tool() requires a tool.".into(),
      "Provide a tool definition created with the tool() builder.",
    ),
    "loop" => {
      need(
        opts.field("steps").as_array().is_some_and(|steps| !steps.is_empty()),
        "MISSING_LOOP_BODY",
        "loop() requires at least one body step.".into(),
        "Add at least one step to the steps array.",
      )?;
      need(
        opts.field("until").is_function(),
        "MISSING_UNTIL_PREDICATE",
        "loop() requires an until predicate.".into(),
        "Provide an until predicate, e.g. until.maxSteps(10).",
      )
    }
    "spawn" => {
      need(
        opts.field("child").is_object(),
        "MISSING_CHILD_STEP",
        "spawn() requires a child step.".into(),
        "Provide a child step to execute in the isolated child context.",
      )?;
      check_timeout(opts.field("timeout"), &format!("spawn '{id}'"))?;
      check_context_in(opts.field("contextIn"), id)?;
      check_context_out(opts.field("contextOut"), id)
    }
    "branch" => need(
      opts.field("route").is_function(),
      "MISSING_ROUTE_FUNCTION",
      "branch() requires a route function.".into(),
      "Provide a route function that selects the next step at runtime.",
    ),
    "provide" => need(
      opts.field("child").is_object(),
      "MISSING_CHILD_STEP",
      "provide() requires a child step.".into(),
      "Provide a child step to execute with the provided memory layers.",
    ),
    "every" => check_every(opts),
    "fork" => check_fork(opts),
    _ => Ok(()),
  }
}

pub(crate) fn fail<T>(code: &str, message: String, hint: &str) -> Result<T, ConfigError> {
  Err(ConfigError::new(code, message, hint))
}

fn need(condition: bool, code: &str, message: String, hint: &str) -> Result<(), ConfigError> {
  if condition { Ok(()) } else { Err(ConfigError::new(code, message, hint)) }
}

/// JS's `String.prototype.trim`: Unicode white space and the byte-order mark.
fn js_trim(text: &str) -> &str {
  text.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

/// Each builder's example id in its hint.
fn example_id(builder: &str) -> &'static str {
  match builder {
    "step.run" => "my-step",
    "step.llm" => "my-llm",
    "step.tool" => "my-tool",
    "loop" => "my-loop",
    "spawn" => "my-spawn",
    "branch" => "my-branch",
    "provide" => "my-provider",
    "every" => "my-every",
    "fork" => "my-fork",
    _ => "my-step",
  }
}

fn require_id(opts: Sketch, builder: &str) -> Result<(), ConfigError> {
  need(
    opts.field("id").as_str().is_some_and(|id| !js_trim(id).is_empty()),
    "EMPTY_STEP_ID",
    format!("{builder}() requires a non-empty id."),
    &format!("Pass a unique string as the id field, e.g. {builder}({{ id: \"{}\", ... }}).", example_id(builder)),
  )
}

fn check_tool(opts: Sketch) -> Result<(), ConfigError> {
  need(
    opts.field("name").as_str().is_some_and(|name| !js_trim(name).is_empty()),
    "EMPTY_TOOL_NAME",
    "tool() requires a non-empty name.".into(),
    "Pass a unique name for the tool, e.g. tool({ name: 'greet', ... }).",
  )?;
  need(
    opts.field("execute").is_function(),
    "MISSING_EXECUTE_FUNCTION",
    "tool() requires an execute function.".into(),
    "Provide an async execute function, e.g. execute: async (args, toolCtx) => result.",
  )
}

const OVERFLOWS: &[&str] = &["truncate", "sliding_window", "summarize"];

/// A projection policy: the harness's default, or a step's own (`place` names the step).
pub fn check_projection(projection: Sketch, place: &str) -> Result<(), ConfigError> {
  const CODE: &str = "INVALID_PROJECTION_POLICY";
  let hint = "Pass { tokenBudget: number, responseReserve: number, overflow: 'truncate' | 'sliding_window' | 'summarize', windowSize?, overflowModel? }.";
  if projection.is_nullish() {
    return Ok(());
  }
  if !projection.is_record() {
    return fail(CODE, format!("{place} projection is {}; expected an object.", projection.described()), hint);
  }
  for field in ["tokenBudget", "responseReserve", "windowSize"] {
    let value = projection.field(field);
    if value.as_number().is_some() || (field == "windowSize" && value.is_undefined()) {
      continue;
    }
    return fail(CODE, format!("{place} projection.{field} is {}; expected a number.", value.described()), hint);
  }
  let overflow = projection.field("overflow");
  if !overflow.is_undefined() && !overflow.as_str().is_some_and(|o| OVERFLOWS.contains(&o)) {
    return fail(
      CODE,
      format!("{place} projection.overflow is {}; expected one of {}.", overflow.described(), OVERFLOWS.join(", ")),
      hint,
    );
  }
  Ok(())
}

/// A timeout a caller gave: a number of milliseconds, 0 or more, Infinity included, or none (`undefined` or
/// `null`, which upstream also takes for none).
pub fn check_timeout(value: Sketch, what: &str) -> Result<(), ConfigError> {
  need(
    value.is_nullish() || value.as_number().is_some_and(|ms| ms >= 0.0),
    "INVALID_TIMEOUT",
    format!("{what}: the timeout is {}; expected a number of milliseconds, 0 or more.", value.described()),
    "Pass a number of milliseconds, Infinity (or 0) to wait without a limit, or nothing for the default.",
  )
}

/// A spawn's context strategy: `{ strategy, ... }`, or a bare name standing for it. Answers the strategy's fields.
fn strategy<'a>(
  value: Sketch<'a>,
  names: &[&str],
  what: &str,
  id: &str,
) -> Result<Option<(&'a str, Sketch<'a>)>, ConfigError> {
  if value.is_nullish() {
    return Ok(None);
  }
  let name = if value.as_str().is_some() { value.as_str() } else { value.field("strategy").as_str() };
  let is_spec = value.as_str().is_some() || value.is_object();
  match name.filter(|name| is_spec && names.contains(name)) {
    Some(name) => Ok(Some((name, value))),
    None => {
      let (code, hint) = if what == "contextIn" {
        (
          "INVALID_CONTEXT_IN",
          "Use 'fresh' (the default), 'inherit', { strategy: 'subset', select(items, state) }, or { strategy: 'custom', build(input, ctx) }.",
        )
      } else {
        (
          "INVALID_CONTEXT_OUT",
          "Use 'full' (the default), { strategy: 'summary', model?, prompt? }, or { strategy: 'schema', schema }.",
        )
      };
      let expected = names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
      Err(ConfigError::new(
        code,
        format!("spawn '{id}' has {what} {}; expected one of {expected} or {{ strategy, ... }}.", value.described()),
        hint,
      ))
    }
  }
}

fn check_context_in(value: Sketch, id: &str) -> Result<(), ConfigError> {
  let (name, spec, fn_name, hint) = match strategy(value, &["fresh", "inherit", "subset", "custom"], "contextIn", id)? {
    Some(("subset", spec)) => {
      ("subset", spec, "select", "Pass { strategy: 'subset', select: (parentItems, parentState) => items }.")
    }
    Some(("custom", spec)) => {
      ("custom", spec, "build", "Pass { strategy: 'custom', build: (input, parentCtx) => items }.")
    }
    _ => return Ok(()),
  };
  need(
    spec.field(fn_name).is_function(),
    "INVALID_CONTEXT_IN",
    format!("spawn '{id}' has contextIn '{name}' without a {fn_name} function."),
    hint,
  )
}

fn check_context_out(value: Sketch, id: &str) -> Result<(), ConfigError> {
  match strategy(value, &["full", "summary", "schema"], "contextOut", id)? {
    Some(("schema", spec)) => need(
      spec.field("schema").lacking(&["safeParse"]).is_empty() && !spec.field("schema").is_nullish(),
      "INVALID_CONTEXT_OUT",
      format!("spawn '{id}' has contextOut 'schema' without a schema."),
      "Pass { strategy: 'schema', schema: z.object({...}) } (any object with safeParse).",
    ),
    Some(("summary", spec)) => {
      for key in ["model", "prompt"] {
        let field = spec.field(key);
        need(
          field.is_undefined() || field.as_str().is_some(),
          "INVALID_CONTEXT_OUT",
          format!("spawn '{id}' has contextOut summary {key} {}; expected a string.", field.described()),
          &format!("Pass {key} as a string, or leave it out."),
        )?;
      }
      Ok(())
    }
    _ => Ok(()),
  }
}

/// `every`'s body, interval and jitter.
fn check_every(opts: Sketch) -> Result<(), ConfigError> {
  need(
    opts.field("step").is_object(),
    "MISSING_BODY_STEP",
    "every() requires a body step.".into(),
    "Provide the step to execute on each scheduled iteration.",
  )?;
  let non_negative = |value: Sketch| value.as_number().is_some_and(|n| n.is_finite() && n >= 0.0);
  let ms = opts.field("ms");
  need(
    non_negative(ms),
    "INVALID_INTERVAL_MS",
    format!("every() requires a non-negative finite ms, got {}.", ms.js_string()),
    "Pass a non-negative number of milliseconds for the park interval.",
  )?;
  let jitter = opts.field("jitter");
  need(
    jitter.is_undefined() || non_negative(jitter),
    "INVALID_JITTER",
    format!("every() requires a non-negative finite jitter, got {}.", jitter.js_string()),
    "Pass a non-negative number of milliseconds for jitter, or omit it.",
  )
}

fn check_fork(opts: Sketch) -> Result<(), ConfigError> {
  let mode = opts.field("mode");
  let Some(mode_name) = mode.as_str().filter(|m| ["race", "all", "settle"].contains(m)) else {
    return Err(ConfigError::new(
      "INVALID_FORK_MODE",
      format!("fork() mode must be 'race', 'all' or 'settle', got {}.", mode.described()),
      "Pass mode: 'race' (first success), 'all' (every value) or 'settle' (every outcome).",
    ));
  };
  if mode_name != "race" {
    need(
      opts.field("merge").is_function(),
      "MISSING_MERGE_FUNCTION",
      format!("fork() mode '{mode_name}' requires a merge function."),
      "Provide a merge function that combines path results into a single output.",
    )?;
  }
  need(
    opts.field("paths").is_function(),
    "MISSING_PATHS_FUNCTION",
    "fork() requires a paths function.".into(),
    "Provide paths: (input, ctx) => [step, ...], the steps to run side by side.",
  )?;
  let concurrency = opts.field("concurrency");
  need(
    concurrency.is_undefined()
      || concurrency.as_number().is_some_and(|n| n.fract() == 0.0 && n.is_finite() && n >= 1.0),
    "INVALID_CONCURRENCY",
    format!("fork() concurrency must be a positive integer, got {}.", concurrency.described()),
    "Leave concurrency out to run every path at once, or pass a whole number of at least 1.",
  )
}

/// `step.run`'s retry policy, read where a wrong one would otherwise retry forever or never: an object whose
/// `maxAttempts` is a number; a backoff other than `linear` or `exponential` is fixed, delays default to none and 30 s.
pub fn retry_policy(retry: Sketch) -> Result<Option<RetryPolicy>, ConfigError> {
  if retry.is_nullish() {
    return Ok(None);
  }
  if !retry.is_object() {
    return fail(
      "INVALID_RETRY_POLICY",
      format!("retry must be {{ maxAttempts, backoff, initialDelay, maxDelay? }}, got {}.", retry.described()),
      "Pass retry: { maxAttempts: 3, backoff: 'exponential', initialDelay: 100 }.",
    );
  }
  let attempts = retry.field("maxAttempts");
  let Some(max_attempts) = attempts.as_number().filter(|n| !n.is_nan()) else {
    return fail(
      "INVALID_RETRY_POLICY",
      format!("retry.maxAttempts must be a number, got {}.", attempts.described()),
      "Pass the total number of attempts, the first included.",
    );
  };
  let delay = |key: &str, default: f64| retry.field(key).as_number().unwrap_or(default).max(0.0);
  Ok(Some(RetryPolicy {
    max_attempts,
    backoff: match retry.field("backoff").as_str() {
      Some("linear") => Backoff::Linear,
      Some("exponential") => Backoff::Exponential,
      _ => Backoff::Fixed,
    },
    initial_delay_ms: delay("initialDelay", 0.0),
    max_delay_ms: delay("maxDelay", 30_000.0),
  }))
}

#[cfg(test)]
mod tests {
  use serde_json::{Value, json};

  use super::*;

  fn function() -> Value {
    json!({ "$sketch": "a function", "type": "function" })
  }

  fn refused(builder: &str, opts: Value) -> ConfigError {
    check(builder, Sketch::of(&opts)).expect_err("the options are refused")
  }

  #[test]
  fn the_id_comes_first_with_the_builders_example() {
    let error = refused("fork", json!({ "id": "  " }));
    assert_eq!((error.code.as_str(), error.message.as_str()), ("EMPTY_STEP_ID", "fork() requires a non-empty id."));
    assert!(error.hint.contains("fork({ id: \"my-fork\""));
  }

  #[test]
  fn each_builder_names_what_its_step_cannot_run_without() {
    assert_eq!(refused("step.run", json!({ "id": "a" })).code, "MISSING_EXECUTE_FUNCTION");
    assert_eq!(refused("loop", json!({ "id": "a", "steps": [] })).code, "MISSING_LOOP_BODY");
    assert_eq!(
      refused("fork", json!({ "id": "a", "mode": "all", "paths": function() })).code,
      "MISSING_MERGE_FUNCTION"
    );
    let concurrency = json!({ "id": "a", "mode": "race", "paths": function(), "concurrency": 1.5 });
    assert_eq!(refused("fork", concurrency).message, "fork() concurrency must be a positive integer, got 1.5.");
    assert_eq!(
      refused("every", json!({ "id": "a", "step": {}, "ms": "5" })).message,
      "every() requires a non-negative finite ms, got 5."
    );
    assert_eq!(refused("tool", json!({ "name": "t" })).message, "tool() requires an execute function.");
    assert!(check("fork", Sketch::of(&json!({ "id": "a", "mode": "race", "paths": function() }))).is_ok());
  }

  #[test]
  fn a_retry_policy_needs_a_number_of_attempts() {
    let policy = |value: Value| retry_policy(Sketch::of(&value));
    assert_eq!(
      policy(json!("x")).unwrap_err().message,
      "retry must be { maxAttempts, backoff, initialDelay, maxDelay? }, got \"x\"."
    );
    assert_eq!(
      policy(json!({ "maxAttempts": "three" })).unwrap_err().message,
      "retry.maxAttempts must be a number, got \"three\"."
    );
    let nan = json!({ "maxAttempts": { "$sketch": "NaN", "type": "number" } });
    assert_eq!(policy(nan).unwrap_err().code, "INVALID_RETRY_POLICY");
    let read = policy(json!({ "maxAttempts": 3, "backoff": "linear", "initialDelay": -5 })).unwrap().unwrap();
    assert_eq!(
      (read.max_attempts, read.backoff, read.initial_delay_ms, read.max_delay_ms),
      (3.0, Backoff::Linear, 0.0, 30_000.0)
    );
  }

  #[test]
  fn a_spawns_strategies_and_timeout_are_checked() {
    let base = |extra: Value| {
      let mut opts = json!({ "id": "s", "child": {} });
      opts.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
      opts
    };
    assert_eq!(refused("spawn", base(json!({ "timeout": -1 }))).code, "INVALID_TIMEOUT");
    assert_eq!(
      refused("spawn", base(json!({ "contextIn": "subset" }))).message,
      "spawn 's' has contextIn 'subset' without a select function."
    );
    let error = refused("spawn", base(json!({ "contextOut": "partial" })));
    assert_eq!(
      error.message,
      "spawn 's' has contextOut \"partial\"; expected one of 'full', 'summary', 'schema' or { strategy, ... }."
    );
    let schema = json!({ "$sketch": "a ZodObject", "type": "object", "methods": ["safeParse"] });
    assert!(
      check("spawn", Sketch::of(&base(json!({ "contextOut": { "strategy": "schema", "schema": schema } })))).is_ok()
    );
  }
}
