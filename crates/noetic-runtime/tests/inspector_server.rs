//! The inspector's server over a real socket: what it answers and with which headers, what it refuses, its live feed,
//! and starting and closing it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use noetic_runtime::harness::inspect::options::InspectorOptions;
use noetic_runtime::harness::inspect::{CallUsage, HistoryRecord, ModelCallRecord, WindowItems, WindowRecord};
use noetic_runtime::harness::{Harness, HarnessConfig, Model};
use noetic_runtime::host::*;
use noetic_runtime::memory::lifecycle::MemoryEnv;
use noetic_runtime::memory::registry::{LayerImpl, LayerSet, RawBudget, RawLayer, RawTimeouts};
use noetic_runtime::memory::state::{DiagnosticSink, StateStore};
use noetic_runtime::storage::{InMemoryStorage, Storage};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct NoHost;

#[async_trait]
impl Host for NoHost {
  async fn run_hooks(&self, batch: HookBatch) -> Vec<HookReply> {
    batch.calls.iter().map(|_| HookReply::of(HookStatus::Ok)).collect()
  }
  async fn run_step(&self, _call: StepCall) -> Result<StepValue, HostError> {
    unreachable!()
  }
  async fn call_model(&self, _call: ModelCall) -> Result<ModelReply, HostError> {
    unreachable!()
  }
  async fn call_tool(&self, _call: ToolCall) -> Result<ToolReply, HostError> {
    unreachable!()
  }
  async fn eval_until(&self, _call: UntilCall) -> Result<Verdict, HostError> {
    unreachable!()
  }
  fn release_context(&self, _context: &str) {}
}

struct Quiet;
impl DiagnosticSink for Quiet {
  fn diagnostic(&self, _layer_id: &str, _hook: &str, _message: &str) {}
}

fn layer(id: &str, slot: f64, scope: &str) -> RawLayer {
  RawLayer {
    id: Some(id.into()),
    slot: Some(slot),
    scope: Some(scope.into()),
    budget: RawBudget::Range { min: Some(0.0), max: Some(100.0) },
    hooks: [("init".to_owned(), "function".to_owned())].into_iter().collect(),
    timeouts: RawTimeouts::default(),
    on_init_error: None,
    recall_mode: None,
    placement: None,
    provides: vec![],
    imp: LayerImpl::Host(1),
  }
}

async fn harness() -> Arc<Harness> {
  let storage = Arc::new(InMemoryStorage::new());
  storage.set("layers/notes/T/state", json!({ "n": 1, "x": 1.5e21 })).await.unwrap();
  let env = MemoryEnv {
    host: Arc::new(NoHost),
    states: Arc::new(StateStore::new()),
    sink: Arc::new(Quiet),
    storage: storage as Arc<dyn Storage>,
  };
  let layers = LayerSet::register(vec![layer("notes", 10.0, "thread"), layer("scratch", 2.5, "execution")]).unwrap();
  let config = HarnessConfig {
    name: "inspected".into(),
    layers: Arc::new(layers),
    projection: None,
    model: Model::None,
    force_atomic_recall: false,
    initial_step: None,
    tools: Vec::new(),
  };
  Arc::new(Harness::new(config, env))
}

fn options() -> InspectorOptions {
  InspectorOptions { host: "127.0.0.1".into(), port: 0, turns_per_thread: 20, threads: 200 }
}

fn names() -> Vec<(String, String)> {
  vec![("notes".into(), "\"Notes\"".into())]
}

/// The server's port and the page's token, from its URL.
fn address(url: &str) -> (u16, String) {
  let rest = url.strip_prefix("http://127.0.0.1:").expect("a loopback URL");
  let (port, token) = rest.split_once("/?token=").expect("a token");
  (port.parse().unwrap(), token.to_owned())
}

struct Answer {
  status: u16,
  head: String,
  body: String,
}

impl Answer {
  fn header(&self, name: &str) -> Option<&str> {
    self.head.lines().find_map(|line| {
      let (key, value) = line.split_once(": ")?;
      key.eq_ignore_ascii_case(name).then_some(value)
    })
  }
}

/// One request on its own connection, with the Host header a browser would send unless `head` names another.
async fn ask(port: u16, method: &str, target: &str, head: &str) -> Answer {
  let mut stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connects");
  let host = if head.contains("Host:") { String::new() } else { format!("Host: 127.0.0.1:{port}\r\n") };
  let request = format!("{method} {target} HTTP/1.1\r\n{host}{head}Connection: close\r\n\r\n");
  stream.write_all(request.as_bytes()).await.unwrap();
  let mut response = String::new();
  stream.read_to_string(&mut response).await.unwrap();
  let (head, body) = response.split_once("\r\n\r\n").expect("a head");
  let status = head.split(' ').nth(1).unwrap().parse().unwrap();
  Answer { status, head: head.to_owned(), body: body.to_owned() }
}

fn record(harness: &Harness, thread: &str) -> ModelCallRecord {
  ModelCallRecord {
    id: harness.inspector.next_id(),
    thread_id: thread.to_owned(),
    resource_id: None,
    turn: "turn".to_owned(),
    context: "ctx".to_owned(),
    step_id: "ask".to_owned(),
    model: "m".to_owned(),
    at: 1.0,
    duration_ms: 1.0,
    window: WindowRecord::default(),
    layers: vec![],
    history: HistoryRecord::default(),
    usage: CallUsage::default(),
    steering: None,
    tool_calls: vec![],
    window_items: WindowItems::default(),
    spans: Vec::new(),
    cache: None,
  }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_answers_the_page_and_its_api_with_the_token_and_refuses_the_rest() {
  let harness = harness().await;
  let url = harness.start_inspector(options(), names()).unwrap().await.unwrap();
  let (port, token) = address(&url);
  assert_eq!(token.len(), 48);

  let page = ask(port, "GET", &format!("/?token={token}"), "").await;
  assert_eq!(page.status, 200);
  assert!(page.body.contains("<title>Noetic inspector</title>") && !page.body.contains("/* app.js */"));
  assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
  assert!(page.header("content-security-policy").unwrap().contains("connect-src 'self'"));
  for (name, value) in [
    ("cache-control", "no-store"),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-resource-policy", "same-origin"),
  ] {
    assert_eq!(page.header(name), Some(value), "{name}");
  }

  let snapshot = ask(port, "GET", &format!("/api/snapshot?token={token}"), "").await;
  assert_eq!(snapshot.header("content-type"), Some("application/json; charset=utf-8"));
  assert_eq!(
    snapshot.body,
    r#"{"harness":"inspected","layers":[{"id":"notes","name":"Notes","slot":10,"scope":"thread","recallMode":"atomic"},{"id":"scratch","slot":2.5,"scope":"execution","recallMode":"atomic"}],"recorder":{"limits":{"turnsPerThread":20,"threads":200},"threads":[]}}"#
  );
  let states = ask(port, "GET", &format!("/api/state?token={token}&thread=T"), "").await;
  assert_eq!(
    states.body,
    r#"[{"id":"notes","scope":"thread","scopeKey":"T","state":{"n":1,"x":1.5e+21}},{"id":"scratch","scope":"execution","scopeKey":null,"state":null}]"#
  );
  let call = ask(port, "GET", &format!("/api/call?token={token}&id=7"), "").await;
  assert_eq!((call.status, call.body.as_str()), (404, "That call is no longer kept."));
  harness.inspector.record(record(&harness, "T"));
  let id = harness.inspector.next_id() - 1;
  let call = ask(port, "GET", &format!("/api/call?token={token}&id=%20{id}%20"), "").await;
  assert_eq!(serde_json::from_str::<Value>(&call.body).unwrap()["id"], json!(id));

  let refused = [
    ask(port, "GET", "/api/snapshot", "").await,
    ask(port, "POST", &format!("/?token={token}"), "Content-Length: 0\r\n").await,
    ask(port, "GET", &format!("/?token={token}"), "Host: rebound.example:80\r\n").await,
    ask(port, "GET", &format!("/?token={token}"), "Origin: http://evil.example\r\n").await,
    ask(port, "GET", &format!("/?token={token}"), "Sec-Fetch-Site: cross-site\r\n").await,
    ask(port, "GET", &format!("/nothing?token={token}"), "").await,
    ask(port, "GET", &format!("//?token={token}"), "").await,
  ];
  let seen: Vec<(u16, &str)> = refused.iter().map(|a| (a.status, a.body.as_str())).collect();
  assert_eq!(
    seen,
    [
      (401, "This URL needs the token startInspector gave."),
      (405, "The inspector is read-only."),
      (403, "Unknown host."),
      (403, "Other origins are refused."),
      (403, "Other sites are refused."),
      (404, "Not found."),
      (400, "Bad request."),
    ]
  );
  assert!(refused.iter().all(|a| a.header("x-frame-options") == Some("DENY")));

  let again = harness.start_inspector(options(), names()).err().expect("refused while open");
  assert_eq!(again.code, "INSPECTOR_ALREADY_OPEN");
  assert_eq!(again.message, format!("An inspector is already open for this harness at http://127.0.0.1:{port}."));

  harness.close_inspector().await;
  assert!(TcpStream::connect(("127.0.0.1", port)).await.is_err(), "no longer listening");
  assert_eq!(json(&harness.inspector.snapshot())["threads"], json!([]), "what it recorded is forgotten");
  harness.close_inspector().await;
  let reopened = harness.start_inspector(options(), names()).unwrap().await.unwrap();
  assert_ne!(reopened, url, "a fresh token");
  harness.close_inspector().await;
}

fn json(text: &str) -> Value {
  serde_json::from_str(text).unwrap()
}

/// Reads from `stream` until what was read holds `wanted`.
async fn read_until(stream: &mut TcpStream, read: &mut String, wanted: &str) {
  let mut buffer = [0u8; 4096];
  while !read.contains(wanted) {
    let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buffer)).await.expect("in time").unwrap();
    assert!(n > 0, "the feed ended before {wanted:?}: {read}");
    read.push_str(&String::from_utf8_lossy(&buffer[..n]));
  }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_feed_records_for_a_page_only_while_one_listens_and_ends_on_close() {
  let harness = harness().await;
  let url = harness.start_inspector(options(), names()).unwrap().await.unwrap();
  let (port, token) = address(&url);
  assert!(!harness.inspector.record(record(&harness, "A")), "no page: nothing goes to a feed");

  let mut page = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
  let request = format!("GET /api/events?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
  page.write_all(request.as_bytes()).await.unwrap();
  let mut read = String::new();
  read_until(&mut page, &mut read, ": connected\n\n").await;
  assert!(read.contains("content-type: text/event-stream; charset=utf-8"), "{read}");
  assert!(harness.inspector.record(record(&harness, "B")), "a page listens: the feed task is told");
  read_until(&mut page, &mut read, "event: calls\ndata: [").await;
  read_until(&mut page, &mut read, "\"threadId\":\"B\"").await;
  drop(page);
  // The page left: once its connection is seen to end, calls are kept but no longer fed.
  let mut fed = true;
  for _ in 0..400 {
    tokio::time::sleep(Duration::from_millis(50)).await;
    harness.inspector.take_feed();
    fed = harness.inspector.record(record(&harness, "C"));
    if !fed {
      break;
    }
  }
  assert!(!fed, "a page that left stops the feed");

  let mut page = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
  page.write_all(request.as_bytes()).await.unwrap();
  let mut read = String::new();
  read_until(&mut page, &mut read, ": connected\n\n").await;
  tokio::time::timeout(Duration::from_secs(20), harness.close_inspector())
    .await
    .expect("close does not wait on a feed");
  let mut rest = Vec::new();
  page.read_to_end(&mut rest).await.unwrap();
  assert!(String::from_utf8_lossy(&rest).ends_with("0\r\n\r\n"), "the feed was ended: {rest:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_in_use_is_a_listen_failure_and_frees_the_inspector_to_try_again() {
  let harness = harness().await;
  let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
  let port = taken.local_addr().unwrap().port();
  let on_taken = InspectorOptions { port, ..options() };
  let error = harness.start_inspector(on_taken, names()).unwrap().await.unwrap_err();
  assert_eq!(error.code, "INSPECTOR_LISTEN_FAILED");
  assert_eq!(
    error.message,
    format!(
      "startInspector could not listen on 127.0.0.1:{port}: listen EADDRINUSE: address already in use 127.0.0.1:{port}"
    )
  );
  assert_eq!(error.hint, "Pick another port, or 0 for any free one.");
  let url = harness.start_inspector(options(), names()).unwrap().await.unwrap();
  assert!(url.starts_with("http://127.0.0.1:"));
  harness.close_inspector().await;
}
