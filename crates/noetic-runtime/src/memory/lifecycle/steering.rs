//! Steering (§14): beforeToolCall before each tool call of the tool loop, afterModelCall after each model
//! response. Layers vote in slot order; the first deny ends the vote at once (later layers are not asked), and
//! otherwise the most restrictive decision wins. A hook that fails casts no vote (fail-open), except that a
//! NoeticConfigError propagates.

use std::sync::Arc;

use serde_json::Value;

use crate::host::{HookArgs, HookBatch, HostError, SteeringAction, SteeringDecision, WriteRule};
use crate::items::Item;
use crate::js_sketch::Sketch;
use crate::memory::HookKind;
use crate::memory::native::{NativeLayer, VoteError};
use crate::memory::registry::{Layer, LayerImpl};

use super::{ExecScope, MemoryEnv, failure, host_call, store};

/// The layers' decision on a function call about to run. `arguments` (its JSON text) is parsed only when some
/// layer will see it; arguments that do not parse are `{}`.
pub async fn before_tool_call(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  tool_name: &str,
  arguments: &str,
) -> Result<SteeringDecision, HostError> {
  vote(env, scope, HookKind::BeforeToolCall, &[], || {
    let tool_args = crate::js_text::from_js_json(arguments).unwrap_or_else(|_| Value::Object(Default::default()));
    (HookArgs::BeforeToolCall { tool_name: tool_name.to_owned(), tool_args }, None)
  })
  .await
}

/// The decision on a model response: `deny` fails the step, `guide` asks again with guidance. The response's items
/// are written out only when some layer will see them.
pub async fn after_model_call(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  response: &[Arc<Item>],
  usage: impl FnOnce() -> Value,
) -> Result<SteeringDecision, HostError> {
  vote(env, scope, HookKind::AfterModelCall, response, || {
    let items = response.iter().map(|item| item.to_json_text()).collect();
    (HookArgs::AfterModelCall { usage: usage() }, Some(items))
  })
  .await
}

/// `inputs`: the hook's arguments and the batch's items, made only when a layer takes part. Layers vote in slot
/// order: built-ins natively, each run of JS layers between them in one batch. `response`: the model's items, for
/// built-ins' afterModelCall.
async fn vote(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  hook: HookKind,
  response: &[Arc<Item>],
  inputs: impl FnOnce() -> (HookArgs, Option<Vec<String>>),
) -> Result<SteeringDecision, HostError> {
  let layers = env.participants(scope, hook);
  // No layer steers: allow without a crossing.
  if layers.is_empty() {
    return Ok(SteeringDecision::ALLOW);
  }
  let (args, items) = inputs();
  let mut decisions = Vec::new();
  let mut next = 0;
  while next < layers.len() {
    if let LayerImpl::Native(native) = &layers[next].imp {
      let layer = layers[next];
      next += 1;
      if let Some(mut decision) = native_vote(env, scope, layer, native, &args, response).await? {
        decision.by = vec![layer.id().to_owned()];
        if decision.action == SteeringAction::Deny {
          return Ok(decision);
        }
        decisions.push(decision);
      }
      continue;
    }
    let group: Vec<&Arc<Layer>> =
      layers[next..].iter().copied().take_while(|layer| matches!(layer.imp, LayerImpl::Host(_))).collect();
    next += group.len();
    if let Some(deny) = host_votes(env, scope, hook, group, &args, items.clone(), &mut decisions).await? {
      return Ok(deny);
    }
  }
  Ok(most_restrictive(&decisions))
}

/// A built-in layer's vote, its state change applied. One that fails casts none (a diagnostic), as a failing JS
/// hook; a config error (an LLM rule with no model to ask) ends the call, as a NoeticConfigError thrown in JS.
async fn native_vote(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  layer: &Layer,
  native: &Arc<dyn NativeLayer>,
  args: &HookArgs,
  response: &[Arc<Item>],
) -> Result<Option<SteeringDecision>, HostError> {
  let exec = scope.exec_id();
  let state = env.state_json(exec, layer.id());
  let ctx = scope.hook_ctx();
  let (hook, vote) = match args {
    HookArgs::BeforeToolCall { tool_name, tool_args } => {
      (HookKind::BeforeToolCall, native.before_tool_call(state.as_ref(), tool_name, tool_args, ctx))
    }
    HookArgs::AfterModelCall { usage } => {
      (HookKind::AfterModelCall, native.after_model_call(state.as_ref(), response, usage, ctx))
    }
    _ => return Ok(None),
  };
  // A config error is carried through run_native's timeout and trace as a value, then raised.
  let vote = async {
    match vote.await {
      Ok(vote) => Ok(Ok(vote)),
      Err(VoteError::Config(error)) => Ok(Err(error)),
      Err(VoteError::Failed(message)) => Err(message),
    }
  };
  match env.run_native(scope.trace_target(), layer, hook, vote).await {
    Ok(Ok(vote)) => {
      store::apply_native(env, exec, layer.id(), vote.write);
      Ok(vote.decision)
    }
    Ok(Err(error)) => Err(HostError::Config(error)),
    Err(message) => {
      env.diagnose(layer.id(), hook, &message);
      Ok(None)
    }
  }
}

/// One batch for a run of JS layers: the deny that ended it, if any; their other decisions join `decisions`.
async fn host_votes(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  hook: HookKind,
  group: Vec<&Arc<Layer>>,
  args: &HookArgs,
  items: Option<Vec<String>>,
  decisions: &mut Vec<SteeringDecision>,
) -> Result<Option<SteeringDecision>, HostError> {
  let exec = scope.exec_id();
  let mut batch = HookBatch::new(hook, scope.context.to_owned(), scope.info.clone());
  let mut called = Vec::new();
  for layer in group {
    if let Some(call) = host_call(layer, hook, WriteRule::IfDefined, args.clone()) {
      batch.calls.push(call);
      called.push(layer);
    }
  }
  batch.items = items;
  // The host stops at the first deny: the replies end there.
  let replies = env.run_batch_as_answered(batch).await;
  for (layer, reply) in called.into_iter().zip(replies) {
    if let Some(message) = failure(&reply.status) {
      if reply.rethrow {
        return Err(HostError::Thrown { message, error: reply.error });
      }
      env.diagnose(layer.id(), hook, &message);
      continue;
    }
    // As upstream, the hook's state is written before its decision is read: a decision of the wrong shape loses
    // the vote, not the state.
    env.apply_host_write(exec, layer.id(), reply.state);
    let mut decision = match decision_of(reply.decision.as_ref()) {
      Ok(decision) => decision,
      Err(message) => {
        env.diagnose(layer.id(), hook, &message);
        continue;
      }
    };
    decision.by = vec![layer.id().to_owned()];
    if decision.action == SteeringAction::Deny {
      return Ok(Some(decision));
    }
    decisions.push(decision);
  }
  Ok(None)
}

/// A JS hook's `decision`, sketched: `{ action: 'allow' | 'deny' | 'guide', guidance? }`, whose guidance counts only
/// as a string. Anything else fails the hook (no vote) with these words.
fn decision_of(sketched: Option<&Value>) -> Result<SteeringDecision, String> {
  let decision = sketched.map_or_else(Sketch::undefined, Sketch::of);
  let action = match decision.field("action").as_str() {
    Some("allow") => SteeringAction::Allow,
    Some("deny") => SteeringAction::Deny,
    Some("guide") => SteeringAction::Guide,
    _ => {
      // As JSON.stringify shows it, or as JS describes what JSON cannot show.
      let shown = decision.plain().map_or_else(|| decision.described(), Value::to_string);
      return Err(format!(
        "a steering hook must return {{ decision: {{ action: 'allow' | 'deny' | 'guide', guidance? }} }}; got decision {shown}"
      ));
    }
  };
  Ok(SteeringDecision::new(action, decision.field("guidance").as_str().map(str::to_owned)))
}

/// The first deny; else a guide carrying every guide's non-empty guidance, one per line (none when no guide has
/// any); else allow (§14.2).
pub fn most_restrictive(decisions: &[SteeringDecision]) -> SteeringDecision {
  if let Some(deny) = decisions.iter().find(|d| d.action == SteeringAction::Deny) {
    return deny.clone();
  }
  let guides: Vec<&SteeringDecision> = decisions.iter().filter(|d| d.action == SteeringAction::Guide).collect();
  if guides.is_empty() {
    return SteeringDecision::ALLOW;
  }
  let texts: Vec<&str> = guides.iter().filter_map(|d| d.guidance.as_deref()).filter(|text| !text.is_empty()).collect();
  let mut decision = SteeringDecision::new(SteeringAction::Guide, (!texts.is_empty()).then(|| texts.join("\n")));
  decision.by = guides.iter().flat_map(|d| d.by.iter().cloned()).collect();
  decision
}

#[cfg(test)]
mod tests {
  use super::*;

  fn decision(action: SteeringAction, guidance: Option<&str>) -> SteeringDecision {
    SteeringDecision::new(action, guidance.map(str::to_owned))
  }

  #[test]
  fn a_sketched_decision_is_read_or_named() {
    use serde_json::json;
    let read = |value: Value| decision_of(Some(&value));
    assert_eq!(read(json!({ "action": "guide", "guidance": "go" })), Ok(decision(SteeringAction::Guide, Some("go"))));
    assert_eq!(read(json!({ "action": "deny", "guidance": 7 })), Ok(decision(SteeringAction::Deny, None)));
    let refused = read(json!({ "action": "maybe" })).unwrap_err();
    assert!(refused.ends_with(r#"got decision {"action":"maybe"}"#), "{refused}");
    assert!(decision_of(None).unwrap_err().ends_with("got decision undefined"));
    assert!(read(json!({ "$sketch": "a function", "type": "function" })).unwrap_err().ends_with("a function"));
  }

  #[test]
  fn guides_join_their_guidance_and_allows_lose_theirs() {
    use SteeringAction::*;
    let votes =
      [decision(Guide, Some("a")), decision(Allow, Some("z")), decision(Guide, None), decision(Guide, Some("b"))];
    assert_eq!(most_restrictive(&votes), decision(Guide, Some("a\nb")));
    assert_eq!(most_restrictive(&[decision(Guide, Some("")), decision(Guide, None)]), decision(Guide, None));
    assert_eq!(most_restrictive(&[decision(Allow, Some("x"))]), SteeringDecision::ALLOW);
    assert_eq!(most_restrictive(&[]), SteeringDecision::ALLOW);
    let deny = decision(Deny, Some("no"));
    assert_eq!(most_restrictive(&[decision(Guide, Some("a")), deny.clone(), decision(Deny, None)]), deny);
  }
}
