//! The handles of the in-memory subprocess adapter: their ids, kinds, statuses and timestamps, which of them are
//! live, and the rules of every transition. A handle's metadata holds JS values (a step's result, the request's own
//! metadata) and stays with the JS wrapper, which builds it as `shapes.rs` lays it out.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

/// Upstream's `SubprocessStatus`. This adapter moves handles between `running`, `completed`, `failed` and
/// `stopped` only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SubprocessStatus {
  Starting,
  Running,
  Paused,
  Completed,
  Failed,
  Stopped,
  Stale,
}

impl SubprocessStatus {
  pub fn as_str(self) -> &'static str {
    match self {
      Self::Starting => "starting",
      Self::Running => "running",
      Self::Paused => "paused",
      Self::Completed => "completed",
      Self::Failed => "failed",
      Self::Stopped => "stopped",
      Self::Stale => "stale",
    }
  }

  /// Upstream's `isTerminalStatus`: a handle in one of these has ended and will not change by itself.
  pub fn is_terminal(self) -> bool {
    matches!(self, Self::Completed | Self::Failed | Self::Stopped | Self::Stale)
  }

  /// The status a JS handle shows, if it is one of upstream's.
  pub fn parse(text: &str) -> Option<Self> {
    [Self::Starting, Self::Running, Self::Paused, Self::Completed, Self::Failed, Self::Stopped, Self::Stale]
      .into_iter()
      .find(|status| status.as_str() == text)
  }
}

/// What a handle runs: a step request (`kind: 'step'`) or a process request (anything else, as upstream reads it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HandleKind {
  Step,
  Process,
}

/// A handle without its metadata: upstream's `SubprocessHandle` fields in its order, as JS shows them (the kind is
/// the runtime's own). Timestamps are JS ISO strings (`toISOString`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HandleRecord {
  pub id: String,
  pub status: SubprocessStatus,
  pub started_at: String,
  pub updated_at: String,
  #[serde(skip)]
  pub kind: HandleKind,
}

impl HandleRecord {
  /// A handle known from a persisted manifest (always a step's): shown as running, since its manifest outlived its
  /// run.
  pub fn from_manifest(id: &str, started_at: &str, now: &str) -> Self {
    Self {
      id: id.to_owned(),
      status: SubprocessStatus::Running,
      started_at: started_at.to_owned(),
      updated_at: now.to_owned(),
      kind: HandleKind::Step,
    }
  }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
  Completed,
  Failed,
}

/// Every id handed out starts with this, as upstream's do.
pub const HANDLE_ID_PREFIX: &str = "subprocess-";

/// The handles one adapter has seen. Handles are never forgotten (as upstream); only the live set shrinks.
#[derive(Debug, Default)]
pub struct SubprocessRegistry {
  handles: HashMap<String, HandleRecord>,
  live: LiveSet,
}

impl SubprocessRegistry {
  pub fn new() -> Self {
    Self::default()
  }

  /// A new running, live handle with a fresh id.
  pub fn spawn(&mut self, kind: HandleKind, now: &str) -> HandleRecord {
    let id = format!("{HANDLE_ID_PREFIX}{}", uuid::Uuid::new_v4());
    let record = HandleRecord {
      id: id.clone(),
      status: SubprocessStatus::Running,
      started_at: now.to_owned(),
      updated_at: now.to_owned(),
      kind,
    };
    self.live.insert(&id);
    self.handles.insert(id, record.clone());
    record
  }

  pub fn get(&self, id: &str) -> Option<&HandleRecord> {
    self.handles.get(id)
  }

  /// Forgets a handle whose spawn failed after it was made (its metadata could not be built): it never existed.
  pub fn abandon(&mut self, id: &str) {
    self.live.remove(id);
    self.handles.remove(id);
  }

  /// Whether a known handle has ended.
  pub fn has_ended(&self, id: &str) -> bool {
    self.handles.get(id).is_some_and(|record| record.status.is_terminal())
  }

  /// A run ended. Success is recorded only while the handle still runs, so a stop is not undone by a late result;
  /// a failure is recorded whatever the status, as upstream records it. `None` when nothing changed.
  pub fn settle(&mut self, id: &str, outcome: Outcome, now: &str) -> Option<HandleRecord> {
    let status = self.handles.get(id)?.status;
    match outcome {
      Outcome::Completed if status != SubprocessStatus::Running => None,
      Outcome::Completed => self.leave(id, SubprocessStatus::Completed, now),
      Outcome::Failed => self.leave(id, SubprocessStatus::Failed, now),
    }
  }

  /// Stops a known handle, whatever its status; `None` when the id is unknown.
  pub fn stop(&mut self, id: &str, now: &str) -> Option<HandleRecord> {
    self.leave(id, SubprocessStatus::Stopped, now)
  }

  /// Takes in a handle from a manifest as live and running, replacing whatever this registry knew of it. A handle
  /// already live keeps its place in the live order.
  pub fn reattach(&mut self, id: &str, started_at: &str, now: &str) -> HandleRecord {
    let record = HandleRecord::from_manifest(id, started_at, now);
    self.live.insert(id);
    self.handles.insert(id.to_owned(), record.clone());
    record
  }

  pub fn is_alive(&self, id: &str) -> bool {
    self.live.contains(id)
  }

  /// The live handles, in the order they became live.
  pub fn live(&self) -> Vec<&HandleRecord> {
    self.live.ids().filter_map(|id| self.handles.get(id)).collect()
  }

  /// Ends a handle's life with `status`.
  fn leave(&mut self, id: &str, status: SubprocessStatus, now: &str) -> Option<HandleRecord> {
    let record = self.handles.get_mut(id)?;
    self.live.remove(id);
    record.status = status;
    now.clone_into(&mut record.updated_at);
    Some(record.clone())
  }
}

/// Upstream's `Set` of live ids: ordered by insertion, and adding a member again keeps its place.
#[derive(Debug, Default)]
struct LiveSet {
  order: BTreeMap<u64, String>,
  position: HashMap<String, u64>,
  next: u64,
}

impl LiveSet {
  fn insert(&mut self, id: &str) {
    if self.position.contains_key(id) {
      return;
    }
    self.position.insert(id.to_owned(), self.next);
    self.order.insert(self.next, id.to_owned());
    self.next += 1;
  }

  fn remove(&mut self, id: &str) {
    if let Some(at) = self.position.remove(id) {
      self.order.remove(&at);
    }
  }

  fn contains(&self, id: &str) -> bool {
    self.position.contains_key(id)
  }

  fn ids(&self) -> impl Iterator<Item = &str> {
    self.order.values().map(String::as_str)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  const T0: &str = "2026-01-01T00:00:00.000Z";
  const T1: &str = "2026-01-01T00:00:01.000Z";

  fn live_ids(registry: &SubprocessRegistry) -> Vec<&str> {
    registry.live().into_iter().map(|r| r.id.as_str()).collect()
  }

  #[test]
  fn spawn_hands_out_fresh_running_live_handles() {
    let mut registry = SubprocessRegistry::new();
    let a = registry.spawn(HandleKind::Step, T0);
    let b = registry.spawn(HandleKind::Step, T0);
    assert_ne!(a.id, b.id);
    // `subprocess-` and a v4 UUID, as `crypto.randomUUID()` prints one.
    let uuid = a.id.strip_prefix(HANDLE_ID_PREFIX).unwrap();
    assert_eq!(uuid.len(), 36);
    assert_eq!(uuid.as_bytes()[14], b'4');
    assert_eq!((a.status, a.started_at.as_str(), a.updated_at.as_str()), (SubprocessStatus::Running, T0, T0));
    assert_eq!(registry.get(&a.id), Some(&a));
    assert!(registry.is_alive(&a.id));
    assert_eq!(live_ids(&registry), [a.id.as_str(), b.id.as_str()]);
  }

  #[test]
  fn a_run_that_ends_leaves_the_live_set() {
    let mut registry = SubprocessRegistry::new();
    let done = registry.spawn(HandleKind::Step, T0);
    let broken = registry.spawn(HandleKind::Step, T0);
    let completed = registry.settle(&done.id, Outcome::Completed, T1).unwrap();
    assert_eq!(
      (completed.status, completed.started_at.as_str(), completed.updated_at.as_str()),
      (SubprocessStatus::Completed, T0, T1)
    );
    assert_eq!(registry.settle(&broken.id, Outcome::Failed, T1).unwrap().status, SubprocessStatus::Failed);
    assert!(live_ids(&registry).is_empty());
    assert!(!registry.is_alive(&done.id));
    assert_eq!(registry.get(&done.id).unwrap().status, SubprocessStatus::Completed);
  }

  #[test]
  fn a_late_result_does_not_undo_a_stop_but_a_late_failure_is_recorded() {
    let mut registry = SubprocessRegistry::new();
    let a = registry.spawn(HandleKind::Step, T0);
    assert_eq!(registry.stop(&a.id, T1).unwrap().status, SubprocessStatus::Stopped);
    assert_eq!(registry.settle(&a.id, Outcome::Completed, T1), None);
    assert_eq!(registry.get(&a.id).unwrap().status, SubprocessStatus::Stopped);
    // As upstream: its failure branch does not look at the status.
    assert_eq!(registry.settle(&a.id, Outcome::Failed, T1).unwrap().status, SubprocessStatus::Failed);
  }

  #[test]
  fn stop_works_on_any_known_handle_and_reports_unknown_ones() {
    let mut registry = SubprocessRegistry::new();
    let a = registry.spawn(HandleKind::Step, T0);
    registry.settle(&a.id, Outcome::Completed, T0);
    assert_eq!(registry.stop(&a.id, T1).unwrap().status, SubprocessStatus::Stopped);
    assert_eq!(registry.stop("subprocess-unknown", T1), None);
    assert_eq!(registry.settle("subprocess-unknown", Outcome::Failed, T1), None);
  }

  #[test]
  fn reattach_makes_a_running_live_handle_and_keeps_live_order() {
    let mut registry = SubprocessRegistry::new();
    let a = registry.spawn(HandleKind::Step, T0);
    let b = registry.spawn(HandleKind::Step, T0);
    let old = registry.reattach("subprocess-old", "2025-12-31T00:00:00.000Z", T1);
    assert_eq!(old, HandleRecord::from_manifest("subprocess-old", "2025-12-31T00:00:00.000Z", T1));
    assert!(registry.is_alive("subprocess-old"));
    // Reattaching a live handle again keeps its place, as re-adding to a JS Set does.
    registry.reattach(&a.id, T0, T1);
    assert_eq!(live_ids(&registry), [a.id.as_str(), b.id.as_str(), "subprocess-old"]);
    // A stopped handle comes back to life, at the end of the live order.
    registry.stop(&a.id, T1);
    registry.reattach(&a.id, T0, T1);
    assert_eq!(live_ids(&registry), [b.id.as_str(), "subprocess-old", a.id.as_str()]);
    assert_eq!(registry.get(&a.id).unwrap().status, SubprocessStatus::Running);
  }

  #[test]
  fn statuses_print_as_upstream_spells_them() {
    use SubprocessStatus::*;
    let names: Vec<_> =
      [Starting, Running, Paused, Completed, Failed, Stopped, Stale].map(SubprocessStatus::as_str).into();
    assert_eq!(names, ["starting", "running", "paused", "completed", "failed", "stopped", "stale"]);
  }

  #[test]
  fn the_ended_statuses_are_upstreams_terminal_ones() {
    use SubprocessStatus::*;
    let ended: Vec<_> = [Starting, Running, Paused, Completed, Failed, Stopped, Stale]
      .into_iter()
      .filter(|status| status.is_terminal())
      .map(SubprocessStatus::as_str)
      .collect();
    assert_eq!(ended, ["completed", "failed", "stopped", "stale"]);
    assert_eq!(SubprocessStatus::parse("stale"), Some(Stale));
    assert_eq!(SubprocessStatus::parse("Completed"), None);
  }

  #[test]
  fn a_handle_shows_upstreams_fields_in_its_order() {
    let mut registry = SubprocessRegistry::new();
    let a = registry.spawn(HandleKind::Process, T0);
    let shown = serde_json::to_string(&a).unwrap();
    assert_eq!(shown, format!(r#"{{"id":"{}","status":"running","startedAt":"{T0}","updatedAt":"{T0}"}}"#, a.id));
  }

  #[test]
  fn an_abandoned_handle_is_forgotten_and_ended_ones_say_so() {
    let mut registry = SubprocessRegistry::new();
    let a = registry.spawn(HandleKind::Step, T0);
    let b = registry.spawn(HandleKind::Step, T0);
    registry.abandon(&a.id);
    assert_eq!(registry.get(&a.id), None);
    assert_eq!(live_ids(&registry), [b.id.as_str()]);
    assert!(!registry.has_ended(&b.id));
    registry.stop(&b.id, T1);
    assert!(registry.has_ended(&b.id));
    assert!(!registry.has_ended("subprocess-unknown"));
  }
}
