//! What a model can call, as every layer of the runtime describes it: a user tool (JS) or a layer's `provides`
//! function, with the name, description and input schema models see. Running them is the harness's part.

use std::sync::Arc;

use serde_json::Value;

use crate::host::protocol::HostRef;
use crate::items::{write_js_json, write_js_string};
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
  /// Shared: each LLM step lists its layers' tools afresh, and a schema is never changed once described.
  pub input_schema: Arc<Value>,
  pub imp: ToolImpl,
}

impl ToolDef {
  /// The name providers receive (see [`wire_name`]).
  pub fn wire_name(&self) -> String {
    wire_name(&self.name)
  }

  /// Appends the JS JSON of the descriptor models see, `{name, description, parameters}`: what `toolsTokens`
  /// counts. Written directly, as building it as a value would copy the schema on every step.
  pub fn write_descriptor(&self, out: &mut String) {
    out.push_str("{\"name\":");
    write_js_string(out, &self.name);
    out.push_str(",\"description\":");
    write_js_string(out, &self.description);
    out.push_str(",\"parameters\":");
    write_js_json(out, &self.input_schema);
    out.push('}');
  }
}

/// A tool name as providers accept it: every character outside `[A-Za-z0-9_-]` becomes `_` (`notes/add` is sent
/// as `notes_add`). The model answers with that name; the tool loop matches either form.
pub fn wire_name(name: &str) -> String {
  name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;
  use crate::items::to_js_json;

  #[test]
  fn a_descriptor_is_written_as_js_stringifies_it() {
    let tool = ToolDef {
      name: "notes/add \"quoted\"".into(),
      description: "adds\na note é".into(),
      input_schema: Arc::new(json!({ "type": "object", "properties": { "2": { "type": "string" }, "a": {} } })),
      imp: ToolImpl::Host(1),
    };
    let mut written = String::new();
    tool.write_descriptor(&mut written);
    let as_value = json!({ "name": tool.name, "description": tool.description, "parameters": *tool.input_schema });
    assert_eq!(written, to_js_json(&as_value));
    // Array-index keys first, as JS orders them.
    assert!(written.contains(r#"{"2":{"type":"string"},"a":{}}"#));
  }
}
