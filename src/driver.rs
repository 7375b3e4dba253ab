//! Runs and session turns are polled on the JS thread, inside the native calls JS makes anyway.
//!
//! A run spends most of its life waiting on JS (hooks, step functions, the test model). Polled on a tokio thread,
//! every such wait costs two thread hand-offs: the request wakes the JS thread, the reply wakes the worker. Here the
//! reply's own native call (`NativeHarness.reply`) polls the woken run straight away, and the requests the run makes
//! while being polled are returned to that call instead of being posted (see `dispatcher::Outbox`). A wake from
//! elsewhere (a tokio timer, the HTTP client, SQLite's blocking pool) asks JS to poll through the weak dispatcher.
//!
//! Tokio stays the reactor: futures are polled inside the runtime's context, so their timers, sockets and
//! `spawn_blocking` work as on a worker thread.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Wake, Waker};

use napi::bindgen_prelude::within_runtime_if_available;

use crate::dispatcher::{Dispatch, JsRequest};

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Polls so many tasks at most per call, then lets the event loop turn (a task that keeps waking itself must not
/// starve JS).
const POLLS_PER_DRIVE: usize = 4096;

pub struct Driver {
  shared: Arc<Shared>,
}

struct Shared {
  dispatch: Dispatch,
  state: Mutex<State>,
  next: AtomicU64,
}

#[derive(Default)]
struct State {
  ready: VecDeque<Arc<Task>>,
  /// Every task not yet finished, so that dropping the driver drops their futures (a pending future can hold its
  /// own waker, a cycle nothing else would break).
  live: HashMap<u64, Arc<Task>>,
  /// The JS thread is in `drive`: it will see anything pushed to `ready`.
  driving: bool,
}

struct Task {
  id: u64,
  future: Mutex<Option<BoxFuture>>,
  queued: AtomicBool,
  shared: Weak<Shared>,
}

impl Driver {
  pub fn new(dispatch: Dispatch) -> Self {
    Self { shared: Arc::new(Shared { dispatch, state: Mutex::default(), next: AtomicU64::new(1) }) }
  }

  /// Queues `work`; it first runs at the next `drive` (JS calls one right after starting a run).
  pub fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
    let task = Arc::new(Task {
      id: self.shared.next.fetch_add(1, Ordering::Relaxed),
      future: Mutex::new(Some(Box::pin(work))),
      queued: AtomicBool::new(true),
      shared: Arc::downgrade(&self.shared),
    });
    let mut state = self.shared.state();
    state.live.insert(task.id, Arc::clone(&task));
    state.ready.push_back(task);
  }

  /// Runs `before` (which may wake tasks, as a reply does), then polls every ready task; returns the requests they
  /// made of JS, in order. Only the JS thread calls this.
  pub fn drive(&self, before: impl FnOnce()) -> Vec<JsRequest> {
    self.shared.state().driving = true;
    // Also on a panic (napi turns it into a JS error): later wakes must still ask for a poll.
    let _stopped = StopDriving(&self.shared);
    self.shared.dispatch.collect(|| {
      before();
      within_runtime_if_available(|| self.poll_ready());
    })
  }

  fn poll_ready(&self) {
    for _ in 0..POLLS_PER_DRIVE {
      // `StopDriving` clears `driving` under the same lock as its look at `ready`, so no wake is missed.
      let Some(task) = self.shared.state().ready.pop_front() else { return };
      task.queued.store(false, Ordering::Release);
      if task.poll() {
        self.shared.state().live.remove(&task.id);
      }
    }
    // Out of budget: `StopDriving` asks for another poll, so the event loop gets a turn in between.
  }

  /// The harness is gone: its unfinished tasks are dropped (nothing will answer their requests).
  pub fn shutdown(&self) {
    let live: Vec<Arc<Task>> = {
      let mut state = self.shared.state();
      state.ready.clear();
      state.live.drain().map(|(_, task)| task).collect()
    };
    for task in live {
      drop(task.take());
    }
  }
}

struct StopDriving<'a>(&'a Shared);

impl Drop for StopDriving<'_> {
  fn drop(&mut self) {
    let mut state = self.0.state();
    state.driving = false;
    if !state.ready.is_empty() {
      drop(state);
      self.0.dispatch.request_poll();
    }
  }
}

impl Shared {
  fn state(&self) -> MutexGuard<'_, State> {
    self.state.lock().unwrap_or_else(PoisonError::into_inner)
  }
}

impl Task {
  /// Polls once; true when the task is finished. A panic ends the task (its future already turned panics of the
  /// run into errors; this is the last line, so that no panic unwinds into Node).
  fn poll(self: &Arc<Self>) -> bool {
    let waker = Waker::from(Arc::clone(self));
    let mut slot = self.future.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(future) = slot.as_mut() else { return true };
    let polled = catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut Context::from_waker(&waker))));
    match polled {
      Ok(Poll::Pending) => false,
      Ok(Poll::Ready(())) | Err(_) => {
        *slot = None;
        true
      }
    }
  }

  fn take(&self) -> Option<BoxFuture> {
    self.future.lock().unwrap_or_else(PoisonError::into_inner).take()
  }
}

impl Wake for Task {
  fn wake(self: Arc<Self>) {
    self.wake_by_ref();
  }

  fn wake_by_ref(self: &Arc<Self>) {
    if self.queued.swap(true, Ordering::AcqRel) {
      return;
    }
    let Some(shared) = self.shared.upgrade() else {
      // The harness is gone; so is whatever this task would have answered.
      drop(self.take());
      return;
    };
    let mut state = shared.state();
    if !state.live.contains_key(&self.id) {
      return;
    }
    state.ready.push_back(Arc::clone(self));
    if !state.driving {
      drop(state);
      shared.dispatch.request_poll();
    }
  }
}
