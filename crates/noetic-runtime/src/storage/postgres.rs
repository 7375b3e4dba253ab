//! `createPostgresStorage(url)`: a store shared by many harness processes on many machines. One table of JSON
//! texts by key, reached through `tokio-postgres` with a `deadpool` pool of connections.
//!
//! * Latest wins: `set` is one `INSERT ... ON CONFLICT DO UPDATE`, so concurrent writers to one key leave exactly
//!   one of their values, whole. Values are kept as `text`, not `jsonb`, so a value reads back exactly as written
//!   (jsonb would reorder object keys and refuse `\u0000`).
//! * Keys sort by bytes (`COLLATE "C"`, whatever the database's locale), so `list(prefix)` is a range scan of the
//!   primary key and its order is the SQLite store's.
//! * Nothing connects until the first call, so the factory never blocks; the table is created by the first call
//!   that reaches the server. Every call is bounded (connect timeout, call timeout): an unreachable server is an
//!   error, never a hang. A connection the server closed is dropped from the pool and a new one is made on the
//!   next call, so the store works again as soon as the server is back.
//! * TLS by rustls with libpq's `sslmode`s and `sslrootcert` (see `tls`); a certificate the store cannot trust is
//!   `STORAGE_TLS_FAILED`, not a passing outage.
//! * Connections unused for `idleTimeoutMs` are closed (see `idle`), so a burst does not hold server slots for as
//!   long as the store lives; `close()` closes them all at once, and the store then refuses every call with
//!   `STORAGE_CLOSED`.

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{
  Manager, ManagerConfig, Object, Pool, PoolError, QueueMode, RecyclingMethod, Runtime, TimeoutType,
};
use serde_json::Value;
use tokio_postgres::config::Host;
use tokio_postgres::{Config, NoTls};

use super::{CodedError, CodedStorage, StoredText};
use crate::error::ConfigError;

/// What the store may be given beside its URL (`createPostgresStorage(url, options)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresOptions {
  /// The table holding the values, created when missing.
  pub table: String,
  /// At most this many connections per store.
  pub max_connections: usize,
  /// How long opening one connection may take.
  pub connect_timeout: Duration,
  /// How long one call (waiting for a connection included) may take.
  pub call_timeout: Duration,
  /// Connections unused this long are closed; `None` keeps them (`idleTimeoutMs: 0`).
  pub idle_timeout: Option<Duration>,
}

impl Default for PostgresOptions {
  fn default() -> Self {
    Self {
      table: "noetic_kv".to_owned(),
      max_connections: 10,
      connect_timeout: Duration::from_secs(5),
      call_timeout: Duration::from_secs(30),
      // node-postgres's `idleTimeoutMillis` default.
      idle_timeout: Some(Duration::from_secs(10)),
    }
  }
}

const OPTIONS_HINT: &str = "Pass { table: 'noetic_kv', maxConnections: 10, connectTimeoutMs: 5000, timeoutMs: 30000, \
                            idleTimeoutMs: 10000 } (idleTimeoutMs 0 keeps idle connections open), or leave options \
                            out.";

impl PostgresOptions {
  /// The options object as JS gave it (`null` for none), checked.
  pub fn from_json(options: &Value) -> Result<Self, ConfigError> {
    let mut parsed = Self::default();
    let fields = match options {
      Value::Null => return Ok(parsed),
      Value::Object(fields) => fields,
      _ => return Err(bad_option("the options are not an object")),
    };
    for (name, value) in fields {
      match name.as_str() {
        "table" => parsed.table = table_name(value)?,
        "maxConnections" => parsed.max_connections = whole_number(name, value, 1, 1_000)? as usize,
        "connectTimeoutMs" => parsed.connect_timeout = Duration::from_millis(whole_number(name, value, 1, 3_600_000)?),
        "timeoutMs" => parsed.call_timeout = Duration::from_millis(whole_number(name, value, 1, 86_400_000)?),
        "idleTimeoutMs" => {
          let ms = whole_number(name, value, 0, 86_400_000)?;
          parsed.idle_timeout = (ms > 0).then(|| Duration::from_millis(ms));
        }
        _ => return Err(bad_option(&format!("'{name}' is not an option"))),
      }
    }
    Ok(parsed)
  }
}

fn bad_option(why: &str) -> ConfigError {
  ConfigError::new("STORAGE_OPEN_FAILED", format!("createPostgresStorage: {why}."), OPTIONS_HINT)
}

/// A plain SQL identifier (it is quoted in every statement, but one that needs quoting is most likely a mistake).
fn table_name(value: &Value) -> Result<String, ConfigError> {
  let name = value.as_str().unwrap_or_default();
  let mut chars = name.chars();
  let plain = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
    && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    && name.len() <= 63;
  if plain { Ok(name.to_owned()) } else { Err(bad_option(&format!("table {value} is not a plain SQL name"))) }
}

fn whole_number(name: &str, value: &Value, min: u64, max: u64) -> Result<u64, ConfigError> {
  value
    .as_f64()
    .filter(|n| n.fract() == 0.0 && *n >= min as f64 && *n <= max as f64)
    .map(|n| n as u64)
    .ok_or_else(|| bad_option(&format!("{name} is {value}; expected a whole number from {min} to {max}")))
}

const UNAVAILABLE_HINT: &str = "Check that the PostgreSQL server is running and reachable at that address (and that \
                                the URL's user, password and database are right). The store reconnects by itself once \
                                the server answers again.";
const TLS_HINT: &str = "For a server whose certificate no public authority signed, pass sslrootcert=<path of its CA \
                        as PEM> (with sslmode=verify-full or verify-ca); sslmode=require encrypts without checking the \
                        certificate, and a server without TLS needs sslmode=prefer or disable.";
const FAILED_HINT: &str =
  "The server refused the statement: check the user's rights on the table and the server's log.";
const CLOSED_HINT: &str = "A closed store stays closed: close() a store only once nothing (no harness, no checkpoint \
                           store) uses it any more, or make a new one with createPostgresStorage(url).";

/// The statements, with the table's name in them.
struct Sql {
  create: String,
  get: String,
  set: String,
  delete: String,
  list_from: String,
  list_range: String,
  insert_new: String,
  texts_from: String,
  texts_range: String,
}

impl Sql {
  fn new(table: &str) -> Self {
    let t = format!("\"{table}\"");
    Self {
      // One simple query is one transaction, so the advisory lock serialises every store's creation until it
      // commits: unserialised, `IF NOT EXISTS` still races on the table's row type ("type ... already exists").
      create: format!(
        "SELECT pg_advisory_xact_lock(hashtext('noetic create {table}')); \
         CREATE TABLE IF NOT EXISTS {t} (key text COLLATE \"C\" PRIMARY KEY, value text NOT NULL)"
      ),
      get: format!("SELECT value FROM {t} WHERE key = $1"),
      set: format!(
        "INSERT INTO {t} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
      ),
      delete: format!("DELETE FROM {t} WHERE key = $1"),
      list_from: format!("SELECT key FROM {t} WHERE key >= $1 ORDER BY key"),
      list_range: format!("SELECT key FROM {t} WHERE key >= $1 AND key < $2 ORDER BY key"),
      insert_new: format!("INSERT INTO {t} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING"),
      texts_from: format!("SELECT key, value FROM {t} WHERE key >= $1 ORDER BY key"),
      texts_range: format!("SELECT key, value FROM {t} WHERE key >= $1 AND key < $2 ORDER BY key"),
    }
  }
}

pub struct PostgresStorage {
  pool: Pool,
  sql: Sql,
  /// Set once the table is known to exist; a failed creation is tried again by the next call.
  schema: tokio::sync::OnceCell<()>,
  /// `host:port/database`, for messages (never the user or password).
  target: String,
  options: PostgresOptions,
  /// Closes the connections left idle.
  reaper: idle::IdleReaper,
  /// Every call holds this shared while it runs; `close` takes it alone, so it returns once the calls under way
  /// have ended and given their connections back (to be closed).
  calls: tokio::sync::RwLock<()>,
}

impl PostgresStorage {
  /// Checks the URL and the options and makes the pool; connects nothing (the first call does).
  pub fn open(url: &str, options: PostgresOptions) -> Result<Self, ConfigError> {
    let open_failed = |message: String, hint: &str| ConfigError::new("STORAGE_OPEN_FAILED", message, hint);
    const URL_HINT: &str = "Pass a URL such as 'postgres://user:password@host:5432/database' (or a libpq \
                            'host=... user=...' string).";
    let (url, tls) = tls::split(url)?;
    // The URL is never echoed: it may hold a password.
    let mut config = Config::from_str(&url).map_err(|error| {
      open_failed(
        format!("createPostgresStorage: the URL is not a PostgreSQL connection string ({})", describe(&error)),
        URL_HINT,
      )
    })?;
    if config.get_hosts().is_empty() {
      return Err(open_failed("createPostgresStorage: the URL names no host.".to_owned(), URL_HINT));
    }
    config.ssl_mode(tls.mode.driver_mode());
    config.connect_timeout(options.connect_timeout);
    if config.get_application_name().is_none() {
      config.application_name("noetic");
    }
    let target = target_of(&config);
    // A URL that names no user connects as the OS user, as libpq does. The driver would ask `whoami`, a stub on
    // Apple targets (see the crate's Cargo.toml), so the name is looked up here, the way `whoami` does on Unix.
    #[cfg(unix)]
    if config.get_user().is_none()
      && let Some(user) = os_user_name()
    {
      config.user(user);
    }
    let manager_config = ManagerConfig { recycling_method: RecyclingMethod::Fast };
    let manager = match tls::connector(&tls)? {
      Some(connector) => Manager::from_config(config, connector, manager_config),
      None => Manager::from_config(config, NoTls, manager_config),
    };
    let pool = Pool::builder(manager)
      .max_size(options.max_connections)
      // The connection given back last is taken first, so the others stay unused and are closed once idle; taken
      // in turn (deadpool's default), a trickle of calls would keep every connection of a past burst open.
      .queue_mode(QueueMode::Lifo)
      .runtime(Runtime::Tokio1)
      .create_timeout(Some(options.connect_timeout))
      .wait_timeout(Some(options.call_timeout))
      .build()
      .map_err(|error| open_failed(format!("createPostgresStorage: {error}"), URL_HINT))?;
    Ok(Self {
      pool,
      sql: Sql::new(&options.table),
      schema: tokio::sync::OnceCell::new(),
      target,
      reaper: idle::IdleReaper::new(options.idle_timeout),
      options,
      calls: tokio::sync::RwLock::new(()),
    })
  }

  /// Closes every connection: the idle ones now, each one in use when its call ends; returns once all are closed
  /// (the calls under way are bounded by `timeoutMs`). Every later call fails with `STORAGE_CLOSED`. Closing
  /// again does nothing more.
  pub async fn close(&self) {
    // The pool drops its idle connections, refuses every later `get` (so calls waiting for a connection end at
    // once), and drops each connection given back from now on.
    self.pool.close();
    self.reaper.stop();
    drop(self.calls.write().await);
  }

  /// Whether `close` was called.
  pub fn is_closed(&self) -> bool {
    self.pool.is_closed()
  }

  /// Lets a call start: held until it ends (see `calls`), refused once the store is closed.
  async fn begin(&self) -> Result<tokio::sync::RwLockReadGuard<'_, ()>, CodedError> {
    // Checked first too: while `close` waits for the calls under way, the lock makes new ones wait behind it, and a
    // call made after `close` must be refused at once.
    self.refuse_if_closed()?;
    let call = self.calls.read().await;
    self.refuse_if_closed()?;
    Ok(call)
  }

  fn refuse_if_closed(&self) -> Result<(), CodedError> {
    if self.pool.is_closed() { Err(self.closed()) } else { Ok(()) }
  }

  /// `host:port/database` of the server the store talks to.
  pub fn target(&self) -> &str {
    &self.target
  }

  /// A pooled connection to a server where the table exists.
  async fn connection(&self) -> Result<Object, CodedError> {
    let client = self.pool.get().await.map_err(|error| self.pool_failure(error))?;
    // After the `get`, which counted any connection it made, so the reaper cannot miss it (see `idle::IdleReaper`).
    self.reaper.watch(&self.pool);
    self
      .schema
      .get_or_try_init(|| async { client.batch_execute(&self.sql.create).await.map_err(|error| self.failure(&error)) })
      .await?;
    Ok(client)
  }

  async fn bounded<T>(&self, work: impl Future<Output = Result<T, CodedError>>) -> Result<T, CodedError> {
    let limit = self.options.call_timeout;
    tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
      Err(self.unavailable(format!(
        "no answer within {} ms (timeoutMs); a write may or may not have been saved",
        limit.as_millis()
      )))
    })
  }

  fn unavailable(&self, why: String) -> CodedError {
    CodedError {
      code: "STORAGE_UNAVAILABLE",
      message: format!("postgres storage: the server at {} is unavailable: {why}", self.target),
      hint: UNAVAILABLE_HINT,
    }
  }

  fn closed(&self) -> CodedError {
    CodedError {
      code: "STORAGE_CLOSED",
      message: format!(
        "postgres storage: the store for the server at {} was closed by close(); it makes no more calls",
        self.target
      ),
      hint: CLOSED_HINT,
    }
  }

  fn pool_failure(&self, error: PoolError) -> CodedError {
    match error {
      // `close` ran while the call waited for a connection.
      PoolError::Closed => self.closed(),
      PoolError::Backend(error) => self.failure(&error),
      PoolError::Timeout(TimeoutType::Create) => self.unavailable(format!(
        "could not connect within {} ms (connectTimeoutMs)",
        self.options.connect_timeout.as_millis()
      )),
      PoolError::Timeout(_) => self.unavailable(format!(
        "all {} connections stayed busy for {} ms (maxConnections, timeoutMs)",
        self.options.max_connections,
        self.options.call_timeout.as_millis()
      )),
      other => self.unavailable(other.to_string()),
    }
  }

  /// A driver error: the server refusing a statement is `STORAGE_FAILED`; a lost or refused connection (an I/O
  /// error, a closed connection, the server shutting down or starting, a failed login) is `STORAGE_UNAVAILABLE`.
  fn failure(&self, error: &tokio_postgres::Error) -> CodedError {
    let connection_lost = match error.code() {
      None => true,
      Some(code) => {
        let class = &code.code()[..2];
        // 08 connection exception, 28 invalid authorization, 3D no such database, 53 insufficient resources
        // (too many connections), 57 operator intervention (shutdown, starting up).
        matches!(class, "08" | "28" | "3D" | "53" | "57")
      }
    };
    let described = describe(error);
    // The driver's TLS errors (a certificate not trusted, a server without TLS under `require`) say so first; they
    // do not pass by themselves.
    if described.starts_with("error performing TLS handshake") {
      return CodedError {
        code: "STORAGE_TLS_FAILED",
        message: format!("postgres storage: TLS with the server at {} failed: {described}", self.target),
        hint: TLS_HINT,
      };
    }
    if connection_lost {
      self.unavailable(described)
    } else {
      CodedError {
        code: "STORAGE_FAILED",
        message: format!("postgres storage ({}): {described}", self.target),
        hint: FAILED_HINT,
      }
    }
  }
}

/// The driver's message with its cause (its `Display` alone says only "db error" or "error connecting to server").
fn describe(error: &tokio_postgres::Error) -> String {
  if let Some(db) = error.as_db_error() {
    return format!("{} (SQLSTATE {})", db.message(), db.code().code());
  }
  match std::error::Error::source(error) {
    Some(cause) => format!("{error}: {cause}"),
    None => error.to_string(),
  }
}

/// The effective user's name in the password database (`getpwuid_r`).
#[cfg(unix)]
fn os_user_name() -> Option<String> {
  let mut buffer = vec![0_u8; 16 * 1024];
  let mut found: *mut libc::passwd = std::ptr::null_mut();
  // SAFETY: `getpwuid_r` writes the entry into `entry` and its strings into `buffer`, both alive while the name is
  // read; `found` is null unless the entry was written.
  unsafe {
    let mut entry: libc::passwd = std::mem::zeroed();
    let status =
      libc::getpwuid_r(libc::geteuid(), &raw mut entry, buffer.as_mut_ptr().cast(), buffer.len(), &raw mut found);
    if status != 0 || found.is_null() || entry.pw_name.is_null() {
      return None;
    }
    std::ffi::CStr::from_ptr(entry.pw_name).to_str().ok().map(str::to_owned)
  }
}

fn target_of(config: &Config) -> String {
  let hosts: Vec<String> = config
    .get_hosts()
    .iter()
    .enumerate()
    .map(|(i, host)| {
      let port = config.get_ports().get(i).or(config.get_ports().first()).copied().unwrap_or(5432);
      match host {
        Host::Tcp(name) => format!("{name}:{port}"),
        #[cfg(unix)]
        Host::Unix(path) => format!("{}:{port}", path.display()),
      }
    })
    .collect();
  format!("{}/{}", hosts.join(","), config.get_dbname().or(config.get_user()).unwrap_or("postgres"))
}

/// The least string greater than every string that starts with `prefix` (`None`: no bound, for `""` and prefixes
/// of U+10FFFF only). Byte order of UTF-8 is code point order, so the last code point below U+10FFFF is stepped
/// up (over the surrogates, which no string holds).
fn prefix_successor(prefix: &str) -> Option<String> {
  let mut chars: Vec<char> = prefix.chars().collect();
  while let Some(last) = chars.pop() {
    let next = match last {
      '\u{D7FF}' => Some('\u{E000}'),
      c => char::from_u32(c as u32 + 1),
    };
    if let Some(next) = next {
      chars.push(next);
      return Some(chars.into_iter().collect());
    }
  }
  None
}

/// What a write under a key holding U+0000 fails with: PostgreSQL text cannot hold it.
fn nul_key(key: &str) -> CodedError {
  CodedError {
    code: "INVALID_STORAGE_KEY",
    message: format!("postgres storage: the key {key:?} holds U+0000, which PostgreSQL text cannot hold"),
    hint: "Use keys without the NUL character.",
  }
}

impl PostgresStorage {
  /// The rows of `range` or `from` (statements taking a start key, and the range one an end key too) for the keys
  /// under `prefix` from `start` on: the range `[start, successor(prefix))` of the primary key, filtered exactly.
  async fn rows_under(
    &self,
    prefix: &str,
    start: &str,
    (range, from): (&str, &str),
  ) -> Result<Vec<tokio_postgres::Row>, CodedError> {
    let upper = prefix_successor(prefix);
    self
      .bounded(async {
        let client = self.connection().await?;
        let statement =
          client.prepare_cached(if upper.is_some() { range } else { from }).await.map_err(|e| self.failure(&e))?;
        let rows = match &upper {
          Some(upper) => client.query(&statement, &[&start, upper]).await,
          None => client.query(&statement, &[&start]).await,
        };
        rows.map_err(|e| self.failure(&e))
      })
      .await
  }
}

#[async_trait]
impl CodedStorage for PostgresStorage {
  async fn fetch(&self, key: &str) -> Result<Option<Value>, CodedError> {
    let _call = self.begin().await?;
    if key.contains('\0') {
      return Ok(None); // PostgreSQL text cannot hold U+0000, so no such key was ever stored.
    }
    let text: Option<String> = self
      .bounded(async {
        let client = self.connection().await?;
        let statement = client.prepare_cached(&self.sql.get).await.map_err(|e| self.failure(&e))?;
        let row = client.query_opt(&statement, &[&key]).await.map_err(|e| self.failure(&e))?;
        Ok(row.map(|row| row.get(0)))
      })
      .await?;
    text
      .map(|text| {
        serde_json::from_str(&text).map_err(|error| CodedError {
          code: "STORAGE_FAILED",
          message: format!("postgres storage ({}): the value under '{key}' is not JSON: {error}", self.target),
          hint: "Something other than this store wrote to its table; give the store a table of its own (options.table).",
        })
      })
      .transpose()
  }

  async fn store(&self, key: &str, value: &Value) -> Result<(), CodedError> {
    let _call = self.begin().await?;
    if key.contains('\0') {
      return Err(nul_key(key));
    }
    let text = value.to_string();
    self
      .bounded(async {
        let client = self.connection().await?;
        let statement = client.prepare_cached(&self.sql.set).await.map_err(|e| self.failure(&e))?;
        client.execute(&statement, &[&key, &text]).await.map_err(|e| self.failure(&e))?;
        Ok(())
      })
      .await
  }

  async fn remove(&self, key: &str) -> Result<(), CodedError> {
    let _call = self.begin().await?;
    if key.contains('\0') {
      return Ok(());
    }
    self
      .bounded(async {
        let client = self.connection().await?;
        let statement = client.prepare_cached(&self.sql.delete).await.map_err(|e| self.failure(&e))?;
        client.execute(&statement, &[&key]).await.map_err(|e| self.failure(&e))?;
        Ok(())
      })
      .await
  }

  /// Keys that start with `prefix`, in byte order: the range `[prefix, successor(prefix))` of the primary key.
  async fn keys(&self, prefix: &str) -> Result<Vec<String>, CodedError> {
    let _call = self.begin().await?;
    if prefix.contains('\0') {
      return Ok(Vec::new());
    }
    let rows = self.rows_under(prefix, prefix, (&self.sql.list_range, &self.sql.list_from)).await?;
    Ok(rows.iter().map(|row| row.get::<_, String>(0)).filter(|key| key.starts_with(prefix)).collect())
  }

  async fn insert_new_text(&self, key: &str, text: String) -> Result<bool, CodedError> {
    let _call = self.begin().await?;
    if key.contains('\0') {
      return Err(nul_key(key));
    }
    self
      .bounded(async {
        let client = self.connection().await?;
        let statement = client.prepare_cached(&self.sql.insert_new).await.map_err(|e| self.failure(&e))?;
        let inserted = client.execute(&statement, &[&key, &text]).await.map_err(|e| self.failure(&e))?;
        Ok(inserted == 1)
      })
      .await
  }

  async fn texts_from(&self, prefix: &str, from: &str) -> Result<Vec<StoredText>, CodedError> {
    let _call = self.begin().await?;
    if prefix.contains('\0') {
      return Ok(Vec::new());
    }
    let start = if from > prefix { from } else { prefix };
    let rows = self.rows_under(prefix, start, (&self.sql.texts_range, &self.sql.texts_from)).await?;
    Ok(
      rows
        .iter()
        .map(|row| StoredText::new(row.get::<_, String>(0), row.get::<_, String>(1)))
        .filter(|stored| stored.key.starts_with(prefix))
        .collect(),
    )
  }

  fn refuses(&self, key: &str) -> Option<&'static str> {
    key.contains('\0').then_some("PostgreSQL text cannot hold U+0000 (NUL)")
  }
}

mod idle;
mod tls;

#[cfg(test)]
mod tests;
