//! projectHistory (§11.1): a read-side projection of the history a model call sees. The layers that define it
//! run in slot order, each given what the one before returned; the log itself is never changed. A hook that fails
//! (or returns no `items` list) is a diagnostic, and the history passes it unchanged.

use std::sync::Arc;

use crate::error::NoeticError;
use crate::host::{HookArgs, HookBatch, HookStatus, ProjectedItem, WriteRule};
use crate::items::{Item, ItemTypes, parse_js_item};
use crate::memory::HookKind;
use crate::memory::history::{History, LogReader, Projected};
use crate::memory::registry::{Layer, LayerImpl};

use super::{ExecScope, MemoryEnv, host_call};

/// The projected history, or `None` when no layer changed it (the log is the history). `given`: project these
/// items instead of the log's (`ctx.harness.projectHistory`); the result is then all [`Projected::Made`].
/// Built-in layers project natively, over the log `read_log` reads; each run of JS layers between them is one batch.
pub async fn project_history(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  given: Option<&[Arc<Item>]>,
  read_log: LogReader<'_>,
) -> Result<Option<Vec<Projected>>, NoeticError> {
  let layers = env.participants(scope, HookKind::ProjectHistory);
  let mut current: Option<Vec<Projected>> = given.map(|items| items.iter().cloned().map(Projected::Made).collect());
  let mut next = 0;
  while next < layers.len() {
    let layer = layers[next];
    if let LayerImpl::Native(native) = &layer.imp {
      let started = std::time::Instant::now();
      let mut projected = None;
      read_log(&mut |log| {
        let history = match &current {
          None => History::Log(log),
          Some(entries) => History::List { entries, log },
        };
        projected = native.project_history(&history);
      });
      env.trace_native(scope.trace_target(), layer, HookKind::ProjectHistory, started);
      current = projected.or(current);
      next += 1;
      continue;
    }
    let group: Vec<&Arc<Layer>> =
      layers[next..].iter().copied().take_while(|layer| matches!(layer.imp, LayerImpl::Host(_))).collect();
    next += group.len();
    if let Some(projected) = run_host_group(env, scope, group, current.as_deref()).await? {
      current = Some(projected);
    }
  }
  Ok(current)
}

/// One batch for a run of JS layers, given the history so far (`None`: the log); the last list a hook returned.
async fn run_host_group(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  group: Vec<&Arc<Layer>>,
  history: Option<&[Projected]>,
) -> Result<Option<Vec<Projected>>, NoeticError> {
  let mut batch = HookBatch::new(HookKind::ProjectHistory, scope.context.to_owned(), scope.info.clone());
  let mut called = Vec::new();
  for layer in group {
    if let Some(call) = host_call(layer, HookKind::ProjectHistory, WriteRule::Never, HookArgs::ProjectHistory) {
      batch.calls.push(call);
      called.push(layer);
    }
  }
  batch.history = history.map(|entries| {
    entries
      .iter()
      .map(|entry| match entry {
        Projected::Log(pos) => ProjectedItem::Log(*pos),
        Projected::Made(item) => ProjectedItem::Made(item.to_json_text()),
      })
      .collect()
  });
  let replies = env.run_batch(batch).await;
  let projected =
    replies.iter().rev().find(|reply| reply.status == HookStatus::Ok).and_then(|reply| reply.projected.clone());
  env.settle(scope.exec_id(), HookKind::ProjectHistory, called, replies);
  let Some(entries) = projected else { return Ok(None) };
  // Items a hook made only shape this view: their types are admitted as they are.
  let items = entries
    .into_iter()
    .map(|entry| match entry {
      ProjectedItem::Log(pos) => Ok(Projected::Log(pos)),
      ProjectedItem::Made(text) => parse_js_item(&text, ItemTypes::Any).map(|item| Projected::Made(Arc::new(item))),
    })
    .collect::<Result<_, _>>()?;
  Ok(Some(items))
}
