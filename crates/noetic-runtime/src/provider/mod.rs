//! Model providers reached over HTTP (DECISIONS A1: the provider's client is Rust). Today one: OpenRouter's
//! Responses API, streamed. The harness's tool loop drives a provider one round at a time.

mod embed;
mod openrouter;
mod stream;
pub(crate) mod wire;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use self::embed::OpenRouterEmbed;
pub use self::openrouter::{MAX_NUDGES, OpenRouter, OpenRouterConfig, Timeouts};
pub use self::wire::Unusable;
use crate::items::Item;
use crate::steps::ModelParams;
use crate::tools::ToolDef;

/// What one model round is asked: the conversation so far and the tools it may call.
#[derive(Clone, Copy)]
pub struct ProviderRequest<'a> {
  pub model: &'a str,
  /// The step's instructions; system messages in `items` are added to them, not sent as messages.
  pub instructions: Option<&'a str>,
  pub items: &'a [Arc<Item>],
  pub tools: &'a [ToolDef],
  pub params: &'a ModelParams,
  /// Asks for a reply that follows this JSON Schema (the Responses API's `text.format`).
  pub output_schema: Option<&'a serde_json::Value>,
  /// Receives the round's text and reasoning as they stream in; the round itself still arrives whole.
  pub deltas: Option<&'a dyn DeltaSink>,
  /// Ends the input with the ephemeral "continue" message (the tool loop's nudge past its round limit).
  pub nudge: bool,
  /// With prompt-cache anchoring: where the cacheable parts of `items` end, and the conversation's key.
  pub cache: Option<&'a CacheMarks>,
}

/// The cache directive of an anchored request: `cache_control` breakpoints after the items at `breakpoints` (indices
/// into the request's items; the end of the anchor band and the end of the repeated start), and `session` as
/// OpenRouter's `session_id`, which keeps a conversation on the provider that holds its cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheMarks {
  pub session: String,
  pub breakpoints: Vec<usize>,
}

/// Where a streamed round's deltas go, in the order they arrive. Called on the task reading the stream, so it
/// should return quickly. A round retried with a "continue" nudge streams again, under new item ids.
pub trait DeltaSink: Send + Sync {
  /// A piece of the assistant message `item_id`'s text (`response.output_text.delta`).
  fn text_delta(&self, _item_id: &str, _delta: &str) {}
  /// A piece of the reasoning item `item_id`'s text or summary (`response.reasoning_text.delta`,
  /// `response.reasoning_summary_text.delta`).
  fn reasoning_delta(&self, _item_id: &str, _delta: &str) {}
  /// Every event of the stream, as the wire has it (snake_case), before the deltas above are taken from it.
  fn event(&self, _kind: &str, _event: &serde_json::Value) {}
}

/// One model round's output (or several rounds' summed), items as the log holds them.
#[derive(Debug, Default)]
pub struct Round {
  pub items: Vec<Arc<Item>>,
  pub input_tokens: f64,
  pub output_tokens: f64,
  pub cached_tokens: f64,
  pub cost: f64,
  /// The first round's prompt-cache report, `None` where the provider said nothing (distinct from a reported 0):
  /// what anchoring judges a request by. Later rounds replay the same start and say nothing new.
  pub cache_read: Option<f64>,
  pub cache_write: Option<f64>,
}

impl Round {
  /// Adds another round's usage and cost (not its items).
  pub fn add_usage(&mut self, other: &Round) {
    self.input_tokens += other.input_tokens;
    self.output_tokens += other.output_tokens;
    self.cached_tokens += other.cached_tokens;
    self.cost += other.cost;
  }
}

/// Why a provider call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderError {
  /// HTTP 429; `Retry-After` in milliseconds when the server sent one.
  RateLimited { retry_after_ms: Option<f64> },
  /// Any other non-success status, with what the body said (shortened).
  Status { status: u16, detail: String },
  /// The request never got a response (connection refused, TLS...).
  Transport(String),
  /// One of the request's limits ([`Timeouts`]) ran out.
  TimedOut { endpoint: String, timeout: Timeout, limit: Duration },
  /// A success status whose body is not a Responses API result.
  Malformed(String),
  /// The event stream reported an error, or ended before the response completed.
  Stream(String),
  /// The response ended badly (failed, incomplete, empty) even after the continuation retries.
  Unusable(String),
  /// An output item of a type the strict item registry rejects.
  Item(crate::NoeticError),
}

impl fmt::Display for ProviderError {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match self {
      Self::RateLimited { retry_after_ms: Some(ms) } => {
        write!(f, "OpenRouter rate limited the request (retry after {}ms)", crate::js_number(*ms))
      }
      Self::RateLimited { retry_after_ms: None } => f.write_str("OpenRouter rate limited the request"),
      Self::Status { status, detail } => write!(f, "OpenRouter request failed with HTTP {status}: {detail}"),
      Self::Transport(message) => write!(f, "OpenRouter request failed: {message}"),
      Self::TimedOut { endpoint, timeout, limit } => {
        let ms = crate::js_number(limit.as_nanos() as f64 / 1e6);
        write!(f, "llm request to {endpoint} timed out: {} within {ms}ms ({})", timeout.what(), timeout.option())
      }
      Self::Malformed(message) => write!(f, "OpenRouter sent a response this client cannot read: {message}"),
      Self::Stream(message) => write!(f, "OpenRouter stream failed: {message}"),
      Self::Unusable(message) => f.write_str(message),
      Self::Item(error) => error.fmt(f),
    }
  }
}

impl std::error::Error for ProviderError {}

/// How much of an error body, error message or unreadable event goes into an error.
const DETAIL_CHARS: usize = 500;

fn shorten(text: &str) -> String {
  match text.char_indices().nth(DETAIL_CHARS) {
    Some((cut, _)) => format!("{}…", &text[..cut]),
    None => text.to_owned(),
  }
}

/// Which of [`Timeouts`]' limits ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeout {
  Connect,
  Idle,
  Total,
}

impl Timeout {
  fn what(self) -> &'static str {
    match self {
      Self::Connect => "could not connect",
      Self::Idle => "no response",
      Self::Total => "no complete response",
    }
  }

  /// The setting that sets the limit, so that the message says what to change.
  fn option(self) -> &'static str {
    match self {
      Self::Connect => "connect timeout",
      Self::Idle => "streamIdleTimeoutMs",
      Self::Total => "llm.timeoutMs",
    }
  }
}
