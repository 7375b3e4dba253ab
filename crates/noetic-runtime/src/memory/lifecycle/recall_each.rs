//! One recall of each of some layers: built-ins in Rust, every JS layer in one host batch, each reply made items and
//! checked. What both the recall phase (`recall`) and the background refreshes of eventual layers (`eventual`) call.

use std::sync::Arc;

use crate::host::{ExecInfo, HookArgs, HookBatch, HookStatus, RecallReply, WriteRule};
use crate::items::{Item, ItemTypes, check_item_type, create_message};
use crate::memory::native::{NativeLayer, NativeRecall, NativeWrite};
use crate::memory::registry::{Layer, LayerImpl};
use crate::memory::trace::{SpanBudget, TraceTarget};
use crate::memory::{HookKind, StateWrite};
use crate::tokens::estimate_tokens;

use super::{MemoryEnv, failure, host_call, status_of, within};

/// One layer's contribution: its items and the token count it reported (trusted as is, §9.1).
#[derive(Debug, Clone)]
pub struct RecallEntry {
  pub layer_id: String,
  pub slot: f64,
  pub items: Vec<Arc<Item>>,
  pub token_count: Option<f64>,
  /// The host keeps these very items under this key (a recall made with `keep_recalled`).
  pub host_key: Option<u32>,
}

/// How one layer's recall ended. A failure has already been reported as a diagnostic.
pub(super) enum Recalled {
  Entry(RecallEntry),
  Nothing,
  Failed,
}

/// The execution a recall reads state from, the context whose log its hooks see, and what they see of it.
pub(super) struct RecallTarget<'a> {
  pub exec: &'a str,
  pub context: &'a str,
  pub info: &'a ExecInfo,
  pub item_types: ItemTypes,
  /// Ask the host to keep the items its hooks return (see [`HookBatch::keep_recalled`]).
  pub keep_recalled: bool,
}

/// Recalls each `(layer, budget)`: built-ins in Rust, then every JS layer in one host batch. One outcome per layer,
/// in the order given, with the state write the host reported (applying it is the caller's decision).
pub(super) async fn recall_each(
  env: &MemoryEnv,
  target: &RecallTarget<'_>,
  layers: &[(&Layer, f64)],
  query: &str,
  write: WriteRule,
) -> Vec<(Recalled, StateWrite)> {
  let mut outcomes: Vec<(Recalled, StateWrite)> =
    layers.iter().map(|_| (Recalled::Failed, StateWrite::Unchanged)).collect();
  let mut batch = HookBatch::new(HookKind::Recall, target.context.to_owned(), target.info.clone());
  batch.keep_recalled = target.keep_recalled;
  let mut batch_index = Vec::new();
  for (index, &(layer, budget)) in layers.iter().enumerate() {
    match &layer.imp {
      LayerImpl::Native(native) => outcomes[index].0 = recall_native(env, target, layer, native, budget).await,
      LayerImpl::Host(_) => {
        let args = HookArgs::Recall { budget, query: query.to_owned() };
        if let Some(call) = host_call(layer, HookKind::Recall, write, args) {
          batch.calls.push(call);
          batch_index.push(index);
        }
      }
    }
  }
  let replies = env.run_batch(batch).await;
  for (index, reply) in batch_index.into_iter().zip(replies) {
    let layer = layers[index].0;
    if let Some(message) = failure(&reply.status) {
      env.diagnose(layer.id(), HookKind::Recall, &message);
      continue;
    }
    let kept = match &reply.recall {
      Some(RecallReply::Items { key, .. }) => *key,
      _ => None,
    };
    let recalled = match normalise(reply.recall, target.item_types) {
      Ok(Some((items, token_count, host_key))) => {
        Recalled::Entry(RecallEntry { host_key, ..entry(layer, items, token_count) })
      }
      Ok(None) => Recalled::Nothing,
      Err(message) => {
        // What the host kept for items that never became an entry is let go at once.
        if let Some(key) = kept {
          env.host.release_recalled(&[key]);
        }
        env.diagnose(layer.id(), HookKind::Recall, &message);
        Recalled::Failed
      }
    };
    outcomes[index] = (recalled, reply.state);
  }
  outcomes
}

/// A built-in recall, under the layer's recall timeout like a JS one, its state change (if any) applied.
async fn recall_native(
  env: &MemoryEnv,
  target: &RecallTarget<'_>,
  layer: &Layer,
  native: &Arc<dyn NativeLayer>,
  budget: f64,
) -> Recalled {
  let state = env.state_json(target.exec, layer.id());
  let started = std::time::Instant::now();
  let (outcome, status) =
    match within(layer.spec.timeout_ms(HookKind::Recall), native.recall(state.as_ref(), budget, target.info)).await {
      Ok(outcome) => {
        let status = status_of(&outcome);
        (outcome, status)
      }
      Err(ms) => (Err(format!("Timeout after {}ms", crate::js_number(ms))), HookStatus::TimedOut(ms)),
    };
  let trace = TraceTarget {
    trace_id: &target.info.trace_id,
    context: target.context,
    thread_id: &target.info.thread_id,
    step_span: target.info.step_span.as_deref(),
  };
  if let Some(mut span) = env.native_span(trace, layer, HookKind::Recall, started, &status) {
    if let Ok(recalled) = &outcome {
      let used = recalled.as_ref().map_or(0.0, |recalled| recalled.token_count);
      span.item_count = Some(usize::from(recalled.is_some()));
      span.budget = Some(SpanBudget::new(budget, used));
    }
    env.sink.trace(vec![span]);
  }
  let made = match outcome {
    Ok(Some(NativeRecall { text, token_count, state })) => {
      if let Some(state) = state {
        super::store::apply_native(env, target.exec, layer.id(), NativeWrite::Set(state));
      }
      create_message(&text, "developer").map(|item| Some((item, token_count))).map_err(|error| error.message)
    }
    Ok(None) => Ok(None),
    Err(message) => Err(message),
  };
  match made {
    Ok(Some((item, token_count))) => Recalled::Entry(entry(layer, vec![Arc::new(item)], Some(token_count))),
    Ok(None) => Recalled::Nothing,
    Err(message) => {
      env.diagnose(layer.id(), HookKind::Recall, &message);
      Recalled::Failed
    }
  }
}

fn entry(layer: &Layer, items: Vec<Arc<Item>>, token_count: Option<f64>) -> RecallEntry {
  RecallEntry { layer_id: layer.spec.id.clone(), slot: layer.spec.slot, items, token_count, host_key: None }
}

/// A layer's recalled items, its self-reported token count, and the key the host keeps the items under.
type RecalledItems = (Vec<Arc<Item>>, Option<f64>, Option<u32>);

/// Turns a recall reply into items: the string shorthand becomes one developer message costed by its raw text.
fn normalise(reply: Option<RecallReply>, types: ItemTypes) -> Result<Option<RecalledItems>, String> {
  match reply {
    None | Some(RecallReply::Nothing) => Ok(None),
    Some(RecallReply::Text(text)) if text.is_empty() => Ok(None),
    Some(RecallReply::Text(text)) => {
      let item = create_message(&text, "developer").map_err(|e| e.message)?;
      Ok(Some((vec![Arc::new(item)], Some(estimate_tokens(&text) as f64), None)))
    }
    Some(RecallReply::Items { items, token_count, checked, key }) => {
      let types = types.unless_checked(checked);
      let mut parsed = Vec::with_capacity(items.len());
      for text in items {
        let item = Item::from_json_text(&text).map_err(|e| e.to_string())?;
        check_item_type(&item, types).map_err(|e| e.message)?;
        parsed.push(Arc::new(item));
      }
      Ok(Some((parsed, token_count, key)))
    }
  }
}
