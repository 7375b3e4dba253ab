//! The one callback into JS. Every request is a JSON message sent with an id; JS answers by calling
//! `NativeHarness.reply(id, ok, text)` when its work settles, synchronously or after awaiting.
//!
//! Why not await the callback's returned Promise: napi hands that back as a second future, which costs an extra
//! thread wake per crossing; a direct reply wakes the waiting task exactly once.
//! Weak, so it never keeps Node alive; a request Node can no longer deliver fails instead of waiting forever.
//!
//! Requests made while the JS thread polls this harness's runs (see `driver.rs`) are not posted: they are collected
//! and returned to the native call JS is in, which answers them straight away. Those made on the JS thread outside
//! of that (an event of a message `execute` queued) wait for the next poll, which they ask for: a post made on the
//! JS thread is not delivered if Node has nothing else to wait for, so JS also polls after such calls.
//!
//! Each request says whether a run is waiting on it (`foreground`): JS keeps Node alive while a run works in Rust
//! and lets go while the run waits on JS, so a hook that never settles leaves Node free to exit, as plain Node
//! would be.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use napi::Status;
use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use tokio::sync::oneshot;

use crate::js_string::JsOutText;
use crate::weak_runtime::MaybeRuntime;

/// Called with the runtime (or `undefined` once it is gone) and a batch of requests as one JSON text (see
/// [`batch_text`]), made as a one-byte JS string when it is ASCII (`JsOutText`), not decoded as UTF-8.
pub type Dispatcher = ThreadsafeFunction<FnArgs<(String,)>, (), FnArgs<(MaybeRuntime, JsOutText)>, Status, false, true>;

tokio::task_local! {
  /// Set for the task of a run that JS awaits; background work (eventual recall, mirror writes) runs without it.
  static FOREGROUND: ();
}

/// Runs `work` as a run JS awaits: its requests tell JS that Rust is waiting on them.
pub fn foreground<F: Future>(work: F) -> impl Future<Output = F::Output> {
  FOREGROUND.scope((), work)
}

type Reply = Result<String, String>;

/// A request for JS: `id` 0 is a notification that expects no reply.
pub struct JsRequest {
  id: u32,
  text: String,
  foreground: bool,
}

/// Requests as one JSON text, `[id, foreground, message, id, foreground, message, ...]`, or `None` for none: one
/// string crosses and JS parses it once, where an object per request would cost a property definition each. Flat,
/// not an array per request: JS built and collected one more object per request (eight or more a session turn).
pub fn batch_text(requests: &[JsRequest]) -> Option<String> {
  if requests.is_empty() {
    return None;
  }
  let mut text = String::with_capacity(requests.iter().map(|r| r.text.len() + 16).sum::<usize>() + 2);
  for (i, JsRequest { id, text: message, foreground }) in requests.iter().enumerate() {
    text.push(if i == 0 { '[' } else { ',' });
    let _ = write!(text, "{id},{foreground},");
    text.push_str(message);
  }
  text.push(']');
  Some(text)
}

/// The requests of the dispatch whose runs this thread is polling now.
struct Outbox {
  owner: *const Inner,
  requests: Vec<JsRequest>,
}

thread_local! {
  static OUTBOX: RefCell<Option<Outbox>> = const { RefCell::new(None) };
  static JS_THREAD: Cell<bool> = const { Cell::new(false) };
  static JS_POLLS_NEXT: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work`, a native call after which JS polls anyway (it kicks a drive): requests `work` makes are deferred
/// to that poll without posting one. A posted poll is not just a wasted crossing: JS reaches its harness through a
/// WeakRef, and a `deref` keeps the harness alive until the microtask queue drains, which a program driven only by
/// promises (a scripted model) may never let it do.
pub fn js_polls_next<T>(work: impl FnOnce() -> T) -> T {
  let outer = JS_POLLS_NEXT.replace(true);
  let result = work();
  JS_POLLS_NEXT.set(outer);
  result
}

/// Marks the calling thread as a JS thread (the addon's init runs on it).
pub fn mark_js_thread() {
  JS_THREAD.set(true);
}

const POLL_REQUEST: &str = r#"{"op":"poll"}"#;

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
  /// Requests made on the JS thread outside a poll, for the next one.
  deferred: Mutex<Vec<JsRequest>>,
  /// A `poll` request is on its way to JS.
  poll_posted: AtomicBool,
}

impl Dispatch {
  pub fn new(callback: Dispatcher) -> Self {
    Self {
      inner: Arc::new(Inner {
        callback,
        next: AtomicU32::new(1),
        closed: AtomicBool::new(false),
        pending: Mutex::new(HashMap::new()),
        deferred: Mutex::new(Vec::new()),
        poll_posted: AtomicBool::new(false),
      }),
    }
  }

  /// Sends a request and waits for the reply text. A JS throw or rejection comes back as `Err`.
  pub async fn call(&self, message: String) -> Reply {
    let foreground = FOREGROUND.try_with(|()| ()).is_ok();
    self.request(message, foreground).await
  }

  /// A call whose wait Rust bounds with a timer of its own (a built-in layer's callback under its hook's timeout):
  /// JS keeps Node alive while it is pending, since the run is still working, and the timer will end the wait.
  pub async fn call_bounded(&self, message: String) -> Reply {
    self.request(message, false).await
  }

  async fn request(&self, message: String, foreground: bool) -> Reply {
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
    let status = self.send(JsRequest { id, text: message, foreground });
    if status != Status::Ok {
      return Err(format!("could not call into JavaScript: {status}"));
    }
    receiver.await.unwrap_or_else(|_| Err("the JavaScript side dropped the request".to_owned()))
  }

  /// Fire and forget, for notifications.
  pub fn notify(&self, message: String) {
    if !self.inner.closed.load(Ordering::Acquire) {
      self.send(JsRequest { id: 0, text: message, foreground: false });
    }
  }

  /// Asks JS to poll this harness's runs (once until it does).
  pub fn request_poll(&self) {
    if JS_POLLS_NEXT.get() {
      return;
    }
    if !self.inner.poll_posted.swap(true, Ordering::AcqRel) && !self.inner.closed.load(Ordering::Acquire) {
      self.post(JsRequest { id: 0, text: POLL_REQUEST.to_owned(), foreground: false });
    }
  }

  /// Into the outbox when this thread is polling this dispatch's runs; deferred to the next poll when on the JS
  /// thread otherwise (JS is in a native call); else posted.
  fn send(&self, request: JsRequest) -> Status {
    let owner = Arc::as_ptr(&self.inner);
    let unsent = OUTBOX.with_borrow_mut(|outbox| match outbox {
      Some(outbox) if outbox.owner == owner => {
        outbox.requests.push(request);
        None
      }
      _ => Some(request),
    });
    let Some(request) = unsent else { return Status::Ok };
    if JS_THREAD.get() {
      self.deferred().push(request);
      self.request_poll();
      return Status::Ok;
    }
    self.post(request)
  }

  /// Posts `requests` to JS as one batch (one request, or a round of the turn worker's, see `driver.rs`).
  pub fn post_batch(&self, requests: &[JsRequest]) -> Status {
    match batch_text(requests) {
      Some(text) => self.inner.callback.call((text,).into(), ThreadsafeFunctionCallMode::NonBlocking),
      None => Status::Ok,
    }
  }

  fn post(&self, request: JsRequest) -> Status {
    self.post_batch(std::slice::from_ref(&request))
  }

  /// Runs `work` with this thread's requests for this dispatch collected (after those deferred), and returns them.
  /// Not reentrant: `work` polls Rust futures and never calls into JS.
  pub fn collect(&self, work: impl FnOnce()) -> Vec<JsRequest> {
    self.inner.poll_posted.store(false, Ordering::Release);
    let requests = std::mem::take(&mut *self.deferred());
    let outer = OUTBOX.replace(Some(Outbox { owner: Arc::as_ptr(&self.inner), requests }));
    work();
    OUTBOX.replace(outer).map(|outbox| outbox.requests).unwrap_or_default()
  }

  fn deferred(&self) -> std::sync::MutexGuard<'_, Vec<JsRequest>> {
    self.inner.deferred.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
