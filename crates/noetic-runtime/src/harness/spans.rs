//! The runtime's own spans (DECISIONS O1, O2): one per execution, one per step with an id (under the step it is
//! nested in, or its execution), one per model call of an LLM step (its tool rounds included) and one per tool call
//! (under their step), recorded only when the harness traces. Attributes are named by the OpenTelemetry GenAI conventions
//! where one applies and under `noetic.` otherwise, so that every exporter sees the names an OTel backend expects.

use serde_json::{Map, Value, json};

use super::context::ExecContext;
use super::model::Model;
use super::{RunResult, Runner};
use crate::items::Item;
use crate::memory::trace::{RunSpan, now_ms};
use crate::provider::Round;
use crate::steps::Step;
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
      self.env.sink.trace_run(execution(&self.name, ctx, start, &Some(failure_of(result))));
    }
  }

  /// The span of the execution of the child context `ctx` (a spawn's, a fork path's) beginning now, when `traced` and
  /// the harness traces.
  pub(crate) fn child_execution<'a>(&'a self, ctx: &'a ExecContext, traced: bool) -> ChildExecution<'a> {
    ChildExecution { runner: self, ctx, start: self.trace_start().filter(|_| traced) }
  }
}

/// How the work a span times ended: `None` while it has not (its future was dropped unfinished), else the failure it
/// ended with, if any.
type Outcome = Option<Option<String>>;

fn failure_of<T>(result: &RunResult<T>) -> Option<String> {
  result.as_ref().err().map(ToString::to_string)
}

/// `noetic.status` and `error.message` for work in `ctx` that ended as `outcome`: an abort wins, and work dropped
/// unfinished (a path a race left behind, a step a timeout ended) is `cancelled`.
fn ended(attributes: &mut Map<String, Value>, ctx: &ExecContext, outcome: &Outcome) {
  let status = match (outcome, ctx.aborted()) {
    (_, Some(_)) => "aborted",
    (Some(None), None) => "ok",
    (Some(Some(_)), None) => "error",
    (None, None) => "cancelled",
  };
  attributes.insert("noetic.status".into(), json!(status));
  if let Some(Some(failure)) = outcome {
    attributes.insert("error.message".into(), json!(failure));
  }
}

/// A child context's execution span, recorded however the execution ends: a fork path a race leaves behind is dropped
/// unfinished, and the spans of its steps still need their parent (O2).
pub(crate) struct ChildExecution<'a> {
  runner: &'a Runner,
  ctx: &'a ExecContext,
  start: Option<f64>,
}

impl ChildExecution<'_> {
  pub(crate) fn end<T>(mut self, result: &RunResult<T>) {
    self.record(&Some(failure_of(result)));
  }

  fn record(&mut self, outcome: &Outcome) {
    if let Some(start) = self.start.take() {
      self.runner.env.sink.trace_run(execution(&self.runner.name, self.ctx, start, outcome));
    }
  }
}

impl Drop for ChildExecution<'_> {
  fn drop(&mut self) {
    self.record(&None);
  }
}

/// The span of an execution of `ctx` that began at `start_time` (ms since the epoch) and ends now as `outcome`.
/// Its id is the context's, so the hook spans recorded for the context hang under it.
fn execution(agent: &str, ctx: &ExecContext, start_time: f64, outcome: &Outcome) -> RunSpan {
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
  ended(&mut attributes, ctx, outcome);
  RunSpan {
    name: "noetic.execution",
    trace_id: ctx.root.clone(),
    span_id: ctx.id.clone(),
    // A spawn's or a fork path's under the step that made it.
    parent_span_id: ctx.parent_span.clone().or_else(|| ctx.parent.clone()),
    start_time,
    end_time: now_ms(),
    attributes,
  }
}

/// The span of an LLM step's call to its model (every round of its tool loop) that began at `start_time`, under the
/// step's span. `provider`: the GenAI conventions' `gen_ai.provider.name`, when the runtime knows it.
pub(crate) fn model_call(
  ctx: &ExecContext,
  (step_id, model, provider): (&str, &str, Option<&str>),
  start_time: f64,
  result: &RunResult<Round>,
) -> RunSpan {
  let mut attributes = Map::new();
  attributes.insert("gen_ai.operation.name".into(), json!("chat"));
  if let Some(provider) = provider {
    attributes.insert("gen_ai.provider.name".into(), json!(provider));
  }
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
  under_step("noetic.model_call", ctx, step_id, start_time, attributes)
}

/// Who answers a model call, named as `gen_ai.provider.name` is: OpenRouter's Responses API; none for the scripted
/// model and a JS model function, whose provider the runtime cannot know.
pub(crate) fn provider_name(model: &Model) -> Option<&'static str> {
  matches!(model, Model::OpenRouter(_)).then_some("openrouter")
}

/// A span of its own under the span of step `step_id` in `ctx` (its execution's outside one), begun at `start_time`
/// and ending now.
fn under_step(
  name: &'static str,
  ctx: &ExecContext,
  step_id: &str,
  start_time: f64,
  attributes: Map<String, Value>,
) -> RunSpan {
  RunSpan {
    name,
    trace_id: ctx.root.clone(),
    span_id: uuid::Uuid::new_v4().to_string(),
    parent_span_id: Some(ctx.innermost_span(Some(step_id))),
    start_time,
    end_time: now_ms(),
    attributes,
  }
}

/// A step's span while it runs (O2): begun as its frame enters the frontier and recorded as the frame leaves, however
/// the step ends, so a step a race or a timeout drops unfinished still ends (`cancelled`, or `aborted`).
pub(crate) struct StepSpan<'a> {
  runner: &'a Runner,
  step: &'a Step,
  span_id: String,
  parent: String,
  start_time: f64,
  outcome: Outcome,
}

impl<'a> StepSpan<'a> {
  /// The span of `step`, about to enter `ctx`'s frontier, under the innermost step in flight there; only while the
  /// harness traces, so that one without an exporter pays a branch. Boxed: it lives in every step's future.
  pub(crate) fn begin(runner: &'a Runner, step: &'a Step, ctx: &ExecContext) -> Option<Box<Self>> {
    runner.env.sink.tracing().then(|| {
      Box::new(Self {
        runner,
        step,
        span_id: uuid::Uuid::new_v4().to_string(),
        parent: ctx.innermost_span(None),
        start_time: now_ms(),
        outcome: None,
      })
    })
  }

  pub(crate) fn id(&self) -> String {
    self.span_id.clone()
  }

  /// The step ended with `result`.
  pub(crate) fn ended<T>(&mut self, result: &RunResult<T>) {
    self.outcome = Some(failure_of(result));
  }

  /// Records the span, ending now, as the step's frame leaves `ctx`.
  pub(crate) fn end(self, ctx: &ExecContext) {
    let mut attributes = Map::new();
    attributes.insert("noetic.step_id".into(), json!(self.step.id()));
    attributes.insert("noetic.step_kind".into(), json!(self.step.kind()));
    ended(&mut attributes, ctx, &self.outcome);
    self.runner.env.sink.trace_run(RunSpan {
      name: "noetic.step",
      trace_id: ctx.root.clone(),
      span_id: self.span_id,
      parent_span_id: Some(self.parent),
      start_time: self.start_time,
      end_time: now_ms(),
      attributes,
    });
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
  /// The LLM step whose model made the call: its span is the call's parent.
  pub step_id: &'a str,
  pub name: &'a str,
  pub call_id: &'a str,
  pub arguments: Option<&'a str>,
  pub status: ToolStatus,
  /// The output the model is handed (the decorated item's text for a tool that makes one).
  pub output: Option<&'a str>,
}

/// The span of one tool call a model made, begun at `start_time`, under its LLM step's span (a sibling of the model
/// call's span, as the GenAI conventions place `execute_tool` beside `chat`). Arguments and result only with
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
  under_step("noetic.tool_call", ctx, call.step_id, start_time, attributes)
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
