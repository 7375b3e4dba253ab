//! Runs and session turns are polled on the JS thread, inside the native calls JS makes anyway, or, while a harness
//! has many runs in flight, on the turn worker, a thread of its own.
//!
//! A run spends most of its life waiting on JS (hooks, step functions, the test model). Polled on a tokio thread,
//! every such wait costs two thread hand-offs: the request wakes the JS thread, the reply wakes the worker. Here the
//! reply's own native call (`NativeHarness.reply`) polls the woken run straight away, and the requests the run makes
//! while being polled are returned to that call instead of being posted (see `dispatcher::Outbox`). A wake from
//! elsewhere (a tokio timer, the HTTP client, SQLite's blocking pool) asks JS to poll through the weak dispatcher.
//!
//! Under load the hand-offs are worth it (DECISIONS S24). With many sessions at once the JS thread is the one that
//! is short: it runs every session's hooks and model calls, and polling their runs in its native calls adds the
//! runtime's work to its own. While a harness has 64 or more runs in flight, a reply only wakes its run
//! and returns; the turn worker polls the woken runs and posts their requests to JS, one batch for each round of up
//! to 16 runs. The JS thread and the worker then work side by side, and a batch crosses once for many sessions.
//! Below that, a hand-off would cost a lone run more than it saves, and runs are polled inline.
//!
//! Tokio stays the reactor: futures are polled inside the runtime's context, so their timers, sockets and
//! `spawn_blocking` work as on a worker thread.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll, Wake, Waker};

use napi::bindgen_prelude::within_runtime_if_available;

use crate::dispatcher::{Dispatch, JsRequest};

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Polls so many tasks at most per call, then lets the event loop turn (a task that keeps waking itself must not
/// starve JS).
const POLLS_PER_DRIVE: usize = 4096;

/// Tasks the turn worker polls before it posts their requests: a round. JS starts on the first requests while the
/// worker polls the next tasks, so the two threads overlap; a round of all the ready tasks (thousands, a wave of
/// sessions whose model answered together) left JS idle until the whole wave was polled (DECISIONS S25).
const POLLS_PER_ROUND: usize = 16;

/// Runs in flight from which a harness's runs are polled on the turn worker (see the module's doc and S24).
/// `NOETIC_TURN_WORKER_AT` sets another count, read once: 1 puts every harness on the worker (the tests run so).
fn offload_at() -> usize {
  const OFFLOAD_AT: usize = 64;
  static AT: OnceLock<usize> = OnceLock::new();
  *AT.get_or_init(|| {
    std::env::var("NOETIC_TURN_WORKER_AT").ok().and_then(|v| v.parse().ok()).filter(|&at| at > 0).unwrap_or(OFFLOAD_AT)
  })
}

pub struct Driver {
  shared: Arc<Shared>,
}

struct Shared {
  /// Itself, for the turn worker's queue.
  me: Weak<Shared>,
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
  /// The turn worker is polling this harness's runs, or has it queued: it will see anything pushed to `ready`.
  offloaded: bool,
}

impl State {
  /// Enough runs in flight for the turn worker, if it could be started.
  fn busy(&self) -> bool {
    self.live.len() >= offload_at() && TurnWorker::get().is_some()
  }
}

struct Task {
  id: u64,
  future: Mutex<Option<BoxFuture>>,
  queued: AtomicBool,
  shared: Weak<Shared>,
}

impl Driver {
  pub fn new(dispatch: Dispatch) -> Self {
    Self {
      shared: Arc::new_cyclic(|me| Shared {
        me: Weak::clone(me),
        dispatch,
        state: Mutex::default(),
        next: AtomicU64::new(1),
      }),
    }
  }

  /// Queues `work`; it first runs at the next `drive` (JS calls one right after starting a run), or on the turn
  /// worker when the harness is busy.
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
    if !state.driving && !state.offloaded && state.busy() {
      self.shared.offload(state);
    }
  }

  /// Runs `before` (which may wake tasks, as a reply does), then polls every ready task; returns the requests they
  /// made of JS, in order. Only the JS thread calls this. While the harness is busy the polling is the turn
  /// worker's: this returns only the requests made on the JS thread meanwhile.
  pub fn drive(&self, before: impl FnOnce()) -> Vec<JsRequest> {
    {
      let mut state = self.shared.state();
      if state.offloaded || state.busy() {
        drop(state);
        let requests = self.shared.dispatch.collect(before);
        self.shared.hand_over();
        return requests;
      }
      state.driving = true;
    }
    // Also on a panic (napi turns it into a JS error): later wakes must still ask for a poll.
    let _stopped = StopDriving(&self.shared);
    self.shared.dispatch.collect(|| {
      before();
      within_runtime_if_available(|| self.shared.poll_ready(POLLS_PER_DRIVE));
    })
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
    self.0.state().driving = false;
    self.0.hand_over();
  }
}

impl Shared {
  fn state(&self) -> MutexGuard<'_, State> {
    self.state.lock().unwrap_or_else(PoisonError::into_inner)
  }

  fn poll_ready(&self, budget: usize) {
    for _ in 0..budget {
      // Whoever polls clears its flag under the same lock as its last look at `ready`, so no wake is missed.
      let Some(task) = self.state().ready.pop_front() else { return };
      task.queued.store(false, Ordering::Release);
      if task.poll() {
        self.state().live.remove(&task.id);
      }
    }
    // Out of budget: `hand_over` asks for another poll, so the event loop gets a turn in between.
  }

  /// The turn worker's round: polls up to a round of ready tasks, posts the requests they made in one batch. Tasks
  /// still ready queue the harness on the worker again, behind any other busy harness.
  fn poll_offloaded(&self) {
    let requests = self.dispatch.collect(|| within_runtime_if_available(|| self.poll_ready(POLLS_PER_ROUND)));
    self.state().offloaded = false;
    // A harness whose JS side is gone cannot take them; its runs' waits fail as the dispatch closes.
    let _ = self.dispatch.post_batch(&requests);
    self.hand_over();
  }

  /// Queues this harness on the turn worker, which polls its ready tasks next.
  fn offload(&self, mut state: MutexGuard<'_, State>) {
    state.offloaded = true;
    drop(state);
    if let Some(worker) = TurnWorker::get() {
      worker.schedule(Weak::clone(&self.me));
    }
  }

  /// Called by a poller that is done (the JS thread's `drive`, a round of the turn worker): tasks woken meanwhile
  /// go to the turn worker while the harness is busy, else to JS, which is asked to poll.
  fn hand_over(&self) {
    let state = self.state();
    if state.ready.is_empty() || state.driving || state.offloaded {
      return;
    }
    if state.busy() {
      self.offload(state);
    } else {
      drop(state);
      self.dispatch.request_poll();
    }
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
    drop(state);
    shared.hand_over();
  }
}

/// The thread that polls busy harnesses' runs (see the module's doc): one for the process, started when first
/// needed. Harnesses queue themselves when they have tasks ready and nobody polling them.
#[derive(Default)]
struct TurnWorker {
  queue: Mutex<Queue>,
  work: Condvar,
}

#[derive(Default)]
struct Queue {
  harnesses: VecDeque<Weak<Shared>>,
  /// The worker sleeps on `work`. Only then is it woken: a notify is a system call, and while the worker is busy
  /// (most of the time under load) it finds a queued harness without one.
  sleeping: bool,
}

impl TurnWorker {
  /// The worker, started at the first call; `None` if the thread could not be started (out of resources), and
  /// then every harness is polled on the JS thread.
  fn get() -> Option<&'static TurnWorker> {
    static WORKER: OnceLock<Option<&'static TurnWorker>> = OnceLock::new();
    *WORKER.get_or_init(|| {
      let worker: &'static TurnWorker = Box::leak(Box::default());
      std::thread::Builder::new()
        .name("noetic-turns".into())
        // Deeply nested steps are polled as deep futures (DECISIONS G9): at least the JS thread's 8 MB.
        .stack_size(16 << 20)
        .spawn(move || worker.run())
        .ok()
        .map(|_| worker)
    })
  }

  fn schedule(&self, harness: Weak<Shared>) {
    let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
    queue.harnesses.push_back(harness);
    if queue.sleeping {
      self.work.notify_one();
    }
  }

  fn run(&self) {
    loop {
      let next = {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
          match queue.harnesses.pop_front() {
            Some(next) => break next,
            None => {
              queue.sleeping = true;
              queue = self.work.wait(queue).unwrap_or_else(PoisonError::into_inner);
              queue.sleeping = false;
            }
          }
        }
      };
      if let Some(harness) = next.upgrade() {
        // Tasks catch their own panics; this keeps the thread alive whatever else does (every busy harness needs it).
        let _ = catch_unwind(AssertUnwindSafe(|| harness.poll_offloaded()));
      }
    }
  }
}
