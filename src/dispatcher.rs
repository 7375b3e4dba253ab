//! The one callback into JS. Every request is a JSON message sent with an id; JS answers by calling
//! `NativeHarness.reply(id, ok, text)` when its work settles, synchronously or after awaiting.
//!
//! Why not await the callback's returned Promise: napi hands that back as a second future, which costs an extra
//! thread wake per crossing; a direct reply wakes the waiting task exactly once.
//! Weak, so it never keeps Node alive; a request Node can no longer deliver fails instead of waiting forever.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use napi::Status;
use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use tokio::sync::oneshot;

/// `(id, message)`; id 0 is a notification that expects no reply.
pub type Dispatcher = ThreadsafeFunction<FnArgs<(u32, String)>, (), FnArgs<(u32, String)>, Status, false, true>;

type Reply = Result<String, String>;

#[derive(Clone)]
pub struct Dispatch {
  inner: Arc<Inner>,
}

struct Inner {
  callback: Dispatcher,
  next: AtomicU32,
  pending: Mutex<HashMap<u32, oneshot::Sender<Reply>>>,
}

impl Dispatch {
  pub fn new(callback: Dispatcher) -> Self {
    Self { inner: Arc::new(Inner { callback, next: AtomicU32::new(1), pending: Mutex::new(HashMap::new()) }) }
  }

  /// Sends a request and waits for the reply text. A JS throw or rejection comes back as `Err`.
  pub async fn call(&self, message: String) -> Reply {
    let id = self.next_id();
    let (sender, receiver) = oneshot::channel();
    self.pending().insert(id, sender);
    // A caller that stops waiting (an aborted background recall) takes its entry with it; a late reply is ignored.
    let _waiting = Waiting { dispatch: self, id };
    let status = self.inner.callback.call((id, message).into(), ThreadsafeFunctionCallMode::NonBlocking);
    if status != Status::Ok {
      return Err(format!("could not call into JavaScript: {status}"));
    }
    receiver.await.unwrap_or_else(|_| Err("the JavaScript side dropped the request".to_owned()))
  }

  /// Fire and forget, for notifications.
  pub fn notify(&self, message: String) {
    self.inner.callback.call((0, message).into(), ThreadsafeFunctionCallMode::NonBlocking);
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
