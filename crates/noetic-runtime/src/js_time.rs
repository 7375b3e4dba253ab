//! Waits measured in a JS number of milliseconds.

use std::future::Future;
use std::time::Duration;

/// How long `ms` milliseconds is, or `None` for a wait that never ends: Infinity, or a number too large for a
/// `Duration`. NaN and negative numbers are no wait at all, as JS's `setTimeout` takes them.
/// (`Duration::from_secs_f64` panics on all of these.)
pub fn duration_of_ms(ms: f64) -> Option<Duration> {
  if ms.is_nan() || ms <= 0.0 {
    return Some(Duration::ZERO);
  }
  Duration::try_from_secs_f64(ms / 1000.0).ok()
}

/// Sleeps `ms` milliseconds; a wait that never ends (see [`duration_of_ms`]) never does.
pub async fn sleep_ms(ms: f64) {
  match duration_of_ms(ms) {
    Some(duration) => tokio::time::sleep(duration).await,
    None => std::future::pending().await,
  }
}

/// `future`, or `None` once `ms` milliseconds have passed first (never, for a wait that never ends).
pub async fn within_ms<F: Future>(ms: f64, future: F) -> Option<F::Output> {
  match duration_of_ms(ms) {
    Some(duration) => tokio::time::timeout(duration, future).await.ok(),
    None => Some(future.await),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn numbers_js_gives_become_waits_without_a_panic() {
    assert_eq!(duration_of_ms(1500.0), Some(Duration::from_millis(1500)));
    assert_eq!(duration_of_ms(f64::NAN), Some(Duration::ZERO));
    assert_eq!(duration_of_ms(-5.0), Some(Duration::ZERO));
    assert_eq!(duration_of_ms(f64::INFINITY), None);
    assert_eq!(duration_of_ms(1e300), None);
    // Past what a JS timer can hold (2^31 - 1 ms), still a wait of that length.
    assert_eq!(duration_of_ms(2f64.powi(40)).map(|d| d.as_millis()), Some(1 << 40));
  }

  #[tokio::test(start_paused = true)]
  async fn an_endless_wait_never_ends_and_a_long_one_ends_on_time() {
    let endless = within_ms(f64::INFINITY, std::future::pending::<()>());
    assert!(tokio::time::timeout(Duration::from_secs(1 << 40), endless).await.is_err());
    let started = tokio::time::Instant::now();
    sleep_ms(2f64.powi(32)).await;
    assert_eq!(started.elapsed().as_millis(), 1 << 32);
  }
}
