//! Persisted sessions (`persistSessions`): before a turn the history in memory catches up with what was stored since
//! (by other processes, or all of it for a session not in memory); after the turn its new items are appended as one
//! entry; a session idle for `sessionIdleMs` leaves memory, and its next turn reads it back.
//!
//! The invariant: when a turn starts, the history in memory is the stored one up to entry `stored`. Whatever could
//! break it (another process's turn appended before this one's, an append that failed) sets `reload`, and the next
//! turn reads the whole history back instead of trusting memory.

use std::sync::Arc;

use super::{Session, TurnOutcome};
use crate::harness::{ExecContext, Harness, RunResult};
use crate::items::Item;

impl Harness {
  /// Brings the session's history up to date with the stored one. Nothing to do without persistence.
  pub(super) async fn catch_up(&self, session: &Arc<Session>) -> RunResult<()> {
    let Some(store) = &self.session_store else { return Ok(()) };
    let (after, reload, seeded, held) = {
      let state = session.lock();
      let reload = state.reload || state.context.is_none();
      (if reload { 0 } else { state.stored }, reload, state.replace, state.context.clone())
    };
    let entries = store.read_after(&session.thread_id, after).await?;
    let Some(last) = entries.last().map(|entry| entry.number) else {
      if reload {
        session.lock().reload = false;
      }
      return Ok(());
    };
    if seeded && !reload {
      // A seed since the last entry is the history now: what others stored meanwhile is behind it, and this
      // session's next entry (after theirs) replaces it.
      session.lock().stored = last;
      return Ok(());
    }
    // From the last replacement on, everything read; after it, only additions.
    let start = entries.iter().rposition(|entry| entry.replace);
    let fresh = reload || start.is_some();
    let items: Vec<Arc<Item>> =
      entries[start.unwrap_or(0)..].iter().flat_map(|entry| entry.items.iter().cloned()).collect();
    if fresh {
      let ctx = self.history_context(session, items);
      let old = {
        let mut state = session.lock();
        state.stored = last;
        state.reload = false;
        state.replace = false;
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

  /// Appends what the turn added to the history (all of it after a seed) as the thread's next entry, after any that
  /// others appended meanwhile. A turn whose items could not be stored fails with the store's error: it was not
  /// acknowledged, and the next turn reads the stored history back.
  pub(super) async fn store_turn(
    &self,
    session: &Arc<Session>,
    ctx: &ExecContext,
    outcome: TurnOutcome,
  ) -> TurnOutcome {
    let Some(store) = &self.session_store else { return outcome };
    let (expected, from, replace) = {
      let state = session.lock();
      (state.stored + 1, state.stored_len, state.replace)
    };
    let (items, len): (Vec<Arc<Item>>, usize) = {
      let state = ctx.state();
      let from = if replace { 0 } else { from.min(state.log.len()) };
      (state.log.items()[from..].to_vec(), state.log.len())
    };
    if items.is_empty() && !replace {
      return outcome;
    }
    let thread = &session.thread_id;
    let mut number = expected;
    loop {
      match store.append(thread, number, &items, replace).await {
        Ok(true) => {
          let mut state = session.lock();
          state.stored = number;
          state.stored_len = len;
          state.replace = false;
          // Another process's turn went in first: memory has this turn's items before theirs.
          state.reload |= number != expected;
          return outcome;
        }
        // Taken: this turn goes after the last entry there is.
        Ok(false) => match store.read_after(thread, number).await {
          Ok(later) => number = later.last().map_or(number, |entry| entry.number) + 1,
          Err(error) => return self.unstored(session, error),
        },
        Err(error) => return self.unstored(session, error),
      }
    }
  }

  fn unstored(&self, session: &Session, error: crate::error::ConfigError) -> TurnOutcome {
    session.lock().reload = true;
    Err(Arc::new(error.into()))
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
  /// streams' buffers. Only an idle one, with nothing queued, no one waiting and no stream open; false otherwise.
  /// With persistence, its next turn reads its history back; without, it starts afresh.
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
        // A seed not yet stored lives only in memory.
        let unstored = state.replace && self.session_store.is_some();
        if epoch.is_some_and(|epoch| epoch != state.epoch) || busy || unstored || session.streams.events.has_readers() {
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
