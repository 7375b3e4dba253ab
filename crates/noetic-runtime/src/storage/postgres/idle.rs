//! Closing connections left idle (`idleTimeoutMs`, as node-postgres's `idleTimeoutMillis`). deadpool keeps every
//! connection it made until the pool is dropped, so without this a burst of calls would hold its connections,
//! server slots that other clients need, for as long as the store lives.
//!
//! A sweeper task closes the connections unused for the idle time. It runs only while the pool holds connections:
//! a call that takes a connection starts it when none runs, and it ends by itself once the pool is empty, closed or
//! dropped. So a store nobody calls costs no timer, and nothing needs starting when the store is made, which JS does
//! on its own thread, outside any tokio runtime. It holds the pool weakly, so it never keeps the store (or its
//! connections) alive, and it runs on the runtime's own threads, whose timers do not keep Node's event loop alive.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use deadpool_postgres::{Pool, WeakPool};
use tokio::task::AbortHandle;

/// The shortest wait between two sweeps: a connection is closed at most this much after its idle time, and a pool
/// whose connections keep coming close to it is swept at most 100 times a second.
const MIN_WAIT: Duration = Duration::from_millis(10);

/// The running sweeper, if any.
type Slot = Arc<Mutex<Option<AbortHandle>>>;

pub(super) struct IdleReaper {
  /// `None`: idle connections stay open (`idleTimeoutMs: 0`).
  idle: Option<Duration>,
  /// `pub(super)` for the tests, which watch it end.
  pub(super) sweeper: Slot,
}

impl IdleReaper {
  pub fn new(idle: Option<Duration>) -> Self {
    Self { idle, sweeper: Slot::default() }
  }

  /// Called each time a call has taken a connection from `pool`: starts a sweeper unless one runs.
  pub fn watch(&self, pool: &Pool) {
    let Some(idle) = self.idle else { return };
    let mut sweeper = lock(&self.sweeper);
    // A finished one ended by itself (or its runtime did, in a Rust program that made more than one).
    if sweeper.as_ref().is_some_and(|task| !task.is_finished()) || pool.is_closed() {
      return;
    }
    // Calls run in a runtime (their timeouts need one), so there is one here; were there none, the next call would
    // try again.
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    let task = runtime.spawn(sweep(pool.weak(), idle, Arc::clone(&self.sweeper)));
    *sweeper = Some(task.abort_handle());
  }

  /// Stops the sweeper: the store is closed or dropped.
  pub fn stop(&self) {
    if let Some(task) = lock(&self.sweeper).take() {
      task.abort();
    }
  }

  /// Whether a sweeper runs now.
  #[cfg(test)]
  pub fn sweeping(&self) -> bool {
    lock(&self.sweeper).as_ref().is_some_and(|task| !task.is_finished())
  }
}

impl Drop for IdleReaper {
  fn drop(&mut self) {
    self.stop();
  }
}

/// Sweeps until the pool is empty, closed or gone, each time when the connection unused longest would reach `idle`.
async fn sweep(pool: WeakPool, idle: Duration, slot: Slot) {
  let mut wait = idle;
  loop {
    tokio::time::sleep(wait).await;
    let Some(pool) = pool.upgrade() else { return };
    wait = close_idle(&pool, idle);
    if pool.is_closed() || stop_when_empty(&pool, &slot) {
      return;
    }
  }
}

/// Closes the idle connections unused for `idle` or longer (dropping a client closes its connection); returns how
/// long until the one unused longest among those left reaches it (`idle` when none is left).
///
/// Only idle connections are looked at: one in use is not in the pool's queue. Unused time counts from when a
/// connection was last taken, not given back (deadpool records no more); a call lasts milliseconds, so that is its
/// idle time to within one call.
fn close_idle(pool: &Pool, idle: Duration) -> Duration {
  let mut longest_kept = Duration::ZERO;
  let swept = pool.retain(|_, metrics| {
    let unused = metrics.last_used();
    let keep = unused < idle;
    if keep {
      longest_kept = longest_kept.max(unused);
    }
    keep
  });
  drop(swept.removed);
  idle.saturating_sub(longest_kept).max(MIN_WAIT)
}

/// Ends the sweeper when the pool holds no connection. Decided under the sweeper's lock, which `watch` takes after
/// its `get` has counted any connection it made: either this sees that connection and goes on, or `watch` finds no
/// sweeper and starts one.
fn stop_when_empty(pool: &Pool, slot: &Mutex<Option<AbortHandle>>) -> bool {
  let mut sweeper = lock(slot);
  if pool.status().size > 0 {
    return false;
  }
  *sweeper = None;
  true
}

/// The lock, even if a panic poisoned it: it only holds a handle, which no panic leaves half-written.
fn lock(slot: &Mutex<Option<AbortHandle>>) -> MutexGuard<'_, Option<AbortHandle>> {
  slot.lock().unwrap_or_else(PoisonError::into_inner)
}
