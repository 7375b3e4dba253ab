//! The steps of durableTaskState's, planMemory's and steering's hooks and functions called from JS (see
//! [`super::steps`]), and their faces' descriptions.

use serde_json::{Value, json};

use super::steps::{
  self, HookError, Params, ask, asks, calls, cloned_parent, done, init_from_storage, merge, no_hook, recalled, returns,
};
use crate::host::SteeringDecision;
use crate::items::extract_assistant_text;
use crate::js_sketch::Sketch;
use crate::memory::builtin::durable_task_state as dts;
use crate::memory::builtin::plan_memory::{self as plan, Ask, FnStep};
use crate::memory::builtin::steering as st;
use crate::memory::builtin::steering_layer::missing_model;
use crate::memory::lifecycle::most_restrictive;

pub(super) fn durable_task_state_face() -> Value {
  json!({
    "hooks": {
      "init": init_from_storage(false),
      "recall": calls("recall", &[("state", "state"), ("budget", "budget")]),
      "store": calls("store", &[("state", "state"), ("depth", "ctx?.depth")]),
      "onSpawn": returns(json!({ "childState": "$clone:parentState", "items": [] })),
      "onReturn": calls("onReturn", &[("parent", "parentState"), ("child", "childState")]),
      "onComplete": calls("onComplete", &[("state", "state"), ("outcome", "outcome")]),
    },
  })
}

pub(super) fn durable_task_state(hook: &str, params: Params<'_>) -> Result<Value, HookError> {
  let state = params.present("state");
  Ok(match hook {
    "initState" => steps::state(dts::init_state(params.present("saved").cloned())),
    "recall" => recalled(state.and_then(|state| dts::recall(state, params.f64_or("budget", 0.0)))),
    "store" => {
      let depth = params.get("depth").as_u64().unwrap_or(0) as u32;
      steps::state(dts::store(state, dts::now_ms(), depth)?)
    }
    "onReturn" => {
      let parent = dts::on_return(params.present("parent"), params.get("child"))?;
      done(json!({ "parentState": "$0" }), vec![parent])
    }
    "onComplete" => steps::state_or_undefined(match state {
      Some(state) => dts::on_complete(state, params.str("outcome"), dts::now_ms())?,
      None => None,
    }),
    _ => return Err(no_hook("durable-task-state", hook)),
  })
}

pub(super) fn plan_face() -> Value {
  let inputs = [
    json!({ "object": { "goal": { "optional": "string" } } }),
    json!({ "object": { "content": "string" } }),
    json!("unknown"),
    json!({ "object": { "action": { "enum": ["execute", "cancel"] } } }),
  ];
  let mut provides = json!({ "status": { "kind": "data", "params": { "state": "state" }, "call": "status" } });
  for ((name, description, _), input) in plan::functions().into_iter().zip(inputs) {
    let mut function = json!({ "kind": "function", "description": description, "input": input, "output": "string" });
    merge(&mut function, calls("call", &[("args", "args"), ("state", "state")]));
    function["with"] = json!({ "name": name });
    provides[name] = function;
  }
  json!({
    "provides": provides,
    "hooks": {
      "init": init_from_storage(false),
      "recall": calls("recall", &[("state", "state"), ("budget", "budget:num")]),
      "beforeToolCall": calls("beforeToolCall", &[("state", "state"), ("toolName", "toolName:str")]),
      "onSpawn": cloned_parent(),
      "onComplete": calls("onComplete", &[("state", "state"), ("outcome", "outcome:str")]),
    },
  })
}

/// planMemory. A function that needs a host callback awaits it (`onExit` on the very state it was given) and runs
/// again with `{answered: true, answer}`; one that leaves the state as it was hands back that very object.
pub(super) fn plan(hook: &str, params: Params<'_>) -> Result<Value, HookError> {
  let config = plan::config_from(Sketch::of(params.config())).map_err(|e| e.message)?;
  let state = params.get("state");
  Ok(match hook {
    "initState" => steps::state(plan::init_state(Some(params.get("saved").clone()))),
    "recall" => recalled(plan::recall(state, params.number("budget"), &config)),
    "beforeToolCall" => {
      let decision = match plan::denial(state, params.str("toolName"), &config) {
        None => json!({ "action": "allow" }),
        Some(guidance) => json!({ "action": "deny", "guidance": guidance }),
      };
      done(json!({ "decision": "$0", "state": "$param:state" }), vec![decision])
    }
    "onComplete" => steps::state_or_undefined(plan::on_complete(state, params.str("outcome"), dts::now_ms() as f64)),
    "status" => steps::value(plan::status(state)),
    "call" => {
      let answer = params.bool("answered").then(|| params.get("answer"));
      let answered = json!({ "answered": true });
      match plan::call(params.str("name"), params.get("args"), state, &config, answer)? {
        FnStep::Done { result, state: Some(next) } => {
          done(json!({ "result": "$0", "state": "$1" }), vec![json!(result), next])
        }
        FnStep::Done { result, state: None } => {
          done(json!({ "result": "$0", "state": "$param:state" }), vec![json!(result)])
        }
        FnStep::Ask(Ask::EnterSession) => ask("onEnterSession", Value::Null, vec![], "answer", "call", answered),
        FnStep::Ask(Ask::Exit) => ask("onExit", json!("$param:state"), vec![], "answer", "call", answered),
      }
    }
    _ => return Err(no_hook("plan", hook)),
  })
}

/// steering's `beforeToolCall` / `afterModelCall`: the rules are walked by the JS face (`evaluate`: the user's
/// rule objects as they are at the call, with its predicates and `ctx.callModel`), then the verdict is recorded.
fn voted(hook: &str, reads: &[(&str, &str)], passed: &[&str], record: &str) -> Value {
  let passed: serde_json::Map<String, Value> =
    passed.iter().map(|name| ((*name).to_owned(), json!(format!("$param:{name}")))).collect();
  asks(reads, "evaluate", json!({ "hook": hook, "params": passed }), "decision", record)
}

pub(super) fn steering_face() -> Value {
  let state = ("state", "state");
  json!({
    "hooks": {
      "init": init_from_storage(false),
      "recall": calls("feedback", &[("pendingAsync", "state?.pendingAsync")]),
      "store": returns(json!("$undefined")),
      "beforeToolCall": voted("beforeToolCall", &[state, ("toolName", "toolName"), ("toolArgs", "toolArgs")], &["toolName", "toolArgs", "ctx", "state"], "recordTool"),
      "afterModelCall": voted("afterModelCall", &[state, ("usage", "response.usage")], &["response", "ctx", "state"], "recordModel"),
      "onSpawn": calls("spawned", &[("state", "parentState")]),
      "onComplete": calls("recordOutcome", &[state, ("outcome", "outcome:str")]),
    },
  })
}

/// steering. A recorded verdict changes the state in place, as upstream's: its ledger is replaced by the recorded
/// one, and recall empties the state's own pending list once it has rendered it.
pub(super) fn steering(hook: &str, params: Params<'_>) -> Result<Value, HookError> {
  let state = params.present("state");
  let decision =
    || serde_json::from_value::<SteeringDecision>(params.get("decision").clone()).map_err(|e| e.to_string());
  let max =
    || st::config_from(Sketch::of(params.config())).map(|config| config.max_ledger_entries).map_err(|e| e.message);
  let max_retries =
    || st::config_from(Sketch::of(params.config())).map(|config| u64::from(config.max_retries)).map_err(|e| e.message);
  let now = || dts::now_ms() as f64;
  let recorded = |entry: Value, shape: Value, mut values: Vec<Value>| -> Result<Value, HookError> {
    let next = st::record(state, entry, max()?);
    values.push(next.get("ledger").cloned().unwrap_or(Value::Null));
    Ok(done(shape, values))
  };
  let voted = json!({ "decision": "$0", "state": "$into:state:ledger:1" });
  Ok(match hook {
    "initState" => steps::state(st::init_state(Some(params.get("saved").clone()))),
    "feedback" => match st::feedback(&st::pending_in(Some(params.values()))) {
      Some((text, tokens)) => done(
        json!({ "items": ["$message:0"], "tokenCount": "$1", "state": "$emptied:state:pendingAsync" }),
        vec![json!(text), json!(tokens)],
      ),
      None => done(Value::Null, vec![]),
    },
    "recordTool" => {
      let entry = st::tool_entry(now(), params.str("toolName"), params.get("toolArgs"), &decision()?);
      recorded(entry, voted, vec![params.get("decision").clone()])?
    }
    "recordModel" => {
      let entry = st::model_entry(now(), params.get("usage"), &decision()?);
      recorded(entry, voted, vec![params.get("decision").clone()])?
    }
    "recordOutcome" => {
      recorded(st::outcome_entry(now(), params.str("outcome")), json!({ "state": "$into:state:ledger:0" }), vec![])?
    }
    "spawned" => done(json!({ "childState": "$0" }), vec![st::spawned(state)]),
    // The pure parts of the JS face's walk of the rules.
    "prompt" => {
      let context = match params.values().get("toolName").and_then(Value::as_str) {
        Some(name) => st::tool_context(name, params.get("toolArgs")),
        None => st::response_context(params.get("items").as_u64().unwrap_or(0) as usize),
      };
      let model = params.get("model").as_str().unwrap_or(st::DEFAULT_MODEL);
      json!({ "prompt": st::verdict_prompt(params.str("prompt"), &context), "model": model })
    }
    // A reply that is no verdict is asked again, `maxRetries` times, then the rule allows.
    "verdictOf" => match st::parse_verdict(&extract_assistant_text(&params.maps("items"))) {
      Some(verdict) => json!(verdict),
      None if params.get("attempt").as_u64().unwrap_or(0) >= max_retries()? => json!({ "action": "allow" }),
      None => Value::Null,
    },
    "mostRestrictive" => {
      let decisions: Vec<SteeringDecision> =
        serde_json::from_value(params.get("decisions").clone()).map_err(|e| e.to_string())?;
      json!(most_restrictive(&decisions))
    }
    "predicateDecision" => json!(st::predicate_decision(params.get("answer"))),
    "pending" => {
      let pending = st::Pending::of(params.str("ruleId"), &decision()?);
      json!({ "ruleId": pending.rule_id, "guidance": pending.guidance })
    }
    "missingCallModel" => return Err(HookError::Config(missing_model(params.str("ruleId")))),
    _ => return Err(no_hook("steering", hook)),
  })
}

#[cfg(test)]
mod tests {
  use super::*;

  use crate::memory::builtin::faces::steps::run_step as step;

  #[test]
  fn durable_task_state_completes_only_a_state_it_has() {
    assert_eq!(step("onComplete", json!({ "outcome": "success" }), durable_task_state)["shape"], "$undefined");
    let stored = step("store", json!({ "state": null, "depth": 2 }), durable_task_state);
    assert_eq!(stored["shape"], json!({ "state": "$0" }));
    let returned =
      step("onReturn", json!({ "parent": dts::default_state(), "child": dts::default_state() }), durable_task_state);
    assert_eq!(returned["shape"], json!({ "parentState": "$0" }));
    assert_eq!(
      durable_task_state_face()["hooks"]["store"]["params"],
      json!({ "state": "state", "depth": "ctx?.depth" })
    );
  }

  #[test]
  fn plan_functions_await_their_callbacks_and_refusals_keep_the_state_given() {
    let config = json!({ "onExit": { "$sketch": "a function", "type": "function" } });
    let planning = json!({ "phase": "planning", "prd": "# x", "planTree": { "kind": "llm", "id": "a", "instructions": "go" }, "executionLog": [], "version": 1 });
    let asked = step(
      "call",
      json!({ "name": "exitPlanMode", "args": { "action": "execute" }, "state": planning, "config": config }),
      plan,
    );
    assert_eq!(
      (asked["ask"].clone(), asked["arg"].clone(), asked["with"].clone()),
      (json!("onExit"), json!("$param:state"), json!({ "answered": true }))
    );
    let params = json!({ "name": "updatePrd", "args": { "content": "x" }, "state": { "phase": "idle" }, "config": {} });
    let refused = step("call", params, plan);
    assert_eq!(refused["shape"], json!({ "result": "$0", "state": "$param:state" }));
    let face = plan_face();
    let keys: Vec<&String> = face["provides"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["status", "enterPlanMode", "updatePrd", "setPlanTree", "exitPlanMode"]);
    assert_eq!(face["provides"]["updatePrd"]["with"], json!({ "name": "updatePrd" }));
    let denied = step("beforeToolCall", json!({ "state": planning, "toolName": "bash", "config": {} }), plan);
    assert_eq!(
      (denied["shape"]["state"].clone(), denied["values"][0]["action"].clone()),
      (json!("$param:state"), json!("deny"))
    );
  }

  #[test]
  fn steering_records_in_place_and_drains_what_it_rendered() {
    let config = json!({ "rules": [], "maxLedgerEntries": 1, "maxRetries": 0, "scope": "execution" });
    let decision = json!({ "action": "allow" });
    let params =
      json!({ "state": { "ledger": [{ "old": 1 }] }, "toolName": "t", "decision": decision, "config": config });
    let recorded = step("recordTool", params, steering);
    assert_eq!(recorded["shape"], json!({ "decision": "$0", "state": "$into:state:ledger:1" }));
    assert_eq!((recorded["values"][0].clone(), recorded["values"][1].as_array().map(Vec::len)), (decision, Some(1)));
    let pending = json!({ "pendingAsync": [{ "ruleId": "r", "guidance": "slow down" }] });
    let fed = step("feedback", pending, steering);
    assert_eq!(fed["shape"]["state"], "$emptied:state:pendingAsync");
    assert_eq!(step("feedback", json!({}), steering)["shape"], Value::Null);
    let missing = steering("missingCallModel", Params::with_config(&json!({ "ruleId": "r" })));
    assert!(matches!(missing, Err(HookError::Config(error)) if error.code == "MISSING_CALL_MODEL"));
    let face = steering_face();
    assert_eq!(face["hooks"]["beforeToolCall"]["arg"]["params"]["ctx"], "$param:ctx");
  }
}
