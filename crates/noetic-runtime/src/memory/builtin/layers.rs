//! The built-in layers as `NativeLayer`s: the lifecycle calls these directly, with no crossing.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::observational_memory::{self as om, Accumulated, ObservationalConfig, ObservationalState};
use super::working_memory::{self as wm, WorkingMemoryConfig};
use crate::items::Item;
use crate::memory::STATE_KEY;
use crate::memory::native::{NativeLayer, NativeRecall, NativeWrite};
use crate::memory::registry::{Layer, LayerImpl, ProvidedFn};
use crate::storage::ScopedStorage;

fn maps(items: &[Arc<Item>]) -> Vec<&Map<String, Value>> {
  items.iter().map(|item| item.json()).collect()
}

async fn saved_state(storage: &ScopedStorage) -> Result<Option<Value>, String> {
  storage.get(STATE_KEY).await.map_err(|error| error.0)
}

pub struct WorkingMemory {
  pub config: WorkingMemoryConfig,
}

/// `workingMemory(config)` as a registered layer.
pub fn working_memory_layer(config: WorkingMemoryConfig) -> Layer {
  let provides = vec![ProvidedFn {
    name: "update".into(),
    description: wm::UPDATE_DESCRIPTION.into(),
    input_schema: json!({ "type": "object", "additionalProperties": {} }),
  }];
  Layer {
    spec: wm::layer_spec(&config),
    imp: LayerImpl::Native(Arc::new(WorkingMemory { config })),
    provides,
    handle: None,
  }
}

#[async_trait]
impl NativeLayer for WorkingMemory {
  async fn init(&self, storage: &ScopedStorage) -> Result<Option<Value>, String> {
    // TODO: a zod `schema` in the config needs a host check; without one, no crossing is needed.
    Ok(Some(wm::init_state(saved_state(storage).await?, None)))
  }

  async fn recall(&self, state: Option<&Value>, _budget: f64) -> Result<Option<NativeRecall>, String> {
    Ok(state.and_then(wm::recall).map(|(text, tokens)| NativeRecall { text, token_count: tokens as f64 }))
  }

  async fn store(&self, state: Option<&Value>, new_items: &[Arc<Item>]) -> Result<NativeWrite, String> {
    let state = state.cloned().unwrap_or(Value::String(String::new()));
    Ok(match wm::store(&state, &maps(new_items), &self.config, None)? {
      Some(next) => NativeWrite::Set(next),
      None => NativeWrite::Unchanged,
    })
  }

  async fn call(&self, name: &str, args: Value, state: Option<&Value>) -> Result<(Option<Value>, NativeWrite), String> {
    if name != "update" {
      return Err(format!("working-memory has no function '{name}'"));
    }
    let Value::Object(update) = args else { return Err("update expects an object of fields".into()) };
    let state = state.cloned().unwrap_or(Value::String(String::new()));
    Ok((None, NativeWrite::Set(wm::apply_update(&state, &update, None)?)))
  }

  fn read(&self, name: &str, state: Option<&Value>) -> Result<Value, String> {
    match name {
      "snapshot" => Ok(state.cloned().unwrap_or(Value::Null)),
      _ => Err(format!("working-memory has no data entry '{name}'")),
    }
  }
}

pub struct ObservationalMemory {
  pub config: ObservationalConfig,
}

/// `observationalMemory(config)` as a registered layer.
pub fn observational_memory_layer(config: ObservationalConfig) -> Layer {
  Layer {
    spec: om::layer_spec(&config),
    imp: LayerImpl::Native(Arc::new(ObservationalMemory { config })),
    provides: Vec::new(),
    handle: None,
  }
}

impl ObservationalMemory {
  fn state(state: Option<&Value>) -> Result<ObservationalState, String> {
    state.map_or_else(
      || Ok(ObservationalState::default()),
      |v| ObservationalState::from_value(v).map_err(|e| e.to_string()),
    )
  }

  fn settle(accumulated: Accumulated) -> NativeWrite {
    match accumulated {
      Accumulated::Kept(state) => NativeWrite::Set(state.to_value()),
      // TODO: a JS `observer` distils through the host; built without one, accumulate never asks.
      Accumulated::Distill { .. } => NativeWrite::Unchanged,
    }
  }
}

#[async_trait]
impl NativeLayer for ObservationalMemory {
  async fn init(&self, storage: &ScopedStorage) -> Result<Option<Value>, String> {
    Ok(Some(om::init_state(saved_state(storage).await?)))
  }

  async fn recall(&self, state: Option<&Value>, budget: f64) -> Result<Option<NativeRecall>, String> {
    let state = Self::state(state)?;
    Ok(om::recall(&state, budget).map(|(text, tokens)| NativeRecall { text, token_count: tokens as f64 }))
  }

  async fn store(&self, state: Option<&Value>, new_items: &[Arc<Item>]) -> Result<NativeWrite, String> {
    Ok(Self::settle(om::store(&Self::state(state)?, &maps(new_items), &self.config)))
  }

  async fn on_item_append(&self, state: Option<&Value>, items: &[Arc<Item>]) -> Result<NativeWrite, String> {
    Ok(
      om::on_item_append(&Self::state(state)?, &maps(items), &self.config).map_or(NativeWrite::Unchanged, Self::settle),
    )
  }
}
