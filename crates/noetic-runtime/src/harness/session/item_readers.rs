//! The readers of a session's item stream (`getItemStream`).
//!
//! Each reader folds the provider's events itself as they are emitted (as each of upstream's item readers folds the
//! events it reads), and queues what each event did: an item whole when it starts or is done, and in between only
//! the text a delta added. The JS reader replays these changes on its own copy of each item and yields a snapshot
//! per change, so a long reply streamed a few characters a delta costs memory and copying in proportion to its
//! length, not to its length times its deltas; with no reader, nothing is folded or kept at all.
//!
//! A reader whose unread changes outgrow [`QUEUE_LIMIT`] bytes stops queueing them and is sent, when it next reads,
//! every item whole as it then stands: it skips snapshots in between but never a piece of an item. The runtime
//! reads a provider's stream far faster than JS reads the changes, so the limit is generous: a 1 MB reply in deltas
//! of a few characters fits.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;

use super::events::Wake;
use super::items::{Change, ItemFold, ItemKey};
use crate::items::write_js_string;

/// How many bytes of changes a reader may have waiting.
pub const QUEUE_LIMIT: usize = 32 << 20;

#[derive(Default)]
pub struct ItemReaders {
  inner: Mutex<Readers>,
}

#[derive(Default)]
struct Readers {
  next_id: u64,
  open: HashMap<u64, ItemReader>,
}

#[derive(Default)]
struct ItemReader {
  fold: ItemFold,
  /// Changes not yet read, each as the JSON text the JS reader replays, and their length in bytes.
  queued: VecDeque<String>,
  queued_bytes: usize,
  /// The queue overflowed: the next read sends every item whole instead.
  resend_all: bool,
  wake: Option<Wake>,
}

impl ItemReader {
  fn feed(&mut self, kind: &str, data: &Value) {
    let Some(change) = self.fold.feed(kind, data) else { return };
    if self.resend_all {
      return;
    }
    let entry = match change {
      Change::Whole(key) => self.whole(key),
      Change::Text(key, text) => Some(entry(key, Some(("text", text)))),
      Change::Arguments(key, text) => Some(entry(key, Some(("arguments", text)))),
      Change::Complete(key) => Some(entry(key, Some(("complete", "")))),
      Change::Same(key) => Some(entry(key, None)),
    };
    let Some(entry) = entry else { return };
    self.queued_bytes += entry.len();
    self.queued.push_back(entry);
    if self.queued_bytes > QUEUE_LIMIT {
      self.queued = VecDeque::new();
      self.queued_bytes = 0;
      self.resend_all = true;
    }
  }

  fn whole(&self, key: ItemKey) -> Option<String> {
    let item = self.fold.snapshot(key)?;
    let mut text = entry(key, None);
    text.truncate(text.len() - 1);
    let _ = write!(text, r#","item":{item}}}"#);
    Some(text)
  }

  fn has_news(&self) -> bool {
    self.resend_all || !self.queued.is_empty()
  }
}

/// `{"key": "<round>:<index>"}`, with `"text"` or `"arguments"` (the text the change appended) or `"complete": true`.
fn entry(key: ItemKey, field: Option<(&str, &str)>) -> String {
  let mut text = format!(r#"{{"key":"{}:{}""#, key.0, key.1);
  match field {
    Some(("complete", _)) => text.push_str(r#","complete":true"#),
    Some((name, appended)) => {
      let _ = write!(text, r#","{name}":"#);
      write_js_string(&mut text, appended);
    }
    None => {}
  }
  text.push('}');
  text
}

/// The lock held while an event is emitted and folded, so that a reader opening meanwhile sees each event exactly
/// once: either in the buffer it replays or as it is fed.
pub struct Feeding<'a>(MutexGuard<'a, Readers>);

impl Feeding<'_> {
  pub fn has_readers(&self) -> bool {
    !self.0.open.is_empty()
  }

  /// Folds one provider event into every reader; the wakes of the readers waiting for news, to call once unlocked.
  pub fn feed(&mut self, kind: &str, data: &Value) -> Vec<Wake> {
    let mut wakes = Vec::new();
    for reader in self.0.open.values_mut() {
      reader.feed(kind, data);
      if reader.has_news()
        && let Some(wake) = reader.wake.take()
      {
        wakes.push(wake);
      }
    }
    wakes
  }

  /// A new reader, which first folds `replayed`: the provider events still buffered, as `(kind, data)`.
  pub fn open(&mut self, replayed: impl IntoIterator<Item = (String, Value)>) -> u64 {
    let mut reader = ItemReader::default();
    for (kind, data) in replayed {
      reader.feed(&kind, &data);
    }
    let id = self.0.next_id;
    self.0.next_id += 1;
    self.0.open.insert(id, reader);
    id
  }
}

impl ItemReaders {
  fn lock(&self) -> MutexGuard<'_, Readers> {
    self.inner.lock().unwrap_or_else(PoisonError::into_inner)
  }

  pub fn feeding(&self) -> Feeding<'_> {
    Feeding(self.lock())
  }

  /// Up to `max` of the changes `reader` has not read, oldest first, as JSON texts (see [`entry`]); or `None` after
  /// arranging for `wake` to be called once there is one. A closed reader reads nothing and is never woken.
  pub fn read(&self, reader: u64, max: usize, wake: Wake) -> Option<Vec<String>> {
    let mut readers = self.lock();
    let reader = readers.open.get_mut(&reader)?;
    if !reader.has_news() {
      reader.wake = Some(wake);
      return None;
    }
    if std::mem::take(&mut reader.resend_all) {
      return Some(reader.fold.keys().into_iter().filter_map(|key| reader.whole(key)).collect());
    }
    let taken: Vec<String> = reader.queued.drain(..max.min(reader.queued.len())).collect();
    reader.queued_bytes -= taken.iter().map(String::len).sum::<usize>();
    Some(taken)
  }

  /// Ends `reader`: what it folded is dropped. True when it was open.
  pub fn close(&self, reader: u64) -> bool {
    self.lock().open.remove(&reader).is_some()
  }

  #[cfg(test)]
  fn is_empty(&self) -> bool {
    self.lock().open.is_empty()
  }
}

#[cfg(test)]
mod tests {
  use std::sync::Arc;
  use std::sync::atomic::{AtomicUsize, Ordering};

  use serde_json::json;

  use super::*;

  fn feed(readers: &ItemReaders, kind: &str, data: Value) {
    for wake in readers.feeding().feed(kind, &data) {
      wake();
    }
  }

  fn read(readers: &ItemReaders, reader: u64) -> Vec<Value> {
    let read = readers.read(reader, usize::MAX, Box::new(|| {})).unwrap_or_default();
    read.iter().map(|text| serde_json::from_str(text).expect("JSON")).collect()
  }

  fn message_started(readers: &ItemReaders) {
    feed(readers, "response.created", json!({}));
    feed(readers, "response.output_item.added", json!({ "outputIndex": 0, "item": { "id": "m", "type": "message" } }));
  }

  #[test]
  fn a_reader_gets_the_item_whole_once_then_only_what_each_delta_added() {
    let readers = ItemReaders::default();
    let reader = readers.feeding().open([]);
    message_started(&readers);
    for piece in ["ab", "cd"] {
      feed(&readers, "response.output_text.delta", json!({ "outputIndex": 0, "delta": piece }));
    }
    feed(&readers, "response.output_text.done", json!({ "outputIndex": 0 }));
    feed(&readers, "response.output_item.done", json!({ "outputIndex": 0 }));
    let changes = read(&readers, reader);
    assert_eq!(changes.len(), 5);
    assert_eq!(changes[0]["item"]["content"][0]["text"], "");
    assert_eq!((changes[1]["key"].clone(), changes[1]["text"].clone()), (json!("1:0"), json!("ab")));
    assert_eq!(changes[2]["text"], "cd");
    assert_eq!(changes[3]["complete"], true);
    assert_eq!(changes[4]["item"]["content"][0]["text"], "abcd");
    assert_eq!(
      (changes[4]["item"]["status"].clone(), changes[4]["item"]["isComplete"].clone()),
      (json!("completed"), json!(true))
    );
  }

  #[test]
  fn a_reader_that_falls_too_far_behind_gets_every_item_whole_with_nothing_lost() {
    let readers = ItemReaders::default();
    let reader = readers.feeding().open([]);
    message_started(&readers);
    let piece = "x".repeat(1 << 16);
    let pieces = QUEUE_LIMIT / piece.len() + 1;
    for _ in 0..pieces {
      feed(&readers, "response.output_text.delta", json!({ "outputIndex": 0, "delta": piece }));
    }
    let changes = read(&readers, reader);
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0]["item"]["content"][0]["text"].as_str().map(str::len), Some(pieces * piece.len()));
    feed(&readers, "response.output_text.delta", json!({ "outputIndex": 0, "delta": "y" }));
    assert_eq!(read(&readers, reader)[0]["text"], "y", "and then changes again");
  }

  #[test]
  fn a_reader_replays_what_is_buffered_and_is_woken_once_by_the_next_change() {
    let readers = ItemReaders::default();
    let buffered = [
      ("response.created".to_owned(), json!({})),
      ("response.output_item.added".to_owned(), json!({ "outputIndex": 0, "item": { "id": "m", "type": "message" } })),
      ("response.output_text.delta".to_owned(), json!({ "outputIndex": 0, "delta": "hi" })),
    ];
    let reader = readers.feeding().open(buffered);
    assert_eq!(read(&readers, reader).len(), 2);
    let woken = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&woken);
    let wake = move || {
      count.fetch_add(1, Ordering::SeqCst);
    };
    assert!(readers.read(reader, usize::MAX, Box::new(wake)).is_none());
    feed(&readers, "response.output_text.delta", json!({ "outputIndex": 0, "delta": "!" }));
    feed(&readers, "response.output_text.delta", json!({ "outputIndex": 0, "delta": "!" }));
    assert_eq!(woken.load(Ordering::SeqCst), 1);
    assert_eq!(read(&readers, reader).len(), 2);
  }

  #[test]
  fn a_reader_reads_its_changes_a_batch_at_a_time_oldest_first() {
    let readers = ItemReaders::default();
    let reader = readers.feeding().open([]);
    message_started(&readers);
    for piece in ["a", "b", "c"] {
      feed(&readers, "response.output_text.delta", json!({ "outputIndex": 0, "delta": piece }));
    }
    let first = readers.read(reader, 2, Box::new(|| {})).unwrap();
    assert_eq!(first.len(), 2);
    assert!(first[0].contains(r#""item""#) && first[1].contains(r#""text":"a""#));
    let rest = readers.read(reader, 2, Box::new(|| {})).unwrap();
    assert!(rest[0].contains(r#""text":"b""#) && rest[1].contains(r#""text":"c""#));
    assert!(readers.read(reader, 2, Box::new(|| {})).is_none());
  }

  #[test]
  fn without_readers_nothing_is_kept_and_a_closed_reader_reads_nothing() {
    let readers = ItemReaders::default();
    assert!(!readers.feeding().has_readers());
    let reader = readers.feeding().open([]);
    assert!(readers.close(reader));
    message_started(&readers);
    assert!(readers.read(reader, usize::MAX, Box::new(|| {})).is_none());
    assert!(readers.is_empty());
  }
}
