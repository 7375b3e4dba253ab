//! The runtime's own spans (DECISIONS O1): one per execution and one per model call of an LLM step (its tool rounds
//! included), recorded only when the harness traces. Attributes are named by the OpenTelemetry GenAI conventions
//! where one applies and under `noetic.` otherwise, so that every exporter sees the names an OTel backend expects.

use serde_json::{Map, Value, json};

use super::context::ExecContext;
use super::{RunResult, Runner};
use crate::items::Item;
use crate::memory::trace::{RunSpan, now_ms};
use crate::provider::Round;
use std::sync::Arc;

impl Runner {
  /// When an execution's span begins: only while the harness traces (O1), so that one without an exporter pays a
  /// branch.
  pub(crate) fn trace_start(&self) -> Option<f64> {
    self.env.sink.tracing().then(now_ms)
  }

  /// Records the span of the execution of `ctx` begun at `start` (by [`Runner::trace_start`]), now ended.
  pub(crate) fn trace_execution<T>(&self, start: Option<f64>, ctx: &ExecContext, result: &RunResult<T>) {
    if let Some(start) = start {
      self.env.sink.trace_run(execution(&self.name, ctx, start, result));
    }
  }
}

/// The span of an execution of `ctx` that began at `start_time` (ms since the epoch) and ends now with `result`.
/// Its id is the context's, so the hook spans recorded for the context hang under it.
fn execution<T>(agent: &str, ctx: &ExecContext, start_time: f64, result: &RunResult<T>) -> RunSpan {
  let info = ctx.exec_info(false);
  let mut attributes = Map::new();
  attributes.insert("gen_ai.operation.name".into(), json!("invoke_agent"));
  if !agent.is_empty() {
    attributes.insert("gen_ai.agent.name".into(), json!(agent));
  }
  attributes.insert("gen_ai.conversation.id".into(), json!(ctx.thread_id));
  if let Some(resource) = &ctx.resource_id {
    attributes.insert("noetic.resource_id".into(), json!(resource));
  }
  attributes.insert("noetic.depth".into(), json!(ctx.depth));
  attributes.insert("noetic.steps".into(), json!(info.step_number));
  attributes.insert("gen_ai.usage.input_tokens".into(), json!(info.token_usage.input));
  attributes.insert("gen_ai.usage.output_tokens".into(), json!(info.token_usage.output));
  attributes.insert("noetic.cost".into(), json!(info.cost));
  let status = match (result, ctx.aborted()) {
    (_, Some(_)) => "aborted",
    (Ok(_), None) => "ok",
    (Err(_), None) => "error",
  };
  attributes.insert("noetic.status".into(), json!(status));
  if let Err(failure) = result {
    attributes.insert("error.message".into(), json!(failure.to_string()));
  }
  RunSpan {
    name: "noetic.execution",
    trace_id: ctx.root.clone(),
    span_id: ctx.id.clone(),
    parent_span_id: ctx.parent.clone(),
    start_time,
    end_time: now_ms(),
    attributes,
  }
}

/// The span of an LLM step's call to its model (every round of its tool loop) that began at `start_time`.
pub(crate) fn model_call(
  ctx: &ExecContext,
  step_id: &str,
  model: &str,
  start_time: f64,
  result: &RunResult<Round>,
) -> RunSpan {
  let mut attributes = Map::new();
  attributes.insert("gen_ai.operation.name".into(), json!("chat"));
  attributes.insert("gen_ai.request.model".into(), json!(model));
  attributes.insert("gen_ai.conversation.id".into(), json!(ctx.thread_id));
  attributes.insert("noetic.step_id".into(), json!(step_id));
  match result {
    Ok(round) => usage(&mut attributes, round),
    Err(failure) => {
      attributes.insert("noetic.status".into(), json!("error"));
      attributes.insert("error.message".into(), json!(failure.to_string()));
    }
  }
  under_execution("noetic.model_call", ctx, start_time, attributes)
}

/// A span of its own under the execution of `ctx`, begun at `start_time` and ending now.
fn under_execution(name: &'static str, ctx: &ExecContext, start_time: f64, attributes: Map<String, Value>) -> RunSpan {
  RunSpan {
    name,
    trace_id: ctx.root.clone(),
    span_id: uuid::Uuid::new_v4().to_string(),
    parent_span_id: Some(ctx.id.clone()),
    start_time,
    end_time: now_ms(),
    attributes,
  }
}

/// How a tool call ended: the tool ran (its own failure is its output), a layer's steering refused it, or it never
/// could run (arguments that are not JSON, an unknown tool).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ToolStatus {
  Ran,
  Denied,
  Failed,
}

/// What a tool call's span tells.
pub(crate) struct ToolSpan<'a> {
  pub name: &'a str,
  pub call_id: &'a str,
  pub arguments: Option<&'a str>,
  pub status: ToolStatus,
  /// The output the model is handed (the decorated item's text for a tool that makes one).
  pub output: Option<&'a str>,
}

/// The span of one tool call a model made, begun at `start_time`, under the execution (a sibling of the model
/// call's span, as the GenAI conventions place `execute_tool` under the agent). Arguments and result only with
/// `content`.
pub(crate) fn tool_call(ctx: &ExecContext, start_time: f64, call: ToolSpan<'_>, content: bool) -> RunSpan {
  let mut attributes = Map::new();
  attributes.insert("gen_ai.operation.name".into(), json!("execute_tool"));
  attributes.insert("gen_ai.tool.name".into(), json!(call.name));
  attributes.insert("gen_ai.tool.call.id".into(), json!(call.call_id));
  let status = match call.status {
    ToolStatus::Ran => "ok",
    ToolStatus::Denied => "denied",
    ToolStatus::Failed => "error",
  };
  attributes.insert("noetic.status".into(), json!(status));
  if call.status == ToolStatus::Failed {
    attributes.insert("error.message".into(), json!(call.output.unwrap_or_default()));
  }
  if content {
    if let Some(arguments) = call.arguments {
      attributes.insert("gen_ai.tool.call.arguments".into(), json!(arguments));
    }
    if let Some(output) = call.output {
      attributes.insert("gen_ai.tool.call.result".into(), json!(output));
    }
  }
  under_execution("noetic.tool_call", ctx, start_time, attributes)
}

fn usage(attributes: &mut Map<String, Value>, round: &Round) {
  attributes.insert("gen_ai.usage.input_tokens".into(), json!(round.input_tokens));
  attributes.insert("gen_ai.usage.output_tokens".into(), json!(round.output_tokens));
  // The provider's report when it gave one; otherwise the cached tokens the usage counted.
  let cache_read = round.cache_read.unwrap_or(round.cached_tokens);
  if cache_read > 0.0 {
    attributes.insert("gen_ai.usage.cache_read.input_tokens".into(), json!(cache_read));
  }
  if let Some(written) = round.cache_write.filter(|written| *written > 0.0) {
    attributes.insert("gen_ai.usage.cache_creation.input_tokens".into(), json!(written));
  }
  attributes.insert("noetic.cost".into(), json!(round.cost));
  attributes.insert("noetic.status".into(), json!("ok"));
}

/// Items as one JSON array text: what a model was given or gave back.
pub(crate) fn items_json(items: &[Arc<Item>]) -> String {
  let mut text = String::from("[");
  for (at, item) in items.iter().enumerate() {
    if at > 0 {
      text.push(',');
    }
    text.push_str(item.json_text());
  }
  text.push(']');
  text
}

/// Prompts and completions on a model-call span, when the user opted in: the step's instructions, the items the
/// model was given (a native model's; a JS model reads the log itself) and those it answered, as JSON texts.
pub(crate) fn content(span: &mut RunSpan, instructions: Option<&str>, prompt: String, result: &RunResult<Round>) {
  if let Some(instructions) = instructions {
    span.attributes.insert("gen_ai.system_instructions".into(), json!(instructions));
  }
  span.attributes.insert("gen_ai.input.messages".into(), json!(prompt));
  if let Ok(round) = result {
    span.attributes.insert("gen_ai.output.messages".into(), json!(items_json(&round.items)));
  }
}
