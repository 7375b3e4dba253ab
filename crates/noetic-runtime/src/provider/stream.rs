//! The Responses API's streaming events, one at a time. The SSE framing (and OpenRouter's `: OPENROUTER
//! PROCESSING` comments, which it drops) is `sseer`'s; this reads what the events say. Deltas go to
//! the sink as they come; the round itself is read from the terminal event's `response`, which has the
//! non-streaming body's shape, so both paths give the same items, usage and cost.

use serde_json::{Map, Value};

use super::{DeltaSink, ProviderError, shorten};

/// One streamed round, read event by event.
#[derive(Default)]
pub(super) struct ResponseStream {
  /// `response.output_item.done` items by `output_index`: the output when the terminal event's response has none.
  done_items: Vec<(u64, Value)>,
}

impl ResponseStream {
  /// Reads one event's data. Returns the response once a terminal event (`response.completed`, `.failed`,
  /// `.incomplete`) gives it; a failed or incomplete one is then judged as the non-streaming body would be.
  pub(super) fn on_event(
    &mut self,
    name: &str,
    data: &str,
    sink: Option<&dyn DeltaSink>,
  ) -> Result<Option<Value>, ProviderError> {
    // Chat-completions streams end with `[DONE]`; a Responses stream has no use for it.
    if data.trim() == "[DONE]" {
      return Ok(None);
    }
    let mut event: Value = crate::js_text::from_js_json(data)
      .map_err(|error| ProviderError::Malformed(format!("a stream event is not JSON ({error}): {}", shorten(data))))?;
    // The `type` field names the event; the SSE `event:` line, when sent, says the same.
    let kind = event.get("type").and_then(Value::as_str).unwrap_or(name);
    if let Some(sink) = sink {
      sink.event(kind, &event);
    }
    let text = |key: &str| event.get(key).and_then(Value::as_str);
    match kind {
      "response.output_text.delta" => {
        if let (Some(sink), Some(id), Some(delta)) = (sink, text("item_id"), text("delta")) {
          sink.text_delta(id, delta);
        }
      }
      "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
        if let (Some(sink), Some(id), Some(delta)) = (sink, text("item_id"), text("delta")) {
          sink.reasoning_delta(id, delta);
        }
      }
      "response.output_item.done" => {
        if let Some(item) = event.get("item").filter(|item| item.is_object()) {
          let index = event.get("output_index").and_then(Value::as_u64).unwrap_or(self.done_items.len() as u64);
          self.done_items.push((index, item.clone()));
        }
      }
      "response.completed" | "response.failed" | "response.incomplete" => {
        let status = kind.trim_start_matches("response.").to_owned();
        return match event.get_mut("response").map(Value::take) {
          Some(Value::Object(response)) => Ok(Some(self.finish(response, &status))),
          // A failure reported without the response object (some providers send only `error`).
          _ if status != "completed" => Err(stream_error(&event)),
          _ => Err(ProviderError::Malformed("`response.completed` carries no response object".into())),
        };
      }
      // OpenAI's `{"type": "error", "message"}`, or OpenRouter's mid-stream `{"error": {"code", "message"}}`.
      "error" => return Err(stream_error(&event)),
      _ if event.get("type").is_none() && event.get("error").is_some_and(Value::is_object) => {
        return Err(stream_error(&event));
      }
      // `response.created`, `.in_progress`, `output_item.added`, content parts, argument deltas...: the terminal
      // response carries all of it.
      _ => {}
    }
    Ok(None)
  }

  /// The stream ended (the connection closed) before a terminal event.
  pub(super) fn ended_early(&self) -> ProviderError {
    ProviderError::Stream("the stream ended before `response.completed`".into())
  }

  /// The terminal response, with the status its event implies when it states none, and the streamed items as its
  /// output when it lists none (a provider that streams items but sends an empty final output).
  fn finish(&mut self, mut response: Map<String, Value>, status: &str) -> Value {
    if !matches!(response.get("status"), Some(Value::String(_))) {
      response.insert("status".into(), Value::String(status.to_owned()));
    }
    let has_output = response.get("output").and_then(Value::as_array).is_some_and(|output| !output.is_empty());
    if !has_output && !self.done_items.is_empty() {
      let mut items = std::mem::take(&mut self.done_items);
      items.sort_by_key(|(index, _)| *index);
      response.insert("output".into(), Value::Array(items.into_iter().map(|(_, item)| item).collect()));
    }
    Value::Object(response)
  }
}

/// An error event: a rate limit when its code says so (as HTTP 429 is), else its message and code.
fn stream_error(event: &Value) -> ProviderError {
  let error = event.get("error").filter(|error| error.is_object()).unwrap_or(event);
  let code = match error.get("code") {
    Some(Value::String(code)) => Some(code.clone()),
    Some(Value::Number(code)) => Some(code.to_string()),
    _ => None,
  };
  if matches!(code.as_deref(), Some("429" | "rate_limit_exceeded")) {
    return ProviderError::RateLimited { retry_after_ms: None };
  }
  let message = error.get("message").and_then(Value::as_str).filter(|message| !message.trim().is_empty());
  let mut detail = shorten(message.unwrap_or("an error event without a message"));
  if let Some(code) = code {
    detail.push_str(&format!(" (code {code})"));
  }
  ProviderError::Stream(detail)
}

#[cfg(test)]
mod tests {
  use std::sync::Mutex;

  use serde_json::json;

  use super::*;

  #[derive(Default)]
  struct Recorder(Mutex<Vec<String>>);

  impl DeltaSink for Recorder {
    fn text_delta(&self, item_id: &str, delta: &str) {
      self.0.lock().unwrap().push(format!("text {item_id} {delta}"));
    }
    fn reasoning_delta(&self, item_id: &str, delta: &str) {
      self.0.lock().unwrap().push(format!("reasoning {item_id} {delta}"));
    }
  }

  fn feed(stream: &mut ResponseStream, event: Value, sink: &Recorder) -> Result<Option<Value>, ProviderError> {
    stream.on_event("message", &event.to_string(), Some(sink))
  }

  #[test]
  fn deltas_reach_the_sink_and_other_events_are_passed_over() {
    let (mut stream, sink) = (ResponseStream::default(), Recorder::default());
    for event in [
      json!({ "type": "response.created", "response": { "status": "in_progress" } }),
      json!({ "type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "delta": "hm" }),
      json!({ "type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hi" }),
      json!({ "type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{" }),
    ] {
      assert_eq!(feed(&mut stream, event, &sink).unwrap(), None);
    }
    assert_eq!(stream.on_event("message", "[DONE]", None).unwrap(), None);
    assert_eq!(*sink.0.lock().unwrap(), ["reasoning rs_1 hm", "text msg_1 Hi"]);
  }

  #[test]
  fn a_terminal_event_gives_its_response_with_its_status_and_the_streamed_items_when_it_lists_none() {
    let (mut stream, sink) = (ResponseStream::default(), Recorder::default());
    let item = |id: &str| json!({ "type": "message", "id": id, "role": "assistant", "content": [] });
    feed(&mut stream, json!({ "type": "response.output_item.done", "output_index": 1, "item": item("b") }), &sink)
      .unwrap();
    feed(&mut stream, json!({ "type": "response.output_item.done", "output_index": 0, "item": item("a") }), &sink)
      .unwrap();
    let done = feed(&mut stream, json!({ "type": "response.incomplete", "response": { "output": [] } }), &sink);
    assert_eq!(done.unwrap(), Some(json!({ "output": [item("a"), item("b")], "status": "incomplete" })));
  }

  #[test]
  fn error_events_name_their_message_and_code_and_a_429_code_is_a_rate_limit() {
    let mut stream = ResponseStream::default();
    let sink = Recorder::default();
    let openai = json!({ "type": "error", "code": "server_error", "message": "boom", "param": null });
    assert_eq!(feed(&mut stream, openai, &sink), Err(ProviderError::Stream("boom (code server_error)".into())));
    let openrouter = json!({ "error": { "code": 502, "message": "upstream down" } });
    assert_eq!(feed(&mut stream, openrouter, &sink), Err(ProviderError::Stream("upstream down (code 502)".into())));
    let limited = json!({ "error": { "code": 429, "message": "slow" } });
    assert_eq!(feed(&mut stream, limited, &sink), Err(ProviderError::RateLimited { retry_after_ms: None }));
    let bare = json!({ "type": "response.failed", "error": { "message": "no capacity" } });
    assert_eq!(feed(&mut stream, bare, &sink), Err(ProviderError::Stream("no capacity".into())));
  }

  #[test]
  fn an_event_that_is_not_json_is_malformed() {
    let error = ResponseStream::default().on_event("message", "{oops", None).unwrap_err();
    assert!(matches!(error, ProviderError::Malformed(ref message) if message.contains("{oops")), "{error:?}");
  }
}
