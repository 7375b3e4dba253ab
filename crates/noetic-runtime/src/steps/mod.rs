//! The step tree as Rust data (the harness's interpreter runs it). User callbacks (step functions, JS predicates,
//! tools) are host references; the built-in predicates are evaluated here.

pub mod builders;
mod channel;
pub(crate) mod until;

use std::sync::Arc;

use crate::host::protocol::HostRef;
use crate::memory::ProjectionPolicy;
use crate::memory::registry::LayerSet;
use crate::tools::ToolDef;

pub use self::channel::{ChannelMode, ChannelSpec, HostKey};
pub use self::until::Until;
pub use crate::host::protocol::LazyField;

/// A subprocess adapter a `step.run` may be handed to (R15): the host's handle of it, and whether it runs steps in
/// place with nothing another caller could observe (our in-memory adapter without storage), which a step skips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepAdapter {
  pub handle: HostRef,
  pub inline: bool,
}

/// Upstream's default `maxHistorySize`.
pub const DEFAULT_LOOP_HISTORY: usize = 100;

#[derive(Debug, Clone)]
pub enum Step {
  /// `step.run`: a user function, tried again as `retry` says. `subprocess`: the step's own adapter; `in_place`: the
  /// step is the one an adapter was just handed, so it is not handed over again (upstream's `executeNoAdapter`).
  Run { id: String, execute: HostRef, retry: Option<RetryPolicy>, subprocess: Option<StepAdapter>, in_place: bool },
  /// `step.tool`: one tool call as a step; its arguments are the input, with `args` (kept by the host) over it.
  Tool { id: String, tool: HostRef, args: Option<HostRef> },
  /// `branch`: a route picks the next step at run time; none passes the input through. `candidates`
  /// (`_optimizable`): steps it may pick, whose tools a session offers.
  Branch { id: String, route: HostRef, candidates: Vec<Arc<Step>> },
  /// `fork`: the paths a function gives run in child contexts, as `mode` says, and `merge` combines them.
  Fork(ForkStep),
  /// `step.llm`: one model step with memory, projection and tools.
  Llm(Box<LlmStep>),
  /// `loop`: run the body until the predicate stops it.
  Loop(LoopStep),
  /// `every`: the body, again and again with the same input, `ms` (± `jitter`) apart, woken early by a send on
  /// `wake_on`; it ends only when its context is cancelled, or a failing body under `fail`.
  Every(EveryStep),
  /// `provide`: run a child step in the same context with more layers (replacing those of the same ids) while it
  /// runs; no layer hook runs for them (as upstream).
  Provide { id: String, child: Arc<Step>, memory: Arc<LayerSet> },
  /// `spawn`: run a child step in an isolated child context, with its own layers if given; past `timeout_ms` the
  /// child is aborted and the spawn fails. `context_in` seeds the child's log, `context_out` shapes its output
  /// (DECISIONS D12, M6).
  Spawn {
    id: String,
    child: Arc<Step>,
    memory: Option<Arc<LayerSet>>,
    timeout_ms: Option<f64>,
    context_in: ContextIn,
    context_out: ContextOut,
  },
}

impl Step {
  pub fn id(&self) -> &str {
    match self {
      Self::Run { id, .. }
      | Self::Tool { id, .. }
      | Self::Branch { id, .. }
      | Self::Fork(ForkStep { id, .. })
      | Self::Loop(LoopStep { id, .. })
      | Self::Provide { id, .. }
      | Self::Every(EveryStep { id, .. })
      | Self::Spawn { id, .. } => id,
      Self::Llm(llm) => &llm.id,
    }
  }

  /// The kind as upstream names it (`step.kind`).
  pub fn kind(&self) -> &'static str {
    match self {
      Self::Run { .. } => "run",
      Self::Tool { .. } => "tool",
      Self::Branch { .. } => "branch",
      Self::Fork(_) => "fork",
      Self::Llm(_) => "llm",
      Self::Loop(_) => "loop",
      Self::Provide { .. } => "provide",
      Self::Every(_) => "every",
      Self::Spawn { .. } => "spawn",
    }
  }
}

/// What a spawned child's log starts with (before any onSpawn items).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ContextIn {
  /// Empty: upstream's behaviour.
  #[default]
  Fresh,
  /// A copy of the parent's log.
  Inherit,
  /// The items a host function picks (`select(parentItems, parentState)`, called with the parent's context).
  Subset(HostRef),
  /// The items a host function builds (`build(input, parentCtx)`).
  Custom(HostRef),
}

/// What the parent receives of a spawned child's output (before any onReturn).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ContextOut {
  /// The output as it is: upstream's behaviour.
  #[default]
  Full,
  /// A text the model makes of the child's conversation, asked with `prompt`, by `model` or else the model of the
  /// child's last LLM step.
  Summary { model: Option<String>, prompt: Option<String> },
  /// The output parsed by a host schema (`llm_parse_error` when it does not fit).
  Schema(HostRef),
}

#[derive(Debug, Clone)]
pub struct ForkStep {
  pub id: String,
  pub mode: ForkMode,
  pub paths: HostRef,
  pub merge: Option<HostRef>,
  pub concurrency: Option<usize>,
  /// `_optimizable`: steps the paths may be, whose tools a session offers.
  pub candidates: Vec<Arc<Step>>,
}

#[derive(Debug, Clone)]
pub struct LoopStep {
  pub id: String,
  pub steps: Vec<Arc<Step>>,
  pub until: Until,
  pub max_iterations: f64,
  /// How many of the latest outputs the predicate sees (upstream's `maxHistorySize`, default 100), which keeps each
  /// check's cost flat.
  pub max_history: usize,
  /// Makes the next iteration's input from the output and the verdict (the output by default).
  pub prepare_next: Option<HostRef>,
  /// Answers a body failure with `retry`, `skip` or anything else (fail).
  pub on_error: Option<HostRef>,
  /// A channel of the context's store read when the loop would stop: a message continues it, as a developer message
  /// in the log. `park_timeout_ms`: how long to wait for one (0: only what is there).
  pub inbox: Option<ChannelSpec>,
  pub park_timeout_ms: f64,
}

#[derive(Debug, Clone)]
pub struct EveryStep {
  pub id: String,
  pub body: Arc<Step>,
  pub ms: f64,
  pub jitter: f64,
  /// A channel of the harness's store whose next send ends a park early.
  pub wake_on: Option<ChannelSpec>,
  pub fail_on_error: bool,
}

/// How a fork's paths decide its output: the first to succeed, all of them (failing fast), or each one's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkMode {
  Race,
  All,
  Settle,
}

/// `step.run`'s `retry`: how many attempts in all, and the wait before each next one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
  pub max_attempts: f64,
  pub backoff: Backoff,
  pub initial_delay_ms: f64,
  /// Upstream's default cap is 30 s.
  pub max_delay_ms: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backoff {
  Fixed,
  Linear,
  Exponential,
}

impl RetryPolicy {
  /// The wait after failed attempt `attempt` (0-based): upstream's delays, without jitter.
  pub fn delay_ms(&self, attempt: u32) -> f64 {
    let base = self.initial_delay_ms;
    let delay = match self.backoff {
      Backoff::Fixed => base,
      Backoff::Linear => base * f64::from(attempt + 1),
      Backoff::Exponential => base * 2f64.powi(attempt.min(1_000) as i32),
    };
    delay.min(self.max_delay_ms)
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
  /// `output`: the reply is structured, to this JSON Schema, and parsed by the host's schema.
  pub output: Option<StructuredOutput>,
  /// `emit`: which of the step's framework events a session's stream gets.
  pub emit: Emit,
  /// The step object the host holds, when there is one: a host model (`_testCallModel`) is handed its `params`,
  /// `output` and `emit` as the user wrote them.
  pub source: Option<HostRef>,
}

/// An LLM step's `emit`: every event (the default), none, or those a host function lets through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Emit {
  #[default]
  All,
  None,
  Filter(HostRef),
}

/// A step's structured output: the schema as the provider is sent it, and the host's own (which parses the reply).
#[derive(Debug, Clone)]
pub struct StructuredOutput {
  pub schema: HostRef,
  pub json_schema: serde_json::Value,
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

#[cfg(test)]
mod tests {
  use super::*;

  fn delays(backoff: Backoff, initial: f64, max: f64, attempts: u32) -> Vec<f64> {
    let policy =
      RetryPolicy { max_attempts: f64::from(attempts), backoff, initial_delay_ms: initial, max_delay_ms: max };
    (0..attempts - 1).map(|attempt| policy.delay_ms(attempt)).collect()
  }

  #[test]
  fn retry_delays_grow_as_upstream_s_backoffs_do() {
    assert_eq!(delays(Backoff::Fixed, 10.0, 30_000.0, 3), [10.0, 10.0]);
    assert_eq!(delays(Backoff::Linear, 10.0, 30_000.0, 3), [10.0, 20.0]);
    assert_eq!(delays(Backoff::Exponential, 10.0, 30_000.0, 3), [10.0, 20.0]);
    assert_eq!(delays(Backoff::Exponential, 100.0, 500.0, 5), [100.0, 200.0, 400.0, 500.0]);
    // A huge attempt number stays finite and capped.
    assert_eq!(delays(Backoff::Exponential, 1.0, 30_000.0, 3_000).last(), Some(&30_000.0));
  }
}
