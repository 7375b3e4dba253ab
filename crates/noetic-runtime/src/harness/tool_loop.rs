//! The runtime's tool loop: the model answers a round, every function call it makes runs, the outputs go back,
//! and the next round starts, until a round makes no calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::json;

use super::Runner;
use super::context::ExecContext;
use super::error::RunResult;
use super::model_events::emit_allows;
use super::round_model::{RoundModel, RoundRequest};
use super::spans::{ToolSpan, ToolStatus};
use crate::error::NoeticError;
use crate::host::{HostError, SteeringAction};
use crate::items::{Item, function_call_output, input_message, parse_js_item};
use crate::memory::lifecycle::{self, RecallEntry};
use crate::provider::{MAX_NUDGES, Round};
use crate::steps::Emit;

/// Tool rounds one step takes before the model is nudged to finish (upstream's `MAX_TOOL_ROUNDS`).
const MAX_TOOL_ROUNDS: usize = 32;
/// Rounds past the limit, each asked with an ephemeral "continue", before the step fails (upstream's
/// `MAX_RECOVERY_CONTINUATIONS`).
const MAX_LIMIT_CONTINUATIONS: usize = 3;

impl Runner {
  /// Every item of every round (calls, outputs, the final answer) and the summed usage. `request.conversation`
  /// is ignored: the loop states it each round from `conversation`.
  pub(super) async fn tool_loop(
    &self,
    model: &dyn RoundModel,
    request: RoundRequest<'_>,
    mut conversation: Vec<Arc<Item>>,
    ctx: &Arc<ExecContext>,
    mut memory: Option<StepRecall<'_>>,
  ) -> RunResult<Round> {
    let mut response = Round::default();
    let mut nudge = false;
    for round_number in 0.. {
      // A tool may have aborted the context: no further model call is made for it.
      if round_number > 0
        && let Some(reason) = ctx.aborted()
      {
        return Err(NoeticError::cancelled(&reason).into());
      }
      if round_number > 0 {
        self.take_in_between_rounds(ctx, request.emit, round_number, &mut conversation).await?;
      }
      let round = self.answer_round(model, &request, &conversation, nudge, round_number, ctx).await?;
      response.add_usage(&round);
      if round_number == 0 {
        (response.cache_read, response.cache_write) = (round.cache_read, round.cache_write);
      }
      let calls = round.items.iter().filter(|item| item.item_type() == "function_call").count();
      let round_data = json!({ "round": round_number, "toolCount": calls });
      if calls > 0 {
        self.model_event(ctx, request.emit, "tool_round_started", round_data.clone()).await?;
      }
      let mut outputs = Vec::new();
      for item in &round.items {
        if item.item_type() != "function_call" {
          continue;
        }
        let name = item.name().unwrap_or_default();
        let call_id = item.call_id().unwrap_or_default();
        let traced = self.trace_start();
        let about = json!({ "name": name, "callId": call_id });
        self.model_event(ctx, request.emit, "tool_call_started", about).await?;
        // Providers see wire-safe names (`notes_add` for `notes/add`); either form finds the tool.
        // As upstream's loop: arguments that are not JSON are the call's error output before anything else (no
        // tool lookup, no steering vote, no run); then an unknown name; then the layers' vote; then the tool.
        let arguments = item.arguments();
        let malformed = !arguments.is_some_and(crate::js_text::is_js_json);
        let (output, decorated, status) = if malformed {
          let text = arguments.unwrap_or("undefined");
          (Some(format!("Error: malformed JSON in tool arguments: {text}")), None, ToolStatus::Failed)
        } else {
          match request.tools.iter().find(|tool| tool.name == name || tool.wire_name() == name) {
            Some(tool) => match self.steer_tool_call(item, ctx).await? {
              Some(refusal) => (Some(refusal), None, ToolStatus::Denied),
              None => {
                let (output, decorated) = self.run_tool(tool, item, ctx).await?;
                (output, decorated, ToolStatus::Ran)
              }
            },
            None => (Some(format!("Error: unknown tool '{name}'")), None, ToolStatus::Failed),
          }
        };
        if let Some(start) = traced {
          let output = output.as_deref().or(decorated.as_deref());
          let call = ToolSpan { step_id: request.step_id, name, call_id, arguments, status, output };
          self.env.sink.trace_run(super::spans::tool_call(ctx, start, call, self.env.sink.tracing_content()));
        }
        // The tool's decorated result item, when it makes one, stands in the log for the plain one; a `void`
        // result has no output, as upstream's.
        let result = match decorated {
          Some(text) => parse_js_item(&text, self.item_types.unless_checked(true))?,
          // A fresh id, as upstream's: a model may reuse a call id in a later round, and two log items must not
          // share an id.
          None => function_call_output(uuid::Uuid::new_v4().to_string(), call_id, output),
        };
        outputs.push(Arc::new(result));
        // As upstream's: `error` marks only arguments that were not JSON, not a tool that failed.
        let about = json!({ "name": name, "callId": call_id, "error": malformed });
        self.model_event(ctx, request.emit, "tool_call_completed", about).await?;
      }
      if calls > 0 {
        self.model_event(ctx, request.emit, "tool_round_completed", round_data).await?;
      }
      let done = outputs.is_empty();
      // Tool outputs are input items: they pass through the layers' onItemAppend (D7), whose re-render requests
      // are honoured before the next round (D23).
      let outputs = match memory.as_mut() {
        Some(memory) if !done => {
          let scope = self.scope(ctx);
          let appended = lifecycle::append_with_requests(&self.env, &scope, outputs).await?;
          if !appended.rerender.is_empty() {
            let before = memory.recalled.clone();
            lifecycle::rerender_layers(
              &self.env,
              &scope,
              &appended.rerender,
              memory.budgets,
              memory.query,
              memory.recalled,
            )
            .await;
            replace_layer_items(&mut conversation, &before, memory.recalled);
          }
          appended.items
        }
        _ => outputs,
      };
      conversation.extend(round.items.iter().cloned());
      conversation.extend(outputs.iter().cloned());
      response.items.extend(round.items);
      response.items.extend(outputs);
      if done {
        break;
      }
      nudge = self.past_round_limit(ctx, request.emit, round_number + 1).await?;
    }
    Ok(response)
  }

  /// After `rounds` tool rounds: whether the next is asked with the "continue" nudge, or an error once the rounds
  /// past the limit are used up too. As upstream, the model may still finish in one of those rounds.
  async fn past_round_limit(&self, ctx: &ExecContext, emit: Emit, rounds: usize) -> RunResult<bool> {
    if rounds < MAX_TOOL_ROUNDS {
      return Ok(false);
    }
    let attempt = rounds - MAX_TOOL_ROUNDS + 1;
    let data = json!({ "maxToolRounds": MAX_TOOL_ROUNDS, "attempt": attempt, "maxAttempts": MAX_LIMIT_CONTINUATIONS });
    self.model_event(ctx, emit, "tool_round_limit_exceeded", data).await?;
    if attempt > MAX_LIMIT_CONTINUATIONS {
      let message = format!("LLM exceeded maximum tool rounds ({MAX_TOOL_ROUNDS})");
      return Err(HostError::Thrown { message, error: None }.into());
    }
    Ok(true)
  }

  /// One round asked of the model, between its `llm_call_started` and `llm_call_completed` events. The provider's
  /// first streamed event raises `llm_call_first_event` before it is forwarded; a model that does not stream
  /// raises it as it answers. A step's `emit` filter is asked about that event before each attempt, as it cannot
  /// be awaited while the stream is read. A response that cannot be used (failed, incomplete, empty) is reported
  /// (`llm_call_failed`, `llm_call_recovery_continue`) and asked again with the "continue" nudge, as upstream's
  /// loop does, until the nudges run out.
  async fn answer_round(
    &self,
    model: &dyn RoundModel,
    request: &RoundRequest<'_>,
    conversation: &[Arc<Item>],
    nudge: bool,
    round: usize,
    ctx: &Arc<ExecContext>,
  ) -> RunResult<Round> {
    let asked = RoundRequest { conversation, nudge, ..*request };
    let Some(io) = ctx.io() else { return model.answer(&asked).await };
    let mut recoveries = 0;
    loop {
      let nudged = nudge || recoveries > 0;
      // As the wire has them: system messages go out as instructions, and the nudge is a message of its own.
      let message_count = conversation.iter().filter(|item| !item.is_system_message()).count() + usize::from(nudged);
      let started = json!({
        "round": round, "messageCount": message_count, "toolCount": request.tools.len(), "recoveryContinuation": nudged,
      });
      self.model_event(ctx, request.emit, "llm_call_started", started).await?;
      let first = json!({ "round": round });
      let seen = AtomicBool::new(!emit_allows(self, request.emit, ctx, "llm_call_first_event", &first).await?);
      let first_event = || {
        if !seen.swap(true, Ordering::Relaxed) {
          io.framework(&self.name, "llm_call_first_event", &first);
        }
      };
      // A stall is heard while the stream is read, and reported (through the filter) once the attempt is over.
      let stall = Mutex::new(None);
      let stalled = |ms: f64| *stall.lock().unwrap_or_else(PoisonError::into_inner) = Some(ms);
      let attempt = model
        .attempt(&RoundRequest { first_event: Some(&first_event), stalled: Some(&stalled), ..asked }, recoveries > 0)
        .await;
      let stalled_ms = stall.into_inner().unwrap_or_else(PoisonError::into_inner);
      if let Some(ms) = stalled_ms {
        // The limit as it was given: a whole number of milliseconds is written as one.
        let ms = if ms.fract() == 0.0 { json!(ms as u64) } else { json!(ms) };
        let data = json!({ "round": round, "idleTimeoutMs": ms });
        self.model_event(ctx, request.emit, "llm_call_stalled", data).await?;
      }
      let attempt = attempt?;
      first_event();
      let problem = match attempt {
        Ok(answer) => {
          let completed = json!({ "round": round, "itemCount": answer.items.len() });
          self.model_event(ctx, request.emit, "llm_call_completed", completed).await?;
          return Ok(answer);
        }
        Err(problem) => problem,
      };
      let recoverable = recoveries < MAX_NUDGES;
      let failed =
        json!({ "round": round, "status": problem.status, "error": problem.message, "recoverable": recoverable });
      self.model_event(ctx, request.emit, "llm_call_failed", failed).await?;
      if !recoverable {
        return Err(HostError::Thrown { message: problem.message, error: None }.into());
      }
      recoveries += 1;
      let recovery =
        json!({ "round": round, "status": problem.status, "attempt": recoveries, "maxAttempts": MAX_NUDGES });
      self.model_event(ctx, request.emit, "llm_call_recovery_continue", recovery).await?;
    }
  }

  /// The context's layers vote on a tool call before it runs (§14.3): `None` to run it, otherwise the error output
  /// the model gets instead (a deny or a guide; the tool does not run).
  async fn steer_tool_call(&self, call: &Item, ctx: &Arc<ExecContext>) -> RunResult<Option<String>> {
    if ctx.layers().is_empty() {
      return Ok(None);
    }
    let (name, arguments) = (call.name().unwrap_or_default(), call.arguments().unwrap_or("{}"));
    let decision = lifecycle::before_tool_call(&self.env, &self.scope(ctx), name, arguments).await?;
    if self.inspector.is_open() {
      let call_id = call.call_id().unwrap_or_default();
      self.inspector.tool_decision(call_id, super::inspect::SteeringRecord::of(&decision));
    }
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
  async fn take_in_between_rounds(
    &self,
    ctx: &Arc<ExecContext>,
    emit: Emit,
    round: usize,
    conversation: &mut Vec<Arc<Item>>,
  ) -> RunResult<()> {
    let messages = match ctx.io() {
      Some(io) if ctx.receives_input() => io.take_injected(),
      _ => return Ok(()),
    };
    if messages.is_empty() {
      return Ok(());
    }
    let mut items: Vec<Arc<Item>> = messages
      .iter()
      .map(|message| Arc::new(input_message(format!("user-{}", uuid::Uuid::new_v4()), "user", message.text.clone())))
      .collect();
    // Injected messages are input items too (D7).
    if !ctx.layers().is_empty() {
      items = lifecycle::append_items(&self.env, &self.scope(ctx), items).await?;
    }
    for item in items {
      ctx.state().log.push(Arc::clone(&item));
      conversation.push(item);
    }
    let ids: Vec<&str> = messages.iter().map(|message| message.id.as_str()).collect();
    // The injected messages are new items: what the host held for them stands for nothing in the log.
    self.env.host.turn_input(&ctx.facts(&ctx.layers()), 0, &ids, false);
    let data = json!({ "round": round, "count": messages.len(), "messageIds": ids });
    self.model_event(ctx, emit, "inbox_injected", data).await
  }
}

/// What a step's tool loop needs to re-render layers between rounds: the step's recalled entries (updated in
/// place), their budgets and the recall query.
pub(super) struct StepRecall<'a> {
  pub recalled: &'a mut Vec<RecallEntry>,
  pub budgets: &'a HashMap<String, f64>,
  pub query: &'a str,
}

/// Puts each re-rendered layer's fresh items where its old ones stood in the conversation (found by identity); a
/// layer that had none there goes after the last layer item, or after the leading system messages.
fn replace_layer_items(conversation: &mut Vec<Arc<Item>>, before: &[RecallEntry], after: &[RecallEntry]) {
  let position_of =
    |conversation: &[Arc<Item>], item: &Arc<Item>| conversation.iter().position(|c| Arc::ptr_eq(c, item));
  for entry in after {
    let old = before.iter().find(|old| old.layer_id == entry.layer_id);
    let unchanged = old.is_some_and(|old| {
      old.items.len() == entry.items.len() && old.items.iter().zip(&entry.items).all(|(a, b)| Arc::ptr_eq(a, b))
    });
    if unchanged {
      continue;
    }
    let mut at = None;
    for item in old.map(|old| old.items.as_slice()).unwrap_or_default() {
      if let Some(pos) = position_of(conversation, item) {
        conversation.remove(pos);
        at = Some(at.map_or(pos, |at: usize| at.min(pos)));
      }
    }
    let at = at.unwrap_or_else(|| {
      let last_layer_item = before
        .iter()
        .chain(after)
        .flat_map(|entry| &entry.items)
        .filter_map(|item| position_of(conversation, item))
        .max();
      last_layer_item
        .map_or_else(|| conversation.iter().take_while(|item| item.role() == Some("system")).count(), |pos| pos + 1)
    });
    for (offset, item) in entry.items.iter().enumerate() {
      conversation.insert(at + offset, Arc::clone(item));
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn message(text: &str, role: &str) -> Arc<Item> {
    Arc::new(input_message(text.to_owned(), role, text))
  }

  fn entry(id: &str, slot: f64, items: &[&Arc<Item>]) -> RecallEntry {
    let items = items.iter().map(|item| Arc::clone(item)).collect();
    RecallEntry { layer_id: id.to_owned(), slot, items, token_count: None, host_key: None }
  }

  fn ids(conversation: &[Arc<Item>]) -> Vec<String> {
    conversation.iter().map(|item| item.id().unwrap_or_default().to_owned()).collect()
  }

  #[test]
  fn rerendered_items_take_the_place_of_the_old_ones_and_new_layers_follow_the_others() {
    let (system, a1, a2, b1, user) = (
      message("sys", "system"),
      message("a1", "developer"),
      message("a2", "developer"),
      message("b1", "developer"),
      message("u", "user"),
    );
    let mut conversation =
      vec![Arc::clone(&system), Arc::clone(&a1), Arc::clone(&a2), Arc::clone(&b1), Arc::clone(&user)];
    let before = [entry("a", 1.0, &[&a1, &a2]), entry("b", 2.0, &[&b1])];
    let a_new = message("a-new", "developer");
    let c_new = message("c-new", "developer");
    let after = [entry("a", 1.0, &[&a_new]), entry("b", 2.0, &[&b1]), entry("c", 3.0, &[&c_new])];
    replace_layer_items(&mut conversation, &before, &after);
    assert_eq!(ids(&conversation), ["sys", "a-new", "b1", "c-new", "u"]);

    // With no layer items at all, a new one goes after the leading system messages.
    let mut bare = vec![Arc::clone(&system), Arc::clone(&user)];
    replace_layer_items(&mut bare, &[], &[entry("c", 3.0, &[&c_new])]);
    assert_eq!(ids(&bare), ["sys", "c-new", "u"]);
  }
}
