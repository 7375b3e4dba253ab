//! Storage as JS sees it: `createInMemoryStorage()` returns a `NativeStorage` (Rust owns the data), and a user's
//! own adapter object is reached through the dispatcher.

use std::sync::Arc;

use async_trait::async_trait;
use napi_derive::napi;
use noetic_runtime::memory::state::DiagnosticSink;
use noetic_runtime::storage::{InMemoryStorage, Storage, StorageError, StorageResult};
use serde_json::{Value, json};

use crate::dispatcher::Dispatch;

/// The Map-backed `StorageAdapter` of `createInMemoryStorage()`.
#[napi(js_name = "NativeStorage")]
pub struct NativeStorage {
  pub(crate) inner: Arc<InMemoryStorage>,
}

#[napi]
impl NativeStorage {
  #[napi(constructor)]
  pub fn new() -> Self {
    Self { inner: Arc::new(InMemoryStorage::new()) }
  }

  /// Resolves to the stored value, or `null` when the key is missing.
  #[napi(ts_return_type = "Promise<any>")]
  pub async fn get(&self, key: String) -> Option<Value> {
    self.inner.get_now(&key)
  }

  #[napi]
  pub async fn set(&self, key: String, value: Value) {
    self.inner.set_now(&key, value);
  }

  #[napi]
  pub async fn delete(&self, key: String) {
    self.inner.delete_now(&key);
  }

  #[napi]
  pub async fn list(&self, prefix: String) -> Vec<String> {
    self.inner.list_now(&prefix)
  }
}

impl Default for NativeStorage {
  fn default() -> Self {
    Self::new()
  }
}

/// A user's `StorageAdapter` object, called through the dispatcher.
pub struct JsStorage {
  pub dispatch: Dispatch,
}

impl JsStorage {
  async fn call(&self, method: &str, key: &str, value: Option<Value>) -> StorageResult<Value> {
    let message = json!({ "op": "storage", "method": method, "key": key, "value": value });
    let text = self.dispatch.call(message.to_string()).await.map_err(StorageError)?;
    let reply: Value = serde_json::from_str(&text).map_err(|e| StorageError(e.to_string()))?;
    match reply.get("ok").and_then(Value::as_bool) {
      Some(true) => Ok(reply.get("value").cloned().unwrap_or(Value::Null)),
      _ => Err(StorageError(
        reply.pointer("/error/message").and_then(Value::as_str).unwrap_or("the storage adapter failed").to_owned(),
      )),
    }
  }
}

#[async_trait]
impl Storage for JsStorage {
  async fn get(&self, key: &str) -> StorageResult<Option<Value>> {
    let value = self.call("get", key, None).await?;
    Ok((!value.is_null()).then_some(value))
  }

  async fn set(&self, key: &str, value: Value) -> StorageResult<()> {
    self.call("set", key, Some(value)).await.map(drop)
  }

  async fn delete(&self, key: &str) -> StorageResult<()> {
    self.call("delete", key, None).await.map(drop)
  }

  async fn list(&self, prefix: &str) -> StorageResult<Vec<String>> {
    let value = self.call("list", prefix, None).await?;
    Ok(value.as_array().into_iter().flatten().filter_map(|k| k.as_str().map(str::to_owned)).collect())
  }
}

/// Diagnostics go to JS, which logs them (as upstream, with `console.warn`) and hands them to `onDiagnostic`.
pub struct JsDiagnostics {
  pub dispatch: Dispatch,
}

impl DiagnosticSink for JsDiagnostics {
  fn diagnostic(&self, layer_id: &str, hook: &str, message: &str) {
    let note = json!({ "op": "diagnostic", "layerId": layer_id, "hook": hook, "message": message });
    self.dispatch.notify(note.to_string());
  }
}
