//! The OpenRouter client: one streamed `POST {baseUrl}/responses` per round.

use std::fmt;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use serde_json::Value;
use sseer::errors::EventStreamError;
use sseer::event_stream::EventStream;

use super::stream::ResponseStream;
use super::wire::{self, Reply, Unusable};
use super::{DeltaSink, ProviderError, ProviderRequest, Round, Timeout, shorten};
use crate::error::ConfigError;

/// How many times a failed, incomplete or empty response is retried with a "continue" nudge (upstream's
/// `MAX_RECOVERY_CONTINUATIONS`).
pub const MAX_NUDGES: usize = 3;

/// What `llm: {provider: 'openrouter', ...}` resolved to. The key is never printed.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OpenRouterConfig {
  pub api_key: String,
  /// Defaults to [`OpenRouter::DEFAULT_BASE_URL`].
  pub base_url: Option<String>,
  /// Send `X-OpenRouter-Cache: true`, so that identical calls are answered from OpenRouter's cache.
  pub cache: bool,
  pub timeouts: Timeouts,
}

/// How long one request may wait, so that a stalled connection ends the call instead of hanging the run. `None`
/// turns a limit off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
  /// Opening the connection (TCP and TLS).
  pub connect: Option<Duration>,
  /// Silence while waiting for the response: until its headers, then between stream events (upstream's
  /// `streamIdleTimeoutMs`, whose watchdog likewise starts with the call and restarts on every event; SSE
  /// comments such as `: OPENROUTER PROCESSING` are not events, so they do not restart it).
  pub idle: Option<Duration>,
  /// The whole request, from connecting to the last body byte (`llm.timeoutMs`).
  pub total: Option<Duration>,
}

impl Timeouts {
  pub const DEFAULT_CONNECT: Duration = Duration::from_secs(30);
  /// Upstream's `DEFAULT_STREAM_IDLE_TIMEOUT_MS`.
  pub const DEFAULT_IDLE: Duration = Duration::from_secs(120);

  /// A limit in milliseconds as JS states it: zero, negative, NaN or Infinity mean none (upstream disables its
  /// watchdog for `<= 0`). Values too large for a `Duration` saturate.
  pub fn from_ms(ms: f64) -> Option<Duration> {
    (ms > 0.0 && ms.is_finite()).then(|| Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX))
  }
}

impl Default for Timeouts {
  fn default() -> Self {
    Self { connect: Some(Self::DEFAULT_CONNECT), idle: Some(Self::DEFAULT_IDLE), total: None }
  }
}

impl fmt::Debug for OpenRouterConfig {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.debug_struct("OpenRouterConfig")
      .field("api_key", &"<redacted>")
      .field("base_url", &self.base_url)
      .field("cache", &self.cache)
      .field("timeouts", &self.timeouts)
      .finish()
  }
}

pub struct OpenRouter {
  http: reqwest::Client,
  endpoint: reqwest::Url,
  api_key: String,
  cache: bool,
  timeouts: Timeouts,
}

impl fmt::Debug for OpenRouter {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.debug_struct("OpenRouter").field("endpoint", &self.endpoint.as_str()).field("cache", &self.cache).finish()
  }
}

impl OpenRouter {
  pub const DEFAULT_BASE_URL: &str = "https://openrouter.ai/api/v1";

  pub fn new(config: OpenRouterConfig) -> Result<Self, ConfigError> {
    if config.api_key.trim().is_empty() {
      return Err(ConfigError::new(
        "MISSING_API_KEY",
        "The OpenRouter provider needs an API key.",
        "Pass `llm: { provider: 'openrouter', apiKey }` or set OPENROUTER_API_KEY.",
      ));
    }
    let endpoint = endpoint(
      config.base_url.as_deref(),
      "responses",
      "Pass `llm.baseUrl` (or OPENROUTER_BASE_URL) like 'https://openrouter.ai/api/v1', or leave it unset.",
    )?;
    let http = http_client(&config.timeouts)?;
    Ok(Self { http, endpoint, api_key: config.api_key, cache: config.cache, timeouts: config.timeouts })
  }

  /// One model round, streamed: its deltas reach `request.deltas` as they arrive. A response that failed, stopped
  /// early or came back empty is asked again with a "continue" nudge, as upstream does, before it becomes an error;
  /// only the usable round's usage counts.
  pub async fn respond(&self, request: &ProviderRequest<'_>) -> Result<Round, ProviderError> {
    let mut nudges = 0;
    loop {
      match self.attempt(request, nudges > 0).await? {
        Ok(round) => return Ok(round),
        Err(problem) if nudges >= MAX_NUDGES => return Err(ProviderError::Unusable(problem.message)),
        Err(_) => nudges += 1,
      }
    }
  }

  /// One request of a round, nudged when `nudged` (or the request asks for it): the round, or why the response
  /// cannot be used. A caller that retries on its own (the tool loop, which reports each attempt) uses this.
  pub async fn attempt(
    &self,
    request: &ProviderRequest<'_>,
    nudged: bool,
  ) -> Result<Result<Round, Unusable>, ProviderError> {
    let body = self.post(&wire::request_body(request, request.nudge || nudged), request.deltas).await?;
    Ok(match wire::read_response(&body)? {
      Reply::Usable(round) => Ok(round),
      Reply::Unusable(problem) => Err(problem),
    })
  }

  /// One request, within the total limit when there is one. A timeout is not retried: the call fails with it.
  async fn post(&self, body: &Value, deltas: Option<&dyn DeltaSink>) -> Result<Value, ProviderError> {
    let Some(limit) = self.timeouts.total else { return self.post_unbounded(body, deltas).await };
    tokio::time::timeout(limit, self.post_unbounded(body, deltas))
      .await
      .unwrap_or_else(|_| Err(self.timed_out(Timeout::Total, limit)))
  }

  /// The response object: the terminal event's, or a plain JSON body's from a server that does not stream.
  async fn post_unbounded(&self, body: &Value, deltas: Option<&dyn DeltaSink>) -> Result<Value, ProviderError> {
    let mut request = self.http.post(self.endpoint.clone()).bearer_auth(&self.api_key).json(body);
    if self.cache {
      request = request.header("X-OpenRouter-Cache", "true");
    }
    let response = request.send().await.map_err(|error| self.failure(error))?;
    let status = response.status();
    if status.as_u16() == 429 {
      return Err(ProviderError::RateLimited { retry_after_ms: retry_after_ms(response.headers()) });
    }
    if status.is_success() && is_event_stream(response.headers()) {
      return self.read_stream(response, deltas).await;
    }
    let text = response.text().await.map_err(|error| self.failure(error))?;
    if !status.is_success() {
      return Err(ProviderError::Status { status: status.as_u16(), detail: detail(&text) });
    }
    crate::js_text::from_js_json(&text)
      .map_err(|error| ProviderError::Malformed(format!("{error}: {}", shorten(&text))))
  }

  /// Reads events until the terminal one. The idle limit restarts with every event; reqwest's own read timeout
  /// (the same limit, between body chunks) still covers a body that stops mid-event.
  async fn read_stream(
    &self,
    response: reqwest::Response,
    deltas: Option<&dyn DeltaSink>,
  ) -> Result<Value, ProviderError> {
    // sseer's parser consumes its buffer in place: eventsource-stream copied the rest of a chunk after every line,
    // which made a chunk of many small deltas cost its length squared.
    let mut events = EventStream::new(response.bytes_stream());
    let mut stream = ResponseStream::default();
    loop {
      let next = match self.timeouts.idle {
        Some(limit) => {
          tokio::time::timeout(limit, events.next()).await.map_err(|_| self.timed_out(Timeout::Idle, limit))?
        }
        None => events.next().await,
      };
      let event = match next {
        Some(Ok(event)) => event,
        Some(Err(EventStreamError::Transport(error))) => return Err(self.failure(error)),
        Some(Err(error)) => return Err(ProviderError::Malformed(format!("the event stream: {error}"))),
        None => return Err(stream.ended_early()),
      };
      if let Some(response) = stream.on_event(&event.event, &event.data, deltas)? {
        return Ok(response);
      }
    }
  }

  /// reqwest reports its connect and read limits as timeouts; they are named with the limit that fired. An
  /// operating system's own timeout, with no limit of ours set, stays a transport error.
  fn failure(&self, error: reqwest::Error) -> ProviderError {
    let fired = if error.is_connect() {
      self.timeouts.connect.map(|limit| (Timeout::Connect, limit))
    } else {
      self.timeouts.idle.map(|limit| (Timeout::Idle, limit))
    };
    match fired {
      Some((timeout, limit)) if error.is_timeout() => self.timed_out(timeout, limit),
      _ => transport(error),
    }
  }

  fn timed_out(&self, timeout: Timeout, limit: Duration) -> ProviderError {
    ProviderError::TimedOut { endpoint: self.endpoint.to_string(), timeout, limit }
  }
}

/// `<base>/<path>` on OpenRouter (the default base) or the base given, which must be an http(s) URL.
pub(super) fn endpoint(base_url: Option<&str>, path: &str, hint: &str) -> Result<reqwest::Url, ConfigError> {
  let base = base_url.unwrap_or(OpenRouter::DEFAULT_BASE_URL);
  reqwest::Url::parse(&format!("{}/{path}", base.trim_end_matches('/')))
    .ok()
    .filter(|url| matches!(url.scheme(), "http" | "https"))
    .ok_or_else(|| {
      ConfigError::new("INVALID_BASE_URL", format!("The OpenRouter base URL '{base}' is not an http(s) URL."), hint)
    })
}

pub(super) fn http_client(timeouts: &Timeouts) -> Result<reqwest::Client, ConfigError> {
  client_builder(timeouts).build().map_err(|error| {
    ConfigError::new(
      "PROVIDER_INIT_FAILED",
      format!("The HTTP client for OpenRouter could not start: {error}"),
      "This is an environment problem (TLS roots, resolver); please report it with the message.",
    )
  })
}

fn client_builder(timeouts: &Timeouts) -> reqwest::ClientBuilder {
  let mut builder = reqwest::Client::builder().user_agent(concat!("noetic-core/", env!("CARGO_PKG_VERSION")));
  if let Some(limit) = timeouts.connect {
    builder = builder.connect_timeout(limit);
  }
  // reqwest's read timeout runs from the request's start until the headers, then restarts with every body chunk.
  if let Some(limit) = timeouts.idle {
    builder = builder.read_timeout(limit);
  }
  builder
}

/// The error with its causes: reqwest's own message alone ("error sending request") hides the reason.
fn transport(error: reqwest::Error) -> ProviderError {
  let mut message = error.to_string();
  let mut source = std::error::Error::source(&error);
  while let Some(cause) = source {
    message.push_str(": ");
    message.push_str(&cause.to_string());
    source = cause.source();
  }
  ProviderError::Transport(message)
}

/// Whether the body is server-sent events; a server that ignores `stream: true` answers with plain JSON.
fn is_event_stream(headers: &HeaderMap) -> bool {
  let content_type = headers.get(CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("");
  content_type.trim_start().to_ascii_lowercase().starts_with("text/event-stream")
}

/// `Retry-After` in milliseconds. Only the delay-seconds form is read; an HTTP date gives none.
fn retry_after_ms(headers: &HeaderMap) -> Option<f64> {
  let seconds: f64 = headers.get(RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
  (seconds.is_finite() && seconds >= 0.0).then_some(seconds * 1000.0)
}

/// OpenRouter's `{"error": {"message"}}` when the body has one, else the body itself; shortened either way.
fn detail(text: &str) -> String {
  let message = crate::js_text::from_js_json::<Value>(text)
    .ok()
    .and_then(|body| body.pointer("/error/message").and_then(Value::as_str).map(str::to_owned));
  match message {
    Some(message) => shorten(&message),
    None if text.trim().is_empty() => "(empty body)".to_owned(),
    None => shorten(text.trim()),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn the_key_stays_out_of_debug_output() {
    let config = OpenRouterConfig { api_key: "sk-secret".into(), ..OpenRouterConfig::default() };
    assert!(!format!("{config:?}").contains("sk-secret"));
    let client = OpenRouter::new(config).unwrap();
    assert!(!format!("{client:?}").contains("sk-secret"));
  }

  #[test]
  fn a_base_url_that_is_not_http_is_a_config_error() {
    let config =
      OpenRouterConfig { api_key: "k".into(), base_url: Some("ftp://x".into()), ..OpenRouterConfig::default() };
    assert_eq!(OpenRouter::new(config).unwrap_err().code, "INVALID_BASE_URL");
  }

  #[test]
  fn timeouts_in_ms_turn_off_at_zero_negative_nan_and_infinity_and_saturate_when_huge() {
    assert_eq!(Timeouts::from_ms(250.0), Some(Duration::from_millis(250)));
    for off in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
      assert_eq!(Timeouts::from_ms(off), None, "{off}");
    }
    assert_eq!(Timeouts::from_ms(1e300), Some(Duration::MAX));
  }

  #[test]
  fn error_details_prefer_the_api_message_and_are_shortened() {
    assert_eq!(detail(r#"{"error":{"code":500,"message":"upstream exploded"}}"#), "upstream exploded");
    assert_eq!(detail(&"x".repeat(600)).chars().count(), super::super::DETAIL_CHARS + 1);
  }
}
