//! The steps of workingMemory's, observationalMemory's and temporalMemory's hooks called from JS (see
//! [`super::steps`]), and their faces' descriptions.

use serde_json::{Value, json};

use super::steps::{
  self, HookError, Params, ask, asks, calls, cloned_parent, done, init_from_storage, merge, no_hook, recalled, returns,
};
use crate::js_sketch::Sketch;
use crate::memory::Scope;
use crate::memory::builtin::observational_memory::{self as om, ObservationalState};
use crate::memory::builtin::temporal_memory::{self as tm, TemporalState};
use crate::memory::builtin::working_memory::{self as wm, SchemaCheck};

pub(super) fn working_memory_face(config: &wm::WorkingMemoryConfig) -> Value {
  let on_spawn = if config.scope == Scope::Resource { cloned_parent() } else { returns(Value::Null) };
  json!({
    "hooks": {
      "init": init_from_storage(false),
      "recall": calls("recall", &[("state", "state")]),
      "store": calls("store", &[("state", "state"), ("items", "newItems")]),
      "onSpawn": on_spawn,
    },
    "provides": {
      "snapshot": { "kind": "data", "shape": "$param:state" },
      "update": {
        "kind": "function",
        "description": wm::UPDATE_DESCRIPTION,
        "input": { "record": ["string", "unknown"] },
        "output": "void",
        "params": { "state": "state", "args": "args" },
        "call": "update",
      },
    },
  })
}

/// workingMemory: `check` is the host's schema, called synchronously.
pub(super) fn working_memory(
  hook: &str,
  params: Params<'_>,
  check: Option<SchemaCheck<'_>>,
) -> Result<Value, HookError> {
  let state = params.get("state");
  Ok(match hook {
    "initState" => steps::state(wm::init_state(params.present("saved").cloned(), check)),
    "recall" => recalled(wm::recall(state)),
    "store" => {
      let config = wm::config_from(Sketch::of(params.config()));
      steps::state_or_undefined(wm::store(state, &params.maps("items"), &config, check)?)
    }
    "update" => {
      let update = params.get("args").as_object().cloned().unwrap_or_default();
      done(json!({ "result": "$undefined", "state": "$0" }), vec![wm::apply_update(state, &update, check)?])
    }
    _ => return Err(no_hook("working-memory", hook)),
  })
}

pub(super) fn observational_memory_face() -> Value {
  json!({
    "hooks": {
      "init": init_from_storage(false),
      "recall": calls("recall", &[("state", "state"), ("budget", "budget")]),
      "store": calls("store", &[("state", "state"), ("items", "newItems")]),
      "onItemAppend": calls("onItemAppend", &[("state", "state"), ("items", "items")]),
      "onSpawn": cloned_parent(),
    },
  })
}

/// observationalMemory: a hook that must distil awaits the observer on the buffer, then `applyDistilled` folds its
/// answer into the state the hook was given.
pub(super) fn observational_memory(hook: &str, params: Params<'_>) -> Result<Value, HookError> {
  let current = ObservationalState::from_value(params.get("state")).map_err(|e| e.to_string())?;
  let config = om::config_from(Sketch::of(params.config()));
  let settle = |origin: &str, accumulated: om::Accumulated| match accumulated {
    om::Accumulated::Kept(next) => steps::accumulated(origin, Some(next.to_value())),
    om::Accumulated::Distill { new_buffer } => {
      ask("observer", json!("$0"), vec![json!(new_buffer)], "distilled", "applyDistilled", json!({ "hook": origin }))
    }
  };
  Ok(match hook {
    "initState" => steps::state(om::init_state(params.present("saved").cloned())),
    "recall" => recalled(om::recall(&current, params.f64_or("budget", 0.0))),
    "store" => settle(hook, om::store(&current, &params.maps("items"), &config)),
    "onItemAppend" => match om::on_item_append(&current, &params.maps("items"), &config) {
      Some(accumulated) => settle(hook, accumulated),
      None => steps::accumulated(hook, None),
    },
    "applyDistilled" => {
      let distilled = om::distilled(params.get("distilled").clone())?;
      steps::accumulated(params.origin(), Some(om::apply_distilled(&current, distilled, &config).to_value()))
    }
    _ => return Err(no_hook("observational-memory", hook)),
  })
}

/// Which clock temporalMemory reads: the configured `now`, else the system's (a `Date` either way).
fn clock(config: &tm::TemporalConfig) -> &'static str {
  if config.has_now { "now" } else { "clock" }
}

pub(super) fn temporal_memory_face(config: &tm::TemporalConfig) -> Value {
  let state = ("state", "state");
  let search = [state, ("args", "args")];
  let search = if config.has_search {
    asks(&search, clock(config), Value::Null, "now", "search")
  } else {
    calls("search", &search)
  };
  let recall = [state, ("budget", "budget:num")];
  let recall = if config.ground_date_time {
    asks(&recall, clock(config), Value::Null, "now", "recall")
  } else {
    calls("recall", &recall)
  };
  let mut search_memory = json!({
    "kind": "function",
    "description": tm::SEARCH_DESCRIPTION,
    "input": { "object": { "query": "string" } },
    "output": { "object": { "facts": { "array": "string" }, "date": { "optional": "string" }, "fuzzy": { "optional": "boolean" } } },
  });
  merge(&mut search_memory, search);
  json!({
    "provides": { "searchMemory": search_memory },
    "hooks": {
      "init": init_from_storage(false),
      "recall": recall,
      "store": calls("store", &[state, ("items", "newItems")]),
      "onItemAppend": calls("onItemAppend", &[state, ("items", "items")]),
      "onSpawn": cloned_parent(),
    },
  })
}

/// temporalMemory. The clock's reading arrives as `now`, the local fields of a `Date`. A hook that must extract
/// reads the clock, has it formatted (`formatNow`), awaits the extractor, then `applyExtracted` folds its facts
/// into the state the hook was given. `search` awaits the searcher when the layer has one, whose answer is the
/// result.
pub(super) fn temporal_memory(hook: &str, params: Params<'_>) -> Result<Value, HookError> {
  let config = tm::config_from(Sketch::of(params.config())).map_err(|e| e.message)?;
  let now = || tm::local_time_from(params.get("now")).map(|time| tm::format_now(&time));
  let settle = |origin: &str, accumulated: tm::Accumulated| match accumulated {
    tm::Accumulated::Kept(next) => steps::accumulated(origin, Some(next.to_value())),
    tm::Accumulated::Extract { transcript } => {
      ask(clock(&config), Value::Null, vec![], "now", "formatNow", json!({ "hook": origin, "transcript": transcript }))
    }
  };
  if hook == "initState" {
    return Ok(steps::state(tm::init_state(params.present("saved").cloned())));
  }
  if hook == "formatNow" {
    let request = tm::extract_request(params.str("transcript"), &now()?);
    return Ok(ask("extract", json!("$0"), vec![request], "facts", "applyExtracted", json!({})));
  }
  let current = TemporalState::from_value(params.get("state"))?;
  let items = params.maps("items");
  Ok(match hook {
    "recall" => {
      let now = if config.ground_date_time { Some(now()?) } else { None };
      recalled(tm::recall(&current, params.number("budget"), now.as_deref(), &config))
    }
    "store" => settle(hook, tm::store(&current, &items, &config)),
    "onItemAppend" => match tm::on_item_append(&current, &items, &config) {
      Some(accumulated) => settle(hook, accumulated),
      None => steps::accumulated(hook, None),
    },
    "applyExtracted" => {
      let facts = tm::extracted(params.get("facts"))?;
      steps::accumulated(params.origin(), Some(tm::apply_extracted(&current, facts, &config).to_value()))
    }
    "search" => {
      let query = tm::search_query(params.get("args"))?;
      if config.has_search {
        steps::ask_and_return("search", tm::search_request(query, &current, &now()?), json!({ "result": "$0" }))
      } else {
        done(json!({ "result": "$0" }), vec![tm::unsearched(&current)])
      }
    }
    _ => return Err(no_hook("temporal", hook)),
  })
}

#[cfg(test)]
mod tests {
  use super::*;

  use crate::memory::builtin::faces::steps::run_step as step;

  #[test]
  fn working_memory_store_returns_nothing_without_an_update_and_checks_a_merge() {
    let config = json!({ "scope": "thread", "readOnly": false });
    let run = |hook: &str, params: Value, check: Option<SchemaCheck<'_>>| {
      working_memory(hook, Params::with_config(&params), check)
    };
    let quiet = run("store", json!({ "state": "", "items": [], "config": config }), None).unwrap();
    assert_eq!(quiet["shape"], "$undefined");
    let call =
      json!({ "type": "function_call", "name": "updateWorkingMemory", "arguments": "{\"a\":1}", "callId": "c" });
    let stored = run("store", json!({ "items": [call], "config": config }), None).unwrap();
    assert_eq!((stored["shape"].clone(), stored["values"][0].clone()), (json!({ "state": "$0" }), json!({ "a": 1 })));
    let refuse = |_: &Value| Err("nope".to_owned());
    let refused = run("update", json!({ "state": {}, "args": { "a": 1 } }), Some(&refuse)).unwrap_err();
    assert!(matches!(refused, HookError::Failed(message) if message.ends_with("nope")));
    let updated = run("update", json!({ "args": { "a": 1 } }), None).unwrap();
    assert_eq!(updated["shape"], json!({ "result": "$undefined", "state": "$0" }));
  }

  #[test]
  fn a_resource_scoped_working_memory_hands_its_child_a_copy() {
    let face = |scope| working_memory_face(&wm::WorkingMemoryConfig { scope, ..Default::default() });
    assert_eq!(face(Scope::Resource)["hooks"]["onSpawn"], json!({ "shape": { "childState": "$clone:parentState" } }));
    assert_eq!(face(Scope::Thread)["hooks"]["onSpawn"], json!({ "shape": null }));
    assert_eq!(face(Scope::Thread)["hooks"]["init"]["then"], "initState");
  }

  #[test]
  fn observational_memory_awaits_its_observer_then_folds_the_answer_in() {
    let config = json!({ "bufferThreshold": 1, "maxObservations": 50, "observer": { "$sketch": "a function", "type": "function" } });
    let message = json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "a long enough input" }] });
    let appended =
      step("onItemAppend", json!({ "state": null, "items": [message], "config": config }), observational_memory);
    assert_eq!((appended["ask"].clone(), appended["then"].clone()), (json!("observer"), json!("applyDistilled")));
    assert_eq!(appended["with"], json!({ "hook": "onItemAppend" }));
    let params = json!({ "state": null, "hook": "onItemAppend", "distilled": ["seen"], "config": config });
    let folded = step("applyDistilled", params, observational_memory);
    assert_eq!(folded["shape"], json!({ "items": "$param:items", "state": "$0" }));
    assert_eq!(folded["values"][0]["observations"], json!(["seen"]));
    let nothing = step("onItemAppend", json!({ "items": [], "config": config }), observational_memory);
    assert_eq!(nothing["shape"], json!({ "items": "$param:items" }));
    let bad = observational_memory("applyDistilled", Params::with_config(&json!({ "distilled": 3, "config": config })));
    assert!(matches!(bad, Err(HookError::Failed(message)) if message.contains("array of strings")));
  }

  #[test]
  fn temporal_memory_reads_the_clock_the_config_names() {
    let face = |given: Value| temporal_memory_face(&tm::config_from(Sketch::of(&given)).unwrap());
    let grounded = face(json!({}));
    assert_eq!(
      (grounded["hooks"]["recall"]["ask"].clone(), grounded["hooks"]["recall"]["key"].clone()),
      (json!("clock"), json!("now"))
    );
    let function = json!({ "$sketch": "a function", "type": "function" });
    let own = face(json!({ "now": function, "search": function, "groundDateTime": false }));
    assert_eq!(own["hooks"]["recall"]["call"], "recall");
    assert_eq!(
      (own["provides"]["searchMemory"]["ask"].clone(), own["provides"]["searchMemory"]["then"].clone()),
      (json!("now"), json!("search"))
    );
    assert_eq!(own["provides"]["searchMemory"]["description"], tm::SEARCH_DESCRIPTION);
  }

  #[test]
  fn temporal_memory_extracts_through_the_clock_and_the_extractor() {
    let function = json!({ "$sketch": "a function", "type": "function" });
    let config = json!({ "bufferThreshold": 1, "extract": function });
    let message = json!({ "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": "I moved to Paris" }] });
    let stored = step("store", json!({ "state": null, "items": [message], "config": config }), temporal_memory);
    assert_eq!((stored["ask"].clone(), stored["then"].clone()), (json!("clock"), json!("formatNow")));
    let params = json!({ "transcript": stored["with"]["transcript"], "now": [2024, 5, 6, 1, 9, 3], "config": config });
    let extract = step("formatNow", params, temporal_memory);
    assert_eq!(extract["values"][0]["now"], "2024/05/06 (Mon) 09:03");
    let facts = json!([{ "ts": "2024/05/06", "fact": "lives in Paris" }]);
    let folded = step(
      "applyExtracted",
      json!({ "state": null, "hook": "store", "facts": facts, "config": config }),
      temporal_memory,
    );
    assert_eq!(folded["shape"], json!({ "state": "$0" }));
    let searched = step("search", json!({ "args": { "query": "x" }, "config": config }), temporal_memory);
    assert_eq!(searched, json!({ "shape": { "result": "$0" }, "values": [{ "facts": [] }] }));
  }
}
