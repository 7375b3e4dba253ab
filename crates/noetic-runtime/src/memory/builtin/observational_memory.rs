//! `observationalMemory()`: buffers conversation text and, past a token threshold, distils it into a bounded list
//! of observations that recall renders newest-last (spec §20.2).
//!
//! The observer that distils is an async host callback, so accumulating is split into two pure steps:
//! [`accumulate`] says whether the observer must run, and [`apply_distilled`] folds its answer in.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::items::{collect_input_text, collect_output_text};
use crate::js_sketch::{Sketch, function_sketch, number_sketch};
use crate::memory::{BudgetConfig, HookKind, HookSet, LayerSpec, Scope};
use crate::tokens::{estimate_tokens, tokens_for_units, utf16_len};

pub const ID: &str = "observational-memory";
pub const NAME: &str = "Observational Memory";
pub const SLOT: f64 = 200.0;
pub const DEFAULT_BUFFER_THRESHOLD: f64 = 2_000.0;
pub const DEFAULT_MAX_OBSERVATIONS: usize = 50;
/// store and onItemAppend may run the observer (an LLM call), so both get this instead of the defaults.
pub const DISTILLING_HOOK_TIMEOUT_MS: f64 = 60_000.0;

const OPEN_TAG: &str = "<observations>\n";
const CLOSE_TAG: &str = "\n</observations>";
const BULLET: &str = "- ";

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ObservationalConfig {
  /// Buffered tokens at which the buffer is distilled (`>=`). NaN or +∞ never distils; 0 distils on every call.
  pub buffer_threshold: f64,
  /// How many observations are kept, newest last. 0 keeps all of them, as JS's `slice(-0)` does.
  pub max_observations: usize,
  pub scope: Scope,
  /// Whether the host supplied an `observer`; without one, distilling yields a placeholder observation.
  pub has_observer: bool,
}

impl Default for ObservationalConfig {
  fn default() -> Self {
    Self {
      buffer_threshold: DEFAULT_BUFFER_THRESHOLD,
      max_observations: DEFAULT_MAX_OBSERVATIONS,
      scope: Scope::Resource,
      has_observer: false,
    }
  }
}

/// `observationalMemory(config)`'s settings from a sketch of the config (or of settings answered before). Upstream
/// checks none: what is not a number (or not a whole one, for the cap) or a known scope is the default, and only a
/// function is an observer.
pub fn config_from(given: Sketch<'_>) -> ObservationalConfig {
  let defaults = ObservationalConfig::default();
  let cap = given.field("maxObservations").as_number().filter(|n| *n >= 0.0 && n.fract() == 0.0);
  ObservationalConfig {
    buffer_threshold: given.field("bufferThreshold").as_number().unwrap_or(defaults.buffer_threshold),
    max_observations: cap.map_or(defaults.max_observations, |n| n as usize),
    scope: given.field("scope").as_str().and_then(Scope::parse).unwrap_or(defaults.scope),
    has_observer: given.field("observer").is_function(),
  }
}

/// The settings the JS face holds, which [`config_from`] reads back.
pub fn config_json(config: &ObservationalConfig) -> Value {
  let mut settings = json!({
    "scope": config.scope.as_str(),
    "bufferThreshold": number_sketch(config.buffer_threshold),
    "maxObservations": config.max_observations,
  });
  if config.has_observer {
    settings["observer"] = function_sketch();
  }
  settings
}

/// The layer's state, shaped like upstream's JSON (`bufferTokens` camelCase). Missing fields read as their defaults.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObservationalState {
  pub observations: Vec<String>,
  pub buffer: Vec<String>,
  #[serde(serialize_with = "js_number")]
  pub buffer_tokens: f64,
  #[serde(serialize_with = "js_number")]
  pub version: f64,
}

/// Whole numbers are written as JSON integers, so the state compares and prints like the JS object (`0`, not `0.0`).
fn js_number<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
  const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
  if value.fract() == 0.0 && value.abs() <= MAX_SAFE {
    serializer.serialize_i64(*value as i64)
  } else {
    serializer.serialize_f64(*value)
  }
}

impl ObservationalState {
  /// Reads a stored state; `null` (nothing saved, or an unset state) is the default.
  pub fn from_value(value: &Value) -> Result<Self, serde_json::Error> {
    if value.is_null() { Ok(Self::default()) } else { Self::deserialize(value) }
  }

  pub fn to_value(&self) -> Value {
    serde_json::to_value(self).unwrap_or(Value::Null)
  }
}

/// The outcome of buffering new text.
#[derive(Debug, Clone, PartialEq)]
pub enum Accumulated {
  /// The new state, final. This includes a distillation without an observer, which uses the placeholder.
  Kept(ObservationalState),
  /// The threshold was reached and there is an observer: call it with `new_buffer`, then pass its answer to
  /// [`apply_distilled`] together with the state given to [`accumulate`].
  Distill { new_buffer: Vec<String> },
}

/// The layer as the runtime sees it: init, recall, store, onItemAppend and onSpawn, with 60 s for the two hooks
/// that may distil.
pub fn layer_spec(config: &ObservationalConfig) -> LayerSpec {
  let mut spec = LayerSpec::new(ID, SLOT, config.scope);
  spec.budget = BudgetConfig::Range { min: 500.0, max: 2_500.0 };
  spec.hooks = [HookKind::Init, HookKind::Recall, HookKind::Store, HookKind::OnItemAppend, HookKind::OnSpawn]
    .into_iter()
    .collect::<HookSet>();
  spec.timeouts[HookKind::Store as usize] = Some(DISTILLING_HOOK_TIMEOUT_MS);
  spec.timeouts[HookKind::OnItemAppend as usize] = Some(DISTILLING_HOOK_TIMEOUT_MS);
  spec
}

/// init: the saved state, or the default.
pub fn init_state(saved: Option<Value>) -> Value {
  saved.filter(|value| !value.is_null()).unwrap_or_else(|| ObservationalState::default().to_value())
}

/// What distilling yields when the host gave no observer: one line counting the buffered texts.
pub fn placeholder_observations(buffer_len: usize) -> Vec<String> {
  vec![format!("Processed {buffer_len} items")]
}

/// Appends `texts` to the buffer. Below the threshold the state just grows; at or above it the buffer must be
/// distilled, right away with the placeholder when there is no observer, otherwise by the caller.
pub fn accumulate(state: &ObservationalState, texts: Vec<String>, config: &ObservationalConfig) -> Accumulated {
  let added: f64 = texts.iter().map(|text| estimate_tokens(text) as f64).sum();
  let total = state.buffer_tokens + added;
  let mut new_buffer = Vec::with_capacity(state.buffer.len() + texts.len());
  new_buffer.extend(state.buffer.iter().cloned());
  new_buffer.extend(texts);
  if total >= config.buffer_threshold {
    if config.has_observer {
      return Accumulated::Distill { new_buffer };
    }
    return Accumulated::Kept(apply_distilled(state, placeholder_observations(new_buffer.len()), config));
  }
  Accumulated::Kept(ObservationalState { buffer: new_buffer, buffer_tokens: total, ..state.clone() })
}

/// The observer's answer as observations; anything but an array of strings is an error.
pub fn distilled(answer: Value) -> Result<Vec<String>, String> {
  serde_json::from_value(answer).map_err(|_| "the observer must resolve to an array of strings".to_owned())
}

/// Folds distilled observations into `state` (the state before accumulating): appended, only the newest
/// `max_observations` kept, buffer emptied, token count reset and version bumped.
pub fn apply_distilled(
  state: &ObservationalState,
  distilled: Vec<String>,
  config: &ObservationalConfig,
) -> ObservationalState {
  let mut observations = state.observations.clone();
  observations.extend(distilled);
  if config.max_observations > 0 && observations.len() > config.max_observations {
    observations.drain(..observations.len() - config.max_observations);
  }
  ObservationalState { observations, buffer: Vec::new(), buffer_tokens: 0.0, version: state.version + 1.0 }
}

/// store: buffers the assistant output text of `new_items`. It always yields a state, even with no text.
pub fn store(
  state: &ObservationalState,
  new_items: &[&Map<String, Value>],
  config: &ObservationalConfig,
) -> Accumulated {
  accumulate(state, collect_output_text(new_items), config)
}

/// onItemAppend: buffers the input text of `items`; `None` when there is none, so the state is not written.
/// The items themselves always pass through unchanged.
pub fn on_item_append(
  state: &ObservationalState,
  items: &[&Map<String, Value>],
  config: &ObservationalConfig,
) -> Option<Accumulated> {
  let texts = collect_input_text(items);
  (!texts.is_empty()).then(|| accumulate(state, texts, config))
}

/// The `<observations>` element with one `- ` line per observation, oldest first.
pub fn render(observations: &[String]) -> String {
  let mut text = String::from(OPEN_TAG);
  for (i, observation) in observations.iter().enumerate() {
    if i > 0 {
      text.push('\n');
    }
    text.push_str(BULLET);
    text.push_str(observation);
  }
  text.push_str(CLOSE_TAG);
  text
}

/// recall: the newest observations whose rendering fits `budget`, dropping the oldest first, with the rendering's
/// token estimate. `None` without observations or when even the newest alone does not fit.
pub fn recall(state: &ObservationalState, budget: f64) -> Option<(String, u64)> {
  let observations = &state.observations;
  // The rendered length of every suffix, computed from the back, so the search renders only once.
  let frame = utf16_len(OPEN_TAG) + utf16_len(CLOSE_TAG);
  let mut lines = 0;
  let mut fitting = None;
  for (start, observation) in observations.iter().enumerate().rev() {
    // Each line is the bullet plus the text; lines after the first also need their newline.
    lines += utf16_len(BULLET) + utf16_len(observation) + usize::from(start + 1 < observations.len());
    if tokens_for_units(frame + lines) as f64 <= budget {
      fitting = Some(start);
    }
  }
  let text = render(&observations[fitting?..]);
  let tokens = estimate_tokens(&text);
  Some((text, tokens))
}

/// onSpawn: the child always gets a copy, whatever the scope.
pub fn on_spawn(state: &Value) -> Value {
  state.clone()
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  fn config(threshold: f64, max: usize) -> ObservationalConfig {
    ObservationalConfig { buffer_threshold: threshold, max_observations: max, ..Default::default() }
  }

  fn assistant(text: &str) -> Value {
    json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
  }

  fn kept(outcome: Accumulated) -> ObservationalState {
    match outcome {
      Accumulated::Kept(state) => state,
      Accumulated::Distill { .. } => panic!("expected a final state, got {outcome:?}"),
    }
  }

  fn store_text(state: &ObservationalState, text: &str, config: &ObservationalConfig) -> ObservationalState {
    let item = assistant(text);
    let items: Vec<_> = item.as_object().into_iter().collect();
    kept(store(state, &items, config))
  }

  fn strings(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| t.to_string()).collect()
  }

  #[test]
  fn identity() {
    let spec = layer_spec(&ObservationalConfig::default());
    assert_eq!((spec.id.as_str(), spec.slot, spec.scope), ("observational-memory", 200.0, Scope::Resource));
    assert_eq!(spec.budget, BudgetConfig::Range { min: 500.0, max: 2500.0 });
    let expected = [HookKind::Init, HookKind::Recall, HookKind::Store, HookKind::OnItemAppend, HookKind::OnSpawn];
    for hook in HookKind::ALL {
      assert_eq!(spec.hooks.has(hook), expected.contains(&hook), "{}", hook.name());
    }
    assert_eq!(spec.timeout_ms(HookKind::Store), 60_000.0);
    assert_eq!(spec.timeout_ms(HookKind::OnItemAppend), 60_000.0);
    assert_eq!(spec.timeout_ms(HookKind::Recall), 5_000.0);
    assert_eq!(layer_spec(&ObservationalConfig { scope: Scope::Thread, ..Default::default() }).scope, Scope::Thread);
    assert_eq!(NAME, "Observational Memory");
  }

  #[test]
  fn state_round_trips_upstream_json() {
    let json = json!({"observations": ["o"], "buffer": ["b"], "bufferTokens": 3, "version": 2});
    let state = ObservationalState::from_value(&json).unwrap_or_default();
    assert_eq!(state.buffer_tokens, 3.0);
    assert_eq!(state.to_value(), json);
    assert_eq!(init_state(None), json!({"observations": [], "buffer": [], "bufferTokens": 0, "version": 0}));
    assert_eq!(init_state(Some(json.clone())), json);
    assert_eq!(ObservationalState::from_value(&Value::Null).ok(), Some(ObservationalState::default()));
    assert_eq!(ObservationalState::from_value(&json!({"version": 4})).map(|s| s.version).ok(), Some(4.0));
    assert!(ObservationalState::from_value(&json!({"buffer": 1})).is_err());
    let fractional = ObservationalState { buffer_tokens: 0.5, ..Default::default() };
    assert_eq!(fractional.to_value()["bufferTokens"], json!(0.5));
  }

  #[test]
  fn reference_vector_of_three_stores() {
    let config = config(5.0, 3);
    let s1 = store_text(&ObservationalState::default(), "one two three four five six", &config);
    assert_eq!(
      s1.to_value(),
      json!({"observations": ["Processed 1 items"], "buffer": [], "bufferTokens": 0, "version": 1})
    );
    let s2 = store_text(&s1, "x", &config);
    assert_eq!(
      s2.to_value(),
      json!({"observations": ["Processed 1 items"], "buffer": ["x"], "bufferTokens": 1, "version": 1})
    );
    let third = "a".repeat(34);
    assert_eq!(estimate_tokens(&third), 9);
    let s3 = store_text(&s2, &third, &config);
    assert_eq!(
      s3.to_value(),
      json!({"observations": ["Processed 1 items", "Processed 2 items"], "buffer": [], "bufferTokens": 0, "version": 2})
    );
    // A fourth and fifth distillation push the oldest out of the three kept.
    let s4 = store_text(&s3, "abcdefghijklmnopqrstu", &config);
    let s5 = store_text(&s4, "abcdefghijklmnopqrstu", &config);
    assert_eq!(s5.observations, strings(&["Processed 2 items", "Processed 1 items", "Processed 1 items"]));
    assert_eq!(s5.version, 4.0);
  }

  #[test]
  fn zero_threshold_distils_even_an_empty_store() {
    let outcome = store(&ObservationalState::default(), &[], &config(0.0, 50));
    let state = kept(outcome);
    assert_eq!(state.observations, strings(&["Processed 0 items"]));
    assert_eq!(state.version, 1.0);
  }

  #[test]
  fn below_threshold_an_empty_store_still_yields_a_state() {
    let state = ObservationalState { buffer: strings(&["a"]), buffer_tokens: 1.0, ..Default::default() };
    assert_eq!(kept(store(&state, &[], &ObservationalConfig::default())), state);
  }

  #[test]
  fn with_an_observer_the_caller_distils() {
    let config = ObservationalConfig { has_observer: true, ..config(3.0, 2) };
    let state = ObservationalState {
      observations: strings(&["old1", "old2"]),
      buffer: strings(&["kept"]),
      buffer_tokens: 1.0,
      version: 7.0,
    };
    let Accumulated::Distill { new_buffer } = accumulate(&state, strings(&["abcdefgh"]), &config) else {
      panic!("expected the observer to be needed");
    };
    assert_eq!(new_buffer, strings(&["kept", "abcdefgh"]));
    let next = apply_distilled(&state, strings(&["n1", "n2", "n3"]), &config);
    assert_eq!(
      next,
      ObservationalState { observations: strings(&["n2", "n3"]), buffer: vec![], buffer_tokens: 0.0, version: 8.0 }
    );
    // Below the threshold no observer is needed.
    let below = accumulate(&state, strings(&["ab"]), &config);
    assert_eq!(kept(below).buffer_tokens, 2.0);
  }

  #[test]
  fn zero_max_observations_keeps_everything() {
    let state = ObservationalState { observations: strings(&["a", "b"]), ..Default::default() };
    let next = apply_distilled(&state, strings(&["c"]), &config(1.0, 0));
    assert_eq!(next.observations, strings(&["a", "b", "c"]));
  }

  #[test]
  fn item_append_buffers_input_text_only_when_there_is_some() {
    let config = ObservationalConfig::default();
    let state = ObservationalState::default();
    let items = [
      json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}),
      json!({"type": "function_call_output", "callId": "c", "output": "42"}),
    ];
    let items: Vec<_> = items.iter().filter_map(Value::as_object).collect();
    let next = on_item_append(&state, &items, &config).map(kept);
    assert_eq!(next.as_ref().map(|s| &s.buffer), Some(&strings(&["hello", "42"])));
    assert_eq!(next.map(|s| s.buffer_tokens), Some(3.0));
    let silent = [json!({"type": "function_call", "callId": "c", "name": "f", "arguments": "{}"})];
    let silent: Vec<_> = silent.iter().filter_map(Value::as_object).collect();
    assert_eq!(on_item_append(&state, &silent, &config), None);
  }

  #[test]
  fn recall_drops_oldest_until_it_fits() {
    let state =
      ObservationalState { observations: vec!["aaaa".into(), "b".repeat(32), "c".into()], ..Default::default() };
    assert_eq!(recall(&state, 12.0), Some(("<observations>\n- c\n</observations>".to_string(), 9)));
    // A large budget keeps all three (15 + 6 + 1 + 34 + 1 + 3 + 16 = 76 units).
    let (text, tokens) = recall(&state, 19.0).unwrap_or_default();
    assert_eq!(text, format!("<observations>\n- aaaa\n- {}\n- c\n</observations>", "b".repeat(32)));
    assert_eq!(tokens, 19);
    // One token short of all three drops "aaaa" (69 units).
    assert_eq!(recall(&state, 18.0).map(|(_, tokens)| tokens), Some(18));
    assert_eq!(recall(&state, 8.0), None);
    assert_eq!(recall(&state, 0.0), None);
    assert_eq!(recall(&state, f64::NAN), None);
    assert_eq!(recall(&state, f64::INFINITY).map(|(_, tokens)| tokens), Some(19));
    assert_eq!(recall(&ObservationalState::default(), 1000.0), None);
  }

  #[test]
  fn recall_counts_utf16_units() {
    // "😀😀" is four units: 15 + 2 + 4 + 16 = 37 units, 10 tokens.
    let state = ObservationalState { observations: vec!["😀😀".into()], ..Default::default() };
    assert_eq!(recall(&state, 10.0).map(|(_, tokens)| tokens), Some(10));
    assert_eq!(recall(&state, 9.0), None);
  }

  #[test]
  fn spawn_copies_whatever_the_state() {
    let state = json!({"observations": ["x"]});
    assert_eq!(on_spawn(&state), state);
  }
}
