//! A user's own storage adapter (any object with `get`, `set`, `delete` and `list(prefix)`), reached through the
//! host. Every call is bounded by `storageTimeoutMs`; what the adapter answers is held to the contract (a `list`
//! that is not an array of keys is an error, not "no keys"); and a write that outlives its limit is reported as of
//! unknown outcome and remembered until it settles, so that a later write of the same key never lands first only to
//! be overwritten by it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::{BoxFuture, FutureExt, Shared};
use serde_json::Value;

use super::{Storage, StorageError, StorageResult, shown};

/// What the adapter answered: its value as JSON (`null` for `undefined`), or the message of what it threw.
pub type Answer = Result<Value, String>;

/// Calls one method of the adapter object (the binding does, through its dispatcher). The future owns what it
/// needs, so that a write may be left running past its limit.
pub trait AdapterCall: Send + Sync {
  fn call(&self, method: &'static str, key: &str, value: Option<Value>) -> BoxFuture<'static, Answer>;
}

type Pending = Shared<BoxFuture<'static, Answer>>;

pub struct AdapterStorage {
  calls: Box<dyn AdapterCall>,
  /// `storageTimeoutMs`; `None` waits for ever, as upstream does.
  timeout: Option<Duration>,
  /// Writes that did not settle within the limit, by key, until they do.
  in_doubt: Arc<Mutex<HashMap<String, Pending>>>,
}

const INVALID_HINT: &str = "A storage adapter's list(prefix) must resolve to an array of the keys (strings) that start \
                            with prefix, and get(key) to what set stored there, or null for a key never set.";
const DISAGREEING_HINT: &str = "A storage adapter's get(key) must answer what set stored for every key its list \
                                names, and null (or undefined) for a key never stored (`map.get(key) ?? null`, not a \
                                default such as `[]`): make the two agree.";
const UNKNOWN_HINT: &str = "The adapter had not answered when storageTimeoutMs ran out: if it still completes, the \
                            change is saved. A later write of the same key waits for it. Raise storageTimeoutMs for a \
                            store this slow.";
const UNSETTLED_HINT: &str =
  "Try again once the storage adapter answers; raise storageTimeoutMs for a store this slow.";

/// The adapter answered something its contract does not allow.
pub(super) fn invalid(message: String) -> StorageError {
  StorageError::coded("STORAGE_ADAPTER_INVALID", message, INVALID_HINT)
}

/// The adapter's `get` and `list` disagree about a key.
pub(super) fn disagreement(message: String) -> StorageError {
  StorageError::coded("STORAGE_ADAPTER_INCONSISTENT", message, DISAGREEING_HINT)
}

/// A JSON text short enough for a message.
pub(super) fn brief(text: &str) -> String {
  const MOST: usize = 60;
  match text.char_indices().nth(MOST) {
    Some((end, _)) => format!("{}…", &text[..end]),
    None => text.to_owned(),
  }
}

impl AdapterStorage {
  pub fn new(calls: Box<dyn AdapterCall>, timeout: Option<Duration>) -> Self {
    Self { calls, timeout, in_doubt: Arc::default() }
  }

  fn in_doubt(&self) -> MutexGuard<'_, HashMap<String, Pending>> {
    self.in_doubt.lock().unwrap_or_else(PoisonError::into_inner)
  }

  fn late(&self, method: &str, key: &str) -> String {
    let ms = self.timeout.map_or(0, |limit| limit.as_millis());
    format!("the storage adapter's {method}({}) did not settle within {ms}ms (storageTimeoutMs)", shown(key))
  }

  /// What `work` gives within the limit; `None` once the limit has passed.
  async fn within<T>(&self, work: impl Future<Output = T>) -> Option<T> {
    match self.timeout {
      Some(limit) => tokio::time::timeout(limit, work).await.ok(),
      None => Some(work.await),
    }
  }

  /// A read: its answer, or an error once the limit has passed.
  async fn ask(&self, method: &'static str, key: &str) -> StorageResult<Value> {
    let answer = self.within(self.calls.call(method, key, None)).await;
    answer.ok_or_else(|| StorageError::new(self.late(method, key)))?.map_err(StorageError::new)
  }

  /// A write (`set`, `delete`), after any earlier one of the key that is still in doubt has settled.
  async fn write(&self, method: &'static str, key: &str, value: Option<Value>) -> StorageResult<()> {
    self.settle_earlier(key).await?;
    let call = self.calls.call(method, key, value).shared();
    match self.within(call.clone()).await {
      Some(answer) => answer.map(drop).map_err(StorageError::new),
      None => {
        self.remember(key, call);
        let message = format!("{}: the change may still be saved when it does", self.late(method, key));
        Err(StorageError::coded("STORAGE_OUTCOME_UNKNOWN", message, UNKNOWN_HINT))
      }
    }
  }

  /// Keeps a write that outlived its limit until it settles.
  fn remember(&self, key: &str, call: Pending) {
    self.in_doubt().insert(key.to_owned(), call.clone());
    // Outside a runtime nothing polls it; a later write of the key still waits for it.
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    let (in_doubt, key) = (Arc::clone(&self.in_doubt), key.to_owned());
    runtime.spawn(async move {
      let _ = call.clone().await;
      let mut in_doubt = in_doubt.lock().unwrap_or_else(PoisonError::into_inner);
      if in_doubt.get(&key).is_some_and(|held| held.ptr_eq(&call)) {
        in_doubt.remove(&key);
      }
    });
  }

  /// Waits, within the limit, for an earlier write of `key` whose outcome is still unknown: made before it settles,
  /// this write could land first and then be overwritten by it.
  async fn settle_earlier(&self, key: &str) -> StorageResult<()> {
    let Some(earlier) = self.in_doubt().get(key).cloned() else { return Ok(()) };
    if self.within(earlier).await.is_some() {
      return Ok(());
    }
    Err(StorageError::coded(
      "STORAGE_UNAVAILABLE",
      format!(
        "an earlier write of {} to the storage adapter has still not settled, so this one was not made (made now, it \
         could be overwritten when the earlier one lands)",
        shown(key)
      ),
      UNSETTLED_HINT,
    ))
  }
}

#[async_trait]
impl Storage for AdapterStorage {
  async fn get(&self, key: &str) -> StorageResult<Option<Value>> {
    let value = self.ask("get", key).await?;
    Ok((!value.is_null()).then_some(value))
  }

  async fn set(&self, key: &str, value: Value) -> StorageResult<()> {
    self.write("set", key, Some(value)).await
  }

  async fn delete(&self, key: &str) -> StorageResult<()> {
    self.write("delete", key, None).await
  }

  /// Once any write of the key still in doubt has settled: the key is free only if that write did not land.
  async fn insert_text(&self, key: &str, text: String) -> StorageResult<bool> {
    self.settle_earlier(key).await?;
    super::insert_if_free(self, key, text).await
  }

  /// The keys, which must come as an array of strings: anything else is an error naming what came, never "none".
  async fn list(&self, prefix: &str) -> StorageResult<Vec<String>> {
    let answer = self.ask("list", prefix).await?;
    let keys = match &answer {
      Value::Array(items) => items.iter().map(|item| item.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>(),
      _ => None,
    };
    keys.ok_or_else(|| {
      invalid(format!(
        "the storage adapter's list({}) answered {}, not an array of keys (strings)",
        shown(prefix),
        brief(&answer.to_string())
      ))
    })
  }
}

#[cfg(test)]
mod tests {
  use std::sync::atomic::{AtomicUsize, Ordering};

  use serde_json::json;

  use super::*;
  use crate::storage::InMemoryStorage;

  /// An adapter over an in-memory store whose calls can be answered late or answered wrongly.
  struct Scripted {
    inner: Arc<InMemoryStorage>,
    set_delay: Arc<Mutex<Duration>>,
    list_answer: Option<Value>,
    get_default: Option<Value>,
    gets: Arc<AtomicUsize>,
  }

  impl Scripted {
    fn new(inner: &Arc<InMemoryStorage>) -> Self {
      Self {
        inner: Arc::clone(inner),
        set_delay: Arc::default(),
        list_answer: None,
        get_default: None,
        gets: Arc::default(),
      }
    }
  }

  impl AdapterCall for Scripted {
    fn call(&self, method: &'static str, key: &str, value: Option<Value>) -> BoxFuture<'static, Answer> {
      let (inner, key) = (Arc::clone(&self.inner), key.to_owned());
      let delay = *self.set_delay.lock().unwrap();
      let (list_answer, get_default) = (self.list_answer.clone(), self.get_default.clone());
      self.gets.fetch_add(usize::from(method == "get"), Ordering::Relaxed);
      async move {
        match method {
          "get" => Ok(inner.get_now(&key).or(get_default).unwrap_or(Value::Null)),
          "list" => Ok(list_answer.unwrap_or_else(|| json!(inner.list_now(&key)))),
          "set" => {
            tokio::time::sleep(delay).await;
            inner.set_now(&key, value.unwrap_or(Value::Null));
            Ok(Value::Null)
          }
          _ => {
            inner.delete_now(&key);
            Ok(Value::Null)
          }
        }
      }
      .boxed()
    }
  }

  #[tokio::test(start_paused = true)]
  async fn a_late_write_is_of_unknown_outcome_and_a_later_write_of_its_key_lands_after_it() {
    let inner = Arc::new(InMemoryStorage::new());
    let scripted = Scripted::new(&inner);
    let delay = Arc::clone(&scripted.set_delay);
    let storage = AdapterStorage::new(Box::new(scripted), Some(Duration::from_millis(50)));
    *delay.lock().unwrap() = Duration::from_millis(80);
    let error = storage.set("k", json!("first")).await.unwrap_err();
    assert_eq!(error.code.map(|(code, _)| code), Some("STORAGE_OUTCOME_UNKNOWN"));
    assert!(error.message.contains("set('k')") && error.message.contains("may still be saved"), "{error}");
    *delay.lock().unwrap() = Duration::ZERO;
    // The second write waits for the first to land, so it is the one that stays.
    storage.set("k", json!("second")).await.unwrap();
    assert_eq!(inner.get_now("k"), Some(json!("second")));
    // Another key never waits.
    storage.set("other", json!(1)).await.unwrap();
  }

  #[tokio::test(start_paused = true)]
  async fn an_insert_after_a_late_write_of_its_key_finds_the_key_taken_once_that_lands() {
    let inner = Arc::new(InMemoryStorage::new());
    let scripted = Scripted::new(&inner);
    let delay = Arc::clone(&scripted.set_delay);
    let storage = AdapterStorage::new(Box::new(scripted), Some(Duration::from_millis(50)));
    *delay.lock().unwrap() = Duration::from_millis(80);
    let error = storage.insert_text("s/T/2", "[1]".to_owned()).await.unwrap_err();
    assert_eq!(error.code.map(|(code, _)| code), Some("STORAGE_OUTCOME_UNKNOWN"));
    *delay.lock().unwrap() = Duration::ZERO;
    assert!(!storage.insert_text("s/T/2", "[2]".to_owned()).await.unwrap(), "the late write landed first");
    assert_eq!(inner.get_now("s/T/2"), Some(json!([1])));
  }

  #[tokio::test(start_paused = true)]
  async fn a_write_refused_while_an_earlier_one_is_still_unsettled_is_not_made() {
    let inner = Arc::new(InMemoryStorage::new());
    let scripted = Scripted::new(&inner);
    let delay = Arc::clone(&scripted.set_delay);
    let storage = AdapterStorage::new(Box::new(scripted), Some(Duration::from_millis(50)));
    *delay.lock().unwrap() = Duration::from_millis(500);
    assert!(storage.set("k", json!("first")).await.is_err());
    *delay.lock().unwrap() = Duration::ZERO;
    let error = storage.set("k", json!("second")).await.unwrap_err();
    assert_eq!(error.code.map(|(code, _)| code), Some("STORAGE_UNAVAILABLE"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(inner.get_now("k"), Some(json!("first")));
  }

  #[tokio::test]
  async fn a_list_that_is_not_an_array_of_keys_is_an_error_naming_what_it_answered() {
    let inner = Arc::new(InMemoryStorage::new());
    for (answer, named) in
      [(json!(null), "null"), (json!("k"), "\"k\""), (json!({"a": 1}), "{\"a\":1}"), (json!([1]), "[1]")]
    {
      let mut scripted = Scripted::new(&inner);
      scripted.list_answer = Some(answer);
      let error = AdapterStorage::new(Box::new(scripted), None).list("p/").await.unwrap_err();
      assert_eq!(error.code.map(|(code, _)| code), Some("STORAGE_ADAPTER_INVALID"));
      assert!(error.message.contains("list('p/')") && error.message.contains(named), "{error}");
    }
  }

  #[tokio::test]
  async fn a_get_that_answers_a_default_stops_an_insert_at_once_naming_the_key() {
    let inner = Arc::new(InMemoryStorage::new());
    let mut scripted = Scripted::new(&inner);
    scripted.get_default = Some(json!([]));
    let gets = Arc::clone(&scripted.gets);
    let storage = AdapterStorage::new(Box::new(scripted), None);
    let error = storage.insert_text("s/T/1", "[]".to_owned()).await.unwrap_err();
    assert_eq!(error.code.map(|(code, _)| code), Some("STORAGE_ADAPTER_INCONSISTENT"));
    assert!(error.message.contains("get('s/T/1') answered []"), "{error}");
    assert_eq!(gets.load(Ordering::Relaxed), 1);
    assert!(inner.list_now("").is_empty());
  }

  #[tokio::test]
  async fn a_listed_key_that_get_cannot_read_fails_the_read_and_a_listed_key_is_never_written_over() {
    let inner = Arc::new(InMemoryStorage::new());
    inner.set_now("s/T/1", json!(["kept"]));
    let mut scripted = Scripted::new(&inner);
    scripted.list_answer = Some(json!(["s/T/1"]));
    let forgetful = AdapterStorage::new(Box::new(scripted), None);
    // The list names it while get (a fresh in-memory store here) cannot read it.
    let other = Arc::new(InMemoryStorage::new());
    let mut blind = Scripted::new(&other);
    blind.list_answer = Some(json!(["s/T/1"]));
    let blind = AdapterStorage::new(Box::new(blind), None);
    let error = blind.read_texts("s/T/", "s/T/").await.unwrap_err();
    assert_eq!(error.code.map(|(code, _)| code), Some("STORAGE_ADAPTER_INCONSISTENT"));
    assert!(error.message.contains("'s/T/1'"), "{error}");
    assert!(!blind.insert_text("s/T/1", "[]".to_owned()).await.unwrap(), "a key list names is taken");
    assert!(other.list_now("").is_empty());
    assert_eq!(
      forgetful.read_texts("s/T/", "s/T/").await.unwrap(),
      vec![super::super::StoredText::new("s/T/1", r#"["kept"]"#)]
    );
  }
}
