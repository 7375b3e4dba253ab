//! `ScopedStorage`: a layer's view of the storage adapter under `layers/<layerId>/<scopeKey>/`.

use std::sync::Arc;

use serde_json::Value;

use super::{Storage, StorageResult};

// Nothing is escaped: a layer `a/b` in scope `c` and a layer `a` in scope `b/c` share `layers/a/b/c/`, as upstream.
// Keys must stay byte-identical to upstream's so existing stores rehydrate.

/// `layers/<layerId>/<scopeKey>/`: every key of the layer's scoped storage starts with it.
pub fn scoped_prefix(layer_id: &str, scope_key: &str) -> String {
  // Joined, not formatted: every layer's key is made at every execution's init.
  ["layers/", layer_id, "/", scope_key, "/"].concat()
}

/// The adapter key that scoped `get`/`set`/`delete` of `key` touch.
pub fn scoped_key(layer_id: &str, scope_key: &str, key: &str) -> String {
  ["layers/", layer_id, "/", scope_key, "/", key].concat()
}

/// The adapter prefix that scoped `list(key_prefix)` asks for: the scoped prefix alone when `key_prefix` is absent
/// or empty.
pub fn scoped_list_prefix(prefix: &str, key_prefix: Option<&str>) -> String {
  format!("{prefix}{}", key_prefix.unwrap_or(""))
}

/// Maps one key returned by the adapter's `list` back to the layer's view: the scoped prefix is removed (the list
/// prefix is not, so `list("sub/")` yields `sub/a`), and a key that does not start with it passes through as is.
pub fn unscope_listed_key(prefix: &str, key: &str) -> String {
  key.strip_prefix(prefix).unwrap_or(key).to_owned()
}

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
