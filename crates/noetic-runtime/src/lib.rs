//! The Noetic runtime: everything that decides anything, with no napi in sight.
//!
//! The binding crate at the repository root converts JS values and dispatches calls; this crate owns items and
//! their costs, budgets, projection, the memory-layer lifecycle, the step interpreter and the harness. User code
//! (hooks, step functions, tools, storage adapters) is reached through the [`host::Host`] trait.

pub mod error;
pub mod items;
pub mod memory;
pub mod storage;
pub mod tokens;

pub use error::{ConfigError, NoeticError};
