//! `steering(config)` as a `NativeLayer`: the rules are walked in Rust; the user's predicates run in the host,
//! one crossing for each run of rules up to the next LLM rule; LLM rules ask the harness's model.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::durable_task_state::now_ms;
use super::steering::{self as st, Hook, LlmEval, Pending, Rule, SteeringConfig};
use crate::error::ConfigError;
use crate::host::{ExecInfo, SteeringAction, SteeringDecision};
use crate::items::Item;
use crate::memory::STATE_KEY;
use crate::memory::lifecycle::most_restrictive;
use crate::memory::native::{
  AsideModel, HookCtx, HostCallback, NativeLayer, NativeRecall, NativeVote, NativeWrite, VoteError,
};
use crate::memory::registry::{Layer, LayerImpl};
use crate::storage::ScopedStorage;

/// Verdicts of async rules that came back after their hook returned, by execution, until its next recall.
type Late = Arc<Mutex<HashMap<String, Vec<Pending>>>>;

pub struct Steering {
  config: SteeringConfig,
  /// The rules' predicates, evaluated in the host: given `{hook, rules, params, state}` (`rules`: indices into the
  /// config's rules), it answers a decision or `null` for each, stopping after a deny.
  predicates: Option<Arc<dyn HostCallback>>,
  late: Late,
}

/// `steering(config)` as a registered layer.
pub fn steering_layer(config: SteeringConfig, predicates: Option<Arc<dyn HostCallback>>) -> Layer {
  Layer {
    spec: st::layer_spec(&config),
    imp: LayerImpl::Native(Arc::new(Steering { config, predicates, late: Arc::default() })),
    provides: Vec::new(),
    handle: None,
  }
}

pub(crate) fn missing_model(rule: &str) -> ConfigError {
  ConfigError::new(
    "MISSING_CALL_MODEL",
    format!("LLM-evaluated steering rule \"{rule}\" requires a callModel but none is available."),
    "Pass `llm: { provider: \"openrouter\", apiKey: \"...\" }` to AgentHarness or set OPENROUTER_API_KEY.",
  )
}

/// A sync rule's verdict: asked up to `retries + 1` times while the answer is not a verdict, then allow.
async fn ask_verdict(
  model: &dyn AsideModel,
  context: &str,
  eval: &LlmEval,
  prompt: &str,
  retries: u32,
) -> Result<SteeringDecision, String> {
  for _ in 0..=retries {
    if let Some(verdict) = st::parse_verdict(&model.ask(context, &eval.model, None, prompt).await?) {
      return Ok(verdict);
    }
  }
  Ok(SteeringDecision::ALLOW)
}

/// What one hook decides about.
struct Subject<'a> {
  hook: Hook,
  /// The predicates' params besides `ctx` and `state`: `{toolName, toolArgs}` or `{response}`.
  params: &'a (dyn Fn() -> Value + Sync),
  /// The context line of an LLM rule's question.
  context: String,
}

impl Steering {
  /// The rules' decision on `subject` (spec §20.4): in order, a predicate's decision, else an LLM verdict; the
  /// first deny ends it.
  async fn evaluate(
    &self,
    subject: &Subject<'_>,
    state: Option<&Value>,
    ctx: HookCtx<'_>,
  ) -> Result<SteeringDecision, VoteError> {
    let rules: Vec<(usize, &Rule)> =
      self.config.rules.iter().enumerate().filter(|(_, rule)| rule.applies_to(subject.hook)).collect();
    let mut verdicts: Vec<Option<SteeringDecision>> = vec![None; rules.len()];
    let mut asked_up_to = 0;
    let mut decisions = Vec::new();
    for (at, (_, rule)) in rules.iter().enumerate() {
      if rule.predicate && at >= asked_up_to {
        asked_up_to = self.ask_predicates(subject, &rules, at, &mut verdicts, state, ctx.exec).await?;
      }
      if let Some(decision) = verdicts[at].take() {
        let deny = decision.action == SteeringAction::Deny;
        decisions.push(decision);
        if deny {
          return Ok(most_restrictive(&decisions));
        }
        continue;
      }
      let Some(eval) = &rule.llm else { continue };
      let model = ctx.model.ok_or_else(|| VoteError::Config(missing_model(&rule.id)))?;
      let prompt = st::verdict_prompt(&eval.prompt, &subject.context);
      let context = ctx.exec.execution_id.as_str();
      if eval.sync {
        let decision = ask_verdict(&**model, context, eval, &prompt, self.config.max_retries).await?;
        let deny = decision.action == SteeringAction::Deny;
        decisions.push(decision);
        if deny {
          return Ok(most_restrictive(&decisions));
        }
      } else {
        self.fire(Arc::clone(model), context.to_owned(), rule.id.clone(), eval.clone(), prompt);
      }
    }
    Ok(most_restrictive(&decisions))
  }

  /// Asks the host for the predicates of the rules from `from` up to the next LLM rule (included): one crossing.
  /// Where the next ask must start.
  async fn ask_predicates(
    &self,
    subject: &Subject<'_>,
    rules: &[(usize, &Rule)],
    from: usize,
    verdicts: &mut [Option<SteeringDecision>],
    state: Option<&Value>,
    exec: &ExecInfo,
  ) -> Result<usize, String> {
    let end = rules[from..].iter().position(|(_, rule)| rule.llm.is_some()).map_or(rules.len(), |at| from + at + 1);
    let Some(predicates) = &self.predicates else { return Ok(end) };
    let asked: Vec<usize> = (from..end).filter(|&at| rules[at].1.predicate).collect();
    let hook = match subject.hook {
      Hook::BeforeToolCall => "beforeToolCall",
      Hook::AfterModelCall => "afterModelCall",
    };
    let indices: Vec<usize> = asked.iter().map(|&at| rules[at].0).collect();
    let args = json!({ "hook": hook, "rules": indices, "params": (subject.params)(), "state": state });
    let answers = predicates.call_in(args, exec).await?;
    let answers = answers.as_array().map(Vec::as_slice).unwrap_or_default();
    for (&at, answer) in asked.iter().zip(answers) {
      verdicts[at] = st::predicate_decision(answer);
    }
    Ok(end)
  }

  /// An async rule: asked in the background; a verdict other than allow waits for the execution's next recall.
  /// Failures are dropped: they must not disturb the agent. The execution's entry is made now and goes when it
  /// ends, so a verdict that arrives after that is dropped rather than kept for ever.
  fn fire(&self, model: Arc<dyn AsideModel>, context: String, rule: String, eval: LlmEval, prompt: String) {
    self.late_verdicts().entry(context.clone()).or_default();
    let late = Arc::clone(&self.late);
    let retries = self.config.max_retries;
    tokio::spawn(async move {
      let Ok(decision) = ask_verdict(&*model, &context, &eval, &prompt, retries).await else { return };
      if decision.action != SteeringAction::Allow
        && let Some(pending) = late.lock().unwrap_or_else(PoisonError::into_inner).get_mut(&context)
      {
        pending.push(Pending::of(&rule, &decision));
      }
    });
  }

  fn late_verdicts(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Pending>>> {
    self.late.lock().unwrap_or_else(PoisonError::into_inner)
  }

  /// The vote, with its ledger entry recorded.
  async fn vote(
    &self,
    subject: Subject<'_>,
    state: Option<&Value>,
    ctx: HookCtx<'_>,
    entry: impl FnOnce(f64, &SteeringDecision) -> Value,
  ) -> Result<NativeVote, VoteError> {
    let decision = self.evaluate(&subject, state, ctx).await?;
    let next = st::record(state, entry(now_ms() as f64, &decision), self.config.max_ledger_entries);
    Ok(NativeVote { decision: Some(decision), write: NativeWrite::Set(next) })
  }
}

#[async_trait]
impl NativeLayer for Steering {
  async fn init(&self, storage: &ScopedStorage) -> Result<Option<Value>, String> {
    let saved = storage.get(STATE_KEY).await.map_err(|error| error.message)?;
    Ok(Some(st::init_state(saved)))
  }

  fn execution_ended(&self, exec: &str) {
    self.late_verdicts().remove(exec);
  }

  /// The pending feedback: what the state holds, then what arrived late for this execution. Both are drained.
  async fn recall(&self, state: Option<&Value>, _budget: f64, exec: &ExecInfo) -> Result<Option<NativeRecall>, String> {
    let held = st::pending_in(state);
    let late = self.late_verdicts().get_mut(&exec.execution_id).map(std::mem::take).unwrap_or_default();
    let pending: Vec<Pending> = held.iter().cloned().chain(late).collect();
    let Some(feedback) = st::feedback(&pending) else { return Ok(None) };
    let mut recalled = NativeRecall::from(feedback);
    recalled.state = state.filter(|_| !held.is_empty()).map(st::drained);
    Ok(Some(recalled))
  }

  async fn before_tool_call(
    &self,
    state: Option<&Value>,
    tool_name: &str,
    tool_args: &Value,
    ctx: HookCtx<'_>,
  ) -> Result<NativeVote, VoteError> {
    let params = || json!({ "toolName": tool_name, "toolArgs": tool_args });
    let subject =
      Subject { hook: Hook::BeforeToolCall, params: &params, context: st::tool_context(tool_name, tool_args) };
    self.vote(subject, state, ctx, |now, decision| st::tool_entry(now, tool_name, tool_args, decision)).await
  }

  async fn after_model_call(
    &self,
    state: Option<&Value>,
    response: &[Arc<Item>],
    usage: &Value,
    ctx: HookCtx<'_>,
  ) -> Result<NativeVote, VoteError> {
    let params = || {
      let items: Vec<Value> = response.iter().map(|item| Value::Object(item.fields().into_owned())).collect();
      json!({ "response": { "items": items, "usage": usage } })
    };
    let subject =
      Subject { hook: Hook::AfterModelCall, params: &params, context: st::response_context(response.len()) };
    self.vote(subject, state, ctx, |now, decision| st::model_entry(now, usage, decision)).await
  }

  async fn on_spawn(&self, parent_state: Option<&Value>) -> Result<NativeWrite, String> {
    Ok(NativeWrite::Set(st::spawned(parent_state)))
  }

  async fn on_complete(&self, state: Option<&Value>, outcome: &str) -> Result<NativeWrite, String> {
    let entry = st::outcome_entry(now_ms() as f64, outcome);
    Ok(NativeWrite::Set(st::record(state, entry, self.config.max_ledger_entries)))
  }
}

#[cfg(test)]
mod tests {
  use std::collections::VecDeque;
  use std::time::Duration;

  use super::*;
  use crate::host::TokenCounts;
  use crate::js_sketch::{Sketch, function_sketch};

  /// A model that answers from a list and records the questions.
  #[derive(Default)]
  struct Answers {
    replies: Mutex<VecDeque<Result<String, String>>>,
    asked: Mutex<Vec<(String, String)>>,
  }

  #[async_trait]
  impl AsideModel for Answers {
    async fn ask(
      &self,
      _context: &str,
      model: &str,
      _instructions: Option<&str>,
      prompt: &str,
    ) -> Result<String, String> {
      self.asked.lock().unwrap().push((model.to_owned(), prompt.to_owned()));
      self.replies.lock().unwrap().pop_front().unwrap_or_else(|| Ok("ALLOW".into()))
    }
  }

  fn answers(replies: &[&str]) -> Arc<dyn AsideModel> {
    let replies = replies.iter().map(|r| Ok((*r).to_owned())).collect();
    Arc::new(Answers { replies: Mutex::new(replies), asked: Mutex::default() })
  }

  /// Predicates as the host would evaluate them: a fixed decision per rule index, and a record of each crossing.
  struct Predicates {
    by_rule: HashMap<u64, Value>,
    crossings: Mutex<Vec<Value>>,
  }

  #[async_trait]
  impl HostCallback for Predicates {
    async fn call(&self, args: Value) -> Result<Value, String> {
      self.crossings.lock().unwrap().push(args["rules"].clone());
      let mut answers = Vec::new();
      for index in args["rules"].as_array().unwrap() {
        let answer = self.by_rule.get(&index.as_u64().unwrap()).cloned().unwrap_or(Value::Null);
        let deny = answer["action"] == "deny";
        answers.push(answer);
        if deny {
          break;
        }
      }
      Ok(Value::Array(answers))
    }
  }

  fn exec() -> ExecInfo {
    ExecInfo {
      execution_id: "E1".into(),
      thread_id: "T".into(),
      resource_id: None,
      depth: 0,
      step_number: 1,
      token_usage: TokenCounts::default(),
      cost: 0.0,
      has_model: true,
      trace_id: "E1".into(),
      step_span: None,
    }
  }

  fn layer(config: Value, predicates: Option<Arc<Predicates>>) -> Steering {
    let predicates = predicates.map(|p| p as Arc<dyn HostCallback>);
    Steering { config: st::config_from(Sketch::of(&config)).unwrap(), predicates, late: Arc::default() }
  }

  fn action(vote: &NativeVote) -> (SteeringAction, Option<String>) {
    let decision = vote.decision.clone().unwrap();
    (decision.action, decision.guidance)
  }

  #[tokio::test]
  async fn predicates_of_a_run_of_rules_cross_once_and_a_deny_ends_the_vote() {
    let predicates = Arc::new(Predicates {
      by_rule: HashMap::from([
        (0, json!({ "action": "guide", "guidance": "careful" })),
        (1, json!({ "action": "deny", "guidance": "no rm" })),
      ]),
      crossings: Mutex::default(),
    });
    let config = json!({ "rules": [
      { "id": "a", "appliesTo": ["beforeToolCall"], "predicate": function_sketch() },
      { "id": "b", "appliesTo": ["beforeToolCall"], "predicate": function_sketch() },
      { "id": "c", "appliesTo": ["beforeToolCall"], "llmEval": { "mode": "sync", "prompt": "never asked" } },
    ] });
    let steering = layer(config, Some(Arc::clone(&predicates)));
    let model = answers(&[]);
    let info = exec();
    let ctx = HookCtx { exec: &info, model: Some(&model), files: None };
    let vote = steering.before_tool_call(None, "rm", &json!({ "path": "/" }), ctx).await.unwrap();
    assert_eq!(action(&vote), (SteeringAction::Deny, Some("no rm".into())));
    assert_eq!(*predicates.crossings.lock().unwrap(), vec![json!([0, 1])]);
    let NativeWrite::Set(state) = vote.write else { panic!("the vote is recorded") };
    assert_eq!(state["ledger"][0]["action"], "deny");
    assert_eq!(state["ledger"][0]["toolArgs"], json!({ "path": "/" }));
  }

  #[tokio::test]
  async fn a_sync_rule_asks_again_when_the_answer_is_no_verdict_then_allows() {
    let config = json!({ "rules": [{ "id": "s", "appliesTo": ["afterModelCall"], "llmEval": { "mode": "sync", "prompt": "Judge", "model": "m/x" } }], "maxRetries": 2 });
    let steering = layer(config, None);
    let info = exec();
    let recorder = Arc::new(Answers {
      replies: Mutex::new(["maybe", "GUIDE: shorter please"].iter().map(|r| Ok((*r).to_owned())).collect()),
      asked: Mutex::default(),
    });
    let model: Arc<dyn AsideModel> = Arc::clone(&recorder) as Arc<dyn AsideModel>;
    let ctx = HookCtx { exec: &info, model: Some(&model), files: None };
    let usage = json!({ "inputTokens": 3, "outputTokens": 2 });
    let vote = steering.after_model_call(None, &[], &usage, ctx).await.unwrap();
    assert_eq!(action(&vote), (SteeringAction::Guide, Some("shorter please".into())));
    let asked = recorder.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].0, "m/x");
    assert!(asked[0].1.starts_with("Judge\n\nContext: Response items: 0\n\n"));

    // Unparseable every time: allow once the attempts run out.
    let model = answers(&["?", "?", "?", "DENY"]);
    let ctx = HookCtx { exec: &info, model: Some(&model), files: None };
    let vote = steering.after_model_call(None, &[], &usage, ctx).await.unwrap();
    assert_eq!(action(&vote), (SteeringAction::Allow, None));
  }

  #[tokio::test]
  async fn an_llm_rule_without_a_model_is_a_config_error_and_a_failed_ask_casts_no_vote() {
    let config = json!({ "rules": [{ "id": "s", "appliesTo": ["beforeToolCall"], "llmEval": { "mode": "async", "prompt": "p" } }] });
    let steering = layer(config, None);
    let info = exec();
    let ctx = HookCtx { exec: &info, model: None, files: None };
    match steering.before_tool_call(None, "t", &json!({}), ctx).await {
      Err(VoteError::Config(error)) => assert_eq!(error.code, "MISSING_CALL_MODEL"),
      other => panic!("expected MISSING_CALL_MODEL, got {other:?}"),
    }
    let config = json!({ "rules": [{ "id": "s", "appliesTo": ["beforeToolCall"], "llmEval": { "mode": "sync", "prompt": "p" } }] });
    let steering = layer(config, None);
    let failing: Arc<dyn AsideModel> =
      Arc::new(Answers { replies: Mutex::new([Err("rate limited".to_owned())].into()), asked: Mutex::default() });
    let ctx = HookCtx { exec: &info, model: Some(&failing), files: None };
    assert_eq!(
      steering.before_tool_call(None, "t", &json!({}), ctx).await,
      Err(VoteError::Failed("rate limited".into()))
    );
  }

  #[tokio::test]
  async fn an_async_verdict_is_heard_at_the_executions_next_recall_once() {
    let config = json!({ "rules": [{ "id": "slow", "appliesTo": ["beforeToolCall"], "llmEval": { "mode": "async", "prompt": "p" } }] });
    let steering = layer(config, None);
    let info = exec();
    let model = answers(&["DENY"]);
    let ctx = HookCtx { exec: &info, model: Some(&model), files: None };
    let vote = steering.before_tool_call(None, "t", &json!({}), ctx).await.unwrap();
    // The async rule contributes nothing now.
    assert_eq!(action(&vote), (SteeringAction::Allow, None));
    let mut recalled = None;
    for _ in 0..100 {
      recalled = steering.recall(None, 500.0, &info).await.unwrap();
      if recalled.is_some() {
        break;
      }
      tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let recalled = recalled.expect("the late verdict is recalled");
    assert_eq!(recalled.text, "<steering_feedback>\n[slow] Rule slow: deny\n</steering_feedback>");
    assert_eq!(steering.recall(None, 500.0, &info).await.unwrap(), None);
  }

  #[tokio::test]
  async fn async_verdicts_are_kept_only_while_their_execution_lives() {
    let config = json!({ "rules": [{ "id": "slow", "appliesTo": ["beforeToolCall"], "llmEval": { "mode": "async", "prompt": "p" } }] });
    let steering = layer(config, None);
    let info = exec();
    let model = answers(&["DENY", "DENY", "DENY"]);
    let ctx = HookCtx { exec: &info, model: Some(&model), files: None };
    let recall_soon = || async {
      for _ in 0..100 {
        if let Some(recalled) = steering.recall(None, 500.0, &info).await.unwrap() {
          return Some(recalled);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
      }
      None
    };
    // A verdict that arrives after a recall drained the last one is heard at the next recall.
    steering.before_tool_call(None, "t", &json!({}), ctx).await.unwrap();
    assert!(recall_soon().await.is_some());
    steering.before_tool_call(None, "t", &json!({}), ctx).await.unwrap();
    assert!(recall_soon().await.is_some(), "the second verdict is heard too");
    // Once the execution has ended, its entry is gone, and a verdict still on its way is dropped on arrival.
    steering.before_tool_call(None, "t", &json!({}), ctx).await.unwrap();
    steering.execution_ended(&info.execution_id);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(steering.late_verdicts().is_empty(), "nothing is kept for an ended execution");
    assert_eq!(steering.recall(None, 500.0, &info).await.unwrap(), None);
  }

  #[tokio::test]
  async fn pending_feedback_in_the_state_is_drained_by_recall() {
    let steering = layer(json!({ "rules": [] }), None);
    let state = json!({ "ledger": [{ "kind": "custom" }], "pendingAsync": [{ "ruleId": "r", "guidance": "g" }] });
    let recalled = steering.recall(Some(&state), 500.0, &exec()).await.unwrap().unwrap();
    assert_eq!(recalled.text, "<steering_feedback>\n[r] g\n</steering_feedback>");
    assert_eq!(recalled.state, Some(json!({ "ledger": [{ "kind": "custom" }], "pendingAsync": [] })));
  }
}
