//! projectHistory (§11.1): a read-side projection of the history a model call sees. The layers that define it
//! run in slot order, each given what the one before returned; the log itself is never changed. A hook that fails
//! (or returns no `items` list) is a diagnostic, and the history passes it unchanged.

use std::sync::Arc;

use crate::error::NoeticError;
use crate::host::{HookArgs, HookBatch, HookStatus, ProjectedItem, WriteRule};
use crate::items::{Item, ItemTypes, parse_js_item};
use crate::memory::HookKind;

use super::{ExecScope, MemoryEnv, host_call};

/// One item of the projected history: the log's item at a position, or one a hook made.
#[derive(Debug, Clone)]
pub enum Projected {
  Log(usize),
  Made(Arc<Item>),
}

/// The projected history, or `None` when no layer projects (the log is the history). `given`: project these items
/// instead of the log's (`ctx.harness.projectHistory`); the hooks' result is then all [`Projected::Made`].
pub async fn project_history(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  given: Option<&[Arc<Item>]>,
) -> Result<Option<Vec<Projected>>, NoeticError> {
  let layers = env.participants(scope, HookKind::ProjectHistory);
  if layers.is_empty() {
    return Ok(None);
  }
  let mut batch = HookBatch::new(HookKind::ProjectHistory, scope.context.to_owned(), scope.info.clone());
  let mut called = Vec::new();
  for layer in layers {
    if let Some(call) = host_call(layer, HookKind::ProjectHistory, WriteRule::Never, HookArgs::ProjectHistory) {
      batch.calls.push(call);
      called.push(layer);
    }
  }
  if let Some(items) = given {
    batch.items = Some(items.iter().map(|item| item.to_json_text()).collect());
  }
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
