//! The harness: a [`Runner`] (what steps run with: the memory environment, the model, the projection, the live
//! contexts) and, beside it, the sessions of its threads. `run.rs` is one execution from init to dispose.

mod anchoring;
pub mod api_checks;
mod aside;
pub mod channels;
pub mod checkpoint;
mod context;
mod error;
pub mod exec_io;
mod fork;
pub mod inspect;
mod interpreter;
mod layer_calls;
mod llm;
mod model;
mod model_events;
pub mod options;
mod round_model;
mod run;
mod scripted;
pub mod session;
mod spans;
mod spawn;
mod summary;
mod tool_loop;
mod tools;
mod usage;

use crate::memory::cache_anchor::CacheConfig;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::items::{Item, ItemTypes};
use crate::memory::ProjectionPolicy;
use crate::memory::lifecycle::MemoryEnv;
use crate::memory::native::LayerFiles;
use crate::memory::registry::LayerSet;
use crate::steps::{ModelParams, Step};
use crate::tokens::Tokenizer;

pub use self::channels::ChannelStore;
pub use self::context::{ContextChannels, ContextState, ExecContext, FrontierFrame, StepMeta, Usage};
pub use self::error::{RunError, RunResult};
pub use self::interpreter::{StepSource, execute};
pub use self::layer_calls::{LayerCall, LayerCallResult, RecallSelect};
pub use self::model::Model;
pub use self::run::Runner;
pub(crate) use self::run::layer_budgets;
pub use self::scripted::{ScriptedModel, ScriptedToolCall, ScriptedTurn};
pub use self::tools::{ToolDef, ToolImpl, collect_tools, layer_tools, merge_tools, wire_name};

pub struct HarnessConfig {
  pub name: String,
  pub layers: Arc<LayerSet>,
  pub projection: Option<ProjectionPolicy>,
  pub model: Model,
  /// Every layer recalls atomically, in the hot path, whatever its `recallMode` (D6).
  pub force_atomic_recall: bool,
  /// The step a session's turns run (`initialStep`).
  pub initial_step: Option<Arc<Step>>,
  /// Tools offered in every session, besides those of the step tree (`tools`).
  pub tools: Vec<ToolDef>,
}

/// A harness: a [`Runner`] (what steps run with) and the sessions of its threads. It derefs to its runner, so
/// what runs a step is reached the same way from either; nothing under the runner sees a session.
pub struct Harness {
  runner: Runner,
  pub initial_step: Option<Arc<Step>>,
  sessions: Mutex<HashMap<String, Arc<session::Session>>>,
  /// Where sessions' histories are kept (`persistSessions`); `None` keeps them in memory only, as upstream.
  session_store: Option<session::SessionStore>,
  /// How long a persisted session stays in memory after its last turn (`sessionIdleMs`); `None`: for good.
  session_idle: Option<std::time::Duration>,
  /// How a message joins its session when its `execute` call names no mode (`defaultDeliveryMode`).
  pub default_delivery: session::DeliveryMode,
}

impl std::ops::Deref for Harness {
  type Target = Runner;

  fn deref(&self) -> &Runner {
    &self.runner
  }
}

/// What `harness.callModel` asks of the harness's model.
#[derive(Clone, Default)]
pub struct ModelRequest {
  pub model: String,
  pub instructions: Option<String>,
  pub items: Vec<Arc<Item>>,
  pub params: ModelParams,
  /// Tools the model may call, run in `context` round after round, as a step's are (upstream's `callModel` with
  /// `tools` and `ctx`).
  pub tools: Vec<ToolDef>,
  pub context: Option<Arc<ExecContext>>,
  /// The JSON Schema the answer must follow (`outputSchema`).
  pub output_schema: Option<serde_json::Value>,
}

/// Options of one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
  pub thread_id: Option<String>,
  pub resource_id: Option<String>,
  /// Overrides the harness's layers for this run.
  pub layers: Option<Arc<LayerSet>>,
}

impl Harness {
  pub fn new(config: HarnessConfig, env: MemoryEnv) -> Self {
    Self {
      initial_step: config.initial_step.clone(),
      runner: Runner::new(config, env),
      sessions: Mutex::default(),
      session_store: None,
      session_idle: None,
      default_delivery: session::DeliveryMode::default(),
    }
  }

  /// How a message joins its session when it names no mode.
  pub fn with_default_delivery(mut self, mode: session::DeliveryMode) -> Self {
    self.default_delivery = mode;
    self
  }

  /// Keeps every session's history in the memory environment's storage, each turn appending its new items, and
  /// drops a session from memory once it has been idle for `idle` (see `session::store`).
  pub fn with_persisted_sessions(mut self, idle: Option<std::time::Duration>) -> Self {
    self.session_store = Some(session::SessionStore::new(Arc::clone(&self.env.storage)));
    self.session_idle = idle;
    self
  }

  pub fn with_item_types(mut self, item_types: ItemTypes) -> Self {
    self.runner.item_types = item_types;
    self
  }

  pub fn with_step_source(mut self, source: Arc<dyn StepSource>) -> Self {
    self.runner.step_source = Some(source);
    self
  }

  pub fn with_files(mut self, files: Arc<dyn LayerFiles>) -> Self {
    self.runner.files = Some(files);
    self
  }

  pub fn with_tokenizer(mut self, tokenizer: Option<Tokenizer>) -> Self {
    self.runner.tokenizer = tokenizer;
    self
  }

  /// Prompt-cache anchoring (`contextCache`), `None` to assemble requests as 1.0.0 does.
  pub fn with_context_cache(mut self, config: Option<CacheConfig>) -> Self {
    self.runner.cache = config.map(|config| run::PromptCache { config, store: Mutex::default() });
    self
  }

  /// The harness's own subprocess adapter, for the `step.run`s that have none of their own.
  pub fn with_subprocess(mut self, adapter: Option<crate::steps::StepAdapter>) -> Self {
    self.runner.subprocess = adapter;
    self
  }

  /// The channel store its contexts share (the host holds it too, for user code's sends and receives).
  pub fn with_channels(mut self, channels: Arc<ChannelStore>) -> Self {
    self.runner.channels = channels;
    self
  }
}
