//! The memory-layer system: the layer model, budgets, projection, scopes and storage keys, the state store and the
//! lifecycle that runs the hooks, and the built-in layers implemented in Rust.

mod budget;
pub mod builtin;
pub mod cache_anchor;
pub mod history;
mod layer;
pub mod lifecycle;
pub mod native;
mod projection;
pub mod registry;
mod scope;
pub mod state;
pub mod trace;
pub mod unstable;

pub use self::budget::{BudgetAllocation, BudgetLimits, BudgetUsage, LayerAllocation, allocate_budgets, check_budget};
pub use self::layer::{BudgetConfig, HookKind, HookSet, LayerSpec, OnInitError, RecallMode, Scope};
pub use self::projection::{
  DEFAULT_PROJECTION, HeldCut, HistoryView, Overflow, ProjectionPolicy, ViewPlan, assemble_view, assemble_view_from,
};
pub use self::scope::{GLOBAL_SCOPE_KEY, STATE_KEY, resolve_scope_key};
pub use self::state::StateWrite;
pub use crate::storage::{scoped_key, scoped_list_prefix, scoped_prefix, unscope_listed_key};
