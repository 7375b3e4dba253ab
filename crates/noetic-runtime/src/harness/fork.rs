//! `fork`: a function gives the paths; each runs in a child context of its own (a copy of the log, no layers), as
//! many at once as `concurrency` allows; `race` keeps the first success, `all` every value (failing fast), and
//! `settle` every outcome. `merge` combines the results of `all` and `settle`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::stream::{self, FuturesUnordered, StreamExt};
use serde_json::{Value, json};

use super::interpreter::{failure_payload, is_cancelled, nested, step_source, value_json};
use super::{ExecContext, RunError, RunResult, Runner};
use crate::error::NoeticError;
use crate::host::{MergeCall, MergeInput, StepFnCall, StepValue, StepValueRef};
use crate::memory::registry::LayerSet;
use crate::steps::{ForkMode, ForkStep, Step};

pub(super) async fn run_fork(
  runner: &Runner,
  fork: &ForkStep,
  input: StepValue,
  ctx: &Arc<ExecContext>,
  depth: usize,
) -> RunResult<StepValue> {
  let source = step_source(runner, &fork.id)?;
  let call = StepFnCall { func: fork.paths, context: ctx.id.clone(), input: (&input).into() };
  let paths = source.fork_paths(call).await?;
  if paths.is_empty() {
    return match fork.mode {
      ForkMode::Race => Err(fork_partial(&fork.id, &[], &[]).into()),
      ForkMode::All | ForkMode::Settle => merge(runner, fork, ctx, Vec::new()).await,
    };
  }
  // Children copy the log as it is now, held items included.
  ctx.take_held_items(&*runner.env.host).await?;
  let children: Vec<Arc<ExecContext>> = paths.iter().map(|_| open_child(runner, ctx)).collect();
  let limit = fork.concurrency.unwrap_or(paths.len()).clamp(1, paths.len());
  let run = Paths { runner, paths: &paths, children: &children, input: &input, depth };
  let result = match fork.mode {
    ForkMode::Race => race(&run, fork, ctx, limit).await,
    ForkMode::All => all(&run, fork, ctx, limit).await,
    ForkMode::Settle => settle(&run, fork, ctx, limit).await,
  };
  for child in &children {
    runner.close_context(&child.id);
  }
  result
}

/// The paths of one fork and the contexts they run in.
struct Paths<'a> {
  runner: &'a Runner,
  paths: &'a [Step],
  children: &'a [Arc<ExecContext>],
  input: &'a StepValue,
  depth: usize,
}

impl Paths<'_> {
  async fn run(&self, i: usize) -> RunResult<StepValue> {
    // Recorded even when a race leaves the path behind (O2).
    let traced = self.runner.child_execution(&self.children[i], true);
    let result = nested(self.runner, &self.paths[i], self.input.clone(), &self.children[i], self.depth + 1).await;
    traced.end(&result);
    result
  }

  fn abort_all_but(&self, keep: Option<usize>, reason: &str) {
    for (i, child) in self.children.iter().enumerate() {
      if Some(i) != keep {
        child.abort(reason.to_owned());
      }
    }
  }
}

/// A child context of `ctx` for one path: its thread, a copy of its log, no layers (as upstream's fork children).
fn open_child(runner: &Runner, ctx: &Arc<ExecContext>) -> Arc<ExecContext> {
  let child = ExecContext::child_of(ctx, Arc::new(LayerSet::default()));
  child.state().log = ctx.state().log.clone();
  runner.open_context(child)
}

/// The first path to succeed wins; the others are aborted and not waited for. With a concurrency limit, a queued
/// path starts when a running one fails.
async fn race(run: &Paths<'_>, fork: &ForkStep, ctx: &Arc<ExecContext>, limit: usize) -> RunResult<StepValue> {
  let start = |i: usize| async move { (i, run.run(i).await) };
  let mut running: FuturesUnordered<_> = (0..limit).map(start).collect();
  let mut next = limit;
  let mut failed = Vec::new();
  let mut winner = None;
  while let Some((i, outcome)) = running.next().await {
    match outcome {
      Ok(value) => {
        winner = Some((i, value));
        break;
      }
      Err(error) => {
        failed.push((i, error));
        if next < run.paths.len() {
          running.push(start(next));
          next += 1;
        }
      }
    }
  }
  // Aborted before they are dropped, so that the steps and executions left behind end as `aborted`, as their
  // contexts then are, not `cancelled` (O2's rule).
  run.abort_all_but(winner.as_ref().map(|(i, _)| *i), "race lost");
  drop(running);
  match winner {
    Some((i, value)) => {
      run.runner.env.host.adopt_state(&run.children[i].id, &ctx.id);
      Ok(value)
    }
    None => Err(fork_partial(&fork.id, &[], &path_errors(run.paths, failed)).into()),
  }
}

/// Every path must succeed: the first failure (other than a cancellation) aborts the others, and paths still
/// queued do not start.
async fn all(run: &Paths<'_>, fork: &ForkStep, ctx: &Arc<ExecContext>, limit: usize) -> RunResult<StepValue> {
  let reason = format!("fork '{}' sibling failed", fork.id);
  let failing = AtomicBool::new(false);
  let (reason, failing) = (&reason, &failing);
  let task = |i: usize| async move {
    if failing.load(Ordering::SeqCst) {
      return Err(NoeticError::cancelled(reason).into());
    }
    let outcome = run.run(i).await;
    if let Err(error) = &outcome
      && !is_cancelled(error)
      && !failing.swap(true, Ordering::SeqCst)
    {
      run.abort_all_but(Some(i), reason);
    }
    outcome
  };
  let outcomes = pooled(run.paths.len(), limit, task).await;
  if let Some(reason) = ctx.aborted() {
    return Err(NoeticError::cancelled(&reason).into());
  }
  if outcomes.iter().any(Result::is_err) {
    let (mut succeeded, mut failed) = (Vec::new(), Vec::new());
    for (i, outcome) in outcomes.into_iter().enumerate() {
      match outcome {
        Ok(value) => succeeded.push((run.paths[i].id().to_owned(), value)),
        Err(error) => failed.push((i, error)),
      }
    }
    return Err(fork_partial(&fork.id, &succeeded, &path_errors(run.paths, failed)).into());
  }
  let values = outcomes.into_iter().flatten().map(|value| MergeInput::Value { value: (&value).into() }).collect();
  merge(run.runner, fork, ctx, values).await
}

/// Every path runs to its end; `merge` gets each one's outcome.
async fn settle(run: &Paths<'_>, fork: &ForkStep, ctx: &Arc<ExecContext>, limit: usize) -> RunResult<StepValue> {
  let outcomes = pooled(run.paths.len(), limit, |i| run.run(i)).await;
  if let Some(reason) = ctx.aborted() {
    return Err(NoeticError::cancelled(&reason).into());
  }
  let results = outcomes
    .into_iter()
    .enumerate()
    .map(|(i, outcome)| {
      let step_id = run.paths[i].id().to_owned();
      match outcome {
        Ok(value) => MergeInput::Fulfilled { step_id, value: StepValueRef::from(&value) },
        Err(error) => MergeInput::Rejected { error: failure_payload(&step_id, &error), step_id },
      }
    })
    .collect();
  merge(run.runner, fork, ctx, results).await
}

/// Runs `task` for paths `0..count`, at most `limit` at a time, and gives their outcomes in path order. A pool, as
/// upstream's: a path that ends frees its place for the next one at once, whichever paths before it still run.
async fn pooled<F, Fut>(count: usize, limit: usize, task: F) -> Vec<RunResult<StepValue>>
where
  F: Fn(usize) -> Fut,
  Fut: Future<Output = RunResult<StepValue>>,
{
  let task = &task;
  let mut outcomes: Vec<(usize, RunResult<StepValue>)> =
    stream::iter((0..count).map(|i| async move { (i, task(i).await) })).buffer_unordered(limit).collect().await;
  outcomes.sort_unstable_by_key(|(i, _)| *i);
  outcomes.into_iter().map(|(_, outcome)| outcome).collect()
}

async fn merge(
  runner: &Runner,
  fork: &ForkStep,
  ctx: &Arc<ExecContext>,
  results: Vec<MergeInput>,
) -> RunResult<StepValue> {
  let Some(merge) = fork.merge else {
    return Err(
      crate::error::ConfigError::new(
        "MISSING_MERGE_FUNCTION",
        format!("fork '{}' has no merge function.", fork.id),
        "Provide a merge function that combines path results into a single output.",
      )
      .into(),
    );
  };
  Ok(runner.env.host.merge(MergeCall { merge, context: ctx.id.clone(), results }).await?)
}

/// Failed paths as `fork_partial` lists them: each path's id and error payload.
fn path_errors(paths: &[Step], failed: Vec<(usize, RunError)>) -> Vec<(String, Value)> {
  failed
    .into_iter()
    .map(|(i, error)| {
      let step_id = paths[i].id().to_owned();
      let payload = failure_payload(&step_id, &error);
      (step_id, payload)
    })
    .collect()
}

fn fork_partial(id: &str, succeeded: &[(String, StepValue)], failed: &[(String, Value)]) -> NoeticError {
  let succeeded_json: Vec<Value> =
    succeeded.iter().map(|(step_id, value)| json!({ "stepId": step_id, "value": value_json(value) })).collect();
  let failed_json: Vec<Value> =
    failed.iter().map(|(step_id, error)| json!({ "stepId": step_id, "error": error })).collect();
  NoeticError::described("fork_partial", json!({ "stepId": id, "succeeded": succeeded_json, "failed": failed_json }))
}
