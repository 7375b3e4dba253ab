//! The live feed (server-sent events) of the pages that have one open. The recorder puts calls in its feed only while
//! a page listens, so this says when the first page comes and the last goes; one task per server sends every page
//! the calls recorded since it last did, at most every 100 ms, and a heartbeat.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::{Notify, watch};

use super::Inspector;
use super::given::with_given_thread_ids;

/// So that proxies and browsers keep an open feed open.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// New calls go out at most this often, in one event: a busy agent costs one write per interval, not one per call.
const FEED_EVERY: Duration = Duration::from_millis(100);

pub(super) struct Feeds {
  inspector: Arc<Inspector>,
  pages: Mutex<Pages>,
  /// A page came where there was none: the heartbeat starts.
  first: Notify,
}

#[derive(Default)]
struct Pages {
  next: u64,
  /// What each page is sent goes into its channel; its response body reads it.
  open: HashMap<u64, UnboundedSender<Bytes>>,
  /// The server is closing: a feed opened now ends at once.
  ended: bool,
}

impl Feeds {
  pub(super) fn new(inspector: Arc<Inspector>) -> Arc<Self> {
    Arc::new(Self { inspector, pages: Mutex::default(), first: Notify::new() })
  }

  fn pages(&self) -> MutexGuard<'_, Pages> {
    self.pages.lock().unwrap_or_else(PoisonError::into_inner)
  }

  /// A new page's feed, which says first that it is connected.
  pub(super) fn open(self: &Arc<Self>) -> FeedBody {
    let (sender, receiver) = unbounded_channel();
    let _ = sender.send(Bytes::from_static(b": connected\n\n"));
    let mut pages = self.pages();
    if pages.ended {
      return FeedBody { receiver, _page: Page { feeds: Arc::clone(self), id: None } };
    }
    pages.next += 1;
    let id = pages.next;
    pages.open.insert(id, sender);
    if pages.open.len() == 1 {
      self.inspector.set_listening(true);
      self.first.notify_one();
    }
    FeedBody { receiver, _page: Page { feeds: Arc::clone(self), id: Some(id) } }
  }

  fn send(&self, bytes: &Bytes) {
    for page in self.pages().open.values() {
      // A page that left is taken out by its body's drop.
      let _ = page.send(bytes.clone());
    }
  }

  fn is_empty(&self) -> bool {
    self.pages().open.is_empty()
  }

  /// Ends every page's feed (their bodies end once they have sent what they hold), and any opened later.
  fn end(&self) {
    let mut pages = self.pages();
    pages.ended = true;
    pages.open.clear();
  }
}

/// One page's place among the listeners, given up when its response body is dropped (the page left, or its
/// connection ended).
struct Page {
  feeds: Arc<Feeds>,
  id: Option<u64>,
}

impl Drop for Page {
  fn drop(&mut self) {
    let Some(id) = self.id else { return };
    let mut pages = self.feeds.pages();
    // A feed the server's close already ended is not this page's to stop listening for.
    if pages.open.remove(&id).is_some() && pages.open.is_empty() {
      self.feeds.inspector.set_listening(false);
    }
  }
}

/// The response body of a page's feed: what is sent to it, until the server ends it.
pub(super) struct FeedBody {
  receiver: UnboundedReceiver<Bytes>,
  _page: Page,
}

impl Body for FeedBody {
  type Data = Bytes;
  type Error = Infallible;

  fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
    self.receiver.poll_recv(cx).map(|sent| sent.map(|bytes| Ok(Frame::data(bytes))))
  }
}

/// Sends the pages what the recorder fed and a heartbeat while any page listens, until `stop`; then ends the feeds.
/// The recorder tells of a call only when its feed was empty, and the feed is taken `FEED_EVERY` later, so the calls
/// of a busy agent go out together.
pub(super) async fn send_feeds(feeds: Arc<Feeds>, mut stop: watch::Receiver<bool>) {
  enum Woken {
    Stop,
    Fed,
    FirstPage,
    Heartbeat,
  }
  let mut heartbeat: Option<Pin<Box<tokio::time::Sleep>>> = None;
  loop {
    let woken = tokio::select! {
      _ = stop.wait_for(|stopped| *stopped) => Woken::Stop,
      () = feeds.inspector.fed.notified() => Woken::Fed,
      () = feeds.first.notified() => Woken::FirstPage,
      () = async { heartbeat.as_mut().expect("guarded").await }, if heartbeat.is_some() => Woken::Heartbeat,
    };
    match woken {
      Woken::Stop => break,
      Woken::Fed => {
        let waited = tokio::select! {
          _ = stop.wait_for(|stopped| *stopped) => false,
          () = tokio::time::sleep(FEED_EVERY) => true,
        };
        if !waited {
          break;
        }
        if !feeds.is_empty() {
          let calls = with_given_thread_ids(feeds.inspector.take_feed());
          feeds.send(&Bytes::from(format!("event: calls\ndata: {calls}\n\n")));
        }
      }
      Woken::FirstPage => heartbeat = Some(Box::pin(tokio::time::sleep(HEARTBEAT))),
      Woken::Heartbeat => {
        heartbeat = None;
        if !feeds.is_empty() {
          feeds.send(&Bytes::from_static(b": alive\n\n"));
          heartbeat = Some(Box::pin(tokio::time::sleep(HEARTBEAT)));
        }
      }
    }
  }
  feeds.end();
}
