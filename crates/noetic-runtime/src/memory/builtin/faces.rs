//! What a built-in layer's factory (`workingMemory(config)`, `steering(config)`, ...) answers its JS face in one
//! call: the config, read from a sketch of what the user gave and checked, as the settings JS holds and hands back
//! to the hooks and the harness; and the metadata of upstream's layer object (`id`, `name`, `slot`, `scope`,
//! `budget`, `timeouts`, in upstream's key order and with only the keys upstream's object has), read from the same
//! [`LayerSpec`] the harness runs the layer with.

use serde_json::{Map, Value, json};

use super::{
  durable_task_state as dts, file_reference as fr, history_window as hw, observational_memory as om,
  plan_memory as plan, static_content as sc, steering as st, temporal_memory as tm, working_memory as wm,
};
use crate::error::ConfigError;
use crate::js_sketch::Sketch;
use crate::memory::{BudgetConfig, HookKind, LayerSpec};

/// Which of the metadata keys a layer object shows besides `id`, `slot` and `scope`.
#[derive(Default)]
struct Shown<'a> {
  name: Option<&'a str>,
  budget: bool,
  /// fileReference's `rerenderTiming`, which upstream places between `budget` and `timeouts`.
  rerender_timing: Option<&'a str>,
  /// The scope as the object shows it, when that is not the one the layer runs with (see [`given_scope`]).
  scope: Option<Value>,
}

/// Upstream's layer object's metadata for `spec`; `timeouts` only when the layer sets any, in hook order.
fn metadata(spec: &LayerSpec, shown: Shown<'_>) -> Value {
  let mut out = Map::new();
  out.insert("id".into(), json!(spec.id));
  if let Some(name) = shown.name {
    out.insert("name".into(), json!(name));
  }
  out.insert("slot".into(), json!(spec.slot));
  out.insert("scope".into(), shown.scope.unwrap_or_else(|| json!(spec.scope.as_str())));
  if shown.budget {
    let budget = match spec.budget {
      BudgetConfig::Range { min, max } => json!({ "min": min, "max": max }),
      BudgetConfig::Fixed(tokens) => json!(tokens),
      BudgetConfig::Auto => json!("auto"),
    };
    out.insert("budget".into(), budget);
  }
  if let Some(timing) = shown.rerender_timing {
    out.insert("rerenderTiming".into(), json!(timing));
  }
  let timeouts: Map<String, Value> = HookKind::ALL
    .into_iter()
    .filter_map(|hook| spec.timeouts[hook as usize].map(|ms| (hook.name().to_owned(), json!(ms))))
    .collect();
  if !timeouts.is_empty() {
    out.insert("timeouts".into(), Value::Object(timeouts));
  }
  Value::Object(out)
}

/// workingMemory's and observationalMemory's objects show the scope as given (upstream's `config.scope ?? default`),
/// though the layer runs with the default when it does not know it; a value JSON cannot carry shows the default.
fn given_scope(given: Sketch<'_>) -> Option<Value> {
  let scope = given.field("scope");
  scope.plain().filter(|_| !scope.is_nullish()).cloned()
}

/// `{settings, layer}` for the built-in `kind` from a sketch of its config; `cwd` is where a relative
/// fileReference `baseDir` is taken from. `None` for a kind that is not a built-in.
/// A built-in hook called directly from JS with `params` the native call could not take: the error naming the
/// first value that is not JSON, or none when every value is (the failure was something else).
pub fn hook_params_error(kind: &str, hook: &str, params: Sketch<'_>) -> Option<ConfigError> {
  let problem = params.first_non_json("params")?;
  Some(ConfigError::new(
    "INVALID_HOOK_PARAMS",
    format!("{kind} hooks.{hook}: {problem}; built-in hooks take JSON values."),
    "Pass items and state as plain JSON objects.",
  ))
}

pub fn builtin_layer(kind: &str, given: Sketch<'_>, cwd: &str) -> Option<Result<Value, ConfigError>> {
  let named = |name| Shown { name: Some(name), budget: true, ..Shown::default() };
  let answer = |settings: Value, layer: Value| json!({ "settings": settings, "layer": layer });
  Some(Ok(match kind {
    wm::ID => {
      let config = wm::config_from(given);
      let shown = Shown { scope: given_scope(given), ..named(wm::NAME) };
      answer(wm::config_json(&config), metadata(&wm::layer_spec(&config), shown))
    }
    om::ID => {
      let config = om::config_from(given);
      let shown = Shown { scope: given_scope(given), ..named(om::NAME) };
      answer(om::config_json(&config), metadata(&om::layer_spec(&config), shown))
    }
    dts::ID => answer(json!({}), metadata(&dts::layer_spec(), named(dts::NAME))),
    sc::DEFAULT_ID => match sc::config_from(given) {
      Ok(config) => answer(sc::config_json(&config), metadata(&sc::layer_spec(&config), Shown::default())),
      Err(error) => return Some(Err(error)),
    },
    hw::ID => match hw::max_items_from(given) {
      Ok(max_items) => {
        let shown = Shown { name: Some(hw::NAME), ..Shown::default() };
        answer(json!({ "maxItems": max_items }), metadata(&hw::layer_spec(), shown))
      }
      Err(error) => return Some(Err(error)),
    },
    plan::ID => match plan::config_from(given) {
      Ok(config) => answer(plan::config_json(&config), metadata(&plan::layer_spec(&config), named(plan::NAME))),
      Err(error) => return Some(Err(error)),
    },
    st::ID => match st::config_from(given) {
      Ok(config) => answer(st::config_json(&config), metadata(&st::layer_spec(&config), named(st::NAME))),
      Err(error) => return Some(Err(error)),
    },
    tm::ID => match tm::config_from(given) {
      Ok(config) => answer(tm::config_json(&config), metadata(&tm::layer_spec(&config), named(tm::NAME))),
      Err(error) => return Some(Err(error)),
    },
    fr::ID => match fr::config_from(given, cwd) {
      Ok(config) => {
        let shown = Shown { rerender_timing: Some("immediate"), ..named(fr::NAME) };
        answer(fr::config_json(&config), metadata(&fr::layer_spec(&config), shown))
      }
      Err(error) => return Some(Err(error)),
    },
    _ => return None,
  }))
}

#[cfg(test)]
mod tests {
  use super::*;

  fn face(kind: &str, given: Value) -> Value {
    builtin_layer(kind, Sketch::of(&given), "/work").expect("a built-in").expect("a valid config")
  }

  fn keys(value: &Value) -> Vec<&str> {
    value.as_object().map(|map| map.keys().map(String::as_str).collect()).unwrap_or_default()
  }

  #[test]
  fn each_layer_object_has_upstreams_keys_in_upstreams_order() {
    let function = json!({ "$sketch": "a function", "type": "function" });
    let cases = [
      ("working-memory", json!({}), vec!["id", "name", "slot", "scope", "budget"]),
      ("observational-memory", json!({}), vec!["id", "name", "slot", "scope", "budget", "timeouts"]),
      ("durable-task-state", json!({}), vec!["id", "name", "slot", "scope", "budget", "timeouts"]),
      ("static-content", json!({ "load": function }), vec!["id", "slot", "scope"]),
      ("history-window", json!({}), vec!["id", "name", "slot", "scope"]),
      ("plan", json!({}), vec!["id", "name", "slot", "scope", "budget"]),
      ("steering", json!({ "rules": [] }), vec!["id", "name", "slot", "scope", "budget", "timeouts"]),
      ("temporal", json!({}), vec!["id", "name", "slot", "scope", "budget", "timeouts"]),
      ("file-reference", json!({}), vec!["id", "name", "slot", "scope", "budget", "rerenderTiming", "timeouts"]),
    ];
    for (kind, given, expected) in cases {
      assert_eq!(keys(&face(kind, given)["layer"]), expected, "{kind}");
    }
    assert!(builtin_layer("nothing", Sketch::of(&json!({})), "/").is_none());
  }

  #[test]
  fn metadata_follows_the_checked_config() {
    let steering = face("steering", json!({ "rules": [], "scope": "thread" }))["layer"].clone();
    assert_eq!(
      steering,
      json!({ "id": "steering", "name": "Steering", "slot": 90.0, "scope": "thread", "budget": { "min": 0.0, "max": 500.0 },
              "timeouts": { "beforeToolCall": 5000.0, "afterModelCall": 10000.0 } })
    );
    let temporal = face("temporal", json!({ "injectLedger": true }))["layer"].clone();
    assert_eq!(temporal["budget"], json!({ "min": 0.0, "max": 800.0 }));
    let files = face("file-reference", json!({ "slot": 7, "baseDir": "docs" }));
    assert_eq!((files["layer"]["slot"].clone(), files["layer"]["budget"].clone()), (json!(7.0), json!("auto")));
    assert_eq!(files["settings"]["baseDir"], "/work/docs");
    let content = face("static-content", json!({ "load": { "$sketch": "a function", "type": "function" }, "id": "p" }));
    assert_eq!(
      (content["layer"]["id"].clone(), content["settings"]["tag"].clone()),
      (json!("p"), json!("instructions"))
    );
    assert_eq!(face("history-window", json!({ "maxItems": 12 }))["settings"], json!({ "maxItems": 12 }));
  }

  #[test]
  fn working_memory_shows_its_scope_as_given_and_runs_with_a_known_one() {
    let odd =
      face("working-memory", json!({ "scope": "session", "schema": { "$sketch": "a ZodObject", "type": "object" } }));
    assert_eq!((odd["layer"]["scope"].clone(), odd["settings"]["scope"].clone()), (json!("session"), json!("thread")));
    assert!(Sketch::of(&odd["settings"]).field("schema").is_function(), "the harness is to call the host's check");
    assert_eq!(wm::config_from(Sketch::of(&odd["settings"])), wm::config_from(Sketch::of(&json!({ "schema": 1 }))));
    let resource = face("observational-memory", json!({ "scope": "thread", "bufferThreshold": 10 }));
    assert_eq!(resource["layer"]["scope"], "thread");
    assert_eq!(resource["settings"]["bufferThreshold"], json!(10.0));
    assert_eq!(face("observational-memory", json!({}))["layer"]["scope"], "resource");
  }

  #[test]
  fn a_bad_config_is_the_layers_error() {
    let error = |kind: &str, given: Value| builtin_layer(kind, Sketch::of(&given), "/").expect("built-in").unwrap_err();
    assert_eq!(
      error("static-content", json!({})).message,
      "staticContent: load must be a function returning the text, got undefined"
    );
    assert_eq!(error("history-window", json!({ "maxItems": [3] })).message.rsplit("got ").next(), Some("3"));
    assert_eq!(error("steering", json!(null)).code, "INVALID_STEERING_CONFIG");
  }
}
