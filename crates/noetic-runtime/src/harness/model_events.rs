//! The framework events an LLM step's model call raises on its session's stream (`<agent>:llm_call_started`,
//! `tool_call_completed`, ...), as upstream's model caller raises them, each put to the step's `emit` first.

use serde_json::{Value, json};

use super::{ExecContext, RunResult, Runner};
use crate::host::{FnArg, FnCall, StepValue};
use crate::steps::Emit;

/// Whether a step's `emit` lets the event `kind` with `data` through: every event, none, or those the user's
/// filter answers for (the host answers in text: non-empty lets it go).
pub(super) async fn emit_allows(
  runner: &Runner,
  emit: Emit,
  ctx: &ExecContext,
  kind: &str,
  data: &Value,
) -> RunResult<bool> {
  Ok(match emit {
    Emit::All => true,
    Emit::None => false,
    Emit::Filter(filter) => {
      let call = FnCall {
        func: filter,
        context: ctx.id.clone(),
        args: vec![FnArg::Json(json!(kind)), FnArg::Json(data.clone())],
      };
      matches!(runner.env.host.call_fn(call).await?, StepValue::Text(text) if !text.is_empty())
    }
  })
}

impl Runner {
  /// Raises a model call's event on the context's session stream, when it has one and the step's `emit` allows.
  pub(super) async fn model_event(&self, ctx: &ExecContext, emit: Emit, kind: &str, data: Value) -> RunResult<()> {
    let Some(io) = ctx.io() else { return Ok(()) };
    if emit_allows(self, emit, ctx, kind, &data).await? {
      io.framework(&self.name, kind, &data);
    }
    Ok(())
  }
}
