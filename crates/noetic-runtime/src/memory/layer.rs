//! What the runtime knows about a memory layer: its slot, scope, budget, which hooks it has and their timeouts.
//! The hooks themselves live with whoever implements the layer (JS, through the host, or a built-in in Rust).

use super::cache_anchor::Placement;
use std::fmt;

/// Persistence boundary of a layer's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
  Thread,
  Resource,
  Global,
  Execution,
}

impl Scope {
  pub fn parse(text: &str) -> Option<Self> {
    Some(match text {
      "thread" => Self::Thread,
      "resource" => Self::Resource,
      "global" => Self::Global,
      "execution" => Self::Execution,
      _ => return None,
    })
  }

  pub fn as_str(self) -> &'static str {
    match self {
      Self::Thread => "thread",
      Self::Resource => "resource",
      Self::Global => "global",
      Self::Execution => "execution",
    }
  }

  /// Whether state in this scope outlives the execution, and so is mirrored to storage.
  pub fn is_durable(self) -> bool {
    self != Self::Execution
  }
}

impl fmt::Display for Scope {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str(self.as_str())
  }
}

/// `BudgetConfig`: a number N (meaning `{min: 0, max: N}`), a `{min, max}` range, or `'auto'` (also the default).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum BudgetConfig {
  Fixed(f64),
  Range {
    min: f64,
    max: f64,
  },
  #[default]
  Auto,
}

impl BudgetConfig {
  /// The guaranteed share: an object budget's `min`, otherwise 0.
  pub fn min(self) -> f64 {
    match self {
      Self::Range { min, .. } => min,
      Self::Fixed(_) | Self::Auto => 0.0,
    }
  }

  /// The cap: N for a number, `max` for a range, +∞ for auto.
  pub fn max(self) -> f64 {
    match self {
      Self::Fixed(n) => n,
      Self::Range { max, .. } => max,
      Self::Auto => f64::INFINITY,
    }
  }
}

/// The hooks, in the order the public types list them: upstream 1.0.0's eleven, then upstream 5.x's `renderDelta`
/// (prompt-cache anchoring, DECISIONS K8), which runs only with `contextCache` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum HookKind {
  Init = 0,
  Recall,
  Store,
  OnSpawn,
  OnReturn,
  OnComplete,
  Dispose,
  BeforeToolCall,
  AfterModelCall,
  OnItemAppend,
  ProjectHistory,
  RenderDelta,
}

impl HookKind {
  /// How many kinds there are: the size of the per-hook tables.
  pub const COUNT: usize = 12;

  pub const ALL: [Self; Self::COUNT] = [
    Self::Init,
    Self::Recall,
    Self::Store,
    Self::OnSpawn,
    Self::OnReturn,
    Self::OnComplete,
    Self::Dispose,
    Self::BeforeToolCall,
    Self::AfterModelCall,
    Self::OnItemAppend,
    Self::ProjectHistory,
    Self::RenderDelta,
  ];

  /// The hook's name as JS spells it, also the `hook` of a diagnostic.
  pub fn name(self) -> &'static str {
    match self {
      Self::Init => "init",
      Self::Recall => "recall",
      Self::Store => "store",
      Self::OnSpawn => "onSpawn",
      Self::OnReturn => "onReturn",
      Self::OnComplete => "onComplete",
      Self::Dispose => "dispose",
      Self::BeforeToolCall => "beforeToolCall",
      Self::AfterModelCall => "afterModelCall",
      Self::OnItemAppend => "onItemAppend",
      Self::ProjectHistory => "projectHistory",
      Self::RenderDelta => "renderDelta",
    }
  }

  pub fn from_name(name: &str) -> Option<Self> {
    Self::ALL.into_iter().find(|hook| hook.name() == name)
  }

  /// Upstream's default timeout in milliseconds, used when the layer sets none.
  pub fn default_timeout_ms(self) -> f64 {
    match self {
      Self::Init | Self::AfterModelCall | Self::OnSpawn | Self::OnReturn => 10_000.0,
      Self::Store | Self::OnComplete => 30_000.0,
      Self::Recall | Self::OnItemAppend | Self::ProjectHistory | Self::BeforeToolCall | Self::Dispose => 5_000.0,
      // Never read: renderDelta runs under the layer's recall timeout (see `LayerSpec::timeout_ms`).
      Self::RenderDelta => 5_000.0,
    }
  }
}

/// Which hooks a layer has, as a bit set, so that a phase skips layers without its hook before anything crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HookSet(u16);

impl HookSet {
  pub fn with(mut self, hook: HookKind) -> Self {
    self.0 |= 1 << hook as u8;
    self
  }

  pub fn has(self, hook: HookKind) -> bool {
    self.0 & (1 << hook as u8) != 0
  }

  pub fn bits(self) -> u16 {
    self.0
  }

  pub fn from_bits(bits: u16) -> Self {
    Self(bits & ((1 << HookKind::ALL.len()) - 1))
  }
}

impl FromIterator<HookKind> for HookSet {
  fn from_iter<T: IntoIterator<Item = HookKind>>(iter: T) -> Self {
    iter.into_iter().fold(Self::default(), Self::with)
  }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnInitError {
  #[default]
  Throw,
  Disable,
}

impl OnInitError {
  /// `'disable'` disables; anything else (unset included) throws, the default.
  pub fn parse(text: Option<&str>) -> Self {
    if text == Some("disable") { Self::Disable } else { Self::Throw }
  }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecallMode {
  #[default]
  Atomic,
  Eventual,
}

impl RecallMode {
  /// As upstream, anything but `'eventual'` (a typo, a wrong type, nothing) is atomic: no value is rejected.
  pub fn parse(text: Option<&str>) -> Self {
    match text {
      Some("eventual") => Self::Eventual,
      _ => Self::Atomic,
    }
  }

  pub fn as_str(self) -> &'static str {
    match self {
      Self::Atomic => "atomic",
      Self::Eventual => "eventual",
    }
  }
}

/// A layer as the runtime sees it. Validated when it is registered (see `validate`).
#[derive(Debug, Clone, PartialEq)]
pub struct LayerSpec {
  pub id: String,
  pub slot: f64,
  pub scope: Scope,
  pub budget: BudgetConfig,
  pub hooks: HookSet,
  /// Per-hook overrides in milliseconds, indexed by `HookKind as usize`.
  pub timeouts: [Option<f64>; HookKind::COUNT],
  pub on_init_error: OnInitError,
  pub recall_mode: RecallMode,
  /// Which band of the request the layer's output takes when prompt-cache anchoring is on (`placement`).
  pub placement: Placement,
}

impl LayerSpec {
  pub fn new(id: impl Into<String>, slot: f64, scope: Scope) -> Self {
    Self {
      id: id.into(),
      slot,
      scope,
      budget: BudgetConfig::Auto,
      hooks: HookSet::default(),
      timeouts: [None; HookKind::COUNT],
      on_init_error: OnInitError::Throw,
      recall_mode: RecallMode::Atomic,
      placement: Placement::Auto,
    }
  }

  /// The hook's timeout; renderDelta has none of its own and runs under the layer's recall timeout (as upstream 5.x:
  /// it is part of the recall's assembly).
  pub fn timeout_ms(&self, hook: HookKind) -> f64 {
    let hook = if hook == HookKind::RenderDelta { HookKind::Recall } else { hook };
    self.timeouts[hook as usize].unwrap_or_else(|| hook.default_timeout_ms())
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn budget_bounds_follow_upstream() {
    assert_eq!(BudgetConfig::Fixed(500.0).min(), 0.0);
    assert_eq!(BudgetConfig::Fixed(500.0).max(), 500.0);
    assert_eq!(BudgetConfig::Range { min: 200.0, max: 1500.0 }.min(), 200.0);
    assert_eq!(BudgetConfig::Auto.max(), f64::INFINITY);
  }

  #[test]
  fn hook_set_and_default_timeouts() {
    let set: HookSet = [HookKind::Init, HookKind::Store].into_iter().collect();
    assert!(set.has(HookKind::Store));
    assert!(!set.has(HookKind::Recall));
    assert_eq!(HookKind::AfterModelCall.default_timeout_ms(), 10_000.0);
    assert_eq!(HookKind::from_name("projectHistory"), Some(HookKind::ProjectHistory));
  }
}
