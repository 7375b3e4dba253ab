//! The memory-layer system: the layer model, budgets, projection, scopes and storage keys, the state store and the
//! lifecycle that runs the hooks, and the built-in layers implemented in Rust.

pub mod builtin;
mod layer;

pub use self::layer::{BudgetConfig, HookKind, HookSet, LayerSpec, OnInitError, RecallMode, Scope};
