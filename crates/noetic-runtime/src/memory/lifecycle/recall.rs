//! recall: every layer contributes items for this model call, in slot order, within its allocated budget.

use std::collections::HashMap;
use std::sync::Arc;

use crate::host::{HookArgs, HookBatch, RecallReply, WriteRule};
use crate::items::{Item, check_known_type, create_message};
use crate::memory::HookKind;
use crate::memory::native::NativeRecall;
use crate::memory::registry::{Layer, LayerImpl};
use crate::tokens::estimate_tokens;

use super::{ExecScope, MemoryEnv, failure, host_call};

/// One layer's contribution: its items and the token count it reported (trusted as is, §9.1).
#[derive(Debug, Clone)]
pub struct RecallEntry {
  pub layer_id: String,
  pub slot: f64,
  pub items: Vec<Arc<Item>>,
  pub token_count: Option<f64>,
}

/// Recalls every layer with a `recall` hook that passes the gate. Entries come back in slot order.
// TODO(D6): eventual layers are recalled atomically for now; serve them from a cache refreshed after store.
pub async fn recall_layers(
  env: &MemoryEnv,
  scope: &ExecScope<'_>,
  budgets: &HashMap<String, f64>,
  query: &str,
) -> Vec<RecallEntry> {
  let exec = scope.exec_id().to_owned();
  let layers = env.participants(scope, HookKind::Recall);
  let budget_of = |layer: &Layer| budgets.get(layer.id()).copied().unwrap_or(0.0);
  let mut entries: Vec<(usize, RecallEntry)> = Vec::with_capacity(layers.len());
  let mut batch = HookBatch::new(HookKind::Recall, scope.context.to_owned(), scope.info.clone());
  let mut batch_layers = Vec::new();
  for (order, layer) in layers.iter().enumerate() {
    match &layer.imp {
      LayerImpl::Native(native) => {
        let state = env.state_json(&exec, layer.id());
        match native.recall(state.as_ref(), budget_of(layer)).await {
          Ok(Some(NativeRecall { text, token_count })) => match create_message(&text, "developer") {
            Ok(item) => entries.push((order, entry(layer, vec![Arc::new(item)], Some(token_count)))),
            Err(error) => env.diagnose(layer.id(), HookKind::Recall, &error.message),
          },
          Ok(None) => {}
          Err(message) => env.diagnose(layer.id(), HookKind::Recall, &message),
        }
      }
      LayerImpl::Host(_) => {
        let args = HookArgs::Recall { budget: budget_of(layer), query: query.to_owned() };
        if let Some(call) = host_call(layer, HookKind::Recall, WriteRule::IfDefined, args) {
          batch.calls.push(call);
          batch_layers.push((order, *layer));
        }
      }
    }
  }
  let replies = env.run_batch(batch).await;
  for ((order, layer), reply) in batch_layers.into_iter().zip(replies) {
    if let Some(message) = failure(&reply.status) {
      env.diagnose(layer.id(), HookKind::Recall, &message);
      continue;
    }
    env.apply_host_write(&exec, layer.id(), &reply.state);
    match normalise(reply.recall) {
      Ok(Some((items, token_count))) => entries.push((order, entry(layer, items, token_count))),
      Ok(None) => {}
      Err(message) => env.diagnose(layer.id(), HookKind::Recall, &message),
    }
  }
  entries.sort_by_key(|(order, _)| *order);
  entries.into_iter().map(|(_, entry)| entry).collect()
}

fn entry(layer: &Layer, items: Vec<Arc<Item>>, token_count: Option<f64>) -> RecallEntry {
  RecallEntry { layer_id: layer.spec.id.clone(), slot: layer.spec.slot, items, token_count }
}

/// A layer's recalled items and its self-reported token count.
type Recalled = (Vec<Arc<Item>>, Option<f64>);

/// Turns a recall reply into items: the string shorthand becomes one developer message costed by its raw text.
fn normalise(reply: Option<RecallReply>) -> Result<Option<Recalled>, String> {
  match reply {
    None | Some(RecallReply::Nothing) => Ok(None),
    Some(RecallReply::Text(text)) if text.is_empty() => Ok(None),
    Some(RecallReply::Text(text)) => {
      let item = create_message(&text, "developer").map_err(|e| e.message)?;
      Ok(Some((vec![Arc::new(item)], Some(estimate_tokens(&text) as f64))))
    }
    Some(RecallReply::Items { items, token_count }) => {
      let mut parsed = Vec::with_capacity(items.len());
      for text in items {
        let item = Item::from_json_text(&text).map_err(|e| e.to_string())?;
        check_known_type(&item).map_err(|e| e.message)?;
        parsed.push(Arc::new(item));
      }
      Ok(Some((parsed, token_count)))
    }
  }
}
