//! The seam between the runtime and user code. The runtime decides what runs, in which order, with which budget
//! and timeout, and what a result means; the host runs the user's functions (JS hooks, step functions, tools, a test
//! model) and reports back. Calls are batched: one `run_hooks` per hook phase covers every JS layer in it.

pub mod model_reply;
pub mod protocol;

use std::sync::Arc;

use async_trait::async_trait;

use crate::items::Item;
use crate::tools::ToolDef;

pub use self::protocol::*;

/// The fixed fields of an execution context, as the host shows them to user code (`ctx.threadId`, its layers).
pub struct ContextFacts<'a> {
  pub id: &'a str,
  pub thread_id: &'a str,
  pub resource_id: Option<&'a str>,
  pub depth: u32,
  pub parent: Option<&'a str>,
  pub root: &'a str,
  pub layers: &'a crate::memory::registry::LayerSet,
}

/// The values the getters asked for returned; `None` where one returned nothing.
#[derive(Debug, Clone, Default)]
pub struct LazyValues {
  pub model: Option<String>,
  pub instructions: Option<String>,
  pub tools: Option<Vec<ToolDef>>,
}

/// Everything the runtime asks of user code.
#[async_trait]
pub trait Host: Send + Sync {
  /// Runs one phase's JS hooks, in the order given, and reports each outcome in the same order.
  async fn run_hooks(&self, batch: HookBatch) -> Vec<HookReply>;
  /// Runs a `step.run` function.
  async fn run_step(&self, call: StepCall) -> Result<StepValue, HostError>;
  /// Calls the user's test model (`_testCallModel`).
  async fn call_model(&self, call: ModelCall) -> Result<ModelReply, HostError>;
  /// Runs a JS tool or a JS layer's function.
  async fn call_tool(&self, call: ToolCall) -> Result<ToolReply, HostError>;
  /// Evaluates a JS `until` predicate.
  async fn eval_until(&self, call: UntilCall) -> Result<Verdict, HostError>;
  /// A context is finished: the host may drop what it keeps for it.
  fn release_context(&self, context: &str);
  /// A session turn starts in `context` with the user's `state` value (`ExecuteOptions.state`, `ctx.state`).
  fn set_context_state(&self, _context: &str, _state: HostRef) {}
  /// The items the host's model just answered with (`call_model`) are in `context`'s log from position `from`, as
  /// the host gave them: it may use its own objects for them, and they are not sent back to it.
  fn model_items_placed(&self, _context: &str, _from: usize) {}
  /// The recalled items kept under `keys` (see [`HookBatch::keep_recalled`]) are no longer named by any request.
  fn release_recalled(&self, _keys: &[u32]) {}
  /// A session turn of `thread` put its messages' items into `context`'s log from position `from`, unchanged
  /// (`adopted`), so the host may use the objects it already holds for them; or changed by onItemAppend, so it may
  /// not.
  /// The note carries the context's fixed fields (ids, depth, layers), which the host would otherwise ask for.
  fn turn_input(&self, _context: &ContextFacts<'_>, _from: usize, _messages: &[&str], _adopted: bool) {}
  /// A session's history moved, log and all, from the context of its last turn to that of the next: the host may
  /// move what it keeps of that log along, before `from` is released.
  fn history_moved(&self, _from: &str, _to: &str) {}
  /// A session turn in `context` failed: its log is cut back to the `len` items it had when the turn began (the
  /// history the turn took), and the host cuts what it keeps of that log to match.
  fn history_cut(&self, _context: &str, _len: usize) {}
  /// A session turn in `context` ended with `value`, which the host holds: the host keeps it with the context, as
  /// what `getAgentResponse` answers for the turn (upstream passes the turn's value through, whatever it is).
  fn turn_value(&self, _context: &str, _value: HostRef) {}
  /// The execution `exec` has ended: the host drops the states its layers had in it.
  fn execution_ended(&self, _exec: &str) {}
  /// A session turn in `context` has ended with `items` in its log from position `from` that the host does not
  /// hold (made natively): it keeps them, so that the turn's response still has them after the next turn has moved
  /// the log on.
  fn history_settled(&self, _context: &str, _from: usize, _items: &[Arc<Item>]) {}
  /// Appends the items the host holds of `context`'s log and has not sent yet (DECISIONS L1) to that log, before
  /// a step reads it. Only a host that holds items is ever asked.
  async fn send_held_items(&self, _context: &str) -> Result<(), HostError> {
    Ok(())
  }
  /// Runs a `step.tool` step: validates its arguments with the tool's input schema and calls the tool.
  async fn run_tool_step(&self, call: ToolStepCall) -> Result<StepValue, HostError> {
    Err(HostError::Thrown { message: format!("step.tool '{}' cannot run on this host", call.step_id), error: None })
  }
  /// Parses an LLM step's reply with its `output` schema: the parsed value, or `llm_parse_error`.
  async fn parse_output(&self, call: OutputCall) -> Result<StepValue, HostError> {
    Err(HostError::Thrown {
      message: format!("step '{}' has an output schema this host cannot run", call.step_id),
      error: None,
    })
  }
  /// The message a value taken from a loop's inbox makes (its text), or none (a null). The host lets the value go.
  async fn recv_inbox(&self, _call: InboxCall) -> Result<Option<String>, HostError> {
    Ok(None)
  }
  /// `context` was aborted: what the host parked for it (a channel receive or send) ends as cancelled. Its fixed
  /// facts come along: code of its may run on after it ends (a race's loser), when they can no longer be asked for.
  fn context_aborted(&self, _context: &ContextFacts<'_>, _reason: &str) {}
  /// An iteration of the `every` step `step_id` failed with `error` and the schedule goes on (`onError:
  /// 'continue'`): the host records it on the context's span, as upstream's `every.iteration.error` event.
  fn every_iteration_failed(&self, _context: &str, _step_id: &str, _error: &HostError) {}
  /// Calls a step-language callback (a loop's `prepareNext` or `onError`) and gives its result.
  async fn call_fn(&self, _call: FnCall) -> Result<StepValue, HostError> {
    Err(HostError::Thrown { message: "this host cannot call step callbacks".into(), error: None })
  }
  /// Calls a fork's `merge`.
  async fn merge(&self, _call: MergeCall) -> Result<StepValue, HostError> {
    Err(HostError::Thrown { message: "a fork's merge cannot run on this host".into(), error: None })
  }
  /// The winner of a race: its context's state becomes its parent's.
  fn adopt_state(&self, _from_context: &str, _into_context: &str) {}
  /// Resolves an LLM step's getter fields. Only a host whose steps have getters is ever asked.
  async fn resolve_lazy(&self, call: LazyCall) -> Result<LazyValues, HostError> {
    Err(HostError::Thrown {
      message: format!("step '{}' has getter fields this host cannot run", call.step),
      error: None,
    })
  }
}
