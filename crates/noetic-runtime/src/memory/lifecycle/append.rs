//! onItemAppend: input items about to enter the log pass through the layers in slot order (D7), each layer
//! receiving what the one before it passed on. A layer may transform, drop or add items; once none are left, the
//! pipeline ends and later layers are not asked.
//!
//! Consecutive JS layers go to the host in one batch, which chains them there; built-in layers run here on the
//! items as they stand at their slot, and may rewrite them too (fileReference's anchors).
//!
//! Every input item passes through (D7): the session's user message, a step's input, tool outputs and injected
//! messages. A hook may ask for a re-render (D23); the requests come back with the items, for the caller to honour
//! before its next model call (the recall that follows a step's input already does).

use std::sync::Arc;

use crate::error::NoeticError;
use crate::host::{HookArgs, HookBatch, HookStatus, RerenderRequest, WriteRule};
use crate::items::{Item, parse_js_item};
use crate::memory::HookKind;
use crate::memory::registry::{Layer, LayerImpl};

use super::{ExecScope, MemoryEnv, host_call, store};

/// What the pipeline passed on, and the re-renders its hooks asked for: `(layer id, slot, request)`.
#[derive(Debug)]
pub struct Appended {
  pub items: Vec<Arc<Item>>,
  pub rerender: Vec<(String, f64, RerenderRequest)>,
}

/// The items to append after every layer has had its say. An item a JS layer made that is not a valid item fails
/// the step, as an invalid item appended to the log would.
pub async fn append_items(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  items: Vec<Arc<Item>>,
) -> Result<Vec<Arc<Item>>, NoeticError> {
  Ok(append_with_requests(env, scope, items).await?.items)
}

/// As [`append_items`], with the re-render requests.
pub async fn append_with_requests(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  items: Vec<Arc<Item>>,
) -> Result<Appended, NoeticError> {
  let mut rerender = Vec::new();
  let exec = scope.exec_id().to_owned();
  let layers = env.participants(scope, HookKind::OnItemAppend);
  let mut current = items;
  let mut next = 0;
  while next < layers.len() && !current.is_empty() {
    let layer = layers[next];
    if let LayerImpl::Native(native) = &layer.imp {
      let state = env.state_json(&exec, layer.id());
      let append = native.on_item_append_with(state.as_ref(), &current, scope.hook_ctx());
      match env.run_native(scope.trace_target(), layer, HookKind::OnItemAppend, append).await {
        Ok(appended) => {
          store::apply_native(env, &exec, layer.id(), appended.write);
          if let Some(items) = appended.items {
            current = items;
          }
          if let Some(request) = appended.rerender {
            rerender.push((layer.id().to_owned(), layer.spec.slot, request));
          }
        }
        // A failed hook passes the items on as they came, as a failing JS hook does.
        Err(message) => env.diagnose(layer.id(), HookKind::OnItemAppend, &message),
      }
      next += 1;
      continue;
    }
    let group: Vec<&Arc<Layer>> =
      layers[next..].iter().copied().take_while(|layer| matches!(layer.imp, LayerImpl::Host(_))).collect();
    next += group.len();
    current = run_host_group(env, scope, &exec, group, current, &mut rerender).await?;
  }
  Ok(Appended { items: current, rerender })
}

/// One batch for a run of JS layers; the result is the last list a hook passed on.
async fn run_host_group(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  exec: &str,
  group: Vec<&Arc<Layer>>,
  items: Vec<Arc<Item>>,
  rerender: &mut Vec<(String, f64, RerenderRequest)>,
) -> Result<Vec<Arc<Item>>, NoeticError> {
  let mut batch = HookBatch::new(HookKind::OnItemAppend, scope.context.to_owned(), scope.info.clone());
  let mut called = Vec::new();
  for layer in group {
    if let Some(call) = host_call(layer, HookKind::OnItemAppend, WriteRule::IfDefined, HookArgs::OnItemAppend) {
      batch.calls.push(call);
      called.push(layer);
    }
  }
  batch.items = Some(items.iter().map(|item| item.to_json_text()).collect());
  let replies = env.run_batch(batch).await;
  let passed_on = replies
    .iter()
    .rev()
    .find(|reply| reply.status == HookStatus::Ok)
    .and_then(|reply| reply.items.clone().map(|texts| (texts, scope.item_types.unless_checked(reply.items_checked))));
  for (layer, reply) in called.iter().zip(&replies) {
    if let (HookStatus::Ok, Some(request)) = (&reply.status, &reply.rerender) {
      rerender.push((layer.id().to_owned(), layer.spec.slot, request.clone()));
    }
  }
  env.settle(exec, HookKind::OnItemAppend, called, replies);
  match passed_on {
    Some((texts, types)) => texts.iter().map(|text| parse_js_item(text, types).map(Arc::new)).collect(),
    None => Ok(items),
  }
}
