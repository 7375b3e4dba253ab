//! The Noetic runtime: everything that decides anything, with no napi in sight.
//!
//! The binding crate at the repository root converts JS values and dispatches calls; this crate owns items and
//! their costs, budgets, projection, the memory-layer lifecycle, the step interpreter and the harness. User code
//! (hooks, step functions, tools, storage adapters) is reached through the [`host::Host`] trait.

pub mod adapters;
pub mod error;
pub mod harness;
pub mod host;
pub mod items;
pub mod js_date;
pub mod js_layout;
pub mod js_sketch;
pub mod js_text;
pub mod js_time;
pub mod js_value;
pub mod memory;
pub mod otel;
pub mod provider;
pub mod steps;
pub mod storage;
pub mod tokens;
pub mod tools;
pub mod workflow;

pub use error::{ConfigError, NoeticError};

/// A number as JS's `String(n)` prints it, for messages that must match upstream's.
pub fn js_number(n: f64) -> String {
  items::js_number_string(n)
}
