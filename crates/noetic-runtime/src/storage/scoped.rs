//! `ScopedStorage`: a layer's view of the storage adapter under `layers/<layerId>/<scopeKey>/`.

use std::sync::Arc;

use serde_json::Value;

use super::{Storage, StorageResult};
use crate::memory::{scoped_list_prefix, scoped_prefix, unscope_listed_key};

#[derive(Clone)]
pub struct ScopedStorage {
  storage: Arc<dyn Storage>,
  prefix: String,
}

impl ScopedStorage {
  pub fn new(storage: Arc<dyn Storage>, layer_id: &str, scope_key: &str) -> Self {
    Self { storage, prefix: scoped_prefix(layer_id, scope_key) }
  }

  pub fn prefix(&self) -> &str {
    &self.prefix
  }

  pub fn full_key(&self, key: &str) -> String {
    format!("{}{key}", self.prefix)
  }

  pub async fn get(&self, key: &str) -> StorageResult<Option<Value>> {
    self.storage.get(&self.full_key(key)).await
  }

  pub async fn set(&self, key: &str, value: Value) -> StorageResult<()> {
    self.storage.set(&self.full_key(key), value).await
  }

  pub async fn delete(&self, key: &str) -> StorageResult<()> {
    self.storage.delete(&self.full_key(key)).await
  }

  /// Keys under `key_prefix`, relative to the layer's prefix (not to `key_prefix`), as upstream.
  pub async fn list(&self, key_prefix: Option<&str>) -> StorageResult<Vec<String>> {
    let keys = self.storage.list(&scoped_list_prefix(&self.prefix, key_prefix)).await?;
    Ok(keys.iter().map(|key| unscope_listed_key(&self.prefix, key)).collect())
  }
}
