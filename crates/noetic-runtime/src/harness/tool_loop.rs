//! The runtime's tool loop: the model answers a round, every function call it makes runs, the outputs go back,
//! and the next round starts, until a round makes no calls.

use std::sync::Arc;

use super::Harness;
use super::context::ExecContext;
use super::error::RunResult;
use super::round_model::{RoundModel, RoundRequest};
use crate::error::NoeticError;
use crate::items::{Item, function_call_output};
use crate::provider::Round;

/// Rounds one step may take before the loop stops asking.
const MAX_ROUNDS: usize = 16;

impl Harness {
  /// Every item of every round (calls, outputs, the final answer) and the summed usage. `request.conversation`
  /// is ignored: the loop states it each round from `conversation`.
  pub(super) async fn tool_loop(
    &self,
    model: &dyn RoundModel,
    request: RoundRequest<'_>,
    mut conversation: Vec<Arc<Item>>,
    ctx: &Arc<ExecContext>,
  ) -> RunResult<Round> {
    let mut response = Round::default();
    for round_number in 0..MAX_ROUNDS {
      // A tool may have aborted the context: no further model call is made for it.
      if round_number > 0
        && let Some(reason) = ctx.aborted()
      {
        return Err(NoeticError::cancelled(&reason).into());
      }
      let round = model.answer(&RoundRequest { conversation: &conversation, ..request }).await?;
      response.add_usage(&round);
      let mut outputs = Vec::new();
      for item in &round.items {
        if item.item_type() != "function_call" {
          continue;
        }
        let name = item.name().unwrap_or_default();
        let call_id = item.call_id().unwrap_or_default();
        // Providers see wire-safe names (`notes_add` for `notes/add`); either form finds the tool.
        let output = match request.tools.iter().find(|tool| tool.name == name || tool.wire_name() == name) {
          Some(tool) => self.run_tool(tool, item.arguments().unwrap_or("{}"), ctx).await,
          None => Some(format!("Error: tool '{name}' not found")),
        };
        // A `void` result is pinned as an empty output (upstream leaves `output` undefined).
        outputs.push(Arc::new(function_call_output(format!("fco_{call_id}"), call_id, output)));
      }
      conversation.extend(round.items.iter().cloned());
      conversation.extend(outputs.iter().cloned());
      response.items.extend(round.items);
      let done = outputs.is_empty();
      response.items.extend(outputs);
      if done {
        break;
      }
    }
    Ok(response)
  }
}
