//! The step tree as Rust data (the harness's interpreter runs it). User callbacks (step functions, JS predicates,
//! tools) are host references; the built-in predicates are evaluated here.

pub(crate) mod until;

use std::sync::Arc;

use crate::host::HostRef;
use crate::memory::ProjectionPolicy;
use crate::memory::registry::LayerSet;
use crate::tools::ToolDef;

pub use self::until::Until;
pub use crate::host::LazyField;

/// Upstream's default `maxHistorySize`.
pub const DEFAULT_LOOP_HISTORY: usize = 100;

#[derive(Debug, Clone)]
pub enum Step {
  /// `step.run`: a user function.
  Run { id: String, execute: HostRef },
  /// `step.llm`: one model step with memory, projection and tools.
  Llm(Box<LlmStep>),
  /// `loop`: run the body until the predicate stops it. `max_history`: how many of the latest outputs the
  /// predicate sees (upstream's `maxHistorySize`, default 100), which keeps each check's cost flat.
  Loop { id: String, steps: Vec<Arc<Step>>, until: Until, max_iterations: f64, max_history: usize },
  /// `spawn`: run a child step in an isolated child context, with its own layers if given.
  Spawn { id: String, child: Arc<Step>, memory: Option<Arc<LayerSet>> },
}

impl Step {
  pub fn id(&self) -> &str {
    match self {
      Self::Run { id, .. } | Self::Loop { id, .. } | Self::Spawn { id, .. } => id,
      Self::Llm(llm) => &llm.id,
    }
  }

  /// The kind as upstream names it (`step.kind`).
  pub fn kind(&self) -> &'static str {
    match self {
      Self::Run { .. } => "run",
      Self::Llm(_) => "llm",
      Self::Loop { .. } => "loop",
      Self::Spawn { .. } => "spawn",
    }
  }
}

#[derive(Debug, Clone)]
pub struct LlmStep {
  pub id: String,
  pub model: String,
  pub instructions: Option<String>,
  /// `None`: the step's context offers every layer tool; `Some([])`: no tools at all (§7.3 step 3).
  pub tools: Option<Vec<ToolDef>>,
  pub projection: Option<ProjectionPolicy>,
  /// Fields given as `(ctx) => value` getters: the host resolves them each time the step runs.
  pub lazy: Option<LazyFields>,
  pub params: ModelParams,
}

/// Which of an LLM step's fields are getters, and the step object that holds them in the host.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LazyFields {
  pub step: HostRef,
  pub fields: Vec<LazyField>,
}

/// `step.params`: sampling settings forwarded to the model provider when set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelParams {
  pub temperature: Option<f64>,
  pub max_tokens: Option<f64>,
  pub top_p: Option<f64>,
}
