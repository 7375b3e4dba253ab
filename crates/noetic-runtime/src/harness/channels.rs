//! The channel store (DECISIONS R16): value, queue and topic channels under their names, one store per harness
//! (shared by every context it runs) and one per `/internal/test` `ChannelStore`.
//!
//! Every decision is made here: which receiver a send resolves, a queue's capacity and back-pressure (a sender
//! parked on a full queue, promoted when a receive frees a slot), a value channel's last value, a topic's fan-out,
//! an external sender dropping the oldest value of a full queue, closed executions, the default timeout and a
//! topic's clamp of a non-positive one, and which channel object's mode and capacity a name keeps (the first seen).
//!
//! The values are the host's (JS values handed over by identity): the store holds the ids the host keeps them under,
//! and answers each of the host's calls with a [`Plan`], what the host does now, in the same turn: resolve these of
//! its waiters, call these wake callbacks, let go of these values. Its waiters' timers and abort listeners are the
//! host's too; when one fires, the host asks [`ChannelStore::cancel`] whether the waiter is still pending, so each
//! settles once. The interpreter receives from a loop's inbox and waits for an `every`'s wake natively
//! ([`ChannelStore::take`], [`ChannelStore::wake`]), as receivers and wakes of the same lists.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

use crate::steps::{ChannelMode, ChannelSpec, HostKey};

/// A value the host keeps for the store, by its key there.
pub type ValueId = u32;
/// A receiver, parked sender or wake subscription, by the number the store gave it.
pub type WaiterId = u32;

/// How long a receive or a parked send waits when the caller gives no timeout.
pub const DEFAULT_TIMEOUT_MS: f64 = 30_000.0;
/// The longest a topic receive waits: one given no positive timeout waits this long, with a warning.
pub const MAX_TOPIC_TIMEOUT_MS: f64 = 300_000.0;
/// A queue's capacity when its channel names none.
pub const DEFAULT_CAPACITY: f64 = 1_000.0;

/// When a waiter the host registered gives up with `channel_timeout`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Timer {
  /// Never: it waits until it is settled or its caller aborts.
  Never,
  /// After the caller's own timeout, a number above 0, as the caller gave it (the error names it so).
  Given,
  /// After so many milliseconds: the default, or a topic's clamp.
  Ms(f64),
}

/// What the host does after a call, in this order: read `value`, let go of `release`, keep the value it sent under
/// `kept`, resolve `resolve` (with the value it sent, or, for parked senders a receive let through, with nothing),
/// set up the waiter `wait`, call the wake callbacks `wakes`.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
  /// The id a send's value is kept under, when the store holds it (queued, a value channel's, parked, or given to a
  /// native receiver); none when it was only handed to the host's receivers, or dropped.
  pub kept: Option<ValueId>,
  /// What a receive gets now.
  pub value: Option<ValueId>,
  /// The receiver or parked sender registered for the caller, and when it times out.
  pub wait: Option<(WaiterId, Timer)>,
  /// The caller's signal was aborted: it fails with `cancelled`, and nothing was registered.
  pub cancelled: bool,
  /// A handle's execution is closed: its send fails with `channel_closed`, and nothing was sent.
  pub closed: bool,
  pub resolve: Vec<WaiterId>,
  pub wakes: Vec<WaiterId>,
  /// Values nothing holds any more.
  pub release: Vec<ValueId>,
  /// A warning for the console.
  pub warning: Option<String>,
}

/// Who sends, which decides what a full queue does.
#[derive(Debug, Clone, PartialEq)]
pub enum SendBy {
  /// A step, the harness or the store's own `send`: parked on a full queue until a slot frees, its `timeout` (ms;
  /// none: the default) passes or its caller aborts (`aborted`: already).
  Internal { timeout: Option<f64>, aborted: bool },
  /// A sender outside any run: it never waits; a full queue drops its oldest value instead.
  External,
  /// An external handle's, refused once its execution is closed.
  Handle(HostKey),
}

enum Receiver {
  Host(WaiterId),
  Native(WaiterId, oneshot::Sender<ValueId>),
}

impl Receiver {
  fn id(&self) -> WaiterId {
    match self {
      Self::Host(id) | Self::Native(id, _) => *id,
    }
  }
}

enum Wake {
  /// `callback`: the host's key for the function, which subscribes once per send however often it is given.
  Host {
    id: WaiterId,
    callback: HostKey,
  },
  Native(WaiterId, oneshot::Sender<()>),
}

impl Wake {
  fn id(&self) -> WaiterId {
    match self {
      Self::Host { id, .. } | Self::Native(id, _) => *id,
    }
  }
}

struct Channel {
  mode: ChannelMode,
  capacity: f64,
  /// A value channel's last value.
  value: Option<ValueId>,
  /// Receives waiting (a topic's subscribers), in the order they came.
  receivers: VecDeque<Receiver>,
  queue: VecDeque<ValueId>,
  /// Sends parked on a full queue, with their values, in the order they came.
  senders: VecDeque<(WaiterId, ValueId)>,
  /// Called on the next send, whatever the mode, once.
  wakes: Vec<Wake>,
}

impl Channel {
  fn new(spec: &ChannelSpec) -> Self {
    Self {
      mode: spec.mode,
      capacity: spec.capacity.unwrap_or(DEFAULT_CAPACITY),
      value: None,
      receivers: VecDeque::new(),
      queue: VecDeque::new(),
      senders: VecDeque::new(),
      wakes: Vec::new(),
    }
  }

  fn has_room(&self) -> bool {
    (self.queue.len() as f64) < self.capacity
  }

  /// At capacity, for an external sender (not the negation of [`Self::has_room`]: with a NaN capacity, neither).
  fn is_full(&self) -> bool {
    (self.queue.len() as f64) >= self.capacity
  }

  /// Whether a receive is waiting (a native one whose wait was dropped is not).
  fn has_receivers(&self) -> bool {
    self.receivers.iter().any(|receiver| !matches!(receiver, Receiver::Native(_, sender) if sender.is_closed()))
  }
}

/// The store's accounts of its waiters and of the values it holds.
#[derive(Default)]
struct Books {
  next: WaiterId,
  next_value: ValueId,
  /// The channel of each registered receiver, parked sender and wake.
  at: HashMap<WaiterId, HostKey>,
  /// How many places hold each value: a queue slot, a value channel's value, a parked sender, a native receiver
  /// that has not handed it to the host yet.
  holds: HashMap<ValueId, u32>,
  /// Values nothing holds any more, which the host lets go with the next plan.
  unheld: Vec<ValueId>,
}

impl Books {
  fn register(&mut self, name: &HostKey) -> WaiterId {
    loop {
      self.next = self.next.wrapping_add(1);
      if self.next != 0 && !self.at.contains_key(&self.next) {
        self.at.insert(self.next, name.clone());
        return self.next;
      }
    }
  }

  /// An id for a value sent: none the host may still hold a value under.
  fn value_id(&mut self) -> ValueId {
    loop {
      self.next_value = self.next_value.wrapping_add(1);
      if self.next_value != 0 && !self.holds.contains_key(&self.next_value) && !self.unheld.contains(&self.next_value) {
        return self.next_value;
      }
    }
  }

  fn hold(&mut self, value: ValueId) {
    *self.holds.entry(value).or_default() += 1;
  }

  fn unhold(&mut self, value: ValueId) {
    if let Some(count) = self.holds.get_mut(&value) {
      *count -= 1;
      if *count == 0 {
        self.holds.remove(&value);
        self.unheld.push(value);
      }
    }
  }
}

/// What reaches the store's native waiters, sent once the store is unlocked.
#[derive(Default)]
struct Deliveries {
  values: Vec<(oneshot::Sender<ValueId>, ValueId)>,
  wakes: Vec<oneshot::Sender<()>>,
}

#[derive(Default)]
struct Store {
  channels: HashMap<HostKey, Channel>,
  closed: HashSet<HostKey>,
  books: Books,
}

/// The channels of a harness (or of one `/internal/test` store). See the module's doc.
#[derive(Default)]
pub struct ChannelStore {
  store: Mutex<Store>,
}

/// A receive's timer: upstream's default when none is given, none for one that is not positive.
fn receive_timer(timeout: Option<f64>) -> Timer {
  match timeout {
    None => Timer::Ms(DEFAULT_TIMEOUT_MS),
    Some(ms) if ms > 0.0 => Timer::Given,
    Some(_) => Timer::Never,
  }
}

/// Hands `value` to every receiver of `channel` (a value channel's or a topic's send).
fn deliver_all(channel: &mut Channel, value: ValueId, books: &mut Books, plan: &mut Plan, out: &mut Deliveries) {
  for receiver in channel.receivers.drain(..) {
    books.at.remove(&receiver.id());
    match receiver {
      Receiver::Host(id) => plan.resolve.push(id),
      Receiver::Native(_, sender) if !sender.is_closed() => {
        books.hold(value);
        out.values.push((sender, value));
      }
      Receiver::Native(..) => {}
    }
  }
}

/// Hands `value` to the first receiver of a queue still waiting; false when there is none.
fn deliver_first(
  channel: &mut Channel,
  value: ValueId,
  books: &mut Books,
  plan: &mut Plan,
  out: &mut Deliveries,
) -> bool {
  while let Some(receiver) = channel.receivers.pop_front() {
    books.at.remove(&receiver.id());
    match receiver {
      Receiver::Host(id) => {
        plan.resolve.push(id);
        return true;
      }
      Receiver::Native(_, sender) if !sender.is_closed() => {
        books.hold(value);
        out.values.push((sender, value));
        return true;
      }
      Receiver::Native(..) => {}
    }
  }
  false
}

/// A receive took the head of a queue: the oldest parked sender's value takes the freed slot, and its send is through.
fn promote(channel: &mut Channel, books: &mut Books, plan: &mut Plan) {
  if channel.has_room()
    && let Some((id, value)) = channel.senders.pop_front()
  {
    books.at.remove(&id);
    channel.queue.push_back(value);
    plan.resolve.push(id);
  }
}

/// Every wake subscribed to `channel`, once: they are taken off before any is called, so one that subscribes again
/// waits for the next send.
fn fire_wakes(channel: &mut Channel, books: &mut Books, plan: &mut Plan, out: &mut Deliveries) {
  for wake in channel.wakes.drain(..) {
    books.at.remove(&wake.id());
    match wake {
      Wake::Host { id, .. } => plan.wakes.push(id),
      Wake::Native(_, sender) => out.wakes.push(sender),
    }
  }
}

impl Store {
  fn channel<'a>(channels: &'a mut HashMap<HostKey, Channel>, spec: &ChannelSpec) -> &'a mut Channel {
    channels.entry(spec.name.clone()).or_insert_with(|| Channel::new(spec))
  }

  fn send(&mut self, spec: &ChannelSpec, by: &SendBy, out: &mut Deliveries) -> Plan {
    let mut plan = Plan::default();
    let Self { channels, closed, books } = self;
    if let SendBy::Handle(execution) = by
      && closed.contains(execution)
    {
      plan.closed = true;
      return plan;
    }
    let value = books.value_id();
    let channel = Self::channel(channels, spec);
    let external = !matches!(by, SendBy::Internal { .. });
    if external && channel.mode == ChannelMode::Queue && !channel.has_receivers() && channel.is_full() {
      plan.warning = Some(format!(
        "[noetic] Channel '{}': queue at capacity ({}), dropping oldest message (external sender).",
        spec.label(),
        crate::js_number(channel.capacity)
      ));
      if let Some(oldest) = channel.queue.pop_front() {
        books.unhold(oldest);
      }
      channel.queue.push_back(value);
      books.hold(value);
    } else {
      match channel.mode {
        ChannelMode::Value => {
          books.hold(value);
          if let Some(last) = channel.value.replace(value) {
            books.unhold(last);
          }
          deliver_all(channel, value, books, &mut plan, out);
        }
        ChannelMode::Topic => deliver_all(channel, value, books, &mut plan, out),
        ChannelMode::Queue => {
          if deliver_first(channel, value, books, &mut plan, out) {
            // Handed to the first receiver waiting.
          } else if channel.has_room() {
            channel.queue.push_back(value);
            books.hold(value);
          } else {
            let (timeout, aborted) = match by {
              SendBy::Internal { timeout, aborted } => (*timeout, *aborted),
              _ => (None, false),
            };
            if aborted {
              plan.cancelled = true;
            } else {
              let id = books.register(&spec.name);
              channel.senders.push_back((id, value));
              books.hold(value);
              plan.wait = Some((id, receive_timer(timeout)));
            }
          }
        }
      }
    }
    fire_wakes(channel, books, &mut plan, out);
    plan.kept = books.holds.contains_key(&value).then_some(value);
    plan
  }

  fn recv(&mut self, spec: &ChannelSpec, timeout: Option<f64>, aborted: bool) -> Plan {
    let mut plan = Plan::default();
    if aborted {
      plan.cancelled = true;
      return plan;
    }
    let Self { channels, books, .. } = self;
    let channel = Self::channel(channels, spec);
    let timer = match channel.mode {
      ChannelMode::Value => match channel.value {
        Some(value) => {
          plan.value = Some(value);
          return plan;
        }
        None => receive_timer(timeout),
      },
      ChannelMode::Queue => {
        if let Some(head) = channel.queue.pop_front() {
          plan.value = Some(head);
          books.unhold(head);
          promote(channel, books, &mut plan);
          return plan;
        }
        // A queue of no capacity can have senders parked while it is empty: the oldest's value is taken at once.
        if let Some((id, value)) = channel.senders.pop_front() {
          books.at.remove(&id);
          plan.resolve.push(id);
          plan.value = Some(value);
          books.unhold(value);
          return plan;
        }
        receive_timer(timeout)
      }
      ChannelMode::Topic => match timeout {
        None => Timer::Ms(DEFAULT_TIMEOUT_MS),
        Some(ms) if ms > 0.0 => Timer::Given,
        Some(_) => {
          plan.warning = Some(format!(
            "[noetic] Channel '{}': topic recv with non-positive timeout, clamping to {}ms",
            spec.label(),
            crate::js_number(MAX_TOPIC_TIMEOUT_MS)
          ));
          Timer::Ms(MAX_TOPIC_TIMEOUT_MS)
        }
      },
    };
    let id = books.register(&spec.name);
    channel.receivers.push_back(Receiver::Host(id));
    plan.wait = Some((id, timer));
    plan
  }

  /// What is there now; a topic has nothing to give outside a receive.
  fn try_recv(&mut self, spec: &ChannelSpec) -> Plan {
    let mut plan = Plan::default();
    let Self { channels, books, .. } = self;
    let channel = Self::channel(channels, spec);
    match channel.mode {
      ChannelMode::Value => plan.value = channel.value,
      ChannelMode::Queue => {
        if let Some(head) = channel.queue.pop_front() {
          plan.value = Some(head);
          books.unhold(head);
          promote(channel, books, &mut plan);
        }
      }
      ChannelMode::Topic => {}
    }
    plan
  }

  /// Takes `id` out of its channel, if it is still there: its value (a parked sender's) is let go.
  fn cancel(&mut self, id: WaiterId) -> bool {
    let Self { channels, books, .. } = self;
    let Some(name) = books.at.remove(&id) else { return false };
    let Some(channel) = channels.get_mut(&name) else { return false };
    channel.receivers.retain(|receiver| receiver.id() != id);
    channel.wakes.retain(|wake| wake.id() != id);
    if let Some(at) = channel.senders.iter().position(|(sender, _)| *sender == id)
      && let Some((_, value)) = channel.senders.remove(at)
    {
      books.unhold(value);
    }
    true
  }
}

/// A value a native receiver took, with the parked senders the taking let through (the host resolves them).
#[derive(Debug, PartialEq)]
pub struct Taken {
  /// Held for the host until it has read it: it calls [`ChannelStore::release`] then.
  pub value: ValueId,
  pub resolve: Vec<WaiterId>,
}

/// A native receive: a value now, nothing, or a wait for the next send.
pub enum Take<'a> {
  Now(Taken),
  Nothing,
  Wait(Receive<'a>),
}

/// A native receiver waiting in its channel's list; dropped, it leaves the list (a value it was sent and never
/// read is let go).
pub struct Receive<'a> {
  store: &'a ChannelStore,
  id: WaiterId,
  receiver: oneshot::Receiver<ValueId>,
  done: bool,
}

impl Receive<'_> {
  /// The value a send gave it (held for the host until it has read it, as [`Taken`]'s).
  pub async fn value(&mut self) -> Taken {
    match (&mut self.receiver).await {
      Ok(value) => {
        self.done = true;
        Taken { value, resolve: Vec::new() }
      }
      Err(_) => std::future::pending().await,
    }
  }
}

impl Drop for Receive<'_> {
  fn drop(&mut self) {
    if self.done {
      return;
    }
    let mut store = self.store.lock();
    store.cancel(self.id);
    if let Ok(value) = self.receiver.try_recv() {
      store.books.unhold(value);
    }
  }
}

/// A native wake subscription; dropped, it is taken off.
pub struct WakeWait<'a> {
  store: &'a ChannelStore,
  id: WaiterId,
  receiver: oneshot::Receiver<()>,
}

impl WakeWait<'_> {
  /// Resolves on the next send to the channel.
  pub async fn fired(&mut self) {
    if (&mut self.receiver).await.is_err() {
      std::future::pending::<()>().await;
    }
  }
}

impl Drop for WakeWait<'_> {
  fn drop(&mut self) {
    self.store.lock().cancel(self.id);
  }
}

impl ChannelStore {
  pub fn new() -> Self {
    Self::default()
  }

  fn lock(&self) -> MutexGuard<'_, Store> {
    self.store.lock().unwrap_or_else(PoisonError::into_inner)
  }

  /// Sends what the store found to its native waiters, unlocked; a value a receiver dropped meanwhile is let go.
  fn deliver(&self, out: Deliveries) {
    for (sender, value) in out.values {
      if sender.send(value).is_err() {
        self.lock().books.unhold(value);
      }
    }
    for wake in out.wakes {
      let _ = wake.send(());
    }
  }

  /// Ends a plan: the values nothing holds any more go with it.
  fn finish(store: &mut Store, mut plan: Plan) -> Plan {
    plan.release.append(&mut store.books.unheld);
    plan
  }

  /// Sends a value on `spec`'s channel (the host keeps it under `kept`, if the store holds it).
  pub fn send(&self, spec: &ChannelSpec, by: SendBy) -> Plan {
    let mut out = Deliveries::default();
    let plan = {
      let mut store = self.lock();
      let plan = store.send(spec, &by, &mut out);
      Self::finish(&mut store, plan)
    };
    self.deliver(out);
    plan
  }

  /// The host's receive: registered now, so that a send right after counts. `timeout`: the caller's (none: the
  /// default); `aborted`: the caller's signal already is.
  pub fn recv(&self, spec: &ChannelSpec, timeout: Option<f64>, aborted: bool) -> Plan {
    let mut store = self.lock();
    let plan = store.recv(spec, timeout, aborted);
    Self::finish(&mut store, plan)
  }

  /// The host's receive that never waits.
  pub fn try_recv(&self, spec: &ChannelSpec) -> Plan {
    let mut store = self.lock();
    let plan = store.try_recv(spec);
    Self::finish(&mut store, plan)
  }

  /// A wake callback of the host (`callback`: its key for the function) on the next send to `spec`'s channel. The
  /// same function given again before that send is the same subscription.
  pub fn subscribe_wake(&self, spec: &ChannelSpec, callback: HostKey) -> WaiterId {
    let Store { channels, books, .. } = &mut *self.lock();
    let channel = Store::channel(channels, spec);
    let same = channel.wakes.iter().find_map(|wake| match wake {
      Wake::Host { id, callback: given } if *given == callback => Some(*id),
      _ => None,
    });
    same.unwrap_or_else(|| {
      let id = books.register(&spec.name);
      channel.wakes.push(Wake::Host { id, callback });
      id
    })
  }

  /// A waiter's timer or abort, or an unsubscribe: the values to let go if `id` was still pending (and is no more),
  /// `None` if it had been settled.
  pub fn cancel(&self, id: WaiterId) -> Option<Vec<ValueId>> {
    let mut store = self.lock();
    store.cancel(id).then(|| std::mem::take(&mut store.books.unheld))
  }

  /// The host has read a value the store gave a native receiver: the values it may let go now.
  pub fn release(&self, value: ValueId) -> Vec<ValueId> {
    let mut store = self.lock();
    store.books.unhold(value);
    std::mem::take(&mut store.books.unheld)
  }

  /// From now on the handles of `execution` are closed.
  pub fn close_execution(&self, execution: HostKey) {
    self.lock().closed.insert(execution);
  }

  pub fn is_closed(&self, execution: &HostKey) -> bool {
    self.lock().closed.contains(execution)
  }

  /// A loop's inbox: what is there (a value channel's value, a queue's head), or, with `wait`, as a receive does,
  /// a wait for the next send (the caller bounds it).
  pub fn take(&self, spec: &ChannelSpec, wait: bool) -> Take<'_> {
    let Store { channels, books, .. } = &mut *self.lock();
    let channel = Store::channel(channels, spec);
    let mut plan = Plan::default();
    match channel.mode {
      ChannelMode::Value => {
        if let Some(value) = channel.value {
          books.hold(value);
          return Take::Now(Taken { value, resolve: Vec::new() });
        }
      }
      ChannelMode::Queue => {
        // The value's hold passes from the queue (or the parked sender) to the taker.
        if let Some(value) = channel.queue.pop_front() {
          promote(channel, books, &mut plan);
          return Take::Now(Taken { value, resolve: plan.resolve });
        }
        if wait && let Some((id, value)) = channel.senders.pop_front() {
          books.at.remove(&id);
          return Take::Now(Taken { value, resolve: vec![id] });
        }
      }
      ChannelMode::Topic => {}
    }
    if !wait {
      return Take::Nothing;
    }
    let id = books.register(&spec.name);
    let (sender, receiver) = oneshot::channel();
    channel.receivers.push_back(Receiver::Native(id, sender));
    Take::Wait(Receive { store: self, id, receiver, done: false })
  }

  /// An `every`'s park: resolves on the next send to `spec`'s channel, without taking anything.
  pub fn wake(&self, spec: &ChannelSpec) -> WakeWait<'_> {
    let Store { channels, books, .. } = &mut *self.lock();
    let channel = Store::channel(channels, spec);
    let id = books.register(&spec.name);
    let (sender, receiver) = oneshot::channel();
    channel.wakes.push(Wake::Native(id, sender));
    WakeWait { store: self, id, receiver }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn queue(capacity: Option<f64>) -> ChannelSpec {
    ChannelSpec::named("q", ChannelMode::Queue, capacity)
  }
  fn value_channel() -> ChannelSpec {
    ChannelSpec::named("v", ChannelMode::Value, None)
  }
  fn topic() -> ChannelSpec {
    ChannelSpec::named("t", ChannelMode::Topic, None)
  }
  fn internal() -> SendBy {
    SendBy::Internal { timeout: None, aborted: false }
  }
  fn plan(f: impl FnOnce(&mut Plan)) -> Plan {
    let mut plan = Plan::default();
    f(&mut plan);
    plan
  }
  fn kept(id: ValueId) -> Plan {
    plan(|p| p.kept = Some(id))
  }
  fn callback(n: u32) -> HostKey {
    HostKey::Other(n)
  }

  #[test]
  fn a_value_channel_keeps_its_last_value_and_wakes_every_receiver() {
    let store = ChannelStore::new();
    let v = value_channel();
    assert_eq!(store.try_recv(&v), Plan::default());
    let first = store.recv(&v, Some(200.0), false);
    let second = store.recv(&v, None, false);
    assert_eq!(first.wait, Some((1, Timer::Given)));
    assert_eq!(second.wait, Some((2, Timer::Ms(DEFAULT_TIMEOUT_MS))));
    // Both receivers take the value, and it stays.
    assert_eq!(store.send(&v, internal()), plan(|p| (p.kept, p.resolve) = (Some(1), vec![1, 2])));
    assert_eq!(store.try_recv(&v).value, Some(1));
    assert_eq!(store.recv(&v, None, false).value, Some(1));
    // A new value replaces it: the old one is let go.
    assert_eq!(store.send(&v, internal()), plan(|p| (p.kept, p.release) = (Some(2), vec![1])));
    assert_eq!(store.try_recv(&v).value, Some(2));
  }

  #[test]
  fn a_queue_hands_a_send_to_its_first_receiver_or_keeps_it_in_order() {
    let store = ChannelStore::new();
    let q = queue(None);
    assert_eq!(store.recv(&q, Some(0.0), false).wait, Some((1, Timer::Never)));
    // Handed over: the receiver is resolved with it, and the store keeps nothing.
    assert_eq!(store.send(&q, internal()), plan(|p| p.resolve = vec![1]));
    assert_eq!(store.send(&q, internal()), kept(2));
    assert_eq!(store.send(&q, internal()), kept(3));
    assert_eq!(store.try_recv(&q), plan(|p| (p.value, p.release) = (Some(2), vec![2])));
    assert_eq!(store.recv(&q, None, false), plan(|p| (p.value, p.release) = (Some(3), vec![3])));
    assert_eq!(store.try_recv(&q), Plan::default());
  }

  #[test]
  fn a_full_queue_parks_its_sender_until_a_receive_frees_a_slot() {
    let store = ChannelStore::new();
    let q = queue(Some(1.0));
    store.send(&q, internal());
    let parked = store.send(&q, SendBy::Internal { timeout: Some(20.0), aborted: false });
    assert_eq!((parked.kept, parked.wait), (Some(2), Some((1, Timer::Given))));
    assert_eq!(store.send(&q, internal()).wait, Some((2, Timer::Ms(DEFAULT_TIMEOUT_MS))));
    // A receive takes the head; the oldest parked sender's value takes its slot and its send is through.
    assert_eq!(store.recv(&q, None, false), plan(|p| (p.value, p.resolve, p.release) = (Some(1), vec![1], vec![1])));
    assert_eq!(store.try_recv(&q), plan(|p| (p.value, p.resolve, p.release) = (Some(2), vec![2], vec![2])));
    assert_eq!(store.try_recv(&q).value, Some(3));
    // A parked sender that timed out: its value never enters the queue.
    store.send(&q, internal());
    let parked = store.send(&q, SendBy::Internal { timeout: Some(-1.0), aborted: false });
    assert_eq!((parked.kept, parked.wait), (Some(5), Some((3, Timer::Never))));
    assert_eq!(store.cancel(3), Some(vec![5]));
    assert_eq!(store.cancel(3), None);
    assert_eq!(store.try_recv(&q).value, Some(4));
    assert_eq!(store.try_recv(&q), Plan::default());
    // An aborted sender is not parked, and its value is not kept.
    store.send(&q, internal());
    assert_eq!(store.send(&q, SendBy::Internal { timeout: None, aborted: true }), plan(|p| p.cancelled = true));
  }

  #[test]
  fn a_queue_without_room_hands_a_parked_value_straight_to_a_receive_but_not_to_a_try() {
    let store = ChannelStore::new();
    let q = queue(Some(0.0));
    assert_eq!(store.send(&q, internal()).wait, Some((1, Timer::Ms(DEFAULT_TIMEOUT_MS))));
    assert_eq!(store.try_recv(&q), Plan::default());
    assert_eq!(store.recv(&q, None, false), plan(|p| (p.value, p.resolve, p.release) = (Some(1), vec![1], vec![1])));
  }

  #[test]
  fn a_topic_gives_each_send_to_every_receiver_and_clamps_a_wait_without_limit() {
    let store = ChannelStore::new();
    let t = topic();
    assert_eq!(store.recv(&t, None, false).wait, Some((1, Timer::Ms(DEFAULT_TIMEOUT_MS))));
    assert_eq!(store.recv(&t, Some(5.0), false).wait, Some((2, Timer::Given)));
    let clamped = store.recv(&t, Some(f64::NAN), false);
    assert_eq!(clamped.wait, Some((3, Timer::Ms(MAX_TOPIC_TIMEOUT_MS))));
    assert_eq!(
      clamped.warning.as_deref(),
      Some("[noetic] Channel 't': topic recv with non-positive timeout, clamping to 300000ms")
    );
    assert_eq!(store.cancel(2), Some(vec![]));
    // A topic keeps nothing.
    assert_eq!(store.send(&t, internal()), plan(|p| p.resolve = vec![1, 3]));
    assert_eq!(store.send(&t, internal()), Plan::default());
    assert_eq!(store.try_recv(&t), Plan::default());
  }

  #[test]
  fn an_aborted_receive_is_cancelled_before_its_channel_exists() {
    let store = ChannelStore::new();
    assert_eq!(store.recv(&queue(None), None, true), plan(|p| p.cancelled = true));
    // The first channel object seen under a name fixes the mode: here the value one, not the aborted queue.
    store.send(&ChannelSpec::named("q", ChannelMode::Value, None), internal());
    assert_eq!(store.try_recv(&queue(None)).value, Some(1));
    assert_eq!(store.try_recv(&queue(None)).value, Some(1));
  }

  #[test]
  fn the_first_channel_object_fixes_mode_and_capacity() {
    let store = ChannelStore::new();
    store.send(&queue(Some(1.0)), internal());
    // A later object with room for more changes nothing: the queue is full at one.
    assert!(store.send(&queue(Some(5.0)), internal()).wait.is_some());
    let other =
      ChannelSpec { name: HostKey::Other(1), label: Some("1".into()), mode: ChannelMode::Queue, capacity: None };
    // A name that is not a string is another channel than its text.
    assert_eq!(store.send(&other, internal()), kept(3));
    assert_eq!(store.try_recv(&ChannelSpec::named("1", ChannelMode::Queue, None)), Plan::default());
  }

  #[test]
  fn an_external_sender_never_waits_and_drops_the_oldest_value_of_a_full_queue() {
    let store = ChannelStore::new();
    let q = queue(Some(2.0));
    assert_eq!(store.send(&q, SendBy::External), kept(1));
    store.send(&q, SendBy::External);
    let dropped = store.send(&q, SendBy::External);
    assert_eq!((dropped.kept, dropped.release), (Some(3), vec![1]));
    assert_eq!(
      dropped.warning.as_deref(),
      Some("[noetic] Channel 'q': queue at capacity (2), dropping oldest message (external sender).")
    );
    assert_eq!(store.try_recv(&q).value, Some(2));
    assert_eq!(store.try_recv(&q).value, Some(3));
    // A receiver waiting takes it even when there is no room.
    let none = queue(Some(0.0));
    store.recv(&none, None, false);
    assert_eq!(store.send(&none, SendBy::External).resolve.len(), 1);
    // A capacity no length is below or at (NaN) parks even an external send, as JS's comparisons did.
    let never = ChannelSpec::named("never", ChannelMode::Queue, Some(f64::NAN));
    let parked = store.send(&never, SendBy::External);
    assert_eq!((parked.wait.map(|(_, timer)| timer), parked.warning), (Some(Timer::Ms(DEFAULT_TIMEOUT_MS)), None));
  }

  #[test]
  fn a_handle_of_a_closed_execution_sends_nothing() {
    let store = ChannelStore::new();
    let q = queue(None);
    let run = HostKey::Text("exec-1".into());
    assert!(!store.is_closed(&run));
    let wake = store.subscribe_wake(&q, callback(1));
    store.close_execution(run.clone());
    assert!(store.is_closed(&run));
    assert!(!store.is_closed(&HostKey::Other(1)));
    // Refused before anything: no wake fires, nothing is kept.
    assert_eq!(store.send(&q, SendBy::Handle(run)), plan(|p| p.closed = true));
    assert_eq!(store.send(&q, SendBy::Handle(HostKey::Text("exec-2".into()))).wakes, vec![wake]);
  }

  #[test]
  fn wakes_fire_once_on_the_next_send_of_any_mode() {
    let store = ChannelStore::new();
    let q = queue(Some(1.0));
    let first = store.subscribe_wake(&q, callback(7));
    // The same function again is the same subscription; another function is another.
    assert_eq!(store.subscribe_wake(&q, callback(7)), first);
    let second = store.subscribe_wake(&q, HostKey::Text("8".into()));
    let gone = store.subscribe_wake(&q, callback(9));
    assert_eq!(store.cancel(gone), Some(vec![]));
    assert_eq!(store.send(&q, internal()).wakes, vec![first, second]);
    assert_eq!(store.send(&q, internal()).wakes, Vec::<WaiterId>::new());
    // After a send the function subscribes anew; an unsubscribe of the fired one finds nothing.
    let third = store.subscribe_wake(&q, callback(7));
    assert_ne!(third, first);
    assert_eq!(store.cancel(first), None);
    // A parked send (above) and an external drop wake too.
    let again = store.send(&q, SendBy::External);
    assert_eq!((again.wakes, again.warning.is_some()), (vec![third], true));
    let v = value_channel();
    let on_value = store.subscribe_wake(&v, callback(7));
    assert_eq!(store.send(&v, internal()).wakes, vec![on_value]);
  }

  #[test]
  fn a_native_receiver_holds_its_value_until_the_host_has_read_it() {
    let store = ChannelStore::new();
    let v = value_channel();
    store.send(&v, internal());
    let Take::Now(taken) = store.take(&v, false) else { panic!("the value is there") };
    assert_eq!(taken, Taken { value: 1, resolve: vec![] });
    // Replaced while the host has not read it: kept until it has.
    assert_eq!(store.send(&v, internal()), kept(2));
    assert_eq!(store.release(1), vec![1]);
    // A queue's head goes to the taker, and the parked sender it lets through is the host's to resolve.
    let q = queue(Some(1.0));
    store.send(&q, internal());
    let parked = store.send(&q, internal()).wait.map(|(id, _)| id);
    let Take::Now(taken) = store.take(&q, false) else { panic!("the head is there") };
    assert_eq!(taken, Taken { value: 3, resolve: parked.into_iter().collect() });
    assert_eq!(store.release(3), vec![3]);
    assert!(matches!(store.take(&topic(), false), Take::Nothing));
  }

  #[tokio::test]
  async fn a_native_receiver_waits_in_line_and_leaves_it_when_dropped() {
    let store = ChannelStore::new();
    let q = queue(None);
    let Take::Wait(mut receive) = store.take(&q, true) else { panic!("nothing is there") };
    // It is the first receiver: the send goes to it, not to the host's receiver after it.
    let host = store.recv(&q, None, false).wait.map(|(id, _)| id);
    assert_eq!(store.send(&q, internal()), kept(1));
    assert_eq!(receive.value().await, Taken { value: 1, resolve: vec![] });
    assert_eq!(store.release(1), vec![1]);
    // Dropped, a waiting receiver leaves the line: the next send is the host's receiver's.
    let Take::Wait(receive) = store.take(&q, true) else { panic!("nothing is there") };
    drop(receive);
    assert_eq!(store.send(&q, internal()).resolve, host.into_iter().collect::<Vec<_>>());
    // Sent a value it never read, it lets the value go with the next plan.
    let t = topic();
    let Take::Wait(receive) = store.take(&t, true) else { panic!("a topic waits") };
    assert_eq!(store.send(&t, internal()), kept(3));
    drop(receive);
    assert_eq!(store.try_recv(&t).release, vec![3]);
  }

  #[tokio::test]
  async fn a_native_wake_fires_on_the_next_send_and_takes_nothing() {
    let store = ChannelStore::new();
    let q = queue(None);
    let mut wake = store.wake(&q);
    drop(store.wake(&q));
    store.send(&q, internal());
    wake.fired().await;
    assert_eq!(store.try_recv(&q).value, Some(1));
  }
}
