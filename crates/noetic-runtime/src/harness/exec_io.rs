//! What an execution reports beyond its own log, and what it takes in while it runs: the seam a session implements
//! (its event stream and its queue), so that an execution context knows nothing of sessions. A run outside a session
//! has none.

use serde_json::Value;

/// A message sent to an execution while it runs (`deliveryMode: 'between-rounds'`), as the tool loop injects it
/// before the next round: a user message of this text.
pub struct Injected {
  pub id: String,
  pub text: String,
}

pub trait ExecIo: Send + Sync {
  /// A step's event (`step_started`, `step_completed`), with `{stepId, kind}`.
  fn step(&self, agent: &str, event: &str, step_id: &str, kind: &str);
  /// A framework event with its data (`llm_call_started`, `tool_call_completed`, ...).
  fn framework(&self, agent: &str, kind: &str, data: &Value);
  /// One of a model provider's streamed events, as its SDK gives it.
  fn sdk(&self, kind: &str, data: Value);
  /// The messages waiting to join the execution before its next tool round.
  fn take_injected(&self) -> Vec<Injected>;
}
