//! The one callback into JS. Every request is a JSON message; every reply is JSON text or a Promise of it.
//! Weak, so it never keeps Node alive; called with the catch variant, so a JS throw is an `Err`, not a crash.

use std::sync::Arc;

use napi::Status;
use napi::bindgen_prelude::{Either, Promise};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};

pub type Dispatcher = ThreadsafeFunction<String, Either<Promise<String>, String>, String, Status, false, true>;

#[derive(Clone)]
pub struct Dispatch(pub Arc<Dispatcher>);

impl Dispatch {
  /// Sends a request and waits for the reply text. Failures of the crossing itself come back as `Err`.
  pub async fn call(&self, message: String) -> Result<String, String> {
    match self.0.call_async_catch(message).await {
      Ok(Either::A(promise)) => promise.await.map_err(|error| error.reason.clone()),
      Ok(Either::B(text)) => Ok(text),
      Err(error) => Err(error.reason.clone()),
    }
  }

  /// Fire and forget, for notifications.
  pub fn notify(&self, message: String) {
    self.0.call(message, ThreadsafeFunctionCallMode::NonBlocking);
  }
}
