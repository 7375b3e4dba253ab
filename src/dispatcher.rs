//! The one callback into JS. Every request is a JSON message sent with an id; JS answers by calling
//! `NativeHarness.reply(id, ok, text)` when its work settles, synchronously or after awaiting.
//!
//! Why not await the callback's returned Promise: napi hands that back as a second future, which costs an extra
//! thread wake per crossing; a direct reply wakes the waiting task exactly once.
//! Weak, so it never keeps Node alive; a request Node can no longer deliver fails instead of waiting forever.
//!
//! Each request says whether a run is waiting on it (`foreground`): JS keeps Node alive while a run works in Rust
//! and lets go while the run waits on JS, so a hook that never settles leaves Node free to exit, as plain Node
//! would be.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use napi::Status;
use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use tokio::sync::oneshot;

/// `(id, message, foreground)`; id 0 is a notification that expects no reply.
pub type Dispatcher =
  ThreadsafeFunction<FnArgs<(u32, String, bool)>, (), FnArgs<(u32, String, bool)>, Status, false, true>;

tokio::task_local! {
  /// Set for the task of a run that JS awaits; background work (eventual recall, mirror writes) runs without it.
  static FOREGROUND: ();
}

/// Runs `work` as a run JS awaits: its requests tell JS that Rust is waiting on them.
pub fn foreground<F: Future>(work: F) -> impl Future<Output = F::Output> {
  FOREGROUND.scope((), work)
}

type Reply = Result<String, String>;

const GONE: &str = "the AgentHarness was garbage-collected while this call was in flight";

#[derive(Clone)]
pub struct Dispatch {
  inner: Arc<Inner>,
}

struct Inner {
  callback: Dispatcher,
  next: AtomicU32,
  /// Set when the harness's JS side is gone: nothing will answer any more.
  closed: AtomicBool,
  pending: Mutex<HashMap<u32, oneshot::Sender<Reply>>>,
}

impl Dispatch {
  pub fn new(callback: Dispatcher) -> Self {
    Self {
      inner: Arc::new(Inner {
        callback,
        next: AtomicU32::new(1),
        closed: AtomicBool::new(false),
        pending: Mutex::new(HashMap::new()),
      }),
    }
  }

  /// Sends a request and waits for the reply text. A JS throw or rejection comes back as `Err`.
  pub async fn call(&self, message: String) -> Reply {
    let id = self.next_id();
    let (sender, receiver) = oneshot::channel();
    {
      let mut pending = self.pending();
      // Checked under the lock that `close` drains, so no request can slip in after it.
      if self.inner.closed.load(Ordering::Acquire) {
        return Err(GONE.to_owned());
      }
      pending.insert(id, sender);
    }
    // A caller that stops waiting (an aborted background recall) takes its entry with it; a late reply is ignored.
    let _waiting = Waiting { dispatch: self, id };
    let foreground = FOREGROUND.try_with(|()| ()).is_ok();
    let status = self.inner.callback.call((id, message, foreground).into(), ThreadsafeFunctionCallMode::NonBlocking);
    if status != Status::Ok {
      return Err(format!("could not call into JavaScript: {status}"));
    }
    receiver.await.unwrap_or_else(|_| Err("the JavaScript side dropped the request".to_owned()))
  }

  /// Fire and forget, for notifications.
  pub fn notify(&self, message: String) {
    if !self.inner.closed.load(Ordering::Acquire) {
      self.inner.callback.call((0, message, false).into(), ThreadsafeFunctionCallMode::NonBlocking);
    }
  }

  /// Answers JS's waiter `waiter` (a run, a response, an event wake) with `result`, a JSON text.
  pub fn settle(&self, waiter: u32, result: &str) {
    self.notify(format!(r#"{{"op":"settled","run":{waiter},"result":{result}}}"#));
  }

  /// The JS side is gone (its harness was collected): every waiting request fails now, and later ones at once.
  pub fn close(&self) {
    let mut pending = self.pending();
    self.inner.closed.store(true, Ordering::Release);
    for (_, sender) in pending.drain() {
      let _ = sender.send(Err(GONE.to_owned()));
    }
  }

  /// Completes request `id`; an unknown id (already answered) is ignored.
  pub fn reply(&self, id: u32, reply: Reply) {
    if let Some(sender) = self.pending().remove(&id) {
      let _ = sender.send(reply);
    }
  }

  fn next_id(&self) -> u32 {
    // Skips 0 on wrap-around: it marks notifications.
    loop {
      let id = self.inner.next.fetch_add(1, Ordering::Relaxed);
      if id != 0 {
        return id;
      }
    }
  }

  fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<u32, oneshot::Sender<Reply>>> {
    self.inner.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
  }
}

/// Removes a request's pending entry when its caller is done with it, answered or not.
struct Waiting<'a> {
  dispatch: &'a Dispatch,
  id: u32,
}

impl Drop for Waiting<'_> {
  fn drop(&mut self) {
    self.dispatch.pending().remove(&self.id);
  }
}
