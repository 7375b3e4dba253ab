//! Sessions: `harness.execute(input, {threadId})` and what reads them (responses, status, the queue, streams).
//!
//! A session is one thread's inbox and its turns. Messages queue; a turn takes every queued message at once and
//! runs the harness's initial step over the session's history; the next turn starts when it ends. The first turn
//! starts inside `execute` itself, as upstream's does, so a caller sees `generating` at once.
//!
//! Every turn is an execution in a fresh context (DECISIONS S1): its layers init at its start and complete and
//! dispose at its end. The history moves from the last turn's context into the next one's, never copied, so a turn's
//! cost does not grow with the length of the thread.

mod events;
mod given;
mod io;
mod item_readers;
mod items;
mod persisted;
mod store;
mod streams;
mod turns;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Value, json};

pub use self::events::{Batch, EventLog, Wake};
pub use self::given::{DEFAULT_THREAD_ID, Refused, read_message, thread_of};
pub use self::store::SessionStore;
pub use self::streams::{Deltas, Streams};
use super::{ExecContext, RunError};
use crate::ConfigError;
use crate::items::Item;
use crate::memory::registry::LayerSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeliveryMode {
  /// Queued; runs in the turn after the one in flight.
  #[default]
  NextTurn,
  /// Joins the turn in flight before its next tool round (a provider's tool loop); otherwise runs as the next turn.
  BetweenRounds,
  /// Aborts the turn in flight and runs first in the next.
  Interrupt,
}

impl DeliveryMode {
  /// Every mode's name, in the order messages list them.
  pub const NAMES: [&str; 3] = ["next-turn", "between-rounds", "interrupt"];

  pub fn parse(mode: &str) -> Option<Self> {
    match mode {
      "next-turn" => Some(Self::NextTurn),
      "between-rounds" => Some(Self::BetweenRounds),
      "interrupt" => Some(Self::Interrupt),
      _ => None,
    }
  }

  /// An `execute` call's `deliveryMode` as JSON: the harness's `default` when null or absent.
  pub fn given(mode: Option<&serde_json::Value>, default: Self) -> Result<Self, ConfigError> {
    match mode {
      None | Some(serde_json::Value::Null) => Ok(default),
      Some(value) => value.as_str().and_then(Self::parse).ok_or_else(|| {
        ConfigError::new("INVALID_DELIVERY_MODE", format!("execute: unknown deliveryMode {value}."), Self::hint())
      }),
    }
  }

  /// What a message naming a mode that is not one suggests.
  pub fn hint() -> String {
    format!("Use one of {}.", Self::NAMES.map(|name| format!("'{name}'")).join(", "))
  }
}

/// One `execute` call, its input already made items.
#[derive(Clone)]
pub struct QueuedMessage {
  pub id: String,
  pub items: Vec<Arc<Item>>,
  pub mode: DeliveryMode,
  pub resource_id: Option<String>,
  /// The message's own layers (`options.memory`), instead of the harness's.
  pub layers: Option<Arc<LayerSet>>,
  /// `options.state`: what the turn's `ctx.state` starts as (the host's value).
  pub state: Option<crate::host::HostRef>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Status {
  #[default]
  Idle,
  Generating {
    turn_id: String,
    started_at: f64,
  },
  Aborting {
    turn_id: String,
  },
}

impl Status {
  /// As upstream's `HarnessStatus`.
  pub fn to_json(&self) -> Value {
    match self {
      Self::Idle => json!({ "kind": "idle" }),
      Self::Generating { turn_id, started_at } => {
        json!({ "kind": "generating", "startedAt": started_at, "turnId": turn_id })
      }
      Self::Aborting { turn_id } => json!({ "kind": "aborting", "turnId": turn_id }),
    }
  }
}

/// What a finished turn answers `getAgentResponse` with. `items` is the context's log up to `log_len`.
#[derive(Debug, Clone)]
pub struct TurnResponse {
  pub context_id: String,
  pub log_len: usize,
  /// The turn's value, which upstream names `text` whatever it is.
  pub text: TurnText,
  pub input_tokens: f64,
  pub output_tokens: f64,
  /// Shown only when above 0, or (with `contextCache`) when a provider reported it.
  pub cached_tokens: Option<f64>,
  /// With `contextCache`, what a provider reported writing to its cache.
  pub cache_write_tokens: Option<f64>,
  pub cost: f64,
  pub last_layer_usage: Option<crate::harness::usage::LayerUsage>,
}

/// What a turn's step returned. Usually the model's text; a step that returns something else has it passed through.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnText {
  Text(String),
  Json(serde_json::Value),
  Undefined,
  /// A value only the host has: it keeps it with the turn's context (see [`crate::host::Host::turn_value`]).
  Host,
}

impl TurnText {
  pub fn as_str(&self) -> Option<&str> {
    match self {
      Self::Text(text) => Some(text),
      _ => None,
    }
  }
}

pub type TurnOutcome = Result<Arc<TurnResponse>, Arc<RunError>>;
/// Told once how a turn, or the burst of turns it waits for, ended.
pub type Waiter = Box<dyn FnOnce(TurnOutcome) + Send>;
/// The work of a session's turns, for the caller to spawn (the binding marks it as a run JS awaits).
pub type Drain = Pin<Box<dyn Future<Output = ()> + Send>>;

pub struct Session {
  pub thread_id: String,
  pub streams: Arc<Streams>,
  state: Mutex<SessionState>,
  /// With the history persisted: the session's storage work (a seed's write, a turn's catch-up and append) runs one
  /// piece at a time, in the order it came.
  lane: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct SessionState {
  queue: VecDeque<QueuedMessage>,
  status: Status,
  /// A drain task is running turns.
  draining: bool,
  /// The context holding the history (the last turn's, or a seed's); `None` until the first turn or seed.
  context: Option<Arc<ExecContext>>,
  /// The context of the turn in flight, which an abort aborts.
  running: Option<Arc<ExecContext>>,
  last: Option<TurnOutcome>,
  /// `last` has not been answered to any `getAgentResponse`: the session stays in memory until it is.
  unread: bool,
  /// `getAgentResponse` callers waiting for the queue to drain.
  waiters: Vec<Waiter>,
  /// `abort` callers waiting for the turn in flight to end.
  turn_end: Vec<Waiter>,
  /// How many items of the log the turn in flight took are the session's history: the rest are the turn's own,
  /// which become history only if its step returns (S31).
  history_len: usize,
  /// With the history persisted: the number of the last stored entry the history in memory includes.
  stored: u64,
  /// How many items of the history in memory were stored when the turn in flight started: it appends the rest.
  stored_len: usize,
  /// The history in memory is a seed not stored yet: it is stored as a replacement entry before anything else.
  replace: bool,
  /// A seed was stored while the turn in flight ran: if the turn's step returns, its history replaces the seed's, so
  /// its entry is a replacement too.
  turn_replaces: bool,
  /// The history in memory no longer matches the stored one (another process's turn went in before this one's,
  /// or an append failed): the next turn reads it all back.
  reload: bool,
  /// Changes with every message and seed: an idle timer set before it finds a later one and leaves the session.
  epoch: u64,
}

impl Session {
  fn new(thread_id: String) -> Self {
    Self { thread_id, streams: Arc::default(), state: Mutex::default(), lane: tokio::sync::Mutex::new(()) }
  }

  fn lock(&self) -> MutexGuard<'_, SessionState> {
    self.state.lock().unwrap_or_else(PoisonError::into_inner)
  }

  pub fn status(&self) -> Status {
    self.lock().status.clone()
  }

  pub fn queue_size(&self) -> usize {
    self.lock().queue.len()
  }

  /// The context holding the history, if the session has one yet.
  pub fn context(&self) -> Option<Arc<ExecContext>> {
    self.lock().context.clone()
  }

  /// Takes the queued `between-rounds` messages, the others staying queued in order (upstream's
  /// `drainBetweenRoundsMessages`).
  pub fn take_between_rounds(&self) -> Vec<QueuedMessage> {
    let mut state = self.lock();
    if !state.queue.iter().any(|message| message.mode == DeliveryMode::BetweenRounds) {
      return Vec::new();
    }
    let (taken, kept): (VecDeque<_>, VecDeque<_>) =
      state.queue.drain(..).partition(|message| message.mode == DeliveryMode::BetweenRounds);
    state.queue = kept;
    taken.into()
  }
}

/// A queued message's text, as upstream injects it: the text parts of its message items, a line each.
pub fn message_text(message: &QueuedMessage) -> String {
  let mut texts = Vec::new();
  for item in message.items.iter().filter(|item| item.item_type() == "message") {
    for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
      let is_text = matches!(part.get("type").and_then(Value::as_str), Some("input_text" | "output_text"));
      if let (true, Some(text)) = (is_text, part.get("text").and_then(Value::as_str)) {
        texts.push(text);
      }
    }
  }
  texts.join("\n")
}
