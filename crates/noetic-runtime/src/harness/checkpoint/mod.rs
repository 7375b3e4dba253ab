//! Checkpoints (durable execution): the snapshot of a context, and how a restored context takes it back. The
//! runtime writes the snapshot (upstream's layout: envelope, frontier, layers in the context's order, built-in
//! layers' states, counters); the host puts in only what it holds as its own values (the steps' inputs, its layers'
//! states, the cwd, the log's items as it holds them) and keeps the snapshot where the user says. On restore the
//! runtime puts the states and counters back in place of init.

mod saved;
pub mod store;

pub use saved::RestoreError;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ExecContext, Runner};
use crate::error::ConfigError;
use crate::host::StepValueRef;
use crate::memory::lifecycle::{self, RestoredStates};
use crate::memory::registry::LayerImpl;
use crate::memory::state::StateValue;

/// The snapshot layout this runtime writes and reads (upstream's `CheckpointSchemaVersion`).
pub const CHECKPOINT_SCHEMA_VERSION: u32 = 1;

/// The error a snapshot that cannot be restored is (upstream's code).
pub const SCHEMA_MISMATCH: &str = "CHECKPOINT_SCHEMA_MISMATCH";

/// A snapshot of one context as the runtime writes it (upstream's `CheckpointSnapshot`). What the host holds is
/// left for it to put in: each frame's `input` is a reference to the host's value; `layers` holds `null` for a JS
/// layer with a state (its id also in `host_layers`); `cwd` is `null` and the item log empty.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
  pub schema_version: u32,
  pub execution_id: String,
  pub thread_id: String,
  /// The steps in flight, outermost first.
  pub frontier: Vec<SavedFrame>,
  /// Each layer with a state, in the context's layer order.
  pub layers: serde_json::Map<String, Value>,
  /// The JS layers among them, whose states the host puts in.
  pub host_layers: Vec<String>,
  pub cwd: Option<Value>,
  /// Pending ask-user prompts are the host application's to record (upstream's core records none either).
  pub ask_user: [(); 0],
  pub item_log: SavedLog,
  /// When it was taken (ISO 8601).
  pub captured_at: String,
  pub usage: SavedUsage,
  /// Last, where upstream's snapshot adds it; absent without one.
  #[serde(skip_serializing_if = "Option::is_none")]
  pub resource_id: Option<String>,
}

/// The log's items, which the host puts in as it holds them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SavedLog {
  pub items: [(); 0],
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedFrame {
  pub step_id: String,
  pub input: StepValueRef,
}

/// The counters a restored context goes on from (not in upstream's snapshot, which restarts them at zero).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedUsage {
  pub step_count: f64,
  pub tokens: SavedTokens,
  pub cost: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SavedTokens {
  pub input: f64,
  pub output: f64,
  /// Present once a model call was counted (see [`crate::harness::Usage::counted`]); snapshots written before it
  /// was kept have none.
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub cached: Option<f64>,
}

/// What a restore hands back to the runtime.
#[derive(Debug, Clone, Default)]
pub struct Restored {
  pub layers: RestoredStates,
  pub usage: Option<SavedUsage>,
}

impl SavedUsage {
  /// Counters a context can hold: finite, not negative, and a whole number of steps.
  fn check(&self, execution_id: &str) -> Result<(), ConfigError> {
    let counts = [self.step_count, self.tokens.input, self.tokens.output, self.tokens.cached.unwrap_or(0.0), self.cost];
    if counts.iter().all(|n| n.is_finite() && *n >= 0.0) && self.step_count.fract() == 0.0 {
      return Ok(());
    }
    Err(mismatch(execution_id, "its usage counters are not finite non-negative numbers (stepCount a whole one)"))
  }
}

/// A snapshot that cannot be restored, saying why.
pub fn mismatch(execution_id: &str, why: &str) -> ConfigError {
  ConfigError::new(
    SCHEMA_MISMATCH,
    format!("Checkpoint snapshot for execution \"{execution_id}\" cannot be restored: {why}."),
    "The snapshot was written by another runtime version or changed since. Clear it with CheckpointStore.clear() \
     and start the execution again.",
  )
}

impl Runner {
  /// The snapshot of `ctx` as it is now.
  pub fn snapshot(&self, ctx: &ExecContext) -> Snapshot {
    let mut layers = serde_json::Map::new();
    let mut host_layers = Vec::new();
    for layer in ctx.layers().layers() {
      match (&layer.imp, self.env.states.get(&ctx.id, layer.id())) {
        (LayerImpl::Native(_), Some(StateValue::Json(value))) => {
          layers.insert(layer.id().to_owned(), value);
        }
        (LayerImpl::Host(_), Some(StateValue::Host)) => {
          layers.insert(layer.id().to_owned(), Value::Null);
          host_layers.push(layer.id().to_owned());
        }
        // An `undefined` state is no state, as upstream skips it.
        _ => {}
      }
    }
    let state = ctx.state();
    Snapshot {
      schema_version: CHECKPOINT_SCHEMA_VERSION,
      execution_id: ctx.id.clone(),
      thread_id: ctx.thread_id.clone(),
      resource_id: ctx.resource_id.clone(),
      frontier: state
        .frontier
        .iter()
        .map(|(_, frame)| SavedFrame { step_id: frame.step_id.clone(), input: frame.input.clone() })
        .collect(),
      layers,
      host_layers,
      cwd: None,
      ask_user: [],
      item_log: SavedLog::default(),
      captured_at: crate::js_date::iso_now(),
      usage: SavedUsage {
        step_count: state.step_count as f64,
        tokens: SavedTokens {
          input: state.tokens.input,
          output: state.tokens.output,
          cached: state.tokens.counted.then_some(state.tokens.cached),
        },
        cost: state.cost,
      },
    }
  }

  /// Puts a snapshot's states and counters back into `ctx`, a context made for the restore: its layers count as
  /// initialised (their init does not run again over the restored states).
  pub fn restore_checkpoint(&self, ctx: &ExecContext, restored: &Restored) -> Result<(), ConfigError> {
    if let Some(usage) = &restored.usage {
      usage.check(&ctx.id)?;
    }
    lifecycle::restore_layers(&self.env, &self.scope(ctx), &restored.layers);
    let mut state = ctx.state();
    state.layers_ready = true;
    state.execution_ended = false;
    if let Some(usage) = restored.usage {
      state.step_count = usage.step_count as u64;
      state.tokens.input = usage.tokens.input;
      state.tokens.output = usage.tokens.output;
      if let Some(cached) = usage.tokens.cached {
        state.tokens.cached = cached;
        state.tokens.counted = true;
      }
      state.cost = usage.cost;
    }
    Ok(())
  }
}
