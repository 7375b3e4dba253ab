//! `createSqliteStorage(path)`: the embedded durable store. One file, one table of JSON values by key.
//!
//! WAL with `synchronous = NORMAL`, so a committed `set` survives a crash of the process (DECISIONS S7), and a busy
//! timeout, so several processes can share one file. A call is made where it stands when the connection is free and
//! no other process holds the lock it needs (a few microseconds: WAL appends without waiting for the disk); one that
//! would wait (another process writing, or this store's connection busy) goes to tokio's blocking pool, so the
//! caller's thread never waits on a lock. A hop to the pool and back cost more than the call itself, twice a turn for
//! a persisted session.
//!
//! A write is acknowledged only where a restart would find it: before each one the store asks SQLite whether the
//! file it has open is still the one at its path, and a file deleted or moved away under it refuses the write
//! (`STORAGE_FILE_MOVED`) instead of writing into a file no one else will ever open. Every failure names the call,
//! the key and the file, with a code and a hint for JS (the inherent methods; the `Storage` impl, which the harness
//! uses, keeps the message).

use std::ffi::c_int;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OptionalExtension, ffi, params};
use serde_json::Value;

use super::{CodedError, CodedStorage, StorageError, StorageResult, StoredText};

/// How long a writer waits for another process's lock before the call fails.
const BUSY_TIMEOUT_MS: u64 = 5_000;

pub struct SqliteStorage {
  connection: Arc<Mutex<Connection>>,
  /// The path as given, for messages.
  path: String,
}

/// What failed, for a message: `get 'key'`, `list 'prefix'`...
type Call = (&'static str, String);

/// Switches the file to WAL and makes the table. Two processes opening one new file at once can each be refused
/// with SQLITE_BUSY here without the busy handler being asked (SQLite does so where waiting could deadlock, as when
/// both change the journal mode), so a busy or locked answer is tried again, within the busy timeout.
fn prepare(connection: &Connection) -> rusqlite::Result<()> {
  let deadline = std::time::Instant::now() + std::time::Duration::from_millis(BUSY_TIMEOUT_MS);
  loop {
    // `journal_mode` answers with a row, so it is queried rather than executed.
    let outcome = connection.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())).and_then(|()| {
      connection.execute_batch(
        "PRAGMA synchronous = NORMAL;
         CREATE TABLE IF NOT EXISTS noetic_kv (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;",
      )
    });
    match outcome {
      Err(error) if is_busy(&error) && std::time::Instant::now() < deadline => {
        std::thread::sleep(std::time::Duration::from_millis(10));
      }
      other => return other,
    }
  }
}

fn is_busy(error: &rusqlite::Error) -> bool {
  matches!(error.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

impl SqliteStorage {
  /// Opens (creating if needed) the store at `path`; `:memory:` gives a private in-memory database.
  pub fn open(path: impl AsRef<Path>) -> StorageResult<Self> {
    let shown = path.as_ref().display().to_string();
    let failed = |error: rusqlite::Error| StorageError::new(format!("sqlite storage: {error}"));
    let connection = Connection::open(path).map_err(failed)?;
    connection.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS)).map_err(failed)?;
    prepare(&connection).map_err(failed)?;
    Ok(Self { connection: Arc::new(Mutex::new(connection)), path: shown })
  }

  /// Runs `work`: here when the connection is free and SQLite need not wait for a lock, otherwise on the blocking
  /// pool (see the module's comment). A `write` first makes sure the file is still where the store opened it.
  async fn with<T: Send + 'static>(
    &self,
    call: Call,
    write: bool,
    work: impl Fn(&Connection) -> rusqlite::Result<T> + Send + Sync + 'static,
  ) -> Result<T, CodedError> {
    let attempt = move |connection: &Connection, work: &dyn Fn(&Connection) -> rusqlite::Result<T>| {
      if write && has_moved(connection) {
        return Err(None);
      }
      work(connection).map_err(Some)
    };
    if let Ok(connection) = self.connection.try_lock() {
      // Without waiting: a lock held elsewhere answers SQLITE_BUSY at once, and the call goes to the pool instead.
      let _ = connection.busy_timeout(std::time::Duration::ZERO);
      let outcome = attempt(&connection, &work);
      let _ = connection.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS));
      match outcome {
        Err(Some(error)) if is_busy(&error) => {}
        Ok(value) => return Ok(value),
        Err(None) => return Err(self.moved(&call)),
        Err(Some(error)) => return Err(self.failure(&call, &error)),
      }
    }
    let connection = Arc::clone(&self.connection);
    let outcome = tokio::task::spawn_blocking(move || {
      let connection = connection.lock().unwrap_or_else(PoisonError::into_inner);
      attempt(&connection, &work)
    })
    .await;
    match outcome {
      Ok(Ok(value)) => Ok(value),
      Ok(Err(None)) => Err(self.moved(&call)),
      Ok(Err(Some(error))) => Err(self.failure(&call, &error)),
      Err(join) => Err(CodedError::new(
        "STORAGE_FAILED",
        format!("sqlite storage ({}): could not {} '{}': {join}", self.path, call.0, call.1),
        FAILED_HINT,
      )),
    }
  }

  fn moved(&self, (what, key): &Call) -> CodedError {
    CodedError::new(
      "STORAGE_FILE_MOVED",
      format!(
        "sqlite storage ({}): could not {what} '{key}': the database file was deleted or moved away while the store \
         had it open, so nothing written now would be found again",
        self.path
      ),
      "Put the file back, or make a new store with createSqliteStorage(path), which creates the file afresh.",
    )
  }

  fn failure(&self, (what, key): &Call, error: &rusqlite::Error) -> CodedError {
    let (code, hint) = match error.sqlite_error_code() {
      Some(ErrorCode::DiskFull) => (
        "STORAGE_FULL",
        "The disk that holds the file is full, or the file reached the process's file-size limit (ulimit -f): free \
         space or raise the limit.",
      ),
      Some(ErrorCode::ReadOnly) => (
        "STORAGE_READ_ONLY",
        "Make the file and its directory writable by this process: SQLite also writes <file>-wal and <file>-shm \
         beside it.",
      ),
      Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => (
        "STORAGE_BUSY",
        "Another connection held the file's lock for more than 5 s: a long transaction elsewhere, or the file on a \
         network filesystem, which SQLite's locks do not suit.",
      ),
      Some(ErrorCode::SystemIoFailure) => (
        "STORAGE_IO_FAILED",
        "The operating system refused to read or write the file: the disk may be full or failing, or the file reached \
         the process's file-size limit (ulimit -f).",
      ),
      Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => (
        "STORAGE_CORRUPT",
        "The file is damaged or is not a SQLite database: restore it from a backup, or point the store at a new path.",
      ),
      _ => ("STORAGE_FAILED", FAILED_HINT),
    };
    CodedError::new(code, format!("sqlite storage ({}): could not {what} '{key}': {error}", self.path), hint)
  }
}

const FAILED_HINT: &str =
  "SQLite could not complete the call: check the disk, the file's permissions and the process's file-size limit.";

/// A stored value as text. The column is TEXT, but SQLite keeps whatever another program put there: a BLOB is
/// named as one rather than failing the whole read in rusqlite's words.
fn value_text(value: ValueRef<'_>) -> Result<String, String> {
  match value {
    ValueRef::Text(bytes) => String::from_utf8(bytes.to_vec()).map_err(|_| "it is text that is not UTF-8".to_owned()),
    ValueRef::Blob(bytes) => Err(format!("it is a BLOB of {} bytes, not text", bytes.len())),
    ValueRef::Integer(n) => Ok(n.to_string()),
    ValueRef::Real(x) => Ok(serde_json::Number::from_f64(x).map_or_else(|| "null".to_owned(), |n| n.to_string())),
    ValueRef::Null => Err("it is NULL, not text".to_owned()),
  }
}

/// Whether the file the connection has open is no longer the one at its path (deleted, or renamed away).
fn has_moved(connection: &Connection) -> bool {
  let mut moved: c_int = 0;
  // SAFETY: the handle is the live connection's, borrowed for the call; SQLITE_FCNTL_HAS_MOVED writes one int
  // through the pointer, which points at `moved`.
  let status = unsafe {
    ffi::sqlite3_file_control(
      connection.handle(),
      c"main".as_ptr(),
      ffi::SQLITE_FCNTL_HAS_MOVED,
      (&raw mut moved).cast(),
    )
  };
  status == ffi::SQLITE_OK && moved != 0
}

#[async_trait]
impl CodedStorage for SqliteStorage {
  async fn fetch(&self, key: &str) -> Result<Option<Value>, CodedError> {
    let owned = key.to_owned();
    let text = self
      .with(("read", key.to_owned()), false, move |c| {
        c.query_row("SELECT value FROM noetic_kv WHERE key = ?1", params![owned], |row| Ok(value_text(row.get_ref(0)?)))
          .optional()
      })
      .await?;
    let damaged = |why: String| {
      CodedError::new(
        "STORAGE_CORRUPT",
        format!("sqlite storage ({}): the value under '{key}' is not JSON ({why})", self.path),
        "Something other than this store wrote it, or the file is damaged: delete the key (storage.delete) or \
         restore the file from a backup.",
      )
    };
    text
      .map(|text| serde_json::from_str(&text.map_err(damaged)?).map_err(|error| damaged(error.to_string())))
      .transpose()
  }

  async fn store(&self, key: &str, value: &Value) -> Result<(), CodedError> {
    let (owned, text) = (key.to_owned(), value.to_string());
    self
      .with(("write", key.to_owned()), true, move |c| {
        c.execute(
          "INSERT INTO noetic_kv (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
          params![owned, text],
        )
      })
      .await
      .map(drop)
  }

  async fn remove(&self, key: &str) -> Result<(), CodedError> {
    let owned = key.to_owned();
    self
      .with(("delete", key.to_owned()), true, move |c| {
        c.execute("DELETE FROM noetic_kv WHERE key = ?1", params![owned])
      })
      .await
      .map(drop)
  }

  /// The range query uses the primary key; the `starts_with` check makes it exact.
  async fn keys(&self, prefix: &str) -> Result<Vec<String>, CodedError> {
    let owned = prefix.to_owned();
    self
      .with(("list keys under", prefix.to_owned()), false, move |c| {
        let upper = format!("{owned}\u{10FFFF}");
        let mut query = c.prepare_cached("SELECT key FROM noetic_kv WHERE key >= ?1 AND key <= ?2 ORDER BY key")?;
        let keys = query.query_map(params![owned, upper], |row| row.get::<_, String>(0))?;
        keys.filter(|key| key.as_ref().map_or(true, |key| key.starts_with(&owned))).collect()
      })
      .await
  }

  async fn insert_new_text(&self, key: &str, text: String) -> Result<bool, CodedError> {
    let owned = key.to_owned();
    self
      .with(("write", key.to_owned()), true, move |c| {
        c.execute(
          "INSERT INTO noetic_kv (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO NOTHING",
          params![owned, text],
        )
      })
      .await
      .map(|inserted| inserted == 1)
  }

  async fn texts_from(&self, prefix: &str, from: &str) -> Result<Vec<StoredText>, CodedError> {
    let (owned, start) = (prefix.to_owned(), if from > prefix { from.to_owned() } else { prefix.to_owned() });
    self
      .with(("read keys under", prefix.to_owned()), false, move |c| {
        let upper = format!("{owned}\u{10FFFF}");
        let mut query =
          c.prepare_cached("SELECT key, value FROM noetic_kv WHERE key >= ?1 AND key <= ?2 ORDER BY key")?;
        let rows = query.query_map(params![start, upper], |row| {
          Ok(StoredText { key: row.get::<_, String>(0)?, text: value_text(row.get_ref(1)?) })
        })?;
        rows.filter(|row| row.as_ref().map_or(true, |stored| stored.key.starts_with(&owned))).collect()
      })
      .await
  }
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;
  use crate::storage::Storage;

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

  #[tokio::test]
  async fn a_file_deleted_or_moved_under_the_store_refuses_writes_and_keeps_nothing_it_cannot_keep() {
    let dir = scratch("moved");
    let path = dir.db();
    let store = SqliteStorage::open(&path).unwrap();
    store.set("kept", json!(1)).await.unwrap();
    std::fs::rename(&path, dir.0.join("elsewhere.db")).unwrap();
    let refused = store.store("lost?", &json!(2)).await.unwrap_err();
    assert_eq!(refused.code, "STORAGE_FILE_MOVED");
    assert!(refused.message.contains("'lost?'"), "{}", refused.message);
    assert_eq!(store.remove("kept").await.unwrap_err().code, "STORAGE_FILE_MOVED");
    assert_eq!(SqliteStorage::open(&path).unwrap().get("lost?").await.unwrap(), None);
  }

  #[tokio::test]
  async fn a_row_that_is_not_json_is_corrupt_and_named() {
    let dir = scratch("corrupt");
    let store = SqliteStorage::open(dir.db()).unwrap();
    store.set("k", json!({ "fine": true })).await.unwrap();
    rusqlite::Connection::open(dir.db()).unwrap().execute("UPDATE noetic_kv SET value = '{oops'", []).unwrap();
    let error = store.fetch("k").await.unwrap_err();
    assert_eq!(error.code, "STORAGE_CORRUPT");
    assert!(error.message.contains("'k'") && error.message.contains("store.db"), "{}", error.message);
  }

  #[test]
  fn each_kind_of_sqlite_failure_has_its_code() {
    let store = SqliteStorage::open(":memory:").unwrap();
    let call = ("write", "k".to_owned());
    for (status, code) in [
      (ffi::SQLITE_FULL, "STORAGE_FULL"),
      (ffi::SQLITE_READONLY, "STORAGE_READ_ONLY"),
      (ffi::SQLITE_BUSY, "STORAGE_BUSY"),
      (ffi::SQLITE_IOERR_WRITE, "STORAGE_IO_FAILED"),
      (ffi::SQLITE_NOTADB, "STORAGE_CORRUPT"),
      (ffi::SQLITE_PERM, "STORAGE_FAILED"),
    ] {
      let error = rusqlite::Error::SqliteFailure(ffi::Error::new(status), None);
      let failure = store.failure(&call, &error);
      assert_eq!(failure.code, code);
      assert!(failure.message.starts_with("sqlite storage (:memory:): could not write 'k': "), "{}", failure.message);
    }
  }

  #[test]
  fn a_path_that_cannot_be_opened_is_an_error() {
    let error = SqliteStorage::open("/nonexistent-dir/for/sure/store.db").err().expect("open should fail");
    assert!(error.message.starts_with("sqlite storage:"), "{error}");
  }
}
