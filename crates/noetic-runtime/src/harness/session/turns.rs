//! A session's turns: queuing a message, draining the queue turn by turn, the context a turn runs in, and what
//! reads the session from outside (responses, aborts, seeding, the request preview).

use std::sync::{Arc, MutexGuard, PoisonError};

use serde_json::json;

use super::io::SessionIo;
use super::{
  DeliveryMode, Drain, QueuedMessage, Session, SessionState, Status, TurnOutcome, TurnResponse, TurnText, Waiter,
};
use crate::error::{ConfigError, NoeticError};
use crate::harness::execute;
use crate::harness::{ExecContext, Harness, RunResult, layer_budgets};
use crate::host::StepValue;
use crate::items::Item;
use crate::js_date::now_millis;
use crate::memory::lifecycle;
use crate::memory::registry::LayerSet;
use crate::steps::Step;

/// Takes every queued message for the next turn and marks the session generating; `None` when none is queued.
fn begin_turn(state: &mut SessionState) -> Option<(String, Vec<QueuedMessage>)> {
  if state.queue.is_empty() {
    return None;
  }
  let turn_id = uuid::Uuid::new_v4().to_string();
  state.status = Status::Generating { turn_id: turn_id.clone(), started_at: now_millis() };
  Some((turn_id, state.queue.drain(..).collect()))
}

pub(super) fn no_step() -> ConfigError {
  ConfigError::new(
    "NO_STEP_CONFIGURED",
    "No initialStep configured on this harness.",
    "Pass `initialStep` in constructor options, or use run() directly.",
  )
}

impl Harness {
  fn sessions(&self) -> MutexGuard<'_, std::collections::HashMap<String, Arc<Session>>> {
    self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
  }

  /// The session of `thread`, made on first use (a stream may be opened before the first message). Looked up first,
  /// so that a turn of an existing session (nearly every call) copies no thread name.
  pub fn session(&self, thread: &str) -> Arc<Session> {
    let mut sessions = self.sessions();
    if let Some(session) = sessions.get(thread) {
      return Arc::clone(session);
    }
    Arc::clone(sessions.entry(thread.to_owned()).or_insert_with(|| Arc::new(Session::new(thread.to_owned()))))
  }

  /// The session of `thread` if it exists; reads of status and queue size never make one.
  pub fn existing_session(&self, thread: &str) -> Option<Arc<Session>> {
    self.sessions().get(thread).cloned()
  }

  /// Queues a message. When no turn is running, the turn that takes it starts now and the work of the session's
  /// turns is returned for the caller to spawn.
  pub fn execute_message(self: &Arc<Self>, thread: &str, message: QueuedMessage) -> Result<Option<Drain>, ConfigError> {
    let step = self.initial_step.clone().ok_or_else(no_step)?;
    if let Some(store) = &self.session_store {
      store.check_thread(thread, "execute")?;
    }
    let session = self.session(thread);
    let first = {
      let mut state = session.lock();
      let generating = matches!(state.status, Status::Generating { .. });
      if message.mode == DeliveryMode::Interrupt && generating {
        state.epoch += 1;
        state.queue.push_front(message);
        abort_locked(&mut state, "interrupt");
        return Ok(None);
      }
      state.epoch += 1;
      state.queue.push_back(message);
      if state.draining {
        return Ok(None);
      }
      state.draining = true;
      begin_turn(&mut state)
    };
    let Some(first) = first else { return Ok(None) };
    self.announce(&session, &first.0, &first.1);
    let harness = Arc::clone(self);
    Ok(Some(Box::pin(async move { harness.drain(session, step, first).await })))
  }

  /// Runs turns until the queue is empty.
  async fn drain(self: Arc<Self>, session: Arc<Session>, step: Arc<Step>, first: (String, Vec<QueuedMessage>)) {
    let mut turn = first;
    loop {
      let (turn_id, messages) = turn;
      let (outcome, kept) = self.run_turn(&session, &step, &turn_id, messages).await;
      let (next, waiters, ended) = {
        let mut state = session.lock();
        state.status = Status::Idle;
        // A history seeded while the turn ran gives way to the turn's, as upstream's does, unless the turn's step
        // failed: that turn leaves no history, so the seed stands.
        let displaced = match state.running.take() {
          Some(ran) if !holds(&state.context, &ran) => {
            if kept {
              // Its history is stored (it was acknowledged): a seed it displaces no longer waits to be.
              state.replace = false;
              state.context.replace(ran)
            } else {
              Some(ran)
            }
          }
          _ => None,
        };
        if let Some(displaced) = displaced {
          self.drop_context(&displaced.id);
        }
        state.last = Some(outcome.clone());
        let ended = std::mem::take(&mut state.turn_end);
        let next = begin_turn(&mut state);
        // As upstream: a success answers waiters once the queue is drained; a failure answers them at once.
        let waiters = if next.is_none() || outcome.is_err() { std::mem::take(&mut state.waiters) } else { Vec::new() };
        state.unread = waiters.is_empty();
        if next.is_none() {
          state.draining = false;
        }
        (next, waiters, ended)
      };
      for waiter in ended.into_iter().chain(waiters) {
        waiter(outcome.clone());
      }
      match next {
        Some(next) => {
          self.announce(&session, &next.0, &next.1);
          turn = next;
        }
        None => return self.evict_when_idle(&session),
      }
    }
  }

  fn announce(&self, session: &Session, turn_id: &str, messages: &[QueuedMessage]) {
    let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct TurnStarted<'a> {
      turn_id: &'a str,
      message_ids: Vec<&'a str>,
    }
    session.streams.framework(&self.name, "turn_started", &TurnStarted { turn_id, message_ids: ids });
  }

  /// Runs one turn and reports it on the session's stream; also whether the turn's history stands (its step
  /// returned), which decides what a history seeded meanwhile gives way to.
  async fn run_turn(
    &self,
    session: &Arc<Session>,
    step: &Step,
    turn_id: &str,
    messages: Vec<QueuedMessage>,
  ) -> (TurnOutcome, bool) {
    let started = std::time::Instant::now();
    let mut kept = true;
    let outcome = match self.turn_context(session, &messages[0]).await {
      Ok(ctx) => {
        let history_len = ctx.state().log.len();
        let mut result = self.turn_in(&ctx, step, &messages).await;
        // With persistence a turn is acknowledged only once its items are stored; one that cannot be is a failure.
        if result.is_ok()
          && let Err(error) = self.store_turn(session, &ctx).await
        {
          result = Err(error);
        }
        kept = result.is_ok();
        if !kept {
          // As upstream's session keeps the history of a turn whose step returned, and only of such a turn: a failed
          // turn's items (its messages, and whatever rounds it got through) leave the history, so the next turn
          // starts from the one before. One aborted after its step returned keeps them, as upstream's.
          ctx.state().log.truncate(history_len);
          self.env.host.history_cut(&ctx.id, history_len);
        }
        match (result, ctx.aborted()) {
          // A turn aborted while a step was finishing anyway still ends as aborted: the caller asked it to stop.
          (Ok(_), Some(reason)) => Err(Arc::new(NoeticError::cancelled(&reason).into())),
          (Ok(value), None) => {
            if let StepValue::Host(value) = value {
              self.env.host.turn_value(&ctx.id, value);
            }
            Ok(Arc::new(response_of(&ctx, &value)))
          }
          (Err(error), _) => Err(Arc::new(error)),
        }
      }
      Err(error) => Err(Arc::new(error)),
    };
    let events = &session.streams;
    match &outcome {
      Ok(_) => {
        // Whole milliseconds, as upstream's difference of two `Date.now()` readings.
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct TurnCompleted<'a> {
          turn_id: &'a str,
          duration_ms: u64,
        }
        events.framework(&self.name, "turn_completed", &TurnCompleted { turn_id, duration_ms: ms });
      }
      Err(error) => {
        events.framework(&self.name, "turn_aborted", &json!({ "turnId": turn_id, "reason": error.to_string() }))
      }
    }
    (outcome, kept)
  }

  /// One turn in its own context, as one execution: init (each layer reloads its state), the turn's items through
  /// onItemAppend into the log, the initial step with an empty input (the input is in the log, as upstream's turns
  /// have it), then onComplete and dispose whatever happened. The host then has every item of the log, so that the
  /// turn's response can be read after the next turn has taken the log.
  async fn turn_in(&self, ctx: &Arc<ExecContext>, step: &Step, messages: &[QueuedMessage]) -> RunResult<StepValue> {
    // As upstream, the first message's options set up the turn.
    if let Some(state) = messages[0].state {
      self.env.host.set_context_state(&ctx.id, state);
    }
    // A step of the turn that runs another step in its context (`ctx.harness.run(step, input, ctx)`) joins it.
    let result = self.in_execution(ctx, || self.turn_step(ctx, step, messages)).await;
    // The host is handed the items it does not hold, so that the turn's response still has them after the next
    // turn has moved the log on; usually it holds them all (the input and the model's answer are its own), and is
    // told nothing.
    // Taken out of the lock first: the host writes their texts.
    let (from, unheld) = {
      let mut state = ctx.state();
      let (from, unheld) = state.log.unheld();
      (from, unheld.to_vec())
    };
    if !unheld.is_empty() {
      self.env.host.history_settled(&ctx.id, from, &unheld);
    }
    result
  }

  async fn turn_step(&self, ctx: &Arc<ExecContext>, step: &Step, messages: &[QueuedMessage]) -> RunResult<StepValue> {
    let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
    let input: Vec<Arc<Item>> = messages.iter().flat_map(|m| m.items.iter().cloned()).collect();
    // `unchanged`: the items are the very ones the host handed over, so it may keep using its own objects.
    let (items, unchanged) = if ctx.layers().is_empty() || input.is_empty() {
      (input, true)
    } else {
      // Boxed: inline, onItemAppend's future would size the turn's, which waits on the model for most of its life.
      let items = Box::pin(lifecycle::append_items(&self.env, &self.scope(ctx), input.clone())).await?;
      let unchanged = items.len() == input.len() && items.iter().zip(&input).all(|(a, b)| Arc::ptr_eq(a, b));
      (items, unchanged)
    };
    let from = {
      let mut state = ctx.state();
      let from = state.log.len();
      let count = items.len();
      for item in items {
        state.log.push(item);
      }
      if unchanged {
        // The host places the objects it was given (`turn_input`).
        state.log.host_holds(from, count);
      }
      from
    };
    self.env.host.turn_input(&ctx.facts(&ctx.layers()), from, &ids, unchanged);
    execute(self, step, StepValue::Text(String::new()), ctx).await
  }

  /// A fresh context for a turn, as upstream makes for every turn: new counters and execution, the first message's
  /// resource and memory, and the session's history, moved in (not copied) from the context that held it, which then
  /// closes. The new context holds the history until the next turn.
  async fn turn_context(&self, session: &Arc<Session>, first: &QueuedMessage) -> RunResult<Arc<ExecContext>> {
    self.catch_up(session).await?;
    let layers = first.layers.clone().unwrap_or_else(|| Arc::clone(&self.layers));
    let ctx = self.session_context(session, first.resource_id.clone(), layers);
    loop {
      // A seed made since the catch-up is stored before the turn takes it, so that a turn never starts from a
      // history the store does not have (persistence only: without it, `replace` is never waited on).
      if self.session_store.is_some()
        && session.lock().replace
        && let Err(error) = self.catch_up(session).await
      {
        self.close_context(&ctx.id);
        return Err(error);
      }
      let holder = session.context();
      // A seeded history the host still holds comes over before the log moves.
      if let Some(holder) = &holder
        && let Err(error) = holder.take_held_items(&*self.env.host).await
      {
        self.close_context(&ctx.id);
        return Err(error.into());
      }
      let mut state = session.lock();
      // A seed replaced the history while its items came over: take the new one's.
      let seeded = self.session_store.is_some() && state.replace;
      if seeded || state.context.as_ref().map(Arc::as_ptr) != holder.as_ref().map(Arc::as_ptr) {
        continue;
      }
      // Moved under the session's lock, so that whoever reads the history (a preview) finds it whole in one place.
      if let Some(holder) = &holder {
        ctx.take_history(holder);
      }
      let len = ctx.state().log.len();
      state.context = Some(Arc::clone(&ctx));
      state.running = Some(Arc::clone(&ctx));
      state.stored_len = len;
      state.history_len = len;
      state.turn_replaces = false;
      drop(state);
      if let Some(holder) = holder {
        self.env.host.history_moved(&holder.id, &ctx.id);
        self.drop_context(&holder.id);
      }
      return Ok(ctx);
    }
  }

  /// A context of the session's: it reports to the session's stream and takes in its `between-rounds` messages.
  fn session_context(
    &self,
    session: &Arc<Session>,
    resource_id: Option<String>,
    layers: Arc<LayerSet>,
  ) -> Arc<ExecContext> {
    let id = uuid::Uuid::new_v4().to_string();
    let ctx = ExecContext::new(id, session.thread_id.clone(), resource_id, 0, None, layers)
      .with_io(Arc::new(SessionIo::new(session)), true);
    self.open_context(ctx)
  }

  /// A context holding `items` as the session's history (a seed's, or one read back from storage), with the
  /// harness's layers and the resource of the history it replaces.
  pub(super) fn history_context(&self, session: &Arc<Session>, items: Vec<Arc<Item>>) -> Arc<ExecContext> {
    let resource_id = session.context().and_then(|ctx| ctx.resource_id.clone());
    let ctx = self.session_context(session, resource_id, Arc::clone(&self.layers));
    let mut state = ctx.state();
    for item in items {
      state.log.push(item);
    }
    drop(state);
    ctx
  }

  /// Replaces the session's history with `items` (upstream's `seedSessionHistory`); returns the id of the context
  /// that now holds it. A turn in flight keeps its own context. With persistence the seed then waits to be stored
  /// ([`Harness::store_seed`]), and the thread's next turn stores it first if it still waits.
  pub fn seed_session(&self, thread: &str, items: Vec<Arc<Item>>) -> Result<String, ConfigError> {
    if let Some(store) = &self.session_store {
      store.check_thread(thread, "seedSessionHistory")?;
    }
    let session = self.session(thread);
    let ctx = self.history_context(&session, items);
    let (old, running) = {
      let mut state = session.lock();
      state.replace = true;
      state.epoch += 1;
      (state.context.replace(Arc::clone(&ctx)), state.running.clone())
    };
    // The turn in flight keeps its context; when it ends, its history replaces this one, as upstream's does.
    if let Some(old) = old.filter(|old| !holds(&running, old)) {
      self.drop_context(&old.id);
    }
    Ok(ctx.id.clone())
  }

  /// What the next turn's model would be sent, as far as memory decides it (upstream's `previewRequestItems`): the
  /// harness's layers recalled over a throwaway context holding the session's history, their items before the
  /// history. Read-only: it makes no session, runs no init, and a layer whose recall fails is a diagnostic.
  pub async fn preview_request(&self, thread: &str) -> RunResult<Vec<Arc<Item>>> {
    let history = self.next_turn_history(thread).await?;
    if self.layers.is_empty() {
      return Ok(history);
    }
    let policy = self.projection.clone().unwrap_or(crate::memory::DEFAULT_PROJECTION);
    let budgets = layer_budgets(&self.layers, &policy, 0.0)?;
    let id = uuid::Uuid::new_v4().to_string();
    let ctx = self.open_context(ExecContext::new(id, thread.to_owned(), None, 0, None, Arc::clone(&self.layers)));
    let recalled = lifecycle::recall_layers(&self.env, &self.scope(&ctx), &budgets, "", None, false).await;
    self.drop_context(&ctx.id);
    let mut items: Vec<Arc<Item>> = recalled.into_iter().flat_map(|entry| entry.items).collect();
    if items.is_empty() {
      return Ok(history);
    }
    items.extend(history);
    Ok(items)
  }

  /// The session's history as it stands: the log of the context holding it, and while a turn runs in that context,
  /// only the part before the turn's own items, which are not history yet. Items a seed left in the host come over
  /// first; if a turn took the history meanwhile, it is read where it went.
  pub(super) async fn history_of(&self, session: &Session) -> RunResult<Vec<Arc<Item>>> {
    let holder = || {
      let state = session.lock();
      let running = state.running.as_ref().is_some_and(|ran| holds(&state.context, ran));
      (state.context.clone(), running.then_some(state.history_len))
    };
    loop {
      let (current, history_len) = holder();
      let Some(ctx) = current else { return Ok(Vec::new()) };
      ctx.take_held_items(&*self.env.host).await?;
      let (now, history_len_now) = holder();
      if now.as_ref().is_some_and(|now| Arc::ptr_eq(now, &ctx)) && history_len_now == history_len {
        let state = ctx.state();
        let items = state.log.items();
        return Ok(items[..history_len.map_or(items.len(), |len| len.min(items.len()))].to_vec());
      }
    }
  }

  /// Aborts the turn in flight, if any; `on_end` is told when it has ended (at once when none is running). Queued
  /// messages stay queued and drive the next turn.
  pub fn abort_session(&self, thread: &str, reason: &str, on_end: Waiter) {
    let Some(session) = self.existing_session(thread) else { return on_end(Ok(Arc::new(empty_response()))) };
    let mut state = session.lock();
    if !matches!(state.status, Status::Generating { .. }) {
      drop(state);
      return on_end(Ok(Arc::new(empty_response())));
    }
    abort_locked(&mut state, reason);
    state.turn_end.push(on_end);
  }

  /// Answers `waiter` with the session's response: at once when it is idle with nothing queued, otherwise once the
  /// queue has drained (or a turn fails).
  pub fn agent_response(self: &Arc<Self>, thread: &str, waiter: Waiter) {
    let session = self.session(thread);
    let mut state = session.lock();
    if state.status == Status::Idle
      && state.queue.is_empty()
      && let Some(last) = state.last.clone()
    {
      // A response read for the first time frees its session to leave memory once idle.
      let first_read = std::mem::take(&mut state.unread);
      drop(state);
      if first_read {
        self.evict_when_idle(&session);
      }
      return waiter(last);
    }
    state.waiters.push(waiter);
  }
}

fn abort_locked(state: &mut SessionState, reason: &str) {
  if let Status::Generating { turn_id, .. } = &state.status {
    state.status = Status::Aborting { turn_id: turn_id.clone() };
    if let Some(ctx) = &state.running {
      ctx.abort(reason.to_owned());
    }
  }
}

/// What `getAgentResponse` answers for a turn that ended in `ctx` with `value`.
fn response_of(ctx: &ExecContext, value: &StepValue) -> TurnResponse {
  let state = ctx.state();
  TurnResponse {
    context_id: ctx.id.clone(),
    log_len: state.log.len(),
    text: match value {
      StepValue::Text(text) | StepValue::Utf16Text { text, .. } => TurnText::Text(text.clone()),
      StepValue::Json(json) => TurnText::Json(json.clone()),
      StepValue::Undefined => TurnText::Undefined,
      StepValue::Host(_) => TurnText::Host,
    },
    input_tokens: state.tokens.input,
    output_tokens: state.tokens.output,
    cached_tokens: state.tokens.cached_shown(),
    cache_write_tokens: state.tokens.cache_write,
    cost: state.cost,
    last_layer_usage: state.last_layer_usage.clone(),
  }
}

/// Whether `slot` holds `ctx` itself.
pub(super) fn holds(slot: &Option<Arc<ExecContext>>, ctx: &Arc<ExecContext>) -> bool {
  slot.as_ref().is_some_and(|held| Arc::ptr_eq(held, ctx))
}

fn empty_response() -> TurnResponse {
  TurnResponse {
    context_id: String::new(),
    log_len: 0,
    text: TurnText::Text(String::new()),
    input_tokens: 0.0,
    output_tokens: 0.0,
    cached_tokens: None,
    cache_write_tokens: None,
    cost: 0.0,
    last_layer_usage: None,
  }
}
