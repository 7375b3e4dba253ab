//! The session methods of `NativeHarness`: `execute`, responses, status, aborts, seeding and the event streams.
//! Answers that may come later (a response, the end of an abort, the next events) arrive as notifications through
//! the dispatcher, `{op: 'settled', run: <waiter>, result}`; ones ready at once are returned directly.

use std::sync::{Arc, Mutex, PoisonError};

use napi::bindgen_prelude::*;
use napi_derive::napi;
use noetic_runtime::harness::session::{
  Deltas, QueuedMessage, Refused, Streams, TurnOutcome, TurnResponse, TurnText, Waiter, read_message,
};
use noetic_runtime::host::StepValue;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::describe;
use crate::dispatcher::{Dispatch, foreground, js_polls_next};
use crate::guard::guarded;
use crate::harness::NativeHarness;
use crate::js_string::JsText;
use crate::protocol::{config_json, error_json, noetic_json, to_napi};
use crate::usage_shelf::UsageShelf;
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;

/// How many events one read hands over at most.
const READ_BATCH: usize = 256;

/// A turn's response as JS reads it (`toResponse` in js/session.cjs), written straight from the response: a
/// `json!` tree of it cost a map, a hash per key and a copy of the text, once per turn of every session.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResponseJson<'a> {
  context_id: &'a str,
  log_len: usize,
  usage: UsageJson,
  /// Upstream's `text` is the turn's value, whatever it is: absent when undefined, and when JS holds the value
  /// (`textKept`: it is kept with the turn's context).
  #[serde(skip_serializing_if = "Option::is_none")]
  text: Option<TextJson<'a>>,
  #[serde(skip_serializing_if = "std::ops::Not::not")]
  text_kept: bool,
  #[serde(skip_serializing_if = "Option::is_none")]
  usage_key: Option<u32>,
  /// A usage without layers carries no items: a few numbers and two ids, sent with the response rather than kept
  /// on the shelf, which cost a second crossing and a finalizer for every response JS let go.
  #[serde(skip_serializing_if = "Option::is_none")]
  last_layer_usage: Option<Box<RawValue>>,
  #[serde(skip_serializing_if = "Option::is_none")]
  cost: Option<f64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsageJson {
  input_tokens: f64,
  output_tokens: f64,
  #[serde(skip_serializing_if = "Option::is_none")]
  cached_tokens: Option<f64>,
  #[serde(skip_serializing_if = "Option::is_none")]
  cache_write_tokens: Option<f64>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum TextJson<'a> {
  Text(&'a str),
  Json(&'a Value),
}

impl<'a> ResponseJson<'a> {
  fn of(response: &'a Arc<TurnResponse>, usages: Option<&UsageShelf>) -> Self {
    let text = match &response.text {
      TurnText::Text(text) => Some(TextJson::Text(text)),
      TurnText::Json(json) => Some(TextJson::Json(json)),
      TurnText::Undefined | TurnText::Host => None,
    };
    // A usage with layers waits on the shelf until JS reads it; one without (no items) goes with the response.
    let (usage_key, last_layer_usage) = match (usages, &response.last_layer_usage) {
      (Some(_), Some(usage)) if usage.layers().is_empty() => (None, RawValue::from_string(usage.to_json_text()).ok()),
      (Some(usages), Some(_)) => (Some(usages.put(response)), None),
      _ => (None, None),
    };
    Self {
      context_id: &response.context_id,
      log_len: response.log_len,
      usage: UsageJson {
        input_tokens: response.input_tokens,
        output_tokens: response.output_tokens,
        cached_tokens: response.cached_tokens,
        cache_write_tokens: response.cache_write_tokens,
      },
      text,
      text_kept: response.text == TurnText::Host,
      usage_key,
      last_layer_usage,
      cost: (response.cost > 0.0).then_some(response.cost),
    }
  }
}

fn outcome_json(outcome: &TurnOutcome, usages: Option<&UsageShelf>) -> String {
  #[derive(Serialize)]
  struct Answered<'a> {
    ok: bool,
    value: ResponseJson<'a>,
  }
  match outcome {
    Ok(response) => serde_json::to_string(&Answered { ok: true, value: ResponseJson::of(response, usages) })
      .unwrap_or_else(|e| json!({ "ok": false, "error": { "kind": "thrown", "message": e.to_string() } }).to_string()),
    Err(error) => json!({ "ok": false, "error": error_json(error) }).to_string(),
  }
}

/// A waiter answered either during the call that made it (returned directly) or later (a notification).
struct Answer {
  slot: Arc<Mutex<(bool, Option<String>)>>,
}

impl Answer {
  fn new() -> Self {
    Self { slot: Arc::new(Mutex::new((true, None))) }
  }

  /// `usages`: where a response's usage waits to be read; `None` when JS makes no response of the outcome.
  fn waiter(&self, dispatch: &Dispatch, usages: Option<&UsageShelf>, id: u32) -> Waiter {
    let slot = Arc::clone(&self.slot);
    let dispatch = dispatch.clone();
    let usages = usages.cloned();
    Box::new(move |outcome| {
      let text = outcome_json(&outcome, usages.as_ref());
      let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
      if slot.0 {
        slot.1 = Some(text);
      } else {
        drop(slot);
        dispatch.settle(id, &text);
      }
    })
  }

  /// Ends the call: an answer already given is returned; a later one will be notified.
  fn now(self) -> Option<String> {
    let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
    slot.0 = false;
    slot.1.take()
  }
}

/// The message JS sent, read and checked by the runtime (`session::read_message`); the binding describes its layers.
fn queued_message(native: &NativeHarness, text: &str) -> Result<(String, QueuedMessage)> {
  let inner = &native.inner;
  let layers = |memory: &Value| describe::layer_set(memory, Some(&native.dispatch));
  read_message(text, inner.initial_step.is_some(), inner.item_types, layers, inner.default_delivery).map_err(
    |refused| match refused {
      Refused::Config(error) => to_napi(config_json(&error)),
      Refused::Item(error) => to_napi(noetic_json(&error)),
    },
  )
}

impl NativeHarness {
  fn streams(&self, thread: &str) -> Arc<Streams> {
    Arc::clone(&self.inner.session(thread).streams)
  }
}

#[napi]
impl NativeHarness {
  /// Queues a message on `thread`'s session. True when it started the session's turns: JS then holds Node open
  /// until the notification `{op: 'drained'}` says they have ended.
  #[napi(catch_unwind)]
  pub fn execute(&self, #[napi(ts_arg_type = "string")] message: JsText) -> Result<bool> {
    let (thread, message) = queued_message(self, &message)?;
    let drain = js_polls_next(|| self.inner.execute_message(&thread, message)).map_err(|e| to_napi(config_json(&e)))?;
    let Some(drain) = drain else { return Ok(false) };
    let dispatch = self.dispatch.clone();
    self.driver.spawn(async move {
      // A panic in a turn ends the drain; JS must still hear of it, or Node would be held open.
      let _ = AssertUnwindSafe(foreground(drain)).catch_unwind().await;
      dispatch.notify(r#"{"op":"drained"}"#.to_owned());
    });
    Ok(true)
  }

  /// `thread`'s response as `{ok, value}` / `{ok: false, error}` JSON when it is ready now; otherwise it arrives
  /// as `settled` for `waiter`.
  #[napi(catch_unwind)]
  pub fn session_response(&self, thread: String, waiter: u32) -> Option<String> {
    let answer = Answer::new();
    // In the runtime's context: a response read for the first time may set its session's idle timer.
    within_runtime_if_available(|| {
      self.inner.agent_response(&thread, answer.waiter(&self.dispatch, Some(&self.usages), waiter));
    });
    answer.now()
  }

  /// Aborts `thread`'s turn in flight; its end is returned or arrives as for `session_response`.
  #[napi(catch_unwind)]
  pub fn session_abort(&self, thread: String, reason: String, waiter: u32) -> Option<String> {
    let answer = Answer::new();
    js_polls_next(|| self.inner.abort_session(&thread, &reason, answer.waiter(&self.dispatch, None, waiter)));
    answer.now()
  }

  /// A session response's `lastLayerUsage` as JSON (`null` when it had none), read once: JS keeps what it parsed.
  #[napi(catch_unwind)]
  pub fn take_layer_usage(&self, key: u32) -> Option<String> {
    self.usages.take(key).and_then(|response| response.last_layer_usage.as_ref().map(|usage| usage.to_json_text()))
  }

  /// JS collected a response whose `lastLayerUsage` was never read.
  #[napi(catch_unwind)]
  pub fn drop_layer_usage(&self, key: u32) {
    self.usages.take(key);
  }

  /// JS collected these responses without reading their `lastLayerUsage`: the finalizers of one collection, in one
  /// call (a loaded harness lets go of a response per turn, and a call each cost more than the drop under Bun).
  #[napi(catch_unwind)]
  pub fn drop_layer_usages(&self, keys: Uint32Array) {
    self.usages.take_all(&keys);
  }

  /// As upstream's `HarnessStatus`, JSON.
  #[napi(catch_unwind)]
  pub fn session_status(&self, thread: String) -> String {
    self.inner.existing_session(&thread).map_or_else(|| json!({ "kind": "idle" }), |s| s.status().to_json()).to_string()
  }

  #[napi(catch_unwind)]
  pub fn session_queue_size(&self, thread: String) -> u32 {
    self.inner.existing_session(&thread).map_or(0, |s| s.queue_size() as u32)
  }

  /// Drops `thread`'s session from memory when it is idle (`harness.evictSession`).
  #[napi(catch_unwind)]
  pub fn evict_session(&self, thread: String) -> bool {
    self.inner.evict_session(&thread)
  }

  /// Replaces `thread`'s history with `held` items JS holds, to be sent when a turn first reads the log (DECISIONS
  /// I3, L1); returns the id of the context that holds it.
  #[napi(catch_unwind)]
  pub fn seed_session(&self, thread: String, held: u32) -> Result<String> {
    let id = self.inner.seed_session(&thread, Vec::new()).map_err(|e| to_napi(config_json(&e)))?;
    if let Some(ctx) = self.inner.context(&id) {
      ctx.hold_items(held);
    }
    Ok(id)
  }

  /// Stores `thread`'s seed if one waits (with `persistSessions`); its outcome arrives as `settled` for `run`.
  #[napi(catch_unwind)]
  pub fn session_store_seed(&self, thread: String, run: u32) {
    let harness = Arc::clone(&self.inner);
    self.start_run(run, async move { harness.store_seed(&thread).await.map(|()| StepValue::Undefined) });
  }

  /// The items the next turn's model would be sent as far as memory decides (JSON texts, `previewRequestItems`).
  #[napi]
  pub async fn preview_request(&self, thread: String) -> Result<String> {
    let harness = Arc::clone(&self.inner);
    guarded(async move {
      Ok(match harness.preview_request(&thread).await {
        Ok(items) => {
          let texts: Vec<String> = items.iter().map(|item| item.to_json_text()).collect();
          format!(r#"{{"ok":true,"value":[{}]}}"#, texts.join(","))
        }
        Err(error) => json!({ "ok": false, "error": error_json(&error) }).to_string(),
      })
    })
    .await
  }

  /// A new reader of `thread`'s events; returns its cursor.
  #[napi(catch_unwind)]
  pub fn events_open(&self, thread: String) -> f64 {
    self.streams(&thread).events.open_reader() as f64
  }

  #[napi(catch_unwind)]
  pub fn events_close(&self, thread: String) {
    self.streams(&thread).events.close_reader();
  }

  /// `{next, events}` JSON for the events from `cursor` on (with `deltas`, `text` or `reasoning`: the delta strings
  /// of those among them, `Deltas`); when there are none yet, `null`, and `{op: 'settled', run: waiter}` is notified
  /// once one arrives.
  #[napi(catch_unwind)]
  pub fn events_read(&self, thread: String, cursor: f64, waiter: u32, deltas: Option<String>) -> Option<String> {
    let dispatch = self.dispatch.clone();
    let wake = Box::new(move || dispatch.settle(waiter, "null"));
    let batch = self.streams(&thread).events.read(cursor as u64, READ_BATCH, wake)?;
    let events = match deltas.as_deref().and_then(Deltas::parse) {
      Some(deltas) => {
        let texts: Vec<String> = batch.events.iter().filter_map(|event| deltas.of(event)).collect();
        serde_json::to_string(&texts).unwrap_or_else(|_| "[]".to_owned())
      }
      None => format!("[{}]", batch.events.iter().map(|event| &**event).collect::<Vec<_>>().join(",")),
    };
    Some(format!(r#"{{"next":{},"events":{events}}}"#, batch.next))
  }

  /// A new reader of `thread`'s item snapshots (`getItemStream`); returns its id.
  #[napi(catch_unwind)]
  pub fn items_open(&self, thread: String) -> f64 {
    self.streams(&thread).open_item_reader() as f64
  }

  #[napi(catch_unwind)]
  pub fn items_close(&self, thread: String, reader: f64) {
    self.streams(&thread).close_item_reader(reader as u64);
  }

  /// A JSON array of (at most a batch of) the item changes the reader has not read (an item whole, or the text a
  /// delta added: see `ItemReaders`), from which JS makes its snapshots; when there are none, `null`, and `{op: 'settled', run:
  /// waiter}` is notified once there is one.
  #[napi(catch_unwind)]
  pub fn items_read(&self, thread: String, reader: f64, waiter: u32) -> Option<String> {
    let dispatch = self.dispatch.clone();
    let wake = Box::new(move || dispatch.settle(waiter, "null"));
    let snapshots = self.streams(&thread).items.read(reader as u64, READ_BATCH, wake)?;
    Some(format!("[{}]", snapshots.join(",")))
  }
}
