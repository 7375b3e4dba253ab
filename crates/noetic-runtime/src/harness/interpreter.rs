//! The step interpreter: runs a step tree in a context, dispatching each step kind; counts steps, honours abort
//! and `ctx.complete`.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::channels::Take;
use super::context::StepMeta;
use super::fork::run_fork;
use super::model_events::emit_allows;
use super::spans::StepSpan;
use super::spawn::{Spawn, run_spawn};
use super::{ExecContext, RunError, RunResult, Runner};
use crate::error::{ConfigError, NoeticError};
use crate::host::{
  FnArg, FnCall, HostError, HostRef, InboxCall, StepCall, StepFnCall, StepValue, StepValueRef, ToolStepCall, UntilCall,
  Verdict,
};
use crate::steps::until::{LoopFacts, Until, evaluate_native};
use crate::steps::{ChannelSpec, Emit, EveryStep, LoopStep, RetryPolicy, Step};

type StepFuture<'a> = Pin<Box<dyn Future<Output = RunResult<StepValue>> + Send + 'a>>;

/// Upstream's limit on context depth (spawns and forks in spawns and forks).
const MAX_DEPTH: u32 = 64;
/// How deep steps may nest in one context (loops in loops...): upstream has no limit; this one keeps a runaway
/// tree from exhausting the stack that polls it.
const MAX_NESTING: usize = 1_000;

/// Runs `step` with `input` in `ctx`.
pub fn execute<'a>(runner: &'a Runner, step: &'a Step, input: StepValue, ctx: &'a Arc<ExecContext>) -> StepFuture<'a> {
  Box::pin(dispatch(runner, step, input, ctx, 0))
}

/// The step-language functions that give steps at run time: a branch's route and a fork's paths. The host
/// describes the steps they return, which only it can (they hold its functions).
#[async_trait]
pub trait StepSource: Send + Sync {
  /// The step a route chose, or none to pass the input through.
  async fn route(&self, call: StepFnCall) -> Result<Option<Step>, HostError>;
  /// A fork's paths, in order.
  async fn fork_paths(&self, call: StepFnCall) -> Result<Vec<Step>, HostError>;
}

pub(super) fn step_source<'a>(runner: &'a Runner, step_id: &str) -> RunResult<&'a dyn StepSource> {
  runner.step_source.as_deref().ok_or_else(|| {
    ConfigError::new(
      "NO_STEP_SOURCE",
      format!("Step '{step_id}' chooses its steps at run time, which this host cannot do."),
      "Run it through the JS package, whose host describes the steps a route or paths function returns.",
    )
    .into()
  })
}

/// `work` as a future polled through a `dyn` call, which the compiler cannot inline: the step kinds that run steps
/// of their own, and the LLM step, each need a large stack frame to poll, and inlined into `run_step` they would
/// make its frame as large as all of them at every nesting level (steps nest hundreds deep, polled on the JS
/// thread's stack). Apart, a level takes only the frame of the kind it runs.
fn frame_of<'a>(work: impl Future<Output = RunResult<StepValue>> + Send + 'a) -> StepFuture<'a> {
  Box::pin(work)
}

pub(super) fn nested<'a>(
  runner: &'a Runner,
  step: &'a Step,
  input: StepValue,
  ctx: &'a Arc<ExecContext>,
  depth: usize,
) -> StepFuture<'a> {
  Box::pin(OnEnoughStack { step: dispatch(runner, step, input, ctx, depth) })
}

/// Room a nested step's poll must find on the stack, and the segment it gets when there is less.
const STACK_RED_ZONE: usize = 128 * 1024;
const STACK_SEGMENT: usize = 2 * 1024 * 1024;

pin_project_lite::pin_project! {
  /// A nested step's future, polled on a new stack segment when the polling thread's stack runs low. Nested steps are
  /// polled as nested futures, one poll frame inside another, on whatever thread polls the run: the JS thread (8 MB on
  /// Linux, 1 MB on Windows) or the turn worker. Without this, a tree within the 1,024 levels the description allows
  /// overflowed the stack and killed the process where frames are larger (a debug build at ~250 nested loops).
  struct OnEnoughStack<F> {
    #[pin]
    step: F,
  }
}

impl<F: Future> Future for OnEnoughStack<F> {
  type Output = F::Output;

  fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
    let step = self.project().step;
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || step.poll(cx))
  }
}

/// `step_failed` with `cause` (the JSON JS revives as the cause), whose message the message ends with.
fn step_failed_with(step_id: &str, cause: Value, retries_exhausted: bool) -> NoeticError {
  NoeticError::described(
    "step_failed",
    json!({ "stepId": step_id, "cause": cause, "retriesExhausted": retries_exhausted }),
  )
}

pub(super) fn step_failed(step_id: &str, cause: String) -> NoeticError {
  step_failed_with(step_id, json!({ "message": cause }), false)
}

/// `step_failed` that no retry can help (upstream's depth limit says `retriesExhausted: true`).
fn step_failed_exhausted(step_id: &str, cause: String) -> NoeticError {
  step_failed_with(step_id, json!({ "message": cause }), true)
}

/// Whether a failure is a cancellation (which nothing retries or wraps).
pub(super) fn is_cancelled(error: &RunError) -> bool {
  matches!(error, RunError::Noetic(e) if e.kind == "cancelled")
}

/// A failure as a `step_failed` cause, which JS revives as the very object thrown when it kept one.
fn cause_of(error: &RunError) -> Value {
  match error {
    RunError::Host(HostError::Thrown { message, error: Some(handle) }) => {
      json!({ "message": message, "handle": handle })
    }
    RunError::Noetic(e) => json!({ "message": e.message, "noeticError": e.payload }),
    // A NoeticConfigError a step threw comes back as an equal one (its code is what callers match on).
    RunError::Config(e) | RunError::Host(HostError::Config(e)) => {
      json!({ "message": e.message, "config": { "code": e.code, "message": e.message, "hint": e.hint } })
    }
    other => json!({ "message": other.to_string() }),
  }
}

/// `step_failed` with `error` as its cause; the message ends with the cause's message, as upstream's does (a
/// NoeticConfigError's own message, not its `[code] message` form).
pub(super) fn step_failed_by(step_id: &str, error: &RunError, retries_exhausted: bool) -> NoeticError {
  step_failed_with(step_id, cause_of(error), retries_exhausted)
}

/// A path's failure as a NoeticError payload: its own, or a `step_failed` of the path around anything else.
pub(super) fn failure_payload(step_id: &str, error: &RunError) -> Value {
  match error {
    RunError::Noetic(e) => e.payload.clone(),
    other => step_failed_by(step_id, other, false).payload,
  }
}

/// A step value inside an error payload: JSON as it is, anything else as a reference JS revives.
pub(super) fn value_json(value: &StepValue) -> Value {
  match value {
    StepValue::Text(text) | StepValue::Utf16Text { text, .. } => Value::String(text.clone()),
    StepValue::Json(json) => json.clone(),
    other => json!({ "$stepValue": StepValueRef::from(other) }),
  }
}

/// Puts a context's layers back when a `provide` ends, however it ends (a race may drop it mid-way).
struct RestoreLayers<'a> {
  ctx: &'a ExecContext,
  layers: Arc<crate::memory::registry::LayerSet>,
}

impl Drop for RestoreLayers<'_> {
  fn drop(&mut self) {
    self.ctx.set_layers(Arc::clone(&self.layers));
  }
}

/// Takes a step off its context's frontier however it ends (a race may drop it mid-way), ending its span.
struct InFlight<'a> {
  ctx: &'a ExecContext,
  number: u64,
  /// While the harness traces (O2).
  span: Option<Box<StepSpan<'a>>>,
}

impl Drop for InFlight<'_> {
  fn drop(&mut self) {
    self.ctx.leave_step(self.number);
    if let Some(span) = self.span.take() {
      span.end(self.ctx);
    }
  }
}

/// What a loop's `onError` says to do about a failed iteration.
enum OnError {
  Retry,
  Skip,
  Fail,
}

async fn dispatch(
  runner: &Runner,
  step: &Step,
  input: StepValue,
  ctx: &Arc<ExecContext>,
  depth: usize,
) -> RunResult<StepValue> {
  if ctx.depth >= MAX_DEPTH {
    let cause = format!("Maximum spawn depth {MAX_DEPTH} exceeded (depth: {})", ctx.depth);
    return Err(step_failed_exhausted(step.id(), cause).into());
  }
  if depth > MAX_NESTING {
    return Err(step_failed(step.id(), format!("steps nest more than {MAX_NESTING} deep")).into());
  }
  if let Some(reason) = ctx.aborted() {
    return Err(NoeticError::cancelled(&reason).into());
  }
  ctx.state().step_count += 1;
  report(runner, step, ctx, "step_started").await?;
  // As upstream, a step without an id is no frame: nothing could find it again by its id.
  let mut in_flight = (!step.id().is_empty()).then(|| {
    let span = StepSpan::begin(runner, step, ctx);
    InFlight { ctx, number: ctx.enter_step(step.id(), &input, span.as_ref().map(|span| span.id())), span }
  });
  let result = run_step(runner, step, input, ctx, depth).await;
  if let Some(span) = in_flight.as_mut().and_then(|frame| frame.span.as_mut()) {
    span.ended(&result);
  }
  if result.is_ok() {
    report(runner, step, ctx, "step_completed").await?;
  }
  result
}

/// A session's steps report to its stream, as upstream's do to the session broadcaster; an LLM step's `emit`
/// decides which of its events go.
async fn report(runner: &Runner, step: &Step, ctx: &Arc<ExecContext>, event: &str) -> RunResult<()> {
  let Some(io) = ctx.io() else { return Ok(()) };
  let emit = match step {
    Step::Llm(llm) => llm.emit,
    _ => Emit::All,
  };
  // Only a filter reads the data, so it is made only for one.
  let allowed = match emit {
    Emit::Filter(_) => {
      let data = json!({ "stepId": step.id(), "kind": step.kind() });
      emit_allows(runner, emit, ctx, event, &data).await?
    }
    _ => emit == Emit::All,
  };
  if allowed {
    io.step(&runner.name, event, step.id(), step.kind());
  }
  Ok(())
}

/// A branch: its route chooses a step (or none, passing the input through), which runs nested.
async fn run_branch(
  runner: &Runner,
  id: &str,
  route: HostRef,
  input: StepValue,
  ctx: &Arc<ExecContext>,
  depth: usize,
) -> RunResult<StepValue> {
  let call = StepFnCall { func: route, context: ctx.id.clone(), input: (&input).into() };
  // The route's own error propagates as it is, as upstream's does.
  match step_source(runner, id)?.route(call).await? {
    None => Ok(input),
    Some(chosen) => nested(runner, &chosen, input, ctx, depth + 1).await,
  }
}

async fn run_step(
  runner: &Runner,
  step: &Step,
  input: StepValue,
  ctx: &Arc<ExecContext>,
  depth: usize,
) -> RunResult<StepValue> {
  // The step kinds that run steps of their own, the LLM step and `step.run`'s retry loop poll in frames of their own
  // (`frame_of`): inline, the largest would size every step's future, held while the step waits on JS (S20).
  match step {
    Step::Run { id, execute, retry, subprocess, in_place } => {
      let run = RunCall { id, execute: *execute, adapter: runner.adapter_of_run(*subprocess, *in_place) };
      frame_of(run_with_retry(runner, run, retry.as_ref(), &input, ctx)).await
    }
    Step::Tool { id, tool, args } => {
      let call =
        ToolStepCall { tool: *tool, args: *args, step_id: id.clone(), context: ctx.id.clone(), input: (&input).into() };
      // A NoeticError (a cancellation, say) passes through; anything else fails the step.
      runner.env.host.run_tool_step(call).await.map_err(|error| match RunError::from(error) {
        noetic @ RunError::Noetic(_) => noetic,
        other => step_failed_by(id, &other, false).into(),
      })
    }
    Step::Branch { id, route, .. } => frame_of(run_branch(runner, id, *route, input, ctx, depth)).await,
    Step::Provide { child, memory, .. } => {
      let _restore = RestoreLayers { ctx, layers: ctx.set_layers(Arc::new(ctx.layers().provided(memory))) };
      nested(runner, child, input, ctx, depth + 1).await
    }
    Step::Fork(fork) => frame_of(run_fork(runner, fork, input, ctx, depth)).await,
    Step::Llm(llm) => frame_of(runner.execute_llm(llm, &input, ctx)).await,
    Step::Loop(looped) => frame_of(run_loop(runner, looped, input, ctx, depth)).await,
    Step::Every(every) => frame_of(run_every(runner, every, input, ctx, depth)).await,
    Step::Spawn { id, child, memory, timeout_ms, context_in, context_out } => {
      let spawn = Spawn { id, child, own_layers: memory.is_some(), timeout_ms: *timeout_ms, context_in, context_out };
      frame_of(async move {
        let layers = memory.clone().unwrap_or_else(|| ctx.layers());
        let child_ctx = runner.open_context(ExecContext::child_of(ctx, layers));
        // A child with layers of its own runs as an execution of its own, which traces itself.
        let traced = runner.child_execution(&child_ctx, !spawn.own_layers);
        let result = run_spawn(runner, spawn, input, ctx, &child_ctx, depth).await;
        traced.end(&result);
        runner.close_context(&child_ctx.id);
        result
      })
      .await
    }
  }
}

/// A `step.run`'s function and the subprocess adapter each attempt is handed to (none: called in place).
struct RunCall<'a> {
  id: &'a str,
  execute: HostRef,
  adapter: Option<HostRef>,
}

/// `step.run`: the function, tried again after a failure as `retry` says. A cancellation ends it at once; every
/// other failure, after the last attempt, is `step_failed` (upstream's `executeRun`).
async fn run_with_retry(
  runner: &Runner,
  RunCall { id, execute, adapter }: RunCall<'_>,
  retry: Option<&RetryPolicy>,
  input: &StepValue,
  ctx: &Arc<ExecContext>,
) -> RunResult<StepValue> {
  let attempts = retry.map_or(1.0, |policy| policy.max_attempts);
  let mut last = None;
  let mut attempt: u32 = 0;
  while f64::from(attempt) < attempts {
    if let Some(reason) = ctx.aborted() {
      return Err(NoeticError::cancelled(&reason).into());
    }
    let call =
      StepCall { step: execute, adapter, step_id: id.to_owned(), context: ctx.id.clone(), input: input.into() };
    match runner.env.host.run_step(call).await.map_err(RunError::from) {
      Ok(value) => return Ok(value),
      Err(error) if is_cancelled(&error) => return Err(error),
      Err(error) => last = Some(error),
    }
    if let Some(policy) = retry.filter(|_| f64::from(attempt + 1) < attempts) {
      let ms = policy.delay_ms(attempt);
      // An abort ends the wait (a long or endless backoff included); the loop then returns `cancelled`.
      if ms > 0.0 {
        tokio::select! {
          () = crate::js_time::sleep_ms(ms) => {}
          _ = ctx.until_aborted() => {}
        }
      }
    }
    attempt += 1;
  }
  Err(
    match last {
      Some(error) => step_failed_by(id, &error, attempts > 1.0),
      None => step_failed(id, "No attempts executed".to_owned()),
    }
    .into(),
  )
}

async fn run_loop(
  runner: &Runner,
  looped: &LoopStep,
  input: StepValue,
  ctx: &Arc<ExecContext>,
  depth: usize,
) -> RunResult<StepValue> {
  let LoopStep { id, steps, until, max_iterations, max_history, .. } = looped;
  let (max_iterations, max_history) = (*max_iterations, *max_history);
  if !max_iterations.is_finite() || max_iterations < 1.0 {
    return Err(step_failed(id, format!("Invalid maxIterations: {}", crate::js_number(max_iterations))).into());
  }
  let started = std::time::Instant::now();
  let mut current = input;
  let mut last_output: Option<StepValue> = None;
  let mut history: VecDeque<StepValue> = VecDeque::new();
  let mut iterations = 0.0;
  let mut completed = 0u64;
  loop {
    if let Some(reason) = ctx.aborted() {
      return Err(NoeticError::cancelled(&reason).into());
    }
    iterations += 1.0;
    if iterations > max_iterations {
      return Err(
        step_failed(id, format!("Loop exceeded maximum iterations ({})", crate::js_number(max_iterations))).into(),
      );
    }
    let output = match run_body(runner, steps, current.clone(), ctx, depth).await {
      Ok(Body::Completed(value)) => return Ok(value),
      Ok(Body::Output(output)) => {
        completed += 1;
        output
      }
      Err(error) => match on_error(runner, looped, &error, ctx).await? {
        OnError::Retry => continue,
        // A skip keeps the last good output; before there is one, it is a retry.
        OnError::Skip => match &last_output {
          Some(output) => output.clone(),
          None => continue,
        },
        OnError::Fail => return Err(error),
      },
    };
    last_output = Some(output.clone());
    history.push_back(output.clone());
    if history.len() > max_history {
      history.pop_front();
    }
    let facts = {
      let state = ctx.state();
      LoopFacts {
        step_count: completed,
        cost: state.cost,
        elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
        last_tool_calls: state.last_tool_calls,
      }
    };
    let verdict = verdict(runner, id, until, &facts, &output, &history, ctx).await;
    if verdict.stop {
      // A message in the inbox keeps the loop going, as a developer message in the log. Polled through a `dyn`
      // future, as a step kind's own work is (`frame_of`), so that its wait does not size every loop's frame.
      let Some(channel) = &looped.inbox else { return Ok(output) };
      let receive: InboxFuture<'_> = Box::pin(inbox_message(runner, channel, looped.park_timeout_ms, ctx));
      let Some(message) = receive.await? else { return Ok(output) };
      let item = Arc::new(crate::items::create_message(&message, "developer")?);
      ctx.state().log.push(item);
    }
    current = match looped.prepare_next {
      Some(prepare) => {
        let args = vec![FnArg::Value((&output).into()), FnArg::Json(verdict.to_json())];
        runner.env.host.call_fn(FnCall { func: prepare, context: ctx.id.clone(), args }).await?
      }
      None => output,
    };
  }
}

type InboxFuture<'a> = Pin<Box<dyn Future<Output = RunResult<Option<String>>> + Send + 'a>>;

/// What a loop's inbox has when the loop would stop: with a park timeout, a receive bounded by it (only a
/// cancellation of the context is an error, a timeout is no message); without, what is there now. The store decides
/// natively; the host turns a value taken into the message's text.
async fn inbox_message(
  runner: &Runner,
  channel: &ChannelSpec,
  park_timeout_ms: f64,
  ctx: &Arc<ExecContext>,
) -> RunResult<Option<String>> {
  let wait = park_timeout_ms > 0.0;
  let Some(store) = runner.channels_of(ctx) else {
    return if wait {
      Ok(None)
    } else {
      Err(HostError::Thrown { message: "No channel store configured".into(), error: None }.into())
    };
  };
  if wait && let Some(reason) = ctx.aborted() {
    return Err(NoeticError::cancelled(&reason).into());
  }
  let taken = match store.take(channel, wait) {
    Take::Nothing => return Ok(None),
    Take::Now(taken) => taken,
    Take::Wait(mut receive) => tokio::select! {
      taken = receive.value() => taken,
      () = crate::js_time::sleep_ms(park_timeout_ms) => return Ok(None),
      reason = ctx.until_aborted() => return Err(NoeticError::cancelled(&reason).into()),
    },
  };
  let call = InboxCall { context: ctx.id.clone(), value: taken.value, resolve: taken.resolve, awaited: wait };
  Ok(runner.env.host.recv_inbox(call).await?)
}

/// `every`: runs the body at once, then again after each park, until the context is cancelled. A failing body
/// ends it under `fail`; otherwise it is reported and the schedule goes on (a cancellation always ends it).
async fn run_every(
  runner: &Runner,
  every: &EveryStep,
  input: StepValue,
  ctx: &Arc<ExecContext>,
  depth: usize,
) -> RunResult<StepValue> {
  loop {
    if let Some(reason) = ctx.aborted() {
      return Err(NoeticError::cancelled(&reason).into());
    }
    if let Err(error) = nested(runner, &every.body, input.clone(), ctx, depth + 1).await {
      if every.fail_on_error || is_cancelled(&error) {
        return Err(error);
      }
      let failure = match error {
        RunError::Config(error) => HostError::Config(error),
        RunError::Noetic(error) => HostError::Noetic(error),
        RunError::Host(error) => error,
      };
      runner.env.host.every_iteration_failed(&ctx.id, &every.id, &failure);
    }
    if let Some(reason) = ctx.aborted() {
      return Err(NoeticError::cancelled(&reason).into());
    }
    park(runner, every, ctx).await;
  }
}

/// Waits `ms` (± `jitter`, drawn afresh each time), or less when the context is aborted or, with `wake_on`, a
/// value is sent on it meanwhile.
async fn park(runner: &Runner, every: &EveryStep, ctx: &Arc<ExecContext>) {
  let ms = if every.jitter > 0.0 {
    let unit = (uuid::Uuid::new_v4().as_u128() >> 75) as f64 / (1u64 << 53) as f64;
    (every.ms + (unit * 2.0 - 1.0) * every.jitter).max(0.0)
  } else {
    every.ms.max(0.0)
  };
  let timer = crate::js_time::sleep_ms(ms);
  // Subscribed natively, without taking anything: the body still sees what woke it.
  let wake = async {
    match &every.wake_on {
      Some(channel) => runner.channels.wake(channel).fired().await,
      None => std::future::pending::<()>().await,
    }
  };
  tokio::select! {
    () = timer => {}
    _ = ctx.until_aborted() => {}
    () = wake => {}
  }
}

/// How a loop body ended: with an output, or with `ctx.complete(value)` ending the run.
enum Body {
  Output(StepValue),
  Completed(StepValue),
}

async fn run_body(
  runner: &Runner,
  steps: &[Arc<Step>],
  input: StepValue,
  ctx: &Arc<ExecContext>,
  depth: usize,
) -> RunResult<Body> {
  let mut output = input;
  for body in steps {
    output = nested(runner, body, output, ctx, depth + 1).await?;
    if let Some(value) = ctx.state().completion.clone() {
      return Ok(Body::Completed(value));
    }
  }
  Ok(Body::Output(output))
}

/// A failed iteration: without `onError`, a cancellation or an error that is no NoeticError, the loop fails;
/// otherwise `onError` decides.
async fn on_error(runner: &Runner, looped: &LoopStep, error: &RunError, ctx: &Arc<ExecContext>) -> RunResult<OnError> {
  let (Some(handler), RunError::Noetic(noetic)) = (looped.on_error, error) else { return Ok(OnError::Fail) };
  if is_cancelled(error) {
    return Ok(OnError::Fail);
  }
  let call = FnCall { func: handler, context: ctx.id.clone(), args: vec![FnArg::Noetic(noetic.payload.clone())] };
  Ok(match runner.env.host.call_fn(call).await?.as_text() {
    Some("retry") => OnError::Retry,
    Some("skip") => OnError::Skip,
    _ => OnError::Fail,
  })
}

/// Evaluates a predicate tree: built-ins here, JS predicates through the host. A throwing predicate stops the
/// loop, as upstream, and is reported as a diagnostic so that the stop is not silent.
fn verdict<'a>(
  runner: &'a Runner,
  loop_id: &'a str,
  until: &'a Until,
  facts: &'a LoopFacts,
  output: &'a StepValue,
  history: &'a VecDeque<StepValue>,
  ctx: &'a Arc<ExecContext>,
) -> Pin<Box<dyn Future<Output = Verdict> + Send + 'a>> {
  Box::pin(async move {
    if let Some((stop, reason)) = evaluate_native(until, facts) {
      return Verdict::of(stop, reason);
    }
    match until {
      Until::Any(predicates) => {
        for predicate in predicates {
          let result = verdict(runner, loop_id, predicate, facts, output, history, ctx).await;
          if result.stop {
            return result;
          }
        }
        Verdict::of(false, None)
      }
      Until::All(predicates) => {
        let mut reasons = Vec::new();
        for predicate in predicates {
          let Verdict { stop, reason, .. } = verdict(runner, loop_id, predicate, facts, output, history, ctx).await;
          if !stop {
            return Verdict::of(false, None);
          }
          reasons.extend(reason.filter(|r| !r.is_empty()));
        }
        let joined = reasons.join("; ");
        Verdict::of(true, Some(if joined.is_empty() { "All predicates satisfied".to_owned() } else { joined }))
      }
      Until::Host(predicate) => {
        let (tokens, meta) = {
          let state = ctx.state();
          (state.tokens.to_json(), state.last_step_meta.as_ref().map_or(serde_json::Value::Null, StepMeta::to_json))
        };
        let call = UntilCall {
          predicate: *predicate,
          context: ctx.id.clone(),
          step_count: facts.step_count,
          elapsed_ms: facts.elapsed_ms,
          cost: facts.cost,
          tokens,
          depth: ctx.depth,
          last_output: output.into(),
          history: history.iter().map(StepValueRef::from).collect(),
          last_step_meta: meta,
        };
        match runner.env.host.eval_until(call).await {
          Ok(verdict) => verdict,
          Err(error) => {
            let reason = format!("Predicate error: {error}");
            runner
              .env
              .sink
              .loop_diagnostic(loop_id, &format!("{reason}; the loop stopped, as if it returned stop: true"));
            Verdict::of(true, Some(reason))
          }
        }
      }
      _ => Verdict::of(false, None),
    }
  })
}
