//! A session's event log: what `getFullStream` and the other streams read.
//!
//! Readers pull from a cursor, so an event costs no crossing unless someone reads, and a reader that stops reading
//! stalls nothing: the log keeps the newest [`EventLog::CAPACITY`] events and a slow reader skips what was trimmed.
//! As upstream's broadcaster, a new reader first sees what is buffered, and once every reader has gone, events are
//! no longer kept.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;

/// Called once, when an event arrives for a reader that found none.
pub type Wake = Box<dyn FnOnce() + Send>;

#[derive(Default)]
pub struct EventLog {
  inner: Mutex<Buffer>,
}

#[derive(Default)]
struct Buffer {
  events: VecDeque<Arc<str>>,
  /// The sequence number of `events[0]`.
  first: u64,
  readers: usize,
  had_readers: bool,
  wakes: Vec<Wake>,
}

impl Buffer {
  fn end(&self) -> u64 {
    self.first + self.events.len() as u64
  }
}

/// Events after a reader's cursor, as JSON texts, and the cursor to read from next.
pub struct Batch {
  pub events: Vec<Arc<str>>,
  pub next: u64,
}

impl EventLog {
  /// Upstream's `DEFAULT_MAX_BUFFER_SIZE`.
  pub const CAPACITY: usize = 10_000;

  fn lock(&self) -> MutexGuard<'_, Buffer> {
    self.inner.lock().unwrap_or_else(PoisonError::into_inner)
  }

  pub fn emit(&self, event: &Value) {
    self.emit_with(|| event.to_string());
  }

  /// [`EventLog::emit`] for an event rendered as JSON text by `render`, which is not called when nobody listens.
  pub fn emit_with(&self, render: impl FnOnce() -> String) {
    let wakes = {
      let mut buffer = self.lock();
      if buffer.had_readers && buffer.readers == 0 {
        return;
      }
      buffer.events.push_back(Arc::from(render()));
      if buffer.events.len() > Self::CAPACITY {
        buffer.events.pop_front();
        buffer.first += 1;
      }
      std::mem::take(&mut buffer.wakes)
    };
    for wake in wakes {
      wake();
    }
  }

  /// A new reader; its cursor starts at the oldest buffered event.
  pub fn open_reader(&self) -> u64 {
    let mut buffer = self.lock();
    buffer.readers += 1;
    buffer.had_readers = true;
    buffer.first
  }

  /// A new reader that takes the buffered events at once, as `replay` reads them (none can arrive in between).
  pub fn open_reader_replaying<T>(&self, replay: impl FnOnce(&mut dyn Iterator<Item = &str>) -> T) -> T {
    let mut buffer = self.lock();
    buffer.readers += 1;
    buffer.had_readers = true;
    replay(&mut buffer.events.iter().map(|event| &**event))
  }

  pub fn close_reader(&self) {
    let mut buffer = self.lock();
    buffer.readers = buffer.readers.saturating_sub(1);
  }

  /// Whether a reader is open (a stream someone iterates keeps its session in memory).
  pub fn has_readers(&self) -> bool {
    self.lock().readers > 0
  }

  /// The events from `cursor` on, or `None` after arranging for `wake` to be called when one arrives.
  pub fn read(&self, cursor: u64, max: usize, wake: Wake) -> Option<Batch> {
    let mut buffer = self.lock();
    let from = cursor.max(buffer.first);
    if from >= buffer.end() {
      buffer.wakes.push(wake);
      return None;
    }
    let skip = (from - buffer.first) as usize;
    let events: Vec<Arc<str>> = buffer.events.iter().skip(skip).take(max).cloned().collect();
    let next = from + events.len() as u64;
    Some(Batch { events, next })
  }

  pub fn len(&self) -> usize {
    self.lock().events.len()
  }

  pub fn is_empty(&self) -> bool {
    self.len() == 0
  }
}

#[cfg(test)]
mod tests {
  use std::sync::atomic::{AtomicUsize, Ordering};

  use serde_json::json;

  use super::*;

  fn texts(batch: &Batch) -> Vec<String> {
    batch.events.iter().map(|e| e.to_string()).collect()
  }

  #[test]
  fn every_reader_gets_every_event_from_the_start_of_the_buffer() {
    let log = EventLog::default();
    log.emit(&json!(1));
    let a = log.open_reader();
    let b = log.open_reader();
    log.emit(&json!(2));
    let first = log.read(a, 10, Box::new(|| {})).expect("events");
    assert_eq!(texts(&first), ["1", "2"]);
    assert_eq!(texts(&log.read(b, 1, Box::new(|| {})).expect("events")), ["1"]);
    assert!(log.read(first.next, 10, Box::new(|| {})).is_none());
  }

  #[test]
  fn a_reader_waiting_is_woken_once_by_the_next_event() {
    let log = EventLog::default();
    let cursor = log.open_reader();
    let woken = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&woken);
    assert!(
      log
        .read(
          cursor,
          10,
          Box::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
          })
        )
        .is_none()
    );
    log.emit(&json!("x"));
    log.emit(&json!("y"));
    assert_eq!(woken.load(Ordering::SeqCst), 1);
    assert_eq!(log.read(cursor, 10, Box::new(|| {})).map(|b| b.events.len()), Some(2));
  }

  #[test]
  fn the_buffer_is_bounded_and_a_slow_reader_skips_what_was_trimmed() {
    let log = EventLog::default();
    let slow = log.open_reader();
    for i in 0..EventLog::CAPACITY + 5 {
      log.emit(&json!(i));
    }
    assert_eq!(log.len(), EventLog::CAPACITY);
    let batch = log.read(slow, 1, Box::new(|| {})).expect("events");
    assert_eq!(texts(&batch), ["5"]);
  }

  #[test]
  fn once_every_reader_has_gone_events_are_not_kept() {
    let log = EventLog::default();
    log.emit(&json!("before any reader"));
    log.open_reader();
    log.close_reader();
    log.emit(&json!("nobody listens"));
    assert_eq!(log.len(), 1);
  }
}
