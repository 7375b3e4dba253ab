//! The OpenRouter client: one `POST {baseUrl}/responses` per round, non-streaming.

use std::fmt;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::Value;

use super::wire::{self, Reply};
use super::{ProviderError, ProviderRequest, Round};
use crate::error::ConfigError;

/// How many times a failed, incomplete or empty response is retried with a "continue" nudge (upstream's
/// `MAX_RECOVERY_CONTINUATIONS`).
const MAX_NUDGES: usize = 3;
/// How much of an error body goes into the error message.
const DETAIL_CHARS: usize = 500;

/// What `llm: {provider: 'openrouter', ...}` resolved to. The key is never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenRouterConfig {
  pub api_key: String,
  /// Defaults to [`OpenRouter::DEFAULT_BASE_URL`].
  pub base_url: Option<String>,
  /// Send `X-OpenRouter-Cache: true`, so that identical calls are answered from OpenRouter's cache.
  pub cache: bool,
}

impl fmt::Debug for OpenRouterConfig {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.debug_struct("OpenRouterConfig")
      .field("api_key", &"<redacted>")
      .field("base_url", &self.base_url)
      .field("cache", &self.cache)
      .finish()
  }
}

pub struct OpenRouter {
  http: reqwest::Client,
  endpoint: reqwest::Url,
  api_key: String,
  cache: bool,
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
    let base = config.base_url.as_deref().unwrap_or(Self::DEFAULT_BASE_URL);
    let endpoint = reqwest::Url::parse(&format!("{}/responses", base.trim_end_matches('/')))
      .ok()
      .filter(|url| matches!(url.scheme(), "http" | "https"))
      .ok_or_else(|| {
        ConfigError::new(
          "INVALID_BASE_URL",
          format!("The OpenRouter base URL '{base}' is not an http(s) URL."),
          "Pass `llm.baseUrl` (or OPENROUTER_BASE_URL) like 'https://openrouter.ai/api/v1', or leave it unset.",
        )
      })?;
    let http = reqwest::Client::builder()
      .user_agent(concat!("noetic-core/", env!("CARGO_PKG_VERSION")))
      .build()
      .map_err(|error| {
        ConfigError::new(
          "PROVIDER_INIT_FAILED",
          format!("The HTTP client for OpenRouter could not start: {error}"),
          "This is an environment problem (TLS roots, resolver); please report it with the message.",
        )
      })?;
    Ok(Self { http, endpoint, api_key: config.api_key, cache: config.cache })
  }

  /// One model round. A response that failed, stopped early or came back empty is asked again with a "continue"
  /// nudge, as upstream does, before it becomes an error; only the usable round's usage counts.
  pub async fn respond(&self, request: &ProviderRequest<'_>) -> Result<Round, ProviderError> {
    let mut nudges = 0;
    loop {
      let body = self.post(&wire::request_body(request, nudges > 0)).await?;
      match wire::read_response(&body)? {
        Reply::Usable(round) => return Ok(round),
        Reply::Unusable(problem) if nudges >= MAX_NUDGES => return Err(ProviderError::Unusable(problem)),
        Reply::Unusable(_) => nudges += 1,
      }
    }
  }

  async fn post(&self, body: &Value) -> Result<Value, ProviderError> {
    let mut request = self.http.post(self.endpoint.clone()).bearer_auth(&self.api_key).json(body);
    if self.cache {
      request = request.header("X-OpenRouter-Cache", "true");
    }
    let response = request.send().await.map_err(transport)?;
    let status = response.status();
    if status.as_u16() == 429 {
      return Err(ProviderError::RateLimited { retry_after_ms: retry_after_ms(response.headers()) });
    }
    let text = response.text().await.map_err(transport)?;
    if !status.is_success() {
      return Err(ProviderError::Status { status: status.as_u16(), detail: detail(&text) });
    }
    crate::js_text::from_js_json(&text)
      .map_err(|error| ProviderError::Malformed(format!("{error}: {}", shorten(&text))))
  }
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

fn shorten(text: &str) -> String {
  match text.char_indices().nth(DETAIL_CHARS) {
    Some((cut, _)) => format!("{}…", &text[..cut]),
    None => text.to_owned(),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn the_key_stays_out_of_debug_output() {
    let config = OpenRouterConfig { api_key: "sk-secret".into(), base_url: None, cache: false };
    assert!(!format!("{config:?}").contains("sk-secret"));
    let client = OpenRouter::new(config).unwrap();
    assert!(!format!("{client:?}").contains("sk-secret"));
  }

  #[test]
  fn a_base_url_that_is_not_http_is_a_config_error() {
    let config = OpenRouterConfig { api_key: "k".into(), base_url: Some("ftp://x".into()), cache: false };
    assert_eq!(OpenRouter::new(config).unwrap_err().code, "INVALID_BASE_URL");
  }

  #[test]
  fn error_details_prefer_the_api_message_and_are_shortened() {
    assert_eq!(detail(r#"{"error":{"code":500,"message":"upstream exploded"}}"#), "upstream exploded");
    assert_eq!(detail(&"x".repeat(600)).chars().count(), DETAIL_CHARS + 1);
  }
}
