use serde_json::{Value, json};

use super::*;
use crate::js_layout::Entry;

const T0: &str = "2026-01-01T00:00:00.000Z";
const T1: &str = "2026-01-01T00:00:01.000Z";

fn function() -> Value {
  json!({ "$sketch": "a function", "type": "function" })
}

fn object() -> Value {
  json!({ "$sketch": "an object", "type": "object", "methods": [] })
}

fn adapter(storage: bool) -> InMemorySubprocess {
  let store = json!({ "$sketch": "a Store", "type": "object", "methods": ["get", "set", "delete", "list"] });
  let options = if storage { json!({ "storage": store }) } else { json!({}) };
  InMemorySubprocess::new(Sketch::of(&options)).unwrap()
}

fn step(extra: Value) -> Value {
  let mut facts = json!({ "request": object(), "kind": "step", "stepId": "greet" });
  facts.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
  facts
}

fn spawn(adapter: &mut InMemorySubprocess, facts: Value) -> Spawned {
  adapter.spawn(Sketch::of(&facts), T0).unwrap()
}

#[test]
fn a_step_runs_its_executor_else_the_step_runner_else_the_harness() {
  let mut a = adapter(false);
  let runs = |a: &mut InMemorySubprocess, extra| spawn(a, step(extra)).runs;
  assert_eq!(runs(&mut a, json!({ "executor": function(), "stepRunner": function() })), Runner::Executor);
  assert_eq!(runs(&mut a, json!({ "stepRunner": function(), "replayer": function() })), Runner::StepRunner);
  assert_eq!(runs(&mut a, json!({ "replayer": function() })), Runner::Replayer);
  // A stepRunner that is there but not truthy is chosen, and then there is nothing to run.
  assert_eq!(runs(&mut a, json!({ "stepRunner": 0, "replayer": function() })), Runner::Nothing);
  let orphan = spawn(&mut a, step(json!({})));
  assert_eq!(orphan.runs, Runner::Nothing);
  assert_eq!(
    orphan.fails.as_deref(),
    Some(
      "In-memory subprocess adapter has no executor for step \"greet\". Provide a stepRunner option or dispatch via AgentHarness."
    )
  );
}

#[test]
fn a_spawn_answers_the_handle_its_metadata_and_with_storage_a_steps_manifest() {
  let mut plain = adapter(false);
  let step_plan = spawn(&mut plain, step(json!({ "executor": function() })));
  assert_eq!(step_plan.handle.status, SubprocessStatus::Running);
  assert_eq!((step_plan.handle.started_at.as_str(), step_plan.handle.updated_at.as_str()), (T0, T0));
  assert_eq!(step_plan.kind, HandleKind::Step);
  assert_eq!(step_plan.manifest, None);
  assert!(plain.is_alive(&step_plan.handle.id));

  let mut durable = adapter(true);
  let with_manifest = spawn(&mut durable, step(json!({ "executor": function() })));
  let id = &with_manifest.handle.id;
  let manifest = with_manifest.manifest.unwrap();
  assert_eq!(manifest.key, format!("inMemorySubprocess:manifest:{id}"));
  assert_eq!(manifest.warning, format!("createInMemorySubprocessAdapter: failed to persist manifest for \"{id}\":"));
  assert_eq!(manifest.layout, shapes::manifest(id, T0));

  // Anything but `kind: 'step'` is a process: its `run` option runs it, and it leaves no manifest.
  let process = spawn(&mut durable, json!({ "request": object(), "kind": "process" }));
  assert_eq!((process.runs, process.kind, process.manifest), (Runner::Run, HandleKind::Process, None));
  let shown = serde_json::to_value(spawn(&mut durable, json!({ "request": [] }))).unwrap();
  assert_eq!((&shown["runs"], &shown["kind"]), (&json!("run"), &json!("process")));
  assert_eq!(shown.get("fails"), None);
}

#[test]
fn a_request_that_is_not_an_object_is_refused_and_registers_nothing() {
  let mut a = adapter(false);
  for (request, shown) in [(Value::Null, "null"), (json!("planner"), "\"planner\""), (function(), "a function")] {
    let error = a.spawn(Sketch::of(&json!({ "request": request })), T0).unwrap_err();
    assert_eq!(error.code, "INVALID_SUBPROCESS_REQUEST");
    assert_eq!(error.message, format!("subprocess.spawn(request): the request is {shown}; expected an object."));
  }
  assert!(a.listing().live.is_empty());
  let spawned = spawn(&mut a, step(json!({})));
  a.abandon(&spawned.handle.id);
  assert!(a.listing().live.is_empty());
}

#[test]
fn a_run_that_ends_says_what_its_value_is_and_clears_the_manifest() {
  let mut a = adapter(true);
  let step_id = spawn(&mut a, step(json!({}))).handle.id;
  let done = a.settle(&step_id, true, None, T1).unwrap();
  assert_eq!((done.handle.status, done.ended, done.adds), (SubprocessStatus::Completed, true, Some("result")));
  assert_eq!(done.forget.unwrap().key, manifest_key(&step_id));
  assert!(!a.is_alive(&step_id));
  assert!(a.has_ended(&step_id));

  // A process that completes keeps its metadata as it was.
  let process_id = spawn(&mut a, json!({ "request": object() })).handle.id;
  let process = a.settle(&process_id, true, None, T1).unwrap();
  assert_eq!(process.adds, None);
  assert_eq!(
    process.forget.map(|f| f.warning),
    Some(format!("createInMemorySubprocessAdapter: failed to clear manifest for \"{process_id}\":"))
  );

  let broken = spawn(&mut a, step(json!({}))).handle.id;
  let failed = a.settle(&broken, false, Some("SOMETHING"), T1).unwrap();
  assert_eq!(
    (failed.handle.status, failed.adds, failed.forget.is_some()),
    (SubprocessStatus::Failed, Some("error"), true)
  );

  // A step this process has not built keeps its manifest for a later reattach.
  let unbuilt = spawn(&mut a, step(json!({}))).handle.id;
  assert_eq!(a.settle(&unbuilt, false, Some(STEP_NOT_REGISTERED), T1).unwrap().forget, None);
  // Without storage there is nothing to clear.
  let mut plain = adapter(false);
  let id = spawn(&mut plain, step(json!({}))).handle.id;
  assert_eq!(plain.settle(&id, true, None, T1).unwrap().forget, None);
}

#[test]
fn a_stop_records_its_reason_and_a_late_result_changes_nothing() {
  let mut a = adapter(true);
  let id = spawn(&mut a, step(json!({}))).handle.id;
  let stopped = a.stop(&id, T1).unwrap();
  assert_eq!(
    (stopped.handle.status, stopped.ended, stopped.adds),
    (SubprocessStatus::Stopped, true, Some("stopReason"))
  );
  assert!(stopped.forget.is_some());
  assert_eq!(a.settle(&id, true, None, T1), None);
  assert_eq!(a.stop("subprocess-unknown", T1), None);
  assert_eq!(InMemorySubprocess::unsupported("pause"), "In-memory subprocess adapter does not support pause.");
}

#[test]
fn reattach_reads_a_step_manifest_and_replays_it_when_someone_can_run_it() {
  let manifest = json!({
    "kind": "step", "handleId": "subprocess-old", "stepId": "greet", "executionId": "e", "startedAt": T0,
    "overrides": object(), "serializedInput": "Ada", "reattachMode": "replay",
  });
  let plain = adapter(false);
  assert_eq!(plain.manifest_key(Sketch::of(&json!("subprocess-old"))), None, "without storage there is none");

  let mut a = adapter(true);
  assert_eq!(a.manifest_key(Sketch::of(&json!(7))).as_deref(), Some("inMemorySubprocess:manifest:7"));
  let kept = a.reattach(Sketch::of(&json!({ "manifest": manifest })), T1).unwrap();
  assert_eq!((kept.handle.id.as_str(), kept.handle.started_at.as_str()), ("subprocess-old", T0));
  assert_eq!(kept.runs, None);
  assert!(a.is_alive("subprocess-old"));

  let replayed = a.reattach(Sketch::of(&json!({ "manifest": manifest, "replayer": function() })), T1).unwrap();
  assert_eq!(replayed.runs, Some(Runner::Replayer));
  // A stepRunner that is not truthy still makes a replay, which then has nothing to run.
  let odd = a.reattach(Sketch::of(&json!({ "manifest": manifest, "stepRunner": 0, "replayer": function() })), T1);
  assert_eq!(odd.unwrap().runs, Some(Runner::Nothing));

  assert_eq!(a.reattach(Sketch::of(&json!({ "manifest": "junk" })), T1), None);
  assert_eq!(a.reattach(Sketch::of(&json!({ "manifest": Value::Null })), T1), None);
}

#[test]
fn list_live_gives_live_handles_then_each_other_manifest_once() {
  let mut a = adapter(true);
  let live = spawn(&mut a, step(json!({}))).handle.id;
  let listing = a.listing();
  assert_eq!((listing.live.clone(), listing.prefix), (vec![live.clone()], Some(MANIFEST_PREFIX)));
  let manifest = |id: &str| json!({ "kind": "step", "handleId": id, "stepId": "s", "executionId": "e", "startedAt": T0, "overrides": object() });
  let read =
    json!([manifest(&live), "junk", manifest("subprocess-b"), manifest("subprocess-b"), manifest("subprocess-c")]);
  let listed = a.listed(Sketch::of(&read), &listing.live, T1);
  let found: Vec<_> = listed.iter().map(|f| (f.at, f.handle.id.as_str(), f.handle.status)).collect();
  assert_eq!(found, [(2, "subprocess-b", SubprocessStatus::Running), (4, "subprocess-c", SubprocessStatus::Running)]);
  assert_eq!(listed[0].handle.updated_at, T1);
  assert!(!a.is_alive("subprocess-b"), "listing takes no handle in");
  assert_eq!(adapter(false).listing().prefix, None);
}

#[test]
fn options_name_what_is_wrong() {
  let error = |value| check_options(Sketch::of(&value)).unwrap_err().message;
  assert_eq!(error(json!(3)), "createInMemorySubprocessAdapter options are 3; expected an object.");
  assert_eq!(error(json!({ "run": 1 })), "createInMemorySubprocessAdapter run is 1; expected a function.");
  let storage = json!({ "storage": { "$sketch": "a Store", "type": "object", "methods": ["get", "list"] } });
  assert_eq!(error(storage), "createInMemorySubprocessAdapter storage has no set, delete methods.");
  assert!(check_options(Sketch::of(&json!({}))).is_ok());
  assert!(adapter(false).runs_inline());
  assert!(!adapter(true).runs_inline());
}

#[test]
fn the_fixed_layouts_cross_once_by_name() {
  let layouts = serde_json::to_value(Layouts::new()).unwrap();
  let names: Vec<_> = layouts.as_object().unwrap().keys().cloned().collect();
  assert_eq!(names, ["step", "process", "manifestMetadata", "replayRequest", "error", "value"]);
  assert_eq!(layouts["error"][3], json!({ "op": "copyIfIn", "key": "noeticError", "from": "noeticError" }));
  assert_eq!(Layouts::new().value, vec![Entry::Text { key: "message" }]);
}
