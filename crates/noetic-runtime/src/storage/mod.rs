//! Storage adapters: the `StorageAdapter` contract (`get`, `set`, `delete`, `list(prefix)`) and the native stores.
//! A JS adapter object is reached through the host and implements the same trait in the binding.

mod adapter;
mod in_memory;
mod postgres;
mod scoped;
mod sqlite;

use async_trait::async_trait;
use serde_json::Value;

pub use self::adapter::{AdapterCall, AdapterStorage, Answer};
pub use self::in_memory::InMemoryStorage;
pub use self::postgres::{PostgresOptions, PostgresStorage};
pub use self::scoped::{ScopedStorage, scoped_key, scoped_list_prefix, scoped_prefix, unscope_listed_key};
pub use self::sqlite::SqliteStorage;

/// The methods of upstream's StorageAdapter, which a user's storage must have.
pub const STORAGE_METHODS: [&str; 4] = ["get", "set", "delete", "list"];

/// Why a storage call failed; reported as a `persist` diagnostic by the state mirror, never thrown at the agent.
/// A store that knows what its failure means says so with a code and a hint (`STORAGE_FULL`, a write whose outcome
/// is unknown, an adapter that answered what the contract does not allow); one without is a store that could not
/// answer, which callers report as `STORAGE_UNAVAILABLE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageError {
  pub message: String,
  pub code: Option<(&'static str, &'static str)>,
}

impl StorageError {
  pub fn new(message: impl Into<String>) -> Self {
    Self { message: message.into(), code: None }
  }

  pub fn coded(code: &'static str, message: impl Into<String>, hint: &'static str) -> Self {
    Self { message: message.into(), code: Some((code, hint)) }
  }
}

impl std::fmt::Display for StorageError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.write_str(&self.message)
  }
}

impl std::error::Error for StorageError {}

pub type StorageResult<T> = Result<T, StorageError>;

/// A native store's failure as JS is told of it when it calls the store itself: a `NoeticConfigError` with a code
/// (`STORAGE_FULL`, `STORAGE_CORRUPT`, ...) and a hint. To the harness it is a `StorageError` with its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodedError {
  pub code: &'static str,
  pub message: String,
  pub hint: &'static str,
}

impl CodedError {
  pub fn new(code: &'static str, message: impl Into<String>, hint: &'static str) -> Self {
    Self { code, message: message.into(), hint }
  }
}

impl From<CodedError> for StorageError {
  fn from(error: CodedError) -> Self {
    Self::coded(error.code, error.message, error.hint)
  }
}

/// One key's value as [`Storage::read_texts`] found it: its JSON text, or why it is not text at all (a SQLite row
/// another program wrote as a BLOB).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredText {
  pub key: String,
  pub text: Result<String, String>,
}

impl StoredText {
  pub fn new(key: impl Into<String>, text: impl Into<String>) -> Self {
    Self { key: key.into(), text: Ok(text.into()) }
  }
}

/// A native store whose failures have codes (SQLite, PostgreSQL): what JS calls directly, so that a failure reaches
/// it as a `NoeticConfigError`. Every such store is a `Storage` too, its failures as their messages.
#[async_trait]
pub trait CodedStorage: Send + Sync {
  async fn fetch(&self, key: &str) -> Result<Option<Value>, CodedError>;
  async fn store(&self, key: &str, value: &Value) -> Result<(), CodedError>;
  async fn remove(&self, key: &str) -> Result<(), CodedError>;
  /// Every key that starts with `prefix`, in byte order.
  async fn keys(&self, prefix: &str) -> Result<Vec<String>, CodedError>;
  /// See [`Storage::insert_text`]: one conditional statement.
  async fn insert_new_text(&self, key: &str, text: String) -> Result<bool, CodedError>;
  /// See [`Storage::read_texts`]: one range query.
  async fn texts_from(&self, prefix: &str, from: &str) -> Result<Vec<StoredText>, CodedError>;
  /// See [`Storage::refuses_key`].
  fn refuses(&self, _key: &str) -> Option<&'static str> {
    None
  }
}

#[async_trait]
impl<T: CodedStorage> Storage for T {
  async fn get(&self, key: &str) -> StorageResult<Option<Value>> {
    Ok(self.fetch(key).await?)
  }

  async fn set(&self, key: &str, value: Value) -> StorageResult<()> {
    Ok(self.store(key, &value).await?)
  }

  async fn delete(&self, key: &str) -> StorageResult<()> {
    Ok(self.remove(key).await?)
  }

  async fn list(&self, prefix: &str) -> StorageResult<Vec<String>> {
    Ok(self.keys(prefix).await?)
  }

  async fn insert_text(&self, key: &str, text: String) -> StorageResult<bool> {
    Ok(self.insert_new_text(key, text).await?)
  }

  async fn read_texts(&self, prefix: &str, from: &str) -> StorageResult<Vec<StoredText>> {
    Ok(self.texts_from(prefix, from).await?)
  }

  fn refuses_key(&self, key: &str) -> Option<&'static str> {
    self.refuses(key)
  }
}

impl From<CodedError> for crate::ConfigError {
  fn from(error: CodedError) -> Self {
    crate::ConfigError::new(error.code, error.message, error.hint)
  }
}

/// A key-value store for durable layer state. Values are JSON: durable writes serialize at write time (A4).
#[async_trait]
pub trait Storage: Send + Sync {
  /// The value under `key`, or `None` when the key is missing.
  async fn get(&self, key: &str) -> StorageResult<Option<Value>>;
  async fn set(&self, key: &str, value: Value) -> StorageResult<()>;
  async fn delete(&self, key: &str) -> StorageResult<()>;
  /// Every key that starts with `prefix`.
  async fn list(&self, prefix: &str) -> StorageResult<Vec<String>>;
  /// True when every call completes without waiting (memory): a caller may then run it where it stands instead of
  /// handing it to a task of its own.
  fn answers_at_once(&self) -> bool {
    false
  }

  /// Stores the value of a JSON text JS wrote (`JSON.stringify`). A store that keeps text keeps it as it is; others
  /// get the parsed value.
  async fn set_json(&self, key: &str, text: String) -> StorageResult<()> {
    let value = crate::js_text::from_js_json(&text).map_err(|error| StorageError::new(error.to_string()))?;
    self.set(key, value).await
  }

  /// The stored value as JSON text, for JS.
  async fn get_json(&self, key: &str) -> StorageResult<Option<String>> {
    Ok(self.get(key).await?.map(|value| value.to_string()))
  }

  /// Stores the JSON `text` under `key` only if the key is absent; true when it did. What orders appends to a
  /// thread's history (a per-thread sequence of keys): the native stores do it in one conditional write, so two
  /// writers of one key never both succeed. A store with only `get`, `set` and `list` (a JS adapter) is asked
  /// whether its `list` names the key and what its `get` answers, and writes only when both say the key is free
  /// (see [`AdapterStorage`]); that holds while no other process writes the key between the questions and the write.
  async fn insert_text(&self, key: &str, text: String) -> StorageResult<bool> {
    insert_if_free(self, key, text).await
  }

  /// Every key under `prefix` from `from` on (inclusive), in byte order, with its value as JSON text: what a thread's
  /// history is read back with, in one query on the native stores (`list` then a `get` per key on a JS adapter, never
  /// more than the keys `list` named; a key it named that `get` cannot read is an error naming the key).
  async fn read_texts(&self, prefix: &str, from: &str) -> StorageResult<Vec<StoredText>> {
    let mut keys = self.list(prefix).await?;
    if let Some(stray) = keys.iter().find(|key| !key.starts_with(prefix)) {
      return Err(adapter::invalid(format!(
        "the storage adapter's list({}) named {}, which does not start with the prefix",
        shown(prefix),
        shown(stray)
      )));
    }
    keys.retain(|key| key.as_str() >= from);
    keys.sort_unstable();
    keys.dedup();
    let mut texts = Vec::with_capacity(keys.len());
    for key in keys {
      let Some(text) = self.get_json(&key).await? else {
        return Err(adapter::disagreement(format!(
          "the storage adapter's list({}) named {}, but its get({}) answered nothing (null or undefined)",
          shown(prefix),
          shown(&key),
          shown(&key)
        )));
      };
      texts.push(StoredText::new(key, text));
    }
    Ok(texts)
  }

  /// Why the store cannot hold `key` (PostgreSQL text cannot hold U+0000), known before any call is made; `None` for
  /// a key it can hold.
  fn refuses_key(&self, _key: &str) -> Option<&'static str> {
    None
  }
}

/// [`Storage::insert_text`] on a store with only `get`, `set` and `list`: written only when `list` does not name the
/// key and `get` answers nothing for it.
pub(super) async fn insert_if_free<S: Storage + ?Sized>(storage: &S, key: &str, text: String) -> StorageResult<bool> {
  if storage.list(key).await?.iter().any(|listed| listed == key) {
    return Ok(false);
  }
  if let Some(answer) = storage.get_json(key).await? {
    return Err(adapter::disagreement(format!(
      "the storage adapter's get({}) answered {} for a key its list({}) does not name",
      shown(key),
      adapter::brief(&answer),
      shown(key)
    )));
  }
  storage.set_json(key, text).await?;
  Ok(true)
}

/// `text` quoted for a message as JS would write it: in single quotes, control characters escaped (`\u0000`), so a
/// key or a thread id that holds one reads plainly and carries no raw control character into a log.
pub fn shown(text: &str) -> String {
  let mut out = String::with_capacity(text.len() + 2);
  out.push('\'');
  for c in text.chars() {
    match c {
      '\'' => out.push_str("\\'"),
      '\\' => out.push_str("\\\\"),
      c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
      c => out.push(c),
    }
  }
  out.push('\'');
  out
}
