//! The steps of staticContent's, historyWindow's and fileReference's hooks called from JS (see [`super::steps`]),
//! and their faces' descriptions.

use serde_json::{Value, json};

use super::steps::{self, HookError, Params, ask, asks, calls, done, init_from_storage, no_hook, recalled, returns};
use crate::adapters::FileOutcome;
use crate::items::Pairing;
use crate::js_sketch::Sketch;
use crate::memory::builtin::file_reference::{self as fr, AppendPlan, FileRefState, FileReferenceConfig, ScoreAsk};
use crate::memory::builtin::history_window::{self as hw, Described, Role};
use crate::memory::builtin::static_content as sc;

pub(super) fn static_content_face() -> Value {
  json!({
    "hooks": {
      "init": asks(&[], "load", Value::Null, "raw", "wrap"),
      "recall": calls("recall", &[("state", "state:text"), ("budget", "budget")]),
    },
  })
}

/// staticContent: init awaits the loader (its text, `""` for nothing) and wraps it in the tag.
pub(super) fn static_content(hook: &str, params: Params<'_>) -> Result<Value, HookError> {
  let config = sc::config_from(Sketch::of(params.config())).map_err(|e| e.message)?;
  Ok(match hook {
    "wrap" => steps::state(json!(sc::wrap(params.str("raw"), &config.tag))),
    "recall" => match sc::recall(params.str("state"), params.f64_or("budget", 0.0), &config.tag) {
      Some((text, _)) => steps::value(json!(text)),
      None => done(Value::Null, vec![]),
    },
    _ => return Err(no_hook("static-content", hook)),
  })
}

pub(super) fn history_window_face() -> Value {
  json!({
    "hooks": {
      "init": returns(json!({ "state": null })),
      "projectHistory": calls("project", &[("len", "items.length")]),
    },
  })
}

/// historyWindow: a history within the cap passes as it is (the very list); a longer one is described by JS from
/// `from` on, and its first `head` items, then cut here. The items kept keep their identity.
pub(super) fn history_window(hook: &str, params: Params<'_>) -> Result<Value, HookError> {
  if hook != "project" {
    return Err(no_hook("history-window", hook));
  }
  let max_items = hw::max_items_from(Sketch::of(params.config())).map_err(|e| e.message)?;
  let len = params.get("len").as_u64().unwrap_or(0) as usize;
  let Some(described) = params.present("described") else {
    if len <= max_items {
      return Ok(done(json!({ "items": "$param:items" }), vec![]));
    }
    let from = len.saturating_sub(max_items * hw::MAX_EXPANSION);
    let arg = json!({ "items": "$param:items", "from": from, "head": from.min(hw::ANCHOR_SCAN) });
    return Ok(ask("describe", arg, vec![], "described", "project", json!({ "from": from })));
  };
  let history = described_history(len, params.get("from").as_u64().unwrap_or(0) as usize, described);
  let kept = hw::window(&&history, max_items).unwrap_or_else(|| (0..len).collect());
  Ok(done(json!({ "items": "$items:0" }), vec![json!(kept)]))
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

/// The history window's view of a JS item list: `{tail: [[role, link, callId]], head: [role], userBefore,
/// assistantBefore}`, where link is 1 for a call and 2 for an output (with a string callId).
fn described_history(len: usize, from: usize, described: &Value) -> Described {
  let list = |key: &str| described.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
  let flag = |key: &str| described.get(key).and_then(Value::as_bool).unwrap_or(false);
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
    len,
    from,
    tail,
    head: list("head").iter().map(|code| role(Some(code))).collect(),
    user_before: flag("userBefore"),
    assistant_before: flag("assistantBefore"),
  }
}

pub(super) fn file_reference_face() -> Value {
  let state = ("state", "state:files");
  json!({
    "hooks": {
      "init": init_from_storage(true),
      "onItemAppend": calls("appendPlan", &[state, ("items", "items")]),
      "recall": calls("recall", &[state, ("budget", "budget:num")]),
    },
  })
}

/// fileReference. An append is the harness's three steps: plan it (`appendPlan`: the rewritten items and the
/// reads), await the reads through `ctx.fs` (`appendReads`), then, for files to score, await the scores through
/// `ctx.callModel` or the path heuristic without one (`appendScores`).
pub(super) fn file_reference(hook: &str, params: Params<'_>) -> Result<Value, HookError> {
  let config = fr::config_from(Sketch::of(params.config()), "").map_err(|e| e.message)?;
  let state = || FileRefState::from_json(params.present("state"), &config.base_dir);
  let parsed = |key: &str| params.get(key).clone();
  Ok(match hook {
    "initState" => {
      done(json!({ "state": "$files:0" }), vec![fr::init_state(params.present("saved"), &config.base_dir)])
    }
    "recall" => match fr::recall(&state()?, params.number("budget")) {
      None => done(json!({ "items": [], "tokenCount": 0 }), vec![]),
      some => recalled(some),
    },
    "appendPlan" => {
      let plan = fr::plan_append(&state()?, &params.maps("items"), &config);
      if plan.reads.is_empty() {
        return Ok(settle(state()?, plan, Vec::new(), &config));
      }
      let reads = json!(plan.reads);
      let arg = json!({ "fs": "$param:ctx.fs", "reads": "$0" });
      ask("reads", arg, vec![reads], "outcomes", "appendReads", json!({ "plan": plan }))
    }
    "appendReads" => {
      let plan: AppendPlan = serde_json::from_value(parsed("plan")).map_err(|e| e.to_string())?;
      let outcomes: Vec<FileOutcome> = serde_json::from_value(parsed("outcomes")).map_err(|e| e.to_string())?;
      settle(state()?, plan, outcomes, &config)
    }
    "appendScores" => {
      let mut next = state()?;
      let plan: AppendPlan = serde_json::from_value(parsed("plan")).map_err(|e| e.to_string())?;
      let asks: Vec<ScoreAsk> = serde_json::from_value(parsed("asks")).map_err(|e| e.to_string())?;
      // No replies: there was no model to ask, and the path heuristic scores.
      let replies = params.get("replies");
      let scores: Vec<f64> = if replies.is_null() {
        asks.iter().map(|ask| ask.heuristic).collect()
      } else {
        (0..asks.len()).map(|i| fr::parse_score(replies.get(i).and_then(Value::as_str))).collect()
      };
      fr::apply_scores(&mut next, &asks, &scores);
      appended(&plan, next.to_json(), params.bool("changed"))
    }
    _ => return Err(no_hook("file-reference", hook)),
  })
}

/// After the reads: the files to score are asked for, or the append is done.
fn settle(state: FileRefState, plan: AppendPlan, outcomes: Vec<FileOutcome>, config: &FileReferenceConfig) -> Value {
  let settled = fr::settle_reads(state, &plan, outcomes, config);
  if settled.asks.is_empty() {
    return appended(&plan, settled.state.to_json(), settled.changed);
  }
  let prompts: Vec<&str> = settled.asks.iter().map(|ask| ask.prompt.as_str()).collect();
  let arg = json!({
    "callModel": "$param:ctx?.callModel",
    "model": config.scoring_model,
    "instructions": fr::SCORING_INSTRUCTIONS,
    "prompts": "$0",
  });
  let with =
    json!({ "state": settled.state.to_json(), "asks": settled.asks, "changed": settled.changed, "plan": plan });
  ask("scores", arg, vec![json!(prompts)], "replies", "appendScores", with)
}

/// onItemAppend's result: the items (each rewritten one, else the very item given), the state, and the re-render
/// every append asks for.
fn appended(plan: &AppendPlan, state: Value, changed: bool) -> Value {
  let items: Vec<Value> =
    plan.items.iter().enumerate().map(|(i, item)| item.clone().map_or_else(|| json!(i), Value::Object)).collect();
  let rerender = fr::rerender_request();
  let shape = json!({
    "items": "$items:0",
    "state": "$files:1",
    "rerender": changed,
    "timing": rerender.timing,
    "scope": rerender.scope,
  });
  done(shape, vec![json!(items), state])
}

#[cfg(test)]
mod tests {
  use super::*;

  use crate::memory::builtin::faces::steps::run_step as step;

  #[test]
  fn static_content_wraps_what_it_loaded_in_its_tag() {
    let config = json!({ "tag": "rules", "load": { "$sketch": "a function", "type": "function" } });
    let wrapped = step("wrap", json!({ "raw": "be kind", "config": config }), static_content);
    assert_eq!(wrapped["values"][0], "<rules>\nbe kind\n</rules>");
    assert_eq!(step("recall", json!({ "state": "", "config": config }), static_content)["shape"], Value::Null);
    assert_eq!(static_content_face()["hooks"]["init"]["ask"], "load");
  }

  #[test]
  fn history_window_asks_for_a_description_only_past_its_cap() {
    let config = json!({ "maxItems": 2 });
    let short = step("project", json!({ "len": 2, "config": config }), history_window);
    assert_eq!(short["shape"], json!({ "items": "$param:items" }));
    let long = step("project", json!({ "len": 10, "config": config }), history_window);
    assert_eq!(
      (long["ask"].clone(), long["arg"]["from"].clone(), long["arg"]["head"].clone()),
      (json!("describe"), json!(2), json!(2))
    );
    let tail: Vec<Value> = (2..10).map(|i| json!([if i % 2 == 0 { 1 } else { 2 }])).collect();
    let described = json!({ "tail": tail, "head": [3, 0], "userBefore": false, "assistantBefore": false });
    let cut =
      step("project", json!({ "len": 10, "from": 2, "described": described, "config": config }), history_window);
    assert_eq!((cut["shape"].clone(), cut["values"][0].clone()), (json!({ "items": "$items:0" }), json!([0, 8, 9])));
  }

  #[test]
  fn file_reference_appends_without_reads_at_once() {
    let config = json!({ "baseDir": "/w" });
    let item =
      json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "no references here" }] });
    let appended = step("appendPlan", json!({ "state": null, "items": [item], "config": config }), file_reference);
    assert_eq!(appended["shape"]["items"], "$items:0");
    assert_eq!((appended["values"][0].clone(), appended["shape"]["rerender"].clone()), (json!([0]), json!(false)));
    let referenced =
      json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "see #notes.md" }] });
    let reads = step("appendPlan", json!({ "items": [referenced], "config": config }), file_reference);
    assert_eq!(
      (reads["ask"].clone(), reads["then"].clone(), reads["arg"]["fs"].clone()),
      (json!("reads"), json!("appendReads"), json!("$param:ctx.fs"))
    );
    let empty = step("recall", json!({ "state": null, "budget": "Infinity", "config": config }), file_reference);
    assert_eq!(empty["shape"], json!({ "items": [], "tokenCount": 0 }));
    assert_eq!(file_reference_face()["hooks"]["init"]["ask"], "savedIfAny");
  }
}
