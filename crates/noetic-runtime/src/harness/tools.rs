//! Tools a model can call: user tools (JS) and the `provides` functions of layers, named `layerId/fnName`.

use std::sync::Arc;

use serde_json::Value;

use super::Runner;
use super::context::ExecContext;
use crate::host::{HostError, ToolCall, ToolRef};
use crate::items::Item;
use crate::memory::native::NativeWrite;
use crate::memory::registry::{LayerImpl, LayerSet};
use crate::memory::state::{StateValue, StateWrite};
use crate::steps::{EveryStep, ForkStep, LoopStep, Step};
pub use crate::tools::{ToolDef, ToolImpl, wire_name};

/// The tools of a context's layers, in layer order (D19).
pub fn layer_tools(layers: &LayerSet) -> Vec<ToolDef> {
  let mut tools = Vec::new();
  for layer in layers.layers() {
    for provided in &layer.provides {
      tools.push(ToolDef {
        name: format!("{}/{}", layer.id(), provided.name),
        description: provided.description.clone(),
        input_schema: Arc::clone(&provided.input_schema),
        imp: ToolImpl::LayerFn { layer: Arc::clone(layer), name: provided.name.clone() },
      });
    }
  }
  tools
}

/// Step tools then layer tools, de-duplicated by name with the first kept.
/// Every tool of the LLM steps in a step tree, first occurrence of a name first (upstream's `collectAllTools`).
pub fn collect_tools(step: &Step) -> Vec<ToolDef> {
  match step {
    Step::Llm(llm) => llm.tools.clone().unwrap_or_default(),
    Step::Loop(LoopStep { steps, .. }) => {
      steps.iter().fold(Vec::new(), |tools, step| merge_tools(tools, collect_tools(step)))
    }
    Step::Spawn { child, .. } | Step::Provide { child, .. } | Step::Every(EveryStep { body: child, .. }) => {
      collect_tools(child)
    }
    // Routes and paths are chosen at run time: the steps they may choose (`_optimizable`) stand for them.
    Step::Branch { candidates, .. } | Step::Fork(ForkStep { candidates, .. }) => {
      candidates.iter().fold(Vec::new(), |tools, step| merge_tools(tools, collect_tools(step)))
    }
    Step::Run { .. } | Step::Tool { .. } => Vec::new(),
  }
}

pub fn merge_tools(first: Vec<ToolDef>, second: Vec<ToolDef>) -> Vec<ToolDef> {
  let mut seen = std::collections::HashSet::new();
  first.into_iter().chain(second).filter(|tool| seen.insert(tool.name.clone())).collect()
}

impl Runner {
  pub(crate) fn tool_ref(&self, tool: &ToolDef, ctx: &ExecContext) -> ToolRef {
    match &tool.imp {
      ToolImpl::Host(handle) => ToolRef::Tool { handle: *handle, name: tool.name.clone() },
      ToolImpl::LayerFn { layer, name } => match layer.imp {
        LayerImpl::Host(handle) => ToolRef::LayerFn {
          layer: handle,
          layer_id: layer.id().to_owned(),
          name: name.clone(),
          context: ctx.id.clone(),
        },
        LayerImpl::Native(_) => {
          ToolRef::Native { layer: layer.handle, layer_id: layer.id().to_owned(), name: name.clone() }
        }
      },
    }
  }

  /// Runs one function call: the output the model sees (none for a `void` result), and the decorated result item
  /// when the tool makes one. A tool's failure is an error output; the host failing around it (the result item's
  /// decoration or its `toolResults` schemas, as upstream) fails the step.
  pub(crate) async fn run_tool(
    &self,
    tool: &ToolDef,
    call: &Item,
    ctx: &ExecContext,
  ) -> Result<(Option<String>, Option<String>), HostError> {
    let arguments = call.arguments().unwrap_or("{}");
    if let ToolImpl::LayerFn { layer, name } = &tool.imp
      && let LayerImpl::Native(native) = &layer.imp
    {
      let args: Value = crate::js_text::from_js_json(arguments).unwrap_or(Value::Object(Default::default()));
      let state = match self.env.states.get(&ctx.id, layer.id()) {
        Some(StateValue::Json(value)) => Some(value),
        _ => None,
      };
      let output = match native.call(name, args, state.as_ref()).await {
        Ok((result, write)) => {
          // A provides function cannot clear state (§17.2).
          if let NativeWrite::Set(value) = write {
            self.env.states.set(&ctx.id, layer.id(), StateValue::Json(value), None, &self.env.sink);
          }
          // As the host does for a JS tool: a string result is the output as it is, anything else its JSON.
          result.map(|v| match v {
            Value::String(text) => text,
            other => crate::items::to_js_json(&other),
          })
        }
        Err(message) => Some(format!("Error: {message}")),
      };
      return Ok((output, None));
    }
    let host_call = ToolCall {
      tool: self.tool_ref(tool, ctx),
      arguments: arguments.to_owned(),
      context: ctx.id.clone(),
      call_id: call.call_id().unwrap_or_default().to_owned(),
      name: call.name().unwrap_or_default().to_owned(),
    };
    let reply = self.env.host.call_tool(host_call).await?;
    if let (ToolImpl::LayerFn { layer, .. }, StateWrite::Set { persist }) = (&tool.imp, &reply.state) {
      let persist = persist.clone().map(crate::memory::state::Persist::Write);
      self.env.states.set(&ctx.id, layer.id(), StateValue::Host, persist, &self.env.sink);
    }
    Ok((reply.output, reply.item))
  }
}
