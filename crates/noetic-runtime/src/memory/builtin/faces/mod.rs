//! What a built-in layer's factory (`workingMemory(config)`, `steering(config)`, ...) answers its JS face in one
//! call: the config, read from a sketch of what the user gave and checked, as the settings JS holds and hands back
//! to the hooks and the harness; the metadata of upstream's layer object (`id`, `name`, `slot`, `scope`,
//! `budget`, `timeouts`, in upstream's key order and with only the keys upstream's object has), read from the same
//! [`LayerSpec`] the harness runs the layer with; the object's `hooks` and `provides`, each described by its first
//! step ([`steps`]); and which of the user's callbacks the harness may call. [`hook`] answers every further step
//! of a hook called directly from JS.

mod content;
mod memories;
pub mod steps;
mod tasks;

use serde_json::{Map, Value, json};

use super::{
  durable_task_state as dts, file_reference as fr, history_window as hw, observational_memory as om,
  plan_memory as plan, static_content as sc, steering as st, temporal_memory as tm, working_memory as wm,
};
use crate::error::ConfigError;
use crate::js_sketch::Sketch;
use crate::memory::{BudgetConfig, HookKind, LayerSpec};
use steps::{HookError, Params};

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

/// One step of the built-in `kind`'s hook (or provided function, or step of one) `name`, called directly from JS
/// with `params`: what user code passed as the face's description reads it, what earlier steps carried and the
/// host answered; `config` the face's settings. `check` is workingMemory's schema, called synchronously.
pub fn hook(
  kind: &str,
  name: &str,
  params: &Value,
  config: &Value,
  check: Option<wm::SchemaCheck<'_>>,
) -> Result<Value, HookError> {
  let params = Params::new(params, config);
  match kind {
    wm::ID => memories::working_memory(name, params, check),
    om::ID => memories::observational_memory(name, params),
    tm::ID => memories::temporal_memory(name, params),
    dts::ID => tasks::durable_task_state(name, params),
    plan::ID => tasks::plan(name, params),
    st::ID => tasks::steering(name, params),
    sc::DEFAULT_ID => content::static_content(name, params),
    hw::ID => content::history_window(name, params),
    fr::ID => content::file_reference(name, params),
    _ => Err(HookError::Failed(format!("{kind} has no hook '{name}'"))),
  }
}

/// The user's functions the harness may call: the settings' callbacks (a given function, sketched), which is what
/// the harness builds the native layer's host callbacks from.
fn callbacks(settings: &Value) -> Value {
  let given = |(name, _): &(&String, &Value)| Sketch::of(settings).field(name).is_function();
  json!(settings.as_object().into_iter().flatten().filter(given).map(|(name, _)| name).collect::<Vec<_>>())
}

/// `{settings, layer, members, callbacks}` for the built-in `kind` from a sketch of its config: `members` the
/// layer object's `hooks` and `provides` (in upstream's order) as [`steps`] describes them, `callbacks` the
/// user's functions the harness may call. `cwd` is where a relative fileReference `baseDir` is taken from. `None`
/// for a kind that is not a built-in.
pub fn builtin_layer(kind: &str, sketch: Sketch<'_>, cwd: &str) -> Option<Result<Value, ConfigError>> {
  let named = |name| Shown { name: Some(name), budget: true, ..Shown::default() };
  let answer = |settings: Value, layer: Value, members: Value| json!({ "callbacks": callbacks(&settings), "settings": settings, "layer": layer, "members": members });
  Some(match kind {
    wm::ID => {
      let config = wm::config_from(sketch);
      let layer = metadata(&wm::layer_spec(&config), Shown { scope: given_scope(sketch), ..named(wm::NAME) });
      Ok(answer(wm::config_json(&config), layer, memories::working_memory_face(&config)))
    }
    om::ID => {
      let config = om::config_from(sketch);
      let layer = metadata(&om::layer_spec(&config), Shown { scope: given_scope(sketch), ..named(om::NAME) });
      Ok(answer(om::config_json(&config), layer, memories::observational_memory_face()))
    }
    dts::ID => Ok(answer(json!({}), metadata(&dts::layer_spec(), named(dts::NAME)), tasks::durable_task_state_face())),
    sc::DEFAULT_ID => sc::config_from(sketch).map(|config| {
      let layer = metadata(&sc::layer_spec(&config), Shown::default());
      answer(sc::config_json(&config), layer, content::static_content_face())
    }),
    hw::ID => hw::max_items_from(sketch).map(|max_items| {
      let layer = metadata(&hw::layer_spec(), Shown { name: Some(hw::NAME), ..Shown::default() });
      answer(json!({ "maxItems": max_items }), layer, content::history_window_face())
    }),
    plan::ID => plan::config_from(sketch).map(|config| {
      let layer = metadata(&plan::layer_spec(&config), named(plan::NAME));
      answer(plan::config_json(&config), layer, tasks::plan_face())
    }),
    st::ID => st::config_from(sketch).map(|config| {
      answer(st::config_json(&config), metadata(&st::layer_spec(&config), named(st::NAME)), tasks::steering_face())
    }),
    tm::ID => tm::config_from(sketch).map(|config| {
      let layer = metadata(&tm::layer_spec(&config), named(tm::NAME));
      answer(tm::config_json(&config), layer, memories::temporal_memory_face(&config))
    }),
    fr::ID => fr::config_from(sketch, cwd).map(|config| {
      let layer = metadata(&fr::layer_spec(&config), Shown { rerender_timing: Some("immediate"), ..named(fr::NAME) });
      answer(fr::config_json(&config), layer, content::file_reference_face())
    }),
    _ => return None,
  })
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
  fn the_callbacks_are_the_functions_given_and_each_member_a_first_step() {
    let function = json!({ "$sketch": "a function", "type": "function" });
    let callbacks = |kind: &str, given: Value| face(kind, given)["callbacks"].clone();
    assert_eq!(callbacks("temporal", json!({ "search": function, "now": function })), json!(["now", "search"]));
    assert_eq!(callbacks("observational-memory", json!({})), json!([]));
    let rule = json!({ "id": "r", "appliesTo": ["beforeToolCall"], "predicate": function });
    assert_eq!(callbacks("steering", json!({ "rules": [rule] })), json!(["predicates"]));
    assert_eq!(callbacks("static-content", json!({ "load": function })), json!(["load"]));
    for (kind, given, groups) in [
      ("working-memory", json!({}), vec!["hooks", "provides"]),
      ("plan", json!({}), vec!["provides", "hooks"]),
      ("temporal", json!({}), vec!["provides", "hooks"]),
      ("history-window", json!({}), vec!["hooks"]),
    ] {
      let members = face(kind, given)["members"].clone();
      assert_eq!(keys(&members), groups, "{kind}");
      for step in members
        .as_object()
        .into_iter()
        .flat_map(|groups| groups.values())
        .flat_map(|group| group.as_object().unwrap().values())
      {
        assert!(["call", "ask", "shape"].iter().any(|key| step.get(key).is_some()), "{kind}: {step}");
      }
    }
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
