//! One hook phase over layers the caller names, in a live context, outside any step: the layer lifecycle as
//! `ctx.harness` exposes it (upstream's `initLayers`, `recallLayers`, … `executeRerender`). The phases are the
//! very ones steps run; only the layer set and the items are the caller's.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::{ExecContext, RunResult, Runner, layer_budgets};
use crate::host::{RerenderRequest, SteeringDecision};
use crate::items::{Item, ItemLog};
use crate::memory::lifecycle::{self, Appended, Projected, RecallEntry};
use crate::memory::registry::LayerSet;
use crate::memory::{DEFAULT_PROJECTION, RecallMode};

/// Which of the layers a recall asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecallSelect {
  /// Every layer, each recalled now.
  All,
  /// Those that must be recalled before a model call: not `eventual` (all of them under `forceAtomicRecall`).
  Atomic,
  /// The `eventual` ones, served from the harness's cache and refreshed behind it (D6); none under
  /// `forceAtomicRecall`, where [`RecallSelect::Atomic`] takes them.
  Eventual,
}

pub enum LayerCall {
  Init,
  /// `budgets`: the caller's; `None` allocates the harness's projection policy with no system prompt.
  Recall {
    query: String,
    budgets: Option<HashMap<String, f64>>,
    select: RecallSelect,
  },
  Store {
    response: Vec<Arc<Item>>,
    usage: Value,
  },
  Dispose,
  BeforeToolCall {
    tool_name: String,
    tool_args: String,
  },
  AfterModelCall {
    response: Vec<Arc<Item>>,
    usage: Value,
  },
  Append {
    items: Vec<Arc<Item>>,
  },
  Project {
    items: Vec<Arc<Item>>,
  },
  Rerender {
    requests: Vec<(String, f64, RerenderRequest)>,
    budgets: HashMap<String, f64>,
    query: String,
  },
}

pub enum LayerCallResult {
  Done,
  Recalled(Vec<RecallEntry>),
  Steering(SteeringDecision),
  Appended(Appended),
  Projected(Vec<Arc<Item>>),
}

impl Runner {
  /// Runs `call` for `layers` in `ctx`: their state is the context's execution's, as a step's hooks see it.
  pub async fn call_layers(
    &self,
    ctx: &Arc<ExecContext>,
    layers: Arc<LayerSet>,
    call: LayerCall,
  ) -> RunResult<LayerCallResult> {
    // Layers that run again may leave states that dropping the context must clear.
    ctx.state().execution_ended = false;
    let scope = || {
      let mut scope = self.scope(ctx);
      scope.layers = Arc::clone(&layers);
      scope
    };
    Ok(match call {
      LayerCall::Init => {
        lifecycle::init_layers(&self.env, &scope()).await?;
        LayerCallResult::Done
      }
      LayerCall::Recall { query, budgets, select } => {
        let budgets = match budgets {
          Some(budgets) => budgets,
          None => layer_budgets(&layers, self.projection.as_ref().unwrap_or(&DEFAULT_PROJECTION), 0.0)?,
        };
        LayerCallResult::Recalled(self.recall_selected(ctx, &layers, select, &query, &budgets).await)
      }
      LayerCall::Store { response, usage } => {
        lifecycle::store_layers(&self.env, &scope(), &response, None, usage, false).await;
        LayerCallResult::Done
      }
      LayerCall::Dispose => {
        lifecycle::dispose_layers(&self.env, &scope()).await;
        LayerCallResult::Done
      }
      LayerCall::BeforeToolCall { tool_name, tool_args } => {
        LayerCallResult::Steering(lifecycle::before_tool_call(&self.env, &scope(), &tool_name, &tool_args).await?)
      }
      LayerCall::AfterModelCall { response, usage } => {
        LayerCallResult::Steering(lifecycle::after_model_call(&self.env, &scope(), &response, || usage).await?)
      }
      LayerCall::Append { items } => {
        LayerCallResult::Appended(lifecycle::append_with_requests(&self.env, &scope(), items).await?)
      }
      LayerCall::Project { items } => {
        let read_log = |read: &mut dyn FnMut(&ItemLog)| read(&ctx.state().log);
        let projected = lifecycle::project_history(&self.env, &scope(), Some(&items), &read_log).await?;
        LayerCallResult::Projected(match projected {
          None => items,
          Some(entries) => {
            let state = ctx.state();
            entries
              .into_iter()
              .filter_map(|entry| match entry {
                Projected::Made(item) => Some(item),
                Projected::Log(pos) => state.log.get(pos).cloned(),
              })
              .collect()
          }
        })
      }
      LayerCall::Rerender { requests, budgets, query } => {
        let mut recalled = Vec::new();
        lifecycle::rerender_layers(&self.env, &scope(), &requests, &budgets, &query, &mut recalled).await;
        LayerCallResult::Recalled(recalled)
      }
    })
  }

  async fn recall_selected(
    &self,
    ctx: &Arc<ExecContext>,
    layers: &LayerSet,
    select: RecallSelect,
    query: &str,
    budgets: &HashMap<String, f64>,
  ) -> Vec<RecallEntry> {
    let eventual = |layer: &&Arc<crate::memory::registry::Layer>| layer.spec.recall_mode == RecallMode::Eventual;
    let chosen: Vec<_> = match (select, self.recall_cache_in_use()) {
      (RecallSelect::All, _) | (RecallSelect::Atomic, None) => layers.layers().to_vec(),
      (RecallSelect::Atomic, Some(_)) => layers.layers().iter().filter(|l| !eventual(l)).cloned().collect(),
      (RecallSelect::Eventual, None) => return Vec::new(),
      (RecallSelect::Eventual, Some(_)) => layers.layers().iter().filter(eventual).cloned().collect(),
    };
    let mut scope = self.scope(ctx);
    scope.layers = Arc::new(LayerSet::from_layers(chosen));
    let cache = self.recall_cache_in_use().filter(|_| select == RecallSelect::Eventual);
    let recalled = lifecycle::recall_layers(&self.env, &scope, budgets, query, cache.map(|c| &**c), false).await;
    if let Some(cache) = cache {
      lifecycle::refresh_eventual(&self.env, cache, &scope, budgets);
    }
    recalled
  }
}
