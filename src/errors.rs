//! The runtime's messages of `NoeticError`s, for JS to fill from payloads user code builds (`js/errors.cjs`).

use napi_derive::napi;

/// Upstream's message templates by kind (`noetic_runtime::error::messages`), as JSON text; read once, at load.
#[napi(skip_typescript)]
pub fn noetic_error_messages() -> String {
  noetic_runtime::error::messages::templates_json().to_string()
}
