//! `spawn`: a child step in an isolated child context. Its log starts as `contextIn` says, then the inherited
//! layers' onSpawn items; its output reaches the parent as `contextOut` says, then through onReturn (§15, D12).

use std::sync::Arc;

use super::interpreter::{nested, step_failed, step_failed_by};
use super::summary::SummaryRequest;
use super::{ExecContext, RunResult, Runner};
use crate::error::ConfigError;
use crate::host::{FnArg, FnCall, HostRef, StepValue};
use crate::items::{Item, check_item_type};
use crate::memory::lifecycle;
use crate::steps::{ContextIn, ContextOut, Step};

/// A spawn step's fields.
pub(super) struct Spawn<'a> {
  pub id: &'a str,
  pub child: &'a Step,
  pub own_layers: bool,
  pub timeout_ms: Option<f64>,
  pub context_in: &'a ContextIn,
  pub context_out: &'a ContextOut,
}

/// Asked of the model when a summary names no prompt.
const SUMMARY_PROMPT: &str = "Summarize the conversation above for the agent that delegated it: what was asked, what \
                              was done and what came of it. Be concise.";

pub(super) async fn run_spawn(
  runner: &Runner,
  spawn: Spawn<'_>,
  input: StepValue,
  ctx: &Arc<ExecContext>,
  child_ctx: &Arc<ExecContext>,
  depth: usize,
) -> RunResult<StepValue> {
  let run = async {
    seed(runner, &spawn, &input, ctx, child_ctx).await?;
    if spawn.own_layers {
      let output = runner.run_in(child_ctx, spawn.child, input).await?;
      return shape(runner, &spawn, output, ctx, child_ctx).await;
    }
    let inherits = !child_ctx.layers().is_empty();
    let (parent_scope, child_scope) = (runner.scope(ctx), runner.scope(child_ctx));
    let result = async {
      if inherits {
        let items = lifecycle::spawn_layers(&runner.env, &parent_scope, &child_scope).await?;
        let mut state = child_ctx.state();
        for item in items {
          state.log.push(item);
        }
      }
      let output = under_way(child_ctx, nested(runner, spawn.child, input, child_ctx, depth + 1)).await?;
      let output = shape(runner, &spawn, output, ctx, child_ctx).await?;
      Ok(if inherits {
        lifecycle::return_layers(&runner.env, &parent_scope, &child_scope, output).await
      } else {
        output
      })
    }
    .await;
    runner.recall_cache.finish(&child_ctx.id).await;
    // Layers without init may have written state in the child; it ends with the child (D15, as upstream's
    // executeSpawn cleans up its child).
    runner.env.states.flush(&child_ctx.id).await;
    lifecycle::end_execution(&runner.env, child_ctx.layers().layers(), &child_ctx.id);
    result
  };
  match spawn.timeout_ms.filter(|ms| ms.is_finite() && *ms >= 0.0) {
    None => run.await,
    Some(ms) => within(spawn.id, ms, child_ctx, run).await,
  }
}

/// Runs `body` as the execution under way in the child `ctx`, which the spawn began (onSpawn's states) and will end
/// (onReturn, then the states go): a step in the child that runs another step in its own context
/// (`ctx.harness.run(step, input, ctx)`, see [`Runner::run_existing`]) joins that execution, as upstream's runs in
/// the child's, instead of initialising the child's layers over the states onSpawn gave them and ending it under
/// the spawn.
async fn under_way<T>(ctx: &ExecContext, body: impl Future<Output = T>) -> T {
  *ctx.runs_in_flight.lock().await += 1;
  let out = body.await;
  *ctx.runs_in_flight.lock().await -= 1;
  out
}

/// A spawn's child within its time limit (DECISIONS G7): past it the child is aborted, and still finished (so that
/// its layers end cleanly) before the spawn fails with `step_failed`.
async fn within(
  id: &str,
  ms: f64,
  child: &Arc<ExecContext>,
  run: impl Future<Output = RunResult<StepValue>>,
) -> RunResult<StepValue> {
  let mut run = std::pin::pin!(run);
  tokio::select! {
    result = &mut run => result,
    () = crate::js_time::sleep_ms(ms) => {
      let message = format!("Spawn '{id}' timed out after {}ms", crate::js_number(ms));
      child.abort(message.clone());
      let _ = run.await;
      Err(step_failed(id, message).into())
    }
  }
}

/// Puts `contextIn`'s items at the head of the child's log.
async fn seed(
  runner: &Runner,
  spawn: &Spawn<'_>,
  input: &StepValue,
  parent: &Arc<ExecContext>,
  child: &Arc<ExecContext>,
) -> RunResult<()> {
  let items: Vec<Arc<Item>> = match spawn.context_in {
    ContextIn::Fresh => return Ok(()),
    ContextIn::Inherit => {
      parent.take_held_items(&*runner.env.host).await?;
      parent.state().log.items().to_vec()
    }
    ContextIn::Subset(select) => host_items(runner, spawn, "select", *select, Vec::new(), parent).await?,
    ContextIn::Custom(build) => {
      host_items(runner, spawn, "build", *build, vec![FnArg::Value(input.into())], parent).await?
    }
  };
  let mut state = child.state();
  for item in items {
    state.log.push(item);
  }
  Ok(())
}

/// The items `select` or `build` (`which`) gives, called with the parent's context: an array of items the harness
/// admits (as JSON text, see `describeContextIn`), or a clear error naming the first that is not one.
async fn host_items(
  runner: &Runner,
  spawn: &Spawn<'_>,
  which: &str,
  func: HostRef,
  args: Vec<FnArg>,
  parent: &ExecContext,
) -> RunResult<Vec<Arc<Item>>> {
  let call = FnCall { func, context: parent.id.clone(), args };
  let value = runner.env.host.call_fn(call).await.map_err(|e| step_failed_by(spawn.id, &e.into(), false))?;
  let hint = "Return an array of items, e.g. createMessage('...', 'user'), from contextIn's function.";
  let parsed = match value {
    StepValue::Text(text) => crate::js_text::from_js_json(&text).ok(),
    _ => None,
  };
  let Some(serde_json::Value::Array(values)) = parsed else {
    let message = format!("Spawn '{}': contextIn {which} returned something other than an array of items.", spawn.id);
    return Err(ConfigError::new("INVALID_CONTEXT_ITEMS", message, hint).into());
  };
  values
    .into_iter()
    .enumerate()
    .map(|(index, value)| {
      let item = Item::from_value(value).map_err(|error| {
        let message = format!("Spawn '{}': contextIn {which} returned a bad item at index {index}: {error}", spawn.id);
        ConfigError::new("INVALID_CONTEXT_ITEMS", message, hint)
      })?;
      check_item_type(&item, runner.item_types)?;
      Ok(Arc::new(item))
    })
    .collect()
}

/// What the parent receives of the child's output.
async fn shape(
  runner: &Runner,
  spawn: &Spawn<'_>,
  output: StepValue,
  parent: &Arc<ExecContext>,
  child: &Arc<ExecContext>,
) -> RunResult<StepValue> {
  match spawn.context_out {
    ContextOut::Full => Ok(output),
    ContextOut::Schema(schema) => {
      let call = FnCall { func: *schema, context: parent.id.clone(), args: vec![FnArg::Value((&output).into())] };
      Ok(runner.env.host.call_fn(call).await?)
    }
    ContextOut::Summary { model, prompt } => {
      child.take_held_items(&*runner.env.host).await?;
      let (end, last_model) = {
        let state = child.state();
        (state.log.len(), state.last_model.clone())
      };
      let Some(model) = model.clone().or(last_model) else {
        let cause = "contextOut summary names no model and the child ran no LLM step";
        return Err(step_failed(spawn.id, cause.to_owned()).into());
      };
      let request = SummaryRequest {
        step_id: spawn.id,
        model: &model,
        range: 0..end,
        earlier: None,
        prompt: prompt.as_deref().unwrap_or(SUMMARY_PROMPT),
      };
      match runner.summarize(child, request).await {
        Ok(text) => Ok(StepValue::Text(text)),
        Err(error) => Err(step_failed_by(spawn.id, &error, false).into()),
      }
    }
  }
}
