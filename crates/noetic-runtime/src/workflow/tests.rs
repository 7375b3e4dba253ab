use serde_json::{Value, json};

use super::tree::{Edge, Shape, depth, walk};
use super::*;

fn llm(id: &str) -> Value {
  json!({"kind": "llm", "id": id, "instructions": "go"})
}

fn doc(root: Value) -> Value {
  json!({"version": 1, "root": root})
}

fn names(list: &[&str]) -> Vec<String> {
  list.iter().map(|s| (*s).to_owned()).collect()
}

/// `n` spawns around a leaf: structural depth `n`.
fn spawns(n: usize) -> Value {
  (0..n).fold(llm("leaf"), |child, i| json!({"kind": "spawn", "id": format!("s{i}"), "child": child}))
}

#[test]
fn a_document_comes_back_in_schema_order_without_unknown_keys() {
  let candidate = json!({"root": {
    "steps": [{"instructions": "x", "id": "a", "kind": "llm", "note": 1, "params": {"topP": 0.5, "seed": 3}}],
    "id": "root", "kind": "sequence", "extra": true
  }, "version": 1, "meta": "dropped"});
  let checked = check_document(&candidate).expect("valid");
  assert_eq!(
    checked,
    doc(json!({"kind": "sequence", "id": "root", "steps": [
      {"kind": "llm", "id": "a", "instructions": "x", "params": {"topP": 0.5}}
    ]}))
  );
  let keys: Vec<&String> = checked["root"]["steps"][0].as_object().map(|m| m.keys().collect()).unwrap_or_default();
  assert_eq!(keys, ["kind", "id", "instructions", "params"]);
}

#[test]
fn every_node_kind_and_predicate_kind_is_accepted() {
  let root = json!({"kind": "sequence", "id": "all", "steps": [
    {"kind": "llm", "id": "l", "model": "m", "instructions": "", "tools": ["t"],
     "params": {"temperature": 0, "topP": 1, "maxTokens": 5, "stopSequences": ["x"]}},
    {"kind": "tool", "id": "t", "toolName": "t", "args": {"deep": [1, {"a": null}]}},
    {"kind": "branch", "id": "b", "routes": [{"match": "yes", "target": llm("y")}], "default": llm("n")},
    {"kind": "fork", "id": "f", "mode": "settle", "paths": [llm("p")], "merge": "concat", "concurrency": 2},
    {"kind": "spawn", "id": "s", "child": llm("c"), "timeout": 1.5},
    {"kind": "provide", "id": "p", "child": llm("c2"), "layers": ["mem"]},
    {"kind": "loop", "id": "lp", "body": llm("body"), "maxIterations": 3, "until": {"kind": "any", "predicates": [
      {"kind": "maxSteps", "n": 2}, {"kind": "maxCost", "usd": 0.5}, {"kind": "maxDuration", "ms": 10},
      {"kind": "noToolCalls"}, {"kind": "outputContains", "marker": "DONE"},
      {"kind": "outputEquals", "sentinel": "STOP"}, {"kind": "converged"},
      {"kind": "all", "predicates": [{"kind": "converged", "threshold": 0.9}]}
    ]}},
    {"kind": "every", "id": "e", "step": llm("tick"), "ms": 0, "onError": "fail"}
  ]});
  assert_eq!(check_document(&doc(root.clone())), Ok(doc(root)));
}

#[test]
fn bad_fields_are_named_by_their_path() {
  let cases = [
    (json!({"root": llm("a")}), "version must be 1, got nothing"),
    (json!({"version": 2, "root": llm("a")}), "version must be 1, got a number"),
    (json!({"version": 1}), "root is required"),
    (doc(json!({"kind": "llm", "id": "", "instructions": "x"})), "root.id must be a non-empty string, got a string"),
    (doc(json!({"kind": "llm", "id": "a"})), "root.instructions must be a string, got nothing"),
    (doc(json!({"kind": "tool", "id": "a"})), "root.toolName must be a non-empty string"),
    (
      doc(json!({"kind": "tool", "id": "a", "toolName": "t", "args": [1]})),
      "root.args must be an object, got an array",
    ),
    (doc(json!({"kind": "branch", "id": "a", "routes": []})), "root.routes must be a list of at least one entry"),
    (doc(json!({"kind": "branch", "id": "a", "routes": [{"match": "", "target": llm("b")}]})), "root.routes[0].match"),
    (doc(json!({"kind": "fork", "id": "a", "mode": "first", "paths": [llm("b")]})), "root.mode must be one of"),
    (
      doc(json!({"kind": "fork", "id": "a", "mode": "all", "paths": [llm("b")], "concurrency": 1.5})),
      "root.concurrency",
    ),
    (
      doc(json!({"kind": "spawn", "id": "a", "child": llm("b"), "timeout": 0})),
      "root.timeout must be a positive number",
    ),
    (doc(json!({"kind": "provide", "id": "a", "child": llm("b"), "layers": []})), "root.layers must be a list"),
    (doc(json!({"kind": "sequence", "id": "a", "steps": [llm("b"), {"kind": "llm", "id": 3}]})), "root.steps[1].id"),
    (doc(json!({"kind": "every", "id": "a", "step": llm("b"), "ms": -1})), "root.ms must be a number of at least 0"),
    (doc(json!({"kind": "every", "id": "a", "step": llm("b"), "ms": 1, "onError": null})), "root.onError must be one"),
    (doc(json!({"kind": "loop", "id": "a", "body": llm("b"), "until": {"kind": "maxSteps", "n": 0}})), "root.until.n"),
    (doc(json!({"kind": "llm", "id": "a", "instructions": "x", "params": {"topP": 2}})), "root.params.topP"),
    (doc(json!({"kind": "spawn", "id": "a"})), "root.child is required"),
  ];
  for (candidate, expected) in cases {
    match check_document(&candidate) {
      Err(Problem::Invalid(message)) => assert!(message.starts_with(expected), "{message} / {expected}"),
      other => panic!("{candidate}: {other:?}"),
    }
  }
}

#[test]
fn unknown_kinds_are_their_own_problems_with_upstreams_codes() {
  let node = json!({"kind": "subagent", "id": "a"});
  let problem = check_node(&node, "node", None).expect_err("unknown kind");
  assert_eq!(problem, Problem::UnknownKind { at: "node".into(), kind: "'subagent'".into() });
  assert_eq!(problem.config_error().code, "UNKNOWN_NODE_KIND");
  let looped = json!({"kind": "loop", "id": "l", "body": llm("b"), "until": {"kind": "invalid", "n": 5}});
  let problem = check_node(&looped, "node", None).expect_err("unknown predicate");
  assert_eq!(problem.config_error().code, "UNKNOWN_UNTIL_PREDICATE");
  assert_eq!(problem.config_error().message, "Unknown until predicate kind 'invalid' at node.until.");
}

#[test]
fn names_are_resolved_only_when_a_registry_is_given_and_missing_ones_are_named() {
  let tools = names(&["search"]);
  let refs = Refs { tools: &tools, layers: None };
  let node = json!({"kind": "sequence", "id": "s", "steps": [
    {"kind": "llm", "id": "l", "instructions": "x", "tools": ["search", "nonexistent"]}
  ]});
  assert!(check_node(&node, "node", None).is_ok());
  let error = check_node(&node, "node", Some(refs)).expect_err("unknown tool").config_error();
  assert_eq!(error.code, "UNKNOWN_TOOL_REFERENCE");
  assert!(error.message.contains("'nonexistent'") && error.message.contains("'l'"), "{}", error.message);
  assert_eq!(error.hint, "Registered tools: search.");

  let provide = json!({"kind": "provide", "id": "p", "child": llm("c"), "layers": ["missing"]});
  assert!(check_node(&provide, "node", Some(refs)).is_ok(), "without a layer registry names are not resolved");
  let none: Vec<String> = Vec::new();
  let with_layers = Refs { tools: &tools, layers: Some(&none) };
  let error = check_node(&provide, "node", Some(with_layers)).expect_err("unknown layer").config_error();
  assert_eq!(
    (error.code.as_str(), error.hint.starts_with("Registered layers: (none).")),
    ("UNKNOWN_LAYER_REFERENCE", true)
  );
}

#[test]
fn problems_come_in_the_order_upstreams_hydrator_meets_them() {
  let tools: Vec<String> = Vec::new();
  let layers: Vec<String> = Vec::new();
  let refs = Refs { tools: &tools, layers: Some(&layers) };
  let bad_tool = json!({"kind": "tool", "id": "t", "toolName": "missing"});
  // A provide's layers are resolved before its child is hydrated...
  let provide = json!({"kind": "provide", "id": "p", "child": bad_tool, "layers": ["gone"]});
  assert!(matches!(check_node(&provide, "node", Some(refs)), Err(Problem::UnknownLayer { .. })));
  // ...and a loop's body before its predicate.
  let looped = json!({"kind": "loop", "id": "l", "body": bad_tool, "until": {"kind": "nope"}});
  assert!(matches!(check_node(&looped, "node", Some(refs)), Err(Problem::UnknownTool { .. })));
}

#[test]
fn trees_past_the_limit_are_refused_before_they_are_walked_further() {
  assert!(check_document(&doc(spawns(MAX_DEPTH))).is_ok());
  let problem = check_document(&doc(spawns(MAX_DEPTH + 1))).expect_err("too deep");
  assert_eq!(problem, Problem::TooDeep { at: "node 'leaf'".into() }, "the first node past the limit, by id");
  assert_eq!(problem.config_error().code, "WORKFLOW_VALIDATION_FAILED");
  let predicates =
    (0..MAX_DEPTH + 1).fold(json!({"kind": "noToolCalls"}), |p, _| json!({"kind": "any", "predicates": [p]}));
  let looped = json!({"kind": "loop", "id": "l", "body": llm("b"), "until": predicates});
  assert!(matches!(check_node(&looped, "node", None), Err(Problem::TooDeep { .. })));
}

#[test]
fn a_models_text_is_checked_and_measured_against_the_callers_depth() {
  let text = doc(spawns(3)).to_string();
  assert!(document_from_text(&text, 3).is_ok());
  assert_eq!(document_from_text(&text, 2), Err("the workflow is 3 levels deep, more than the 2 allowed".into()));
  assert!(document_from_text("not json", 5).expect_err("refused").starts_with("the reply is not a JSON workflow"));
  let hostile = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
  assert!(document_from_text(&hostile, 5).expect_err("refused").contains("more than 1024"));
}

#[test]
fn depth_and_walk_follow_upstreams_child_order_without_recursion() {
  let tree = json!({"kind": "sequence", "id": "root", "steps": [
    {"kind": "branch", "id": "b", "routes": [{"match": "x", "target": llm("r0")}, {"match": "y", "target": llm("r1")}],
     "default": llm("d")},
    {"kind": "loop", "id": "l", "body": {"kind": "every", "id": "e", "step": llm("t")}, "until": {"kind": "never"}}
  ]});
  assert_eq!(depth(&tree, Shape::Workflow), 3);
  let edges = walk(&tree, Shape::Workflow);
  let edge = |parent, key, index| Edge { parent, key, index };
  assert_eq!(
    edges,
    [
      edge(0, "steps", Some(0)),
      edge(1, "routes", Some(0)),
      edge(1, "routes", Some(1)),
      edge(1, "default", None),
      edge(0, "steps", Some(1)),
      edge(5, "body", None),
      edge(6, "step", None),
    ]
  );
  // A flow has no loops: a loop is a leaf there.
  assert_eq!(depth(&json!({"kind": "loop", "body": llm("x")}), Shape::Flow), 0);
  // Deeper than any checked tree, and walked without recursion.
  let deep = (0..1_000).fold(llm("x"), |child, _| json!({"kind": "spawn", "child": child}));
  assert_eq!(depth(&deep, Shape::Flow), 1_000);
  assert_eq!(walk(&deep, Shape::Workflow).len(), 1_000);
}

#[test]
fn the_plan_lists_children_first_with_upstreams_defaults() {
  let node = json!({"kind": "sequence", "id": "root", "steps": [
    {"kind": "fork", "id": "f", "mode": "all", "paths": [llm("a"), {"kind": "tool", "id": "t", "toolName": "x"}]},
    {"kind": "fork", "id": "r", "mode": "race", "paths": [llm("b")], "merge": "first"},
    {"kind": "branch", "id": "br", "routes": [{"match": "yes", "target": llm("c")}]}
  ]});
  let plan = hydration_plan(&check_node(&node, "node", None).expect("valid"));
  let ids: Vec<&str> = plan.iter().filter_map(|e| e["id"].as_str()).collect();
  assert_eq!(ids, ["a", "t", "f", "b", "r", "c", "br", "root"]);
  assert_eq!(plan[0]["model"], DEFAULT_MODEL);
  assert_eq!(plan[1]["args"], json!({}));
  assert_eq!((plan[2]["paths"].clone(), plan[2]["merge"].clone()), (json!([0, 1]), json!("last")));
  assert_eq!(plan[4]["merge"], Value::Null, "a race does not merge");
  assert_eq!(plan[6]["routes"], json!([{"match": "yes", "target": 5}]));
  assert_eq!(plan[6]["default"], Value::Null);
  assert_eq!(plan[7]["steps"], json!([2, 4, 6]));
}
