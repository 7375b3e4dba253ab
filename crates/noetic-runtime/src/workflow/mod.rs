//! JSON workflows (upstream's `WorkflowDocument`): a portable, JSON-safe description of a step tree that a model
//! may write. Checking a candidate, measuring and walking a tree, and deciding how a node is hydrated into steps
//! happen here; the host only calls its step builders along the plan this module hands it.

mod check;
mod plan;
mod planner;
pub mod tree;

use serde_json::Value;

pub use self::check::{MAX_DEPTH, NODE_KINDS, Problem, Refs, UNTIL_KINDS, check_document, check_node};
pub use self::plan::{DEFAULT_MODEL, hydration_plan};
pub use self::planner::{given_document, max_depth, planner_turn};

/// How deeply the JSON text of a tree from JS may nest before it is refused unread. Each workflow level is at
/// most three JSON levels (a branch's `routes`, a route, its `target`), so a tree at [`MAX_DEPTH`] fits with room
/// for a tool's `args`; walks and depths of deeper trees still work up to this bound.
pub const MAX_TEXT_NESTING: usize = 1024;

/// A workflow a model wrote, as text, checked and measured against `max_depth` (its structural depth): the
/// document, or the sentence that says why it is refused (which a planner is shown to try again).
pub fn document_from_text(text: &str, max_depth: usize) -> Result<Value, String> {
  let parsed = crate::js_text::from_js_json_nested::<Value>(text, MAX_TEXT_NESTING)
    .map_err(|error| format!("the reply is not a JSON workflow document ({error})"))?;
  document_within(&parsed, max_depth)
}

/// A parsed candidate, checked and measured against `max_depth`.
pub fn document_within(candidate: &Value, max_depth: usize) -> Result<Value, String> {
  let doc = check_document(candidate).map_err(|problem| problem.message())?;
  let depth = tree::depth(&doc["root"], tree::Shape::Workflow);
  if depth > max_depth {
    return Err(format!("the workflow is {depth} levels deep, more than the {max_depth} allowed"));
  }
  Ok(doc)
}

#[cfg(test)]
mod tests;
