//! The panic guard of the async entry points. Sync ones use `#[napi(catch_unwind)]`; an async one runs its whole
//! body here, so that a panic becomes a JS error instead of a Promise that never settles (A5).

use std::future::Future;

use napi::{Error, Result, Status};

/// Runs `work` as its own task on the runtime; a panic inside it comes back as an error.
pub async fn guarded<T: Send + 'static>(work: impl Future<Output = Result<T>> + Send + 'static) -> Result<T> {
  tokio::spawn(work).await.unwrap_or_else(|panic| {
    Err(Error::new(Status::GenericFailure, format!("internal error in @noetic-tools/core: {panic}")))
  })
}
