//! A built-in hook or provided function called directly from JS (`layer.hooks.recall(...)`), one step at a time.
//! The JS face follows the steps with one loop (`js/builtin-layers.cjs`) and decides nothing: each step is to call
//! a native hook with the params gathered so far, to await something only the host has (a user callback, the
//! layer's saved state, a file read, the clock) and put its answer among the params, or to return.
//!
//! What a step returns is a *shape* over a list of values: JSON in which a string starting with `$` is filled in
//! by JS. `$N` is the N-th value; `$param:path` the very value user code passed at `path` (read as JS reads `a.b`
//! or `a?.b`), `$clone:path` a `structuredClone` of it, `$params` everything it passed; `$undefined`;
//! `$message:N` a developer message whose text is the N-th value; `$files:N` a fileReference state (the N-th
//! value) with its files as a `Map`; `$items:N` the N-th value, a list whose numbers stand for user code's items at
//! those positions; `$into:path:key:N` the object at `path` with `key` set to the N-th value, in place;
//! `$emptied:path:key` the object at `path` with its list `key` emptied in place. User data only ever travels as a
//! value, so nothing of the user's is read as a shape.
//!
//! A step's JSON: `{shape, values}` returns; `{call, with?}` calls the native hook `call`; `{ask, arg, values, key,
//! then, with?}` awaits the host's `ask` on `arg` (a shape over `values`), puts the answer under `key` (and `with`
//! beside it) and calls `then`, or without `then` returns `shape` over `[answer]`. A face's description of a hook
//! is its first step plus `params`: which of user code's params the native hook reads, under which name
//! (`{"items": "newItems"}`), and how JS passes a value JSON cannot carry as it is (`budget:num`).

use serde_json::{Map, Value, json};

use crate::error::ConfigError;
use crate::js_text::described_number;

/// Why a step failed: a message (the hook's error, thrown as an `Error`), or a config error.
#[derive(Debug)]
pub enum HookError {
  Failed(String),
  Config(ConfigError),
}

impl From<String> for HookError {
  fn from(message: String) -> Self {
    Self::Failed(message)
  }
}

/// Returns `shape` over `values`.
pub fn done(shape: Value, values: Vec<Value>) -> Value {
  json!({ "shape": shape, "values": values })
}

/// Returns the value itself.
pub fn value(value: Value) -> Value {
  done(json!("$0"), vec![value])
}

/// Returns `{state}`.
pub fn state(state: Value) -> Value {
  done(json!({ "state": "$0" }), vec![state])
}

/// Returns `{state}`, or nothing (`undefined`) for no state.
pub fn state_or_undefined(state: Option<Value>) -> Value {
  match state.filter(|state| !state.is_null()) {
    Some(state) => self::state(state),
    None => done(json!("$undefined"), vec![]),
  }
}

/// A recall's result: `{items: [developer message], tokenCount}`, or `null` for nothing to recall.
pub fn recalled(recalled: Option<(String, u64)>) -> Value {
  match recalled {
    Some((text, tokens)) => {
      done(json!({ "items": ["$message:0"], "tokenCount": "$1" }), vec![json!(text), json!(tokens)])
    }
    None => done(Value::Null, vec![]),
  }
}

/// Awaits the host's `ask` on `arg` (a shape over `values`), then calls `then` with its answer under `key` and
/// `with` beside it.
pub fn ask(ask: &str, arg: Value, values: Vec<Value>, key: &str, then: &str, with: Value) -> Value {
  json!({ "ask": ask, "arg": arg, "values": values, "key": key, "then": then, "with": with })
}

/// Awaits the host's `ask` on the value `arg` and returns `shape` over its answer (`$0`).
pub fn ask_and_return(ask: &str, arg: Value, shape: Value) -> Value {
  json!({ "ask": ask, "arg": "$0", "values": [arg], "shape": shape })
}

/// A description's first step: call `name` with what `params` reads (native name, `path[:coding]`).
pub fn calls(name: &str, params: &[(&str, &str)]) -> Value {
  json!({ "params": reads(params), "call": name })
}

/// A description's first step: return `shape` at once, with no crossing.
pub fn returns(shape: Value) -> Value {
  json!({ "shape": shape })
}

/// A description's first step: read what `params` reads, then await `ask` before calling `then` with the answer
/// under `key`; `arg` is a shape over nothing (what user code passed).
pub fn asks(params: &[(&str, &str)], ask: &str, arg: Value, key: &str, then: &str) -> Value {
  json!({ "params": reads(params), "ask": ask, "arg": arg, "key": key, "then": then })
}

/// `init` of a layer that keeps its state in storage: the saved state (under `saved`) to `initState`.
/// `optional`: user code may call it without params or without a storage (fileReference's `init()`).
pub fn init_from_storage(optional: bool) -> Value {
  let ask = if optional { "savedIfAny" } else { "saved" };
  asks(&[], ask, json!(["$params", crate::memory::STATE_KEY]), "saved", "initState")
}

fn reads(params: &[(&str, &str)]) -> Value {
  Value::Object(params.iter().map(|(key, from)| ((*key).to_owned(), json!(from))).collect())
}

/// A hook's params as JS passed them (a missing key reads as `null`, as JS's `?? null` gave it), and the settings
/// the face holds, which every call carries beside them.
#[derive(Clone, Copy)]
pub struct Params<'a> {
  values: &'a Value,
  config: &'a Value,
}

impl<'a> Params<'a> {
  pub fn new(values: &'a Value, config: &'a Value) -> Self {
    Self { values, config }
  }

  /// Params whose settings are their own `config` (tests).
  #[cfg(test)]
  pub fn with_config(values: &'a Value) -> Self {
    Self::new(values, values.get("config").unwrap_or(&Value::Null))
  }

  pub fn values(&self) -> &'a Value {
    self.values
  }

  pub fn get(&self, key: &str) -> &'a Value {
    self.values.get(key).unwrap_or(&Value::Null)
  }

  /// The value under `key` unless it is `null`.
  pub fn present(&self, key: &str) -> Option<&'a Value> {
    self.values.get(key).filter(|value| !value.is_null())
  }

  pub fn str(&self, key: &str) -> &'a str {
    self.get(key).as_str().unwrap_or_default()
  }

  pub fn bool(&self, key: &str) -> bool {
    self.get(key).as_bool().unwrap_or(false)
  }

  /// A number JSON carries, else `or`.
  pub fn f64_or(&self, key: &str, or: f64) -> f64 {
    self.get(key).as_f64().unwrap_or(or)
  }

  /// A number as JS describes it (NaN and ±Infinity as strings), else NaN.
  pub fn number(&self, key: &str) -> f64 {
    described_number(self.get(key)).unwrap_or(f64::NAN)
  }

  /// The list under `key`'s objects (other entries skipped).
  pub fn maps(&self, key: &str) -> Vec<&'a Map<String, Value>> {
    self.get(key).as_array().into_iter().flatten().filter_map(Value::as_object).collect()
  }

  pub fn config(&self) -> &'a Value {
    self.config
  }

  /// Which hook a continuation (`applyDistilled`, `applyExtracted`) finishes.
  pub fn origin(&self) -> &'a str {
    self.str("hook")
  }
}

/// An accumulating hook's end (observationalMemory's and temporalMemory's `store` and `onItemAppend`): `store`
/// returns `{state}` (nothing for no state); `onItemAppend` the items it was given, and the state beside them.
pub fn accumulated(origin: &str, next: Option<Value>) -> Value {
  let next = next.filter(|state| !state.is_null());
  match (origin, next) {
    ("onItemAppend", Some(next)) => done(json!({ "items": "$param:items", "state": "$0" }), vec![next]),
    ("onItemAppend", None) => done(json!({ "items": "$param:items" }), vec![]),
    (_, next) => state_or_undefined(next),
  }
}

/// A child starts from a copy of the parent's state, as upstream's `structuredClone(parentState)`.
pub fn cloned_parent() -> Value {
  returns(json!({ "childState": "$clone:parentState" }))
}

/// The error of a hook the kind does not have.
pub fn no_hook(kind: &str, hook: &str) -> HookError {
  HookError::Failed(format!("{kind} has no hook '{hook}'"))
}

/// `from`'s keys added to `into` (a provided function's description and its first step).
pub fn merge(into: &mut Value, from: Value) {
  if let (Some(into), Value::Object(from)) = (into.as_object_mut(), from) {
    into.extend(from);
  }
}

/// A face's hook run once on `params` (its settings among them), for the faces' tests.
#[cfg(test)]
pub fn run_step(hook: &str, params: Value, run: fn(&str, Params<'_>) -> Result<Value, HookError>) -> Value {
  run(hook, Params::with_config(&params)).expect("a step")
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn results_are_shapes_over_values() {
    assert_eq!(state_or_undefined(None), json!({ "shape": "$undefined", "values": [] }));
    assert_eq!(state_or_undefined(Some(Value::Null)), json!({ "shape": "$undefined", "values": [] }));
    assert_eq!(
      state_or_undefined(Some(json!({ "$0": 1 }))),
      json!({ "shape": { "state": "$0" }, "values": [{ "$0": 1 }] })
    );
    assert_eq!(recalled(None), json!({ "shape": null, "values": [] }));
    assert_eq!(
      recalled(Some(("<x>".into(), 2))),
      json!({ "shape": { "items": ["$message:0"], "tokenCount": "$1" }, "values": ["<x>", 2] })
    );
    assert_eq!(accumulated("onItemAppend", None), json!({ "shape": { "items": "$param:items" }, "values": [] }));
    assert_eq!(accumulated("store", Some(json!(1)))["shape"], json!({ "state": "$0" }));
  }

  #[test]
  fn params_read_as_js_passed_them() {
    let given = json!({ "state": null, "budget": "Infinity", "n": 3, "items": [{ "a": 1 }, 2, { "b": 2 }] });
    let params = Params::new(&given, &Value::Null);
    assert_eq!((params.get("absent"), params.present("state")), (&Value::Null, None));
    assert_eq!(
      (params.number("budget"), params.number("n"), params.number("absent").is_nan()),
      (f64::INFINITY, 3.0, true)
    );
    assert_eq!(params.maps("items").len(), 2);
    assert_eq!(init_from_storage(true)["ask"], "savedIfAny");
    assert_eq!(init_from_storage(false)["arg"], json!(["$params", "state"]));
  }
}
