use serde_json::Value;

use super::*;
use crate::memory::trace::{SpanStatus, TraceTarget};

fn call(inspector: &Inspector, thread: &str, turn: &str, at: f64) -> ModelCallRecord {
  let layer = |id: &str| LayerRecord {
    id: id.to_owned(),
    slot: 1.0,
    scope: "thread",
    recall_mode: "atomic",
    budget: 100.0,
    used: Some(10.0),
    yielded: 90.0,
    items: vec![std::sync::Arc::new(crate::items::input_message("m", "developer", "remembered"))],
    kept: 1,
    status: "ok",
    error: None,
  };
  ModelCallRecord {
    id: inspector.next_id(),
    thread_id: thread.to_owned(),
    resource_id: None,
    turn: turn.to_owned(),
    context: turn.to_owned(),
    step_id: "ask".to_owned(),
    model: "m".to_owned(),
    at,
    duration_ms: 1.0,
    window: WindowRecord::default(),
    layers: vec![layer("good"), layer("broken")],
    history: HistoryRecord::default(),
    usage: CallUsage::default(),
    steering: None,
    tool_calls: vec![ToolCallRecord {
      call_id: "c1".to_owned(),
      name: "t".to_owned(),
      arguments: "{}".to_owned(),
      steering: None,
    }],
    window_items: WindowItems::default(),
    spans: Vec::new(),
    cache: None,
  }
}

fn span(thread: &str, turn: &str, layer: &str, hook: HookKind, status: &crate::host::HookStatus) -> HookSpan {
  let target = TraceTarget { trace_id: turn, context: turn, thread_id: thread, step_span: None };
  HookSpan::timed(target, layer, hook, 0.5, status)
}

/// Open, with a page reading the live feed.
fn open(limits: InspectLimits) -> Inspector {
  let inspector = Inspector::default();
  inspector.set_open(true, limits);
  inspector.set_listening(true);
  inspector
}

fn json(text: &str) -> Value {
  serde_json::from_str(text).expect("json")
}

use crate::memory::HookKind;

#[test]
fn closed_it_records_nothing() {
  let inspector = Inspector::default();
  assert!(!inspector.record(call(&inspector, "T", "turn", 0.0)));
  assert_eq!(json(&inspector.snapshot())["threads"], serde_json::json!([]));
  assert_eq!(inspector.take_feed(), "[]");
}

#[test]
fn a_call_takes_its_layers_status_from_the_recall_spans_and_its_tool_decisions() {
  let inspector = open(InspectLimits::default());
  inspector.spans(vec![
    span("T", "turn", "good", HookKind::Recall, &crate::host::HookStatus::Ok),
    span("T", "turn", "broken", HookKind::Recall, &crate::host::HookStatus::Threw("recall exploded".into())),
  ]);
  inspector
    .tool_decision("c1", SteeringRecord { action: "deny", guidance: Some("no".into()), by: vec!["guard".into()] });
  let made = call(&inspector, "T", "turn", crate::memory::trace::now_ms() + 10.0);
  let id = made.id;
  assert!(inspector.record(made), "the first record tells the reader");
  let feed = json(&inspector.take_feed());
  let layers = &feed[0]["layers"];
  assert_eq!(layers[0]["status"], "ok");
  assert_eq!(layers[1]["status"], "error");
  assert_eq!(layers[1]["error"], "recall exploded");
  assert_eq!(layers[0]["items"], 1, "the feed counts items, it does not carry them");
  assert_eq!(feed[0]["toolCalls"][0]["steering"]["by"][0], "guard");
  let whole = json(&serde_json::to_string(&inspector.call(id).expect("kept")).unwrap());
  assert_eq!(whole["layers"][0]["items"][0]["content"][0]["text"], "remembered");
  assert_eq!(whole["spans"].as_array().map(Vec::len), Some(2));
  assert!(inspector.call(id + 100).is_none());
}

#[test]
fn it_keeps_the_newest_turns_of_the_most_recently_active_threads() {
  let limits = InspectLimits { turns_per_thread: 2, threads: 2, ..InspectLimits::default() };
  let inspector = open(limits);
  for turn in ["t1", "t2", "t3"] {
    inspector.record(call(&inspector, "A", turn, 0.0));
  }
  inspector.record(call(&inspector, "B", "b1", 0.0));
  inspector.record(call(&inspector, "A", "t4", 0.0));
  inspector.record(call(&inspector, "C", "c1", 0.0));
  let snapshot = json(&inspector.snapshot());
  let threads: Vec<&str> =
    snapshot["threads"].as_array().unwrap().iter().map(|t| t["threadId"].as_str().unwrap()).collect();
  assert_eq!(threads, ["C", "A"], "B was the least recently active");
  let turns: Vec<&str> =
    snapshot["threads"][1]["turns"].as_array().unwrap().iter().map(|t| t["turn"].as_str().unwrap()).collect();
  assert_eq!(turns, ["t3", "t4"]);
  inspector.set_open(false, limits);
  assert_eq!(json(&inspector.snapshot())["threads"], serde_json::json!([]), "closing forgets");
}

#[test]
fn spans_beyond_a_turns_limit_drop_the_oldest() {
  let inspector = open(InspectLimits { spans_per_turn: 3, ..InspectLimits::default() });
  let spans: Vec<HookSpan> =
    (0..5).map(|i| span("T", "turn", &format!("l{i}"), HookKind::Store, &crate::host::HookStatus::Ok)).collect();
  inspector.spans(spans);
  let made = call(&inspector, "T", "turn", 0.0);
  let id = made.id;
  inspector.record(made);
  let whole = json(&serde_json::to_string(&inspector.call(id).unwrap()).unwrap());
  let kept: Vec<&str> = whole["spans"].as_array().unwrap().iter().map(|s| s["layerId"].as_str().unwrap()).collect();
  assert_eq!(kept, ["l2", "l3", "l4"]);
  assert_eq!(SpanStatus::Timeout.name(), "timeout");
}

#[test]
fn the_history_kept_is_read_back_from_the_log_while_it_still_holds_it() {
  let item = |text: &str| std::sync::Arc::new(crate::items::input_message(text, "user", text));
  let mut log = crate::items::ItemLog::new();
  for text in ["a", "b", "c", "d"] {
    log.push(item(text));
  }
  let runs = vec![
    HistoryRun::Log { start: 1, end: 3, first: std::sync::Arc::clone(log.get(1).unwrap()) },
    HistoryRun::Made(item("made")),
  ];
  let mut window = WindowItems { history_runs: runs.clone(), ..WindowItems::default() };
  window.read_history(Some(&log));
  let texts: Vec<&str> = window.history.iter().map(|i| i.id().unwrap_or_default()).collect();
  assert_eq!(texts, ["b", "c", "made"]);
  assert!(!window.history_gone);

  let mut replaced = crate::items::ItemLog::new();
  for text in ["x", "y", "z"] {
    replaced.push(item(text));
  }
  let mut window = WindowItems { history_runs: runs, ..WindowItems::default() };
  window.read_history(Some(&replaced));
  assert!(window.history_gone, "a seed replaced the history: its items are not shown as this call's");
  assert!(window.history.is_empty());
}

#[test]
fn the_feed_summary_is_the_record_less_its_texts_and_a_feed_nobody_reads_is_let_go_unwritten() {
  let inspector = open(InspectLimits::default());
  let mut made = call(&inspector, "T \"quoted\"", "turn", 1_795_000_000_000.5);
  made.resource_id = Some("r/1".into());
  made.steering =
    Some(SteeringRecord { action: "guide", guidance: Some("say \"less\"\n".into()), by: vec!["a".into(), "b".into()] });
  made.layers[1].used = None;
  made.layers[1].error = Some("tab\there".into());
  made.window.token_budget = 128_000.0;
  made.usage.input_tokens = 0.25;
  let whole = serde_json::to_value(&made).unwrap();
  inspector.record(made);
  let summary = json(&inspector.take_feed())[0].clone();
  // Everything the record says but its items and window texts, the layers counting their items.
  let mut expected = whole;
  let object = expected.as_object_mut().unwrap();
  object.remove("windowItems");
  for layer in object["layers"].as_array_mut().unwrap() {
    let count = layer["items"].as_array().unwrap().len();
    layer["items"] = count.into();
  }
  // Numbers compared as the doubles JS reads (serde keeps 1 and 1.0 apart).
  fn doubles(value: Value) -> Value {
    match value {
      Value::Number(n) => Value::from(n.as_f64().unwrap()),
      Value::Array(items) => Value::Array(items.into_iter().map(doubles).collect()),
      Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, doubles(v))).collect()),
      other => other,
    }
  }
  assert_eq!(doubles(summary.clone()), doubles(expected));
  assert_eq!(summary["threadId"], "T \"quoted\"");
  assert_eq!(summary["layers"][1]["used"], Value::Null);

  inspector.record(call(&inspector, "T", "turn", 0.0));
  inspector.set_listening(false);
  assert!(!inspector.record(call(&inspector, "T", "turn", 0.0)), "nobody reads the feed: nobody is told");
  assert_eq!(inspector.take_feed(), "[]");
  inspector.set_listening(true);
  assert!(inspector.record(call(&inspector, "T", "turn", 0.0)), "the drop emptied the feed: the next record tells");
  assert_eq!(json(&inspector.take_feed()).as_array().map(Vec::len), Some(1), "only what came after the drop");
}
