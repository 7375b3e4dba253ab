//! temporalMemory's native layer with host callbacks standing in for the user's `now`, `extract` and `search`:
//! what they are asked, and what happens when they throw, answer nonsense or never answer.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use noetic_runtime::host::ExecInfo;
use noetic_runtime::items::Item;
use noetic_runtime::memory::builtin::layers::temporal_memory_layer;
use noetic_runtime::memory::builtin::temporal_memory::TemporalConfig;
use noetic_runtime::memory::native::{HostCallback, NativeLayer, NativeWrite};
use noetic_runtime::memory::registry::LayerImpl;
use serde_json::{Value, json};

/// A callback answering `answer` (or failing with it), recording what it was asked; `None` never answers.
struct Fake {
  answer: Option<Result<Value, String>>,
  asked: Mutex<Vec<Value>>,
}

fn fake(answer: Option<Result<Value, String>>) -> Arc<Fake> {
  Arc::new(Fake { answer, asked: Mutex::new(Vec::new()) })
}

#[async_trait]
impl HostCallback for Fake {
  async fn call(&self, args: Value) -> Result<Value, String> {
    self.asked.lock().unwrap().push(args);
    match &self.answer {
      Some(answer) => answer.clone(),
      None => std::future::pending().await,
    }
  }
}

fn callback(fake: &Arc<Fake>) -> Option<Arc<dyn HostCallback>> {
  Some(Arc::clone(fake) as Arc<dyn HostCallback>)
}

/// March 5th 2024, a Tuesday, 09:07 local time, as the JS face reads a `Date`.
fn clock() -> Arc<Fake> {
  fake(Some(Ok(json!([2024, 3, 5, 2, 9, 7]))))
}

fn native(
  config: TemporalConfig,
  now: Option<Arc<dyn HostCallback>>,
  extract: Option<Arc<dyn HostCallback>>,
  search: Option<Arc<dyn HostCallback>>,
) -> Arc<dyn NativeLayer> {
  match temporal_memory_layer(config, now, extract, search).imp {
    LayerImpl::Native(native) => native,
    LayerImpl::Host(_) => unreachable!("temporalMemory is a built-in"),
  }
}

fn user(text: &str) -> Vec<Arc<Item>> {
  let json = json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": text }] });
  vec![Arc::new(Item::from_json_text(&json.to_string()).unwrap())]
}

fn exec() -> ExecInfo {
  ExecInfo {
    execution_id: "e".into(),
    thread_id: "t".into(),
    resource_id: None,
    depth: 0,
    step_number: 0,
    token_usage: Default::default(),
    cost: 0.0,
    has_model: false,
    trace_id: "e".into(),
    step_span: None,
  }
}

const EAGER: TemporalConfig = TemporalConfig {
  scope: noetic_runtime::memory::Scope::Resource,
  buffer_threshold: 1.0,
  max_facts: 200.0,
  ground_date_time: true,
  inject_ledger: true,
  has_now: false,
  has_extract: false,
  has_search: false,
};

#[tokio::test]
async fn the_extractor_is_asked_with_the_transcript_and_the_configured_clock() {
  let (now, extract) = (clock(), fake(Some(Ok(json!([{ "ts": "2024-05-01", "fact": "moved to Lisbon" }])))));
  let layer = native(EAGER, callback(&now), callback(&extract), None);
  let written = layer.on_item_append(None, &user("I moved to Lisbon in May")).await.unwrap();
  assert_eq!(
    *extract.asked.lock().unwrap(),
    [json!({ "transcript": "I moved to Lisbon in May", "now": "2024/03/05 (Tue) 09:07" })]
  );
  let NativeWrite::Set(state) = written else { panic!("expected a state, got {written:?}") };
  assert_eq!(
    state,
    json!({ "facts": { "2024-05-01": ["moved to Lisbon"] }, "buffer": [], "bufferTokens": 0, "version": 1 })
  );
  // Recall grounds on the same clock and shows the fact.
  let recalled = layer.recall(Some(&state), 800.0, &exec()).await.unwrap().unwrap();
  assert!(recalled.text.starts_with("<current_datetime>\nNow: 2024/03/05 (Tue) 09:07\n"), "{}", recalled.text);
  assert!(recalled.text.ends_with("<remembered_facts>\n- [2024-05-01] moved to Lisbon\n</remembered_facts>"));
  assert_eq!(now.asked.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn an_extractor_that_throws_or_answers_nonsense_fails_the_hook() {
  for (answer, expected) in [
    (Err("rate limited".to_owned()), "rate limited"),
    (Ok(json!({ "facts": [] })), "extract must resolve to a list of { ts, fact }"),
    (Ok(json!([{ "ts": "t" }])), "each fact needs a string ts and fact"),
  ] {
    let layer = native(EAGER, callback(&clock()), callback(&fake(Some(answer))), None);
    let error = layer.on_item_append(None, &user("something worth keeping")).await.unwrap_err();
    assert!(error.contains(expected), "{error}");
  }
}

#[tokio::test]
async fn a_clock_that_answers_nonsense_fails_recall() {
  let layer = native(EAGER, callback(&fake(Some(Ok(json!("soon"))))), None, None);
  let error = layer.recall(None, 200.0, &exec()).await.unwrap_err();
  assert_eq!(error, "temporalMemory: now() must return a valid Date");
  // Without grounding the clock is not asked at all.
  let quiet = fake(Some(Ok(json!("soon"))));
  let layer = native(TemporalConfig { ground_date_time: false, ..EAGER }, callback(&quiet), None, None);
  assert_eq!(layer.recall(None, 200.0, &exec()).await.unwrap(), None);
  assert!(quiet.asked.lock().unwrap().is_empty());
}

#[tokio::test]
async fn search_hands_the_ledger_to_the_searcher_and_returns_its_answer() {
  let state = json!({ "facts": { "2024-05-01": ["moved to Lisbon"], "2023-01-09": ["started at Acme"] } });
  let answer = json!({ "facts": ["moved to Lisbon"], "date": "2024-05-01", "fuzzy": false });
  let search = fake(Some(Ok(answer.clone())));
  let layer = native(EAGER, callback(&clock()), None, callback(&search));
  let (result, write) = layer.call("searchMemory", json!({ "query": "when did I move?" }), Some(&state)).await.unwrap();
  assert_eq!((result, write), (Some(answer), NativeWrite::Unchanged));
  assert_eq!(
    search.asked.lock().unwrap()[0],
    json!({ "query": "when did I move?", "facts": [{ "ts": "2023-01-09", "fact": "started at Acme" }, { "ts": "2024-05-01", "fact": "moved to Lisbon" }], "now": "2024/03/05 (Tue) 09:07" })
  );
  // Without a searcher: the whole ledger, oldest first.
  let plain = native(EAGER, None, None, None);
  let (result, _) = plain.call("searchMemory", json!({ "query": "x" }), Some(&state)).await.unwrap();
  assert_eq!(result, Some(json!({ "facts": ["[2023-01-09] started at Acme", "[2024-05-01] moved to Lisbon"] })));
  assert_eq!(plain.call("searchMemory", json!({}), None).await.unwrap_err(), "searchMemory: query must be a string");
  assert!(plain.call("forget", json!({}), None).await.is_err());
}

#[tokio::test(start_paused = true)]
async fn a_searcher_that_never_answers_times_out() {
  let layer = native(EAGER, callback(&clock()), None, callback(&fake(None)));
  let error = layer.call("searchMemory", json!({ "query": "x" }), None).await.unwrap_err();
  assert_eq!(error, "searchMemory: search did not settle within 60000ms");
}
