//! `steering(config)`: rules voted on before each tool call and after each model response, by the user's
//! predicates (in the host) or by the model's verdict, with a capped ledger of what was decided (spec §20.4).

use serde_json::{Map, Value, json};

use crate::error::ConfigError;
use crate::host::{SteeringAction, SteeringDecision};
use crate::items::to_js_json;
use crate::js_sketch::{Sketch, function_sketch};
use crate::memory::{BudgetConfig, HookKind, HookSet, LayerSpec, Scope};
use crate::tokens::estimate_tokens;

pub const ID: &str = "steering";
pub const NAME: &str = "Steering";
/// Slot.STEERING.
pub const SLOT: f64 = 90.0;
pub const DEFAULT_MODEL: &str = "openai/gpt-4o-mini";
const CODE: &str = "INVALID_STEERING_CONFIG";

/// Which steering hook a rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
  BeforeToolCall,
  AfterModelCall,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LlmEval {
  pub prompt: String,
  pub model: String,
  /// `mode: 'sync'`: the verdict is awaited; async rules fire and are heard at the next recall.
  pub sync: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
  pub id: String,
  pub before_tool_call: bool,
  pub after_model_call: bool,
  /// The rule has a `predicate`, which the host evaluates.
  pub predicate: bool,
  pub llm: Option<LlmEval>,
}

impl Rule {
  pub fn applies_to(&self, hook: Hook) -> bool {
    match hook {
      Hook::BeforeToolCall => self.before_tool_call,
      Hook::AfterModelCall => self.after_model_call,
    }
  }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SteeringConfig {
  pub rules: Vec<Rule>,
  pub max_ledger_entries: usize,
  pub max_retries: u32,
  pub scope: Scope,
}

/// A value as the messages name it; an absent one as `null`, as the check has always named it.
fn bad(what: &str, expected: &str, given: Sketch<'_>) -> ConfigError {
  let shown = if given.is_nullish() { "null".to_owned() } else { given.described() };
  ConfigError::new(
    CODE,
    format!("steering: {what} {expected}, got {shown}"),
    "Pass steering({ rules: [{ id, appliesTo: ['beforeToolCall'], predicate: (params) => decision }] }).",
  )
}

/// The config from a sketch of what was given (or of settings answered before), checked rule by rule.
pub fn config_from(given: Sketch<'_>) -> Result<SteeringConfig, ConfigError> {
  let field = |key: &str| Some(given.field(key)).filter(|value| !value.is_nullish());
  let rules = given.field("rules");
  let rules = match rules.as_array() {
    Some(rules) => rules.into_iter().enumerate().map(|(i, rule)| rule_from(i, rule)).collect::<Result<_, _>>()?,
    None => return Err(bad("rules", "must be an array of rules", rules)),
  };
  let count = |key: &str, default: u64| match field(key) {
    None => Ok(default),
    Some(value) => match value.as_number() {
      Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64 => Ok(n as u64),
      _ => Err(bad(key, "must be a whole number of at least 0", value)),
    },
  };
  let scope = match field("scope") {
    None => Scope::Execution,
    Some(value) => value
      .as_str()
      .and_then(Scope::parse)
      .ok_or_else(|| bad("scope", "must be 'execution', 'thread', 'resource' or 'global'", value))?,
  };
  Ok(SteeringConfig {
    rules,
    max_ledger_entries: count("maxLedgerEntries", 100)? as usize,
    max_retries: count("maxRetries", 1)? as u32,
    scope,
  })
}

/// A rule is any object (an array too: its fields are then missing); `llmEval`'s fields are read whatever it is.
fn rule_from(index: usize, rule: Sketch<'_>) -> Result<Rule, ConfigError> {
  let at = |field: &str| format!("rules[{index}]{field}");
  if rule.type_of() != "object" || rule.is_nullish() {
    return Err(bad(&at(""), "must be a rule object", rule));
  }
  let id = match rule.field("id").as_str() {
    Some(id) if !id.is_empty() => id.to_owned(),
    _ => return Err(bad(&at(".id"), "must be a non-empty string", rule.field("id"))),
  };
  let listed = rule.field("appliesTo");
  let Some(hooks) = listed.as_array() else {
    return Err(bad(&at(".appliesTo"), "must list 'beforeToolCall' and/or 'afterModelCall'", listed));
  };
  let (mut before_tool_call, mut after_model_call) = (false, false);
  for hook in hooks {
    match hook.as_str() {
      Some("beforeToolCall") => before_tool_call = true,
      Some("afterModelCall") => after_model_call = true,
      _ => return Err(bad(&at(".appliesTo"), "may hold only 'beforeToolCall' and 'afterModelCall'", hook)),
    }
  }
  let predicate = rule.field("predicate");
  if !predicate.is_nullish() && !predicate.is_function() {
    return Err(bad(&at(".predicate"), "must be a function", predicate));
  }
  let eval = rule.field("llmEval");
  let llm = if eval.is_nullish() { None } else { Some(llm_eval_from(&at(".llmEval"), eval)?) };
  Ok(Rule { id, before_tool_call, after_model_call, predicate: predicate.is_function(), llm })
}

fn llm_eval_from(at: &str, eval: Sketch<'_>) -> Result<LlmEval, ConfigError> {
  let sync = match eval.field("mode").as_str() {
    Some("sync") => true,
    Some("async") => false,
    _ => return Err(bad(&format!("{at}.mode"), "must be 'sync' or 'async'", eval.field("mode"))),
  };
  let Some(prompt) = eval.field("prompt").as_str() else {
    return Err(bad(&format!("{at}.prompt"), "must be a string", eval.field("prompt")));
  };
  let model = eval.field("model");
  let model = match model.as_str() {
    _ if model.is_nullish() => DEFAULT_MODEL,
    Some(model) => model,
    None => return Err(bad(&format!("{at}.model"), "must be a model name", model)),
  };
  Ok(LlmEval { prompt: prompt.to_owned(), model: model.to_owned(), sync })
}

/// The settings the JS face holds, which [`config_from`] reads back; `predicates` marks a config with a rule that
/// has one, for which the harness calls the host.
pub fn config_json(config: &SteeringConfig) -> Value {
  let rules: Vec<Value> = config
    .rules
    .iter()
    .map(|rule| {
      let hooks: Vec<&str> = [(rule.before_tool_call, "beforeToolCall"), (rule.after_model_call, "afterModelCall")]
        .into_iter()
        .filter_map(|(applies, hook)| applies.then_some(hook))
        .collect();
      let mut out = json!({ "id": rule.id, "appliesTo": hooks });
      if rule.predicate {
        out["predicate"] = function_sketch();
      }
      if let Some(eval) = &rule.llm {
        out["llmEval"] =
          json!({ "mode": if eval.sync { "sync" } else { "async" }, "prompt": eval.prompt, "model": eval.model });
      }
      out
    })
    .collect();
  let mut settings = json!({
    "rules": rules,
    "maxLedgerEntries": config.max_ledger_entries,
    "maxRetries": config.max_retries,
    "scope": config.scope.as_str(),
  });
  if config.rules.iter().any(|rule| rule.predicate) {
    settings["predicates"] = function_sketch();
  }
  settings
}

/// The layer as the runtime sees it: every hook but onItemAppend, projectHistory and onReturn.
pub fn layer_spec(config: &SteeringConfig) -> LayerSpec {
  let mut spec = LayerSpec::new(ID, SLOT, config.scope);
  spec.budget = BudgetConfig::Range { min: 0.0, max: 500.0 };
  spec.hooks = [
    HookKind::Init,
    HookKind::Recall,
    HookKind::Store,
    HookKind::BeforeToolCall,
    HookKind::AfterModelCall,
    HookKind::OnSpawn,
    HookKind::OnComplete,
  ]
  .into_iter()
  .collect::<HookSet>();
  spec.timeouts[HookKind::BeforeToolCall as usize] = Some(5_000.0);
  spec.timeouts[HookKind::AfterModelCall as usize] = Some(10_000.0);
  spec
}

/// init: the saved state (a saved `null` counts as none), or an empty ledger.
pub fn init_state(saved: Option<Value>) -> Value {
  saved.filter(|value| !value.is_null()).unwrap_or_else(|| json!({ "ledger": [], "pendingAsync": [] }))
}

/// The question an LLM rule puts to the model: its prompt, what is being decided, and the answer's form.
pub fn verdict_prompt(prompt: &str, context: &str) -> String {
  format!("{prompt}\n\nContext: {context}\n\nRespond with exactly \"ALLOW\", \"DENY\", or \"GUIDE: <guidance text>\".")
}

/// The context line of a tool call's question.
pub fn tool_context(tool_name: &str, tool_args: &Value) -> String {
  format!("Tool: {tool_name}, Args: {}", to_js_json(tool_args))
}

/// The context line of a model response's question.
pub fn response_context(items: usize) -> String {
  format!("Response items: {items}")
}

/// JS `String#trim`'s whitespace: Unicode White_Space, line terminators and the BOM.
fn js_trim(text: &str) -> &str {
  text.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

/// The model's verdict: ALLOW, DENY or GUIDE as a leading word in any case (`DENYALL` is none), the guidance
/// after it as written, leading colons and whitespace dropped. `None` for anything else, which is asked again.
pub fn parse_verdict(raw: &str) -> Option<SteeringDecision> {
  let text = js_trim(raw);
  let leading = |word: &str| {
    text.get(..word.len()).is_some_and(|head| head.eq_ignore_ascii_case(word))
      && !text[word.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
  };
  let guidance = |word: &str| {
    let rest = js_trim(text[word.len()..].trim_start_matches(|c: char| c == ':' || c.is_whitespace()));
    (!rest.is_empty()).then(|| rest.to_owned())
  };
  if leading("ALLOW") {
    return Some(SteeringDecision::ALLOW);
  }
  if leading("DENY") {
    return Some(SteeringDecision::new(SteeringAction::Deny, guidance("DENY")));
  }
  if leading("GUIDE") {
    return Some(SteeringDecision::new(SteeringAction::Guide, guidance("GUIDE")));
  }
  None
}

/// A predicate's answer as the host reports it: `null` (no decision, the rule falls through to its LLM
/// evaluation) or `{action, guidance?}`; an action that is not deny or guide counts as allow, as it would in
/// `mostRestrictive`.
pub fn predicate_decision(value: &Value) -> Option<SteeringDecision> {
  let map = value.as_object()?;
  let action = match map.get("action").and_then(Value::as_str) {
    Some("deny") => SteeringAction::Deny,
    Some("guide") => SteeringAction::Guide,
    _ => SteeringAction::Allow,
  };
  let guidance = map.get("guidance").and_then(Value::as_str).map(str::to_owned);
  Some(SteeringDecision::new(action, guidance))
}

fn action_name(action: &SteeringAction) -> &'static str {
  match action {
    SteeringAction::Allow => "allow",
    SteeringAction::Deny => "deny",
    SteeringAction::Guide => "guide",
  }
}

/// A ledger entry for `decision`: `ruleId` is the literal `steering` whenever the action is not allow.
fn decided(mut entry: Map<String, Value>, decision: &SteeringDecision) -> Value {
  if decision.action != SteeringAction::Allow {
    entry.insert("ruleId".into(), ID.into());
  }
  entry.insert("action".into(), action_name(&decision.action).into());
  if let Some(guidance) = &decision.guidance {
    entry.insert("guidance".into(), guidance.clone().into());
  }
  Value::Object(entry)
}

pub fn tool_entry(now: f64, tool_name: &str, tool_args: &Value, decision: &SteeringDecision) -> Value {
  let entry = json!({ "kind": "tool_call", "timestamp": now, "toolName": tool_name, "toolArgs": tool_args });
  decided(entry.as_object().cloned().unwrap_or_default(), decision)
}

/// `usage`: the response's `{inputTokens, outputTokens}`.
pub fn model_entry(now: f64, usage: &Value, decision: &SteeringDecision) -> Value {
  let tokens = |key| usage.get(key).cloned().unwrap_or(Value::Null);
  let entry = json!({
    "kind": "model_turn",
    "timestamp": now,
    "tokenUsage": { "input": tokens("inputTokens"), "output": tokens("outputTokens") },
  });
  decided(entry.as_object().cloned().unwrap_or_default(), decision)
}

pub fn outcome_entry(now: f64, outcome: &str) -> Value {
  json!({ "kind": "custom", "timestamp": now, "custom": { "outcome": outcome } })
}

/// The state with `entry` pushed onto its ledger, trimmed to the newest `max` (a state without a ledger gets one).
pub fn record(state: Option<&Value>, entry: Value, max: usize) -> Value {
  let mut state = match state {
    Some(Value::Object(map)) => map.clone(),
    _ => init_state(None).as_object().cloned().unwrap_or_default(),
  };
  let ledger = state.entry("ledger").or_insert_with(|| Value::Array(Vec::new()));
  if !ledger.is_array() {
    *ledger = Value::Array(Vec::new());
  }
  if let Value::Array(entries) = ledger {
    entries.push(entry);
    let excess = entries.len().saturating_sub(max);
    entries.drain(..excess);
  }
  Value::Object(state)
}

/// onSpawn: the child starts with a copy of the ledger and nothing pending.
pub fn spawned(parent: Option<&Value>) -> Value {
  let ledger = parent.and_then(|state| state.get("ledger")).filter(|ledger| ledger.is_array());
  json!({ "ledger": ledger.cloned().unwrap_or(json!([])), "pendingAsync": [] })
}

/// A verdict of an async rule that was not allow, waiting for the next recall.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
  pub rule_id: String,
  pub guidance: String,
}

impl Pending {
  /// Guidance defaults to `Rule <id>: <action>`.
  pub fn of(rule_id: &str, decision: &SteeringDecision) -> Self {
    let guidance =
      decision.guidance.clone().unwrap_or_else(|| format!("Rule {rule_id}: {}", action_name(&decision.action)));
    Self { rule_id: rule_id.to_owned(), guidance }
  }
}

/// The pending feedback in a state (`pendingAsync`), in order.
pub fn pending_in(state: Option<&Value>) -> Vec<Pending> {
  let listed = state.and_then(|state| state.get("pendingAsync")).and_then(Value::as_array);
  let text = |entry: &Value, key| entry.get(key).map(|v| v.as_str().map_or_else(|| to_js_json(v), str::to_owned));
  listed
    .into_iter()
    .flatten()
    .filter_map(|entry| Some(Pending { rule_id: text(entry, "ruleId")?, guidance: text(entry, "guidance")? }))
    .collect()
}

/// The state with nothing pending.
pub fn drained(state: &Value) -> Value {
  let mut state = state.clone();
  if let Some(map) = state.as_object_mut() {
    map.insert("pendingAsync".into(), json!([]));
  }
  state
}

/// recall: the pending feedback, one `[ruleId] guidance` line each, in a `<steering_feedback>` element.
pub fn feedback(pending: &[Pending]) -> Option<(String, u64)> {
  if pending.is_empty() {
    return None;
  }
  let lines: Vec<String> = pending.iter().map(|p| format!("[{}] {}", p.rule_id, p.guidance)).collect();
  let content = format!("<steering_feedback>\n{}\n</steering_feedback>", lines.join("\n"));
  let tokens = estimate_tokens(&content);
  Some((content, tokens))
}

#[cfg(test)]
mod tests {
  use super::*;

  fn decision(action: SteeringAction, guidance: Option<&str>) -> SteeringDecision {
    SteeringDecision::new(action, guidance.map(str::to_owned))
  }

  #[test]
  fn verdicts_are_a_leading_word_in_any_case_with_the_guidance_kept_as_written() {
    let cases = [
      ("ALLOW", Some(SteeringDecision::ALLOW)),
      ("  allow, looks fine", Some(SteeringDecision::ALLOW)),
      ("DENY", Some(decision(SteeringAction::Deny, None))),
      ("deny: Too Risky ", Some(decision(SteeringAction::Deny, Some("Too Risky")))),
      ("Deny:::   no", Some(decision(SteeringAction::Deny, Some("no")))),
      ("GUIDE: Use the Staging DB", Some(decision(SteeringAction::Guide, Some("Use the Staging DB")))),
      ("guide:", Some(decision(SteeringAction::Guide, None))),
      ("GUIDE-ish", Some(decision(SteeringAction::Guide, Some("-ish")))),
      ("DENYALL", None),
      ("ALLOWED", None),
      ("GUIDE_x", None),
      ("I think ALLOW", None),
      ("", None),
    ];
    for (raw, expected) in cases {
      assert_eq!(parse_verdict(raw), expected, "{raw:?}");
    }
  }

  #[test]
  fn the_question_names_the_tool_and_its_arguments_as_json() {
    let context = tool_context("rm", &json!({ "path": "/", "force": 1.0 }));
    assert_eq!(context, r#"Tool: rm, Args: {"path":"/","force":1}"#);
    assert_eq!(
      verdict_prompt("Is it safe?", &context),
      "Is it safe?\n\nContext: Tool: rm, Args: {\"path\":\"/\",\"force\":1}\n\nRespond with exactly \"ALLOW\", \"DENY\", or \"GUIDE: <guidance text>\"."
    );
    assert_eq!(response_context(3), "Response items: 3");
  }

  #[test]
  fn the_ledger_keeps_the_newest_entries_and_names_the_layer_on_a_non_allow() {
    let mut state = init_state(None);
    for n in 0..5 {
      let verdict = if n % 2 == 0 { SteeringDecision::ALLOW } else { decision(SteeringAction::Deny, Some("no")) };
      state = record(Some(&state), tool_entry(n as f64, "t", &json!({ "n": n }), &verdict), 3);
    }
    let ledger = state["ledger"].as_array().unwrap();
    assert_eq!(ledger.len(), 3);
    assert_eq!(ledger[0]["timestamp"], json!(2.0));
    assert_eq!(
      ledger[1],
      json!({ "kind": "tool_call", "timestamp": 3.0, "toolName": "t", "toolArgs": { "n": 3 }, "ruleId": "steering", "action": "deny", "guidance": "no" })
    );
    assert!(ledger[2].get("ruleId").is_none());
    let model = model_entry(9.0, &json!({ "inputTokens": 10, "outputTokens": 4 }), &SteeringDecision::ALLOW);
    assert_eq!(
      model,
      json!({ "kind": "model_turn", "timestamp": 9.0, "tokenUsage": { "input": 10, "output": 4 }, "action": "allow" })
    );
    assert_eq!(record(Some(&state), outcome_entry(1.0, "success"), 0)["ledger"], json!([]));
  }

  #[test]
  fn feedback_lists_each_pending_verdict_and_defaults_its_guidance() {
    let pending = [
      Pending::of("a", &decision(SteeringAction::Deny, None)),
      Pending::of("b", &decision(SteeringAction::Guide, Some("slow down"))),
    ];
    let (text, tokens) = feedback(&pending).unwrap();
    assert_eq!(text, "<steering_feedback>\n[a] Rule a: deny\n[b] slow down\n</steering_feedback>");
    assert_eq!(tokens, estimate_tokens(&text));
    assert_eq!(feedback(&[]), None);
    let state = json!({ "ledger": [], "pendingAsync": [{ "ruleId": "x", "guidance": "g" }] });
    assert_eq!(pending_in(Some(&state)), vec![Pending { rule_id: "x".into(), guidance: "g".into() }]);
    assert_eq!(drained(&state)["pendingAsync"], json!([]));
  }

  #[test]
  fn a_child_gets_the_ledger_but_nothing_pending() {
    let parent = json!({ "ledger": [{ "kind": "custom" }], "pendingAsync": [{ "ruleId": "x", "guidance": "g" }] });
    assert_eq!(spawned(Some(&parent)), json!({ "ledger": [{ "kind": "custom" }], "pendingAsync": [] }));
    assert_eq!(spawned(None), json!({ "ledger": [], "pendingAsync": [] }));
  }

  #[test]
  fn config_is_checked_rule_by_rule() {
    let function = json!({ "$sketch": "a function", "type": "function" });
    let ok = config_from(Sketch::of(&json!({ "rules": [
      { "id": "r1", "appliesTo": ["beforeToolCall"], "predicate": function },
      { "id": "r2", "appliesTo": ["afterModelCall", "beforeToolCall"], "llmEval": { "mode": "async", "prompt": "p" } },
    ], "maxLedgerEntries": 5 })))
    .unwrap();
    assert_eq!(ok.max_ledger_entries, 5);
    assert_eq!(ok.max_retries, 1);
    assert_eq!(ok.scope, Scope::Execution);
    assert!(ok.rules[0].predicate && ok.rules[0].applies_to(Hook::BeforeToolCall));
    assert!(!ok.rules[0].applies_to(Hook::AfterModelCall));
    assert_eq!(ok.rules[1].llm, Some(LlmEval { prompt: "p".into(), model: DEFAULT_MODEL.into(), sync: false }));
    assert_eq!(config_from(Sketch::of(&config_json(&ok))), Ok(ok));
    let refused = [
      (json!({}), "rules must be an array of rules, got null"),
      (json!({ "rules": [[]] }), "rules[0].id must be a non-empty string, got null"),
      (
        json!({ "rules": [{ "id": "a", "appliesTo": [], "predicate": true }] }),
        "predicate must be a function, got true",
      ),
      (
        json!({ "rules": [{ "id": "a", "appliesTo": [], "llmEval": "x" }] }),
        ".mode must be 'sync' or 'async', got null",
      ),
      (
        json!({ "rules": [], "maxRetries": { "$sketch": "NaN", "type": "number" } }),
        "maxRetries must be a whole number of at least 0, got NaN",
      ),
      (json!({ "rules": [{ "appliesTo": [] }] }), "rules[0].id"),
      (json!({ "rules": [{ "id": "a", "appliesTo": ["onStore"] }] }), "rules[0].appliesTo"),
      (json!({ "rules": [{ "id": "a", "appliesTo": [], "predicate": "x" }] }), "got \"x\""),
      (json!({ "rules": [{ "id": "a", "appliesTo": [], "llmEval": { "mode": "later", "prompt": "p" } }] }), ".mode"),
      (json!({ "rules": [], "maxLedgerEntries": -1 }), "maxLedgerEntries"),
      (json!({ "rules": [], "maxRetries": 1.5 }), "maxRetries"),
      (json!({ "rules": [], "scope": "session" }), "scope"),
    ];
    for (config, names) in refused {
      let error = config_from(Sketch::of(&config)).unwrap_err();
      assert_eq!(error.code, CODE);
      assert!(error.message.contains(names), "{} should name {names}", error.message);
    }
  }
}
