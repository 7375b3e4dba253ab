//! `NativeChannels`: the runtime's channel store (`harness/channels.rs`) for a JS `ChannelStore`, which keeps the
//! values, the promises and their timers. Each call converts its arguments and the store's plan; nothing is decided
//! here.

use std::sync::Arc;

use napi::Either;
use napi_derive::napi;
use noetic_runtime::harness::ChannelStore;
use noetic_runtime::harness::channels::{Plan, SendBy, Timer};
use noetic_runtime::steps::{ChannelMode, ChannelSpec, HostKey};
use serde_json::Value;

/// A channel store of the runtime's (internal: use `ChannelStore`).
#[napi]
pub struct NativeChannels {
  pub(crate) inner: Arc<ChannelStore>,
}

/// A channel object as JS reads it: its name (a string, or the number JS keys another value by), `String(name)` for
/// such a name, its mode when a string, and its capacity as a number.
#[napi(object)]
pub struct JsChannel {
  pub name: Either<String, u32>,
  pub label: Option<String>,
  pub mode: Option<String>,
  pub capacity: Option<f64>,
}

/// What the store answered (`Plan` in harness/channels.rs): `timer` is the waiter's timeout in ms, or, with
/// `timerGiven`, the caller's own.
#[napi(object)]
pub struct ChannelPlan {
  pub kept: Option<u32>,
  pub value: Option<u32>,
  pub waiter: Option<u32>,
  pub timer: Option<f64>,
  pub timer_given: bool,
  pub cancelled: bool,
  pub closed: bool,
  pub resolve: Vec<u32>,
  pub wakes: Vec<u32>,
  pub release: Vec<u32>,
  pub warning: Option<String>,
}

fn key(name: Either<String, u32>) -> HostKey {
  match name {
    Either::A(text) => HostKey::Text(text),
    Either::B(id) => HostKey::Other(id),
  }
}

fn spec(channel: JsChannel) -> ChannelSpec {
  ChannelSpec {
    name: key(channel.name),
    label: channel.label,
    mode: ChannelMode::parse(channel.mode.as_deref()),
    capacity: channel.capacity,
  }
}

/// A channel of a step description (a loop's `inbox`, an `every`'s `wakeOn`), as `JsChannel` but in JSON.
pub(crate) fn spec_of_json(value: &Value) -> Option<ChannelSpec> {
  let name = match value.get("name")? {
    Value::String(text) => HostKey::Text(text.clone()),
    other => HostKey::Other(u32::try_from(other.as_u64()?).ok()?),
  };
  Some(ChannelSpec {
    name,
    label: value.get("label").and_then(Value::as_str).map(str::to_owned),
    mode: ChannelMode::parse(value.get("mode").and_then(Value::as_str)),
    capacity: value.get("capacity").and_then(crate::protocol::number),
  })
}

fn plan(plan: Plan) -> ChannelPlan {
  let (waiter, timer) = match plan.wait {
    Some((id, timer)) => (Some(id), Some(timer)),
    None => (None, None),
  };
  ChannelPlan {
    kept: plan.kept,
    value: plan.value,
    waiter,
    timer: match timer {
      Some(Timer::Ms(ms)) => Some(ms),
      _ => None,
    },
    timer_given: timer == Some(Timer::Given),
    cancelled: plan.cancelled,
    closed: plan.closed,
    resolve: plan.resolve,
    wakes: plan.wakes,
    release: plan.release,
    warning: plan.warning,
  }
}

#[napi]
impl NativeChannels {
  #[napi(constructor)]
  #[allow(clippy::new_without_default)]
  pub fn new() -> Self {
    Self { inner: Arc::new(ChannelStore::new()) }
  }

  /// A send: a step's (back-pressured; `timeout`: the caller's, as a number) or, `external`, one from outside any
  /// run, a handle's when `execution` is given.
  #[napi(catch_unwind)]
  pub fn send(
    &self,
    channel: JsChannel,
    timeout: Option<f64>,
    aborted: bool,
    external: bool,
    execution: Option<Either<String, u32>>,
  ) -> ChannelPlan {
    let by = match (external, execution) {
      (false, _) => SendBy::Internal { timeout, aborted },
      (true, None) => SendBy::External,
      (true, Some(execution)) => SendBy::Handle(key(execution)),
    };
    plan(self.inner.send(&spec(channel), by))
  }

  #[napi(catch_unwind)]
  pub fn recv(&self, channel: JsChannel, timeout: Option<f64>, aborted: bool) -> ChannelPlan {
    plan(self.inner.recv(&spec(channel), timeout, aborted))
  }

  #[napi(catch_unwind)]
  pub fn try_recv(&self, channel: JsChannel) -> ChannelPlan {
    plan(self.inner.try_recv(&spec(channel)))
  }

  /// `callback`: JS's key for the function.
  #[napi(catch_unwind)]
  pub fn subscribe_wake(&self, channel: JsChannel, callback: Either<String, u32>) -> u32 {
    self.inner.subscribe_wake(&spec(channel), key(callback))
  }

  /// The values to let go when `id` was still pending; nothing when it had been settled.
  #[napi(catch_unwind)]
  pub fn cancel(&self, id: u32) -> Option<Vec<u32>> {
    self.inner.cancel(id)
  }

  #[napi(catch_unwind)]
  pub fn release(&self, value: u32) -> Vec<u32> {
    self.inner.release(value)
  }

  #[napi(catch_unwind)]
  pub fn close_execution(&self, execution: Either<String, u32>) {
    self.inner.close_execution(key(execution));
  }

  #[napi(catch_unwind)]
  pub fn is_closed(&self, execution: Either<String, u32>) -> bool {
    self.inner.is_closed(&key(execution))
  }
}
