//! `dynamicWorkflow`'s planner: what a model is told so that it writes a workflow document, what it is told again
//! when its last one was refused, and when to give up; and `parseAndRunWorkflow`'s refusal of a given document.
//! JS runs the planner step and the document it wrote (`js/patterns.cjs`); the check is [`super::document_from_text`].

use serde_json::{Value, json};

use super::{MAX_DEPTH, document_from_text};
use crate::error::ConfigError;
use crate::js_sketch::Sketch;

/// How the planner is told to write a document (our words for upstream's node kinds and predicates).
const PLANNER_BRIEF: &str = r#"Plan the task below as a JSON workflow document, then stop. Reply with the JSON alone: no prose, no code fences.

The document is {"version": 1, "root": NODE}, where NODE is one of:
- {"kind": "llm", "id": ID, "instructions": TEXT, "model"?: MODEL, "tools"?: [TOOL NAME, ...]}: a model step
- {"kind": "tool", "id": ID, "toolName": TOOL NAME, "args"?: {...}}: one tool call
- {"kind": "sequence", "id": ID, "steps": [NODE, ...]}: steps in order, each output the next input
- {"kind": "fork", "id": ID, "mode": "all" | "race" | "settle", "paths": [NODE, ...], "merge"?: "last" | "first" | "concat"}: paths side by side
- {"kind": "loop", "id": ID, "body": NODE, "until": PREDICATE}: repeat the body until the predicate stops it
- {"kind": "branch", "id": ID, "routes": [{"match": TEXT, "target": NODE}, ...], "default"?: NODE}: the first route whose text the input contains
- {"kind": "spawn", "id": ID, "child": NODE}: the child in a fresh context

PREDICATE is {"kind": "maxSteps", "n": N}, {"kind": "maxCost", "usd": N}, {"kind": "maxDuration", "ms": N}, {"kind": "noToolCalls"}, {"kind": "outputContains", "marker": TEXT}, {"kind": "outputEquals", "sentinel": TEXT}, {"kind": "converged"}, or {"kind": "any" | "all", "predicates": [PREDICATE, ...]}.
Every id is unique and non-empty."#;

/// How deep a planned or given workflow may nest when the caller gives no `maxDepth`.
const DEFAULT_MAX_DEPTH: usize = 5;

/// How many documents the planner may write when the caller gives no `maxRevisions`.
const DEFAULT_MAX_REVISIONS: f64 = 3.0;

const CODE: &str = "WORKFLOW_VALIDATION_FAILED";

/// The depth a caller's `maxDepth` allows: the default without one, the checker's own bound for one that is not a
/// finite number of levels.
pub fn max_depth(given: Option<f64>) -> usize {
  match given {
    None => DEFAULT_MAX_DEPTH,
    Some(n) if n.is_finite() && n >= 0.0 => n as usize,
    Some(_) => MAX_DEPTH,
  }
}

/// A document a caller gave `parseAndRunWorkflow` (its text), checked, or the error that refuses it.
pub fn given_document(text: &str, depth: Option<f64>) -> Result<Value, ConfigError> {
  document_from_text(text, max_depth(depth)).map_err(|message| {
    let hint = "Make the JSON fit WorkflowDocumentSchema (validateWorkflow names every problem).";
    ConfigError::new(CODE, format!("Invalid workflow document: {message}."), hint)
  })
}

/// The planner's next turn, `{id, model, instructions}`, or the error that gives up. `turn` is what JS sends for
/// each revision: `{instructions, tools: [[name, description]], maxRevisions, task, revision, lastError?}`, where
/// `instructions` and `maxRevisions` are sketches of what the caller gave, and the tools and task are already text.
pub fn planner_turn(turn: &Value) -> Result<Value, ConfigError> {
  let given = Sketch::of(turn);
  let revision = given.field("revision").as_number().unwrap_or(0.0);
  let last_error = given.field("lastError").as_str();
  let limit = given.field("maxRevisions");
  // `opts.maxRevisions ?? 3`, compared as JS's `revision < maxRevisions` would.
  let (limit_number, limit_text) = if limit.is_nullish() {
    (DEFAULT_MAX_REVISIONS, crate::js_number(DEFAULT_MAX_REVISIONS))
  } else {
    (number_of(limit), limit.js_string())
  };
  let within = revision < limit_number;
  if !within {
    let detail = last_error.filter(|text| !text.is_empty()).map(|text| format!(": {text}")).unwrap_or_default();
    return Err(ConfigError::new(
      CODE,
      format!("dynamicWorkflow: no valid workflow after {limit_text} attempts{detail}."),
      "Give the planner clearer instructions, a more capable model, or more revisions.",
    ));
  }
  let brief = brief(given);
  let instructions = match last_error {
    None => brief,
    Some(error) => format!("{brief}\n\nYour last document was refused: {error}\nWrite a corrected one."),
  };
  let id = format!("dynamic-workflow-planner-{}", crate::js_number(revision));
  Ok(json!({ "id": id, "model": super::DEFAULT_MODEL, "instructions": instructions }))
}

/// The caller's instructions when there are any, the brief, the tools and the task, a blank line between each.
fn brief(given: Sketch<'_>) -> String {
  let instructions = given.field("instructions");
  let tools = given.field("tools").as_array().unwrap_or_default();
  let lines: Vec<String> = tools
    .iter()
    .map(|tool| {
      let pair = tool.as_array().unwrap_or_default();
      let text = |i: usize| pair.get(i).and_then(Sketch::as_str).unwrap_or_default();
      format!("- {}: {}", text(0), text(1))
    })
    .collect();
  let task = given.field("task").as_str().unwrap_or_default();
  let parts = [
    instructions.is_truthy().then(|| instructions.js_string()),
    Some(PLANNER_BRIEF.to_owned()),
    Some(format!("Available tools:\n{}", lines.join("\n"))),
    Some(format!("Task: {task}")),
  ];
  parts.into_iter().flatten().collect::<Vec<_>>().join("\n\n")
}

/// JS's `Number(value)` of a sketched primitive (what `<` compares); `NaN` for anything else.
fn number_of(value: Sketch<'_>) -> f64 {
  if let Some(n) = value.as_number() {
    return n;
  }
  if let Some(b) = value.as_bool() {
    return if b { 1.0 } else { 0.0 };
  }
  match value.as_str().map(str::trim) {
    Some("") => 0.0,
    Some("Infinity" | "+Infinity") => f64::INFINITY,
    Some("-Infinity") => f64::NEG_INFINITY,
    Some(text) if !text.contains(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E') => {
      text.parse().unwrap_or(f64::NAN)
    }
    _ => f64::NAN,
  }
}

#[cfg(test)]
mod tests;
