//! `createInMemoryStorage()`: a process-local map. Unlike upstream's, it stores copies, not references, so that
//! what an agent reads back is what it wrote, exactly as a durable store would return it.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;

use super::{Storage, StorageResult};

#[derive(Debug, Default)]
pub struct InMemoryStorage {
  // Ordered so that `list` is a range scan rather than a filter over every key.
  entries: Mutex<BTreeMap<String, Value>>,
}

impl InMemoryStorage {
  pub fn new() -> Self {
    Self::default()
  }

  fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Value>> {
    // A poisoned lock only means another thread panicked mid-call; the map itself is still consistent.
    self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
  }

  pub fn get_now(&self, key: &str) -> Option<Value> {
    self.entries().get(key).cloned()
  }

  pub fn set_now(&self, key: &str, value: Value) {
    self.entries().insert(key.to_owned(), value);
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
}
