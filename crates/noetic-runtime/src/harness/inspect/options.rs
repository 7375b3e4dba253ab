//! `startInspector(harness, options)`'s options, read from a [`Sketch`] of what JS was given, defaults filled in.

use serde::Serialize;

use crate::ConfigError;
use crate::js_sketch::Sketch;

/// Where the inspector listens and how much it keeps.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InspectorOptions {
  pub host: String,
  /// 0 for any free port.
  pub port: u16,
  pub turns_per_thread: u32,
  pub threads: u32,
}

const CODE: &str = "INVALID_INSPECTOR_OPTIONS";
const DEFAULT_TURNS_PER_THREAD: u32 = 20;
const DEFAULT_THREADS: u32 = 200;
const MOST_KEPT: f64 = 100_000.0;

/// A whole number in `min..=max`, or `default` when not given.
fn whole(value: Sketch, default: u32, min: f64, max: f64) -> Option<f64> {
  if value.is_undefined() {
    return Some(f64::from(default));
  }
  value.as_number().filter(|n| n.fract() == 0.0 && (min..=max).contains(n))
}

pub fn checked(options: Sketch) -> Result<InspectorOptions, ConfigError> {
  if !(options.is_undefined() || options.is_object()) {
    return Err(ConfigError::new(
      CODE,
      "startInspector(harness, options): options must be an object.",
      "Pass { port } or nothing.",
    ));
  }
  let port = options.field("port");
  let Some(port_number) = whole(port, 0, 0.0, 65_535.0) else {
    return Err(ConfigError::new(
      CODE,
      format!("startInspector: port must be an integer from 0 to 65535, not {}.", port.js_string()),
      "Pass 0 (or nothing) for any free port.",
    ));
  };
  let host = options.field("host");
  let host = match host.as_str() {
    Some(host) if !host.is_empty() => host.to_owned(),
    None if host.is_undefined() => "127.0.0.1".to_owned(),
    _ => {
      return Err(ConfigError::new(
        CODE,
        "startInspector: host must be a non-empty string.",
        "Leave it unset for '127.0.0.1'.",
      ));
    }
  };
  let mut kept = [("turnsPerThread", DEFAULT_TURNS_PER_THREAD), ("threads", DEFAULT_THREADS)];
  for (key, count) in &mut kept {
    let value = options.field(key);
    match whole(value, *count, 1.0, MOST_KEPT) {
      Some(n) => *count = n as u32,
      None => {
        return Err(ConfigError::new(
          CODE,
          format!("startInspector: {key} must be an integer from 1 to 100000, not {}.", value.js_string()),
          format!("It bounds what the inspector keeps; the default is {count}."),
        ));
      }
    }
  }
  Ok(InspectorOptions { host, port: port_number as u16, turns_per_thread: kept[0].1, threads: kept[1].1 })
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  #[test]
  fn defaults_and_limits() {
    let options = checked(Sketch::of(&json!({}))).unwrap();
    assert_eq!(options, InspectorOptions { host: "127.0.0.1".into(), port: 0, turns_per_thread: 20, threads: 200 });
    let error = checked(Sketch::of(&json!({ "port": 70000 }))).unwrap_err();
    assert_eq!(error.message, "startInspector: port must be an integer from 0 to 65535, not 70000.");
    let error = checked(Sketch::of(&json!({ "threads": 0.5 }))).unwrap_err();
    assert_eq!(
      (error.message.as_str(), error.hint.as_str()),
      (
        "startInspector: threads must be an integer from 1 to 100000, not 0.5.",
        "It bounds what the inspector keeps; the default is 200."
      )
    );
    assert!(checked(Sketch::of(&json!("x"))).is_err());
    assert!(checked(Sketch::of(&json!({ "host": "" }))).is_err());
  }
}
