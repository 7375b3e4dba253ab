//! Upstream's `WorkflowDocumentSchema`, checked here: a candidate comes back with unknown keys dropped and its
//! keys in schema order (as zod hands a parsed object back), or with the first problem, named by its path
//! (`root.steps[1].toolName`). Given the tools and layers a hydration may use, the same pass resolves the names
//! a node gives, in the order upstream's hydrator meets them.

use serde_json::{Map, Value};

use crate::error::ConfigError;

/// Structural levels past which a workflow is refused: the interpreter's own limit on nested contexts. A tree
/// this deep is never walked further, so hostile input (a model's plan) cannot exhaust a stack.
pub const MAX_DEPTH: usize = 64;

pub const NODE_KINDS: [&str; 9] = ["llm", "tool", "branch", "fork", "spawn", "provide", "loop", "sequence", "every"];
pub const UNTIL_KINDS: [&str; 9] =
  ["maxSteps", "maxCost", "maxDuration", "noToolCalls", "outputContains", "outputEquals", "converged", "any", "all"];
const FORK_MODES: [&str; 3] = ["race", "all", "settle"];
const MERGE_STRATEGIES: [&str; 3] = ["last", "first", "concat"];
const EVERY_ON_ERROR: [&str; 2] = ["continue", "fail"];

/// What a hydration may name: the tool registry's names and, when it has one, the layer registry's.
#[derive(Debug, Clone, Copy)]
pub struct Refs<'a> {
  pub tools: &'a [String],
  pub layers: Option<&'a [String]>,
}

/// Why a candidate is not a workflow (or cannot be hydrated).
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
  /// A field that does not fit the schema: the whole sentence, path first.
  Invalid(String),
  /// The tree nests past [`MAX_DEPTH`]; `at` is the first node too deep.
  TooDeep {
    at: String,
  },
  UnknownKind {
    at: String,
    kind: String,
  },
  UnknownUntil {
    at: String,
    kind: String,
  },
  UnknownTool {
    node: String,
    name: String,
    registered: String,
  },
  UnknownLayer {
    node: String,
    name: String,
    registered: String,
  },
}

impl Problem {
  /// The problem as one sentence (what a planner model is told when its document is refused).
  pub fn message(&self) -> String {
    match self {
      Self::Invalid(message) => message.clone(),
      Self::TooDeep { at } => format!("the workflow nests more than {MAX_DEPTH} levels deep (at {at})"),
      Self::UnknownKind { at, kind } => format!("{at}.kind must be one of {}, got {kind}", NODE_KINDS.join(", ")),
      Self::UnknownUntil { at, kind } => format!("{at}.kind must be one of {}, got {kind}", UNTIL_KINDS.join(", ")),
      Self::UnknownTool { node, name, .. } => {
        format!("Tool '{name}' named by workflow node '{node}' is not registered.")
      }
      Self::UnknownLayer { node, name, .. } => {
        format!("Memory layer '{name}' named by provide node '{node}' is not registered.")
      }
    }
  }

  /// The NoeticConfigError a hydration throws, with upstream's codes.
  pub fn config_error(&self) -> ConfigError {
    let message = self.message();
    match self {
      Self::Invalid(_) => ConfigError::new(
        "WORKFLOW_VALIDATION_FAILED",
        format!("Invalid workflow node: {message}."),
        "Check it against WorkflowNodeSchema; WorkflowNodeSchema.safeParse(node) names every problem.",
      ),
      Self::TooDeep { .. } => ConfigError::new(
        "WORKFLOW_VALIDATION_FAILED",
        format!("Invalid workflow: {message}."),
        format!("Flatten the workflow: sequences and forks take many steps at one level (at most {MAX_DEPTH} levels)."),
      ),
      Self::UnknownKind { at, kind } => ConfigError::new(
        "UNKNOWN_NODE_KIND",
        format!("Unknown workflow node kind {kind} at {at}."),
        format!("Use one of: {}.", NODE_KINDS.join(", ")),
      ),
      Self::UnknownUntil { at, kind } => ConfigError::new(
        "UNKNOWN_UNTIL_PREDICATE",
        format!("Unknown until predicate kind {kind} at {at}."),
        format!("Use one of: {}.", UNTIL_KINDS.join(", ")),
      ),
      Self::UnknownTool { registered, .. } => {
        ConfigError::new("UNKNOWN_TOOL_REFERENCE", message, format!("Registered tools: {registered}."))
      }
      Self::UnknownLayer { registered, .. } => ConfigError::new(
        "UNKNOWN_LAYER_REFERENCE",
        message,
        format!("Registered layers: {registered}. Name layers through HydrationContext.layers."),
      ),
    }
  }
}

/// A `WorkflowDocument` (`{version: 1, root}`), checked.
pub fn check_document(candidate: &Value) -> Result<Value, Problem> {
  let Value::Object(doc) = candidate else {
    return Err(Problem::Invalid(format!("the workflow document must be an object, got {}", kind_of(candidate))));
  };
  match doc.get("version") {
    Some(Value::Number(n)) if n.as_f64() == Some(1.0) => {}
    other => {
      return Err(Problem::Invalid(format!("version must be 1, got {}", other.map_or("nothing", kind_of))));
    }
  }
  let root = doc.get("root").ok_or_else(|| Problem::Invalid("root is required".into()))?;
  let root = Checker { refs: None }.node(root, "root", 0)?;
  let mut out = Map::new();
  out.insert("version".into(), Value::from(1));
  out.insert("root".into(), root);
  Ok(Value::Object(out))
}

/// One `WorkflowNode`, checked; with `refs`, its tool and layer names resolved too. `at` names it in messages.
pub fn check_node(candidate: &Value, at: &str, refs: Option<Refs>) -> Result<Value, Problem> {
  Checker { refs }.node(candidate, at, 0)
}

struct Checker<'a> {
  refs: Option<Refs<'a>>,
}

impl Checker<'_> {
  fn node(&self, value: &Value, at: &str, depth: usize) -> Result<Value, Problem> {
    if depth > MAX_DEPTH {
      return Err(Problem::TooDeep { at: named(value, "node") });
    }
    let Value::Object(node) = value else {
      return Err(Problem::Invalid(format!("{at} must be a workflow node object, got {}", kind_of(value))));
    };
    let kind = match node.get("kind") {
      Some(Value::String(kind)) if NODE_KINDS.contains(&kind.as_str()) => kind.as_str(),
      other => return Err(Problem::UnknownKind { at: at.to_owned(), kind: shown(other) }),
    };
    let mut f = Fields { node, at, out: Map::new() };
    f.out.insert("kind".into(), Value::String(kind.to_owned()));
    f.string("id", Need::NonEmpty)?;
    let id = f.out.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let child = |key: &str, f: &Fields| -> Result<Value, Problem> {
      let value = f.node.get(key).ok_or_else(|| Problem::Invalid(format!("{at}.{key} is required")))?;
      self.node(value, &format!("{at}.{key}"), depth + 1)
    };
    let list = |key: &str, f: &Fields| -> Result<Value, Problem> {
      let items = f.non_empty_list(key)?;
      let checked = items.iter().enumerate().map(|(i, v)| self.node(v, &format!("{at}.{key}[{i}]"), depth + 1));
      checked.collect::<Result<Vec<_>, _>>().map(Value::Array)
    };
    match kind {
      "llm" => {
        f.string("model", Need::Optional)?;
        f.string("instructions", Need::Present)?;
        f.strings("tools", Need::Optional)?;
        if let (Some(refs), Some(Value::Array(names))) = (self.refs, f.out.get("tools")) {
          for name in names.iter().filter_map(Value::as_str) {
            resolve(name, refs.tools, || Problem::UnknownTool {
              node: id.clone(),
              name: name.to_owned(),
              registered: registered(refs.tools),
            })?;
          }
        }
        f.params()?;
      }
      "tool" => {
        f.string("toolName", Need::NonEmpty)?;
        if let (Some(refs), Some(Value::String(name))) = (self.refs, f.out.get("toolName")) {
          resolve(name, refs.tools, || Problem::UnknownTool {
            node: id.clone(),
            name: name.clone(),
            registered: registered(refs.tools),
          })?;
        }
        f.record("args")?;
      }
      "branch" => {
        let routes = f.non_empty_list("routes")?;
        let mut checked = Vec::with_capacity(routes.len());
        for (i, route) in routes.iter().enumerate() {
          let route_at = format!("{at}.routes[{i}]");
          let Value::Object(route) = route else {
            return Err(Problem::Invalid(format!("{route_at} must be {{match, target}}, got {}", kind_of(route))));
          };
          let mut r = Fields { node: route, at: &route_at, out: Map::new() };
          r.string("match", Need::NonEmpty)?;
          let target = route.get("target").ok_or_else(|| Problem::Invalid(format!("{route_at}.target is required")))?;
          let target = self.node(target, &format!("{route_at}.target"), depth + 1)?;
          r.out.insert("target".into(), target);
          checked.push(Value::Object(r.out));
        }
        f.out.insert("routes".into(), Value::Array(checked));
        if f.node.contains_key("default") {
          let default = child("default", &f)?;
          f.out.insert("default".into(), default);
        }
      }
      "fork" => {
        f.one_of("mode", &FORK_MODES, Need::Present)?;
        let paths = list("paths", &f)?;
        f.out.insert("paths".into(), paths);
        f.one_of("merge", &MERGE_STRATEGIES, Need::Optional)?;
        f.number("concurrency", Num::PositiveInt)?;
      }
      "spawn" => {
        let checked = child("child", &f)?;
        f.out.insert("child".into(), checked);
        f.number("timeout", Num::Positive)?;
      }
      "provide" => {
        // Upstream's hydrator resolves the layers before it hydrates the child.
        let layers = f.layers()?;
        if let Some(known) = self.refs.and_then(|refs| refs.layers) {
          for name in layers.as_array().into_iter().flatten().filter_map(Value::as_str) {
            resolve(name, known, || Problem::UnknownLayer {
              node: id.clone(),
              name: name.to_owned(),
              registered: registered(known),
            })?;
          }
        }
        let checked = child("child", &f)?;
        f.out.insert("child".into(), checked);
        f.out.insert("layers".into(), layers);
      }
      "loop" => {
        let body = child("body", &f)?;
        f.out.insert("body".into(), body);
        let until = f.node.get("until").ok_or_else(|| Problem::Invalid(format!("{at}.until is required")))?;
        f.out.insert("until".into(), predicate(until, &format!("{at}.until"), 0)?);
        f.number("maxIterations", Num::PositiveInt)?;
      }
      "sequence" => {
        let steps = list("steps", &f)?;
        f.out.insert("steps".into(), steps);
      }
      _ => {
        // "every"
        let checked = child("step", &f)?;
        f.out.insert("step".into(), checked);
        f.number_required("ms", Num::NonNegative)?;
        f.one_of("onError", &EVERY_ON_ERROR, Need::Optional)?;
      }
    }
    Ok(Value::Object(f.out))
  }
}

/// An `until` predicate (`any` / `all` nest others, at most [`MAX_DEPTH`] deep).
fn predicate(value: &Value, at: &str, depth: usize) -> Result<Value, Problem> {
  if depth > MAX_DEPTH {
    return Err(Problem::TooDeep { at: named(value, "predicate") });
  }
  let Value::Object(pred) = value else {
    return Err(Problem::Invalid(format!("{at} must be an until predicate object, got {}", kind_of(value))));
  };
  let kind = match pred.get("kind") {
    Some(Value::String(kind)) if UNTIL_KINDS.contains(&kind.as_str()) => kind.as_str(),
    other => return Err(Problem::UnknownUntil { at: at.to_owned(), kind: shown(other) }),
  };
  let mut f = Fields { node: pred, at, out: Map::new() };
  f.out.insert("kind".into(), Value::String(kind.to_owned()));
  match kind {
    "maxSteps" => f.number_required("n", Num::PositiveInt)?,
    "maxCost" => f.number_required("usd", Num::Positive)?,
    "maxDuration" => f.number_required("ms", Num::Positive)?,
    "outputContains" => f.string("marker", Need::NonEmpty)?,
    "outputEquals" => f.string("sentinel", Need::NonEmpty)?,
    "converged" => f.number("threshold", Num::Unit)?,
    "any" | "all" => {
      let list = f.non_empty_list("predicates")?;
      let checked = list.iter().enumerate().map(|(i, p)| predicate(p, &format!("{at}.predicates[{i}]"), depth + 1));
      let checked = checked.collect::<Result<Vec<_>, _>>()?;
      f.out.insert("predicates".into(), Value::Array(checked));
    }
    _ => {} // noToolCalls
  }
  Ok(Value::Object(f.out))
}

fn resolve(name: &str, known: &[String], problem: impl FnOnce() -> Problem) -> Result<(), Problem> {
  if known.iter().any(|k| k == name) { Ok(()) } else { Err(problem()) }
}

fn registered(names: &[String]) -> String {
  if names.is_empty() { "(none)".into() } else { names.join(", ") }
}

#[derive(Clone, Copy, PartialEq)]
enum Need {
  Optional,
  Present,
  NonEmpty,
}

/// Number rules, as zod's: every number is finite; integers are safe integers.
#[derive(Clone, Copy)]
enum Num {
  Positive,
  PositiveInt,
  NonNegative,
  /// Between 0 and 1, both included.
  Unit,
  /// Zero or more (a model parameter's `min(0)`).
  AtLeastZero,
  /// Between 0 and 1 (`topP`).
  Fraction,
}

impl Num {
  fn accepts(self, n: f64) -> bool {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    n.is_finite()
      && match self {
        Self::Positive => n > 0.0,
        Self::PositiveInt => n > 0.0 && n.fract() == 0.0 && n <= MAX_SAFE,
        Self::NonNegative | Self::AtLeastZero => n >= 0.0,
        Self::Unit | Self::Fraction => (0.0..=1.0).contains(&n),
      }
  }

  fn wanted(self) -> &'static str {
    match self {
      Self::Positive => "a positive number",
      Self::PositiveInt => "a positive whole number",
      Self::NonNegative | Self::AtLeastZero => "a number of at least 0",
      Self::Unit | Self::Fraction => "a number from 0 to 1",
    }
  }
}

/// The node being read and the checked copy being built.
struct Fields<'a> {
  node: &'a Map<String, Value>,
  at: &'a str,
  out: Map<String, Value>,
}

impl Fields<'_> {
  fn invalid(&self, key: &str, wanted: &str) -> Problem {
    Problem::Invalid(format!(
      "{}.{key} must be {wanted}, got {}",
      self.at,
      self.node.get(key).map_or("nothing", kind_of)
    ))
  }

  fn string(&mut self, key: &str, need: Need) -> Result<(), Problem> {
    match (self.node.get(key), need) {
      // As zod's `.optional()`: an absent key (or `undefined`, which JSON drops) passes; `null` does not.
      (None, Need::Optional) => Ok(()),
      (Some(Value::String(text)), Need::NonEmpty) if text.is_empty() => Err(self.invalid(key, "a non-empty string")),
      (Some(Value::String(text)), _) => {
        self.out.insert(key.to_owned(), Value::String(text.clone()));
        Ok(())
      }
      (_, Need::NonEmpty) => Err(self.invalid(key, "a non-empty string")),
      _ => Err(self.invalid(key, "a string")),
    }
  }

  /// A list of strings (each non-empty when `need` is NonEmpty).
  fn strings(&mut self, key: &str, need: Need) -> Result<(), Problem> {
    let Some(value) = self.node.get(key) else {
      return if need == Need::Optional { Ok(()) } else { Err(self.invalid(key, "a list of strings")) };
    };
    let fits = value.as_array().is_some_and(|list| {
      list.iter().all(|item| item.as_str().is_some_and(|text| need != Need::NonEmpty || !text.is_empty()))
    });
    if !fits {
      let wanted = if need == Need::NonEmpty { "a list of non-empty strings" } else { "a list of strings" };
      return Err(self.invalid(key, wanted));
    }
    self.out.insert(key.to_owned(), value.clone());
    Ok(())
  }

  /// A provide node's layer names: at least one, each non-empty.
  fn layers(&mut self) -> Result<Value, Problem> {
    match self.node.get("layers") {
      Some(Value::Array(list))
        if !list.is_empty() && list.iter().all(|v| v.as_str().is_some_and(|s| !s.is_empty())) =>
      {
        Ok(Value::Array(list.clone()))
      }
      _ => Err(self.invalid("layers", "a list of at least one non-empty layer name")),
    }
  }

  fn one_of(&mut self, key: &str, options: &[&str], need: Need) -> Result<(), Problem> {
    match self.node.get(key) {
      None if need == Need::Optional => Ok(()),
      Some(Value::String(text)) if options.contains(&text.as_str()) => {
        self.out.insert(key.to_owned(), Value::String(text.clone()));
        Ok(())
      }
      _ => {
        let listed: Vec<String> = options.iter().map(|o| format!("\"{o}\"")).collect();
        Err(self.invalid(key, &format!("one of {}", listed.join(", "))))
      }
    }
  }

  /// An optional number.
  fn number(&mut self, key: &str, rule: Num) -> Result<(), Problem> {
    if self.node.contains_key(key) { self.number_required(key, rule) } else { Ok(()) }
  }

  fn number_required(&mut self, key: &str, rule: Num) -> Result<(), Problem> {
    match self.node.get(key) {
      Some(Value::Number(n)) if n.as_f64().is_some_and(|n| rule.accepts(n)) => {
        self.out.insert(key.to_owned(), Value::Number(n.clone()));
        Ok(())
      }
      _ => Err(self.invalid(key, rule.wanted())),
    }
  }

  /// An optional object of any values (a tool node's `args`).
  fn record(&mut self, key: &str) -> Result<(), Problem> {
    match self.node.get(key) {
      None => Ok(()),
      Some(value @ Value::Object(_)) => {
        self.out.insert(key.to_owned(), value.clone());
        Ok(())
      }
      Some(_) => Err(self.invalid(key, "an object")),
    }
  }

  /// A list with at least one entry, returned for the caller to check entry by entry.
  fn non_empty_list(&self, key: &str) -> Result<&Vec<Value>, Problem> {
    match self.node.get(key) {
      Some(Value::Array(list)) if !list.is_empty() => Ok(list),
      _ => Err(self.invalid(key, "a list of at least one entry")),
    }
  }

  /// An llm node's model parameters.
  fn params(&mut self) -> Result<(), Problem> {
    let Some(value) = self.node.get("params") else { return Ok(()) };
    let Value::Object(params) = value else { return Err(self.invalid("params", "an object")) };
    let at = format!("{}.params", self.at);
    let mut p = Fields { node: params, at: &at, out: Map::new() };
    p.number("temperature", Num::AtLeastZero)?;
    p.number("topP", Num::Fraction)?;
    p.number("maxTokens", Num::PositiveInt)?;
    p.strings("stopSequences", Need::Optional)?;
    let checked = Value::Object(p.out);
    self.out.insert("params".into(), checked);
    Ok(())
  }
}

/// A node too deep to be given by its path, named by its id when it has one (`node 's64'`).
fn named(value: &Value, what: &str) -> String {
  match value.get("id").and_then(Value::as_str) {
    Some(id) => format!("{what} '{id}'"),
    None => format!("a {what} with no id"),
  }
}

/// A value as a message shows a kind it did not accept.
fn shown(value: Option<&Value>) -> String {
  match value {
    None => "missing".into(),
    Some(Value::String(text)) => format!("'{text}'"),
    Some(other) => kind_of(other).into(),
  }
}

pub(crate) fn kind_of(value: &Value) -> &'static str {
  match value {
    Value::Null => "null",
    Value::Bool(_) => "a boolean",
    Value::Number(_) => "a number",
    Value::String(_) => "a string",
    Value::Array(_) => "an array",
    Value::Object(_) => "an object",
  }
}
