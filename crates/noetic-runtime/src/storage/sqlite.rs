//! `createSqliteStorage(path)`: the embedded durable store. One file, one table of JSON values by key.
//!
//! WAL with `synchronous = FULL`, so a committed `set` survives a crash of the process or the machine, and a busy
//! timeout, so several processes can share one file. SQLite calls block, so they run on tokio's blocking pool.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::{Storage, StorageError, StorageResult};

/// How long a writer waits for another process's lock before the call fails.
const BUSY_TIMEOUT_MS: u64 = 5_000;

pub struct SqliteStorage {
  connection: Arc<Mutex<Connection>>,
}

fn failed(error: impl std::fmt::Display) -> StorageError {
  StorageError(format!("sqlite storage: {error}"))
}

impl SqliteStorage {
  /// Opens (creating if needed) the store at `path`; `:memory:` gives a private in-memory database.
  pub fn open(path: impl AsRef<Path>) -> StorageResult<Self> {
    let connection = Connection::open(path).map_err(failed)?;
    connection.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS)).map_err(failed)?;
    // `journal_mode` answers with a row, so it is queried rather than executed.
    connection.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())).map_err(failed)?;
    connection
      .execute_batch(
        "PRAGMA synchronous = FULL;
         CREATE TABLE IF NOT EXISTS noetic_kv (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;",
      )
      .map_err(failed)?;
    Ok(Self { connection: Arc::new(Mutex::new(connection)) })
  }

  async fn with<T: Send + 'static>(
    &self,
    work: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
  ) -> StorageResult<T> {
    let connection = Arc::clone(&self.connection);
    tokio::task::spawn_blocking(move || work(&connection.lock().unwrap_or_else(PoisonError::into_inner)))
      .await
      .map_err(failed)?
      .map_err(failed)
  }
}

#[async_trait]
impl Storage for SqliteStorage {
  async fn get(&self, key: &str) -> StorageResult<Option<Value>> {
    let key = key.to_owned();
    let text = self
      .with(move |c| {
        c.query_row("SELECT value FROM noetic_kv WHERE key = ?1", params![key], |row| row.get::<_, String>(0))
          .optional()
      })
      .await?;
    text.map(|text| serde_json::from_str(&text).map_err(failed)).transpose()
  }

  async fn set(&self, key: &str, value: Value) -> StorageResult<()> {
    let (key, text) = (key.to_owned(), value.to_string());
    self
      .with(move |c| {
        c.execute(
          "INSERT INTO noetic_kv (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
          params![key, text],
        )
      })
      .await
      .map(drop)
  }

  async fn delete(&self, key: &str) -> StorageResult<()> {
    let key = key.to_owned();
    self.with(move |c| c.execute("DELETE FROM noetic_kv WHERE key = ?1", params![key])).await.map(drop)
  }

  /// Keys in byte order. The range query uses the primary key; the `starts_with` check makes it exact.
  async fn list(&self, prefix: &str) -> StorageResult<Vec<String>> {
    let prefix = prefix.to_owned();
    self
      .with(move |c| {
        let upper = format!("{prefix}\u{10FFFF}");
        let mut query = c.prepare_cached("SELECT key FROM noetic_kv WHERE key >= ?1 AND key <= ?2 ORDER BY key")?;
        let keys = query.query_map(params![prefix, upper], |row| row.get::<_, String>(0))?;
        keys.filter(|key| key.as_ref().map_or(true, |key| key.starts_with(&prefix))).collect()
      })
      .await
  }
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  /// A database file in a directory of its own, removed with everything in it when the test is done.
  struct Scratch(std::path::PathBuf);

  impl Scratch {
    fn db(&self) -> std::path::PathBuf {
      self.0.join("store.db")
    }
  }

  impl Drop for Scratch {
    fn drop(&mut self) {
      let _ = std::fs::remove_dir_all(&self.0);
    }
  }

  fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("noetic-sqlite-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
  }

  #[tokio::test]
  async fn values_round_trip_and_survive_reopening() {
    let dir = scratch("reopen");
    let path = dir.db();
    let store = SqliteStorage::open(&path).unwrap();
    let value = json!({ "entries": ["tea", "é\u{1F600}"], "n": 1.5, "nested": { "ok": true, "none": null } });
    store.set("layers/a/T/state", value.clone()).await.unwrap();
    store.set("layers/a/T/state", json!({ "entries": ["tea"] })).await.unwrap();
    store.set("layers/a/U/state", json!("text")).await.unwrap();
    drop(store);
    let store = SqliteStorage::open(&path).unwrap();
    assert_eq!(store.get("layers/a/T/state").await.unwrap(), Some(json!({ "entries": ["tea"] })));
    assert_eq!(store.get("layers/a/U/state").await.unwrap(), Some(json!("text")));
    assert_eq!(store.get("missing").await.unwrap(), None);
    store.set("v", value.clone()).await.unwrap();
    assert_eq!(store.get("v").await.unwrap(), Some(value));
    store.delete("layers/a/U/state").await.unwrap();
    assert_eq!(store.get("layers/a/U/state").await.unwrap(), None);
  }

  #[tokio::test]
  async fn list_returns_exactly_the_keys_under_a_prefix() {
    let dir = scratch("list");
    let store = SqliteStorage::open(dir.db()).unwrap();
    for key in ["layers/a/T/state", "layers/a/T/notes", "layers/ab/T/state", "layers/a", "other"] {
      store.set(key, json!(1)).await.unwrap();
    }
    assert_eq!(store.list("layers/a/").await.unwrap(), ["layers/a/T/notes", "layers/a/T/state"]);
    assert_eq!(
      store.list("layers/a").await.unwrap(),
      ["layers/a", "layers/a/T/notes", "layers/a/T/state", "layers/ab/T/state"]
    );
    assert_eq!(store.list("").await.unwrap().len(), 5);
    assert!(store.list("nothing/").await.unwrap().is_empty());
  }

  #[tokio::test]
  async fn two_connections_to_one_file_see_each_others_writes() {
    let dir = scratch("shared");
    let path = dir.db();
    let (first, second) = (SqliteStorage::open(&path).unwrap(), SqliteStorage::open(&path).unwrap());
    for i in 0..50 {
      let store = if i % 2 == 0 { &first } else { &second };
      store.set(&format!("k/{i:02}"), json!(i)).await.unwrap();
    }
    assert_eq!(first.list("k/").await.unwrap().len(), 50);
    assert_eq!(second.get("k/07").await.unwrap(), Some(json!(7)));
  }

  #[test]
  fn a_path_that_cannot_be_opened_is_an_error() {
    let error = SqliteStorage::open("/nonexistent-dir/for/sure/store.db").err().expect("open should fail");
    assert!(error.0.starts_with("sqlite storage:"), "{error}");
  }
}
