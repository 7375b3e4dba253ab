//! JSON workflows and flows for JS: checking, measuring, walking and planning the hydration of a tree JS sends as
//! its `JSON.stringify` text (read with a nesting bound, so no tree reaches a recursion unmeasured). What goes back
//! holds the tree's own values, which may nest as deeply as the text did, so it goes back as JSON text for JS to
//! parse: napi's conversion of a value refuses one nesting past 128 levels, in its own words.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{Value, json};

use noetic_runtime::js_text::{from_js_json, from_js_json_nested};
use noetic_runtime::memory::builtin::flow_schema::{self, parse_flow};
use noetic_runtime::workflow::tree::{self, Shape};
use noetic_runtime::workflow::{
  self as wf, MAX_TEXT_NESTING, Problem, Refs, check_document, check_node, document_from_text, hydration_plan,
};

use crate::protocol::{config_json, to_napi};

fn shape_of(shape: &str) -> Shape {
  if shape == "flow" { Shape::Flow } else { Shape::Workflow }
}

/// A tree's text, read; one nesting past [`MAX_TEXT_NESTING`] is a config error naming `what`.
fn tree_of(text: &str, what: &str) -> Result<Value> {
  from_js_json_nested(text, MAX_TEXT_NESTING).map_err(|error| {
    let error = noetic_runtime::ConfigError::new(
      "WORKFLOW_VALIDATION_FAILED",
      format!("{what} cannot be read: {error}."),
      "Pass a JSON-safe tree: plain objects, arrays, strings, numbers and booleans.",
    );
    to_napi(config_json(&error))
  })
}

/// `what`: `document` (a WorkflowDocument), `node` (a WorkflowNode) or `flow` (a FlowNode). The checked copy
/// (`{ok: true, value}`), or why not: `{ok: false, tooDeep, message}`, where a tree nesting past the limit is
/// `tooDeep` and anything else is left for the zod schema to describe.
#[napi(catch_unwind, skip_typescript)]
pub fn tree_check(what: String, text: String) -> Result<String> {
  let candidate = tree_of(&text, "The tree")?;
  let refused = |too_deep: bool, message: String| json!({ "ok": false, "tooDeep": too_deep, "message": message });
  let checked = match what.as_str() {
    "flow" => {
      if tree::depth(&candidate, Shape::Flow) > flow_schema::MAX_NESTING {
        let message = format!("the flow nests more than {} levels deep", flow_schema::MAX_NESTING);
        return Ok(refused(true, message).to_string());
      }
      parse_flow(&candidate).map_err(|message| refused(false, message))
    }
    "node" => {
      check_node(&candidate, "node", None).map_err(|p| refused(matches!(p, Problem::TooDeep { .. }), p.message()))
    }
    _ => check_document(&candidate).map_err(|p| refused(matches!(p, Problem::TooDeep { .. }), p.message())),
  };
  Ok(
    match checked {
      Ok(value) => json!({ "ok": true, "value": value }),
      Err(refusal) => refusal,
    }
    .to_string(),
  )
}

/// A tree's depth (`workflowDepth`, `flowDepth`), measured without recursion.
#[napi(catch_unwind, skip_typescript)]
pub fn tree_depth(shape: String, text: String) -> Result<u32> {
  let tree = tree_of(&text, "The tree")?;
  Ok(u32::try_from(tree::depth(&tree, shape_of(&shape))).unwrap_or(u32::MAX))
}

/// A tree's nodes in pre-order after the root, each as `[parent position, key, index or -1]`: the host follows
/// them through its own objects, so the walk yields the very nodes it was given.
#[napi(catch_unwind, skip_typescript)]
pub fn tree_walk(shape: String, text: String) -> Result<String> {
  let tree = tree_of(&text, "The tree")?;
  let edges = tree::walk(&tree, shape_of(&shape));
  let edges: Value = edges.into_iter().map(|e| json!([e.parent, e.key, e.index.map_or(-1, |i| i as i64)])).collect();
  Ok(edges.to_string())
}

/// How to hydrate a node (`hydrateNode`): its build list, children first (see `workflow::hydration_plan`), its
/// tool names (and layer names, when the hydration has a layer registry) resolved. A node that cannot be
/// hydrated throws the NoeticConfigError upstream's hydrator throws.
#[napi(catch_unwind, skip_typescript)]
pub fn workflow_plan(text: String, tools: Vec<String>, layers: Option<Vec<String>>) -> Result<String> {
  let node = tree_of(&text, "The workflow node")?;
  let refs = Refs { tools: &tools, layers: layers.as_deref() };
  let checked = check_node(&node, "node", Some(refs)).map_err(|p| to_napi(config_json(&p.config_error())))?;
  Ok(Value::Array(hydration_plan(&checked)).to_string())
}

/// A workflow a model wrote (its text), checked against `maxDepth` levels (the runtime's default when none):
/// `{ok: true, value}` or `{ok: false, message}` (what a planner is told when it should try again).
#[napi(catch_unwind, skip_typescript)]
pub fn workflow_from_text(text: String, max_depth: Option<f64>) -> String {
  match document_from_text(&text, wf::max_depth(max_depth)) {
    Ok(value) => json!({ "ok": true, "value": value }),
    Err(message) => json!({ "ok": false, "message": message }),
  }
  .to_string()
}

/// A workflow a caller gave `parseAndRunWorkflow` (its `JSON.stringify`), checked: the document as JSON text, or
/// the NoeticConfigError that refuses it.
#[napi(catch_unwind, skip_typescript)]
pub fn workflow_given(text: String, max_depth: Option<f64>) -> Result<String> {
  wf::given_document(&text, max_depth).map(|doc| doc.to_string()).map_err(|e| to_napi(config_json(&e)))
}

/// `dynamicWorkflow`'s next planner turn (`workflow::planner_turn`): `{id, model, instructions}` as JSON text, or
/// the NoeticConfigError that gives up.
#[napi(catch_unwind, skip_typescript)]
pub fn planner_turn(turn: String) -> Result<String> {
  let turn: Value =
    from_js_json(&turn).map_err(|e| Error::new(Status::InvalidArg, format!("malformed JSON from JS: {e}")))?;
  wf::planner_turn(&turn).map(|answer| answer.to_string()).map_err(|e| to_napi(config_json(&e)))
}
