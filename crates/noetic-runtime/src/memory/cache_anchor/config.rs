//! `contextCache`: the harness option that turns prompt-cache anchoring on, with upstream 5.x's names and
//! defaults. Off unless given: without it a request is exactly what 1.0.0 sends.

use serde_json::{Value, json};

use crate::error::ConfigError;
use crate::js_sketch::Sketch;

/// The tuning of anchoring. Every field has upstream 5.x's default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheConfig {
  pub enabled: bool,
  /// A first round that reads fewer cached tokens than this (or half the cacheable prefix, when that is less)
  /// is a miss.
  pub min_cached_tokens: f64,
  /// Assemblies an epoch serves before a miss counts: the first one writes the cache.
  pub min_epoch_assemblies: u32,
  /// Assemblies after which an epoch re-anchors whatever the cache says.
  pub max_epoch_assemblies: u32,
  /// The epoch's updates may take at most this share of the window before the epoch re-anchors.
  pub delta_budget_fraction: f64,
  /// An `auto` layer that changes at least this often moves to the live band at the next epoch.
  pub auto_demote_churn: f64,
  /// An `auto` layer that changes at most this often moves back to the anchor band at the next epoch.
  pub auto_promote_churn: f64,
  /// Assemblies a layer is watched before its band may move.
  pub min_churn_samples: f64,
  /// Share of the churn counts carried into a new epoch.
  pub churn_decay: f64,
}

impl Default for CacheConfig {
  fn default() -> Self {
    Self {
      enabled: true,
      min_cached_tokens: 100.0,
      min_epoch_assemblies: 2,
      max_epoch_assemblies: 50,
      delta_budget_fraction: 0.15,
      auto_demote_churn: 0.5,
      auto_promote_churn: 0.2,
      min_churn_samples: 3.0,
      churn_decay: 0.5,
    }
  }
}

impl CacheConfig {
  /// The option as given; `None` when anchoring is off (absent, `null`, or `enabled: false`).
  pub fn from_option(value: Sketch<'_>) -> Result<Option<Self>, ConfigError> {
    if value.is_nullish() {
      return Ok(None);
    }
    if !value.is_record() {
      return Err(invalid("contextCache must be an object", value));
    }
    let mut config = Self::default();
    let enabled = value.field("enabled");
    if !enabled.is_nullish() {
      config.enabled = enabled.as_bool().ok_or_else(|| invalid("contextCache.enabled must be a boolean", enabled))?;
    }
    let read = |key: &str, kind: Kind| read(value.field(key), key, kind);
    if let Some(x) = read("minCachedTokens", Kind::NonNegative)? {
      config.min_cached_tokens = x;
    }
    if let Some(x) = read("minEpochAssemblies", Kind::Whole)? {
      config.min_epoch_assemblies = x as u32;
    }
    if let Some(x) = read("maxEpochAssemblies", Kind::Whole)? {
      config.max_epoch_assemblies = (x as u32).max(1);
    }
    if let Some(x) = read("deltaBudgetFraction", Kind::NonNegative)? {
      config.delta_budget_fraction = x;
    }
    if let Some(x) = read("autoDemoteChurn", Kind::Share)? {
      config.auto_demote_churn = x;
    }
    if let Some(x) = read("autoPromoteChurn", Kind::Share)? {
      config.auto_promote_churn = x;
    }
    if let Some(x) = read("minChurnSamples", Kind::NonNegative)? {
      config.min_churn_samples = x;
    }
    if let Some(x) = read("churnDecay", Kind::Share)? {
      config.churn_decay = x;
    }
    if config.auto_promote_churn > config.auto_demote_churn {
      return Err(ConfigError::new(
        "INVALID_CONTEXT_CACHE",
        format!(
          "contextCache.autoPromoteChurn ({}) is above autoDemoteChurn ({}): a layer could never settle in either band.",
          crate::js_number(config.auto_promote_churn),
          crate::js_number(config.auto_demote_churn)
        ),
        "Keep autoPromoteChurn at or below autoDemoteChurn (defaults 0.2 and 0.5).",
      ));
    }
    Ok(config.enabled.then_some(config))
  }

  /// The settings as JSON, every field present: what the harness's settings carry to where the harness is made.
  pub fn to_json(&self) -> Value {
    json!({
      "enabled": self.enabled,
      "minCachedTokens": self.min_cached_tokens,
      "minEpochAssemblies": self.min_epoch_assemblies,
      "maxEpochAssemblies": self.max_epoch_assemblies,
      "deltaBudgetFraction": self.delta_budget_fraction,
      "autoDemoteChurn": self.auto_demote_churn,
      "autoPromoteChurn": self.auto_promote_churn,
      "minChurnSamples": self.min_churn_samples,
      "churnDecay": self.churn_decay,
    })
  }
}

#[derive(Clone, Copy)]
enum Kind {
  NonNegative,
  Whole,
  Share,
}

/// A numeric field: absent (or `null`) is `None`; anything but a finite number of the right kind is an error.
fn read(value: Sketch<'_>, key: &str, kind: Kind) -> Result<Option<f64>, ConfigError> {
  if value.is_nullish() {
    return Ok(None);
  }
  let what = match kind {
    Kind::NonNegative => "a finite number, 0 or more",
    Kind::Whole => "a whole number, 0 or more",
    Kind::Share => "a number between 0 and 1",
  };
  let x = value.as_number().filter(|x| x.is_finite() && *x >= 0.0);
  let x = match (kind, x) {
    (Kind::Whole, Some(x)) if x.fract() != 0.0 || x > f64::from(u32::MAX) => None,
    (Kind::Share, Some(x)) if x > 1.0 => None,
    (_, x) => x,
  };
  x.map(Some).ok_or_else(|| invalid(&format!("contextCache.{key} must be {what}"), value))
}

fn invalid(what: &str, value: Sketch<'_>) -> ConfigError {
  ConfigError::new(
    "INVALID_CONTEXT_CACHE",
    format!("{what}, got {}.", value.described()),
    "Pass contextCache: { enabled: true } (every other field is optional), or leave it out.",
  )
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn absent_or_disabled_is_off() {
    assert_eq!(CacheConfig::from_option(Sketch::undefined()).unwrap(), None);
    assert_eq!(CacheConfig::from_option(Sketch::of(&Value::Null)).unwrap(), None);
    assert_eq!(CacheConfig::from_option(Sketch::of(&json!({ "enabled": false }))).unwrap(), None);
  }

  #[test]
  fn given_fields_override_upstreams_defaults() {
    let given = json!({ "maxEpochAssemblies": 10, "churnDecay": 0.25 });
    let config = CacheConfig::from_option(Sketch::of(&given)).unwrap().expect("on when given");
    assert_eq!(config.max_epoch_assemblies, 10);
    assert_eq!(config.churn_decay, 0.25);
    assert_eq!(config.min_cached_tokens, 100.0);
    assert_eq!(config.delta_budget_fraction, 0.15);
    // What the settings carry reads back the same.
    assert_eq!(CacheConfig::from_option(Sketch::of(&config.to_json())).unwrap(), Some(config));
  }

  #[test]
  fn bad_values_are_config_errors_that_name_the_field() {
    for (given, names) in [
      (json!(true), "contextCache must be an object"),
      (json!({ "enabled": "yes" }), "contextCache.enabled"),
      (json!({ "minCachedTokens": -1 }), "contextCache.minCachedTokens"),
      (json!({ "maxEpochAssemblies": 2.5 }), "contextCache.maxEpochAssemblies"),
      (json!({ "autoDemoteChurn": 1.5 }), "contextCache.autoDemoteChurn"),
      (json!({ "autoPromoteChurn": 0.6 }), "autoPromoteChurn (0.6) is above"),
    ] {
      let error = CacheConfig::from_option(Sketch::of(&given)).unwrap_err();
      assert_eq!(error.code, "INVALID_CONTEXT_CACHE");
      assert!(error.message.contains(names), "{}", error.message);
    }
  }
}
