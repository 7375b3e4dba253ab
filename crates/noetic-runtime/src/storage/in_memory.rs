//! `createInMemoryStorage()`: a process-local map. Unlike upstream's, it stores copies, not references, so that
//! what an agent reads back is what it wrote, exactly as a durable store would return it.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use super::{Storage, StorageError, StorageResult, StoredText};
use crate::js_text::{from_js_json, js_json_text};

/// A value as it was given: JSON text from JS stays text (JS reads it back as text, so most never need parsing).
#[derive(Debug, Clone)]
enum Stored {
  Value(Value),
  Text(Arc<str>),
}

impl Stored {
  fn value(&self) -> Value {
    match self {
      Self::Value(value) => value.clone(),
      // Checked when stored, and JS wrote it: it parses.
      Self::Text(text) => from_js_json(text).unwrap_or(Value::Null),
    }
  }

  fn text(&self) -> String {
    match self {
      Self::Value(value) => value.to_string(),
      Self::Text(text) => text.to_string(),
    }
  }
}

/// The entries, found by key through a hash map; the same keys are also kept in order, for the prefix scans.
///
/// Why both: the layers' states are read and written every turn, and with many sessions an ordered map's lookup
/// walked a dozen nodes of key comparisons, each likely a cache miss (a read cost twice as much at 100,000 keys as
/// at 100). A new key is put in both; a changed value touches the hash map alone.
#[derive(Debug, Default)]
struct Entries {
  values: HashMap<Arc<str>, Stored>,
  ordered: BTreeSet<Arc<str>>,
}

impl Entries {
  fn get(&self, key: &str) -> Option<&Stored> {
    self.values.get(key)
  }

  fn contains(&self, key: &str) -> bool {
    self.values.contains_key(key)
  }

  fn insert(&mut self, key: &str, stored: Stored) {
    if let Some(slot) = self.values.get_mut(key) {
      *slot = stored;
      return;
    }
    let key: Arc<str> = key.into();
    self.ordered.insert(Arc::clone(&key));
    self.values.insert(key, stored);
  }

  fn remove(&mut self, key: &str) {
    if self.values.remove(key).is_some() {
      self.ordered.remove(key);
    }
  }

  /// The entries whose keys start with `prefix`, in key order, from `start` on (`start` at or after `prefix`).
  fn scan<'a>(&'a self, prefix: &'a str, start: &str) -> impl Iterator<Item = (&'a Arc<str>, &'a Stored)> + 'a {
    self
      .ordered
      .range::<str, _>((Bound::Included(start), Bound::Unbounded))
      .take_while(move |key| key.starts_with(prefix))
      .filter_map(|key| self.values.get(key).map(|stored| (key, stored)))
  }
}

#[derive(Debug, Default)]
pub struct InMemoryStorage {
  entries: Mutex<Entries>,
}

impl InMemoryStorage {
  pub fn new() -> Self {
    Self::default()
  }

  fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
    // A poisoned lock only means another thread panicked mid-call; the map itself is still consistent.
    self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
  }

  pub fn get_now(&self, key: &str) -> Option<Value> {
    self.entries().get(key).map(Stored::value)
  }

  pub fn set_now(&self, key: &str, value: Value) {
    self.entries().insert(key, Stored::Value(value));
  }

  /// Stores JSON text JS wrote, unparsed (checked and made well-formed as a parse would, so later reads parse).
  pub fn set_json_now(&self, key: &str, text: String) -> StorageResult<()> {
    let text = js_json_text(text).map_err(StorageError::new)?;
    self.entries().insert(key, Stored::Text(text.into()));
    Ok(())
  }

  /// The stored value as JSON text, for JS.
  pub fn get_json_now(&self, key: &str) -> Option<String> {
    self.entries().get(key).map(Stored::text)
  }

  /// `read` given the stored value's JSON text (None when the key is missing) while the store is locked: a text
  /// kept as JS wrote it is lent, not copied.
  pub fn read_json_now<R>(&self, key: &str, read: impl FnOnce(Option<&str>) -> R) -> R {
    let entries = self.entries();
    match entries.get(key) {
      Some(Stored::Text(text)) => read(Some(text)),
      Some(Stored::Value(value)) => read(Some(&value.to_string())),
      None => read(None),
    }
  }

  pub fn delete_now(&self, key: &str) {
    self.entries().remove(key);
  }

  pub fn list_now(&self, prefix: &str) -> Vec<String> {
    self.entries().scan(prefix, prefix).map(|(key, _)| key.to_string()).collect()
  }
}

#[async_trait]
impl Storage for InMemoryStorage {
  async fn get(&self, key: &str) -> StorageResult<Option<Value>> {
    Ok(self.get_now(key))
  }

  async fn set(&self, key: &str, value: Value) -> StorageResult<()> {
    self.set_now(key, value);
    Ok(())
  }

  async fn delete(&self, key: &str) -> StorageResult<()> {
    self.delete_now(key);
    Ok(())
  }

  async fn list(&self, prefix: &str) -> StorageResult<Vec<String>> {
    Ok(self.list_now(prefix))
  }

  fn answers_at_once(&self) -> bool {
    true
  }

  async fn set_json(&self, key: &str, text: String) -> StorageResult<()> {
    self.set_json_now(key, text)
  }

  async fn get_json(&self, key: &str) -> StorageResult<Option<String>> {
    Ok(self.get_json_now(key))
  }

  async fn insert_text(&self, key: &str, text: String) -> StorageResult<bool> {
    let text = js_json_text(text).map_err(StorageError::new)?;
    let mut entries = self.entries();
    if entries.contains(key) {
      return Ok(false);
    }
    entries.insert(key, Stored::Text(text.into()));
    Ok(true)
  }

  async fn read_texts(&self, prefix: &str, from: &str) -> StorageResult<Vec<StoredText>> {
    let start = if from > prefix { from } else { prefix };
    Ok(
      self.entries().scan(prefix, start).map(|(key, stored)| StoredText::new(key.to_string(), stored.text())).collect(),
    )
  }
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  #[tokio::test]
  async fn missing_keys_read_as_none_and_list_filters_by_prefix() {
    let storage = InMemoryStorage::new();
    assert_eq!(storage.get("a").await.unwrap(), None);
    storage.set("layers/w/T/state", json!({"n": 1})).await.unwrap();
    storage.set("layers/w/T/sub/a", json!(2)).await.unwrap();
    storage.set("layers/wx/T/state", json!(3)).await.unwrap();
    assert_eq!(storage.list("layers/w/").await.unwrap(), vec!["layers/w/T/state", "layers/w/T/sub/a"]);
    storage.delete("layers/w/T/state").await.unwrap();
    assert_eq!(storage.get("layers/w/T/state").await.unwrap(), None);
  }

  #[test]
  fn a_read_now_lends_the_text_js_wrote_and_writes_out_a_value_stored_from_rust() {
    let storage = InMemoryStorage::new();
    storage.set_json_now("from-js", r#"{ "kept":  "as written" }"#.to_owned()).unwrap();
    storage.set_now("from-rust", json!({"n": 1}));
    assert_eq!(
      storage.read_json_now("from-js", |text| text.map(str::to_owned)).as_deref(),
      Some(r#"{ "kept":  "as written" }"#)
    );
    assert_eq!(storage.read_json_now("from-rust", |text| text.map(str::to_owned)).as_deref(), Some(r#"{"n":1}"#));
    assert!(storage.read_json_now("missing", |text| text.is_none()));
  }

  #[tokio::test]
  async fn a_key_written_again_is_listed_once_and_a_deleted_one_not_at_all() {
    let storage = InMemoryStorage::new();
    for n in 0..3 {
      storage.set_json("s/T/2", format!("{n}")).await.unwrap();
      storage.set("s/T/1", json!(n)).await.unwrap();
    }
    storage.set("s/U/1", json!("other thread")).await.unwrap();
    assert_eq!(storage.list("s/T/").await.unwrap(), vec!["s/T/1", "s/T/2"]);
    assert_eq!(storage.get_json("s/T/2").await.unwrap().as_deref(), Some("2"));
    assert!(!storage.insert_text("s/T/2", "9".to_owned()).await.unwrap(), "an existing key is not replaced");
    assert!(storage.insert_text("s/T/3", "3".to_owned()).await.unwrap());
    let read = storage.read_texts("s/T/", "s/T/2").await.unwrap();
    assert_eq!(read, vec![StoredText::new("s/T/2", "2"), StoredText::new("s/T/3", "3")]);
    storage.delete("s/T/2").await.unwrap();
    storage.delete("s/T/missing").await.unwrap();
    assert_eq!(storage.list("s/").await.unwrap(), vec!["s/T/1", "s/T/3", "s/U/1"]);
    assert_eq!(storage.get("s/T/2").await.unwrap(), None);
  }

  #[tokio::test]
  async fn json_text_from_js_reads_back_as_written_and_as_a_value() {
    let storage = InMemoryStorage::new();
    // JS's own spelling (`1e+21`) survives; a lone surrogate is U+FFFD, as in a durable store (B1).
    let text = r#"{"big":1e+21,"cut":"a\ud83d","list":[1,[2]]}"#;
    storage.set_json("k", text.to_owned()).await.unwrap();
    let kept = r#"{"big":1e+21,"cut":"a\ufffd","list":[1,[2]]}"#;
    assert_eq!(storage.get_json("k").await.unwrap().as_deref(), Some(kept));
    assert_eq!(storage.get_now("k"), Some(json!({"big": 1e21, "cut": "a\u{fffd}", "list": [1, [2]]})));
    storage.set_now("v", json!({"n": 1}));
    assert_eq!(storage.get_json("v").await.unwrap().as_deref(), Some(r#"{"n":1}"#));
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    assert!(storage.set_json("deep", deep).await.is_err());
    assert_eq!(storage.get_now("deep"), None);
  }
}
