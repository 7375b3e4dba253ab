//! `workingMemory()`: a scratchpad the model rewrites, rendered whole into the prompt (spec §20.1).
//!
//! The state is a free-form string or a JSON object. The optional zod schema lives in JS, so it reaches these
//! functions as a [`SchemaCheck`]; it gates the merged state and never reshapes it.

use serde_json::{Map, Value, json};

use super::js_json::{reorder_like_js, stringify_pretty};
use crate::items::text_find_function_call as find_function_call;
use crate::js_sketch::{Sketch, function_sketch};
use crate::memory::{BudgetConfig, HookKind, HookSet, LayerSpec, Scope};
use crate::tokens::estimate_tokens;

pub const ID: &str = "working-memory";
pub const NAME: &str = "Working Memory";
pub const SLOT: f64 = 100.0;
/// The function-call name the legacy store path looks for (not the `working-memory/update` tool).
pub const LEGACY_UPDATE_CALL: &str = "updateWorkingMemory";
/// The `update` provide's description, which the model sees as the tool's description.
pub const UPDATE_DESCRIPTION: &str = "Update the agent working memory with new key-value pairs.";

/// Nesting beyond which an update's object replaces instead of merging, so hostile input cannot recurse forever.
const MAX_MERGE_DEPTH: usize = 32;

/// The schema gate: `Ok` when the value passes, otherwise the validator's message (zod's `error.message`).
pub type SchemaCheck<'a> = &'a dyn Fn(&Value) -> Result<(), String>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkingMemoryConfig {
  /// `thread` or `resource` in practice; passed through unchecked, as upstream.
  pub scope: Scope,
  /// Whether JS holds a schema. Callers pass a [`SchemaCheck`] exactly when this is set, so that a layer without
  /// one never crosses to JS to validate.
  pub has_schema: bool,
  /// Turns off only the legacy store path; `update` keeps working.
  pub read_only: bool,
}

impl Default for WorkingMemoryConfig {
  fn default() -> Self {
    Self { scope: Scope::Thread, has_schema: false, read_only: false }
  }
}

/// `workingMemory(config)`'s settings from a sketch of the config (or of settings answered before). Upstream checks
/// none: a scope the runtime does not know is the default, a schema is any truthy value, `readOnly` only when `true`.
pub fn config_from(given: Sketch<'_>) -> WorkingMemoryConfig {
  WorkingMemoryConfig {
    scope: given.field("scope").as_str().and_then(Scope::parse).unwrap_or(Scope::Thread),
    has_schema: given.field("schema").is_truthy(),
    read_only: given.field("readOnly").as_bool().unwrap_or(false),
  }
}

/// The settings the JS face holds, which [`config_from`] reads back; a schema as the callback the host gives for it.
pub fn config_json(config: &WorkingMemoryConfig) -> Value {
  let mut settings = json!({ "scope": config.scope.as_str(), "readOnly": config.read_only });
  if config.has_schema {
    settings["schema"] = function_sketch();
  }
  settings
}

/// The layer as the runtime sees it: init, recall, store and onSpawn, default timeouts.
pub fn layer_spec(config: &WorkingMemoryConfig) -> LayerSpec {
  let mut spec = LayerSpec::new(ID, SLOT, config.scope);
  spec.budget = BudgetConfig::Range { min: 200.0, max: 1_500.0 };
  spec.hooks = [HookKind::Init, HookKind::Recall, HookKind::Store, HookKind::OnSpawn].into_iter().collect::<HookSet>();
  spec
}

/// init: the saved state, unless a schema rejects it (then `{}`); with nothing saved, `{}` under a schema and
/// `""` without one. A saved JSON `null` counts as nothing saved.
pub fn init_state(saved: Option<Value>, schema: Option<SchemaCheck<'_>>) -> Value {
  match (saved.filter(|value| !value.is_null()), schema) {
    (Some(value), Some(check)) if check(&value).is_err() => Value::Object(Map::new()),
    (Some(value), _) => value,
    (None, schema) => default_state(schema.is_some()),
  }
}

/// The state with nothing saved: `{}` under a schema, `""` without one.
pub fn default_state(has_schema: bool) -> Value {
  if has_schema { Value::Object(Map::new()) } else { Value::String(String::new()) }
}

/// JS truthiness for a JSON value (no NaN or undefined can occur here).
fn is_falsy(value: &Value) -> bool {
  match value {
    Value::Null => true,
    Value::Bool(b) => !b,
    Value::Number(n) => n.as_f64() == Some(0.0),
    Value::String(s) => s.is_empty(),
    Value::Array(_) | Value::Object(_) => false,
  }
}

/// The recall text, or `None` for a falsy state or an object (arrays included) with no own keys.
pub fn render(state: &Value) -> Option<String> {
  let empty = match state {
    Value::Object(map) => map.is_empty(),
    Value::Array(items) => items.is_empty(),
    other => is_falsy(other),
  };
  if empty {
    return None;
  }
  let text = match state {
    Value::String(s) => s.clone(),
    other => stringify_pretty(other),
  };
  Some(format!("<working_memory>\n{text}\n</working_memory>"))
}

/// recall: the developer-message content and its `estimateTokens` count. The budget is ignored; nothing is trimmed.
pub fn recall(state: &Value) -> Option<(String, u64)> {
  render(state).map(|content| {
    let tokens = estimate_tokens(&content);
    (content, tokens)
  })
}

/// Merges `source` into `out` (upstream's `deepMerge`): object values merge recursively while `depth` is below the
/// cap, everything else replaces. `__proto__` and `constructor` keys of the source are dropped; the target's own
/// keys, whatever they are called, stay.
fn deep_merge_into(out: &mut Map<String, Value>, source: &Map<String, Value>, depth: usize) {
  for (key, value) in source {
    if key == "__proto__" || key == "constructor" {
      continue;
    }
    match value {
      Value::Object(inner) if depth < MAX_MERGE_DEPTH => {
        // Only an existing plain object is merged into; anything else is replaced by a fresh merge.
        if let Some(Value::Object(existing)) = out.get_mut(key) {
          deep_merge_into(existing, inner, depth + 1);
        } else {
          let mut fresh = Map::new();
          deep_merge_into(&mut fresh, inner, depth + 1);
          out.insert(key.clone(), Value::Object(fresh));
        }
      }
      _ => {
        out.insert(key.clone(), value.clone());
      }
    }
  }
  // JS enumerates array-index keys first whatever the insertion order; keep the state shaped as JS would hold it.
  reorder_like_js(out);
}

/// upstream's `safeMerge`: an object state is deep-merged with `update`. Any other state becomes the update merged
/// into `{}`, keeping a non-empty string state under `_previous`, assigned last so it beats an update key of that
/// name (the key keeps its place if the update already had it). An array state spreads into index keys, as JS does.
pub fn merge(state: &Value, update: &Map<String, Value>) -> Value {
  let mut out = match state {
    Value::Object(map) => map.clone(),
    Value::Array(items) => items.iter().enumerate().map(|(i, item)| (i.to_string(), item.clone())).collect(),
    _ => Map::new(),
  };
  deep_merge_into(&mut out, update, 0);
  if let Value::String(previous) = state
    && !previous.is_empty()
  {
    out.insert("_previous".into(), Value::String(previous.clone()));
  }
  Value::Object(out)
}

/// What the host's schema check answered: `null` when the value passes, otherwise zod's message.
pub fn schema_verdict(answer: Value) -> Result<(), String> {
  match answer {
    Value::Null => Ok(()),
    Value::String(message) => Err(message),
    other => Err(other.to_string()),
  }
}

/// The error an update the schema rejects fails with; `message` is the validator's.
pub fn schema_rejection(message: &str) -> String {
  format!("working-memory update rejected by schema: {message}")
}

/// The schema gate applied to a merged state.
fn check_schema(merged: Value, schema: Option<SchemaCheck<'_>>) -> Result<Value, String> {
  match schema.map(|check| check(&merged)) {
    Some(Err(message)) => Err(schema_rejection(&message)),
    _ => Ok(merged),
  }
}

/// The `update` provide: the merged state, or the schema's rejection (the prior state then stays as it was).
pub fn apply_update(
  state: &Value,
  update: &Map<String, Value>,
  schema: Option<SchemaCheck<'_>>,
) -> Result<Value, String> {
  check_schema(merge(state, update), schema)
}

/// store: the legacy `updateWorkingMemory` call in `new_items` merged into the state. `Ok(None)` means the hook
/// returns nothing (read-only, or no usable call), so the state is left alone; an `Err` is the schema rejection,
/// which the store phase reports as a diagnostic.
pub fn store(
  state: &Value,
  new_items: &[&Map<String, Value>],
  config: &WorkingMemoryConfig,
  schema: Option<SchemaCheck<'_>>,
) -> Result<Option<Value>, String> {
  match legacy_update(new_items, config) {
    Some(args) => apply_update(state, &args, schema).map(Some),
    None => Ok(None),
  }
}

/// The arguments of the legacy `updateWorkingMemory` call store merges, unless the layer is read-only.
pub fn legacy_update(new_items: &[&Map<String, Value>], config: &WorkingMemoryConfig) -> Option<Map<String, Value>> {
  if config.read_only {
    return None;
  }
  find_function_call(new_items, LEGACY_UPDATE_CALL)
}

/// onSpawn: a resource-scoped child starts from a copy of the parent's state; any other scope gets `None`
/// (upstream's `null`), which leaves the layer inert in the child.
pub fn on_spawn(scope: Scope, state: &Value) -> Option<Value> {
  (scope == Scope::Resource).then(|| state.clone())
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  fn obj(value: Value) -> Map<String, Value> {
    match value {
      Value::Object(map) => map,
      _ => Map::new(),
    }
  }

  fn keys(value: &Value) -> Vec<&str> {
    value.as_object().map(|map| map.keys().map(String::as_str).collect()).unwrap_or_default()
  }

  #[test]
  fn identity() {
    let spec = layer_spec(&WorkingMemoryConfig::default());
    assert_eq!((spec.id.as_str(), spec.slot, spec.scope), ("working-memory", 100.0, Scope::Thread));
    assert_eq!(spec.budget, BudgetConfig::Range { min: 200.0, max: 1500.0 });
    for hook in HookKind::ALL {
      let expected = matches!(hook, HookKind::Init | HookKind::Recall | HookKind::Store | HookKind::OnSpawn);
      assert_eq!(spec.hooks.has(hook), expected, "{}", hook.name());
    }
    assert_eq!(spec.timeouts, [None; HookKind::COUNT]);
    let resource = layer_spec(&WorkingMemoryConfig { scope: Scope::Resource, ..Default::default() });
    assert_eq!(resource.scope, Scope::Resource);
    assert_eq!(NAME, "Working Memory");
  }

  #[test]
  fn init_defaults_and_schema_fallback() {
    let rejects_all = |_: &Value| Err("nope".to_string());
    let accepts_all = |_: &Value| Ok(());
    assert_eq!(init_state(None, None), json!(""));
    assert_eq!(init_state(Some(Value::Null), None), json!(""));
    assert_eq!(init_state(None, Some(&accepts_all)), json!({}));
    assert_eq!(init_state(Some(json!({"a": 1})), None), json!({"a": 1}));
    assert_eq!(init_state(Some(json!("notes")), Some(&accepts_all)), json!("notes"));
    // Corrupt saved state under a schema falls back to `{}` rather than failing init.
    assert_eq!(init_state(Some(json!({"a": 1})), Some(&rejects_all)), json!({}));
  }

  #[test]
  fn render_string_and_object_states() {
    assert_eq!(render(&json!("remember milk")).as_deref(), Some("<working_memory>\nremember milk\n</working_memory>"));
    assert_eq!(
      render(&json!({"name": "Ada", "tags": ["x", 1], "nested": {"deep": 0.5}})).as_deref(),
      Some(
        "<working_memory>\n{\n  \"name\": \"Ada\",\n  \"tags\": [\n    \"x\",\n    1\n  ],\n  \"nested\": {\n    \
         \"deep\": 0.5\n  }\n}\n</working_memory>"
      )
    );
    // Truthy non-string, non-object states are printed as JSON.
    assert_eq!(render(&json!(7)).as_deref(), Some("<working_memory>\n7\n</working_memory>"));
    assert_eq!(render(&json!([1])).as_deref(), Some("<working_memory>\n[\n  1\n]\n</working_memory>"));
  }

  #[test]
  fn empty_and_falsy_states_recall_nothing() {
    for state in [json!({}), json!([]), json!(""), json!(0), json!(-0.0), json!(false), Value::Null] {
      assert_eq!(recall(&state), None, "{state}");
    }
  }

  #[test]
  fn recall_counts_tokens_of_the_wrapped_content() {
    let (content, tokens) = recall(&json!("abcd")).unwrap_or_default();
    // 16 + 1 + 4 + 1 + 17 = 39 units.
    assert_eq!(content, "<working_memory>\nabcd\n</working_memory>");
    assert_eq!(tokens, 10);
    assert_eq!(recall(&json!("abcdef")).map(|(_, tokens)| tokens), Some(11));
  }

  #[test]
  fn object_state_deep_merges() {
    let state = json!({"a": 1, "user": {"name": "Ada", "langs": ["en"]}, "keep": true});
    let update = obj(json!({"user": {"langs": ["fr"], "age": 36}, "a": {"now": "object"}, "new": null}));
    assert_eq!(
      merge(&state, &update),
      json!({"a": {"now": "object"}, "user": {"name": "Ada", "langs": ["fr"], "age": 36}, "keep": true, "new": null})
    );
    // An object replacing an array is merged into a fresh object, and the input state is untouched.
    let state = json!({"list": [1, 2]});
    assert_eq!(merge(&state, &obj(json!({"list": {"x": 1}}))), json!({"list": {"x": 1}}));
    assert_eq!(state, json!({"list": [1, 2]}));
  }

  #[test]
  fn prototype_keys_are_dropped_from_the_update_at_every_level() {
    let state = json!({"constructor": "kept from the state", "a": {"b": 1}});
    let update = obj(json!({
      "__proto__": {"polluted": true},
      "constructor": {"prototype": {}},
      "a": {"__proto__": {"x": 1}, "constructor": 2, "c": 3},
      "fresh": {"__proto__": 1, "d": 4}
    }));
    assert_eq!(
      merge(&state, &update),
      json!({"constructor": "kept from the state", "a": {"b": 1, "c": 3}, "fresh": {"d": 4}})
    );
  }

  /// `{"k": {"k": ... {"k": leaf}}}` with `levels` objects.
  fn nested(levels: usize, leaf: Value) -> Value {
    (0..levels).fold(leaf, |inner, _| json!({"k": inner}))
  }

  fn descend(value: &Value, levels: usize) -> &Value {
    (0..levels).fold(value, |v, _| &v["k"])
  }

  #[test]
  fn merge_stops_recursing_at_depth_32() {
    let state = nested(34, json!({"old": 1}));
    let update = nested(34, json!({"__proto__": 1, "new": 2}));
    let merged = merge(&state, &obj(update));
    // Objects down to 32 levels merge; the update's value at the 33rd level replaces the state's wholesale, its
    // `__proto__` key included, since nothing below the cap is filtered.
    assert_eq!(descend(&merged, 33), &nested(1, json!({"__proto__": 1, "new": 2})));
    // Just above the cap the merge still recursed, so a sibling from the state survives there.
    let mut state = nested(31, json!({"k": {"k": 0}, "side": true}));
    if let Some(map) = state.as_object_mut() {
      map.insert("top".into(), json!(1));
    }
    let merged = merge(&state, &obj(nested(33, json!("leaf"))));
    assert_eq!(merged["top"], json!(1));
    assert_eq!(descend(&merged, 31)["side"], json!(true));
    assert_eq!(descend(&merged, 33), &json!("leaf"));
  }

  #[test]
  fn string_state_keeps_previous_text() {
    let merged = merge(&json!("old notes"), &obj(json!({"a": 1, "b": {"c": 2}})));
    assert_eq!(merged, json!({"a": 1, "b": {"c": 2}, "_previous": "old notes"}));
    assert_eq!(keys(&merged), ["a", "b", "_previous"]);
    // `_previous` from the update loses to the preserved text but keeps its position.
    let merged = merge(&json!("old"), &obj(json!({"_previous": "forged", "z": 1})));
    assert_eq!(merged, json!({"_previous": "old", "z": 1}));
    assert_eq!(keys(&merged), ["_previous", "z"]);
    // An empty string (or any other non-object) keeps nothing.
    assert_eq!(merge(&json!(""), &obj(json!({"a": 1}))), json!({"a": 1}));
    assert_eq!(merge(&json!(5), &obj(json!({"a": 1}))), json!({"a": 1}));
    assert_eq!(merge(&Value::Null, &obj(json!({"__proto__": 1}))), json!({}));
  }

  #[test]
  fn merge_orders_keys_as_js_would() {
    let merged = merge(&json!({"b": 1}), &obj(json!({"a": 2, "1": 3, "0": 4})));
    assert_eq!(keys(&merged), ["0", "1", "b", "a"]);
    // An array state spreads into index keys.
    assert_eq!(merge(&json!(["x", "y"]), &obj(json!({"1": "z", "n": 1}))), json!({"0": "x", "1": "z", "n": 1}));
  }

  #[test]
  fn update_is_gated_by_the_schema_on_the_merged_state() {
    // A "schema" requiring a string `name`: a partial update that keeps an existing name passes.
    let needs_name = |value: &Value| {
      if value.get("name").is_some_and(Value::is_string) { Ok(()) } else { Err("name: Required".to_string()) }
    };
    let state = json!({"name": "Ada"});
    assert_eq!(
      apply_update(&state, &obj(json!({"age": 36})), Some(&needs_name)),
      Ok(json!({"name": "Ada", "age": 36}))
    );
    assert_eq!(
      apply_update(&json!({}), &obj(json!({"age": 36})), Some(&needs_name)),
      Err("working-memory update rejected by schema: name: Required".to_string())
    );
    assert_eq!(apply_update(&json!({}), &obj(json!({"age": 36})), None), Ok(json!({"age": 36})));
  }

  #[test]
  fn store_reads_the_legacy_call() {
    let config = WorkingMemoryConfig::default();
    let items = [
      json!({"type": "function_call", "callId": "c1", "name": "working-memory/update", "arguments": "{\"x\": 0}"}),
      json!({"type": "function_call", "callId": "c2", "name": "updateWorkingMemory", "arguments": "{\"x\": 1}"}),
    ];
    let items: Vec<_> = items.iter().filter_map(Value::as_object).collect();
    assert_eq!(store(&json!("prior"), &items, &config, None), Ok(Some(json!({"x": 1, "_previous": "prior"}))));
    assert_eq!(store(&json!({}), &items[..1], &config, None), Ok(None));
    let read_only = WorkingMemoryConfig { read_only: true, ..config };
    assert_eq!(store(&json!({}), &items, &read_only, None), Ok(None));
    let rejects = |_: &Value| Err("bad".to_string());
    assert_eq!(
      store(&json!({}), &items, &config, Some(&rejects)),
      Err("working-memory update rejected by schema: bad".to_string())
    );
  }

  #[test]
  fn spawn_copies_only_resource_state() {
    let state = json!({"a": 1});
    assert_eq!(on_spawn(Scope::Resource, &state), Some(state.clone()));
    assert_eq!(on_spawn(Scope::Thread, &state), None);
  }
}
