use serde_json::json;

use super::*;

fn message(payload: Value) -> String {
  describe(&payload)
}

#[test]
fn a_failed_step_names_its_cause_and_says_undefined_without_one() {
  assert_eq!(
    message(json!({ "kind": "step_failed", "stepId": "fetch", "cause": { "message": "boom" } })),
    "Step 'fetch' failed: boom"
  );
  assert_eq!(message(json!({ "kind": "step_failed", "stepId": "fetch" })), "Step 'fetch' failed: undefined");
  // A cause that is a string has no `message`.
  assert_eq!(message(json!({ "kind": "step_failed", "cause": "text" })), "Step 'undefined' failed: undefined");
}

#[test]
fn a_refusal_and_a_parse_error_name_the_step() {
  assert_eq!(message(json!({ "kind": "llm_refused", "stepId": "a", "refusal": "no" })), "LLM refused at step 'a': no");
  assert_eq!(message(json!({ "kind": "llm_refused", "stepId": 7 })), "LLM refused at step '7': undefined");
  assert_eq!(
    message(json!({ "kind": "llm_parse_error", "stepId": "p", "raw": "{" })),
    "LLM parse error at step 'p': failed to parse output"
  );
}

#[test]
fn a_rate_limit_gives_its_wait_only_when_it_is_truthy() {
  let limited = |retry: Value| message(json!({ "kind": "llm_rate_limit", "stepId": "s", "retryAfter": retry }));
  assert_eq!(limited(json!(1500)), "LLM rate limited at step 's' (retry after 1500ms)");
  assert_eq!(limited(json!(0.5)), "LLM rate limited at step 's' (retry after 0.5ms)");
  assert_eq!(limited(json!(-2)), "LLM rate limited at step 's' (retry after -2ms)");
  assert_eq!(limited(json!(0)), "LLM rate limited at step 's'");
  assert_eq!(limited(json!("")), "LLM rate limited at step 's'");
  assert_eq!(limited(Value::Null), "LLM rate limited at step 's'");
  assert_eq!(message(json!({ "kind": "llm_rate_limit", "stepId": "s" })), "LLM rate limited at step 's'");
}

#[test]
fn a_partial_fork_counts_its_paths_by_length() {
  let payload = json!({ "kind": "fork_partial", "stepId": "f", "succeeded": [1, 2], "failed": [{ "stepId": "x" }] });
  assert_eq!(message(payload), "Fork 'f' partial failure: 2 succeeded, 1 failed");
  assert_eq!(
    message(json!({ "kind": "fork_partial", "stepId": "f" })),
    "Fork 'f' partial failure: undefined succeeded, undefined failed"
  );
  // A string's length is in UTF-16 units, as JS counts it.
  let strings = json!({ "kind": "fork_partial", "stepId": "f", "succeeded": "ab😀", "failed": { "length": 9 } });
  assert_eq!(message(strings), "Fork 'f' partial failure: 4 succeeded, 9 failed");
}

#[test]
fn channel_messages_name_the_channel() {
  let timeout = json!({ "kind": "channel_timeout", "channelName": "inbox", "timeout": 30000 });
  assert_eq!(message(timeout), "Channel 'inbox' timed out after 30000ms");
  assert_eq!(
    message(json!({ "kind": "channel_timeout", "channelName": "inbox" })),
    "Channel 'inbox' timed out after undefinedms"
  );
  assert_eq!(message(json!({ "kind": "channel_closed", "channelName": "inbox" })), "Channel 'inbox' is closed");
  assert_eq!(message(json!({ "kind": "channel_closed" })), "Channel 'undefined' is closed");
}

#[test]
fn a_cancellation_gives_its_reason_only_when_there_is_one() {
  assert_eq!(message(json!({ "kind": "cancelled", "reason": "user stop" })), "Cancelled: user stop");
  assert_eq!(message(json!({ "kind": "cancelled", "reason": "" })), "Cancelled");
  assert_eq!(message(json!({ "kind": "cancelled" })), "Cancelled");
}

#[test]
fn a_budget_prints_its_numbers_as_js_does() {
  let payload = json!({ "kind": "budget_exceeded", "field": "cost", "limit": 1.0, "actual": 1.5 });
  assert_eq!(message(payload), "Budget exceeded: cost limit 1, actual 1.5");
  let large = json!({ "kind": "budget_exceeded", "field": "tokens", "limit": 1e21, "actual": [1, null, [2, 3]] });
  assert_eq!(message(large), "Budget exceeded: tokens limit 1e+21, actual 1,,2,3");
  assert_eq!(
    message(json!({ "kind": "budget_exceeded" })),
    "Budget exceeded: undefined limit undefined, actual undefined"
  );
}

#[test]
fn a_denial_gives_its_guidance_only_when_there_is_some() {
  assert_eq!(message(json!({ "kind": "steering_denied", "guidance": "be brief" })), "Steering denied: be brief");
  assert_eq!(message(json!({ "kind": "steering_denied", "guidance": "" })), "Steering denied");
  assert_eq!(message(json!({ "kind": "steering_denied", "guidance": null })), "Steering denied");
  assert_eq!(message(json!({ "kind": "steering_denied", "guidance": { "a": 1 } })), "Steering denied: [object Object]");
}

#[test]
fn a_schema_mismatch_names_the_type_or_else_the_category() {
  let typed = json!({ "kind": "item_schema_mismatch", "category": "items", "itemType": "note" });
  assert_eq!(message(typed), "Item type 'note' did not match any registered item extension schema.");
  let untyped = json!({ "kind": "item_schema_mismatch", "category": "items", "itemType": "" });
  assert_eq!(message(untyped), "Item did not match any registered items extension schema.");
  assert_eq!(
    message(json!({ "kind": "item_schema_mismatch" })),
    "Item did not match any registered undefined extension schema."
  );
}

#[test]
fn an_evicted_handle_names_the_handle_step_and_grace() {
  let payload = json!({ "kind": "handle_evicted", "handleId": "h1", "stepId": "s", "gracePeriodMs": 500 });
  assert_eq!(message(payload), "Subprocess handle 'h1' evicted (step 's'): adapter returned null for 500ms");
  let bare = json!({ "kind": "handle_evicted", "stepId": true });
  assert_eq!(
    message(bare),
    "Subprocess handle 'undefined' evicted (step 'true'): adapter returned null for undefinedms"
  );
}

#[test]
fn an_unknown_or_missing_kind_has_upstreams_fallback() {
  assert_eq!(message(json!({ "kind": "surprise" })), "NoeticError: unknown kind");
  assert_eq!(message(json!({ "kind": 3 })), "NoeticError: unknown kind");
  assert_eq!(message(json!({})), "NoeticError: unknown kind");
  assert_eq!(message(json!(null)), "NoeticError: unknown kind");
}

#[test]
fn the_templates_js_fills_say_the_same() {
  let all = templates_json();
  assert_eq!(
    all["kinds"]["cancelled"],
    json!([{ "path": ["reason"], "then": ["Cancelled: ", { "path": ["reason"] }], "else": ["Cancelled"] }])
  );
  assert_eq!(all["kinds"]["fork_partial"][3], json!({ "path": ["succeeded", "length"] }));
  assert_eq!(all["kinds"].as_object().map(serde_json::Map::len), Some(12));
  assert_eq!(all["unknown"], json!(["NoeticError: unknown kind"]));
}
