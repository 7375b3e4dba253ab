//! Storage as JS sees it: `createInMemoryStorage()`, `createSqliteStorage(path)` and `createPostgresStorage(url)`
//! return a `NativeStorage` (Rust owns the data), and a user's own adapter object is reached through the
//! dispatcher.

use std::sync::Arc;
use std::time::Duration;

use crate::js_string::JsText;
use crate::store_reader::StoreReader;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use napi_derive::napi;
use noetic_runtime::ConfigError;
use noetic_runtime::js_text::from_js_json;
use noetic_runtime::memory::state::DiagnosticSink;
use noetic_runtime::memory::trace::{HookSpan, RunSpan, TraceBuffer};
use noetic_runtime::storage::{
  AdapterCall, AdapterStorage, Answer, CodedError, CodedStorage, InMemoryStorage, PostgresOptions, PostgresStorage,
  SqliteStorage, Storage, StorageError,
};
use serde_json::{Value, json};

use crate::dispatcher::Dispatch;
use crate::guard::guarded;
use crate::protocol::{config_json, to_napi};

/// A store Rust owns: the Map-backed one of `createInMemoryStorage()`, the SQLite file of
/// `createSqliteStorage(path)` or the PostgreSQL table of `createPostgresStorage(url)`. Harnesses given one use it
/// directly, with no crossing.
#[napi(js_name = "NativeStorage")]
pub struct NativeStorage {
  pub(crate) inner: Arc<dyn Storage>,
  /// The same store when its failures have codes (SQLite, PostgreSQL): JS's calls go to it directly, so that a
  /// failure reaches JS as a NoeticConfigError with its code (`STORAGE_UNAVAILABLE`, `STORAGE_FULL`, ...) and hint.
  coded: Option<Arc<dyn CodedStorage>>,
  /// The same store when it is PostgreSQL, for `close()`.
  postgres: Option<Arc<PostgresStorage>>,
  /// The same store when it is the in-memory one, which answers at once: JS calls its `*_now` methods, where an
  /// async call costs a hop to the runtime's thread and back (about 50 µs) for a microsecond of work.
  memory: Option<Arc<InMemoryStorage>>,
}

impl NativeStorage {
  fn in_memory(&self) -> napi::Result<&Arc<InMemoryStorage>> {
    self.memory.as_ref().ok_or_else(|| napi::Error::from_reason("internal error: this store does not answer at once"))
  }
}

fn storage_error(error: StorageError) -> napi::Error {
  napi::Error::new(napi::Status::GenericFailure, error.message)
}

fn coded_error(error: CodedError) -> napi::Error {
  to_napi(config_json(&error.into()))
}

#[napi]
impl NativeStorage {
  #[napi(constructor, catch_unwind)]
  pub fn new() -> Self {
    let memory = Arc::new(InMemoryStorage::new());
    Self { inner: Arc::clone(&memory) as Arc<dyn Storage>, coded: None, postgres: None, memory: Some(memory) }
  }

  /// Opens (creating if needed) the SQLite store at `path`.
  #[napi(factory, catch_unwind)]
  pub fn sqlite(path: String) -> napi::Result<Self> {
    let store = SqliteStorage::open(&path).map_err(|error| {
      to_napi(config_json(&ConfigError::new(
        "STORAGE_OPEN_FAILED",
        format!("Could not open the SQLite store at '{path}': {}", error.message),
        "Pass a path in a directory that exists and is writable, or ':memory:'.",
      )))
    })?;
    let store = Arc::new(store);
    Ok(Self { inner: Arc::clone(&store) as Arc<dyn Storage>, coded: Some(store), postgres: None, memory: None })
  }

  /// A store on the PostgreSQL server at `url`; `options` is the JSON text of the options object (or absent).
  /// Nothing connects until the first call.
  #[napi(factory, catch_unwind)]
  pub fn postgres(url: String, options: Option<String>) -> napi::Result<Self> {
    let options = match options {
      Some(text) => from_js_json(&text).map_err(|e| napi::Error::new(napi::Status::InvalidArg, e.to_string()))?,
      None => Value::Null,
    };
    let store = PostgresOptions::from_json(&options)
      .and_then(|options| PostgresStorage::open(&url, options))
      .map_err(|error| to_napi(config_json(&error)))?;
    let store = Arc::new(store);
    let coded = Some(Arc::clone(&store) as Arc<dyn CodedStorage>);
    Ok(Self { inner: Arc::clone(&store) as Arc<dyn Storage>, coded, postgres: Some(store), memory: None })
  }

  /// Whether the store answers at once (the in-memory one), through the `*_now` methods.
  #[napi]
  pub fn answers_at_once(&self) -> bool {
    self.memory.is_some()
  }

  /// The in-memory store's `get`, answered at once: a plain function, `(key) => JSON text | null`, which JS calls
  /// for every read (see `store_reader`).
  #[napi(catch_unwind, ts_return_type = "(key: string) => string | null")]
  pub fn reader_now(&self) -> napi::Result<StoreReader> {
    Ok(StoreReader(Arc::clone(self.in_memory()?)))
  }

  /// The in-memory store's `set`, done at once: JS's text is kept as it is, checked (nesting, lone surrogates) but
  /// not parsed. A text it refuses is a value error, as `set`'s.
  #[napi(catch_unwind)]
  pub fn set_now(&self, key: String, #[napi(ts_arg_type = "string")] json: JsText) -> napi::Result<()> {
    let JsText(json) = json;
    self.in_memory()?.set_json_now(&key, json).map_err(|e| napi::Error::new(napi::Status::InvalidArg, e.message))
  }

  #[napi(catch_unwind)]
  pub fn delete_now(&self, key: String) -> napi::Result<()> {
    self.in_memory()?.delete_now(&key);
    Ok(())
  }

  #[napi(catch_unwind)]
  pub fn list_now(&self, prefix: String) -> napi::Result<Vec<String>> {
    Ok(self.in_memory()?.list_now(&prefix))
  }

  /// Resolves to the stored value's JSON text, or `null` when the key is missing.
  #[napi]
  pub async fn get(&self, key: String) -> napi::Result<Option<String>> {
    if let Some(store) = self.coded.clone() {
      return guarded(async move { Ok(store.fetch(&key).await.map_err(coded_error)?.map(|v| v.to_string())) }).await;
    }
    let store = Arc::clone(&self.inner);
    guarded(async move { store.get_json(&key).await.map_err(storage_error) }).await
  }

  /// Stores the value whose `JSON.stringify` text is `json` (the JS wrapper decides what JSON can hold).
  #[napi]
  pub async fn set(&self, key: String, json: String) -> napi::Result<()> {
    let value: Value = from_js_json(&json).map_err(|e| napi::Error::new(napi::Status::InvalidArg, e.to_string()))?;
    if let Some(store) = self.coded.clone() {
      return guarded(async move { store.store(&key, &value).await.map_err(coded_error) }).await;
    }
    self.inner.set(&key, value).await.map_err(storage_error)
  }

  #[napi]
  pub async fn delete(&self, key: String) -> napi::Result<()> {
    if let Some(store) = self.coded.clone() {
      return guarded(async move { store.remove(&key).await.map_err(coded_error) }).await;
    }
    let store = Arc::clone(&self.inner);
    guarded(async move { store.delete(&key).await.map_err(storage_error) }).await
  }

  /// The PostgreSQL store's `close()`: resolves once every connection is closed (a call under way keeps its own
  /// until it ends); every later call rejects with `STORAGE_CLOSED`. JS offers it on that store only.
  #[napi]
  pub async fn close(&self) -> napi::Result<()> {
    let store =
      self.postgres.clone().ok_or_else(|| napi::Error::from_reason("internal error: this store has no close()"))?;
    guarded(async move {
      store.close().await;
      Ok(())
    })
    .await
  }

  #[napi]
  pub async fn list(&self, prefix: String) -> napi::Result<Vec<String>> {
    if let Some(store) = self.coded.clone() {
      return guarded(async move { store.keys(&prefix).await.map_err(coded_error) }).await;
    }
    let store = Arc::clone(&self.inner);
    guarded(async move { store.list(&prefix).await.map_err(storage_error) }).await
  }
}

impl Default for NativeStorage {
  fn default() -> Self {
    Self::new()
  }
}

/// A user's `StorageAdapter` object, called through the dispatcher: the calls alone. What they may answer, how long
/// they may take and what a late write means are the runtime's (`noetic_runtime::storage::AdapterStorage`).
pub struct JsStorage {
  pub dispatch: Dispatch,
  /// Calls are bounded by `storageTimeoutMs`: while one is pending the run is still working (its timer will end the
  /// wait), so JS keeps Node alive, as for a built-in layer's callback. Unbounded, pending JS decides (B4).
  bounded: bool,
}

/// How long a storage adapter's call may take by default (`storageTimeoutMs`).
pub const DEFAULT_STORAGE_TIMEOUT: Duration = Duration::from_secs(30);

impl JsStorage {
  /// The adapter as a store, its calls bounded by `timeout`.
  pub fn storage(dispatch: Dispatch, timeout: Option<Duration>) -> AdapterStorage {
    AdapterStorage::new(Box::new(Self { dispatch, bounded: timeout.is_some() }), timeout)
  }
}

impl AdapterCall for JsStorage {
  fn call(&self, method: &'static str, key: &str, value: Option<Value>) -> BoxFuture<'static, Answer> {
    let message = json!({ "op": "storage", "method": method, "key": key, "value": value }).to_string();
    let (dispatch, bounded) = (self.dispatch.clone(), self.bounded);
    async move {
      let text = if bounded { dispatch.call_bounded(message).await? } else { dispatch.call(message).await? };
      let reply: Value = noetic_runtime::js_text::from_js_json(&text).map_err(|e| e.to_string())?;
      match reply.get("ok").and_then(Value::as_bool) {
        Some(true) => Ok(reply.get("value").cloned().unwrap_or(Value::Null)),
        _ => Err(
          reply.pointer("/error/message").and_then(Value::as_str).unwrap_or("the storage adapter failed").to_owned(),
        ),
      }
    }
    .boxed()
  }
}

/// Diagnostics go to JS, which logs them (as upstream, with `console.warn`) and hands them to `onDiagnostic`.
pub struct JsDiagnostics {
  pub dispatch: Dispatch,
  /// Hook spans wait here for JS to take them (`takeTraces`) when the harness has a trace exporter.
  pub traces: Option<Arc<TraceBuffer>>,
  /// The exporter asked for prompts and completions (`tracing: 'content'`, O1).
  pub content: bool,
}

impl DiagnosticSink for JsDiagnostics {
  fn diagnostic(&self, layer_id: &str, hook: &str, message: &str) {
    let note = json!({ "op": "diagnostic", "layerId": layer_id, "hook": hook, "message": message });
    self.dispatch.notify(note.to_string());
  }

  fn step_diagnostic(&self, step_id: &str, hook: &str, message: &str) {
    let note = json!({ "op": "diagnostic", "stepId": step_id, "hook": hook, "message": message });
    self.dispatch.notify(note.to_string());
  }

  fn tracing(&self) -> bool {
    self.traces.is_some()
  }

  /// JS is told once when spans start to wait, and takes every span recorded by the time it asks.
  fn trace(&self, spans: Vec<HookSpan>) {
    if let Some(traces) = &self.traces
      && traces.push(spans)
    {
      self.dispatch.notify(r#"{"op":"traces"}"#.to_owned());
    }
  }

  fn tracing_content(&self) -> bool {
    self.content
  }

  fn trace_run(&self, span: RunSpan) {
    if let Some(traces) = &self.traces
      && traces.push([span])
    {
      self.dispatch.notify(r#"{"op":"traces"}"#.to_owned());
    }
  }
}
