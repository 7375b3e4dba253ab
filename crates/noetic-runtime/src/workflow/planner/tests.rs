use serde_json::json;

use super::*;

fn turn(request: Value) -> Result<Value, ConfigError> {
  planner_turn(&request)
}

fn undefined() -> Value {
  json!({ "$sketch": "undefined", "type": "undefined" })
}

#[test]
fn the_first_brief_puts_instructions_brief_tools_and_task_in_order() {
  let request = json!({
    "instructions": "Be terse.",
    "tools": [["reverse", "Reverses text"], ["count", "undefined"]],
    "maxRevisions": undefined(),
    "task": "reverse abc",
    "revision": 0,
  });
  let answer = turn(request).expect("a turn");
  assert_eq!(answer["id"], "dynamic-workflow-planner-0");
  assert_eq!(answer["model"], "openai/gpt-4o");
  let text = answer["instructions"].as_str().unwrap_or_default();
  let expected = format!(
    "Be terse.\n\n{PLANNER_BRIEF}\n\nAvailable tools:\n- reverse: Reverses text\n- count: undefined\n\nTask: reverse abc"
  );
  assert_eq!(text, expected);
  assert!(text.contains("Every id is unique and non-empty.\n\nAvailable tools:"));
}

#[test]
fn falsy_instructions_are_left_out_and_other_values_are_printed_as_js_prints_them() {
  let without = |instructions: Value| {
    let request = json!({ "instructions": instructions, "tools": [], "maxRevisions": 2, "task": "t", "revision": 1 });
    turn(request).map(|answer| answer["instructions"].as_str().unwrap_or_default().to_owned())
  };
  let bare = format!("{PLANNER_BRIEF}\n\nAvailable tools:\n\n\nTask: t");
  for falsy in [json!(""), json!(0), json!(false), Value::Null, undefined()] {
    assert_eq!(without(falsy).as_deref(), Ok(bare.as_str()));
  }
  assert_eq!(without(json!(42)), Ok(format!("42\n\n{bare}")));
  assert_eq!(without(json!(["a", "b"])), Ok(format!("a,b\n\n{bare}")));
  assert_eq!(without(json!({ "a": 1 })), Ok(format!("[object Object]\n\n{bare}")));
}

#[test]
fn a_revision_after_a_refusal_tells_the_planner_why() {
  let request = json!({
    "instructions": undefined(), "tools": [], "maxRevisions": 3, "task": "go", "revision": 2,
    "lastError": "root.kind must be one of llm",
  });
  let answer = turn(request).expect("a turn");
  assert_eq!(answer["id"], "dynamic-workflow-planner-2");
  let text = answer["instructions"].as_str().unwrap_or_default();
  assert!(text.starts_with(PLANNER_BRIEF));
  assert!(
    text.ends_with("Task: go\n\nYour last document was refused: root.kind must be one of llm\nWrite a corrected one.")
  );
}

#[test]
fn the_planner_gives_up_after_max_revisions_naming_the_last_reason() {
  let request = |max: Value, revision: u32, last: Option<&str>| json!({ "instructions": undefined(), "tools": [], "maxRevisions": max, "task": "go", "revision": revision, "lastError": last });
  let error = turn(request(json!(2), 2, Some("too deep"))).expect_err("gives up");
  assert_eq!(error.code, "WORKFLOW_VALIDATION_FAILED");
  assert_eq!(error.message, "dynamicWorkflow: no valid workflow after 2 attempts: too deep.");
  assert_eq!(error.hint, "Give the planner clearer instructions, a more capable model, or more revisions.");
  // No attempt at all, and so no reason; an empty reason is none either.
  let none = turn(request(json!(0), 0, None)).expect_err("gives up at once");
  assert_eq!(none.message, "dynamicWorkflow: no valid workflow after 0 attempts.");
  assert_eq!(
    turn(request(json!(1), 1, Some(""))).map_err(|e| e.message),
    Err("dynamicWorkflow: no valid workflow after 1 attempts.".into())
  );
  // Without a limit (undefined or null) there are three; a limit JS cannot compare (NaN) allows none.
  assert!(turn(request(undefined(), 2, None)).is_ok());
  assert!(turn(request(Value::Null, 3, None)).is_err());
  let nan = json!({ "$sketch": "NaN", "type": "number" });
  assert_eq!(
    turn(request(nan, 0, None)).map_err(|e| e.message),
    Err("dynamicWorkflow: no valid workflow after NaN attempts.".into())
  );
  assert!(turn(request(json!("2"), 1, None)).is_ok());
  assert!(turn(request(json!("2"), 2, None)).is_err());
  assert!(turn(request(json!({ "$sketch": "Infinity", "type": "number" }), 50, None)).is_ok());
}

#[test]
fn a_given_document_is_checked_to_the_depth_asked() {
  let doc = r#"{"version":1,"root":{"kind":"sequence","id":"s","steps":[{"kind":"llm","id":"a","instructions":"x"}]}}"#;
  assert!(given_document(doc, None).is_ok());
  let refused = given_document(doc, Some(0.0)).expect_err("too deep for 0");
  assert_eq!(refused.code, "WORKFLOW_VALIDATION_FAILED");
  assert_eq!(refused.message, "Invalid workflow document: the workflow is 1 levels deep, more than the 0 allowed.");
  assert_eq!(refused.hint, "Make the JSON fit WorkflowDocumentSchema (validateWorkflow names every problem).");
  assert!(
    given_document("not json", None)
      .expect_err("not JSON")
      .message
      .starts_with("Invalid workflow document: the reply is not")
  );
}

#[test]
fn max_depth_defaults_to_five_and_bounds_what_is_not_a_count() {
  assert_eq!(max_depth(None), 5);
  assert_eq!(max_depth(Some(2.7)), 2);
  assert_eq!(max_depth(Some(f64::NAN)), MAX_DEPTH);
  assert_eq!(max_depth(Some(-1.0)), MAX_DEPTH);
  assert_eq!(max_depth(Some(f64::INFINITY)), MAX_DEPTH);
}
