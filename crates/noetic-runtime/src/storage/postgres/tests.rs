//! Against a real PostgreSQL server: `NOETIC_TEST_POSTGRES_URL`, else one that `scripts/pg-test-server.sh` starts
//! for this test process. A test that needs a server says so and passes without asserting only when neither is
//! possible (PostgreSQL not installed).

use std::collections::HashSet;
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::storage::Storage;

fn script() -> std::path::PathBuf {
  std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-test-server.sh")
}

/// A server made by the script, destroyed when dropped.
struct Server {
  url: String,
  dir: String,
  /// The CA that signed the server's TLS certificate, when openssl could make one.
  ca: Option<String>,
}

impl Server {
  /// `Err` says why there is none.
  fn start() -> Result<Self, String> {
    let out = Command::new("bash").arg(script()).arg("start").output().map_err(|e| e.to_string())?;
    if !out.status.success() {
      return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let value =
      |name: &str| text.lines().find_map(|line| line.strip_prefix(&format!("export {name}=")).map(str::to_owned));
    Ok(Self {
      url: value("NOETIC_TEST_POSTGRES_URL").unwrap(),
      dir: value("NOETIC_TEST_POSTGRES_DIR").unwrap(),
      ca: value("NOETIC_TEST_POSTGRES_CA"),
    })
  }

  fn control(&self, command: &str) {
    let status = Command::new("bash").arg(script()).arg(command).arg(&self.dir).status().unwrap();
    assert!(status.success(), "pg-test-server.sh {command} failed");
  }
}

impl Drop for Server {
  fn drop(&mut self) {
    let _ = Command::new("bash").arg(script()).arg("destroy").arg(&self.dir).status();
  }
}

/// The server shared by this process's tests. One the script starts lives as long as the process: a watcher
/// destroys it when the process is gone (statics are never dropped).
fn shared_url() -> Option<&'static str> {
  shared().map(|(url, _)| url.as_str())
}

/// The shared server's URL and the CA of its TLS certificate (none when it has no TLS).
fn shared() -> Option<&'static (String, Option<String>)> {
  static SHARED: OnceLock<Option<(String, Option<String>)>> = OnceLock::new();
  SHARED
    .get_or_init(|| {
      if let Ok(url) = std::env::var("NOETIC_TEST_POSTGRES_URL") {
        return Some((url, std::env::var("NOETIC_TEST_POSTGRES_CA").ok()));
      }
      match Server::start() {
        Ok(server) => {
          let watch = format!(
            "while kill -0 {} 2>/dev/null; do sleep 1; done; bash '{}' destroy '{}'",
            std::process::id(),
            script().display(),
            server.dir
          );
          let _ = Command::new("sh").arg("-c").arg(watch).stdin(Stdio::null()).stdout(Stdio::null()).spawn();
          let shared = (server.url.clone(), server.ca.clone());
          std::mem::forget(server);
          Some(shared)
        }
        Err(why) => {
          eprintln!("SKIPPED PostgreSQL tests: no server ({why}). Set NOETIC_TEST_POSTGRES_URL or install PostgreSQL.");
          None
        }
      }
    })
    .as_ref()
}

/// A store on the shared server, in a table of the test's own (dropped first, so reruns start empty).
async fn store(name: &str) -> Option<PostgresStorage> {
  let url = shared_url()?;
  let table = format!("t_{name}_{}", std::process::id());
  let store = open_table(url, &table);
  let client = store.pool.get().await.unwrap();
  client.batch_execute(&format!("DROP TABLE IF EXISTS \"{table}\"")).await.unwrap();
  Some(store)
}

fn open_table(url: &str, table: &str) -> PostgresStorage {
  PostgresStorage::open(url, PostgresOptions { table: table.to_owned(), ..PostgresOptions::default() }).unwrap()
}

#[tokio::test]
async fn values_round_trip_exactly() {
  let Some(store) = store("round_trip").await else { return };
  assert_eq!(store.get("missing").await.unwrap(), None);
  // Key order, a NUL inside a string, non-BMP text and large and fractional numbers all come back as written.
  let value =
    json!({ "z": 1, "a": [true, null, "é\u{1F600}", "nul\u{0}inside"], "n": 1.5e300, "i": -9007199254740991_i64 });
  store.set("layers/a/T/state", value.clone()).await.unwrap();
  assert_eq!(store.get("layers/a/T/state").await.unwrap(), Some(value.clone()));
  assert_eq!(store.get("layers/a/T/state").await.unwrap().unwrap().to_string(), value.to_string());
  store.set("layers/a/T/state", json!("replaced")).await.unwrap();
  assert_eq!(store.get("layers/a/T/state").await.unwrap(), Some(json!("replaced")));
  store.delete("layers/a/T/state").await.unwrap();
  store.delete("layers/a/T/state").await.unwrap();
  assert_eq!(store.get("layers/a/T/state").await.unwrap(), None);
}

#[tokio::test]
async fn list_returns_exactly_the_keys_under_a_prefix_in_byte_order() {
  let Some(store) = store("list").await else { return };
  let keys = [
    "layers/a/T/state",
    "layers/a/T/notes",
    "layers/ab/T/state",
    "layers/a",
    "layers/a%/x",
    "layers/a_/x",
    "other",
    "Z",
    "é",
    "\u{10FFFF}a",
    "\u{10FFFF}\u{10FFFF}",
  ];
  for key in keys {
    store.set(key, json!(1)).await.unwrap();
  }
  assert_eq!(store.list("layers/a/").await.unwrap(), ["layers/a/T/notes", "layers/a/T/state"]);
  // `%` and `_` are plain characters here (the range is no LIKE pattern).
  assert_eq!(store.list("layers/a_").await.unwrap(), ["layers/a_/x"]);
  assert_eq!(
    store.list("layers/a").await.unwrap(),
    ["layers/a", "layers/a%/x", "layers/a/T/notes", "layers/a/T/state", "layers/a_/x", "layers/ab/T/state"]
  );
  assert_eq!(store.list("\u{10FFFF}").await.unwrap(), ["\u{10FFFF}a", "\u{10FFFF}\u{10FFFF}"]);
  assert_eq!(store.list("\u{10FFFF}\u{10FFFF}").await.unwrap(), ["\u{10FFFF}\u{10FFFF}"]);
  let all = store.list("").await.unwrap();
  let mut sorted = keys.map(str::to_owned).to_vec();
  sorted.sort(); // Rust's string order is byte order.
  assert_eq!(all, sorted);
  assert!(store.list("nothing/").await.unwrap().is_empty());
}

#[tokio::test]
async fn keys_holding_nul_are_never_stored() {
  let Some(store) = store("nul").await else { return };
  let error = store.store("a\0b", &json!(1)).await.unwrap_err();
  assert_eq!(error.code, "INVALID_STORAGE_KEY");
  assert_eq!(store.get("a\0b").await.unwrap(), None);
  store.delete("a\0b").await.unwrap();
  assert!(store.list("a\0").await.unwrap().is_empty());
}

/// Latest wins and nothing tears: 16 writers on two stores (two pools, as two processes) write large distinct
/// values to one key at once; every read in between and the final value is one written value, whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_to_one_key_leave_one_whole_value() {
  let Some(first) = store("race").await else { return };
  let second = open_table(shared_url().unwrap(), &first.options.table);
  let stores = [Arc::new(first), Arc::new(second)];
  let value_of = |writer: usize, round: usize| json!({ "writer": writer, "round": round, "body": format!("{writer}-{round}-").repeat(2_000) });
  let mut tasks = Vec::new();
  for writer in 0..16 {
    let store = Arc::clone(&stores[writer % 2]);
    tasks.push(tokio::spawn(async move {
      for round in 0..10 {
        store.set("shared/state", value_of(writer, round)).await.unwrap();
        let seen = store.get("shared/state").await.unwrap().unwrap();
        let (w, r) = (seen["writer"].as_u64().unwrap() as usize, seen["round"].as_u64().unwrap() as usize);
        assert_eq!(seen, value_of(w, r), "a torn value");
      }
    }));
  }
  for task in tasks {
    task.await.unwrap();
  }
  let last = stores[0].get("shared/state").await.unwrap().unwrap();
  let (w, r) = (last["writer"].as_u64().unwrap() as usize, last["round"].as_u64().unwrap() as usize);
  assert_eq!(last, value_of(w, r));
  assert_eq!(r, 9, "the last value is some writer's last write");
  assert_eq!(stores[1].get("shared/state").await.unwrap(), Some(last));
}

/// Many stores meeting a missing table at once, round after round: each creates it or finds it made, and no call
/// fails. (Unserialised, `CREATE TABLE IF NOT EXISTS` races on the table's row type: "type ... already exists".)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stores_racing_to_create_the_table_all_succeed() {
  let Some(url) = shared_url() else { return };
  let table = format!("t_create_race_{}", std::process::id());
  let first = open_table(url, &table);
  for round in 0..12 {
    first.pool.get().await.unwrap().batch_execute(&format!("DROP TABLE IF EXISTS \"{table}\"")).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..12 {
      let store = open_table(url, &table);
      tasks.push(tokio::spawn(async move { store.set(&format!("k/{i}"), json!(i)).await }));
    }
    for task in tasks {
      task.await.unwrap().unwrap_or_else(|error| panic!("round {round}: {error:?}"));
    }
    assert_eq!(open_table(url, &table).list("k/").await.unwrap().len(), 12);
  }
}

#[test]
fn bad_urls_and_options_are_refused_when_the_store_is_made() {
  let refused = |url: &str, options: PostgresOptions| PostgresStorage::open(url, options).err().expect(url);
  for url in ["not a url", "postgres://u:secret@host:notaport/db", "mysql://u:secret@host/db", ""] {
    let error = refused(url, PostgresOptions::default());
    assert_eq!(error.code, "STORAGE_OPEN_FAILED", "{url}: {error}");
    assert!(!error.message.contains("secret"), "the password leaked: {}", error.message);
    assert!(!error.hint.is_empty());
  }
  let tls =
    refused("postgres://u@localhost/db?sslmode=verify-full&sslrootcert=/no/such/ca.pem", PostgresOptions::default());
  assert!(tls.message.contains("sslrootcert '/no/such/ca.pem' cannot be read"), "{tls}");
  for options in [
    json!("fast"),
    json!({ "table": "a b" }),
    json!({ "table": "" }),
    json!({ "maxConnections": 0 }),
    json!({ "connectTimeoutMs": 1.5 }),
    json!({ "timeoutMs": -1 }),
    json!({ "tables": "x" }),
    json!({ "idleTimeoutMs": -1 }),
  ] {
    let error = PostgresOptions::from_json(&options).err().unwrap_or_else(|| panic!("{options} accepted"));
    assert_eq!(error.code, "STORAGE_OPEN_FAILED", "{options}");
  }
  let parsed = PostgresOptions::from_json(
    &json!({ "table": "kv_2", "maxConnections": 3, "connectTimeoutMs": 250, "timeoutMs": 1000 }),
  )
  .unwrap();
  assert_eq!(
    parsed,
    PostgresOptions {
      table: "kv_2".to_owned(),
      max_connections: 3,
      connect_timeout: Duration::from_millis(250),
      call_timeout: Duration::from_secs(1),
      idle_timeout: Some(Duration::from_secs(10)),
    }
  );
  assert_eq!(PostgresOptions::from_json(&Value::Null).unwrap(), PostgresOptions::default());
}

#[cfg(unix)]
#[test]
fn a_url_without_a_user_names_the_effective_os_user() {
  let id = Command::new("id").arg("-un").output().expect("id -un");
  let expected = String::from_utf8_lossy(&id.stdout).trim().to_owned();
  assert_eq!(os_user_name().as_deref(), Some(expected.as_str()));
}

#[test]
fn the_idle_time_is_whole_milliseconds_up_to_a_day_and_0_keeps_idle_connections() {
  let idle =
    |ms: Value| PostgresOptions::from_json(&json!({ "idleTimeoutMs": ms })).map(|options| options.idle_timeout);
  // node-postgres's default.
  assert_eq!(PostgresOptions::default().idle_timeout, Some(Duration::from_secs(10)));
  assert_eq!(idle(json!(250)).unwrap(), Some(Duration::from_millis(250)));
  assert_eq!(idle(json!(86_400_000)).unwrap(), Some(Duration::from_secs(86_400)));
  assert_eq!(idle(json!(1)).unwrap(), Some(Duration::from_millis(1)));
  assert_eq!(idle(json!(0)).unwrap(), None);
  for bad in [json!(-1), json!(1.5), json!(86_400_001), json!("10s"), json!(null), json!(true), json!(f64::MAX)] {
    let error = idle(bad.clone()).err().unwrap_or_else(|| panic!("idleTimeoutMs {bad} accepted"));
    assert_eq!(error.code, "STORAGE_OPEN_FAILED", "{bad}");
    assert!(error.message.contains("idleTimeoutMs") && error.message.contains("0 to 86400000"), "{}", error.message);
    assert!(error.hint.contains("idleTimeoutMs"), "{}", error.hint);
  }
}

/// Nothing listens on port 1, and 10.255.255.1 is not routed: both are errors within the connect timeout.
#[tokio::test]
async fn an_unreachable_server_is_an_error_within_the_connect_timeout() {
  for url in ["postgres://u:secret@127.0.0.1:1/db", "postgres://u:secret@10.255.255.1:5432/db"] {
    let options = PostgresOptions { connect_timeout: Duration::from_millis(400), ..PostgresOptions::default() };
    let store = PostgresStorage::open(url, options).unwrap();
    let started = Instant::now();
    let error = store.fetch("k").await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3), "{url} took {:?}", started.elapsed());
    assert_eq!(error.code, "STORAGE_UNAVAILABLE", "{error:?}");
    assert!(error.message.contains(store.target()) && !error.message.contains("secret"), "{}", error.message);
    let as_storage = store.set("k", json!(1)).await.unwrap_err();
    assert!(as_storage.message.contains("unavailable"), "{as_storage}");
  }
}

#[tokio::test]
async fn a_wrong_password_is_unavailable_and_says_why() {
  let Some(url) = shared_url() else { return };
  let mut config = Config::from_str(url).unwrap();
  if config.get_password().is_none() {
    eprintln!("SKIPPED: the test server takes no password");
    return;
  }
  config.password("wrong");
  let Host::Tcp(host) = &config.get_hosts()[0] else { return };
  let wrong = format!("postgres://{}:wrong@{host}:{}/postgres", config.get_user().unwrap(), config.get_ports()[0]);
  let error = PostgresStorage::open(&wrong, PostgresOptions::default()).unwrap().fetch("k").await.unwrap_err();
  assert_eq!(error.code, "STORAGE_UNAVAILABLE");
  assert!(error.message.contains("password"), "{}", error.message);
}

/// The server stops mid-run: calls fail at once with STORAGE_UNAVAILABLE, and once it is back the same store
/// works again with nothing lost. A private server, since stopping the shared one would fail other tests.
#[tokio::test]
async fn the_store_reconnects_when_the_server_comes_back() {
  let server = match Server::start() {
    Ok(server) => server,
    Err(why) => return eprintln!("SKIPPED: no private PostgreSQL server ({why})"),
  };
  let store = PostgresStorage::open(&server.url, PostgresOptions::default()).unwrap();
  for i in 0..4 {
    store.set(&format!("k/{i}"), json!(i)).await.unwrap(); // several pooled connections, all to be lost
  }
  server.control("stop");
  let started = Instant::now();
  let error = store.set("k/after", json!("x")).await.unwrap_err();
  assert!(error.message.contains("unavailable"), "{error}");
  assert!(started.elapsed() < Duration::from_secs(6), "took {:?}", started.elapsed());
  assert_eq!(store.fetch("k/0").await.unwrap_err().code, "STORAGE_UNAVAILABLE");
  server.control("resume");
  store.set("k/after", json!("x")).await.unwrap();
  assert_eq!(store.list("k/").await.unwrap(), ["k/0", "k/1", "k/2", "k/3", "k/after"]);
  assert_eq!(store.get("k/3").await.unwrap(), Some(json!(3)));
}

#[test]
fn prefix_successors_bound_exactly_the_strings_with_the_prefix() {
  assert_eq!(prefix_successor(""), None);
  assert_eq!(prefix_successor("ab").as_deref(), Some("ac"));
  assert_eq!(prefix_successor("a/").as_deref(), Some("a0"));
  assert_eq!(prefix_successor("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
  assert_eq!(prefix_successor("a\u{10FFFF}").as_deref(), Some("b"));
  assert_eq!(prefix_successor("\u{10FFFF}\u{10FFFF}"), None);
  let samples = ["a", "ab", "ab\u{10FFFF}", "ac", "a\u{D7FF}x", "a\u{E000}", "b", "\u{10FFFF}", ""];
  for prefix in ["a", "ab", "a\u{D7FF}", "a\u{10FFFF}"] {
    let upper = prefix_successor(prefix).unwrap();
    let in_range: HashSet<_> = samples.iter().filter(|s| **s >= prefix && **s < upper.as_str()).collect();
    let with_prefix: HashSet<_> = samples.iter().filter(|s| s.starts_with(prefix)).collect();
    assert_eq!(in_range, with_prefix, "{prefix:?}");
  }
}

/// Whether the connection `store` uses is encrypted, as the server sees it.
async fn encrypted(store: &PostgresStorage) -> bool {
  let client = store.pool.get().await.unwrap();
  let row = client.query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]).await.unwrap();
  row.get(0)
}

#[tokio::test]
async fn tls_modes_encrypt_and_check_the_certificate_as_libpq_does() {
  let Some((url, ca)) = shared() else { return };
  let Some(ca) = ca else {
    eprintln!("SKIPPED the TLS test: the test server has no TLS (openssl was not found when it started).");
    return;
  };
  let table = format!("t_tls_{}", std::process::id());
  // The server's certificate names `localhost`, not 127.0.0.1, and is signed by the server's own CA.
  let by_name = url.replace("@127.0.0.1:", "@localhost:");
  let with = |base: &str, query: &str| {
    let joined = format!("{base}{}{query}", if base.contains('?') { "&" } else { "?" });
    open_table(&joined, &table)
  };
  let ca_param = format!("sslrootcert={}", ca.replace('/', "%2F"));
  // Encrypted and working: prefer (the default) and require encrypt without checking; verify-ca checks the chain;
  // verify-full the chain and the name.
  for store in [
    open_table(url, &table),
    with(url, "sslmode=require"),
    with(url, &format!("sslmode=verify-ca&{ca_param}")),
    with(&by_name, &format!("sslmode=verify-full&{ca_param}")),
  ] {
    store.set("k", json!(store.target())).await.unwrap();
    assert_eq!(store.get("k").await.unwrap(), Some(json!(store.target())));
    assert!(encrypted(&store).await, "{} is not encrypted", store.target());
  }
  assert!(!encrypted(&with(url, "sslmode=disable")).await);
  // Checks that fail: the name (127.0.0.1 is not on the certificate), and a CA that is not a public one.
  for (store, why) in [
    (with(url, &format!("sslmode=verify-full&{ca_param}")), "not valid for name"),
    (with(&by_name, "sslmode=verify-full"), "UnknownIssuer"),
  ] {
    let error = store.fetch("k").await.unwrap_err();
    assert_eq!(error.code, "STORAGE_TLS_FAILED", "{error:?}");
    assert!(error.message.contains(why), "{}", error.message);
    assert!(error.hint.contains("sslrootcert"));
  }
}

/// `url` with connections named `name` on the server, so a test can count its store's connections.
fn named(url: &str, name: &str) -> String {
  format!("{url}{}application_name={name}", if url.contains('?') { "&" } else { "?" })
}

/// How many connections named `name` the server has, as `pg_stat_activity` shows them.
async fn connections(observer: &PostgresStorage, name: &str) -> i64 {
  let client = observer.pool.get().await.unwrap();
  let sql = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1";
  client.query_one(sql, &[&name]).await.unwrap().get(0)
}

/// Waits, up to a deadline generous for a loaded machine, until `done` holds; returns whether it did.
async fn eventually(mut done: impl AsyncFnMut() -> bool) -> bool {
  let deadline = Instant::now() + Duration::from_secs(10);
  while Instant::now() < deadline {
    if done().await {
      return true;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
  }
  done().await
}

/// A burst leaves connections in the pool; once unused for the idle time they are closed on the server, the
/// sweeper ends with the last of them, and the next call opens a connection and starts it again. Dropping the store
/// ends it too. (A current-thread runtime: the sweeper runs only where the test awaits.)
#[tokio::test]
async fn idle_connections_are_closed_and_the_sweeper_runs_only_while_some_are_open() {
  let Some(url) = shared_url() else { return };
  let name = format!("noetic_idle_rs_{}", std::process::id());
  let table = format!("t_idle_{}", std::process::id());
  let options = PostgresOptions {
    table: table.clone(),
    idle_timeout: Some(Duration::from_millis(200)),
    ..PostgresOptions::default()
  };
  let store = PostgresStorage::open(&named(url, &name), options).unwrap();
  let observer = open_table(url, &table);
  store.set("k", json!(1)).await.unwrap();
  // Three connections held outside any call, and a call's beside them: four, given back idle.
  let held = [store.pool.get().await.unwrap(), store.pool.get().await.unwrap(), store.pool.get().await.unwrap()];
  assert_eq!(store.get("k").await.unwrap(), Some(json!(1)));
  assert_eq!(store.pool.status().size, 4);
  drop(held);
  assert!(store.reaper.sweeping());
  assert!(eventually(async || connections(&observer, &name).await == 0).await, "idle connections stayed open");
  assert!(eventually(async || !store.reaper.sweeping()).await, "the sweeper outlived the pool's connections");
  assert_eq!(store.pool.status().size, 0);

  assert_eq!(store.get("k").await.unwrap(), Some(json!(1)));
  assert!(store.reaper.sweeping(), "a new connection starts the sweeper again");
  let sweeper = Arc::clone(&store.reaper.sweeper);
  drop(store);
  assert!(sweeper.lock().unwrap().is_none(), "dropping the store stops its sweeper");
  assert!(eventually(async || Arc::strong_count(&sweeper) == 1).await, "the sweeper's task lives on");
  assert!(eventually(async || connections(&observer, &name).await == 0).await);
}

/// `idle_timeout: None` keeps idle connections until the store closes.
#[tokio::test]
async fn without_an_idle_time_idle_connections_stay_open() {
  let Some(url) = shared_url() else { return };
  let name = format!("noetic_keep_rs_{}", std::process::id());
  let table = format!("t_keep_{}", std::process::id());
  let options = PostgresOptions { table: table.clone(), idle_timeout: None, ..PostgresOptions::default() };
  let store = PostgresStorage::open(&named(url, &name), options).unwrap();
  store.set("k", json!(1)).await.unwrap();
  assert!(!store.reaper.sweeping());
  tokio::time::sleep(Duration::from_millis(300)).await;
  assert_eq!(connections(&open_table(url, &table), &name).await, 1);
}

/// `close` closes the idle connections at once and each busy one when its call ends, returning then; the call
/// under way finishes its write, and every later call is refused, saying why and naming the server only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_closes_every_connection_and_later_calls_are_refused() {
  let Some(url) = shared_url() else { return };
  let name = format!("noetic_close_rs_{}", std::process::id());
  let table = format!("t_close_{}", std::process::id());
  let options = PostgresOptions { table: table.clone(), idle_timeout: None, ..PostgresOptions::default() };
  let store = Arc::new(PostgresStorage::open(&named(url, &name), options).unwrap());
  let observer = open_table(url, &table);
  store.set("k", json!(0)).await.unwrap();
  // A write that waits for a row lock held elsewhere keeps its connection busy; another call leaves one idle.
  let locker = observer.pool.get().await.unwrap();
  locker.batch_execute(&format!("BEGIN; SELECT 1 FROM \"{table}\" WHERE key = 'k' FOR UPDATE")).await.unwrap();
  let writer = tokio::spawn({
    let store = Arc::clone(&store);
    async move { store.set("k", json!(1)).await }
  });
  assert!(eventually(async || store.pool.status().available == 0).await, "the write took no connection");
  assert_eq!(store.get("other").await.unwrap(), None);
  assert_eq!(connections(&observer, &name).await, 2);

  let closing = tokio::spawn({
    let store = Arc::clone(&store);
    async move { store.close().await }
  });
  assert!(eventually(async || connections(&observer, &name).await == 1).await, "the idle connection stayed open");
  assert!(!closing.is_finished(), "close returned while a call was under way");
  let refused = store.fetch("k").await.unwrap_err();
  assert_eq!(refused.code, "STORAGE_CLOSED");
  locker.batch_execute("COMMIT").await.unwrap();
  writer.await.unwrap().unwrap();
  closing.await.unwrap();
  assert!(eventually(async || connections(&observer, &name).await == 0).await, "the busy connection stayed open");
  assert_eq!(observer.get("k").await.unwrap(), Some(json!(1)), "the write under way was saved");

  store.close().await;
  assert!(store.is_closed());
  let password = Config::from_str(url).unwrap().get_password().map(|p| String::from_utf8_lossy(p).into_owned());
  for error in [
    store.fetch("k").await.unwrap_err(),
    store.store("k", &json!(2)).await.unwrap_err(),
    store.store("a\0b", &json!(2)).await.unwrap_err(),
    store.remove("k").await.unwrap_err(),
    store.keys("").await.unwrap_err(),
  ] {
    assert_eq!(error.code, "STORAGE_CLOSED", "{error:?}");
    assert!(error.message.contains(store.target()) && error.message.contains("closed"), "{}", error.message);
    assert!(password.as_ref().is_none_or(|p| !error.message.contains(p.as_str())), "{}", error.message);
    assert!(error.hint.contains("createPostgresStorage"));
  }
  assert!(store.set("k", json!(2)).await.unwrap_err().message.contains("closed"));
  assert_eq!(connections(&observer, &name).await, 0, "a refused call opened a connection");
}
