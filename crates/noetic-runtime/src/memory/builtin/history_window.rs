//! `historyWindow()`: caps the history the model sees to the newest `maxItems` items, as a read-side projection
//! (the log keeps everything).
//!
//! Over the cap, the window starts at the last `maxItems`, reaches further back until it holds a user and an
//! assistant message (never beyond `4 × maxItems` items), takes a system message from the head of the history
//! along when the window left it out, and drops calls and outputs whose partner it left out. Only the kept items
//! and the first four are read: whether a user or assistant message lies further back is asked of the source,
//! which the log answers from positions it tracks.

use std::hash::Hash;

use crate::error::ConfigError;
use crate::items::{Item, Pairing, strip_unresolved_mask};
use crate::js_sketch::Sketch;
use crate::memory::history::{History, Projected};
use crate::memory::{HookKind, HookSet, LayerSpec, Scope};

pub const ID: &str = "history-window";
pub const NAME: &str = "History Window";
/// After the layers that recall (PROCEDURAL + 25).
pub const SLOT: f64 = 275.0;
pub const DEFAULT_MAX_ITEMS: usize = 40;
const MIN_MAX_ITEMS: f64 = 2.0;
const MAX_MAX_ITEMS: f64 = 1e4;
/// How far past the cap the search for a user / assistant message may grow the window, in multiples of the cap:
/// a burst of tool calls must not pull the whole history back in.
pub const MAX_EXPANSION: usize = 4;
/// How many leading items may hold the system message kept at the head.
pub const ANCHOR_SCAN: usize = 4;

/// What the window needs to know of an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
  User,
  Assistant,
  System,
  Other,
}

impl Role {
  /// A `message` item's role; anything else is `Other`.
  pub fn of(item: &Item) -> Self {
    match item.role() {
      Some("user") => Role::User,
      Some("assistant") => Role::Assistant,
      Some("system") => Role::System,
      _ => Role::Other,
    }
  }
}

/// A history the window is cut from.
pub trait WindowSource {
  type Key: Copy + Eq + Hash;
  /// How many items the history has.
  fn count(&self) -> usize;
  fn role(&self, i: usize) -> Role;
  fn link(&self, i: usize) -> Pairing<Self::Key>;
  /// Whether a message of `role` (user or assistant) lies before index `end`.
  fn any_before(&self, role: Role, end: usize) -> bool;
}

/// `maxItems` as given, checked: an integer in [2, 10000].
pub fn validate_max_items(value: Option<f64>, shown: &str) -> Result<usize, ConfigError> {
  let Some(value) = value else { return Ok(DEFAULT_MAX_ITEMS) };
  if value.fract() != 0.0 || !(MIN_MAX_ITEMS..=MAX_MAX_ITEMS).contains(&value) {
    return Err(ConfigError::new(
      "INVALID_HISTORY_WINDOW_MAX_ITEMS",
      format!("historyWindow: maxItems must be an integer in [2, 10000], got {shown}"),
      "Pass a cap such as { maxItems: 40 }, or leave the layer out to keep the history whole.",
    ));
  }
  Ok(value as usize)
}

/// `historyWindow(config)`'s `maxItems` from a sketch of the config, checked; the message names it as `String()`
/// prints it (a function as its description: its source never crosses).
pub fn max_items_from(given: Sketch<'_>) -> Result<usize, ConfigError> {
  let value = given.field("maxItems");
  if value.is_nullish() {
    return Ok(DEFAULT_MAX_ITEMS);
  }
  validate_max_items(Some(value.as_number().unwrap_or(f64::NAN)), &value.js_string())
}

/// The layer as the runtime sees it: an execution-scoped init (state `null`) and projectHistory.
pub fn layer_spec() -> LayerSpec {
  let mut spec = LayerSpec::new(ID, SLOT, Scope::Execution);
  spec.hooks = [HookKind::Init, HookKind::ProjectHistory].into_iter().collect::<HookSet>();
  spec
}

/// The indices of `source` the window keeps, in order; `None` when the history is within the cap and passes
/// unchanged.
pub fn window<S: WindowSource>(source: &S, max_items: usize) -> Option<Vec<usize>> {
  let len = source.count();
  if len <= max_items {
    return None;
  }
  let start = window_start(source, len - max_items, len.saturating_sub(max_items * MAX_EXPANSION));
  let anchor = (0..start.min(ANCHOR_SCAN)).find(|&i| source.role(i) == Role::System);
  let picked: Vec<usize> = anchor.into_iter().chain(start..len).collect();
  let links: Vec<_> = picked.iter().map(|&i| source.link(i)).collect();
  let keep = strip_unresolved_mask(&links);
  Some(picked.into_iter().zip(keep).filter_map(|(i, keep)| keep.then_some(i)).collect())
}

/// Where the window starts: `slice_start`, or earlier to take in a missing user or assistant message, but never
/// before `floor`.
fn window_start<S: WindowSource>(source: &S, slice_start: usize, floor: usize) -> usize {
  let mut need_user = true;
  let mut need_assistant = true;
  for i in (slice_start..source.count()).rev() {
    match source.role(i) {
      Role::User => need_user = false,
      Role::Assistant => need_assistant = false,
      _ => {}
    }
    if !need_user && !need_assistant {
      return slice_start;
    }
  }
  let mut start = slice_start;
  for i in (floor..slice_start).rev() {
    if !need_user && !need_assistant {
      return start;
    }
    match source.role(i) {
      Role::User if need_user => (need_user, start) = (false, i),
      Role::Assistant if need_assistant => (need_assistant, start) = (false, i),
      _ => {}
    }
  }
  // A role still missing that lies before the floor would pull the start past it: the floor holds.
  if (need_user && source.any_before(Role::User, floor))
    || (need_assistant && source.any_before(Role::Assistant, floor))
  {
    return floor;
  }
  start
}

impl<'a> WindowSource for History<'a> {
  type Key = &'a str;

  fn count(&self) -> usize {
    self.len()
  }

  fn role(&self, i: usize) -> Role {
    self.item(i).map_or(Role::Other, |item| Role::of(item))
  }

  fn link(&self, i: usize) -> Pairing<&'a str> {
    self.item(i).map_or(Pairing::Unlinked, |item| item.link())
  }

  fn any_before(&self, role: Role, end: usize) -> bool {
    let first = match (self, role) {
      (History::Log(log), Role::User) => log.first_user_message(),
      (History::Log(log), Role::Assistant) => log.first_assistant_message(),
      _ => return (0..end).any(|i| self.role(i) == role),
    };
    first.is_some_and(|pos| pos < end)
  }
}

/// The layer's projection of `history`: the kept entries, or `None` when it passes unchanged.
pub fn project(history: &History<'_>, max_items: usize) -> Option<Vec<Projected>> {
  window(history, max_items).map(|kept| kept.into_iter().map(|i| history.entry(i)).collect())
}

/// A history described by JS for a direct call of the layer's hook: the items from `from` on, the first ones, and
/// whether a user / assistant message lies before `from`.
#[derive(Debug, Clone)]
pub struct Described {
  pub len: usize,
  pub from: usize,
  pub tail: Vec<(Role, Pairing<String>)>,
  pub head: Vec<Role>,
  pub user_before: bool,
  pub assistant_before: bool,
}

impl<'s> WindowSource for &'s Described {
  type Key = &'s str;

  fn count(&self) -> usize {
    self.len
  }

  fn role(&self, i: usize) -> Role {
    match i.checked_sub(self.from) {
      Some(at) => self.tail.get(at).map_or(Role::Other, |(role, _)| *role),
      None => self.head.get(i).copied().unwrap_or(Role::Other),
    }
  }

  fn link(&self, i: usize) -> Pairing<&'s str> {
    match i.checked_sub(self.from).and_then(|at| self.tail.get(at)) {
      Some((_, Pairing::Call(id))) => Pairing::Call(id),
      Some((_, Pairing::Output(id))) => Pairing::Output(id),
      _ => Pairing::Unlinked,
    }
  }

  fn any_before(&self, role: Role, end: usize) -> bool {
    let before = match role {
      Role::User => self.user_before,
      Role::Assistant => self.assistant_before,
      _ => false,
    };
    before || (self.from..end).any(|i| self.role(i) == role)
  }
}

#[cfg(test)]
mod tests {
  use std::sync::Arc;

  use serde_json::json;

  use super::*;
  use crate::items::ItemLog;

  fn message(role: &str, id: &str) -> Arc<Item> {
    Arc::new(Item::from_value(json!({"type": "message", "role": role, "id": id, "content": []})).expect("item"))
  }

  fn call(id: &str) -> Arc<Item> {
    Arc::new(
      Item::from_value(json!({"type": "function_call", "callId": id, "name": "t", "arguments": "{}"})).expect("item"),
    )
  }

  fn output(id: &str) -> Arc<Item> {
    Arc::new(Item::from_value(json!({"type": "function_call_output", "callId": id, "output": "ok"})).expect("item"))
  }

  fn log_of(items: &[Arc<Item>]) -> ItemLog {
    let mut log = ItemLog::new();
    for item in items {
      log.push(Arc::clone(item));
    }
    log
  }

  /// The spec's algorithm (§20.3) written plainly, scanning the whole history: what the window must agree with.
  fn reference(items: &[Arc<Item>], max: usize) -> Option<Vec<usize>> {
    let n = items.len();
    if n <= max {
      return None;
    }
    let role = |i: usize| Role::of(&items[i]);
    let mut start = n - max;
    let inside = |r: Role| (start..n).any(|i| role(i) == r);
    let (mut need_user, mut need_assistant) = (!inside(Role::User), !inside(Role::Assistant));
    if need_user || need_assistant {
      for i in (0..start).rev() {
        if !need_user && !need_assistant {
          break;
        }
        if need_user && role(i) == Role::User {
          need_user = false;
          start = i;
        } else if need_assistant && role(i) == Role::Assistant {
          need_assistant = false;
          start = i;
        }
      }
    }
    start = start.max(n.saturating_sub(4 * max));
    let anchor = (0..start.min(4)).find(|&i| role(i) == Role::System);
    let picked: Vec<usize> = anchor.into_iter().chain(start..n).collect();
    let links: Vec<_> = picked.iter().map(|&i| items[i].link()).collect();
    let keep = strip_unresolved_mask(&links);
    Some(picked.into_iter().zip(keep).filter_map(|(i, k)| k.then_some(i)).collect())
  }

  fn ids(items: &[Arc<Item>], kept: &[usize]) -> Vec<String> {
    kept.iter().map(|&i| items[i].fields().get("id").and_then(|v| v.as_str()).unwrap_or("?").to_owned()).collect()
  }

  #[test]
  fn keeps_the_anchor_and_whole_tool_pairs() {
    // §20.3: maxItems 3 over [sys, u1, a1, u2, fc k, fo k, fc j, fo j, dev] gives everything from a1 on, after sys.
    let items = vec![
      message("system", "sys"),
      message("user", "u1"),
      message("assistant", "a1"),
      message("user", "u2"),
      call("k"),
      output("k"),
      call("j"),
      output("j"),
      message("developer", "dev"),
    ];
    let log = log_of(&items);
    let kept = window(&History::Log(&log), 3).expect("over the cap");
    assert_eq!(kept, vec![0, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(ids(&items, &kept)[..3], ["sys", "a1", "u2"]);
  }

  #[test]
  fn a_burst_of_orphan_calls_projects_nothing() {
    // §20.3: maxItems 2, one user message then 29 calls with no outputs: the window is capped at 8 items, all
    // orphans, so nothing is left.
    let mut items = vec![message("user", "u")];
    items.extend((0..29).map(|i| call(&format!("c{i}"))));
    let log = log_of(&items);
    assert_eq!(window(&History::Log(&log), 2), Some(vec![]));
  }

  #[test]
  fn within_the_cap_the_history_passes_unchanged() {
    let items = vec![message("user", "u"), message("assistant", "a")];
    let log = log_of(&items);
    assert_eq!(window(&History::Log(&log), 2), None);
    assert_eq!(window(&History::Log(&log), 40), None);
  }

  #[test]
  fn validates_max_items() {
    assert_eq!(validate_max_items(None, ""), Ok(40));
    assert_eq!(validate_max_items(Some(2.0), "2"), Ok(2));
    assert_eq!(validate_max_items(Some(1e4), "10000"), Ok(10_000));
    for bad in [1.0, 0.0, -1.0, 3.5, 1e4 + 1.0, f64::NAN, f64::INFINITY] {
      let error = validate_max_items(Some(bad), "x").expect_err("rejected");
      assert_eq!(error.code, "INVALID_HISTORY_WINDOW_MAX_ITEMS");
      assert!(error.message.ends_with("got x"), "{}", error.message);
    }
  }

  /// Every source (the log with its tracked positions, an earlier stage's list, a JS description) cuts the same
  /// window as the plain algorithm, over many generated histories.
  #[test]
  fn agrees_with_the_plain_algorithm_everywhere() {
    let mut seed = 0x2545_f491_u64;
    let mut next = |bound: u64| {
      seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
      (seed >> 33) % bound
    };
    for case in 0..600 {
      let len = next(60) as usize;
      let max = 2 + next(6) as usize;
      let items: Vec<Arc<Item>> = (0..len)
        .map(|i| match next(if case % 3 == 0 { 10 } else { 6 }) {
          0 => message("user", &format!("u{i}")),
          1 => message("assistant", &format!("a{i}")),
          2 if i < 5 => message("system", &format!("s{i}")),
          3 => call(&format!("k{}", next(8))),
          4 => output(&format!("k{}", next(8))),
          _ => message("developer", &format!("d{i}")),
        })
        .collect();
      let expected = reference(&items, max);
      let log = log_of(&items);
      assert_eq!(window(&History::Log(&log), max), expected, "log, case {case}");

      let entries: Vec<Projected> = items.iter().cloned().map(Projected::Made).collect();
      let empty = ItemLog::new();
      let list = History::List { entries: &entries, log: &empty };
      assert_eq!(window(&list, max), expected, "list, case {case}");

      let from = len.saturating_sub(4 * max);
      let described = Described {
        len,
        from,
        tail: items[from..]
          .iter()
          .map(|item| {
            let link = match item.link() {
              Pairing::Call(id) => Pairing::Call(id.to_owned()),
              Pairing::Output(id) => Pairing::Output(id.to_owned()),
              Pairing::Unlinked => Pairing::Unlinked,
            };
            (Role::of(item), link)
          })
          .collect(),
        head: items[..from.min(4)].iter().map(|item| Role::of(item)).collect(),
        user_before: items[..from].iter().any(|item| Role::of(item) == Role::User),
        assistant_before: items[..from].iter().any(|item| Role::of(item) == Role::Assistant),
      };
      assert_eq!(window(&&described, max), expected, "described, case {case}");
    }
  }
}
