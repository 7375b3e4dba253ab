//! The in-memory subprocess adapter and the detached handle as their JS wrappers (`js/subprocess.cjs`,
//! `js/detached.cjs`) call them: sketches in, the runtime's answers out, one sync call per adapter call or look at an
//! adapter. Both cross as JSON text, which JS writes and reads several times faster than napi converts an object.
//! Internal: the wrappers are the public API. `adapters::subprocess` and `adapters::detached` decide.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde::Serialize;
use serde_json::{Value, json};

use noetic_runtime::adapters::detached::{DetachedWatch, Ending, Next, spawn_adapter};
use noetic_runtime::adapters::subprocess::{InMemorySubprocess, Layouts};
use noetic_runtime::js_date::iso_now;
use noetic_runtime::js_sketch::Sketch;
use noetic_runtime::js_text::from_js_json;

use crate::protocol::{config_json, noetic_json, to_napi};

fn json<T: Serialize>(value: T) -> Result<Value> {
  serde_json::to_value(value).map_err(|e| Error::from_reason(e.to_string()))
}

fn text<T: Serialize>(value: T) -> Result<String> {
  serde_json::to_string(&value).map_err(|e| Error::from_reason(e.to_string()))
}

/// A sketch as JSON text (`JSON.stringify(sketch(...))`).
fn read(sketch: &str) -> Result<Value> {
  from_js_json(sketch).map_err(|e| Error::from_reason(e.to_string()))
}

/// The layouts that depend on nothing but their source (`Layouts`), asked for once.
#[napi(catch_unwind, skip_typescript)]
pub fn subprocess_layouts() -> Result<Value> {
  json(Layouts::new())
}

/// Which adapter `detachedSpawn` hands its step to: `call`, `step` or `harness` (`spawn_adapter`).
#[napi(catch_unwind, skip_typescript)]
pub fn detached_adapter(call_given: bool, step_kind: String, step_given: bool) -> &'static str {
  spawn_adapter(call_given, &step_kind, step_given)
}

#[napi(js_name = "NativeSubprocessRegistry")]
pub struct NativeSubprocessRegistry {
  inner: InMemorySubprocess,
}

#[napi]
impl NativeSubprocessRegistry {
  /// `createInMemorySubprocessAdapter(options)`, from a sketch of the options (checked).
  #[napi(constructor, catch_unwind)]
  pub fn new(options: String) -> Result<Self> {
    let inner = InMemorySubprocess::new(Sketch::of(&read(&options)?)).map_err(|e| to_napi(config_json(&e)))?;
    Ok(Self { inner })
  }

  #[napi(getter)]
  pub fn runs_inline(&self) -> bool {
    self.inner.runs_inline()
  }

  /// `spawn(request)`, from a sketch of what it needs (`InMemorySubprocess::spawn`).
  #[napi(catch_unwind)]
  pub fn spawn(&mut self, facts: String) -> Result<String> {
    text(self.inner.spawn(Sketch::of(&read(&facts)?), &iso_now()).map_err(|e| to_napi(config_json(&e)))?)
  }

  #[napi(catch_unwind)]
  pub fn abandon(&mut self, id: String) {
    self.inner.abandon(&id);
  }

  /// A run ended, well (`ok`) or not (with its serialized error's `code`); `null` when nothing changed.
  #[napi(catch_unwind)]
  pub fn settle(&mut self, id: String, ok: bool, code: Option<String>) -> Result<String> {
    text(self.inner.settle(&id, ok, code.as_deref(), &iso_now()))
  }

  #[napi(catch_unwind)]
  pub fn stop(&mut self, id: String) -> Result<String> {
    text(self.inner.stop(&id, &iso_now()))
  }

  #[napi(catch_unwind)]
  pub fn unsupported(&self, what: String) -> String {
    InMemorySubprocess::unsupported(&what)
  }

  /// Where `reattach(handleId)` reads (a sketch of the id); `null` without storage.
  #[napi(catch_unwind)]
  pub fn manifest_key(&self, handle_id: String) -> Result<Option<String>> {
    Ok(self.inner.manifest_key(Sketch::of(&read(&handle_id)?)))
  }

  #[napi(catch_unwind)]
  pub fn reattach(&mut self, facts: String) -> Result<String> {
    text(self.inner.reattach(Sketch::of(&read(&facts)?), &iso_now()))
  }

  #[napi(catch_unwind)]
  pub fn listing(&self) -> Result<String> {
    text(self.inner.listing())
  }

  /// The handles of the manifests read (a sketch), those listed live by `listing` left out.
  #[napi(catch_unwind)]
  pub fn listed(&self, manifests: String, live: Vec<String>) -> Result<String> {
    text(self.inner.listed(Sketch::of(&read(&manifests)?), &live, &iso_now()))
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
  pub fn new(step_id: String, now: f64) -> Result<Self> {
    Ok(Self { inner: DetachedWatch::new(Sketch::of(&read(&step_id)?), now) })
  }

  /// How a handle reads, from a sketch of its facts: `{status: 'running' | 'completed'}`, or `{status: 'failed'}`
  /// with `rebuild` (the recorded error, rebuilt in JS) or `made` (an error as the native side reports one).
  #[napi(catch_unwind)]
  pub fn ending(&mut self, facts: String) -> Result<String> {
    text(match self.inner.ending(Sketch::of(&read(&facts)?)) {
      Ending::Running => json!({ "status": "running" }),
      Ending::Completed => json!({ "status": "completed" }),
      Ending::Failed(rebuild) => json!({ "status": "failed", "rebuild": json(rebuild)? }),
      Ending::FailedWith(error) => json!({ "status": "failed", "made": noetic_json(&error) }),
    })
  }

  /// A look while polling: whether `get` answered a handle (`found`) and the sketch of its status, after `repeats`
  /// looks taken on the last answer. Throws `handle_evicted`.
  #[napi(catch_unwind)]
  pub fn observe(&mut self, now: f64, found: bool, status: String, repeats: u32) -> Result<DetachedNext> {
    let status = read(&status)?;
    let status = found.then(|| Sketch::of(&status));
    let next = self.inner.observe(now, status, repeats).map_err(|e| to_napi(noetic_json(&e)))?;
    Ok(match next {
      Next::Ended => DetachedNext { ended: true, turns: 0, sleep_ms: 0.0 },
      Next::Turns(turns) => DetachedNext { ended: false, turns, sleep_ms: 0.0 },
      Next::Sleep(ms) => DetachedNext { ended: false, turns: 0, sleep_ms: ms },
    })
  }

  /// `await(timeout)` (sketched), checked: the error to reject with when it runs out (JSON text); `null` for no
  /// timer.
  #[napi(catch_unwind)]
  pub fn awaiting(&self, timeout: String) -> Result<Option<String>> {
    let late = self.inner.awaiting(Sketch::of(&read(&timeout)?)).map_err(|e| to_napi(config_json(&e)))?;
    late.as_ref().map(|error| text(noetic_json(error))).transpose()
  }

  /// `stop(reason)` (sketched), checked: the abort reason when none is given.
  #[napi(catch_unwind)]
  pub fn stopping(&self, reason: String) -> Result<String> {
    DetachedWatch::stopping(Sketch::of(&read(&reason)?)).map(str::to_owned).map_err(|e| to_napi(config_json(&e)))
  }
}
