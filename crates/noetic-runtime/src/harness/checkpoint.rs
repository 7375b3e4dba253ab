//! Checkpoints (durable execution): what a snapshot of a context takes from the runtime, and how a restored
//! context takes it back. The host puts the snapshot together (its envelope, the cwd, the log's items as it holds
//! them, its own layers' states) and keeps it where the user says; the runtime gives what only it knows: the steps
//! in flight, the built-in layers' states and the counters, and on restore puts them back in place of init.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ExecContext, Harness};
use crate::error::ConfigError;
use crate::host::StepValueRef;
use crate::memory::lifecycle::{self, RestoredStates};
use crate::memory::registry::LayerImpl;
use crate::memory::state::StateValue;

/// The snapshot layout this runtime writes and reads (upstream's `CheckpointSchemaVersion`).
pub const CHECKPOINT_SCHEMA_VERSION: u32 = 1;

/// The error a snapshot that cannot be restored is (upstream's code).
pub const SCHEMA_MISMATCH: &str = "CHECKPOINT_SCHEMA_MISMATCH";

/// What the runtime contributes to a snapshot of one context.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointParts {
  pub thread_id: String,
  pub resource_id: Option<String>,
  /// The steps in flight, outermost first.
  pub frontier: Vec<SavedFrame>,
  /// Each layer with a state, in the context's layer order.
  pub layers: Vec<SavedLayer>,
  pub usage: SavedUsage,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedFrame {
  pub step_id: String,
  pub input: StepValueRef,
}

/// A layer's state: a built-in's as JSON; a JS layer's is the host's to add (`state` absent).
#[derive(Debug, Clone, Serialize)]
pub struct SavedLayer {
  pub id: String,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub state: Option<Value>,
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

impl Harness {
  /// What the runtime knows of `ctx` for a snapshot, as it is now.
  pub fn checkpoint_parts(&self, ctx: &ExecContext) -> CheckpointParts {
    let layers = ctx
      .layers()
      .layers()
      .iter()
      .filter_map(|layer| {
        let state = match (&layer.imp, self.env.states.get(&ctx.id, layer.id())?) {
          (LayerImpl::Native(_), StateValue::Json(value)) => Some(value),
          (LayerImpl::Host(_), StateValue::Host) => None,
          // An `undefined` state is no state, as upstream skips it.
          _ => return None,
        };
        Some(SavedLayer { id: layer.id().to_owned(), state })
      })
      .collect();
    let state = ctx.state();
    CheckpointParts {
      thread_id: ctx.thread_id.clone(),
      resource_id: ctx.resource_id.clone(),
      frontier: state
        .frontier
        .iter()
        .map(|(_, frame)| SavedFrame { step_id: frame.step_id.clone(), input: frame.input.clone() })
        .collect(),
      layers,
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
