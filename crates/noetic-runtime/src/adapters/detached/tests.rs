use serde_json::{Value, json};

use super::*;

fn watch() -> DetachedWatch {
  DetachedWatch::new(Sketch::of(&json!("gone")), 0.0)
}

fn facts(status: &str, extra: Value) -> Value {
  let mut facts = json!({ "status": status, "id": "sp-1" });
  facts.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
  facts
}

fn ending(extra: Value, status: &str) -> Ending {
  watch().ending(Sketch::of(&facts(status, extra)))
}

fn running() -> Value {
  json!("running")
}

#[test]
fn a_handle_reads_running_until_it_has_ended() {
  for status in ["starting", "running", "paused", "Completed"] {
    assert_eq!(ending(json!({}), status), Ending::Running, "{status}");
  }
  assert_eq!(watch().ending(Sketch::of(&json!({ "status": 3 }))), Ending::Running);
  assert_eq!(ending(json!({}), "completed"), Ending::Completed);
}

#[test]
fn an_ended_handle_without_a_payload_fails_saying_why() {
  let message = |ending| match ending {
    Ending::FailedWith(error) => (error.kind, error.message, error.payload),
    other => panic!("{other:?}"),
  };
  let (kind, text, payload) = message(ending(json!({ "stopReason": "no longer needed" }), "stopped"));
  assert_eq!(
    (kind.as_str(), text.as_str()),
    ("step_failed", "Step 'gone' failed: Detached spawn was stopped: no longer needed")
  );
  assert_eq!(
    payload,
    json!({ "kind": "step_failed", "stepId": "gone", "cause": { "message": "Detached spawn was stopped: no longer needed" }, "retriesExhausted": false })
  );
  assert_eq!(
    message(ending(json!({ "stopReason": "" }), "stopped")).1,
    "Step 'gone' failed: Detached spawn was stopped"
  );
  for status in ["failed", "stale"] {
    assert_eq!(
      message(ending(json!({}), status)).1,
      "Step 'gone' failed: Detached spawn failed without an error payload"
    );
  }
}

#[test]
fn a_recorded_error_is_rebuilt_with_its_kind() {
  let failed = |extra| match ending(extra, "failed") {
    Ending::Failed(rebuild) => rebuild,
    other => panic!("{other:?}"),
  };
  let object = json!({ "$sketch": "an object", "type": "object", "methods": [] });
  assert_eq!(failed(json!({ "error": "boom" })), Rebuild::Text);
  assert_eq!(failed(json!({ "error": Value::Null })), Rebuild::Text);
  assert_eq!(
    failed(json!({ "error": object, "noeticError": object, "noeticKind": "cancelled" })),
    Rebuild::NoeticError
  );
  assert_eq!(
    failed(json!({ "error": object, "name": "NoeticConfigError", "code": "STEP_NOT_REGISTERED" })),
    Rebuild::ConfigError
  );
  // Without a string code a config error's payload is a plain error's.
  assert_eq!(
    failed(json!({ "error": object, "name": "NoeticConfigError", "message": "m" })),
    Rebuild::Error { message: None, fields: vec![copy("name")] }
  );
  assert_eq!(
    failed(json!({ "error": object, "message": 5, "stack": "at x" })),
    Rebuild::Error { message: Some("unknown error"), fields: vec![copy("stack")] }
  );
  assert_eq!(
    serde_json::to_value(failed(json!({ "error": object, "noeticError": object }))).unwrap(),
    json!({ "from": "error", "message": "unknown error", "fields": [] })
  );
}

#[test]
fn polling_takes_64_turns_then_ramps_from_10_to_100_ms_after_a_second() {
  let mut w = watch();
  let status = running();
  let look = |w: &mut DetachedWatch, now, repeats| w.observe(now, Some(Sketch::of(&status)), repeats).unwrap();
  assert_eq!(look(&mut w, 1.0, 0), Next::Turns(64));
  // JS took the 63 more turns the answer held for; then timers.
  assert_eq!(look(&mut w, 2.0, 63), Next::Sleep(FIRST_POLL_MS));
  // Past a second, the first timer after the microtask turns is still the short one.
  let mut late = watch();
  assert_eq!(look(&mut late, 0.0, 0), Next::Turns(64));
  assert_eq!(look(&mut late, 1500.0, 63), Next::Sleep(FIRST_POLL_MS));
  assert_eq!(look(&mut late, 1510.0, 0), Next::Sleep(LATER_POLL_MS));
  assert_eq!(look(&mut w, 500.0, 0), Next::Sleep(FIRST_POLL_MS));
  assert_eq!(look(&mut w, 1000.0, 0), Next::Sleep(LATER_POLL_MS));
  assert_eq!(look(&mut w, 900.0, 0), Next::Sleep(LATER_POLL_MS), "once slower, always slower");
  assert_eq!(w.observe(2000.0, Some(Sketch::of(&json!("stale"))), 0), Ok(Next::Ended));
}

#[test]
fn a_change_of_status_is_asked_about_and_the_turns_left_shrink() {
  let mut w = watch();
  assert_eq!(w.observe(0.0, Some(Sketch::of(&json!("starting"))), 0), Ok(Next::Turns(64)));
  assert_eq!(w.observe(0.0, Some(Sketch::of(&running())), 9), Ok(Next::Turns(54)));
  assert_eq!(w.observe(0.0, Some(Sketch::of(&json!("completed"))), 3), Ok(Next::Ended));
}

#[test]
fn a_handle_the_adapter_forgets_is_evicted_after_the_grace_period() {
  let mut w = watch();
  w.ending(Sketch::of(&facts("running", json!({}))));
  // Each null is looked at (a turn that holds for one look), and a handle seen again restarts the grace period.
  assert_eq!(w.observe(0.0, None, 0), Ok(Next::Turns(1)));
  assert_eq!(w.observe(400.0, None, 0), Ok(Next::Turns(1)));
  assert_eq!(w.observe(450.0, Some(Sketch::of(&running())), 0), Ok(Next::Turns(62)));
  assert_eq!(w.observe(460.0, None, 0), Ok(Next::Turns(1)));
  let error = w.observe(960.0, None, 0).unwrap_err();
  assert_eq!(error.message, "Subprocess handle 'sp-1' evicted (step 'gone'): adapter returned null for 500ms");
  assert_eq!(
    error.payload,
    json!({ "kind": "handle_evicted", "handleId": "sp-1", "stepId": "gone", "gracePeriodMs": 500 })
  );
}

#[test]
fn an_await_times_out_only_with_a_finite_positive_timeout() {
  let w = watch();
  for timeout in [Value::Null, json!(0), json!({ "$sketch": "Infinity", "type": "number" })] {
    assert_eq!(w.awaiting(Sketch::of(&timeout)), Ok(None), "{timeout}");
  }
  assert_eq!(w.awaiting(Sketch::undefined()), Ok(None));
  let late = w.awaiting(Sketch::of(&json!(1_099_511_627_776.0))).unwrap().unwrap();
  assert_eq!(late.message, "Step 'gone' failed: Detached spawn timed out after 1099511627776ms");
  assert_eq!(late.payload["cause"], json!({ "message": "Detached spawn timed out after 1099511627776ms" }));
  let refused = w.awaiting(Sketch::of(&json!("100"))).unwrap_err();
  assert_eq!(
    (refused.code.as_str(), refused.message.as_str()),
    ("INVALID_TIMEOUT", "DetachedHandle.await: the timeout is \"100\"; expected a number of milliseconds, 0 or more.")
  );
}

#[test]
fn a_stop_reason_is_a_string_or_nothing() {
  assert_eq!(DetachedWatch::stopping(Sketch::undefined()), Ok(DEFAULT_STOP_REASON));
  assert_eq!(DetachedWatch::stopping(Sketch::of(&json!("done"))), Ok(DEFAULT_STOP_REASON));
  let refused = DetachedWatch::stopping(Sketch::of(&json!(42))).unwrap_err();
  assert_eq!(
    (refused.code.as_str(), refused.message.as_str()),
    ("INVALID_STOP_REASON", "DetachedHandle.stop(reason): reason is 42; expected a string.")
  );
  assert_eq!(
    DetachedWatch::stopping(Sketch::of(&Value::Null)).unwrap_err().message,
    "DetachedHandle.stop(reason): reason is null; expected a string."
  );
}

#[test]
fn ids_js_cannot_put_in_json_cross_as_null_and_print_as_js_does() {
  let undefined = json!({ "$sketch": "undefined", "type": "undefined" });
  let w = DetachedWatch::new(Sketch::of(&undefined), 0.0);
  let error = w.awaiting(Sketch::of(&json!(5))).unwrap().unwrap();
  assert_eq!(
    (error.message.as_str(), &error.payload["stepId"]),
    ("Step 'undefined' failed: Detached spawn timed out after 5ms", &Value::Null)
  );
}

#[test]
fn a_detached_spawn_takes_the_calls_adapter_then_a_run_or_spawn_steps_own_then_the_harnesss() {
  assert_eq!(spawn_adapter(true, "llm", true), "call");
  assert_eq!(spawn_adapter(false, "run", true), "step");
  assert_eq!(spawn_adapter(false, "spawn", true), "step");
  // Only a run or a spawn step's own adapter counts; any other step goes to the harness's.
  assert_eq!(spawn_adapter(false, "loop", true), "harness");
  assert_eq!(spawn_adapter(false, "run", false), "harness");
}
