//! The runtime's tool loop: the model answers a round, every function call it makes runs, the outputs go back,
//! and the next round starts, until a round makes no calls.

use std::sync::{Arc, Weak};

use super::Harness;
use super::context::ExecContext;
use super::error::RunResult;
use super::round_model::{RoundModel, RoundRequest};
use super::session::message_text;
use crate::error::NoeticError;
use crate::host::SteeringAction;
use crate::items::{Item, function_call_output, input_message, parse_js_item};
use crate::memory::lifecycle;
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
      if round_number > 0 {
        self.take_in_between_rounds(ctx, round_number, &mut conversation);
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
        let (output, decorated) = match request.tools.iter().find(|tool| tool.name == name || tool.wire_name() == name)
        {
          Some(tool) => match self.steer_tool_call(item, ctx).await? {
            Some(refusal) => (Some(refusal), None),
            None => self.run_tool(tool, item, ctx).await?,
          },
          None => (Some(format!("Error: tool '{name}' not found")), None),
        };
        // The tool's decorated result item, when it makes one, stands in the log for the plain one; a `void`
        // result has no output, as upstream's.
        let result = match decorated {
          Some(text) => parse_js_item(&text, self.item_types.unless_checked(true))?,
          None => function_call_output(format!("fco_{call_id}"), call_id, output),
        };
        outputs.push(Arc::new(result));
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

  /// The context's layers vote on a tool call before it runs (§14.3): `None` to run it, otherwise the error output
  /// the model gets instead (a deny or a guide; the tool does not run).
  async fn steer_tool_call(&self, call: &Item, ctx: &Arc<ExecContext>) -> RunResult<Option<String>> {
    if ctx.layers().is_empty() {
      return Ok(None);
    }
    let (name, arguments) = (call.name().unwrap_or_default(), call.arguments().unwrap_or("{}"));
    let decision = lifecycle::before_tool_call(&self.env, &self.scope(ctx), name, arguments).await?;
    Ok(match decision.action {
      SteeringAction::Allow => None,
      SteeringAction::Deny => {
        Some(format!("Tool call denied: {}", decision.guidance.as_deref().unwrap_or("steering rule violation")))
      }
      // Upstream writes the guidance into the text as it is, `undefined` included.
      SteeringAction::Guide => {
        Some(format!("Tool call redirected: {}", decision.guidance.as_deref().unwrap_or("undefined")))
      }
    })
  }

  /// Messages sent to the session with `deliveryMode: 'between-rounds'` join the turn before its next round: each
  /// becomes a user message in the conversation and the log, and `inbox_injected` reports them, as upstream.
  fn take_in_between_rounds(&self, ctx: &ExecContext, round: usize, conversation: &mut Vec<Arc<Item>>) {
    let Some(session) = ctx.inbox.as_ref().and_then(Weak::upgrade) else { return };
    let messages = session.take_between_rounds();
    if messages.is_empty() {
      return;
    }
    for message in &messages {
      let id = format!("user-{}", uuid::Uuid::new_v4());
      let item = Arc::new(input_message(id, "user", message_text(message)));
      ctx.state().log.push(Arc::clone(&item));
      conversation.push(item);
    }
    let ids: Vec<&str> = messages.iter().map(|message| message.id.as_str()).collect();
    // The injected messages are new items: what the host held for them stands for nothing in the log.
    self.env.host.turn_input(&ctx.id, 0, &ids, false);
    if let Some(events) = &ctx.events {
      events.framework(
        &self.name,
        "inbox_injected",
        serde_json::json!({ "round": round, "count": messages.len(), "messageIds": ids }),
      );
    }
  }
}
