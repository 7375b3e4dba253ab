//! `staticContent({load, ...})`: text loaded once per execution (the user's `load`, through the host) and recalled
//! in an XML tag, cut to the budget with the closing tag kept (spec §20.9).

use serde_json::{Value, json};

use crate::error::ConfigError;
use crate::js_sketch::{Sketch, function_sketch};
use crate::memory::{HookKind, HookSet, LayerSpec, Scope};
use crate::tokens::{estimate_tokens, utf16_len, utf16_prefix};

pub const DEFAULT_ID: &str = "static-content";
/// WORKING_MEMORY + 5.
pub const DEFAULT_SLOT: f64 = 105.0;
pub const DEFAULT_TAG: &str = "instructions";

#[derive(Debug, Clone, PartialEq)]
pub struct StaticContentConfig {
  pub id: String,
  pub slot: f64,
  pub scope: Scope,
  pub tag: String,
}

impl Default for StaticContentConfig {
  fn default() -> Self {
    Self { id: DEFAULT_ID.to_owned(), slot: DEFAULT_SLOT, scope: Scope::Resource, tag: DEFAULT_TAG.to_owned() }
  }
}

impl StaticContentConfig {
  /// The config as given (`None`: not given), checked where the factory is called: a slot the runtime could not
  /// order by or a scope it does not know would otherwise surface only when a harness runs the layer.
  pub fn new(
    id: Option<String>,
    slot: Option<f64>,
    scope: Option<&str>,
    tag: Option<String>,
  ) -> Result<Self, ConfigError> {
    let slot = slot.unwrap_or(DEFAULT_SLOT);
    if !slot.is_finite() {
      return Err(ConfigError::new(
        "INVALID_LAYER_SLOT",
        format!("staticContent: slot must be a finite number, got {}", crate::js_number(slot)),
        "Pass a slot such as Slot.WORKING_MEMORY + 5, or leave it out.",
      ));
    }
    let scope = match scope {
      None => Scope::Resource,
      Some(name) => Scope::parse(name).ok_or_else(|| {
        ConfigError::new(
          "INVALID_LAYER_SCOPE",
          format!("staticContent: scope must be 'execution', 'thread', 'resource' or 'global', got '{name}'"),
          "Leave scope out for 'resource'.",
        )
      })?,
    };
    let defaults = Self::default();
    Ok(Self { id: id.unwrap_or(defaults.id), slot, scope, tag: tag.unwrap_or(defaults.tag) })
  }
}

/// `staticContent(opts)`'s settings from a sketch of the options (or of settings answered before), checked: `load`
/// must be a function; a slot that is not a number is NaN; a scope is named as `String()` prints it.
pub fn config_from(given: Sketch<'_>) -> Result<StaticContentConfig, ConfigError> {
  let load = given.field("load");
  if !load.is_function() {
    return Err(ConfigError::new(
      "INVALID_STATIC_CONTENT_LOAD",
      format!("staticContent: load must be a function returning the text, got {}", load.described()),
      "Pass load: async () => text (read a file, fetch a prompt); it runs when each execution starts.",
    ));
  }
  let text = |key: &str| given.field(key).as_str().map(str::to_owned);
  let slot = given.field("slot");
  let slot = if slot.is_undefined() { None } else { Some(slot.as_number().unwrap_or(f64::NAN)) };
  let scope = given.field("scope");
  let scope = (!scope.is_nullish()).then(|| scope.js_string());
  StaticContentConfig::new(text("id"), slot, scope.as_deref(), text("tag"))
}

/// The settings the JS face holds, which [`config_from`] reads back.
pub fn config_json(config: &StaticContentConfig) -> Value {
  json!({
    "id": config.id,
    "slot": config.slot,
    "scope": config.scope.as_str(),
    "tag": config.tag,
    "load": function_sketch(),
  })
}

/// The layer as the runtime sees it: init and recall, no budget (auto).
pub fn layer_spec(config: &StaticContentConfig) -> LayerSpec {
  let mut spec = LayerSpec::new(config.id.clone(), config.slot, config.scope);
  spec.hooks = [HookKind::Init, HookKind::Recall].into_iter().collect::<HookSet>();
  // Loaded once per execution and the same every turn: the first thing to pin for a prompt cache.
  spec.placement = crate::memory::cache_anchor::Placement::Anchor;
  spec
}

/// init: the loaded text in its tag, one newline inside each side; nothing loaded gives `""`.
pub fn wrap(raw: &str, tag: &str) -> String {
  if raw.is_empty() { String::new() } else { format!("<{tag}>\n{raw}\n</{tag}>") }
}

/// recall: the state, cut to `budget × 4` UTF-16 units with the closing tag re-attached when it is over a positive
/// budget (a zero share trims nothing); nothing for an empty state.
pub fn recall(state: &str, budget: f64, tag: &str) -> Option<(String, u64)> {
  if state.is_empty() {
    return None;
  }
  let text = if budget > 0.0 && estimate_tokens(state) as f64 > budget {
    let closing = format!("\n</{tag}>");
    let room = (budget * 4.0 - utf16_len(&closing) as f64).max(0.0) as usize;
    format!("{}{closing}", utf16_prefix(state, room))
  } else {
    state.to_owned()
  };
  let tokens = estimate_tokens(&text);
  Some((text, tokens))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn wraps_and_cuts_to_the_budget() {
    // §23: 100 × "x" at budget 10 keeps the open tag, a newline, 9 × "x", a newline and the close tag.
    let state = wrap(&"x".repeat(100), DEFAULT_TAG);
    assert_eq!(utf16_len(&state), 131);
    let (cut, tokens) = recall(&state, 10.0, DEFAULT_TAG).expect("recalls");
    assert_eq!(cut, format!("<instructions>\n{}\n</instructions>", "x".repeat(9)));
    assert_eq!(tokens, 10);
    assert_eq!(recall(&state, 0.0, DEFAULT_TAG).map(|(text, _)| text), Some(state.clone()), "budget 0 trims nothing");
    assert_eq!(recall(&state, 1000.0, DEFAULT_TAG).map(|(text, _)| text), Some(state));
    assert_eq!(wrap("", "rules"), "");
    assert_eq!(recall("", 10.0, "rules"), None);
  }

  #[test]
  fn checks_slot_and_scope() {
    let config = StaticContentConfig::new(None, None, None, None).expect("defaults");
    assert_eq!(
      (config.id.as_str(), config.slot, config.scope, config.tag.as_str()),
      ("static-content", 105.0, Scope::Resource, "instructions")
    );
    assert_eq!(StaticContentConfig::new(None, Some(f64::NAN), None, None).expect_err("NaN").code, "INVALID_LAYER_SLOT");
    assert_eq!(
      StaticContentConfig::new(None, None, Some("forever"), None).expect_err("scope").code,
      "INVALID_LAYER_SCOPE"
    );
  }
}
