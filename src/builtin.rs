//! The built-in layers' JS faces: their configs checked as upstream checks them at construction, and their hooks
//! for JS code that calls `layer.hooks.x(...)` directly (in a harness the runtime calls them natively).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{Value, json};

use noetic_runtime::host::SteeringDecision;
use noetic_runtime::items::Pairing;
use noetic_runtime::items::extract_assistant_text;
use noetic_runtime::js_sketch::Sketch;
use noetic_runtime::memory::builtin::durable_task_state as dts;
use noetic_runtime::memory::builtin::faces;
use noetic_runtime::memory::builtin::file_reference as fr;
use noetic_runtime::memory::builtin::history_window::{self as hw, Described, Role};
use noetic_runtime::memory::builtin::observational_memory::{self as om, ObservationalState};
use noetic_runtime::memory::builtin::plan_memory::{self as plan, Ask, FnStep};
use noetic_runtime::memory::builtin::static_content as sc;
use noetic_runtime::memory::builtin::steering as st;
use noetic_runtime::memory::builtin::temporal_memory::{self as tm, TemporalState};
use noetic_runtime::memory::builtin::working_memory as wm;
use noetic_runtime::memory::lifecycle::most_restrictive;

use crate::protocol::{config_json, number, to_napi};

/// A built-in layer's factory call: its config, sketched by JS, checked, and answered as `{settings, layer}` (the
/// settings JS holds, the metadata of upstream's layer object). A bad config throws the NoeticConfigError
/// upstream's factory throws. `cwd` is the working directory fileReference takes a relative `baseDir` from.
#[napi(catch_unwind, skip_typescript)]
pub fn builtin_layer(kind: String, config: Value, cwd: Option<String>) -> Result<Value> {
  match faces::builtin_layer(&kind, Sketch::of(&config), cwd.as_deref().unwrap_or("")) {
    Some(answer) => answer.map_err(|e| to_napi(config_json(&e))),
    None => Err(Error::new(Status::InvalidArg, format!("no built-in layer '{kind}'"))),
  }
}

/// After a built-in hook's params failed to convert: the NoeticConfigError naming the value that is not JSON
/// (`params` sketched with every level and instance), or nothing when none is found.
#[napi(catch_unwind, skip_typescript)]
pub fn check_hook_params(kind: String, hook: String, params: Value) -> Result<()> {
  match faces::hook_params_error(&kind, &hook, Sketch::of(&params)) {
    Some(error) => Err(to_napi(config_json(&error))),
    None => Ok(()),
  }
}

fn maps(items: &Value) -> Vec<&serde_json::Map<String, Value>> {
  items.as_array().into_iter().flatten().filter_map(Value::as_object).collect()
}

/// A built-in layer's pure hook, for JS code that calls `layer.hooks.x(...)` directly. `params` carries the
/// state, the config and whatever the hook reads; the result is what the hook returns, minus JS-only wrapping.
/// `schema` is workingMemory's zod check, called synchronously: `null` when a value passes, else zod's message.
/// An observationalMemory hook that must distil answers `{distill: buffer}`; JS then awaits its observer and
/// calls `applyDistilled`.
#[napi(catch_unwind, skip_typescript)]
pub fn builtin_hook(
  kind: String,
  hook: String,
  params: Value,
  schema: Option<Function<Value, Value>>,
) -> Result<Value> {
  let fail = |message: String| Error::new(Status::GenericFailure, message);
  let state = params.get("state").cloned().unwrap_or(Value::Null);
  let config = params.get("config").cloned().unwrap_or(Value::Null);
  let items = params.get("items").cloned().unwrap_or(Value::Null);
  let check = |value: &Value| -> std::result::Result<(), String> {
    match schema.as_ref().map(|schema| schema.call(value.clone())) {
      None => Ok(()),
      Some(Ok(answer)) => wm::schema_verdict(answer),
      Some(Err(error)) => Err(error.reason.clone()),
    }
  };
  let check: Option<wm::SchemaCheck<'_>> = if schema.is_some() { Some(&check) } else { None };
  Ok(match (kind.as_str(), hook.as_str()) {
    ("working-memory", "initState") => wm::init_state(params.get("saved").cloned().filter(|v| !v.is_null()), check),
    ("working-memory", "recall") => wm::recall(&state).map_or(Value::Null, recall_json),
    ("working-memory", "store") => wm::store(&state, &maps(&items), &wm::config_from(Sketch::of(&config)), check)
      .map_err(fail)?
      .unwrap_or(Value::Null),
    ("working-memory", "update") => {
      let update = params.get("args").and_then(Value::as_object).cloned().unwrap_or_default();
      wm::apply_update(&state, &update, check).map_err(fail)?
    }
    ("observational-memory", hook) => {
      let current = ObservationalState::from_value(&state).map_err(|e| fail(e.to_string()))?;
      let config = om::config_from(Sketch::of(&config));
      let settle = |acc: om::Accumulated| match acc {
        om::Accumulated::Kept(next) => next.to_value(),
        om::Accumulated::Distill { new_buffer } => json!({ "distill": new_buffer }),
      };
      match hook {
        "initState" => om::init_state(params.get("saved").cloned().filter(|v| !v.is_null())),
        "recall" => {
          let budget = params.get("budget").and_then(Value::as_f64).unwrap_or(0.0);
          om::recall(&current, budget).map_or(Value::Null, recall_json)
        }
        "store" => settle(om::store(&current, &maps(&items), &config)),
        "onItemAppend" => om::on_item_append(&current, &maps(&items), &config).map_or(Value::Null, settle),
        "applyDistilled" => {
          let distilled = om::distilled(params.get("distilled").cloned().unwrap_or_default()).map_err(fail)?;
          om::apply_distilled(&current, distilled, &config).to_value()
        }
        _ => return Err(fail(format!("observational-memory has no hook '{hook}'"))),
      }
    }
    ("durable-task-state", hook) => durable_task_state_hook(hook, &params).map_err(fail)?,
    ("static-content", "wrap") => {
      let raw = params.get("raw").and_then(Value::as_str).unwrap_or_default();
      json!(sc::wrap(raw, params.get("tag").and_then(Value::as_str).unwrap_or(sc::DEFAULT_TAG)))
    }
    ("static-content", "recall") => {
      let tag = params.get("tag").and_then(Value::as_str).unwrap_or(sc::DEFAULT_TAG);
      let budget = params.get("budget").and_then(Value::as_f64).unwrap_or(0.0);
      let recalled = sc::recall(state.as_str().unwrap_or_default(), budget, tag);
      recalled.map_or(Value::Null, recall_json)
    }
    ("plan", hook) => plan_hook(hook, &params, &state).map_err(fail)?,
    ("steering", hook) => steering_hook(hook, &params, &state).map_err(fail)?,
    ("temporal", hook) => temporal_hook(hook, &params, &state).map_err(fail)?,
    ("file-reference", hook) => file_reference_hook(hook, &params).map_err(fail)?,
    ("history-window", "project") => {
      let max_items = params.get("maxItems").and_then(Value::as_u64).unwrap_or(hw::DEFAULT_MAX_ITEMS as u64);
      hw::window(&&described_history(&params), max_items as usize).map_or(Value::Null, |kept| json!(kept))
    }
    _ => return Err(fail(format!("{kind} has no hook '{hook}'"))),
  })
}

/// steering's pure parts; the JS face walks the rules itself, as its predicates and `ctx.callModel` live there.
fn steering_hook(hook: &str, params: &Value, state: &Value) -> std::result::Result<Value, String> {
  let field = |key: &str| params.get(key).cloned().unwrap_or(Value::Null);
  let decision = || serde_json::from_value::<SteeringDecision>(field("decision")).map_err(|e| e.to_string());
  let max = field("max").as_u64().unwrap_or(100) as usize;
  let now = field("now").as_f64().unwrap_or(0.0);
  let state = Some(state).filter(|state| !state.is_null());
  Ok(match hook {
    "initState" => st::init_state(params.get("saved").cloned()),
    "prompt" => {
      let context = match params.get("toolName").and_then(Value::as_str) {
        Some(name) => st::tool_context(name, &field("toolArgs")),
        None => st::response_context(field("items").as_u64().unwrap_or(0) as usize),
      };
      Value::String(st::verdict_prompt(field("prompt").as_str().unwrap_or_default(), &context))
    }
    "verdictOf" => {
      let items = field("items");
      let text = extract_assistant_text(&maps(&items));
      st::parse_verdict(&text).map_or(Value::Null, |d| json!(d))
    }
    "mostRestrictive" => {
      let decisions: Vec<SteeringDecision> = serde_json::from_value(field("decisions")).map_err(|e| e.to_string())?;
      json!(most_restrictive(&decisions))
    }
    "predicateDecision" => st::predicate_decision(&field("answer")).map_or(Value::Null, |d| json!(d)),
    "pending" => {
      let pending = st::Pending::of(field("ruleId").as_str().unwrap_or_default(), &decision()?);
      json!({ "ruleId": pending.rule_id, "guidance": pending.guidance })
    }
    "feedback" => st::feedback(&st::pending_in(state)).map_or(Value::Null, |(text, tokens)| json!([text, tokens])),
    "recordTool" => {
      let entry = st::tool_entry(now, field("toolName").as_str().unwrap_or_default(), &field("toolArgs"), &decision()?);
      st::record(state, entry, max)
    }
    "recordModel" => st::record(state, st::model_entry(now, &field("usage"), &decision()?), max),
    "recordOutcome" => st::record(state, st::outcome_entry(now, field("outcome").as_str().unwrap_or_default()), max),
    "spawned" => st::spawned(state),
    other => return Err(format!("steering has no hook '{other}'")),
  })
}

fn durable_task_state_hook(hook: &str, params: &Value) -> std::result::Result<Value, String> {
  let value = |key: &str| params.get(key).filter(|value| !value.is_null());
  Ok(match hook {
    "initState" => dts::init_state(value("saved").cloned()),
    "recall" => {
      let budget = params.get("budget").and_then(Value::as_f64).unwrap_or(0.0);
      let recalled = value("state").and_then(|state| dts::recall(state, budget));
      recalled.map_or(Value::Null, recall_json)
    }
    "store" => {
      let depth = params.get("depth").and_then(Value::as_u64).unwrap_or(0) as u32;
      dts::store(value("state"), dts::now_ms(), depth)?
    }
    "onReturn" => dts::on_return(value("parent"), params.get("child").unwrap_or(&Value::Null))?,
    "onComplete" => match value("state") {
      Some(state) => {
        dts::on_complete(state, params.get("outcome").and_then(Value::as_str).unwrap_or(""), dts::now_ms())?
          .unwrap_or(Value::Null)
      }
      None => Value::Null,
    },
    _ => return Err(format!("durable-task-state has no hook '{hook}'")),
  })
}

/// A pure recall as the JS faces read it: `[text, tokenCount]`.
fn recall_json((text, tokens): (String, u64)) -> Value {
  json!([text, tokens])
}

/// A role as JS describes it: 1 user, 2 assistant, 3 system, anything else another item.
fn role(code: Option<&Value>) -> Role {
  match code.and_then(Value::as_u64) {
    Some(1) => Role::User,
    Some(2) => Role::Assistant,
    Some(3) => Role::System,
    _ => Role::Other,
  }
}

/// The history window's view of a JS item list: `{len, from, tail: [[role, link, callId]], head: [role],
/// userBefore, assistantBefore}`, where link is 1 for a call and 2 for an output (with a string callId).
fn described_history(params: &Value) -> Described {
  let count = |key: &str| params.get(key).and_then(Value::as_u64).unwrap_or(0) as usize;
  let flag = |key: &str| params.get(key).and_then(Value::as_bool).unwrap_or(false);
  let list = |key: &str| params.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
  let tail = list("tail")
    .iter()
    .map(|entry| {
      let id = entry.get(2).and_then(Value::as_str).map(str::to_owned);
      let link = match (entry.get(1).and_then(Value::as_u64), id) {
        (Some(1), Some(id)) => Pairing::Call(id),
        (Some(2), Some(id)) => Pairing::Output(id),
        _ => Pairing::Unlinked,
      };
      (role(entry.get(0)), link)
    })
    .collect();
  Described {
    len: count("len"),
    from: count("from"),
    tail,
    head: list("head").iter().map(|code| role(Some(code))).collect(),
    user_before: flag("userBefore"),
    assistant_before: flag("assistantBefore"),
  }
}

/// planMemory's hooks and functions for its JS face. A function that needs a host callback answers
/// `{ask: "onEnterSession" | "onExit"}`; JS awaits the callback and calls again with `{answered: true, answer}`.
fn plan_hook(hook: &str, params: &Value, state: &Value) -> std::result::Result<Value, String> {
  let config = plan::config_from(Sketch::of(params.get("config").unwrap_or(&Value::Null))).map_err(|e| e.message)?;
  let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
  Ok(match hook {
    "initState" => plan::init_state(params.get("saved").cloned()),
    "recall" => {
      let budget = params.get("budget").and_then(number).unwrap_or(f64::NAN);
      plan::recall(state, budget, &config).map_or(Value::Null, recall_json)
    }
    "beforeToolCall" => match plan::denial(state, text("toolName"), &config) {
      None => json!({ "action": "allow" }),
      Some(guidance) => json!({ "action": "deny", "guidance": guidance }),
    },
    "onComplete" => {
      let now = params.get("now").and_then(Value::as_f64).unwrap_or(0.0);
      plan::on_complete(state, text("outcome"), now).unwrap_or(Value::Null)
    }
    "status" => plan::status(state),
    "call" => {
      let answer = params
        .get("answered")
        .and_then(Value::as_bool)
        .unwrap_or(false)
        .then(|| params.get("answer").cloned().unwrap_or(Value::Null));
      let args = params.get("args").unwrap_or(&Value::Null);
      match plan::call(text("name"), args, state, &config, answer.as_ref())? {
        FnStep::Done { result, state: Some(next) } => json!({ "result": result, "state": next }),
        FnStep::Done { result, state: None } => json!({ "result": result }),
        FnStep::Ask(Ask::EnterSession) => json!({ "ask": "onEnterSession" }),
        FnStep::Ask(Ask::Exit) => json!({ "ask": "onExit" }),
      }
    }
    _ => return Err(format!("plan has no hook '{hook}'")),
  })
}

/// temporalMemory's hooks for its JS face. The clock's reading arrives as `now`, the local fields of a `Date`.
/// A hook that must extract answers `{extract: transcript}`; JS then formats the clock (`formatNow`), awaits its
/// extractor and calls `applyExtracted`. `search` answers the searcher's input when the layer has one, else the
/// result itself.
fn temporal_hook(hook: &str, params: &Value, state: &Value) -> std::result::Result<Value, String> {
  let config = tm::config_from(Sketch::of(params.get("config").unwrap_or(&Value::Null))).map_err(|e| e.message)?;
  let now = || tm::local_time_from(params.get("now").unwrap_or(&Value::Null)).map(|time| tm::format_now(&time));
  let settle = |accumulated: tm::Accumulated| match accumulated {
    tm::Accumulated::Kept(next) => next.to_value(),
    tm::Accumulated::Extract { transcript } => json!({ "extract": transcript }),
  };
  if hook == "initState" {
    return Ok(tm::init_state(params.get("saved").cloned()));
  }
  if hook == "formatNow" {
    return now().map(Value::String);
  }
  let current = TemporalState::from_value(state)?;
  let items = params.get("items").unwrap_or(&Value::Null);
  Ok(match hook {
    "recall" => {
      let budget = params.get("budget").and_then(number).unwrap_or(f64::NAN);
      let now = if config.ground_date_time { Some(now()?) } else { None };
      tm::recall(&current, budget, now.as_deref(), &config).map_or(Value::Null, recall_json)
    }
    "store" => settle(tm::store(&current, &maps(items), &config)),
    "onItemAppend" => tm::on_item_append(&current, &maps(items), &config).map_or(Value::Null, settle),
    "applyExtracted" => {
      let facts = tm::extracted(params.get("facts").unwrap_or(&Value::Null))?;
      tm::apply_extracted(&current, facts, &config).to_value()
    }
    "search" => {
      let query = tm::search_query(params.get("args").unwrap_or(&Value::Null))?;
      if config.has_search { tm::search_request(query, &current, &now()?) } else { tm::unsearched(&current) }
    }
    _ => return Err(format!("temporal has no hook '{hook}'")),
  })
}

/// fileReference's hooks for its JS face. An append is three calls, JS doing the reads (`ctx.fs`) and the scoring
/// (`ctx.callModel`) between them: `appendPlan` gives the rewritten items (`null` for one passed on as it is), the
/// reads and the plan; `appendReads` takes the plan and the read outcomes and gives the state, the files to score
/// and whether anything changed; `appendScores` takes the state, the asks and the model's replies (`null` for a
/// failed call), or `heuristic: true` without a model, and gives the state.
fn file_reference_hook(hook: &str, params: &Value) -> std::result::Result<Value, String> {
  let config = fr::config_from(Sketch::of(params.get("config").unwrap_or(&Value::Null)), "").map_err(|e| e.message)?;
  let value = |key: &str| params.get(key).filter(|value| !value.is_null());
  let state = || fr::FileRefState::from_json(value("state"), &config.base_dir);
  let parsed = |key: &str| value(key).cloned().unwrap_or(Value::Null);
  Ok(match hook {
    "initState" => fr::init_state(value("saved"), &config.base_dir),
    "recall" => {
      let budget = params.get("budget").and_then(number).unwrap_or(f64::NAN);
      fr::recall(&state()?, budget).map_or(Value::Null, recall_json)
    }
    "appendPlan" => {
      let items = parsed("items");
      let plan = fr::plan_append(&state()?, &maps(&items), &config);
      json!({ "items": plan.items, "reads": plan.reads, "plan": plan })
    }
    "appendReads" => {
      let plan: fr::AppendPlan = serde_json::from_value(parsed("plan")).map_err(|e| e.to_string())?;
      let outcomes: Vec<noetic_runtime::adapters::FileOutcome> =
        serde_json::from_value(parsed("outcomes")).map_err(|e| e.to_string())?;
      let settled = fr::settle_reads(state()?, &plan, outcomes, &config);
      json!({
        "state": settled.state.to_json(),
        "asks": settled.asks,
        "changed": settled.changed,
        "instructions": fr::SCORING_INSTRUCTIONS,
      })
    }
    "appendScores" => {
      let mut next = state()?;
      let asks: Vec<fr::ScoreAsk> = serde_json::from_value(parsed("asks")).map_err(|e| e.to_string())?;
      let scores: Vec<f64> = if params.get("heuristic").and_then(Value::as_bool) == Some(true) {
        asks.iter().map(|ask| ask.heuristic).collect()
      } else {
        let replies = params.get("replies").and_then(Value::as_array).cloned().unwrap_or_default();
        asks.iter().enumerate().map(|(i, _)| fr::parse_score(replies.get(i).and_then(Value::as_str))).collect()
      };
      fr::apply_scores(&mut next, &asks, &scores);
      next.to_json()
    }
    _ => return Err(format!("file-reference has no hook '{hook}'")),
  })
}
