//! The shape of JSON step trees: which keys of a node hold its children, for workflows and for planMemory's
//! flows. Walks are iterative, so a tree as deep as its JSON text may nest is measured without recursion.

use serde_json::Value;

/// Which tree language a node belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
  /// A `WorkflowNode`: children under `steps`, `paths`, `child`, `body`, `step`, and a branch's
  /// `routes[i].target` then `default`.
  Workflow,
  /// A `FlowNode`: children under a fork's `paths`, a sequence's `steps` and a spawn's `child`.
  Flow,
}

/// Where a child sits in its parent (the node at position `parent` of the walk): `parent[key]`, or
/// `parent[key][index]`; for the key `routes`, the route's `target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
  pub parent: usize,
  pub key: &'static str,
  pub index: Option<usize>,
}

/// A node's children in order, with where each sits. A key that is absent or of the wrong type holds none, so a
/// malformed tree is walked as far as it goes.
pub fn children(node: &Value, shape: Shape) -> Vec<(&'static str, Option<usize>, &Value)> {
  let list = |key: &'static str| -> Vec<(&'static str, Option<usize>, &Value)> {
    node.get(key).and_then(Value::as_array).into_iter().flatten().enumerate().map(|(i, v)| (key, Some(i), v)).collect()
  };
  let one = |key: &'static str| node.get(key).map(|v| (key, None, v)).into_iter().collect::<Vec<_>>();
  match (shape, node.get("kind").and_then(Value::as_str)) {
    (_, Some("sequence")) => list("steps"),
    (_, Some("fork")) => list("paths"),
    (_, Some("spawn")) => one("child"),
    (Shape::Workflow, Some("provide")) => one("child"),
    (Shape::Workflow, Some("loop")) => one("body"),
    (Shape::Workflow, Some("every")) => one("step"),
    (Shape::Workflow, Some("branch")) => {
      let routes = node.get("routes").and_then(Value::as_array).into_iter().flatten().enumerate();
      let mut out: Vec<_> =
        routes.filter_map(|(i, route)| route.get("target").map(|target| ("routes", Some(i), target))).collect();
      out.extend(one("default"));
      out
    }
    _ => Vec::new(),
  }
}

/// Every node of the tree in pre-order (a node, then each child's subtree in order), as the edge that reaches
/// it from a node earlier in the walk; the root (position 0) has none.
pub fn walk(root: &Value, shape: Shape) -> Vec<Edge> {
  let mut edges = Vec::new();
  // Children are pushed in reverse, so the first is visited first; each carries the edge that reached it.
  let mut pending: Vec<(&Value, Option<Edge>)> = vec![(root, None)];
  let mut position = 0;
  while let Some((node, edge)) = pending.pop() {
    edges.extend(edge);
    for (key, index, child) in children(node, shape).into_iter().rev() {
      pending.push((child, Some(Edge { parent: position, key, index })));
    }
    position += 1;
  }
  edges
}

/// How deep the tree goes: a leaf is 0, any other node one more than its deepest child. A workflow node is a
/// leaf when it has no children; a flow node when it is not a `sequence`, `fork` or `spawn` (one of those with no
/// children is 1, as upstream's `flowDepth` counts it).
pub fn depth(root: &Value, shape: Shape) -> usize {
  let mut deepest = 0;
  let mut pending = vec![(root, 0usize)];
  while let Some((node, level)) = pending.pop() {
    let kids = children(node, shape);
    let structural = match shape {
      Shape::Workflow => !kids.is_empty(),
      Shape::Flow => matches!(node.get("kind").and_then(Value::as_str), Some("sequence" | "fork" | "spawn")),
    };
    if kids.is_empty() {
      deepest = deepest.max(level + usize::from(structural));
    }
    pending.extend(kids.into_iter().map(|(_, _, child)| (child, level + 1)));
  }
  deepest
}
