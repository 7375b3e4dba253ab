//! `ctx.harness`'s layer lifecycle methods: one hook phase over the layers JS names, run as a run is (its outcome
//! arrives as `settled`), in a live context.

use std::collections::HashMap;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use noetic_runtime::harness::{LayerCall, LayerCallResult, RecallSelect};
use noetic_runtime::host::{RerenderRequest, StepValue};
use noetic_runtime::items::{Item, ItemTypes};
use noetic_runtime::memory::lifecycle::RecallEntry;
use noetic_runtime::tokens::estimate_tokens;
use serde_json::{Value, json};

use super::{NativeHarness, failed, missing_context, parse, parse_item_batch, text_field};
use crate::describe;

#[napi]
impl NativeHarness {
  /// Starts run `run`: the phase `call` describes (`{phase, query?, budgets?, select?, usage?, toolName?,
  /// toolArgs?, requests?}` JSON) for `layers` (layer descriptions) in `context`. `items`: the items or the
  /// response it is about, as one JSON array. The outcome arrives as for `run`; its value is the phase's result.
  #[napi(catch_unwind)]
  pub fn call_layers(
    &self,
    run: u32,
    context: String,
    call: String,
    layers: String,
    items: String,
  ) -> Result<Option<String>> {
    let ctx = self.inner.context(&context).ok_or_else(|| missing_context(&context))?;
    let layers = match describe::layer_set(&parse(&layers)?, Some(&self.dispatch)) {
      Ok(layers) => std::sync::Arc::new(layers),
      Err(error) => return Ok(Some(failed(&error))),
    };
    let call = parse(&call)?;
    let phase = text_field(&call, "phase").unwrap_or_default();
    let what = format!("ctx.harness.{phase}");
    // As upstream, the items are the caller's to vouch for: any item type passes.
    let items = || parse_item_batch(&items, ItemTypes::Any, &what);
    let usage = || call.get("usage").cloned().unwrap_or_else(|| json!({}));
    let layer_call = match phase.as_str() {
      "initLayers" => LayerCall::Init,
      "recallLayers" | "recallLayersAtomic" | "recallLayersEventual" => LayerCall::Recall {
        query: text_field(&call, "query").unwrap_or_default(),
        budgets: call.get("budgets").map(budgets_of),
        select: match phase.as_str() {
          "recallLayersAtomic" => RecallSelect::Atomic,
          "recallLayersEventual" => RecallSelect::Eventual,
          _ => RecallSelect::All,
        },
      },
      "storeLayers" => LayerCall::Store { response: items()?, usage: usage() },
      "disposeLayers" => LayerCall::Dispose,
      "beforeToolCall" => LayerCall::BeforeToolCall {
        tool_name: text_field(&call, "toolName").unwrap_or_default(),
        tool_args: text_field(&call, "toolArgs").unwrap_or_else(|| "{}".to_owned()),
      },
      "afterModelCall" => LayerCall::AfterModelCall { response: items()?, usage: usage() },
      "runAppendPipeline" => LayerCall::Append { items: items()? },
      "projectHistory" => LayerCall::Project { items: items()? },
      "executeRerender" => LayerCall::Rerender {
        requests: requests_of(call.get("requests")),
        budgets: call.get("budgets").map(budgets_of).unwrap_or_default(),
        query: text_field(&call, "query").unwrap_or_default(),
      },
      _ => return Err(Error::new(Status::InvalidArg, format!("unknown layer phase '{phase}'"))),
    };
    let harness = std::sync::Arc::clone(&self.inner);
    self.start_run(run, async move {
      let result = harness.call_layers(&ctx, layers, layer_call).await?;
      Ok(result_value(result))
    });
    Ok(None)
  }
}

/// `{layerId: tokens}`; JS sends a Map as an object.
fn budgets_of(value: &Value) -> HashMap<String, f64> {
  let entries = value.as_object().into_iter().flatten();
  entries.filter_map(|(id, n)| crate::protocol::number(n).map(|n| (id.clone(), n))).collect()
}

/// `[{layerId, slot, scope, timing}]`: requests naming no known scope select nothing, as upstream's.
fn requests_of(value: Option<&Value>) -> Vec<(String, f64, RerenderRequest)> {
  let requests = value.and_then(Value::as_array).into_iter().flatten();
  requests
    .filter_map(|request| {
      let layer = request.get("layerId")?.as_str()?.to_owned();
      let slot = request.get("slot").and_then(crate::protocol::number).unwrap_or(0.0);
      let request = serde_json::from_value::<RerenderRequest>(request.clone()).ok()?;
      Some((layer, slot, request))
    })
    .collect()
}

fn items_json(items: &[std::sync::Arc<Item>]) -> Value {
  Value::Array(items.iter().map(|item| Value::Object(item.json().clone())).collect())
}

fn recall_json(entry: &RecallEntry) -> Value {
  let estimate = || entry.items.iter().map(|item| estimate_tokens(&item.to_json_text()) as f64).sum::<f64>();
  json!({
    "layerId": entry.layer_id,
    "items": items_json(&entry.items),
    "tokenCount": entry.token_count.unwrap_or_else(estimate),
  })
}

fn result_value(result: LayerCallResult) -> StepValue {
  match result {
    LayerCallResult::Done => StepValue::Undefined,
    LayerCallResult::Recalled(entries) => StepValue::Json(Value::Array(entries.iter().map(recall_json).collect())),
    LayerCallResult::Steering(decision) => StepValue::Json(serde_json::to_value(decision).unwrap_or(Value::Null)),
    LayerCallResult::Appended(appended) => {
      let requests = appended.rerender.iter().map(|(layer, slot, request)| {
        json!({ "layerId": layer, "slot": slot, "timing": request.timing, "scope": request.scope })
      });
      StepValue::Json(json!({ "items": items_json(&appended.items), "rerenderRequests": requests.collect::<Vec<_>>() }))
    }
    LayerCallResult::Projected(items) => StepValue::Json(items_json(&items)),
  }
}
