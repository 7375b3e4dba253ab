//! A detached run's handle (upstream's `DetachedHandle`) as the runtime follows it: how a handle its adapter
//! answers reads (running, completed, or failed with which error), when the adapter is asked again, when a handle
//! it no longer finds counts as evicted, and the errors an `await` or a `stop` gives. JS (`js/detached.cjs`) calls
//! the adapter, awaits, and keeps what user code reads (DECISIONS M21).

use serde::Serialize;
use serde_json::{Value, json};

use super::subprocess::SubprocessStatus;
use crate::js_layout::{Layout, copy};
use crate::js_sketch::Sketch;
use crate::steps::builders::check_timeout;
use crate::{ConfigError, NoeticError, js_number};

/// Upstream's cadence: microtask turns first (an in-process step often ends within a few), then timers, slower
/// once a second has gone by since the handle was made.
pub const MICROTASK_TURNS: u32 = 64;
pub const FIRST_POLL_MS: f64 = 10.0;
pub const LATER_POLL_MS: f64 = 100.0;
pub const RAMP_AFTER_MS: f64 = 1_000.0;
/// How long an adapter may answer `get` with null before the handle counts as evicted.
pub const EVICTED_AFTER_MS: u32 = 500;

/// What the abort of a stopped run says when `stop()` was given no reason.
pub const DEFAULT_STOP_REASON: &str = "detached spawn stopped";

/// When to look at the adapter again.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Next {
  /// The handle has ended.
  Ended,
  /// After a microtask turn. The answer holds for `turns` looks in all, this one included, while the adapter
  /// answers the status it was given for this one: JS need not ask again for each.
  Turns(u32),
  /// After a timer of this many milliseconds.
  Sleep(f64),
}

/// How a handle an adapter answered reads.
#[derive(Debug, PartialEq)]
pub enum Ending {
  Running,
  Completed,
  /// Failed with the error the adapter recorded, which JS rebuilds as this says.
  Failed(Rebuild),
  /// Failed with no error recorded: the error made here.
  FailedWith(NoeticError),
}

/// How JS rebuilds the error an adapter recorded in a handle's `metadata.error` (the *payload*).
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "from", rename_all = "camelCase")]
pub enum Rebuild {
  /// `new NoeticErrorImpl(payload.noeticError)`: a NoeticError's structured payload, so its kind is kept.
  NoeticError,
  /// `new NoeticConfigError({ code: payload.code, message: String(payload.message), hint: payload.hint })`.
  ConfigError,
  /// `new Error(String(payload))`: a payload that is not an object.
  Text,
  /// `new Error(message ?? payload.message)` with `fields` (source: the payload) set on it.
  Error {
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'static str>,
    fields: Layout,
  },
}

/// One detached handle, followed. Its step's and handle's ids are kept as sketched: JS values the errors made here
/// carry (as JSON) and name (as JS prints them).
#[derive(Debug)]
pub struct DetachedWatch {
  step_id: Value,
  handle_id: Option<Value>,
  made_ms: f64,
  /// Looks at the adapter so far, of those polling makes.
  looks: u32,
  sleeps: u32,
  ramped: bool,
  null_since: Option<f64>,
}

impl DetachedWatch {
  /// A handle for the step `step_id` (a sketch), made at `now_ms` (JS's `Date.now()`, which a user's fake timers
  /// move as they move its timers).
  pub fn new(step_id: Sketch, now_ms: f64) -> Self {
    Self {
      step_id: step_id.sketched().cloned().unwrap_or(Value::Null),
      handle_id: None,
      made_ms: now_ms,
      looks: 0,
      sleeps: 0,
      ramped: false,
      null_since: None,
    }
  }

  /// How a handle the adapter answered reads. `facts` is a sketch one level deep of the handle's `status`, `id` and
  /// `metadata.stopReason`, of its `metadata.error` (the payload) and of the payload's `message`, `name`, `stack`,
  /// `code`, `noeticError` and `noeticError.kind`, read as JS reads properties (an Error's message is no own key).
  /// The first handle read names the id that an eviction reports.
  pub fn ending(&mut self, facts: Sketch) -> Ending {
    if self.handle_id.is_none() {
      self.handle_id = Some(facts.field("id").sketched().cloned().unwrap_or(Value::Null));
    }
    let status = facts.field("status");
    if !ended(status) {
      return Ending::Running;
    }
    if status.as_str() == Some(SubprocessStatus::Completed.as_str()) {
      return Ending::Completed;
    }
    let payload = facts.field("error");
    if payload.is_undefined() {
      let reason = facts.field("stopReason");
      let message = match status.as_str() {
        Some("stopped") if reason.is_truthy() => format!("Detached spawn was stopped: {}", reason.js_string()),
        Some("stopped") => "Detached spawn was stopped".to_owned(),
        _ => "Detached spawn failed without an error payload".to_owned(),
      };
      return Ending::FailedWith(self.step_failed(&message));
    }
    let text = |key| facts.field(key).as_str();
    Ending::Failed(if !payload.is_object() {
      Rebuild::Text
    } else if facts.field("noeticError").is_object() && text("noeticKind").is_some() {
      Rebuild::NoeticError
    } else if text("name") == Some("NoeticConfigError") && text("code").is_some() {
      Rebuild::ConfigError
    } else {
      let fields = ["name", "stack"].into_iter().filter(|key| text(key).is_some()).map(copy).collect();
      Rebuild::Error { message: text("message").is_none().then_some("unknown error"), fields }
    })
  }

  /// A look at the adapter while polling, at `now_ms`: the status of the handle `get` answered (`None` for null),
  /// after `repeats` looks JS took on the last answer. `Err` once the adapter has answered null for the grace period.
  pub fn observe(&mut self, now_ms: f64, status: Option<Sketch>, repeats: u32) -> Result<Next, NoeticError> {
    self.looks += repeats;
    match status {
      Some(status) if ended(status) => return Ok(Next::Ended),
      Some(_) => self.null_since = None,
      None => {
        let since = *self.null_since.get_or_insert(now_ms);
        if now_ms - since >= f64::from(EVICTED_AFTER_MS) {
          return Err(self.evicted());
        }
      }
    }
    if self.looks < MICROTASK_TURNS {
      self.looks += 1;
      // A null must be looked at each time, for the grace period.
      return Ok(Next::Turns(if status.is_some() { MICROTASK_TURNS - self.looks + 1 } else { 1 }));
    }
    // As upstream, the first timer is the short one whatever the time, and once slower it stays slower.
    self.ramped |= self.sleeps > 0 && now_ms - self.made_ms >= RAMP_AFTER_MS;
    self.sleeps += 1;
    Ok(Next::Sleep(if self.ramped { LATER_POLL_MS } else { FIRST_POLL_MS }))
  }

  /// `await(timeout)`: the timeout checked, and the error the wait rejects with when it runs out; none when it waits
  /// as long as the run takes (no timeout, and as upstream 0; and Infinity).
  pub fn awaiting(&self, timeout: Sketch) -> Result<Option<NoeticError>, ConfigError> {
    check_timeout(timeout, "DetachedHandle.await")?;
    Ok(match timeout.as_number() {
      Some(ms) if ms > 0.0 && ms.is_finite() => {
        Some(self.step_failed(&format!("Detached spawn timed out after {}ms", js_number(ms))))
      }
      _ => None,
    })
  }

  /// `stop(reason)`: the reason checked (a string, or nothing), and the abort reason of the run when none is given.
  pub fn stopping(reason: Sketch) -> Result<&'static str, ConfigError> {
    if !reason.is_undefined() && reason.as_str().is_none() {
      return Err(ConfigError::new(
        "INVALID_STOP_REASON",
        format!("DetachedHandle.stop(reason): reason is {}; expected a string.", reason.described()),
        "Pass a string such as 'no longer needed', or nothing.",
      ));
    }
    Ok(DEFAULT_STOP_REASON)
  }

  /// Upstream's `step_failed` of a detached spawn: not retried.
  fn step_failed(&self, message: &str) -> NoeticError {
    let step = Sketch::of(&self.step_id);
    let payload = json!({ "stepId": json_of(step), "cause": { "message": message }, "retriesExhausted": false });
    NoeticError::new("step_failed", payload, format!("Step '{}' failed: {message}", step.js_string()))
  }

  fn evicted(&self) -> NoeticError {
    let (step, handle) = (Sketch::of(&self.step_id), self.handle_id.as_ref().map_or(Sketch::undefined(), Sketch::of));
    let message = format!(
      "Subprocess handle '{}' evicted (step '{}'): adapter returned null for {EVICTED_AFTER_MS}ms",
      handle.js_string(),
      step.js_string()
    );
    let payload = json!({ "handleId": json_of(handle), "stepId": json_of(step), "gracePeriodMs": EVICTED_AFTER_MS });
    NoeticError::new("handle_evicted", payload, message)
  }
}

/// Which adapter `detachedSpawn` hands its step to (upstream's `resolveStepAdapter`): the call's (`call`), else a
/// run's or a spawn's own (`step`), else the harness's (`harness`).
pub fn spawn_adapter(call_given: bool, step_kind: &str, step_given: bool) -> &'static str {
  if call_given {
    "call"
  } else if step_given && matches!(step_kind, "run" | "spawn") {
    "step"
  } else {
    "harness"
  }
}

/// A sketched value in an error's payload: itself when JSON holds it, else `null`.
fn json_of(value: Sketch) -> Value {
  value.plain().cloned().unwrap_or(Value::Null)
}

/// Whether a status is one a handle ends in (upstream's terminal statuses).
fn ended(status: Sketch) -> bool {
  status.as_str().and_then(SubprocessStatus::parse).is_some_and(SubprocessStatus::is_terminal)
}

#[cfg(test)]
mod tests;
