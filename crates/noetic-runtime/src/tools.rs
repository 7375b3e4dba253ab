//! What a model can call, as every layer of the runtime describes it: a user tool (JS) or a layer's `provides`
//! function, with the name, description and input schema models see. Running them is the harness's part.

use std::sync::Arc;

use serde_json::Value;

use crate::host::protocol::HostRef;
use crate::memory::registry::Layer;

#[derive(Debug, Clone)]
pub enum ToolImpl {
  Host(HostRef),
  LayerFn { layer: Arc<Layer>, name: String },
}

#[derive(Debug, Clone)]
pub struct ToolDef {
  pub name: String,
  pub description: String,
  pub input_schema: Value,
  pub imp: ToolImpl,
}

impl ToolDef {
  /// The name providers receive (see [`wire_name`]).
  pub fn wire_name(&self) -> String {
    wire_name(&self.name)
  }

  /// The descriptor models see, also what `toolsTokens` counts.
  pub fn descriptor(&self) -> Value {
    serde_json::json!({ "name": self.name, "description": self.description, "parameters": self.input_schema })
  }
}

/// A tool name as providers accept it: every character outside `[A-Za-z0-9_-]` becomes `_` (`notes/add` is sent
/// as `notes_add`). The model answers with that name; the tool loop matches either form.
pub fn wire_name(name: &str) -> String {
  name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}
