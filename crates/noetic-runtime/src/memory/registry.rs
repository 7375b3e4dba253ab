//! Registering layers: the raw description a caller gives is validated here (DECISIONS D1), and the resulting set
//! knows its slot order once, so that no phase sorts.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use super::cache_anchor::Placement;
use super::layer::{BudgetConfig, HookKind, HookSet, LayerSpec, OnInitError, RecallMode, Scope};
use super::native::NativeLayer;
use crate::error::ConfigError;
use crate::host::protocol::HostRef;
use crate::js_sketch::Sketch;

/// A `provides` function entry: exposed on `ctx.memory[layerId]` and offered to models as `layerId/name`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProvidedFn {
  pub name: String,
  pub description: String,
  /// JSON Schema of the input, as sent to the model.
  pub input_schema: Arc<Value>,
}

/// Who runs a layer's hooks.
#[derive(Clone)]
pub enum LayerImpl {
  /// A JS layer object the host holds.
  Host(HostRef),
  /// A built-in layer implemented in Rust: its hooks cost no crossing.
  Native(Arc<dyn NativeLayer>),
}

impl std::fmt::Debug for LayerImpl {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      Self::Host(handle) => write!(f, "Host({handle})"),
      Self::Native(_) => f.write_str("Native"),
    }
  }
}

#[derive(Debug, Clone)]
pub struct Layer {
  pub spec: LayerSpec,
  pub imp: LayerImpl,
  pub provides: Vec<ProvidedFn>,
  /// The host's handle for the layer object the user passed, built-ins included (for `ctx.memory`).
  pub handle: Option<HostRef>,
}

impl Layer {
  pub fn has(&self, hook: HookKind) -> bool {
    self.spec.hooks.has(hook)
  }

  pub fn id(&self) -> &str {
    &self.spec.id
  }
}

/// A layer's budget exactly as given, before validation.
#[derive(Debug, Clone, PartialEq)]
pub enum RawBudget {
  Omitted,
  Auto,
  Number(f64),
  Range {
    min: Option<f64>,
    max: Option<f64>,
  },
  /// Anything else; the text describes what it was, for the error message.
  Invalid(String),
}

impl RawBudget {
  /// A layer's `budget` as JS sketched it (`js/sketch.cjs`).
  pub fn of(budget: Sketch) -> Self {
    if budget.is_undefined() {
      return Self::Omitted;
    }
    if budget.as_str() == Some("auto") {
      return Self::Auto;
    }
    if budget.type_of() == "number" {
      return Self::Number(budget.as_number().unwrap_or(f64::NAN));
    }
    if budget.is_object() {
      return Self::Range { min: budget.field("min").as_number(), max: budget.field("max").as_number() };
    }
    // As `${typeof budget} ${JSON.stringify(budget)}` would name it.
    let json = budget.plain().map_or_else(|| "undefined".to_owned(), Value::to_string);
    Self::Invalid(format!("{} {json}", budget.type_of()))
  }
}

/// A layer as a caller describes it, before validation.
#[derive(Debug, Clone)]
pub struct RawLayer {
  pub id: Option<String>,
  pub slot: Option<f64>,
  pub scope: Option<String>,
  pub budget: RawBudget,
  /// Each hook key present on `hooks`, with the JS `typeof` of its value.
  pub hooks: Vec<(String, String)>,
  pub timeouts: RawTimeouts,
  pub on_init_error: Option<String>,
  pub recall_mode: Option<String>,
  /// `placement` as given: `None` when absent.
  pub placement: Option<String>,
  pub provides: Vec<ProvidedFn>,
  pub imp: LayerImpl,
}

/// One `timeouts` entry exactly as given.
#[derive(Debug, Clone, PartialEq)]
pub enum RawTimeout {
  Ms(f64),
  /// Not a number; the text describes what it was, for the error message.
  NotANumber(String),
}

/// A layer's `timeouts` exactly as given: its entries, or a description of a value that is not an object.
#[derive(Debug, Clone, PartialEq)]
pub enum RawTimeouts {
  Entries(Vec<(String, RawTimeout)>),
  NotAnObject(String),
}

impl Default for RawTimeouts {
  fn default() -> Self {
    Self::Entries(Vec::new())
  }
}

impl RawTimeouts {
  /// A layer's `timeouts` as JS sketched it; none (or null) and null entries keep the defaults.
  pub fn of(timeouts: Sketch) -> Self {
    if timeouts.is_nullish() {
      return Self::default();
    }
    if !timeouts.is_record() {
      return Self::NotAnObject(timeouts.described());
    }
    let entry = |ms: Sketch| match ms.type_of() {
      "number" => RawTimeout::Ms(ms.as_number().unwrap_or(f64::NAN)),
      _ => RawTimeout::NotANumber(ms.described()),
    };
    let given = timeouts.entries().into_iter().filter(|(_, ms)| !ms.is_nullish());
    Self::Entries(given.map(|(hook, ms)| (hook.to_owned(), entry(ms))).collect())
  }

  /// Entries that are all numbers.
  pub fn ms(entries: &[(&str, f64)]) -> Self {
    Self::Entries(entries.iter().map(|&(name, ms)| (name.to_owned(), RawTimeout::Ms(ms))).collect())
  }
}

fn invalid(code: &str, message: String, hint: &str) -> ConfigError {
  ConfigError::new(code, message, hint)
}

fn validate_budget(id: &str, raw: &RawBudget) -> Result<BudgetConfig, ConfigError> {
  const CODE: &str = "INVALID_LAYER_BUDGET";
  const HINT: &str = "Use a non-negative number, { min, max } with 0 <= min <= max, or 'auto' (Infinity is allowed).";
  let bad = |what: String| invalid(CODE, format!("Memory layer '{id}' has an invalid budget: {what}."), HINT);
  let check = |name: &str, n: f64| {
    if n.is_nan() {
      Err(bad(format!("{name} is NaN")))
    } else if n < 0.0 {
      Err(bad(format!("{name} is negative ({n})")))
    } else {
      Ok(n)
    }
  };
  match raw {
    RawBudget::Omitted | RawBudget::Auto => Ok(BudgetConfig::Auto),
    RawBudget::Number(n) => Ok(BudgetConfig::Fixed(check("budget", *n)?)),
    RawBudget::Range { min, max } => {
      let min = check("min", min.ok_or_else(|| bad("min is missing".into()))?)?;
      let max = check("max", max.ok_or_else(|| bad("max is missing".into()))?)?;
      if min > max {
        return Err(bad(format!("min ({min}) is greater than max ({max})")));
      }
      Ok(BudgetConfig::Range { min, max })
    }
    RawBudget::Invalid(what) => Err(bad(what.clone())),
  }
}

/// Each hook's timeout: a number of milliseconds >= 0 (0 = no timeout, as upstream) or Infinity. Names that are no
/// hook are ignored, as upstream ignores them; NaN, negative numbers and non-numbers would silently disable the
/// timeout or fire it at once, so they are rejected.
pub fn validate_timeouts(id: &str, raw: RawTimeouts) -> Result<[Option<f64>; HookKind::COUNT], ConfigError> {
  const CODE: &str = "INVALID_LAYER_TIMEOUT";
  const HINT: &str = "Use { hookName: ms } with ms a number >= 0 (0 disables the timeout) or Infinity.";
  let entries = match raw {
    RawTimeouts::Entries(entries) => entries,
    RawTimeouts::NotAnObject(what) => {
      return Err(invalid(CODE, format!("Memory layer '{id}' has `timeouts` {what}; expected an object."), HINT));
    }
  };
  let mut timeouts = [None; HookKind::COUNT];
  for (name, value) in entries {
    // `renderDelta` is no name of 1.0.0's timeouts (ignored there, so here), and runs under the recall timeout.
    let Some(hook) = HookKind::from_name(&name).filter(|hook| *hook != HookKind::RenderDelta) else { continue };
    let bad =
      |what: String| invalid(CODE, format!("Memory layer '{id}' has an invalid timeout for '{name}': {what}."), HINT);
    timeouts[hook as usize] = Some(match value {
      RawTimeout::Ms(ms) if ms.is_nan() => return Err(bad("NaN".into())),
      RawTimeout::Ms(ms) if ms < 0.0 => return Err(bad(format!("{} is negative", crate::js_number(ms)))),
      RawTimeout::Ms(ms) => ms,
      RawTimeout::NotANumber(what) => return Err(bad(format!("{what}, not a number"))),
    });
  }
  Ok(timeouts)
}

fn validate(raw: RawLayer) -> Result<Layer, ConfigError> {
  let id = match raw.id {
    Some(id) if !id.is_empty() => id,
    _ => {
      return Err(invalid(
        "INVALID_LAYER_ID",
        "A memory layer has no id.".into(),
        "Give every layer a unique, non-empty string `id`.",
      ));
    }
  };
  let slot = match raw.slot {
    Some(slot) if slot.is_finite() => slot,
    other => {
      let what = other.map_or_else(|| "missing".to_owned(), |n| n.to_string());
      return Err(invalid(
        "INVALID_LAYER_SLOT",
        format!("Memory layer '{id}' has an invalid slot ({what})."),
        "Use a finite number, such as one of the Slot constants.",
      ));
    }
  };
  let scope = raw.scope.as_deref().and_then(Scope::parse).ok_or_else(|| {
    invalid(
      "INVALID_LAYER_SCOPE",
      format!("Memory layer '{id}' has an invalid scope ({}).", raw.scope.as_deref().unwrap_or("missing")),
      "Use 'thread', 'resource', 'global' or 'execution'.",
    )
  })?;
  let budget = validate_budget(&id, &raw.budget)?;
  let timeouts = validate_timeouts(&id, raw.timeouts)?;
  let mut hooks = HookSet::default();
  for (name, kind) in &raw.hooks {
    let Some(hook) = HookKind::from_name(name) else { continue };
    match kind.as_str() {
      "function" => hooks = hooks.with(hook),
      "undefined" => {}
      // 1.0.0 ignores a `renderDelta` key, whatever it holds: only a function is taken as the hook.
      _ if hook == HookKind::RenderDelta => {}
      other => {
        return Err(invalid(
          "INVALID_LAYER_HOOK",
          format!("Memory layer '{id}' hook '{name}' is a {other}, not a function."),
          "Every hook must be a function (async or not), or be left out.",
        ));
      }
    }
  }
  let mut spec = LayerSpec::new(id, slot, scope);
  spec.budget = budget;
  spec.hooks = hooks;
  spec.timeouts = timeouts;
  spec.on_init_error = OnInitError::parse(raw.on_init_error.as_deref());
  spec.recall_mode = RecallMode::parse(raw.recall_mode.as_deref());
  spec.placement = placement_of(&spec.id, raw.placement.as_deref())?.unwrap_or_default();
  let handle = match raw.imp {
    LayerImpl::Host(handle) => Some(handle),
    LayerImpl::Native(_) => None,
  };
  Ok(Layer { spec, imp: raw.imp, provides: raw.provides, handle })
}

/// A layer's `placement`: `None` when absent; anything but upstream 5.x's three words is an error.
pub fn placement_of(id: &str, given: Option<&str>) -> Result<Option<Placement>, ConfigError> {
  let Some(given) = given else { return Ok(None) };
  Placement::parse(given).map(Some).ok_or_else(|| {
    invalid(
      "INVALID_LAYER_PLACEMENT",
      format!("Memory layer '{id}' has an invalid placement ({}).", Value::from(given)),
      "Use 'anchor' (pinned before the history), 'live' (after it) or 'auto' (the runtime chooses), or leave it out.",
    )
  })
}

/// What a user may override on a built-in layer's object (`{...staticContent(opts), timeouts, onInitError}`), checked
/// as a JS layer's own settings are.
pub fn override_builtin(
  layer: &mut Layer,
  timeouts: Option<RawTimeouts>,
  on_init_error: Option<&str>,
) -> Result<(), ConfigError> {
  if let Some(raw) = timeouts {
    let given = validate_timeouts(layer.id(), raw)?;
    for (slot, ms) in layer.spec.timeouts.iter_mut().zip(given) {
      if ms.is_some() {
        *slot = ms;
      }
    }
  }
  if on_init_error.is_some() {
    layer.spec.on_init_error = OnInitError::parse(on_init_error);
  }
  Ok(())
}

/// The layers of a context, in the caller's order, with their slot order computed once.
#[derive(Debug, Clone, Default)]
pub struct LayerSet {
  layers: Vec<Arc<Layer>>,
  by_slot: Vec<usize>,
}

impl LayerSet {
  /// Validates every layer and rejects duplicate ids.
  pub fn register(raws: Vec<RawLayer>) -> Result<Self, ConfigError> {
    let mut seen = HashSet::new();
    let mut layers = Vec::with_capacity(raws.len());
    for raw in raws {
      let layer = validate(raw)?;
      if !seen.insert(layer.spec.id.clone()) {
        return Err(invalid(
          "DUPLICATE_LAYER_ID",
          format!("Two memory layers have the id '{}'.", layer.spec.id),
          "Layer ids key state, storage and tools; give each layer its own id.",
        ));
      }
      layers.push(Arc::new(layer));
    }
    Ok(Self::from_layers(layers))
  }

  pub fn from_layers(layers: Vec<Arc<Layer>>) -> Self {
    let mut by_slot: Vec<usize> = (0..layers.len()).collect();
    // Stable: equal slots keep array order (D2). Slots are finite, so the comparison is total.
    by_slot.sort_by(|&a, &b| layers[a].spec.slot.total_cmp(&layers[b].spec.slot));
    Self { layers, by_slot }
  }

  pub fn is_empty(&self) -> bool {
    self.layers.is_empty()
  }

  pub fn len(&self) -> usize {
    self.layers.len()
  }

  /// Caller's order.
  pub fn layers(&self) -> &[Arc<Layer>] {
    &self.layers
  }

  /// Slot order, ties in caller's order.
  pub fn in_slot_order(&self) -> impl DoubleEndedIterator<Item = &Arc<Layer>> + Clone {
    self.by_slot.iter().map(|&i| &self.layers[i])
  }

  pub fn get(&self, id: &str) -> Option<&Arc<Layer>> {
    self.layers.iter().find(|layer| layer.spec.id == id)
  }

  /// These layers with `inner` provided over them (upstream's `provide`): a layer `inner` has replaces the one of
  /// the same id, and the rest keep their order, `inner`'s after them.
  pub fn provided(&self, inner: &LayerSet) -> LayerSet {
    let outer = self.layers.iter().filter(|layer| inner.get(layer.id()).is_none());
    LayerSet::from_layers(outer.chain(&inner.layers).cloned().collect())
  }

  pub fn any_has(&self, hook: HookKind) -> bool {
    self.layers.iter().any(|layer| layer.has(hook))
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn raw(id: &str, slot: f64) -> RawLayer {
    RawLayer {
      id: Some(id.into()),
      slot: Some(slot),
      scope: Some("thread".into()),
      budget: RawBudget::Omitted,
      hooks: vec![("recall".into(), "function".into())],
      timeouts: RawTimeouts::default(),
      on_init_error: None,
      recall_mode: None,
      placement: None,
      provides: vec![],
      imp: LayerImpl::Host(0),
    }
  }

  fn code(result: Result<LayerSet, ConfigError>) -> String {
    result.err().map(|e| e.code).unwrap_or_default()
  }

  #[test]
  fn orders_by_slot_with_ties_in_array_order() {
    let set = LayerSet::register(vec![raw("c", 300.0), raw("a", 100.0), raw("b", 300.0), raw("z", 50.0)]).unwrap();
    let order: Vec<&str> = set.in_slot_order().map(|l| l.id()).collect();
    assert_eq!(order, ["z", "a", "c", "b"]);
  }

  #[test]
  fn rejects_bad_layers_with_specific_codes() {
    assert_eq!(code(LayerSet::register(vec![raw("a", 1.0), raw("a", 2.0)])), "DUPLICATE_LAYER_ID");
    assert_eq!(code(LayerSet::register(vec![raw("a", f64::NAN)])), "INVALID_LAYER_SLOT");
    assert_eq!(code(LayerSet::register(vec![raw("a", f64::INFINITY)])), "INVALID_LAYER_SLOT");
    assert_eq!(code(LayerSet::register(vec![RawLayer { id: None, ..raw("a", 1.0) }])), "INVALID_LAYER_ID");
    assert_eq!(
      code(LayerSet::register(vec![RawLayer { scope: Some("session".into()), ..raw("a", 1.0) }])),
      "INVALID_LAYER_SCOPE"
    );
    for budget in [
      RawBudget::Number(f64::NAN),
      RawBudget::Number(-1.0),
      RawBudget::Range { min: Some(900.0), max: Some(100.0) },
      RawBudget::Range { min: Some(f64::NAN), max: Some(100.0) },
      RawBudget::Invalid("a string 'lots'".into()),
    ] {
      assert_eq!(code(LayerSet::register(vec![RawLayer { budget, ..raw("a", 1.0) }])), "INVALID_LAYER_BUDGET");
    }
    let hooks = vec![("recall".into(), "string".into())];
    assert_eq!(code(LayerSet::register(vec![RawLayer { hooks, ..raw("a", 1.0) }])), "INVALID_LAYER_HOOK");
  }

  #[test]
  fn accepts_infinite_budgets_and_reads_modes() {
    let layer = RawLayer {
      budget: RawBudget::Range { min: Some(0.0), max: Some(f64::INFINITY) },
      recall_mode: Some("eventual".into()),
      on_init_error: Some("disable".into()),
      timeouts: RawTimeouts::ms(&[("recall", 250.0)]),
      ..raw("a", 1.0)
    };
    let set = LayerSet::register(vec![layer]).unwrap();
    let spec = &set.layers()[0].spec;
    assert_eq!(spec.recall_mode, RecallMode::Eventual);
    assert_eq!(spec.on_init_error, OnInitError::Disable);
    assert_eq!(spec.timeout_ms(HookKind::Recall), 250.0);
    assert_eq!(spec.timeout_ms(HookKind::Store), 30_000.0);
  }

  fn timeout_error(timeouts: RawTimeouts) -> Option<ConfigError> {
    LayerSet::register(vec![RawLayer { timeouts, ..raw("a", 1.0) }]).err()
  }

  #[test]
  fn rejects_timeouts_that_would_fire_at_once_or_never() {
    let not_a_number =
      RawTimeouts::Entries(vec![("recall".into(), RawTimeout::NotANumber("'soon' (a string)".into()))]);
    for (timeouts, named) in [
      (RawTimeouts::ms(&[("recall", f64::NAN)]), "NaN"),
      (RawTimeouts::ms(&[("store", -5.0)]), "-5 is negative"),
      (RawTimeouts::ms(&[("init", f64::NEG_INFINITY)]), "-Infinity is negative"),
      (not_a_number, "'soon' (a string), not a number"),
      (RawTimeouts::NotAnObject("5000 (a number)".into()), "`timeouts` 5000 (a number)"),
    ] {
      let error = timeout_error(timeouts).expect("rejected");
      assert_eq!(error.code, "INVALID_LAYER_TIMEOUT");
      assert!(error.message.contains(named), "{}", error.message);
      assert!(error.message.contains("'a'"), "names the layer: {}", error.message);
    }
  }

  #[test]
  fn accepts_zero_infinite_and_long_timeouts_and_ignores_unknown_names() {
    let timeouts =
      RawTimeouts::ms(&[("recall", 0.0), ("store", f64::INFINITY), ("init", 2_592_000_000.0), ("recal", -1.0)]);
    let set = LayerSet::register(vec![RawLayer { timeouts, ..raw("a", 1.0) }]).unwrap();
    let spec = &set.layers()[0].spec;
    assert_eq!(spec.timeout_ms(HookKind::Recall), 0.0);
    assert_eq!(spec.timeout_ms(HookKind::Store), f64::INFINITY);
    assert_eq!(spec.timeout_ms(HookKind::Init), 2_592_000_000.0);
    assert_eq!(spec.timeout_ms(HookKind::Dispose), 5_000.0);
  }

  #[test]
  fn render_delta_is_a_hook_only_as_a_function_and_runs_under_the_recall_timeout() {
    // 1.0.0 knows no `renderDelta`: whatever else it holds, or a timeout named for it, is ignored, not refused.
    for kind in ["string", "number"] {
      let hooks = vec![("renderDelta".into(), kind.to_owned())];
      let timeouts = RawTimeouts::ms(&[("renderDelta", -1.0)]);
      let set = LayerSet::register(vec![RawLayer { hooks, timeouts, ..raw("a", 1.0) }]).unwrap();
      assert!(!set.layers()[0].has(HookKind::RenderDelta));
    }
    let hooks = vec![("renderDelta".into(), "function".into())];
    let timeouts = RawTimeouts::ms(&[("recall", 250.0), ("renderDelta", 9.0)]);
    let set = LayerSet::register(vec![RawLayer { hooks, timeouts, ..raw("a", 1.0) }]).unwrap();
    let spec = &set.layers()[0].spec;
    assert!(spec.hooks.has(HookKind::RenderDelta));
    assert_eq!(spec.timeout_ms(HookKind::RenderDelta), 250.0);
    assert_eq!(HookKind::from_name("renderDelta"), Some(HookKind::RenderDelta));
  }
}
