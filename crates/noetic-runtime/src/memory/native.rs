//! Built-in layers implemented in Rust. The lifecycle calls them directly: no crossing, no conversion.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::adapters::{FileOutcome, FileRead};
use crate::error::ConfigError;
use crate::host::protocol::{ExecInfo, RerenderRequest, SteeringDecision};
use crate::items::Item;
use crate::memory::history::{History, Projected};
use crate::storage::ScopedStorage;

/// A function from a built-in layer's config that lives in the host: workingMemory's `schema`,
/// observationalMemory's `observer`. A layer holds one only when the user gave it, so the others never cross.
#[async_trait]
pub trait HostCallback: Send + Sync {
  /// Calls the function with JSON arguments; its JSON answer, or what it threw.
  async fn call(&self, args: Value) -> Result<Value, String>;

  /// [`Self::call`] on behalf of an execution, for functions that take the hook's `ctx` (steering predicates).
  async fn call_in(&self, args: Value, _exec: &ExecInfo) -> Result<Value, String> {
    self.call(args).await
  }
}

/// One model round a built-in layer asks of the harness's model, beside the conversation: steering's verdicts,
/// fileReference's relevance scores. The harness implements it; memory does not know the harness.
#[async_trait]
pub trait AsideModel: Send + Sync {
  /// `prompt` as the only (user) message to `model`, with system `instructions` if any (fileReference's scorer
  /// brief), no tools, no history: the reply's assistant text. `context` names the execution asking (a JS test
  /// model is handed its `ctx`).
  async fn ask(&self, context: &str, model: &str, instructions: Option<&str>, prompt: &str) -> Result<String, String>;
}

/// The harness's filesystem (upstream's `ctx.fs`) as built-in layers read it: every file of one request in one go,
/// one outcome per read, in order. `Err` when the filesystem could not be asked at all.
#[async_trait]
pub trait LayerFiles: Send + Sync {
  async fn read(&self, reads: &[FileRead]) -> Result<Vec<FileOutcome>, String>;
}

/// What a built-in hook may reach beyond its state: the execution, the harness's model when it has one
/// (upstream's `ctx.callModel`, present exactly when the harness has a model), and its filesystem (`ctx.fs`).
#[derive(Clone, Copy)]
pub struct HookCtx<'a> {
  pub exec: &'a ExecInfo,
  pub model: Option<&'a Arc<dyn AsideModel>>,
  /// `None` where the harness was given none (a runtime without a host filesystem).
  pub files: Option<&'a Arc<dyn LayerFiles>>,
}

/// A built-in layer's steering vote and the state change it records.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeVote {
  /// `None` casts no vote.
  pub decision: Option<SteeringDecision>,
  pub write: NativeWrite,
}

impl From<Option<SteeringDecision>> for NativeVote {
  fn from(decision: Option<SteeringDecision>) -> Self {
    Self { decision, write: NativeWrite::Unchanged }
  }
}

/// Why a built-in steering hook gave no vote: a failure casts none (fail-open), a config error ends the call.
#[derive(Debug, Clone, PartialEq)]
pub enum VoteError {
  Failed(String),
  Config(ConfigError),
}

impl From<String> for VoteError {
  fn from(message: String) -> Self {
    Self::Failed(message)
  }
}

/// A state change a built-in hook asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum NativeWrite {
  Unchanged,
  Set(Value),
  Clear,
}

/// What a built-in onItemAppend gives back: its state change, the items it passes on when it rewrote them, and
/// the re-render it asks for (§13.2).
#[derive(Debug, Clone, PartialEq)]
pub struct NativeAppend {
  pub write: NativeWrite,
  pub items: Option<Vec<Arc<Item>>>,
  pub rerender: Option<RerenderRequest>,
}

impl From<NativeWrite> for NativeAppend {
  fn from(write: NativeWrite) -> Self {
    Self { write, items: None, rerender: None }
  }
}

/// A built-in recall: one developer message and its token count.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeRecall {
  pub text: String,
  pub token_count: f64,
  /// The state the recall leaves, when it changes it (steering drains its pending feedback).
  pub state: Option<Value>,
}

impl From<(String, u64)> for NativeRecall {
  /// A text and its token estimate, as the built-ins' pure recalls give them.
  fn from((text, tokens): (String, u64)) -> Self {
    Self { text, token_count: tokens as f64, state: None }
  }
}

/// A built-in layer's hooks. Each has a default that does nothing; the layer's `HookSet` says which are real.
#[async_trait]
pub trait NativeLayer: Send + Sync {
  /// The initial state, usually rehydrated from `storage` key `state`; `None` means `undefined`.
  async fn init(&self, _storage: &ScopedStorage) -> Result<Option<Value>, String> {
    Ok(None)
  }

  /// `exec`: the execution recalling, for a layer that holds something per execution (steering's late verdicts).
  async fn recall(
    &self,
    _state: Option<&Value>,
    _budget: f64,
    _exec: &ExecInfo,
  ) -> Result<Option<NativeRecall>, String> {
    Ok(None)
  }

  /// `exec`: the execution storing (its depth, ids and usage so far).
  async fn store(
    &self,
    _state: Option<&Value>,
    _new_items: &[Arc<Item>],
    _exec: &ExecInfo,
  ) -> Result<NativeWrite, String> {
    Ok(NativeWrite::Unchanged)
  }

  /// Input items about to enter the log (D7), for a layer that only observes them.
  async fn on_item_append(&self, _state: Option<&Value>, _items: &[Arc<Item>]) -> Result<NativeWrite, String> {
    Ok(NativeWrite::Unchanged)
  }

  /// onItemAppend as the lifecycle calls it: a layer may also rewrite the items (what it passes on goes to the
  /// next layer) and ask for a re-render. By default it observes them through [`Self::on_item_append`].
  async fn on_item_append_with(
    &self,
    state: Option<&Value>,
    items: &[Arc<Item>],
    _ctx: HookCtx<'_>,
  ) -> Result<NativeAppend, String> {
    self.on_item_append(state, items).await.map(NativeAppend::from)
  }

  /// The child's state when a spawn's child inherits the layer, from the parent's: `Set` it, `Clear` (the layer
  /// runs in the child with no state), or `Unchanged` (nothing is set, so a layer with init is inert there).
  async fn on_spawn(&self, _parent_state: Option<&Value>) -> Result<NativeWrite, String> {
    Ok(NativeWrite::Unchanged)
  }

  /// onReturn (§15.3): the parent's new state from the child's, when the child ran with a state.
  async fn on_return(&self, _parent_state: Option<&Value>, _child_state: &Value) -> Result<NativeWrite, String> {
    Ok(NativeWrite::Unchanged)
  }

  /// The execution `exec` has ended and its states are gone: what the layer keeps for it beside its state (an
  /// async verdict still on its way) goes too. Not a hook: nothing is called in JS, and it cannot fail.
  fn execution_ended(&self, _exec: &str) {}

  /// onComplete (D15) with the execution's outcome (`success`, `failure` or `aborted`).
  async fn on_complete(&self, _state: Option<&Value>, _outcome: &str) -> Result<NativeWrite, String> {
    Ok(NativeWrite::Unchanged)
  }

  /// projectHistory (§11.1): the history the model sees, from what the stage is given; `None` passes it unchanged.
  /// Synchronous: it reads the log under the context's lock.
  fn project_history(&self, _history: &History<'_>) -> Option<Vec<Projected>> {
    None
  }

  /// beforeToolCall (§14.3): the layer's vote on a tool call about to run. `tool_name` is the name the model
  /// called, which may be the provider-safe form (`plan_updatePrd`).
  async fn before_tool_call(
    &self,
    _state: Option<&Value>,
    _tool_name: &str,
    _tool_args: &Value,
    _ctx: HookCtx<'_>,
  ) -> Result<NativeVote, VoteError> {
    Ok(NativeVote::from(None))
  }

  /// afterModelCall (§14.4): the layer's vote on a model response (its items and `{inputTokens, outputTokens}`).
  async fn after_model_call(
    &self,
    _state: Option<&Value>,
    _response: &[Arc<Item>],
    _usage: &Value,
    _ctx: HookCtx<'_>,
  ) -> Result<NativeVote, VoteError> {
    Ok(NativeVote::from(None))
  }

  /// A `provides` function: the result (JSON, `None` for `void`) and the new state, if any.
  async fn call(
    &self,
    name: &str,
    _args: Value,
    _state: Option<&Value>,
  ) -> Result<(Option<Value>, NativeWrite), String> {
    Err(format!("unknown function '{name}'"))
  }

  /// A `provides` data entry read from the state.
  fn read(&self, name: &str, _state: Option<&Value>) -> Result<Value, String> {
    Err(format!("unknown data entry '{name}'"))
  }
}
