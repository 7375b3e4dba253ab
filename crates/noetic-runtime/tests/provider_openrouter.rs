//! The OpenRouter provider against a local HTTP server that plays the Responses API: what is sent (headers, the
//! converted input, hoisted instructions, wire-safe tool names), the tool loop over two rounds, usage and cost,
//! the fallbacks and the errors.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use noetic_runtime::harness::{
  ExecContext, Harness, HarnessConfig, Model, ModelRequest, RunError, RunResult, ToolDef, ToolImpl,
};
use noetic_runtime::host::*;
use noetic_runtime::items::Item;
use noetic_runtime::memory::lifecycle::MemoryEnv;
use noetic_runtime::memory::registry::LayerSet;
use noetic_runtime::memory::state::{DiagnosticSink, StateStore, StateWrite};
use noetic_runtime::provider::{
  DeltaSink, OpenRouter, OpenRouterConfig, ProviderError, ProviderRequest, Round, Timeouts,
};
use noetic_runtime::steps::{LlmStep, ModelParams, Step};
use noetic_runtime::storage::InMemoryStorage;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// Runs the one JS tool of these tests and records the arguments it got.
#[derive(Default)]
struct ToolHost {
  tool_calls: Mutex<Vec<String>>,
}

#[async_trait]
impl Host for ToolHost {
  async fn run_hooks(&self, _batch: HookBatch) -> Vec<HookReply> {
    Vec::new()
  }
  async fn run_step(&self, _call: StepCall) -> Result<StepValue, HostError> {
    unreachable!("no step functions here")
  }
  async fn call_model(&self, _call: ModelCall) -> Result<ModelReply, HostError> {
    unreachable!("the provider answers, not the host")
  }
  async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostError> {
    self.tool_calls.lock().unwrap().push(call.arguments);
    Ok(ToolReply { output: Some("saved".into()), is_error: false, state: StateWrite::Unchanged, item: None })
  }
  async fn eval_until(&self, _call: UntilCall) -> Result<Verdict, HostError> {
    Ok(Verdict { stop: true, reason: None, feedback: None })
  }
  fn release_context(&self, _context: &str) {}
}

struct Quiet;

impl DiagnosticSink for Quiet {
  fn diagnostic(&self, _layer_id: &str, _hook: &str, _message: &str) {}
}

fn harness(server: &MockServer, cache: bool, host: &Arc<ToolHost>) -> Harness {
  let config = OpenRouterConfig {
    api_key: "sk-test-key".into(),
    base_url: Some(format!("{}/api/v1", server.uri())),
    cache,
    ..OpenRouterConfig::default()
  };
  harness_with(config, host)
}

fn harness_with(config: OpenRouterConfig, host: &Arc<ToolHost>) -> Harness {
  let env = MemoryEnv {
    host: Arc::clone(host) as Arc<dyn Host>,
    states: Arc::new(StateStore::new()),
    sink: Arc::new(Quiet),
    storage: Arc::new(InMemoryStorage::new()),
  };
  let model = Model::OpenRouter(OpenRouter::new(config).unwrap());
  Harness::new(
    HarnessConfig {
      name: "t".into(),
      layers: Arc::new(LayerSet::default()),
      projection: None,
      model,
      force_atomic_recall: false,
      initial_step: None,
      tools: Vec::new(),
    },
    env,
  )
}

fn notes_tool() -> ToolDef {
  ToolDef {
    name: "notes/add".into(),
    description: "Remember a note.".into(),
    input_schema: std::sync::Arc::new(json!({ "type": "object", "properties": { "text": { "type": "string" } } })),
    imp: ToolImpl::Host(7),
  }
}

fn step(instructions: Option<&str>, tools: Option<Vec<ToolDef>>, params: ModelParams) -> Step {
  Step::Llm(Box::new(LlmStep {
    id: "ask".into(),
    model: "openai/gpt-4o-mini".into(),
    instructions: instructions.map(str::to_owned),
    tools,
    projection: None,
    lazy: None,
    params,
    output: None,
    emit: Default::default(),
    source: None,
  }))
}

fn context(harness: &Harness, log: &[Value]) -> Arc<ExecContext> {
  let ctx =
    harness.open_context(ExecContext::new("c1".into(), "T".into(), None, 0, None, Arc::new(LayerSet::default())));
  for item in log {
    ctx.state().log.push(Arc::new(Item::from_value(item.clone()).unwrap()));
  }
  ctx
}

fn text_response(id: &str, text: &str, usage: Value) -> Value {
  json!({
    "id": id,
    "object": "response",
    "status": "completed",
    "output": [{
      "type": "message", "id": format!("msg_{id}"), "status": "completed", "role": "assistant",
      "content": [{ "type": "output_text", "text": text, "annotations": [] }],
    }],
    "usage": usage,
  })
}

/// Server-sent events as OpenAI and OpenRouter write them (`event:` then `data:`), after one of OpenRouter's
/// keep-alive comments.
fn sse(events: &[Value]) -> String {
  let mut body = String::from(": OPENROUTER PROCESSING\n\n");
  body.extend(events.iter().map(sse_event));
  body
}

fn sse_event(event: &Value) -> String {
  format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap_or("message"))
}

/// The events a streaming server sends for `response`: created, each output item added, its text in deltas and
/// done, then the terminal event (named by the status) carrying `response` whole.
fn stream_events(response: &Value) -> Vec<Value> {
  let mut events = vec![json!({ "type": "response.created", "response": { "status": "in_progress", "output": [] } })];
  for (index, item) in response["output"].as_array().into_iter().flatten().enumerate() {
    events.push(json!({ "type": "response.output_item.added", "output_index": index, "item": item }));
    for part in item["content"].as_array().into_iter().flatten() {
      for delta in part["text"].as_str().unwrap_or("").split_inclusive(' ') {
        events.push(json!({ "type": "response.output_text.delta", "item_id": item["id"], "delta": delta }));
      }
    }
    events.push(json!({ "type": "response.output_item.done", "output_index": index, "item": item }));
  }
  let status = response["status"].as_str().unwrap_or("completed");
  events.push(json!({ "type": format!("response.{status}"), "response": response }));
  events
}

fn sse_reply(body: String) -> ResponseTemplate {
  ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn streamed_reply(response: Value) -> ResponseTemplate {
  sse_reply(sse(&stream_events(&response)))
}

fn body_of(request: &Request) -> Value {
  serde_json::from_slice(&request.body).unwrap()
}

async fn requests(server: &MockServer) -> Vec<Request> {
  server.received_requests().await.unwrap()
}

#[tokio::test]
async fn the_request_carries_auth_the_cache_header_converted_input_hoisted_instructions_and_wire_tool_names() {
  let server = MockServer::start().await;
  Mock::given(method("POST"))
    .and(path("/api/v1/responses"))
    .respond_with(streamed_reply(text_response("r1", "Hi Ada.", json!({}))))
    .expect(1)
    .mount(&server)
    .await;
  let host = Arc::new(ToolHost::default());
  let harness = harness(&server, true, &host);
  let ctx = context(
    &harness,
    &[
      json!({ "id": "s1", "type": "message", "role": "system", "status": "completed", "content": [{ "type": "input_text", "text": "Be brief." }] }),
      json!({ "id": "u0", "type": "message", "role": "user", "status": "completed", "content": [{ "type": "input_text", "text": "earlier" }] }),
      json!({ "arguments": "{\"text\":\"x\"}", "callId": "call_0", "id": "fc_0", "name": "notes/add", "status": "completed", "type": "function_call" }),
      json!({ "id": "fco_0", "status": "completed", "type": "function_call_output", "callId": "call_0", "output": "ok" }),
      json!({ "id": "a0", "type": "message", "role": "assistant", "status": "completed", "content": [{ "type": "output_text", "text": "Noted." }] }),
      json!({ "type": "reasoning", "id": "rs_0", "summary": [], "encryptedContent": "opaque" }),
    ],
  );
  let params = ModelParams { temperature: Some(0.2), max_tokens: Some(300.0), top_p: None };
  let out = harness
    .run_in(&ctx, &step(Some("You are helpful."), Some(vec![notes_tool()]), params), StepValue::Text("I am Ada".into()))
    .await;
  assert_eq!(out.unwrap(), StepValue::Text("Hi Ada.".into()));

  let sent = requests(&server).await;
  let request = &sent[0];
  assert_eq!(request.headers.get("authorization").unwrap(), "Bearer sk-test-key");
  assert_eq!(request.headers.get("x-openrouter-cache").unwrap(), "true");
  assert_eq!(
    body_of(request),
    json!({
      "model": "openai/gpt-4o-mini",
      "input": [
        { "role": "user", "content": "earlier" },
        { "type": "function_call", "call_id": "call_0", "id": "fc_0", "name": "notes_add", "arguments": "{\"text\":\"x\"}" },
        { "type": "function_call_output", "call_id": "call_0", "output": "ok" },
        { "role": "assistant", "content": "Noted." },
        { "type": "reasoning", "id": "rs_0", "summary": [], "encrypted_content": "opaque" },
        { "role": "user", "content": "I am Ada" },
      ],
      "instructions": "You are helpful.\n\nBe brief.",
      "tools": [{
        "type": "function",
        "name": "notes_add",
        "description": "Remember a note.",
        "parameters": { "type": "object", "properties": { "text": { "type": "string" } } },
        "strict": null,
      }],
      "temperature": 0.2,
      "max_output_tokens": 300,
      "stream": true,
      "service_tier": "auto",
      "store": false,
    })
  );
}

#[tokio::test]
async fn without_cache_there_is_no_cache_header_and_without_tools_no_tools_key() {
  let server = MockServer::start().await;
  Mock::given(method("POST")).respond_with(streamed_reply(text_response("r1", "ok", json!({})))).mount(&server).await;
  let host = Arc::new(ToolHost::default());
  let harness = harness(&server, false, &host);
  let ctx = context(&harness, &[]);
  harness.run_in(&ctx, &step(None, Some(vec![]), ModelParams::default()), StepValue::Text("hi".into())).await.unwrap();
  let request = &requests(&server).await[0];
  assert!(request.headers.get("x-openrouter-cache").is_none());
  let body = body_of(request);
  assert_eq!(body.get("tools"), None);
  assert_eq!(body.get("instructions"), None);
  assert_eq!(body.get("temperature"), None);
}

/// A step with the notes tool, run on `input` against a server that answers `calls` first and `answer` after.
struct ToolRounds {
  server: MockServer,
  host: Arc<ToolHost>,
  ctx: Arc<ExecContext>,
  out: RunResult<StepValue>,
}

async fn tool_rounds(calls: Value, answer: Value, input: &str) -> ToolRounds {
  let server = MockServer::start().await;
  Mock::given(method("POST")).respond_with(streamed_reply(calls)).up_to_n_times(1).mount(&server).await;
  Mock::given(method("POST")).respond_with(streamed_reply(answer)).mount(&server).await;
  let host = Arc::new(ToolHost::default());
  let harness = harness(&server, false, &host);
  let ctx = context(&harness, &[]);
  let out = harness
    .run_in(&ctx, &step(None, Some(vec![notes_tool()]), ModelParams::default()), StepValue::Text(input.into()))
    .await;
  ToolRounds { server, host, ctx, out }
}

#[tokio::test]
async fn a_function_call_runs_the_tool_and_its_output_goes_back_in_the_next_round_with_usage_and_cost_summed() {
  let call = json!({
    "id": "r1",
    "status": "completed",
    "output": [{ "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "notes_add", "arguments": "{\"text\":\"likes tea\"}", "status": "completed" }],
    "usage": { "input_tokens": 100, "output_tokens": 10, "input_tokens_details": { "cached_tokens": 40 }, "cost": 0.002 },
  });
  let usage =
    json!({ "input_tokens": 130, "output_tokens": 5, "input_tokens_details": { "cached_tokens": 100 }, "cost": 0.001 });
  let answer = text_response("r2", "Noted: you like tea.", usage);
  let ToolRounds { server, host, ctx, out, .. } = tool_rounds(call, answer, "I like tea").await;
  assert_eq!(out.unwrap(), StepValue::Text("Noted: you like tea.".into()));

  // The sanitized name found the tool; it ran once with the model's arguments.
  assert_eq!(*host.tool_calls.lock().unwrap(), ["{\"text\":\"likes tea\"}"]);
  let sent = requests(&server).await;
  assert_eq!(sent.len(), 2);
  let second = body_of(&sent[1]);
  assert_eq!(
    second["input"],
    json!([
      { "role": "user", "content": "I like tea" },
      { "type": "function_call", "call_id": "call_1", "id": "fc_1", "name": "notes_add", "arguments": "{\"text\":\"likes tea\"}" },
      { "type": "function_call_output", "call_id": "call_1", "output": "saved" },
    ])
  );

  let state = ctx.state();
  let log: Vec<Value> = state.log.items().iter().map(|item| Value::Object(item.json().clone())).collect();
  // The log holds the items camelCase, as upstream's SDK parses them.
  assert_eq!(log[1]["type"], "function_call");
  assert_eq!(log[1]["callId"], "call_1");
  assert_eq!(log[1].get("call_id"), None);
  // The output item's id is a fresh UUID, as upstream's.
  let id = log[2]["id"].as_str().expect("an id").to_owned();
  assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
  assert_eq!(
    log[2],
    json!({ "id": id, "status": "completed", "type": "function_call_output", "callId": "call_1", "output": "saved" })
  );
  assert_eq!(log[3]["content"][0]["text"], "Noted: you like tea.");
  assert_eq!((state.tokens.input, state.tokens.output, state.tokens.cached), (230.0, 15.0, 140.0));
  assert!((state.cost - 0.003).abs() < 1e-12);
}

#[tokio::test]
async fn arguments_that_are_not_json_and_unknown_tools_answer_with_upstreams_errors_and_run_nothing() {
  let call = |call_id: &str, name: &str, arguments: &str| json!({ "type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id, "name": name, "arguments": arguments, "status": "completed" });
  let calls = json!({
    "id": "r1",
    "status": "completed",
    "output": [call("c1", "notes_add", "{\"text\": "), call("c2", "weather", "{}"), call("c3", "notes_add", "{\"text\":\"ok\"}")],
    "usage": { "input_tokens": 10, "output_tokens": 5 },
  });
  let ToolRounds { server, host, out, .. } = tool_rounds(calls, text_response("r2", "Done.", json!({})), "go").await;
  assert_eq!(out.unwrap(), StepValue::Text("Done.".into()));

  // Only the call with JSON arguments to a known tool ran.
  assert_eq!(*host.tool_calls.lock().unwrap(), ["{\"text\":\"ok\"}"]);
  let second = body_of(&requests(&server).await[1]);
  let outputs: Vec<&Value> =
    second["input"].as_array().unwrap().iter().filter(|item| item["type"] == "function_call_output").collect();
  assert_eq!(
    outputs,
    [
      &json!({ "type": "function_call_output", "call_id": "c1", "output": "Error: malformed JSON in tool arguments: {\"text\": " }),
      &json!({ "type": "function_call_output", "call_id": "c2", "output": "Error: unknown tool 'weather'" }),
      &json!({ "type": "function_call_output", "call_id": "c3", "output": "saved" }),
    ]
  );
}

#[tokio::test]
async fn output_text_becomes_an_assistant_message_when_the_output_has_none() {
  let server = MockServer::start().await;
  let body = json!({
    "status": "completed",
    "output": [{ "type": "reasoning", "id": "rs_1", "summary": [{ "type": "summary_text", "text": "thinking" }] }],
    "output_text": "Fallback answer.",
  });
  Mock::given(method("POST")).respond_with(streamed_reply(body)).mount(&server).await;
  let host = Arc::new(ToolHost::default());
  let harness = harness(&server, false, &host);
  let ctx = context(&harness, &[]);
  let out = harness.run_in(&ctx, &step(None, None, ModelParams::default()), StepValue::Text("hi".into())).await;
  assert_eq!(out.unwrap(), StepValue::Text("Fallback answer.".into()));
  let state = ctx.state();
  let types: Vec<(&str, Option<&str>)> = state.log.items().iter().map(|item| (item.item_type(), item.role())).collect();
  assert_eq!(types, [("message", Some("user")), ("message", Some("assistant")), ("reasoning", None)]);
}

#[tokio::test]
async fn an_incomplete_response_is_asked_again_with_a_continue_nudge() {
  let server = MockServer::start().await;
  let incomplete =
    json!({ "status": "incomplete", "incomplete_details": { "reason": "max_output_tokens" }, "output": [] });
  Mock::given(method("POST")).respond_with(streamed_reply(incomplete)).up_to_n_times(1).mount(&server).await;
  Mock::given(method("POST")).respond_with(streamed_reply(text_response("r2", "done", json!({})))).mount(&server).await;
  let host = Arc::new(ToolHost::default());
  let harness = harness(&server, false, &host);
  let ctx = context(&harness, &[]);
  let out = harness.run_in(&ctx, &step(None, None, ModelParams::default()), StepValue::Text("hi".into())).await;
  assert_eq!(out.unwrap(), StepValue::Text("done".into()));
  let sent = requests(&server).await;
  assert_eq!(body_of(&sent[1])["input"][1], json!({ "type": "message", "role": "user", "content": "continue" }));
  // The nudge is not part of the log.
  assert_eq!(ctx.state().log.len(), 2);
}

#[tokio::test]
async fn a_response_that_keeps_failing_ends_in_upstreams_error_message() {
  let server = MockServer::start().await;
  let failed = json!({ "status": "failed", "error": { "message": "provider down" }, "output": [] });
  Mock::given(method("POST")).respond_with(streamed_reply(failed)).mount(&server).await;
  let host = Arc::new(ToolHost::default());
  let harness = harness(&server, false, &host);
  let ctx = context(&harness, &[]);
  let err =
    harness.run_in(&ctx, &step(None, None, ModelParams::default()), StepValue::Text("hi".into())).await.unwrap_err();
  assert_eq!(
    err,
    RunError::Host(HostError::Thrown { message: "LLM response failed: provider down".into(), error: None })
  );
  // The first try and three nudged ones.
  assert_eq!(requests(&server).await.len(), 4);
}

#[tokio::test]
async fn http_429_is_llm_rate_limit_with_retry_after_in_ms() {
  let server = MockServer::start().await;
  Mock::given(method("POST"))
    .and(header("authorization", "Bearer sk-test-key"))
    .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "2").set_body_string("slow down"))
    .mount(&server)
    .await;
  let host = Arc::new(ToolHost::default());
  let harness = harness(&server, false, &host);
  let ctx = context(&harness, &[]);
  match harness.run_in(&ctx, &step(None, None, ModelParams::default()), StepValue::Text("hi".into())).await {
    Err(RunError::Noetic(error)) => {
      assert_eq!(error.kind, "llm_rate_limit");
      assert_eq!(error.payload, json!({ "stepId": "ask", "retryAfter": 2000.0, "kind": "llm_rate_limit" }));
      assert_eq!(error.message, "LLM rate limited at step 'ask' (retry after 2000ms)");
    }
    other => panic!("expected llm_rate_limit, got {other:?}"),
  }
}

#[tokio::test]
async fn http_500_is_an_error_naming_the_status_and_what_the_body_said() {
  let server = MockServer::start().await;
  Mock::given(method("POST"))
    .respond_with(ResponseTemplate::new(500).set_body_string("<html>upstream exploded</html>"))
    .mount(&server)
    .await;
  let host = Arc::new(ToolHost::default());
  let harness = harness(&server, false, &host);
  let ctx = context(&harness, &[]);
  let err =
    harness.run_in(&ctx, &step(None, None, ModelParams::default()), StepValue::Text("hi".into())).await.unwrap_err();
  let message = "OpenRouter request failed with HTTP 500: <html>upstream exploded</html>";
  assert_eq!(err, RunError::Host(HostError::Thrown { message: message.into(), error: None }));
}

#[tokio::test]
async fn aborting_the_context_ends_a_call_in_flight() {
  let server = MockServer::start().await;
  Mock::given(method("POST"))
    .respond_with(streamed_reply(text_response("r1", "late", json!({}))).set_delay(Duration::from_secs(30)))
    .mount(&server)
    .await;
  let host = Arc::new(ToolHost::default());
  let harness = Arc::new(harness(&server, false, &host));
  let ctx = context(&harness, &[]);
  let started = Instant::now();
  let run = {
    let (harness, ctx) = (Arc::clone(&harness), Arc::clone(&ctx));
    tokio::spawn(async move {
      harness.run_in(&ctx, &step(None, None, ModelParams::default()), StepValue::Text("hi".into())).await
    })
  };
  // Abort once the request has reached the server.
  while requests(&server).await.is_empty() {
    tokio::time::sleep(Duration::from_millis(10)).await;
  }
  ctx.abort("user left".into());
  match run.await.unwrap() {
    Err(RunError::Noetic(error)) => assert_eq!(error.payload, json!({ "reason": "user left", "kind": "cancelled" })),
    other => panic!("expected cancelled, got {other:?}"),
  }
  assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn call_model_once_sends_model_instructions_and_params_without_tools() {
  let server = MockServer::start().await;
  let usage = json!({ "input_tokens": 12, "output_tokens": 3, "cost": 0.0005 });
  Mock::given(method("POST"))
    .respond_with(streamed_reply(text_response("r1", "a summary", usage)))
    .mount(&server)
    .await;
  let host = Arc::new(ToolHost::default());
  let harness = harness(&server, false, &host);
  let item = Item::from_value(
    json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "summarise" }] }),
  )
  .unwrap();
  let request = ModelRequest {
    model: "openai/gpt-4o-mini".into(),
    instructions: Some("Summarise.".into()),
    items: vec![Arc::new(item)],
    params: ModelParams { temperature: None, max_tokens: None, top_p: Some(0.9) },
    ..ModelRequest::default()
  };
  let round = harness.call_model_once(&request).await.unwrap();
  assert_eq!(round.items[0].json()["content"][0]["text"], "a summary");
  assert_eq!((round.input_tokens, round.output_tokens, round.cost), (12.0, 3.0, 0.0005));
  assert_eq!(
    body_of(&requests(&server).await[0]),
    json!({
      "model": "openai/gpt-4o-mini",
      "input": [{ "role": "user", "content": "summarise" }],
      "instructions": "Summarise.",
      "top_p": 0.9,
      "stream": true,
      "service_tier": "auto",
      "store": false,
    })
  );
}

#[tokio::test]
async fn a_refused_connection_is_a_clear_error() {
  // A port nothing listens on: bind one, then free it.
  let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
  let harness = harness_with(config_for(&format!("http://127.0.0.1:{port}"), Timeouts::default()), &Arc::default());
  let message = failure_of(&harness).await;
  assert!(message.starts_with("OpenRouter request failed: "), "{message}");
}

fn config_for(base_url: &str, timeouts: Timeouts) -> OpenRouterConfig {
  OpenRouterConfig { api_key: "k".into(), base_url: Some(base_url.to_owned()), cache: false, timeouts }
}

fn timeouts(connect_ms: f64, idle_ms: f64, total_ms: f64) -> Timeouts {
  Timeouts {
    connect: Timeouts::from_ms(connect_ms),
    idle: Timeouts::from_ms(idle_ms),
    total: Timeouts::from_ms(total_ms),
  }
}

/// The message of the error `harness.callModel` fails with.
async fn failure_of(harness: &Harness) -> String {
  let err = harness.call_model_once(&ModelRequest { model: "m".into(), ..ModelRequest::default() }).await.unwrap_err();
  let RunError::Host(HostError::Thrown { message, .. }) = err else { panic!("expected a thrown error, got {err:?}") };
  message
}

async fn slow_server(delay: Duration) -> MockServer {
  let server = MockServer::start().await;
  Mock::given(method("POST"))
    .respond_with(streamed_reply(text_response("r1", "slow", json!({}))).set_delay(delay))
    .mount(&server)
    .await;
  server
}

/// A server on 127.0.0.1 that accepts connections, reads what it is sent, writes `reply` (maybe nothing) and then
/// stays silent with the connection open.
async fn stalling_server(reply: &'static str) -> String {
  let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
  let address = listener.local_addr().unwrap();
  tokio::spawn(async move {
    let mut held = Vec::new();
    while let Ok((mut socket, _)) = listener.accept().await {
      let mut request = [0u8; 4096];
      let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut request).await;
      let _ = tokio::io::AsyncWriteExt::write_all(&mut socket, reply.as_bytes()).await;
      held.push(socket);
    }
  });
  format!("http://{address}")
}

#[tokio::test]
async fn a_silent_provider_fails_the_run_with_the_idle_timeout_named_and_is_not_retried() {
  let server = slow_server(Duration::from_secs(30)).await;
  let config = config_for(&format!("{}/api/v1", server.uri()), timeouts(30_000.0, 200.0, 0.0));
  let harness = harness_with(config, &Arc::default());
  let ctx = context(&harness, &[]);
  let started = Instant::now();
  let err =
    harness.run_in(&ctx, &step(None, None, ModelParams::default()), StepValue::Text("hi".into())).await.unwrap_err();
  let message = format!(
    "llm request to {}/api/v1/responses timed out: no response within 200ms (streamIdleTimeoutMs)",
    server.uri()
  );
  assert_eq!(err, RunError::Host(HostError::Thrown { message, error: None }));
  assert!(started.elapsed() < Duration::from_secs(5));
  assert_eq!(requests(&server).await.len(), 1);
}

#[tokio::test]
async fn with_the_idle_watchdog_off_a_slow_but_finite_reply_is_waited_for() {
  let server = slow_server(Duration::from_millis(700)).await;
  for idle_off in [0.0, -1.0] {
    let config = config_for(&format!("{}/api/v1", server.uri()), timeouts(30_000.0, idle_off, 0.0));
    let harness = harness_with(config, &Arc::default());
    let round = harness.call_model_once(&ModelRequest { model: "m".into(), ..ModelRequest::default() }).await.unwrap();
    assert_eq!(round.items[0].json()["content"][0]["text"], "slow");
  }
}

#[tokio::test]
async fn an_idle_limit_longer_than_the_reply_takes_lets_it_through() {
  let server = slow_server(Duration::from_millis(300)).await;
  let config = config_for(&format!("{}/api/v1", server.uri()), timeouts(30_000.0, 5_000.0, 1e300));
  let round = harness_with(config, &Arc::default())
    .call_model_once(&ModelRequest { model: "m".into(), ..ModelRequest::default() })
    .await
    .unwrap();
  assert_eq!(round.items[0].json()["content"][0]["text"], "slow");
}

#[tokio::test]
async fn a_connection_accepted_but_never_answered_ends_at_the_idle_limit() {
  let base_url = stalling_server("").await;
  let harness = harness_with(config_for(&base_url, timeouts(30_000.0, 200.0, 0.0)), &Arc::default());
  let started = Instant::now();
  let message = failure_of(&harness).await;
  assert_eq!(
    message,
    format!("llm request to {base_url}/responses timed out: no response within 200ms (streamIdleTimeoutMs)")
  );
  assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_body_that_stops_halfway_ends_at_the_idle_limit() {
  let base_url =
    stalling_server("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"id\":").await;
  let harness = harness_with(config_for(&base_url, timeouts(30_000.0, 200.0, 0.0)), &Arc::default());
  let message = failure_of(&harness).await;
  assert_eq!(
    message,
    format!("llm request to {base_url}/responses timed out: no response within 200ms (streamIdleTimeoutMs)")
  );
}

#[tokio::test]
async fn the_total_limit_ends_a_request_however_patient_the_idle_one_is() {
  let server = slow_server(Duration::from_secs(30)).await;
  let config = config_for(&format!("{}/api/v1", server.uri()), timeouts(30_000.0, 0.0, 250.0));
  let started = Instant::now();
  let message = failure_of(&harness_with(config, &Arc::default())).await;
  let expected = format!(
    "llm request to {}/api/v1/responses timed out: no complete response within 250ms (llm.timeoutMs)",
    server.uri()
  );
  assert_eq!(message, expected);
  assert!(started.elapsed() < Duration::from_secs(5));
}

/// Linux drops a connection attempt while the listener's accept queue is full, so with a backlog of 0 and one
/// connection already waiting, the next connect hangs: a stalled connect on 127.0.0.1.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_connect_that_hangs_ends_at_the_connect_limit() {
  let socket = tokio::net::TcpSocket::new_v4().unwrap();
  socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
  let listener = socket.listen(0).unwrap();
  let address = listener.local_addr().unwrap();
  let _waiting = std::net::TcpStream::connect(address).unwrap();
  let base_url = format!("http://{address}");
  let harness = harness_with(config_for(&base_url, timeouts(200.0, 0.0, 0.0)), &Arc::default());
  let started = Instant::now();
  let message = failure_of(&harness).await;
  assert_eq!(
    message,
    format!("llm request to {base_url}/responses timed out: could not connect within 200ms (connect timeout)")
  );
  assert!(started.elapsed() < Duration::from_secs(5));
}

// Streaming: deltas, the terminal event, stream errors, and the idle limit between events.

/// Records every delta a streamed round delivers, in order.
#[derive(Default)]
struct Deltas(Mutex<Vec<(&'static str, String, String)>>);

impl DeltaSink for Deltas {
  fn text_delta(&self, item_id: &str, delta: &str) {
    self.0.lock().unwrap().push(("text", item_id.into(), delta.into()));
  }
  fn reasoning_delta(&self, item_id: &str, delta: &str) {
    self.0.lock().unwrap().push(("reasoning", item_id.into(), delta.into()));
  }
}

impl Deltas {
  fn seen(&self) -> Vec<(&'static str, String, String)> {
    self.0.lock().unwrap().clone()
  }
}

fn delta(kind: &'static str, item_id: &str, text: &str) -> (&'static str, String, String) {
  (kind, item_id.into(), text.into())
}

fn provider(base_url: &str, timeouts: Timeouts) -> OpenRouter {
  OpenRouter::new(config_for(base_url, timeouts)).unwrap()
}

/// One round asked of the provider directly, with `deltas` as its sink.
async fn respond(provider: &OpenRouter, deltas: Option<&dyn DeltaSink>) -> Result<Round, ProviderError> {
  let params = ModelParams::default();
  let user = Item::from_value(json!({ "type": "message", "role": "user", "content": "hi" })).unwrap();
  let items = [Arc::new(user)];
  let request = ProviderRequest {
    model: "m",
    instructions: None,
    items: &items,
    tools: &[],
    params: &params,
    output_schema: None,
    deltas,
    nudge: false,
    cache: None,
  };
  provider.respond(&request).await
}

/// A round as plain values: its items, tokens and cost.
fn summary(round: &Round) -> (Vec<Value>, [f64; 4]) {
  let items = round.items.iter().map(|item| Value::Object(item.json().clone())).collect();
  (items, [round.input_tokens, round.output_tokens, round.cached_tokens, round.cost])
}

fn idle_error(base_url: &str, ms: u64) -> String {
  format!("llm request to {base_url}/responses timed out: no response within {ms}ms (streamIdleTimeoutMs)")
}

/// A server on 127.0.0.1 that answers every request with event-stream headers, then writes `chunks`, each after
/// its delay, then holds the connection open. It reports "wrote" after the last chunk and "closed" once the
/// client hangs up.
async fn streaming_server(
  chunks: Vec<(Duration, String)>,
) -> (String, tokio::sync::mpsc::UnboundedReceiver<&'static str>) {
  use tokio::io::{AsyncReadExt, AsyncWriteExt};
  let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
  let address = listener.local_addr().unwrap();
  let (report, reports) = tokio::sync::mpsc::unbounded_channel();
  tokio::spawn(async move {
    while let Ok((mut socket, _)) = listener.accept().await {
      let (chunks, report) = (chunks.clone(), report.clone());
      tokio::spawn(async move {
        let mut buffer = [0u8; 8192];
        let _ = socket.read(&mut buffer).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n";
        if socket.write_all(head.as_bytes()).await.is_err() {
          return;
        }
        for (delay, chunk) in chunks {
          tokio::time::sleep(delay).await;
          if socket.write_all(chunk.as_bytes()).await.is_err() {
            let _ = report.send("closed");
            return;
          }
        }
        let _ = report.send("wrote");
        while matches!(socket.read(&mut buffer).await, Ok(read) if read > 0) {}
        let _ = report.send("closed");
      });
    }
  });
  (format!("http://{address}"), reports)
}

fn text_delta_event(item_id: &str, text: &str) -> String {
  sse_event(
    &json!({ "type": "response.output_text.delta", "item_id": item_id, "output_index": 0, "content_index": 0, "delta": text }),
  )
}

#[tokio::test]
async fn a_streamed_round_equals_the_json_one_and_the_sink_gets_each_text_delta_in_order() {
  let response = json!({
    "id": "r1",
    "object": "response",
    "status": "completed",
    "output": [
      { "type": "reasoning", "id": "rs_1", "summary": [{ "type": "summary_text", "text": "Greet." }], "encrypted_content": "opaque" },
      { "type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
        "content": [{ "type": "output_text", "text": "Hello there, Ada.", "annotations": [] }] },
    ],
    "usage": { "input_tokens": 21, "output_tokens": 7, "input_tokens_details": { "cached_tokens": 5 }, "cost": 0.00042 },
  });
  let streaming = MockServer::start().await;
  Mock::given(method("POST")).respond_with(streamed_reply(response.clone())).mount(&streaming).await;
  // A server that ignores `stream: true` and answers plain JSON.
  let plain = MockServer::start().await;
  Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(&response)).mount(&plain).await;

  let deltas = Deltas::default();
  let streamed = respond(&provider(&streaming.uri(), Timeouts::default()), Some(&deltas)).await.unwrap();
  let whole = respond(&provider(&plain.uri(), Timeouts::default()), None).await.unwrap();
  assert_eq!(summary(&streamed), summary(&whole));
  assert_eq!(summary(&streamed).1, [21.0, 7.0, 5.0, 0.00042]);
  assert_eq!(
    deltas.seen(),
    [delta("text", "msg_1", "Hello "), delta("text", "msg_1", "there, "), delta("text", "msg_1", "Ada.")]
  );
  assert_eq!(body_of(&requests(&streaming).await[0])["stream"], true);
}

#[tokio::test]
async fn reasoning_deltas_reach_the_sink_in_order_with_the_text_ones() {
  let reasoning = json!({ "type": "reasoning", "id": "rs_1", "summary": [{ "type": "summary_text", "text": "Add." }] });
  let answer = json!({ "type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
    "content": [{ "type": "output_text", "text": "4", "annotations": [] }] });
  let events = [
    json!({ "type": "response.output_item.added", "output_index": 0, "item": { "type": "reasoning", "id": "rs_1", "summary": [] } }),
    json!({ "type": "response.reasoning_text.delta", "item_id": "rs_1", "output_index": 0, "content_index": 0, "delta": "2 + 2 " }),
    json!({ "type": "response.reasoning_text.delta", "item_id": "rs_1", "output_index": 0, "content_index": 0, "delta": "is 4." }),
    json!({ "type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Add." }),
    json!({ "type": "response.output_item.done", "output_index": 0, "item": reasoning }),
    json!({ "type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "4" }),
    json!({ "type": "response.completed", "response": { "status": "completed", "output": [reasoning, answer] } }),
  ];
  let server = MockServer::start().await;
  Mock::given(method("POST")).respond_with(sse_reply(sse(&events))).mount(&server).await;
  let deltas = Deltas::default();
  let round = respond(&provider(&server.uri(), Timeouts::default()), Some(&deltas)).await.unwrap();
  assert_eq!(
    deltas.seen(),
    [
      delta("reasoning", "rs_1", "2 + 2 "),
      delta("reasoning", "rs_1", "is 4."),
      delta("reasoning", "rs_1", "Add."),
      delta("text", "msg_1", "4"),
    ]
  );
  let types: Vec<&str> = round.items.iter().map(|item| item.item_type()).collect();
  assert_eq!(types, ["reasoning", "message"]);
}

#[tokio::test]
async fn a_response_failed_event_is_nudged_like_a_failed_body_and_then_succeeds() {
  let server = MockServer::start().await;
  let failed = json!({ "status": "failed", "error": { "message": "provider hiccup" }, "output": [] });
  Mock::given(method("POST")).respond_with(streamed_reply(failed)).up_to_n_times(1).mount(&server).await;
  Mock::given(method("POST"))
    .respond_with(streamed_reply(text_response("r2", "recovered", json!({}))))
    .mount(&server)
    .await;
  let round = respond(&provider(&server.uri(), Timeouts::default()), None).await.unwrap();
  assert_eq!(round.items[0].json()["content"][0]["text"], "recovered");
  let sent = requests(&server).await;
  assert_eq!(sent.len(), 2);
  assert_eq!(body_of(&sent[1])["input"][1], json!({ "type": "message", "role": "user", "content": "continue" }));
}

#[tokio::test]
async fn an_error_event_fails_the_round_with_its_message_and_is_not_retried() {
  let server = MockServer::start().await;
  let body = format!(
    "{}{}",
    text_delta_event("msg_1", "Half"),
    sse_event(&json!({ "type": "error", "code": "server_error", "message": "The model crashed.", "param": null }))
  );
  Mock::given(method("POST")).respond_with(sse_reply(body)).mount(&server).await;
  let harness = harness_with(config_for(&server.uri(), Timeouts::default()), &Arc::default());
  assert_eq!(failure_of(&harness).await, "OpenRouter stream failed: The model crashed. (code server_error)");
  assert_eq!(requests(&server).await.len(), 1);
}

#[tokio::test]
async fn a_stream_that_ends_before_response_completed_is_a_clear_error() {
  let mut events = stream_events(&text_response("r1", "Cut short here", json!({})));
  events.pop();
  let whole_events = sse(&events);
  // The same, then half an event that never gets its blank line.
  let half_event = format!("{whole_events}event: response.completed\ndata: {{\"type\":\"resp");
  for body in [whole_events, half_event] {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(sse_reply(body)).mount(&server).await;
    let deltas = Deltas::default();
    let error = respond(&provider(&server.uri(), Timeouts::default()), Some(&deltas)).await.unwrap_err();
    assert_eq!(error.to_string(), "OpenRouter stream failed: the stream ended before `response.completed`");
    assert_eq!(deltas.seen().len(), 3);
    assert_eq!(requests(&server).await.len(), 1);
  }
}

#[tokio::test]
async fn a_stream_that_stalls_after_an_event_ends_at_the_idle_limit() {
  let (base_url, _reports) = streaming_server(vec![(Duration::ZERO, text_delta_event("msg_1", "Hel"))]).await;
  let deltas = Deltas::default();
  let started = Instant::now();
  let error = respond(&provider(&base_url, timeouts(30_000.0, 200.0, 0.0)), Some(&deltas)).await.unwrap_err();
  assert_eq!(error.to_string(), idle_error(&base_url, 200));
  assert_eq!(deltas.seen(), [delta("text", "msg_1", "Hel")]);
  assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn comments_alone_do_not_keep_a_stream_alive() {
  // OpenRouter's keep-alive comments every 50ms: bytes keep coming, events do not (upstream's watchdog counts events).
  let comments = (0..100).map(|_| (Duration::from_millis(50), ": OPENROUTER PROCESSING\n\n".to_owned())).collect();
  let (base_url, _reports) = streaming_server(comments).await;
  let started = Instant::now();
  let error = respond(&provider(&base_url, timeouts(30_000.0, 300.0, 0.0)), None).await.unwrap_err();
  assert_eq!(error.to_string(), idle_error(&base_url, 300));
  assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_stream_longer_than_the_idle_limit_passes_while_its_events_keep_coming() {
  let mut chunks: Vec<(Duration, String)> =
    (0..6).map(|i| (Duration::from_millis(100), text_delta_event("msg_1", &format!("{i} ")))).collect();
  let completed = json!({ "type": "response.completed", "response": text_response("r1", "0 1 2 3 4 5 ", json!({})) });
  chunks.push((Duration::from_millis(100), sse_event(&completed)));
  let (base_url, _reports) = streaming_server(chunks).await;
  let deltas = Deltas::default();
  let started = Instant::now();
  let round = respond(&provider(&base_url, timeouts(30_000.0, 400.0, 0.0)), Some(&deltas)).await.unwrap();
  assert!(started.elapsed() > Duration::from_millis(400), "the whole stream outlasts the idle limit");
  assert_eq!(round.items[0].json()["content"][0]["text"], "0 1 2 3 4 5 ");
  assert_eq!(deltas.seen().len(), 6);
}

#[tokio::test]
async fn the_total_limit_ends_a_stream_that_keeps_trickling() {
  let chunks = (0..100).map(|i| (Duration::from_millis(50), text_delta_event("msg_1", &format!("{i} ")))).collect();
  let (base_url, _reports) = streaming_server(chunks).await;
  let error = respond(&provider(&base_url, timeouts(30_000.0, 1_000.0, 300.0)), None).await.unwrap_err();
  assert_eq!(
    error.to_string(),
    format!("llm request to {base_url}/responses timed out: no complete response within 300ms (llm.timeoutMs)")
  );
}

#[tokio::test]
async fn aborting_the_context_mid_stream_cancels_the_run_and_closes_the_connection() {
  let (base_url, mut reports) = streaming_server(vec![(Duration::ZERO, text_delta_event("msg_1", "Hel"))]).await;
  let harness = Arc::new(harness_with(config_for(&base_url, Timeouts::default()), &Arc::default()));
  let ctx = context(&harness, &[]);
  let run = {
    let (harness, ctx) = (Arc::clone(&harness), Arc::clone(&ctx));
    tokio::spawn(async move {
      harness.run_in(&ctx, &step(None, None, ModelParams::default()), StepValue::Text("hi".into())).await
    })
  };
  assert_eq!(reports.recv().await, Some("wrote"));
  ctx.abort("user left".into());
  match tokio::time::timeout(Duration::from_secs(5), run).await.unwrap().unwrap() {
    Err(RunError::Noetic(error)) => assert_eq!(error.payload, json!({ "reason": "user left", "kind": "cancelled" })),
    other => panic!("expected cancelled, got {other:?}"),
  }
  let closed = tokio::time::timeout(Duration::from_secs(5), reports.recv()).await.unwrap();
  assert_eq!(closed, Some("closed"));
}
