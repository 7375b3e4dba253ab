//! The in-memory subprocess adapter and the detached handle as their JS wrappers (`js/subprocess.cjs`,
//! `js/detached.cjs`) call them: sketches in, the runtime's answers out as JSON, one sync call per adapter call or
//! look at an adapter. Internal: the wrappers are the public API. `adapters::subprocess` and `adapters::detached`
//! decide.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde::Serialize;
use serde_json::{Value, json};

use noetic_runtime::adapters::detached::{DetachedWatch, Ending, Next};
use noetic_runtime::adapters::subprocess::{InMemorySubprocess, serialized_error, serialized_value};
use noetic_runtime::js_date::iso_now;
use noetic_runtime::js_sketch::Sketch;

use crate::protocol::{config_json, noetic_json, to_napi};

fn json<T: Serialize>(value: T) -> Result<Value> {
  serde_json::to_value(value).map_err(|e| Error::from_reason(e.to_string()))
}

/// The layouts of upstream's `SerializedError`: `{ error, value }` for an `Error` and for anything else thrown.
#[napi(catch_unwind, skip_typescript)]
pub fn serialized_error_layouts() -> Result<Value> {
  Ok(json!({ "error": json(serialized_error())?, "value": json(serialized_value())? }))
}

#[napi(js_name = "NativeSubprocessRegistry")]
pub struct NativeSubprocessRegistry {
  inner: InMemorySubprocess,
}

#[napi]
impl NativeSubprocessRegistry {
  /// `createInMemorySubprocessAdapter(options)`, from a sketch of the options (checked).
  #[napi(constructor, catch_unwind)]
  pub fn new(options: Value) -> Result<Self> {
    let inner = InMemorySubprocess::new(Sketch::of(&options)).map_err(|e| to_napi(config_json(&e)))?;
    Ok(Self { inner })
  }

  #[napi(getter)]
  pub fn runs_inline(&self) -> bool {
    self.inner.runs_inline()
  }

  /// `spawn(request)`, from a sketch of what it needs (`InMemorySubprocess::spawn`).
  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn spawn(&mut self, facts: Value) -> Result<Value> {
    json(self.inner.spawn(Sketch::of(&facts), &iso_now()).map_err(|e| to_napi(config_json(&e)))?)
  }

  #[napi(catch_unwind)]
  pub fn abandon(&mut self, id: String) {
    self.inner.abandon(&id);
  }

  /// A run ended, well (`ok`) or not (with its serialized error's `code`); `null` when nothing changed.
  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn settle(&mut self, id: String, ok: bool, code: Option<String>) -> Result<Value> {
    json(self.inner.settle(&id, ok, code.as_deref(), &iso_now()))
  }

  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn stop(&mut self, id: String) -> Result<Value> {
    json(self.inner.stop(&id, &iso_now()))
  }

  #[napi(catch_unwind)]
  pub fn unsupported(&self, what: String) -> String {
    InMemorySubprocess::unsupported(&what)
  }

  /// Where `reattach(handleId)` reads (a sketch of the id); `null` without storage.
  #[napi(catch_unwind)]
  pub fn manifest_key(&self, handle_id: Value) -> Option<String> {
    self.inner.manifest_key(Sketch::of(&handle_id))
  }

  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn reattach(&mut self, facts: Value) -> Result<Value> {
    json(self.inner.reattach(Sketch::of(&facts), &iso_now()))
  }

  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn listing(&self) -> Result<Value> {
    json(self.inner.listing())
  }

  /// The handles of the manifests read (a sketch), those listed live by `listing` left out.
  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn listed(&self, manifests: Value, live: Vec<String>) -> Result<Value> {
    json(self.inner.listed(Sketch::of(&manifests), &live, &iso_now()))
  }

  #[napi(catch_unwind)]
  pub fn is_alive(&self, id: String) -> bool {
    self.inner.is_alive(&id)
  }

  #[napi(catch_unwind)]
  pub fn has_ended(&self, id: String) -> bool {
    self.inner.has_ended(&id)
  }
}

/// When to look at the adapter again: `ended`; or after a microtask turn, the answer holding for `turns` looks
/// while the status stays the same; or after `sleepMs`.
#[napi(object, js_name = "NativeDetachedNext")]
pub struct DetachedNext {
  pub ended: bool,
  pub turns: u32,
  pub sleep_ms: f64,
}

#[napi(js_name = "NativeDetachedWatch")]
pub struct NativeDetachedWatch {
  inner: DetachedWatch,
}

#[napi]
impl NativeDetachedWatch {
  /// A handle for the step whose id is sketched, made at `now` (`Date.now()`).
  #[napi(constructor, catch_unwind)]
  pub fn new(step_id: Value, now: f64) -> Self {
    Self { inner: DetachedWatch::new(Sketch::of(&step_id), now) }
  }

  /// How a handle reads, from a sketch of its facts: `{status: 'running' | 'completed'}`, or `{status: 'failed'}`
  /// with `rebuild` (the recorded error, rebuilt in JS) or `made` (an error as the native side reports one).
  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn ending(&mut self, facts: Value) -> Result<Value> {
    Ok(match self.inner.ending(Sketch::of(&facts)) {
      Ending::Running => json!({ "status": "running" }),
      Ending::Completed => json!({ "status": "completed" }),
      Ending::Failed(rebuild) => json!({ "status": "failed", "rebuild": json(rebuild)? }),
      Ending::FailedWith(error) => json!({ "status": "failed", "made": noetic_json(&error) }),
    })
  }

  /// A look while polling: whether `get` answered a handle (`found`) and the sketch of its status, after `repeats`
  /// looks taken on the last answer. Throws `handle_evicted`.
  #[napi(catch_unwind)]
  pub fn observe(&mut self, now: f64, found: bool, status: Value, repeats: u32) -> Result<DetachedNext> {
    let status = found.then(|| Sketch::of(&status));
    let next = self.inner.observe(now, status, repeats).map_err(|e| to_napi(noetic_json(&e)))?;
    Ok(match next {
      Next::Ended => DetachedNext { ended: true, turns: 0, sleep_ms: 0.0 },
      Next::Turns(turns) => DetachedNext { ended: false, turns, sleep_ms: 0.0 },
      Next::Sleep(ms) => DetachedNext { ended: false, turns: 0, sleep_ms: ms },
    })
  }

  /// `await(timeout)` (sketched), checked: the error to reject with when it runs out; `null` for no timer.
  #[napi(catch_unwind, ts_return_type = "any")]
  pub fn awaiting(&self, timeout: Value) -> Result<Option<Value>> {
    let late = self.inner.awaiting(Sketch::of(&timeout)).map_err(|e| to_napi(config_json(&e)))?;
    Ok(late.as_ref().map(noetic_json))
  }

  /// `stop(reason)` (sketched), checked: the abort reason when none is given.
  #[napi(catch_unwind)]
  pub fn stopping(&self, reason: Value) -> Result<String> {
    DetachedWatch::stopping(Sketch::of(&reason)).map(str::to_owned).map_err(|e| to_napi(config_json(&e)))
  }
}
