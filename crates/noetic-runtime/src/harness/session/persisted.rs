//! Persisted sessions (`persistSessions`): before a turn the history in memory catches up with what was stored since
//! (by other processes, or all of it for a session not in memory); after the turn its new items are appended as one
//! entry; a seed is stored when it is made; a session idle for `sessionIdleMs` leaves memory once nothing about it is
//! owed to anyone, and its next turn reads it back.
//!
//! The invariant: when a turn starts, the history in memory is the stored one up to entry `stored`, and no seed
//! waits to be stored. Whatever could break it (another process's turn appended before this one's, an append that
//! failed) sets `reload`, and the next turn reads the history back instead of trusting memory. A session's storage
//! work (a seed's write, a turn's catch-up, a turn's append) runs one piece at a time, in its `lane`, so a seed
//! made before a turn ends is stored before that turn's entry.

use std::sync::Arc;

use super::{Session, SessionStore};
use crate::harness::{ExecContext, Harness, RunResult};
use crate::items::Item;

impl Harness {
  /// Brings the session's history up to date with the stored one, after storing a seed that waits. Nothing to do
  /// without persistence.
  pub(super) async fn catch_up(&self, session: &Arc<Session>) -> RunResult<()> {
    let Some(store) = &self.session_store else { return Ok(()) };
    // Boxed, as is `store_turn`'s work: inline, the storage's futures would size every session's turn, persisted or
    // not, and a turn's future lives while the model answers.
    Box::pin(self.catch_up_with(store, session)).await
  }

  async fn catch_up_with(&self, store: &SessionStore, session: &Arc<Session>) -> RunResult<()> {
    let _lane = session.lane.lock().await;
    self.store_seed_in_lane(session, store).await?;
    let (after, reload, held) = {
      let state = session.lock();
      let reload = state.reload || state.context.is_none();
      (if reload { 0 } else { state.stored }, reload, state.context.clone())
    };
    let entries = store.read_after(&session.thread_id, after).await?;
    let Some(last) = entries.last().map(|entry| entry.number) else {
      if reload {
        session.lock().reload = false;
      }
      return Ok(());
    };
    // From the last replacement on, everything read; after it, only additions.
    let fresh = reload || entries[0].replace;
    let items: Vec<Arc<Item>> = entries.iter().flat_map(|entry| entry.items.iter().cloned()).collect();
    if fresh {
      let ctx = self.history_context(session, items);
      let old = {
        let mut state = session.lock();
        if state.replace {
          // A seed made while the history was read is newer than anything read: it stays, and goes in after it.
          state.stored = last;
          drop(state);
          self.drop_context(&ctx.id);
          return Ok(());
        }
        state.stored = last;
        state.reload = false;
        let running = state.running.clone();
        state.context.replace(ctx).filter(|old| !super::turns::holds(&running, old))
      };
      if let Some(old) = old {
        self.drop_context(&old.id);
      }
    } else if let Some(holder) = held {
      let mut log = holder.state();
      for item in items {
        log.log.push(item);
      }
      drop(log);
      session.lock().stored = last;
    }
    Ok(())
  }

  /// Appends what the turn added to the history as the thread's next entry, after any that others appended
  /// meanwhile. A seed made while the turn ran is stored first, and the turn's whole history then replaces it, as
  /// upstream's does, provided the seed is still the last entry: when another process's turn followed the seed, the
  /// turn's own items go after that one instead, so no acknowledged turn is ever replaced. A turn whose items could
  /// not be stored fails with the store's error: it was not acknowledged, and the next turn reads the stored history
  /// back.
  pub(super) async fn store_turn(&self, session: &Arc<Session>, ctx: &ExecContext) -> RunResult<()> {
    let Some(store) = &self.session_store else { return Ok(()) };
    Box::pin(self.store_turn_with(store, session, ctx)).await
  }

  async fn store_turn_with(&self, store: &SessionStore, session: &Arc<Session>, ctx: &ExecContext) -> RunResult<()> {
    let _lane = session.lane.lock().await;
    self.store_seed_in_lane(session, store).await?;
    let (expected, from, replace) = {
      let state = session.lock();
      (state.stored + 1, state.stored_len, state.turn_replaces)
    };
    // The turn's own items, after the history it started from; the whole log only when it is to replace a seed.
    let (log, own_from, len): (Vec<Arc<Item>>, usize, usize) = {
      let state = ctx.state();
      let (items, len) = (state.log.items(), state.log.len());
      let from = from.min(len);
      if replace { (items.to_vec(), from, len) } else { (items[from..].to_vec(), 0, len) }
    };
    let own = &log[own_from..];
    let thread = &session.thread_id;
    // Where the turn's entry went, and whether it replaced the history.
    let stored = async {
      if replace && store.append_at(thread, expected, &log, true).await? {
        return Ok::<_, crate::ConfigError>((Some(expected), true));
      }
      if own.is_empty() {
        return Ok((None, false));
      }
      Ok((Some(store.append_next(thread, expected, own, false).await?), false))
    };
    match stored.await {
      Ok((number, replaced)) => {
        let mut state = session.lock();
        state.turn_replaces = false;
        if let Some(number) = number {
          state.stored = number;
          state.stored_len = len;
        }
        // Memory no longer matches the store when another entry went in first: another process's turn before this
        // one's, or after the seed this one's history was to replace.
        state.reload |= number.is_some_and(|number| number != expected) || (replace && !replaced);
        Ok(())
      }
      Err(error) => {
        session.lock().reload = true;
        Err(error.into())
      }
    }
  }

  /// Stores `thread`'s seed if one waits (`seedSessionHistory` on a persisted harness); at once without persistence
  /// or with nothing waiting. A seed that cannot be stored stays the history in memory, and the thread's next turn
  /// stores it first.
  pub async fn store_seed(&self, thread: &str) -> RunResult<()> {
    let (Some(store), Some(session)) = (&self.session_store, self.existing_session(thread)) else { return Ok(()) };
    let _lane = session.lane.lock().await;
    self.store_seed_in_lane(&session, store).await
  }

  /// The seed waiting in `session`, as a replacement entry after the last one there is: its keys are enough to find
  /// where, so a thread whose entries are damaged can be seeded afresh. Called with the session's lane held.
  async fn store_seed_in_lane(&self, session: &Arc<Session>, store: &SessionStore) -> RunResult<()> {
    let (seed, next) = {
      let mut state = session.lock();
      match (state.replace, state.context.clone()) {
        (true, Some(seed)) => (seed, state.stored + 1),
        // Nothing waits (a seed is always held by the session's context).
        _ => {
          state.replace = false;
          return Ok(());
        }
      }
    };
    // Items the host still holds come over first, put to the item schemas as they come (DECISIONS I3).
    seed.take_held_items(&*self.env.host).await?;
    let items = seed.state().log.items().to_vec();
    let number = store.append_next(&session.thread_id, next, &items, true).await?;
    let mut state = session.lock();
    state.stored = number;
    if state.context.as_ref().is_some_and(|held| Arc::ptr_eq(held, &seed)) {
      state.replace = false;
      state.reload = false;
      // A turn in flight replaces this history with its own when it ends (if its step returns).
      state.turn_replaces = state.running.is_some();
    }
    Ok(())
  }

  /// The history the thread's next turn would start from, read only (for a preview): the session's in memory, and
  /// with persistence what others stored since, or the whole stored history for a thread not in memory (one that
  /// left it when idle, S6) or one whose memory must be read back.
  pub(super) async fn next_turn_history(&self, thread: &str) -> RunResult<Vec<Arc<Item>>> {
    let session = self.existing_session(thread);
    let memory = match &session {
      Some(session) => self.history_of(session).await?,
      None => Vec::new(),
    };
    let Some(store) = &self.session_store else { return Ok(memory) };
    let after = match &session {
      Some(session) => {
        let state = session.lock();
        if state.replace {
          // A seed not stored yet is the history, whatever is stored.
          return Ok(memory);
        }
        (!state.reload && state.context.is_some()).then_some(state.stored)
      }
      None => None,
    };
    let entries = store.read_after(thread, after.unwrap_or(0)).await?;
    let stored = entries.iter().flat_map(|entry| entry.items.iter().cloned());
    Ok(match after {
      Some(_) if !entries.first().is_some_and(|entry| entry.replace) => memory.into_iter().chain(stored).collect(),
      _ => stored.collect(),
    })
  }

  /// With persistence and an idle limit, leaves the session in memory until it has been idle that long.
  pub(super) fn evict_when_idle(self: &Arc<Self>, session: &Arc<Session>) {
    let (Some(_), Some(idle)) = (&self.session_store, self.session_idle) else { return };
    // Outside a runtime (a synchronous caller), the session simply stays.
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    let epoch = session.lock().epoch;
    let (harness, thread) = (Arc::downgrade(self), session.thread_id.clone());
    runtime.spawn(async move {
      tokio::time::sleep(idle).await;
      if let Some(harness) = harness.upgrade() {
        harness.evict(&thread, Some(epoch));
      }
    });
  }

  /// Drops `thread`'s session from memory (`harness.evictSession`): its history, its last response and its
  /// streams' buffers. Only an idle one that owes no one anything: nothing queued, no one waiting, no stream open,
  /// no response unread and no seed unstored; false otherwise. With persistence, its next turn reads its history
  /// back; without, it starts afresh.
  pub fn evict_session(&self, thread: &str) -> bool {
    self.evict(thread, None)
  }

  fn evict(&self, thread: &str, epoch: Option<u64>) -> bool {
    let session = {
      let mut sessions = self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
      let Some(session) = sessions.get(thread) else { return false };
      {
        let state = session.lock();
        let busy = state.draining || !state.queue.is_empty() || !state.waiters.is_empty() || !state.turn_end.is_empty();
        // A seed not yet stored lives only in memory; so does a response no one has read (it is not stored).
        let owed = (state.replace && self.session_store.is_some()) || state.unread;
        if epoch.is_some_and(|epoch| epoch != state.epoch) || busy || owed || session.streams.events.has_readers() {
          return false;
        }
      }
      sessions.remove(thread)
    };
    if let Some(ctx) = session.and_then(|session| session.lock().context.take()) {
      self.drop_context(&ctx.id);
    }
    true
  }
}
