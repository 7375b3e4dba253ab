//! `createInMemoryStorage()`: a process-local map. Unlike upstream's, it stores copies, not references, so that
//! what an agent reads back is what it wrote, exactly as a durable store would return it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use super::{Storage, StorageError, StorageResult};
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

#[derive(Debug, Default)]
pub struct InMemoryStorage {
  // Ordered so that `list` is a range scan rather than a filter over every key.
  entries: Mutex<BTreeMap<String, Stored>>,
}

impl InMemoryStorage {
  pub fn new() -> Self {
    Self::default()
  }

  fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Stored>> {
    // A poisoned lock only means another thread panicked mid-call; the map itself is still consistent.
    self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
  }

  pub fn get_now(&self, key: &str) -> Option<Value> {
    self.entries().get(key).map(Stored::value)
  }

  pub fn set_now(&self, key: &str, value: Value) {
    self.entries().insert(key.to_owned(), Stored::Value(value));
  }

  /// Stores JSON text JS wrote, unparsed (checked and made well-formed as a parse would, so later reads parse).
  pub fn set_json_now(&self, key: &str, text: String) -> StorageResult<()> {
    let text = js_json_text(text).map_err(StorageError)?;
    self.entries().insert(key.to_owned(), Stored::Text(text.into()));
    Ok(())
  }

  /// The stored value as JSON text, for JS.
  pub fn get_json_now(&self, key: &str) -> Option<String> {
    self.entries().get(key).map(Stored::text)
  }

  pub fn delete_now(&self, key: &str) {
    self.entries().remove(key);
  }

  pub fn list_now(&self, prefix: &str) -> Vec<String> {
    self
      .entries()
      .range(prefix.to_owned()..)
      .take_while(|(key, _)| key.starts_with(prefix))
      .map(|(key, _)| key.clone())
      .collect()
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
    let text = js_json_text(text).map_err(StorageError)?;
    let mut entries = self.entries();
    if entries.contains_key(key) {
      return Ok(false);
    }
    entries.insert(key.to_owned(), Stored::Text(text.into()));
    Ok(true)
  }

  async fn read_texts(&self, prefix: &str, from: &str) -> StorageResult<Vec<(String, String)>> {
    let start = if from > prefix { from } else { prefix };
    Ok(
      self
        .entries()
        .range(start.to_owned()..)
        .take_while(|(key, _)| key.starts_with(prefix))
        .map(|(key, stored)| (key.clone(), stored.text()))
        .collect(),
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
