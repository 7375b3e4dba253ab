//! A session's history in storage (`persistSessions`): each turn appends its new items as one entry, under the next
//! number of the thread's sequence, and a process reads back only the entries after the last one it has.
//!
//! Layout: `sessions/<thread>/<number>`, the thread with `%` and `/` escaped (so that no thread's entries fall under
//! another's prefix), the number zero-padded to twelve digits (so that byte order is sequence order). An entry is a
//! JSON array of the items as the log holds their text, so that they come back byte for byte; an entry written after
//! `seedSessionHistory` replaced the history is `{"replace": [items]}`, the whole history from there on. The native
//! stores
//! write an entry only if its number is free (one conditional write): two turns appended at the same moment get
//! different numbers, the later after the earlier, and neither is lost.

use std::sync::Arc;

use serde_json::value::RawValue;

use crate::error::ConfigError;
use crate::items::{Item, ItemTypes, parse_js_item};
use crate::storage::Storage;

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

  /// The entries after `number`, in order. One missing from the sequence, or one that is not a list of items, is an
  /// error naming the thread and the entry: a history is never read back shortened.
  pub async fn read_after(&self, thread: &str, number: u64) -> Result<Vec<Entry>, ConfigError> {
    let prefix = Self::prefix(thread);
    let texts = self
      .storage
      .read_texts(&prefix, &Self::key(thread, number + 1))
      .await
      .map_err(|error| unavailable(thread, "read", &error.0))?;
    let mut entries = Vec::with_capacity(texts.len());
    for (expected, (key, text)) in (number + 1..).zip(texts) {
      let found = key[prefix.len()..].parse::<u64>().ok();
      if found != Some(expected) {
        let missing = Self::key(thread, expected);
        return Err(corrupt(thread, &missing, "it is missing from the sequence (a later entry exists)"));
      }
      let (items, replace) = parse_entry(&text).map_err(|why| corrupt(thread, &key, &why))?;
      entries.push(Entry { number: expected, items, replace });
    }
    Ok(entries)
  }

  /// Appends `items` as entry `number` (`replace`: as the whole history from there on); false when another writer
  /// has taken that number first.
  pub async fn append(
    &self,
    thread: &str,
    number: u64,
    items: &[Arc<Item>],
    replace: bool,
  ) -> Result<bool, ConfigError> {
    let mut text = String::with_capacity(items.iter().map(|item| item.json_text().len() + 1).sum::<usize>() + 16);
    text.push_str(if replace { r#"{"replace":["# } else { "[" });
    for (i, item) in items.iter().enumerate() {
      if i > 0 {
        text.push(',');
      }
      text.push_str(item.json_text());
    }
    text.push_str(if replace { "]}" } else { "]" });
    let key = Self::key(thread, number);
    self.storage.insert_text(&key, text).await.map_err(|error| unavailable(thread, "write", &error.0))
  }
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

fn unavailable(thread: &str, what: &str, why: &str) -> ConfigError {
  ConfigError::new(
    "STORAGE_UNAVAILABLE",
    format!("the history of thread '{thread}' could not be {what} in storage: {why}"),
    "The turn did not run (or its items were not kept) and nothing acknowledged was lost: try the turn again once \
     the storage is back.",
  )
}

fn corrupt(thread: &str, key: &str, why: &str) -> ConfigError {
  ConfigError::new(
    "SESSION_HISTORY_CORRUPT",
    format!("the stored history of thread '{thread}' is damaged: entry '{key}': {why}"),
    "Something other than this harness wrote or deleted keys under sessions/: restore them from a backup, or delete \
     the thread's keys to start it afresh.",
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
    assert!(store.append("t/1", 1, &[Arc::clone(&a), Arc::clone(&b)], false).await.unwrap());
    assert!(store.append("t/1", 2, &[Arc::clone(&c)], false).await.unwrap());
    // A thread whose name extends this one's stays apart.
    assert!(store.append("t/1/x", 1, &[item("other")], false).await.unwrap());
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
  async fn a_taken_number_is_refused_and_keeps_the_first_writer() {
    let store = SessionStore::new(Arc::new(InMemoryStorage::new()));
    assert!(store.append("t", 1, &[item("first")], false).await.unwrap());
    assert!(!store.append("t", 1, &[item("second")], true).await.unwrap());
    let all = store.read_after("t", 0).await.unwrap();
    assert_eq!(all.len(), 1);
    assert!(all[0].items[0].json_text().contains("first"));
  }

  #[tokio::test]
  async fn a_gap_or_a_damaged_entry_is_an_error_naming_the_entry() {
    let storage = Arc::new(InMemoryStorage::new());
    let store = SessionStore::new(Arc::clone(&storage) as Arc<dyn Storage>);
    store.append("t", 1, &[item("a")], false).await.unwrap();
    store.append("t", 3, &[item("c")], false).await.unwrap();
    let error = store.read_after("t", 0).await.err().unwrap();
    assert_eq!(error.code, "SESSION_HISTORY_CORRUPT");
    assert!(error.message.contains("sessions/t/000000000002"), "{}", error.message);

    storage.set_now("sessions/u/000000000001", serde_json::json!({ "not": "a list" }));
    let error = store.read_after("u", 0).await.err().unwrap();
    assert!(error.message.contains("sessions/u/000000000001") && error.message.contains("not a JSON array"));
    storage.set_now("sessions/v/000000000001", serde_json::json!([{ "no": "type" }]));
    let error = store.read_after("v", 0).await.err().unwrap();
    assert!(error.message.contains("element 0 is not an item"), "{}", error.message);
  }

  #[tokio::test]
  async fn a_replacement_entry_reads_back_as_one() {
    let store = SessionStore::new(Arc::new(InMemoryStorage::new()));
    store.append("t", 1, &[item("old")], false).await.unwrap();
    store.append("t", 2, &[item("seeded"), item("turn")], true).await.unwrap();
    let entries = store.read_after("t", 0).await.unwrap();
    assert_eq!(entries.iter().map(|e| e.replace).collect::<Vec<_>>(), vec![false, true]);
    assert_eq!(entries[1].items.len(), 2);
  }
}
