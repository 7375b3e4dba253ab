//! The inspector's server: HTTP/1.1 by hyper on the runtime's tokio, answering as `routes.rs` says. It belongs to the
//! harness's inspector from `startInspector` until `close()`: a second start is refused while it serves, and closing
//! stops the recording, ends the pages' feeds and waits for every connection to end. Nothing here keeps the host's
//! process alive; the host holds it while the server is open, as a server of its own would.

use std::convert::Infallible;
use std::future::Future;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::sync::{Arc, MutexGuard, PoisonError};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::feed::{Feeds, send_feeds};
use super::gate::Gate;
use super::options::InspectorOptions;
use super::routes::{Site, respond};
use super::{InspectLimits, Inspector, Serving};
use crate::ConfigError;
use crate::harness::Harness;

/// How long a request still being answered when the server closes may take to finish: one waiting on a slow storage
/// adapter is cut off then rather than hold `close()` up.
const GRACE: Duration = Duration::from_secs(1);

fn serving(inspector: &Inspector) -> MutexGuard<'_, Serving> {
  inspector.serving.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The place a start has taken, given back unless it ends serving (the start failed, or was dropped unfinished).
struct Reservation(Option<Arc<Inspector>>);

impl Drop for Reservation {
  fn drop(&mut self) {
    if let Some(inspector) = self.0.take() {
      *serving(&inspector) = Serving::Closed;
    }
  }
}

impl Harness {
  /// Starts the inspector: refused while one is open or opening; then a future that listens as `options` say,
  /// starts recording and serving, and gives the page's URL (with its token). `names` are the layers' names by id,
  /// as JSON texts.
  pub fn start_inspector(
    self: &Arc<Self>,
    options: InspectorOptions,
    names: Vec<(String, String)>,
  ) -> Result<impl Future<Output = Result<String, ConfigError>> + Send + 'static, ConfigError> {
    {
      let mut serving = serving(&self.inspector);
      match &*serving {
        Serving::Open { origin, .. } => return Err(already_open(&format!(" at {origin}"))),
        Serving::Opening => return Err(already_open("")),
        Serving::Closed => *serving = Serving::Opening,
      }
    }
    let mut reservation = Reservation(Some(Arc::clone(&self.inspector)));
    let harness = Arc::downgrade(self);
    Ok(async move {
      let (listener, bound) = listen(&options).await.map_err(|reason| listen_failed(&options, &reason))?;
      // Which requests are answered is the gate's, with the token it makes for the address bound.
      let gate = Gate::new(&bound.ip().to_string(), bound.port());
      let url = gate.url();
      let inspector = reservation.0.take().expect("reserved until now");
      let (stop, stopped) = watch::channel(false);
      *serving(&inspector) = Serving::Open { origin: gate.origin().to_owned(), stop };
      let limits = InspectLimits {
        turns_per_thread: options.turns_per_thread as usize,
        threads: options.threads as usize,
        ..InspectLimits::default()
      };
      inspector.set_open(true, limits);
      let feeds = Feeds::new(inspector);
      tokio::spawn(send_feeds(Arc::clone(&feeds), stopped.clone()));
      let site = Arc::new(Site { harness, gate, names: names.into_iter().collect(), feeds });
      tokio::spawn(accept(listener, site, stopped));
      Ok(url)
    })
  }

  /// Closes the inspector: it stops recording and forgets what it recorded at once; the future resolves once the
  /// server has stopped listening and every connection has ended. Nothing to do when none is open.
  pub fn close_inspector(&self) -> impl Future<Output = ()> + Send + 'static {
    let serving = std::mem::take(&mut *serving(&self.inspector));
    self.inspector.set_open(false, InspectLimits::default());
    async move {
      if let Serving::Open { stop, .. } = serving {
        stop.send_replace(true);
        // Every task of the server holds a receiver, and drops it as it ends.
        stop.closed().await;
      }
    }
  }
}

fn already_open(at: &str) -> ConfigError {
  ConfigError::new(
    "INSPECTOR_ALREADY_OPEN",
    format!("An inspector is already open for this harness{at}."),
    "Close it first (await inspector.close()), or use the URL it gave.",
  )
}

/// Listens on the first address the host name resolves to, as Node's `server.listen(port, host)` does. Why not, in
/// Node's words for the failures a user can act on (`listen EADDRINUSE: ...`), the system's otherwise.
async fn listen(options: &InspectorOptions) -> Result<(TcpListener, SocketAddr), String> {
  let (host, port) = (options.host.as_str(), options.port);
  let not_found = || format!("getaddrinfo ENOTFOUND {host}");
  let address = tokio::net::lookup_host((host, port)).await.map_err(|_| not_found())?.next().ok_or_else(not_found)?;
  let at = format!("{}:{port}", address.ip());
  let listening = TcpListener::bind(address).await.and_then(|listener| Ok((listener.local_addr()?, listener)));
  listening.map(|(bound, listener)| (listener, bound)).map_err(|error| match error.kind() {
    ErrorKind::AddrInUse => format!("listen EADDRINUSE: address already in use {at}"),
    ErrorKind::PermissionDenied => format!("listen EACCES: permission denied {at}"),
    ErrorKind::AddrNotAvailable => format!("listen EADDRNOTAVAIL: address not available {at}"),
    _ => error.to_string(),
  })
}

fn listen_failed(options: &InspectorOptions, reason: &str) -> ConfigError {
  let at = format!("{}:{}", options.host, options.port);
  ConfigError::new(
    "INSPECTOR_LISTEN_FAILED",
    format!("startInspector could not listen on {at}: {reason}"),
    "Pick another port, or 0 for any free one.",
  )
}

async fn accept(listener: TcpListener, site: Arc<Site>, mut stop: watch::Receiver<bool>) {
  loop {
    let accepted = tokio::select! {
      _ = stop.wait_for(|stopped| *stopped) => break,
      accepted = listener.accept() => accepted,
    };
    match accepted {
      Ok((stream, _)) => drop(tokio::spawn(connection(stream, Arc::clone(&site), stop.clone()))),
      // Out of file descriptors, say: waited out rather than spun on.
      Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
    }
  }
  // The port is let go before the receiver: `close_inspector` resolves when the last receiver drops, and promises
  // that nothing listens by then (parameters drop in reverse order, which would free the port last).
  drop(listener);
  drop(stop);
}

/// One connection, until the client ends it or the server closes: then a request under way may finish (a feed's
/// body ends as the server ends the feeds), within `GRACE`.
async fn connection(stream: TcpStream, site: Arc<Site>, mut stop: watch::Receiver<bool>) {
  // Feed events are small writes that should go out at once.
  let _ = stream.set_nodelay(true);
  let service = service_fn(move |request| {
    let site = Arc::clone(&site);
    async move { Ok::<_, Infallible>(respond(&site, request).await) }
  });
  // The timer bounds how long a client may take to send a request's head (hyper's default, 30 s).
  let connection = http1::Builder::new().timer(TokioTimer::new()).serve_connection(TokioIo::new(stream), service);
  tokio::pin!(connection);
  tokio::select! {
    _ = connection.as_mut() => return,
    _ = stop.wait_for(|stopped| *stopped) => {}
  }
  connection.as_mut().graceful_shutdown();
  let _ = tokio::time::timeout(GRACE, connection).await;
}
