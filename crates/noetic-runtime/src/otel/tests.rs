use super::*;

fn span(name: &str, id: &str, parent: Option<&str>, attributes: Value) -> Value {
  json!({ "name": name, "traceId": "root", "spanId": id, "parentSpanId": parent, "startTime": 1000.5, "endTime": 1010.25,
    "attributes": attributes, "events": [] })
}

#[test]
fn child_first_spans_wait_for_their_root_and_go_out_parent_first() {
  let mut batcher = OtelBatcher::new(false);
  let hook = json!({ "name": "memory.recall", "traceId": "root", "spanId": "h1", "parentSpanId": "child", "startTime": 1.0,
    "endTime": 2.0, "attributes": { "memory.layer_id": "notes", "cache.epoch": "e1" }, "events": [],
    "memory": { "layerId": "notes", "hook": "recall", "status": "ok", "durationMs": 1.0,
      "budget": { "allocated": 100, "used": 7, "yielded": 93 }, "itemCount": 1 } });
  assert!(batcher.push(vec![hook]).is_empty(), "a hook span waits for its execution's root");
  let child = span("noetic.execution", "child", Some("root"), json!({ "gen_ai.agent.name": "a" }));
  let call =
    span("noetic.model_call", "m1", Some("root"), json!({ "gen_ai.request.model": "gpt", "noetic.status": "ok" }));
  assert!(batcher.push(vec![child, call]).is_empty());
  let twin = span("noetic.context", "root", None, json!({}));
  assert!(batcher.push(vec![twin]).is_empty(), "the JS context span never starts a trace");
  let root = span("noetic.execution", "root", None, json!({ "gen_ai.agent.name": "a" }));
  let out = batcher.push(vec![root]);
  let order: Vec<(&str, Option<&str>)> = out.iter().map(|s| (s.id.as_str(), s.parent.as_deref())).collect();
  assert_eq!(order, [("root", None), ("child", Some("root")), ("h1", Some("child")), ("m1", Some("root"))]);
  assert_eq!(out[0].name, "invoke_agent a");
  assert_eq!(out[0].start_time, 1000.5);
  assert_eq!(out[0].end_time, 1010.25);
  assert_eq!(out[3].name, "chat gpt");
  assert_eq!(out[3].kind, CLIENT);
  let hook = &out[2];
  assert_eq!(hook.name, "memory.recall");
  assert_eq!(hook.attributes["noetic.layer_id"], "notes");
  assert_eq!(hook.attributes["noetic.budget.used"], 7);
  assert_eq!(hook.attributes["noetic.cache.epoch"], "e1");
  assert!(!hook.attributes.contains_key("memory.layer_id"), "memory.* becomes noetic.*");
  assert!(batcher.push(vec![]).is_empty() && batcher.waiting.is_empty());
}

#[test]
fn a_hook_span_hangs_under_the_step_it_ran_in_when_that_step_is_exported() {
  let mut batcher = OtelBatcher::new(false);
  let in_step = span("memory.recall", "h1", Some("root"), json!({ STEP_SPAN: "s1" }));
  let step_gone = span("memory.store", "h2", Some("root"), json!({ STEP_SPAN: "never-sent" }));
  let outside = span("memory.init", "h3", Some("root"), json!({}));
  let step = span("noetic.step", "s1", Some("root"), json!({ "noetic.step_kind": "llm", "noetic.step_id": "ask" }));
  let root = span("noetic.execution", "root", None, json!({ "gen_ai.agent.name": "a" }));
  let out = batcher.push(vec![in_step, step_gone, outside, step, root]);
  let parent = |id: &str| out.iter().find(|s| s.id == id).map(|s| s.parent.clone()).unwrap();
  assert_eq!(parent("h1").as_deref(), Some("s1"), "under its step");
  assert_eq!(parent("h2").as_deref(), Some("root"), "a step that never came: under its context, as M3");
  assert_eq!(parent("h3").as_deref(), Some("root"));
  let at = |id: &str| out.iter().position(|s| s.id == id).unwrap();
  assert!(at("s1") < at("h1"), "the step starts before its hook");
  assert!(out.iter().all(|s| !s.attributes.contains_key(STEP_SPAN)), "the step is the parent, not an attribute");
}

#[test]
fn failures_become_error_status_and_an_exception_event() {
  let mut memory = span("memory.store", "h", Some("c"), json!({ "error.message": "disk full" }));
  memory["memory"] = json!({ "layerId": "l", "hook": "store", "status": "timeout", "durationMs": 20, "error": { "message": "Timeout after 20ms" } });
  let mapped = map_span(&memory, false);
  assert_eq!(mapped.status, Some(OtelStatus { code: ERROR, message: "Timeout after 20ms".into() }));
  assert_eq!(mapped.attributes["error.type"], "timeout");
  assert_eq!(mapped.events.len(), 1);
  assert_eq!(mapped.events[0].name, "exception");
  assert_eq!(mapped.events[0].attributes["exception.message"], "Timeout after 20ms");
  let ok = map_span(&span("noetic.execution", "x", None, json!({ "noetic.status": "ok" })), false);
  assert!(ok.status.is_none() && ok.events.is_empty());
}

#[test]
fn content_only_when_asked_and_user_spans_keep_their_names() {
  let call =
    span("noetic.model_call", "m", None, json!({ "gen_ai.output.messages": "[]", "gen_ai.usage.input_tokens": 3 }));
  assert!(!map_span(&call, false).attributes.contains_key("gen_ai.output.messages"));
  assert_eq!(map_span(&call, true).attributes["gen_ai.output.messages"], "[]");
  let tool =
    span("noetic.tool_call", "t", Some("c"), json!({ "gen_ai.tool.name": "brew", "gen_ai.tool.call.arguments": "{}" }));
  let mapped = map_span(&tool, false);
  assert_eq!(mapped.name, "execute_tool brew");
  assert!(!mapped.attributes.contains_key("gen_ai.tool.call.arguments"));
  let own = map_span(&span("checkout", "u", None, json!({ "shop.cart": 2 })), false);
  assert_eq!((own.name.as_str(), own.kind), ("checkout", INTERNAL));
  assert_eq!(own.attributes["shop.cart"], 2);
}

#[test]
fn an_orphan_starts_as_a_root_naming_its_lost_parent_and_waiting_is_bounded() {
  let mut batcher = OtelBatcher::new(false);
  let orphan = span("memory.init", "h", Some("gone"), json!({}));
  let out = batcher.push(vec![orphan, span("noetic.execution", "root", None, json!({}))]);
  assert_eq!(out.len(), 2);
  let orphan = out.iter().find(|s| s.id == "h").expect("the orphan goes out with its trace's root");
  assert_eq!(orphan.parent, None);
  assert_eq!(orphan.attributes["noetic.parent_span_id"], "gone");
  let many = (0..=MAX_WAITING).map(|n| span("memory.init", &format!("h{n}"), Some("c"), json!({}))).collect();
  assert_eq!(batcher.push(many).len(), MAX_WAITING + 1);
  assert_eq!(batcher.count, 0);
}

#[test]
fn a_step_is_named_by_its_kind_and_id_and_an_execution_keeps_the_users_attribute_names() {
  let step = span(
    "noetic.step",
    "s",
    Some("root"),
    json!({ "noetic.step_id": "plan", "noetic.step_kind": "loop", "noetic.status": "error", "error.message": "no" }),
  );
  let mapped = map_span(&step, false);
  assert_eq!((mapped.name.as_str(), mapped.kind), ("step loop plan", INTERNAL));
  assert_eq!(mapped.status, Some(OtelStatus { code: ERROR, message: "no".into() }));
  assert_eq!(mapped.attributes["error.type"], "error");
  let execution = span("noetic.execution", "e", None, json!({ "customer.tier": "gold", "noetic.status": "ok" }));
  assert_eq!(map_span(&execution, false).attributes["customer.tier"], "gold", "set on ctx.span, kept as named");
}
