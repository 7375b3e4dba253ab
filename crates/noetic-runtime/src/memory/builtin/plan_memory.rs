//! `planMemory()`: plan mode for an agent (spec §20.5). The model enters planning, writes a PRD and a plan tree
//! while only read-only tools are allowed, asks to execute, and the outcome of the execution is recorded.
//!
//! The state is upstream's JSON object (`phase`, `prd`, `planTree`, `executionLog`, `version`, `planSlug`), worked
//! on as JSON so that keys a host added survive every change, as they do under JS's object spread. The two host
//! callbacks (`onEnterSession`, `onExit`) are async user functions, so a `provides` function is a pure step that
//! may stop to [`Ask`] for one, then is run again with the answer.

use serde_json::{Map, Value, json};

use super::flow_schema::{flow_depth, parse_flow};
use super::js_json::number_value;
use super::js_json::stringify_pretty;
use crate::error::ConfigError;
use crate::items::js_number_string;
use crate::js_sketch::{Sketch, function_sketch, number_sketch};
use crate::js_value;
use crate::memory::{BudgetConfig, HookKind, HookSet, LayerSpec, Scope};
use crate::tokens::{estimate_tokens, utf16_len};

pub const ID: &str = "plan";
pub const NAME: &str = "Plan Memory";
/// Just before procedural memory (PROCEDURAL - 10).
pub const SLOT: f64 = 240.0;
pub const DEFAULT_MAX_PRD_LENGTH: f64 = 50_000.0;
pub const DEFAULT_MAX_TREE_DEPTH: f64 = 5.0;
/// How many execution outcomes the state keeps, newest last.
const KEPT_OUTCOMES: usize = 10;
const CONFIG_ERROR: &str = "INVALID_PLAN_MEMORY_CONFIG";

pub const IDLE: &str = "idle";
pub const PLANNING: &str = "planning";
pub const EXECUTING: &str = "executing";
pub const COMPLETED: &str = "completed";
pub const FAILED: &str = "failed";

/// The tools planning allows whatever the config says: read-only exploration, questions, sub-agents, and the
/// layer's own functions.
pub const ALLOWED_WHILE_PLANNING: [&str; 14] = [
  "Read",
  "Grep",
  "Find",
  "Ls",
  "AskUserQuestion",
  "activateSkill",
  "agent",
  "checkAgent",
  "sendMessage",
  "requestPlanApproval",
  "plan/enterPlanMode",
  "plan/updatePrd",
  "plan/setPlanTree",
  "plan/exitPlanMode",
];

#[derive(Debug, Clone, PartialEq)]
pub struct PlanConfig {
  pub scope: Scope,
  pub additional_allowed_tools: Vec<String>,
  /// In UTF-16 units, as JS measures a string. Infinity allows any length.
  pub max_prd_length: f64,
  pub max_tree_depth: f64,
  /// Appended to the planning brief when non-empty.
  pub additional_plan_instructions: Option<String>,
  /// Whether the host gave `onEnterSession` / `onExit`: only then is a function asked to call them.
  pub has_on_enter_session: bool,
  pub has_on_exit: bool,
}

impl Default for PlanConfig {
  fn default() -> Self {
    Self {
      scope: Scope::Thread,
      additional_allowed_tools: Vec::new(),
      max_prd_length: DEFAULT_MAX_PRD_LENGTH,
      max_tree_depth: DEFAULT_MAX_TREE_DEPTH,
      additional_plan_instructions: None,
      has_on_enter_session: false,
      has_on_exit: false,
    }
  }
}

/// The layer as the runtime sees it: init, recall, beforeToolCall, onSpawn and onComplete, default timeouts.
pub fn layer_spec(config: &PlanConfig) -> LayerSpec {
  let mut spec = LayerSpec::new(ID, SLOT, config.scope);
  spec.budget = BudgetConfig::Range { min: 100.0, max: 3_000.0 };
  spec.hooks = [HookKind::Init, HookKind::Recall, HookKind::BeforeToolCall, HookKind::OnSpawn, HookKind::OnComplete]
    .into_iter()
    .collect::<HookSet>();
  spec
}

// ---- config ----

/// The config from a sketch of what was given (or of settings answered before), checked. Upstream checks nothing
/// here; a bad value would silently disable a limit or the allow-list, so it is refused when the layer is built.
pub fn config_from(given: Sketch<'_>) -> Result<PlanConfig, ConfigError> {
  let field = |key: &str| Some(given.field(key)).filter(|value| !value.is_nullish());
  let defaults = PlanConfig::default();
  let scope = match field("scope") {
    None => defaults.scope,
    Some(value) => value
      .as_str()
      .and_then(Scope::parse)
      .ok_or_else(|| bad("scope", "must be 'thread', 'resource', 'global' or 'execution'", value))?,
  };
  let additional_allowed_tools = match field("additionalAllowedTools") {
    None => Vec::new(),
    Some(value) => value
      .as_array()
      .and_then(|names| names.iter().map(|name| name.as_str().map(str::to_owned)).collect())
      .ok_or_else(|| bad("additionalAllowedTools", "must be a list of tool names", value))?,
  };
  let limit = |key: &str, default: f64| match field(key) {
    None => Ok(default),
    Some(value) => match value.as_number() {
      Some(n) if n >= 0.0 => Ok(n),
      _ => Err(bad(key, "must be a number of at least 0", value)),
    },
  };
  let additional_plan_instructions = match field("additionalPlanInstructions") {
    None => None,
    Some(value) => Some(value.as_str().ok_or_else(|| bad("additionalPlanInstructions", "must be a string", value))?),
  };
  let callback = |key: &str| match field(key) {
    None => Ok(false),
    Some(value) if value.is_function() => Ok(true),
    Some(value) => Err(bad(key, "must be a function", value)),
  };
  Ok(PlanConfig {
    scope,
    additional_allowed_tools,
    max_prd_length: limit("maxPrdLength", defaults.max_prd_length)?,
    max_tree_depth: limit("maxTreeDepth", defaults.max_tree_depth)?,
    additional_plan_instructions: additional_plan_instructions.map(str::to_owned),
    has_on_enter_session: callback("onEnterSession")?,
    has_on_exit: callback("onExit")?,
  })
}

/// The settings the JS face holds, which [`config_from`] reads back.
pub fn config_json(config: &PlanConfig) -> Value {
  let mut settings = json!({
    "scope": config.scope.as_str(),
    "additionalAllowedTools": config.additional_allowed_tools,
    "maxPrdLength": number_sketch(config.max_prd_length),
    "maxTreeDepth": number_sketch(config.max_tree_depth),
    "additionalPlanInstructions": config.additional_plan_instructions,
  });
  for (key, given) in [("onEnterSession", config.has_on_enter_session), ("onExit", config.has_on_exit)] {
    if given {
      settings[key] = function_sketch();
    }
  }
  settings
}

fn bad(key: &str, rule: &str, value: Sketch<'_>) -> ConfigError {
  ConfigError::new(
    CONFIG_ERROR,
    format!("planMemory: {key} {rule}, got {}", value.described()),
    "Pass limits as numbers, additionalAllowedTools as tool names, and onEnterSession / onExit as functions.",
  )
}

// ---- state ----

/// A fresh plan: idle, nothing written, version 0.
pub fn default_state() -> Value {
  json!({ "phase": IDLE, "prd": null, "planTree": null, "executionLog": [], "version": 0 })
}

/// init: the saved state, or the default when nothing (or `null`) was saved.
pub fn init_state(saved: Option<Value>) -> Value {
  saved.filter(|value| !value.is_null()).unwrap_or_else(default_state)
}

fn phase(state: &Value) -> Option<&str> {
  state.get("phase").and_then(Value::as_str)
}

fn in_phase(state: &Value, wanted: &str) -> bool {
  phase(state) == Some(wanted)
}

/// `{...state, ...changes}`: keys already there keep their place, new ones go last. A state that is not an
/// object spreads to nothing, as `null` does in JS.
fn with(state: &Value, changes: impl IntoIterator<Item = (&'static str, Value)>) -> Value {
  let mut out = state.as_object().cloned().unwrap_or_default();
  for (key, value) in changes {
    out.insert(key.to_owned(), value);
  }
  Value::Object(out)
}

// ---- recall ----

const PLANNING_BRIEF: &[&str] = &[
  "<plan_mode>",
  "You are in PLAN MODE. You may only use read-only tools (Read, Grep, Find, Ls), AskUserQuestion, skill activation, sub-agent coordination tools, and requestPlanApproval to explore the codebase and request execution approval.",
  "Your goal is to produce a PRD document and (optionally) a structured execution plan.",
  "",
  "## Workflow (5 phases)",
  "",
  "1. **Initial Understanding** — Read code and gather context. To parallelise exploration, use the `agent` tool to spawn bounded read-only sub-agents; up to 3 in parallel. Each sub-agent returns a focused report.",
  "2. **Design** — Synthesise findings. Optionally spawn planning sub-agents (1–3 in parallel) to draft alternative implementation approaches and surface trade-offs.",
  "3. **Review** — Read the critical files identified by your subagents directly so you understand them first-hand. If anything is ambiguous, ask the user a focused question.",
  "4. **Final Plan** — Write the PRD via `plan/updatePrd`. Lead with a **Context** section (why this change), then your single recommended approach, the paths of files to modify, existing functions/utilities to reuse, and a **Verification** section. Then call `plan/setPlanTree` with a JSON noetic flow built from the existing step primitives (`step.llm`, `step.branch`, `step.fork`, `step.spawn`, `step.loop`) — tool refs by name string.",
  "5. **Exit** — Call `plan/exitPlanMode` with `{ action: \"execute\" }` to request approval. The user must accept before execution begins; if they reject, you stay in Plan Mode and may revise.",
  "",
  "## Available actions",
  "- `plan/updatePrd` — set markdown PRD content",
  "- `plan/setPlanTree` — set the optional JSON execution plan",
  "- `plan/exitPlanMode` `{ action: \"execute\" }` — request approval and exit to executing",
  "- `plan/exitPlanMode` `{ action: \"cancel\" }` — discard plan and return to idle",
  "",
  "## Constraints",
  "- DO NOT create, modify, or delete files (other than via `plan/updatePrd` and `plan/setPlanTree`).",
  "- DO NOT run mutating shell commands. Read-only exploration only.",
  "- End each turn either by asking the user a focused clarifying question or by calling `plan/exitPlanMode`.",
];

/// A section of the rendered text: a blank line, a heading, a blank line, the body.
fn section(lines: &mut Vec<String>, heading: &str, body: String) {
  lines.extend([String::new(), heading.to_owned(), String::new(), body]);
}

fn render_planning(state: &Value, config: &PlanConfig) -> String {
  let mut lines: Vec<String> = PLANNING_BRIEF.iter().map(|line| (*line).to_owned()).collect();
  if let Some(extra) = config.additional_plan_instructions.as_deref().filter(|text| !text.is_empty()) {
    section(&mut lines, "## Additional Instructions", extra.to_owned());
  }
  if js_value::truthy(state.get("prd")) {
    section(&mut lines, "## Current PRD Draft", js_value::string_of(state.get("prd")));
  }
  if let Some(tree) = state.get("planTree").filter(|tree| js_value::truthy(Some(tree))) {
    section(&mut lines, "## Current Plan Tree", stringify_pretty(tree));
  }
  lines.push("</plan_mode>".into());
  lines.join("\n")
}

fn render_executing(state: &Value) -> String {
  let prd = match state.get("prd") {
    None | Some(Value::Null) => String::new(),
    other => js_value::string_of(other),
  };
  let mut lines = vec!["<active_plan>".to_owned(), "## PRD".into(), String::new(), prd];
  if let Some(tree) = state.get("planTree").filter(|tree| js_value::truthy(Some(tree))) {
    section(&mut lines, "## Execution Plan", stringify_pretty(tree));
  }
  lines.push("</active_plan>".into());
  lines.join("\n")
}

fn render_outcome(state: &Value) -> String {
  let last = state.get("executionLog").and_then(Value::as_array).and_then(|log| log.last());
  let outcome = match last.and_then(|entry| entry.get("outcome")) {
    None | Some(Value::Null) => "unknown".to_owned(),
    other => js_value::string_of(other),
  };
  format!("<plan_outcome>Plan v{} {outcome}.</plan_outcome>", js_value::string_of(state.get("version")))
}

/// recall: nothing while idle (or in a phase it does not know); otherwise the phase's text, cut to `budget × 4`
/// UTF-16 units so that its `estimateTokens` count stays within the budget, and that count.
pub fn recall(state: &Value, budget: f64, config: &PlanConfig) -> Option<(String, u64)> {
  let text = match phase(state)? {
    PLANNING => render_planning(state, config),
    EXECUTING => render_executing(state),
    COMPLETED | FAILED => render_outcome(state),
    _ => return None,
  };
  let text = cut_to_units(text, budget * 4.0);
  let tokens = estimate_tokens(&text);
  Some((text, tokens))
}

/// `text.length > max ? text.slice(0, max) : text`, in UTF-16 units. A cut through a surrogate pair leaves JS a
/// lone surrogate, which crossing to Rust makes U+FFFD (DECISIONS B1); it is kept as that, so the length and the
/// token count stay JS's.
fn cut_to_units(text: String, max: f64) -> String {
  let len = utf16_len(&text);
  // A NaN limit compares false, so nothing is cut, as in JS.
  if max.is_nan() || len as f64 <= max {
    return text;
  }
  // `slice` truncates its end towards zero and counts a negative end from the back.
  let end = if max >= 0.0 { max.trunc() as usize } else { (len as f64 + max.trunc()).max(0.0) as usize };
  let mut out = String::with_capacity(end);
  let mut units = 0;
  for c in text.chars() {
    let width = c.len_utf16();
    if units + width > end {
      if units < end {
        out.push('\u{FFFD}');
      }
      break;
    }
    out.push(c);
    units += width;
  }
  out
}

// ---- steering ----

/// beforeToolCall: `Some(guidance)` when planning forbids the tool, `None` to allow it. A name matches an
/// allowed one as registered or in the provider-safe form models call it by (`plan_updatePrd`).
pub fn denial(state: &Value, tool_name: &str, config: &PlanConfig) -> Option<String> {
  if !in_phase(state, PLANNING) {
    return None;
  }
  let allowed =
    ALLOWED_WHILE_PLANNING.iter().copied().chain(config.additional_allowed_tools.iter().map(String::as_str));
  if allowed.into_iter().any(|name| name == tool_name || same_on_the_wire(name, tool_name)) {
    return None;
  }
  Some(format!(
    "Plan mode is active. \"{tool_name}\" is not allowed during planning. Use read-only tools (Read, Grep, Find, \
     Ls) to explore the codebase, then call plan/updatePrd to write your PRD."
  ))
}

/// Whether `called` is `registered` as providers receive it: every character outside `[A-Za-z0-9_-]` sent as `_`
/// (the rule of `tools::wire_name`, which sits above the memory module).
fn same_on_the_wire(registered: &str, called: &str) -> bool {
  let safe = |c: char| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' };
  registered.chars().map(safe).eq(called.chars())
}

// ---- the end of an execution ----

/// onComplete: an executing plan becomes completed on success and failed otherwise (aborted included), and the
/// outcome joins the log, of which the newest ten are kept. In any other phase nothing changes.
pub fn on_complete(state: &Value, outcome: &str, now_ms: f64) -> Option<Value> {
  if !in_phase(state, EXECUTING) {
    return None;
  }
  let mut entry = Map::new();
  entry.insert("timestamp".into(), number_value(now_ms));
  if let Some(version) = state.get("version") {
    entry.insert("version".into(), version.clone());
  }
  entry.insert("outcome".into(), Value::String(outcome.to_owned()));
  let mut log = state.get("executionLog").and_then(Value::as_array).cloned().unwrap_or_default();
  log.push(Value::Object(entry));
  if log.len() > KEPT_OUTCOMES {
    log.drain(..log.len() - KEPT_OUTCOMES);
  }
  let next = if outcome == "success" { COMPLETED } else { FAILED };
  Some(with(state, [("phase", json!(next)), ("executionLog", Value::Array(log))]))
}

// ---- provides ----

/// The `status` data entry.
pub fn status(state: &Value) -> Value {
  let mut out = Map::new();
  if let Some(phase) = state.get("phase") {
    out.insert("phase".into(), phase.clone());
  }
  out.insert("hasPrd".into(), Value::Bool(js_value::truthy(state.get("prd"))));
  // Upstream compares with `null`, so a state with no `planTree` key at all reports one.
  out.insert("hasPlanTree".into(), Value::Bool(state.get("planTree") != Some(&Value::Null)));
  if let Some(version) = state.get("version") {
    out.insert("version".into(), version.clone());
  }
  Value::Object(out)
}

/// A host callback a function must hear from before it can finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
  /// `onEnterSession()`, answering `{slug}`.
  EnterSession,
  /// `onExit(state)`, answering `{approved}`.
  Exit,
}

/// Where a function call stands.
#[derive(Debug, Clone, PartialEq)]
pub enum FnStep {
  /// The status text the model reads, and the new state (`None`: unchanged, the very state given).
  Done { result: String, state: Option<Value> },
  /// Call the callback and run the function again with its answer.
  Ask(Ask),
}

fn done(result: impl Into<String>, state: Option<Value>) -> Result<FnStep, String> {
  Ok(FnStep::Done { result: result.into(), state })
}

fn refused(result: impl Into<String>) -> Result<FnStep, String> {
  done(result, None)
}

/// The functions a model can call, with what it is told of each: `(name, description, input schema)`.
pub fn functions() -> Vec<(&'static str, &'static str, Value)> {
  // A flow node is one of five kinds, each an object of its own fields (what `flow_schema` checks); a nested node
  // refers back to the whole (`#`).
  let nested = json!({ "allOf": [{ "$ref": "#" }] });
  let nodes = json!({ "type": "array", "minItems": 1, "items": nested });
  let kind = |kind: &str, fields: Value, required: &[&str]| {
    let mut properties = Map::new();
    properties.insert("kind".into(), json!({ "type": "string", "const": kind }));
    properties.insert("id".into(), json!({ "type": "string", "minLength": 1 }));
    properties.insert("subPlanRef".into(), json!({ "type": "string" }));
    if let Value::Object(fields) = fields {
      properties.extend(fields);
    }
    let required: Vec<&str> = ["kind", "id"].into_iter().chain(required.iter().copied()).collect();
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
  };
  let string = json!({ "type": "string" });
  let named = json!({ "type": "string", "minLength": 1 });
  let node = json!({ "oneOf": [
    kind("llm", json!({ "model": string, "instructions": string, "tools": { "type": "array", "items": string } }), &["instructions"]),
    kind("subagent", json!({ "preset": named, "prompt": string }), &["preset", "prompt"]),
    kind("fork", json!({ "mode": { "type": "string", "enum": ["all", "race", "settle"] }, "paths": nodes }), &["mode", "paths"]),
    kind("spawn", json!({ "child": nested }), &["child"]),
    kind("sequence", json!({ "steps": nodes }), &["steps"]),
  ] });
  vec![
    (
      "enterPlanMode",
      "Enter plan mode. The agent switches to read-only exploration and PRD authoring.",
      json!({ "type": "object", "properties": { "goal": { "type": "string" } }, "additionalProperties": false }),
    ),
    (
      "updatePrd",
      "Update the PRD document with new markdown content.",
      json!({
        "type": "object",
        "properties": { "content": { "type": "string" } },
        "required": ["content"],
        "additionalProperties": false
      }),
    ),
    (
      "setPlanTree",
      "Set the execution plan tree. Input must be a valid FlowNode — a discriminated union with kind: \"llm\" | \
       \"subagent\" | \"fork\" | \"spawn\" | \"sequence\". Structural nodes (sequence, fork, spawn) nest child \
       FlowNodes; leaf nodes (llm, subagent) carry execution instructions.",
      node,
    ),
    (
      "exitPlanMode",
      "Exit plan mode. Use action \"execute\" to begin executing the plan, or \"cancel\" to discard it.",
      json!({
        "type": "object",
        "properties": { "action": { "type": "string", "enum": ["execute", "cancel"] } },
        "required": ["action"],
        "additionalProperties": false
      }),
    ),
  ]
}

/// Runs the function `name` on `args` and `state`. `answer` is the callback's answer when the previous step asked
/// for one. Arguments are checked as the schema would be before anything else; refusals in the wrong phase are
/// results (the model reads why), bad arguments are errors.
pub fn call(
  name: &str,
  args: &Value,
  state: &Value,
  config: &PlanConfig,
  answer: Option<&Value>,
) -> Result<FnStep, String> {
  match name {
    "enterPlanMode" => enter(optional_string(args, "goal")?, state, config, answer),
    "updatePrd" => update_prd(required_string(args, "content")?, state, config),
    "setPlanTree" => set_tree(parse_flow(args)?, state, config),
    "exitPlanMode" => match args.get("action").and_then(Value::as_str) {
      Some(action @ ("execute" | "cancel")) => exit(action == "execute", state, config, answer),
      _ => Err("exitPlanMode: action must be \"execute\" or \"cancel\"".into()),
    },
    _ => Err(format!("plan has no function '{name}'")),
  }
}

fn arguments_object<'a>(args: &'a Value, function: &str) -> Result<&'a Map<String, Value>, String> {
  args.as_object().ok_or_else(|| format!("{function}: the arguments must be an object"))
}

fn optional_string<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, String> {
  match arguments_object(args, "enterPlanMode")?.get(key) {
    None => Ok(None),
    Some(Value::String(text)) => Ok(Some(text)),
    Some(_) => Err(format!("enterPlanMode: {key} must be a string when given")),
  }
}

fn required_string<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
  match arguments_object(args, "updatePrd")?.get(key) {
    Some(Value::String(text)) => Ok(text),
    _ => Err(format!("updatePrd: {key} must be a string")),
  }
}

fn enter(goal: Option<&str>, state: &Value, config: &PlanConfig, answer: Option<&Value>) -> Result<FnStep, String> {
  if in_phase(state, PLANNING) || in_phase(state, EXECUTING) {
    return refused(format!(
      "Cannot enter plan mode: a plan is already active (phase \"{}\").",
      js_value::string_of(state.get("phase"))
    ));
  }
  if config.has_on_enter_session && answer.is_none() {
    return Ok(FnStep::Ask(Ask::EnterSession));
  }
  let slug = answer.and_then(|session| session.get("slug")).cloned().unwrap_or(Value::Null);
  let prd = goal.filter(|goal| !goal.is_empty()).map_or(Value::Null, |goal| json!(format!("# Goal\n\n{goal}\n")));
  let version = state.get("version").and_then(Value::as_f64).unwrap_or(0.0) + 1.0;
  let next = with(
    state,
    [
      ("phase", json!(PLANNING)),
      ("prd", prd),
      ("planTree", Value::Null),
      ("executionLog", json!([])),
      ("version", number_value(version)),
      ("planSlug", slug),
    ],
  );
  done("Plan mode activated. Explore the codebase, then call plan/updatePrd.", Some(next))
}

fn update_prd(content: &str, state: &Value, config: &PlanConfig) -> Result<FnStep, String> {
  if !in_phase(state, PLANNING) {
    return refused(format!(
      "Cannot update PRD: current phase is \"{}\". Enter plan mode first.",
      js_value::string_of(state.get("phase"))
    ));
  }
  if utf16_len(content) as f64 > config.max_prd_length {
    return refused(format!(
      "PRD content exceeds maximum length of {} characters.",
      js_number_string(config.max_prd_length)
    ));
  }
  done("PRD updated successfully.", Some(with(state, [("prd", json!(content))])))
}

fn set_tree(tree: Value, state: &Value, config: &PlanConfig) -> Result<FnStep, String> {
  if !in_phase(state, PLANNING) {
    return refused(format!(
      "Cannot set plan tree: current phase is \"{}\". Enter plan mode first.",
      js_value::string_of(state.get("phase"))
    ));
  }
  if flow_depth(&tree) as f64 > config.max_tree_depth {
    return refused(format!("Plan tree exceeds maximum depth of {}.", js_number_string(config.max_tree_depth)));
  }
  done(
    "Plan tree set successfully. Call plan/exitPlanMode to begin execution.",
    Some(with(state, [("planTree", tree)])),
  )
}

fn exit(execute: bool, state: &Value, config: &PlanConfig, answer: Option<&Value>) -> Result<FnStep, String> {
  if !in_phase(state, PLANNING) {
    return refused(format!(
      "Cannot exit plan mode: current phase is \"{}\".",
      js_value::string_of(state.get("phase"))
    ));
  }
  if !execute {
    return done("Plan cancelled. Returned to idle.", Some(default_state()));
  }
  if !js_value::truthy(state.get("prd")) {
    return refused("Cannot execute: no PRD has been written. Call plan/updatePrd first.");
  }
  if !js_value::truthy(state.get("planTree")) {
    return refused("Cannot execute: no plan tree has been set. Call plan/setPlanTree first.");
  }
  if config.has_on_exit {
    let Some(answer) = answer else { return Ok(FnStep::Ask(Ask::Exit)) };
    let Some(verdict) = answer.as_object() else {
      return Err(format!("onExit must resolve to {{ approved: boolean }}, got {}", js_value::string_of(Some(answer))));
    };
    if !js_value::truthy(verdict.get("approved")) {
      return refused(
        "User did not approve the plan. Stay in plan mode, address their feedback, and call plan/exitPlanMode \
         again when ready.",
      );
    }
  }
  done("Plan mode exited. Execution phase begun.", Some(with(state, [("phase", json!(EXECUTING))])))
}

#[cfg(test)]
mod tests {
  use super::*;

  fn planning() -> Value {
    json!({ "phase": PLANNING, "prd": null, "planTree": null, "executionLog": [], "version": 1 })
  }

  #[test]
  fn the_plan_tree_schema_offers_one_closed_object_per_node_kind_and_nests_the_whole() {
    let (_, _, schema) = functions().into_iter().find(|(name, ..)| *name == "setPlanTree").unwrap();
    let kinds = schema["oneOf"].as_array().unwrap();
    let named: Vec<&str> = kinds.iter().map(|k| k["properties"]["kind"]["const"].as_str().unwrap()).collect();
    assert_eq!(named, ["llm", "subagent", "fork", "spawn", "sequence"]);
    assert!(kinds.iter().all(|k| k["additionalProperties"] == json!(false)));
    assert_eq!(kinds[0]["required"], json!(["kind", "id", "instructions"]));
    assert_eq!(kinds[2]["properties"]["paths"]["items"], json!({ "allOf": [{ "$ref": "#" }] }));
    assert_eq!(kinds[3]["properties"]["child"], json!({ "allOf": [{ "$ref": "#" }] }));
    // Every node the schema describes is one the native check takes.
    let tree = json!({ "kind": "sequence", "id": "s", "steps": [{ "kind": "llm", "id": "a", "instructions": "go" }] });
    assert!(parse_flow(&tree).is_ok());
  }

  fn executing() -> Value {
    json!({
      "phase": EXECUTING, "prd": "# My Plan", "planTree": { "kind": "llm", "id": "leaf", "instructions": "go" },
      "executionLog": [], "version": 1
    })
  }

  fn leaf() -> Value {
    json!({ "kind": "llm", "id": "leaf", "instructions": "Do the thing" })
  }

  /// Runs a function to the end, answering any callback with `answer`.
  fn run(name: &str, args: Value, state: &Value, config: &PlanConfig, answer: Value) -> (String, Option<Value>) {
    let mut reply = None;
    loop {
      match call(name, &args, state, config, reply.as_ref()) {
        Ok(FnStep::Done { result, state }) => return (result, state),
        Ok(FnStep::Ask(_)) => reply = Some(answer.clone()),
        Err(message) => return (format!("error: {message}"), None),
      }
    }
  }

  fn text(value: &Value) -> (String, u64) {
    recall(value, 3_000.0, &PlanConfig::default()).unwrap_or_default()
  }

  #[test]
  fn identity_and_defaults() {
    let spec = layer_spec(&PlanConfig::default());
    assert_eq!((spec.id.as_str(), spec.slot, spec.scope), ("plan", 240.0, Scope::Thread));
    assert_eq!(spec.budget, BudgetConfig::Range { min: 100.0, max: 3_000.0 });
    for hook in HookKind::ALL {
      let expected = matches!(
        hook,
        HookKind::Init | HookKind::Recall | HookKind::BeforeToolCall | HookKind::OnSpawn | HookKind::OnComplete
      );
      assert_eq!(spec.hooks.has(hook), expected, "{}", hook.name());
    }
    assert_eq!(init_state(None), default_state());
    assert_eq!(init_state(Some(Value::Null)), default_state());
    assert_eq!(init_state(Some(planning())), planning());
  }

  #[test]
  fn config_is_read_and_bad_values_are_named() {
    let function = json!({ "$sketch": "a function", "type": "function" });
    let config = config_from(Sketch::of(&json!({
      "scope": "execution", "additionalAllowedTools": ["Custom"], "maxPrdLength": { "$sketch": "Infinity", "type": "number" },
      "maxTreeDepth": 2, "additionalPlanInstructions": "rule", "onExit": function, "onEnterSession": null
    })))
    .expect("valid");
    assert_eq!(config.scope, Scope::Execution);
    assert_eq!(config.max_prd_length, f64::INFINITY);
    assert!(config.has_on_exit && !config.has_on_enter_session);
    assert_eq!(config_from(Sketch::of(&config_json(&config))), Ok(config));
    assert_eq!(config_from(Sketch::of(&json!({}))), Ok(PlanConfig::default()));
    let cases = [
      (
        json!({ "maxPrdLength": { "$sketch": "NaN", "type": "number" } }),
        "planMemory: maxPrdLength must be a number of at least 0, got NaN",
      ),
      (json!({ "maxPrdLength": "big" }), "planMemory: maxPrdLength must be a number of at least 0, got \"big\""),
      (json!({ "maxTreeDepth": -1 }), "planMemory: maxTreeDepth must be a number of at least 0, got -1"),
      (json!({ "additionalAllowedTools": ["a", 1] }), "planMemory: additionalAllowedTools must be a list"),
      (json!({ "onExit": {} }), "planMemory: onExit must be a function, got an object"),
      (json!({ "onExit": true }), "planMemory: onExit must be a function, got true"),
      (json!({ "scope": "session" }), "planMemory: scope must be"),
    ];
    for (described, expected) in cases {
      let error = config_from(Sketch::of(&described)).expect_err("invalid");
      assert_eq!(error.code, "INVALID_PLAN_MEMORY_CONFIG");
      assert!(error.message.starts_with(expected), "{}", error.message);
    }
  }

  #[test]
  fn recall_renders_by_phase() {
    assert_eq!(recall(&default_state(), 3_000.0, &PlanConfig::default()), None);
    assert_eq!(recall(&json!({ "phase": "elsewhere" }), 3_000.0, &PlanConfig::default()), None);
    let (plan, tokens) = text(&with(&planning(), [("prd", json!("# Draft")), ("planTree", leaf())]));
    assert!(plan.starts_with("<plan_mode>\nYou are in PLAN MODE."), "{plan}");
    assert!(plan.ends_with(
      "## Current PRD Draft\n\n# Draft\n\n## Current Plan Tree\n\n{\n  \"kind\": \"llm\",\n  \"id\": \"leaf\",\n  \
       \"instructions\": \"Do the thing\"\n}\n</plan_mode>"
    ));
    assert_eq!(tokens, estimate_tokens(&plan));
    let config = PlanConfig { additional_plan_instructions: Some("RULE".into()), ..Default::default() };
    let (plan, _) = recall(&planning(), 3_000.0, &config).unwrap_or_default();
    assert!(plan.ends_with("- End each turn either by asking the user a focused clarifying question or by calling `plan/exitPlanMode`.\n\n## Additional Instructions\n\nRULE\n</plan_mode>"), "{plan}");
    let (active, _) = text(&with(&executing(), [("planTree", Value::Null)]));
    assert_eq!(active, "<active_plan>\n## PRD\n\n# My Plan\n</active_plan>");
    let done = on_complete(&executing(), "failure", 5.0).unwrap_or_default();
    assert_eq!(text(&done).0, "<plan_outcome>Plan v1 failure.</plan_outcome>");
    assert_eq!(text(&json!({ "phase": COMPLETED })).0, "<plan_outcome>Plan vundefined unknown.</plan_outcome>");
  }

  #[test]
  fn recall_is_cut_to_the_budget() {
    let state = with(&executing(), [("prd", json!("x".repeat(50_000)))]);
    let (cut, tokens) = recall(&state, 3_000.0, &PlanConfig::default()).unwrap_or_default();
    assert_eq!((utf16_len(&cut), tokens), (12_000, 3_000));
    assert_eq!(recall(&state, 0.0, &PlanConfig::default()), Some((String::new(), 0)));
    // A cut through a surrogate pair keeps the half as U+FFFD, one unit, as the lone surrogate JS would keep.
    assert_eq!(cut_to_units("ab😀c".into(), 3.0), "ab\u{FFFD}");
    assert_eq!(cut_to_units("abcdef".into(), 2.5), "ab");
    assert_eq!(cut_to_units("abcdef".into(), -4.0), "ab");
    assert_eq!(cut_to_units("abc".into(), f64::NAN), "abc");
  }

  #[test]
  fn planning_allows_only_the_list() {
    let config = PlanConfig { additional_allowed_tools: vec!["CustomTool".into()], ..Default::default() };
    for tool in ["Read", "Grep", "plan/updatePrd", "plan_exitPlanMode", "CustomTool", "requestPlanApproval"] {
      assert_eq!(denial(&planning(), tool, &config), None, "{tool}");
    }
    for tool in ["Write", "Bash", "plan/other", "read", "plan-updatePrd"] {
      let guidance = denial(&planning(), tool, &config).expect("denied");
      assert!(guidance.contains(&format!("\"{tool}\" is not allowed during planning")), "{guidance}");
    }
    assert_eq!(denial(&executing(), "Bash", &config), None);
    assert_eq!(denial(&default_state(), "Bash", &config), None);
  }

  #[test]
  fn the_whole_lifecycle() {
    let config = PlanConfig::default();
    let (result, state) = run("enterPlanMode", json!({ "goal": "Ship it" }), &default_state(), &config, Value::Null);
    assert_eq!(result, "Plan mode activated. Explore the codebase, then call plan/updatePrd.");
    let state = state.expect("entered");
    assert_eq!(state["prd"], json!("# Goal\n\nShip it\n"));
    assert_eq!((state["version"].clone(), state["planSlug"].clone()), (json!(1), Value::Null));
    let (result, _) = run("exitPlanMode", json!({ "action": "execute" }), &state, &config, Value::Null);
    assert_eq!(result, "Cannot execute: no plan tree has been set. Call plan/setPlanTree first.");
    let (_, state) = run("setPlanTree", leaf(), &state, &config, Value::Null);
    let state = state.expect("tree set");
    let (result, state) = run("exitPlanMode", json!({ "action": "execute" }), &state, &config, Value::Null);
    assert_eq!(result, "Plan mode exited. Execution phase begun.");
    let state = state.expect("executing");
    assert_eq!(status(&state), json!({ "phase": EXECUTING, "hasPrd": true, "hasPlanTree": true, "version": 1 }));
    let completed = on_complete(&state, "success", 1_700_000_000_000.0).expect("recorded");
    assert_eq!(completed["phase"], json!(COMPLETED));
    assert_eq!(
      completed["executionLog"],
      json!([{ "timestamp": 1_700_000_000_000_i64, "version": 1, "outcome": "success" }])
    );
    // A finished plan can be followed by a new one, which clears the log.
    let (_, again) = run("enterPlanMode", json!({}), &completed, &config, Value::Null);
    let again = again.expect("re-entered");
    assert_eq!(
      (again["phase"].clone(), again["version"].clone(), again["prd"].clone()),
      (json!(PLANNING), json!(2), Value::Null)
    );
    assert_eq!(again["executionLog"], json!([]));
  }

  #[test]
  fn refusals_keep_the_state() {
    let config = PlanConfig { max_prd_length: 3.0, max_tree_depth: 0.0, ..Default::default() };
    let cases = [
      (
        "enterPlanMode",
        json!({}),
        planning(),
        "Cannot enter plan mode: a plan is already active (phase \"planning\").",
      ),
      (
        "updatePrd",
        json!({ "content": "ok" }),
        executing(),
        "Cannot update PRD: current phase is \"executing\". Enter plan mode first.",
      ),
      ("updatePrd", json!({ "content": "long" }), planning(), "PRD content exceeds maximum length of 3 characters."),
      (
        "setPlanTree",
        leaf(),
        default_state(),
        "Cannot set plan tree: current phase is \"idle\". Enter plan mode first.",
      ),
      (
        "setPlanTree",
        json!({ "kind": "spawn", "id": "s", "child": leaf() }),
        planning(),
        "Plan tree exceeds maximum depth of 0.",
      ),
      (
        "exitPlanMode",
        json!({ "action": "cancel" }),
        executing(),
        "Cannot exit plan mode: current phase is \"executing\".",
      ),
      (
        "exitPlanMode",
        json!({ "action": "execute" }),
        with(&planning(), [("prd", json!(""))]),
        "Cannot execute: no PRD has been written. Call plan/updatePrd first.",
      ),
    ];
    for (name, args, state, expected) in cases {
      assert_eq!(run(name, args, &state, &config, Value::Null), (expected.to_owned(), None), "{name}");
    }
    // "😀" is two UTF-16 units, as JS counts the limit.
    assert_eq!(
      run("updatePrd", json!({ "content": "a😀" }), &planning(), &config, Value::Null).0,
      "PRD updated successfully."
    );
  }

  #[test]
  fn bad_arguments_are_errors() {
    let config = PlanConfig::default();
    let cases = [
      ("enterPlanMode", json!({ "goal": 5 }), "error: enterPlanMode: goal must be a string when given"),
      ("updatePrd", json!({}), "error: updatePrd: content must be a string"),
      ("exitPlanMode", json!({ "action": "later" }), "error: exitPlanMode: action must be \"execute\" or \"cancel\""),
      ("setPlanTree", json!({ "kind": "llm" }), "error: plan tree.id must be a string, got nothing"),
      ("forget", json!({}), "error: plan has no function 'forget'"),
    ];
    for (name, args, expected) in cases {
      assert_eq!(run(name, args, &planning(), &config, Value::Null).0, expected, "{name}");
    }
  }

  #[test]
  fn callbacks_are_asked_only_when_configured_and_only_when_needed() {
    let config = PlanConfig { has_on_enter_session: true, has_on_exit: true, ..Default::default() };
    assert_eq!(call("enterPlanMode", &json!({}), &default_state(), &config, None), Ok(FnStep::Ask(Ask::EnterSession)));
    // Refused before the host is asked.
    assert!(matches!(
      call("enterPlanMode", &json!({}), &planning(), &config, None),
      Ok(FnStep::Done { state: None, .. })
    ));
    let (_, state) = run("enterPlanMode", json!({}), &default_state(), &config, json!({ "slug": "amber" }));
    assert_eq!(state.map(|s| s["planSlug"].clone()), Some(json!("amber")));
    let ready = with(&planning(), [("prd", json!("# P")), ("planTree", leaf())]);
    assert_eq!(
      call("exitPlanMode", &json!({ "action": "execute" }), &ready, &config, None),
      Ok(FnStep::Ask(Ask::Exit))
    );
    let (result, state) =
      run("exitPlanMode", json!({ "action": "execute" }), &ready, &config, json!({ "approved": false }));
    assert!(result.starts_with("User did not approve the plan."), "{result}");
    assert_eq!(state, None);
    let (_, state) = run("exitPlanMode", json!({ "action": "execute" }), &ready, &config, json!({ "approved": true }));
    assert_eq!(state.map(|s| s["phase"].clone()), Some(json!(EXECUTING)));
    let (result, _) = run("exitPlanMode", json!({ "action": "execute" }), &ready, &config, Value::Null);
    assert_eq!(result, "error: onExit must resolve to { approved: boolean }, got null");
    // Cancelling never asks.
    assert_eq!(
      run("exitPlanMode", json!({ "action": "cancel" }), &ready, &config, Value::Null).1,
      Some(default_state())
    );
  }

  #[test]
  fn on_complete_keeps_the_newest_ten() {
    assert_eq!(on_complete(&planning(), "success", 1.0), None);
    let log: Vec<Value> = (0..15).map(|i| json!({ "timestamp": i, "version": 1, "outcome": "success" })).collect();
    let state = with(&executing(), [("executionLog", Value::Array(log))]);
    let next = on_complete(&state, "aborted", 99.0).expect("recorded");
    let log = next["executionLog"].as_array().cloned().unwrap_or_default();
    assert_eq!(log.len(), 10);
    assert_eq!((log[0]["timestamp"].clone(), log[9]["outcome"].clone()), (json!(6), json!("aborted")));
    assert_eq!(next["phase"], json!(FAILED));
  }

  #[test]
  fn status_follows_upstream_checks() {
    assert_eq!(status(&planning()), json!({ "phase": PLANNING, "hasPrd": false, "hasPlanTree": false, "version": 1 }));
    assert_eq!(status(&json!({ "prd": "" }))["hasPlanTree"], json!(true));
  }
}
