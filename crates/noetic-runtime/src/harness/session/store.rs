//! A session's history in storage (`persistSessions`): each turn appends its new items as one entry, under the next
//! number of the thread's sequence, and a process reads back only the entries after the last one it has.
//!
//! Layout: `sessions/<thread>/<number>`, the thread with `%` and `/` escaped (so that no thread's entries fall under
//! another's prefix), the number zero-padded to twelve digits (so that byte order is sequence order). An entry is a
//! JSON array of the items as the log holds their text, so that they come back byte for byte; an entry written by
//! `seedSessionHistory`, or by a turn whose history displaced a seed, is `{"replace": [items]}`, the whole history
//! from there on. The native stores write an entry only if its number is free (one conditional write): two turns
//! appended at the same moment get different numbers, the later after the earlier, and neither is lost.
//!
//! A history is read from its newest entry back to its newest replacement and no further, so what came before a
//! replacement is never read: a seed repairs a thread whose older entries are damaged.

use std::sync::Arc;

use serde_json::value::RawValue;

use crate::error::ConfigError;
use crate::items::{Item, ItemTypes, parse_js_item};
use crate::storage::{Storage, StorageError, shown};

/// One turn's items as stored, with their number in the thread's sequence.
pub struct Entry {
  pub number: u64,
  pub items: Vec<Arc<Item>>,
  /// The items are the whole history from this entry on, not an addition to it.
  pub replace: bool,
}

pub struct SessionStore {
  storage: Arc<dyn Storage>,
}

const NUMBER_DIGITS: usize = 12;

impl SessionStore {
  pub fn new(storage: Arc<dyn Storage>) -> Self {
    Self { storage }
  }

  fn prefix(thread: &str) -> String {
    format!("sessions/{}/", thread.replace('%', "%25").replace('/', "%2F"))
  }

  fn key(thread: &str, number: u64) -> String {
    format!("{}{number:0width$}", Self::prefix(thread), width = NUMBER_DIGITS)
  }

  /// The number a key of the thread's names; `None` for a key that is not one of its entries.
  fn number_of(prefix: &str, key: &str) -> Option<u64> {
    let digits = key.strip_prefix(prefix)?;
    (digits.len() >= NUMBER_DIGITS && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok())?
  }

  /// Refuses a thread id the store cannot hold in a key (U+0000 in PostgreSQL), before anything runs for it.
  pub fn check_thread(&self, thread: &str, caller: &str) -> Result<(), ConfigError> {
    match self.storage.refuses_key(&Self::prefix(thread)) {
      None => Ok(()),
      Some(why) => Err(ConfigError::new(
        "INVALID_THREAD_ID",
        format!("{caller}: the thread id {} cannot name a persisted thread: {why}", shown(thread)),
        "Use a thread id without that character (persistSessions keeps each thread's history under a key made of its \
         id).",
      )),
    }
  }

  /// The entries after `after` from the newest back to the newest replacement among them, in order. One missing
  /// from the sequence, or one that is not a list of items, is an error naming the thread and the entry: a history
  /// is never read back shortened.
  pub async fn read_after(&self, thread: &str, after: u64) -> Result<Vec<Entry>, ConfigError> {
    let prefix = Self::prefix(thread);
    let stored = self
      .storage
      .read_texts(&prefix, &Self::key(thread, after + 1))
      .await
      .map_err(|error| failure(thread, Doing::Reading, error))?;
    let mut entries = Vec::new();
    for stored in stored.into_iter().rev() {
      let key = &stored.key;
      let number = Self::number_of(&prefix, key)
        .ok_or_else(|| corrupt(thread, key, "its name is not a number of the sequence"))?;
      let text = stored.text.map_err(|why| corrupt(thread, key, &why))?;
      let (items, replace) = parse_entry(&text).map_err(|why| corrupt(thread, key, &why))?;
      entries.push(Entry { number, items, replace });
      if replace {
        break;
      }
    }
    entries.reverse();
    // The numbers run on without a gap, from the replacement or else from the one after `after`.
    let first = entries.first().filter(|entry| entry.replace).map_or(after + 1, |entry| entry.number);
    if let Some(missing) =
      (first..).zip(&entries).find_map(|(expected, entry)| (entry.number != expected).then_some(expected))
    {
      return Err(corrupt(
        thread,
        &Self::key(thread, missing),
        "it is missing from the sequence (a later entry exists)",
      ));
    }
    Ok(entries)
  }

  /// Appends `items` (`replace`: as the whole history from there on) as entry `number` if no other writer has taken
  /// it; false when one has.
  pub async fn append_at(
    &self,
    thread: &str,
    number: u64,
    items: &[Arc<Item>],
    replace: bool,
  ) -> Result<bool, ConfigError> {
    self.insert(thread, number, entry_text(items, replace)).await
  }

  /// Writes an entry's `text` as entry `number` if that number is free; false when another writer has taken it.
  async fn insert(&self, thread: &str, number: u64, text: String) -> Result<bool, ConfigError> {
    let key = Self::key(thread, number);
    self.storage.insert_text(&key, text).await.map_err(|error| failure(thread, Doing::Writing, error))
  }

  /// Appends `items` (`replace`: as the whole history from there on) as entry `number`, or, when another writer has
  /// taken that number, after the last entry there is; returns the number it went in under.
  pub async fn append_next(
    &self,
    thread: &str,
    mut number: u64,
    items: &[Arc<Item>],
    replace: bool,
  ) -> Result<u64, ConfigError> {
    let text = entry_text(items, replace);
    loop {
      if self.insert(thread, number, text.clone()).await? {
        return Ok(number);
      }
      let last = self.last_number(thread).await?;
      // Each try goes past an entry the store lists, so this ends; a store that calls a number taken and then lists
      // nothing there would otherwise send it on for ever.
      if last < number {
        return Err(failure(
          thread,
          Doing::Writing,
          StorageError::coded(
            "STORAGE_ADAPTER_INCONSISTENT",
            format!("the storage refused {} as taken, yet lists no entry there", shown(&Self::key(thread, number))),
            "The store's writes and its list disagree: something else is deleting the thread's keys, or a storage \
             adapter's get answers a value for a key it does not hold.",
          ),
        ));
      }
      number = last + 1;
    }
  }

  /// The number of the thread's last entry, from its keys alone (0 when it has none): where an entry goes that
  /// need not read the ones before it.
  async fn last_number(&self, thread: &str) -> Result<u64, ConfigError> {
    let prefix = Self::prefix(thread);
    let keys = self.storage.list(&prefix).await.map_err(|error| failure(thread, Doing::Reading, error))?;
    Ok(keys.iter().filter_map(|key| Self::number_of(&prefix, key)).max().unwrap_or(0))
  }
}

/// An entry's JSON text: the items' own texts in an array, or in `{"replace": [...]}`.
fn entry_text(items: &[Arc<Item>], replace: bool) -> String {
  let mut text = String::with_capacity(items.iter().map(|item| item.json_text().len() + 1).sum::<usize>() + 16);
  text.push_str(if replace { r#"{"replace":["# } else { "[" });
  for (i, item) in items.iter().enumerate() {
    if i > 0 {
      text.push(',');
    }
    text.push_str(item.json_text());
  }
  text.push_str(if replace { "]}" } else { "]" });
  text
}

#[derive(serde::Deserialize)]
struct Replacement<'a> {
  #[serde(borrow)]
  replace: Vec<&'a RawValue>,
}

fn parse_entry(text: &str) -> Result<(Vec<Arc<Item>>, bool), String> {
  // An array appends; an object (`{"replace": [...]}`) replaces.
  let parsed = if text.trim_start().starts_with('{') {
    serde_json::from_str::<Replacement<'_>>(text).map(|entry| (entry.replace, true))
  } else {
    serde_json::from_str::<Vec<&RawValue>>(text).map(|texts| (texts, false))
  };
  let (texts, replace) =
    parsed.map_err(|error| format!("it is not a JSON array of items, nor a replacement history ({error})"))?;
  let items = texts
    .iter()
    .enumerate()
    .map(|(i, raw)| {
      parse_js_item(raw.get(), ItemTypes::default().unless_checked(true))
        .map(Arc::new)
        .map_err(|error| format!("its element {i} is not an item ({error})"))
    })
    .collect::<Result<_, _>>()?;
  Ok((items, replace))
}

#[derive(Clone, Copy)]
enum Doing {
  Reading,
  Writing,
}

/// A storage failure as the turn (or the seed) that met it fails with. A store that knows what its failure means
/// keeps its code; one that could not answer is `STORAGE_UNAVAILABLE`. A write whose outcome is unknown says so:
/// the turn was not acknowledged, yet its entry may still land.
fn failure(thread: &str, doing: Doing, error: StorageError) -> ConfigError {
  let thread = shown(thread);
  let why = error.message;
  match (doing, error.code) {
    (Doing::Writing, Some((code @ "STORAGE_OUTCOME_UNKNOWN", _))) => ConfigError::new(
      code,
      format!("the history of thread {thread} may still have been stored: {why}"),
      "It was not acknowledged, yet the write may still land; if it does, the thread's next turn has it. Read the \
       thread back before sending the message again.",
    ),
    (doing, code) => {
      let (code, hint) = code.unwrap_or((
        "STORAGE_UNAVAILABLE",
        "The turn did not run (or its items were not kept) and nothing acknowledged was lost: try again once the \
         storage is back.",
      ));
      let done = match doing {
        Doing::Reading => "read from",
        Doing::Writing => "written to",
      };
      ConfigError::new(code, format!("the history of thread {thread} could not be {done} storage: {why}"), hint)
    }
  }
}

fn corrupt(thread: &str, key: &str, why: &str) -> ConfigError {
  ConfigError::new(
    "SESSION_HISTORY_CORRUPT",
    format!("the stored history of thread {} is damaged: entry {}: {why}", shown(thread), shown(key)),
    "Something other than this harness wrote or deleted keys under sessions/. seedSessionHistory(threadId, items) \
     replaces the thread's history (its turns then never read the damaged entry), or restore the keys from a backup.",
  )
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::items::create_message;
  use crate::storage::InMemoryStorage;

  fn item(text: &str) -> Arc<Item> {
    Arc::new(create_message(text, "user").unwrap())
  }

  #[tokio::test]
  async fn entries_come_back_in_order_byte_for_byte_and_only_after_the_number_asked() {
    let store = SessionStore::new(Arc::new(InMemoryStorage::new()));
    let (a, b, c) = (item("one"), item("two é 😀 \"q\""), item("three"));
    assert_eq!(store.append_next("t/1", 1, &[Arc::clone(&a), Arc::clone(&b)], false).await.unwrap(), 1);
    assert_eq!(store.append_next("t/1", 2, &[Arc::clone(&c)], false).await.unwrap(), 2);
    // A thread whose name extends this one's stays apart.
    assert_eq!(store.append_next("t/1/x", 1, &[item("other")], false).await.unwrap(), 1);
    let all = store.read_after("t/1", 0).await.unwrap();
    assert_eq!(all.iter().map(|e| e.number).collect::<Vec<_>>(), vec![1, 2]);
    let texts: Vec<&str> = all.iter().flat_map(|e| e.items.iter().map(|i| i.json_text())).collect();
    assert_eq!(texts, vec![a.json_text(), b.json_text(), c.json_text()]);
    let later = store.read_after("t/1", 1).await.unwrap();
    assert_eq!(later.len(), 1);
    assert_eq!(later[0].items[0].json_text(), c.json_text());
    assert!(store.read_after("t/1", 2).await.unwrap().is_empty());
  }

  #[tokio::test]
  async fn a_taken_number_sends_the_entry_after_the_last_one_and_keeps_the_first_writer() {
    let store = SessionStore::new(Arc::new(InMemoryStorage::new()));
    assert_eq!(store.append_next("t", 1, &[item("first")], false).await.unwrap(), 1);
    assert_eq!(store.append_next("t", 1, &[item("second")], false).await.unwrap(), 2);
    let all = store.read_after("t", 0).await.unwrap();
    assert_eq!(all.len(), 2);
    assert!(all[0].items[0].json_text().contains("first"));
  }

  #[tokio::test]
  async fn a_gap_or_a_damaged_entry_is_an_error_naming_the_entry() {
    let storage = Arc::new(InMemoryStorage::new());
    let store = SessionStore::new(Arc::clone(&storage) as Arc<dyn Storage>);
    store.append_next("t", 1, &[item("a")], false).await.unwrap();
    store.append_next("t", 3, &[item("c")], false).await.unwrap();
    let error = store.read_after("t", 0).await.err().unwrap();
    assert_eq!(error.code, "SESSION_HISTORY_CORRUPT");
    assert!(error.message.contains("sessions/t/000000000002"), "{}", error.message);

    storage.set_now("sessions/u/000000000001", serde_json::json!({ "not": "a list" }));
    let error = store.read_after("u", 0).await.err().unwrap();
    assert!(error.message.contains("sessions/u/000000000001") && error.message.contains("not a JSON array"));
    assert!(error.hint.contains("seedSessionHistory"), "{}", error.hint);
    storage.set_now("sessions/v/000000000001", serde_json::json!([{ "no": "type" }]));
    let error = store.read_after("v", 0).await.err().unwrap();
    assert!(error.message.contains("element 0 is not an item"), "{}", error.message);
  }

  #[tokio::test]
  async fn a_history_is_read_back_from_its_newest_replacement_so_what_came_before_is_never_read() {
    let storage = Arc::new(InMemoryStorage::new());
    let store = SessionStore::new(Arc::clone(&storage) as Arc<dyn Storage>);
    store.append_next("t", 1, &[item("old")], false).await.unwrap();
    // Damaged, and with a gap after it: both before the replacement, so neither matters.
    storage.set_now("sessions/t/000000000002", serde_json::json!("damaged"));
    assert_eq!(store.append_next("t", 1, &[item("seeded"), item("turn")], true).await.unwrap(), 3);
    store.append_next("t", 4, &[item("later")], false).await.unwrap();
    let entries = store.read_after("t", 0).await.unwrap();
    assert_eq!(entries.iter().map(|e| (e.number, e.replace)).collect::<Vec<_>>(), vec![(3, true), (4, false)]);
    assert_eq!(entries[0].items.len(), 2);
    assert_eq!(store.read_after("t", 3).await.unwrap().len(), 1);
    // A damaged entry after it is still an error.
    storage.set_now("sessions/t/000000000005", serde_json::json!({ "replace": "no" }));
    assert_eq!(store.read_after("t", 0).await.err().unwrap().code, "SESSION_HISTORY_CORRUPT");
  }

  #[tokio::test]
  async fn a_key_under_the_thread_that_is_not_an_entry_number_is_named() {
    let storage = Arc::new(InMemoryStorage::new());
    let store = SessionStore::new(Arc::clone(&storage) as Arc<dyn Storage>);
    store.append_next("t", 1, &[item("a")], false).await.unwrap();
    storage.set_now("sessions/t/notes", serde_json::json!([]));
    let error = store.read_after("t", 0).await.err().unwrap();
    assert!(
      error.message.contains("'sessions/t/notes'") && error.message.contains("not a number"),
      "{}",
      error.message
    );
  }
}
