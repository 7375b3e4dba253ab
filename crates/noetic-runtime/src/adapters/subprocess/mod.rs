//! The in-memory subprocess adapter (upstream's `createInMemorySubprocessAdapter`, its default `SubprocessAdapter`)
//! as the runtime decides it. Each call answers what JS does next: the handle's new state, the layout of its
//! metadata, which function runs a request, the manifest to write or clear and whether waiters are woken. JS
//! (`js/subprocess.cjs`) holds the JS values, calls the user's functions and storage, and builds the objects.

mod registry;
mod shapes;

use std::collections::HashSet;

use serde::Serialize;

pub use self::registry::{HANDLE_ID_PREFIX, HandleKind, HandleRecord, Outcome, SubprocessRegistry, SubprocessStatus};
pub use self::shapes::{Layouts, MANIFEST_PREFIX, manifest_key};
use self::shapes::{manifest, step_manifest, storage_warning};
use crate::ConfigError;
use crate::js_layout::Layout;
use crate::js_sketch::Sketch;
use crate::storage::STORAGE_METHODS;

/// The code of the error a harness throws when it cannot replay a step it has not built (`_replay` in
/// `js/harness.cjs`).
pub const STEP_NOT_REGISTERED: &str = "STEP_NOT_REGISTERED";

/// Which function runs a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Runner {
  /// The step request's own `_localExecutor` (a harness's dispatch).
  Executor,
  /// The `stepRunner` option.
  StepRunner,
  /// The harness the adapter was given to, which looks the step up by id.
  Replayer,
  /// A process request: the `run` option when given; without one the run completes at once.
  Run,
  /// Nothing can run the step: the run fails with the error `fails` says.
  Nothing,
}

/// A storage write that must not fail the run: its key, and the warning when it fails.
#[derive(Debug, PartialEq, Serialize)]
pub struct StorageWrite {
  pub key: String,
  pub warning: String,
}

/// The manifest a step leaves in storage: where, the warning when it cannot be written, and its layout.
#[derive(Debug, PartialEq, Serialize)]
pub struct ManifestWrite {
  pub key: String,
  pub warning: String,
  pub layout: Layout,
}

/// `spawn(request)` answered: the handle, its kind (whose layout its metadata has, source: the request), the manifest
/// to write before the run starts, and what runs the request.
#[derive(Debug, PartialEq, Serialize)]
pub struct Spawned {
  pub handle: HandleRecord,
  pub kind: HandleKind,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub manifest: Option<ManifestWrite>,
  pub runs: Runner,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub fails: Option<String>,
}

/// A handle's transition (its run ended, or it was stopped): its new state; the metadata key the run's value goes
/// under (none for a process that completed, whose metadata stays the very object it was); whether it has ended,
/// so its waiters wake; and the manifest to clear, once the handle is saved (a run) or before (a stop).
#[derive(Debug, PartialEq, Serialize)]
pub struct Transition {
  pub handle: HandleRecord,
  pub ended: bool,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub adds: Option<&'static str>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub forget: Option<StorageWrite>,
}

/// `reattach(handleId)` answered: the handle (its metadata laid out as `Layouts::manifest_metadata`, source: the
/// manifest) and, when someone here can run the step, how the replay runs (its request laid out as
/// `Layouts::replay_request`).
#[derive(Debug, PartialEq, Serialize)]
pub struct Reattached {
  pub handle: HandleRecord,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub runs: Option<Runner>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub fails: Option<String>,
}

/// `listLive()`'s first half: this adapter's live handles, and the prefix of the manifests to read (none without
/// storage).
#[derive(Debug, PartialEq, Serialize)]
pub struct Listing {
  pub live: Vec<String>,
  #[serde(skip_serializing_if = "Option::is_none")]
  pub prefix: Option<&'static str>,
}

/// `listLive()`'s second half: a handle of a manifest read (`at`, its position among them) that was not live here;
/// its metadata is laid out as `Layouts::manifest_metadata` (source: the manifest).
#[derive(Debug, PartialEq, Serialize)]
pub struct Found {
  pub at: usize,
  pub handle: HandleRecord,
}

/// One in-memory adapter: its handles, and whether it has storage (then its steps leave manifests that other
/// adapters on the same storage list and reattach).
#[derive(Debug)]
pub struct InMemorySubprocess {
  registry: SubprocessRegistry,
  durable: bool,
}

impl InMemorySubprocess {
  /// `createInMemorySubprocessAdapter(options)`, the options checked.
  pub fn new(options: Sketch) -> Result<Self, ConfigError> {
    check_options(options)?;
    Ok(Self { registry: SubprocessRegistry::new(), durable: !options.field("storage").is_nullish() })
  }

  /// Without storage nothing of a handle outlives its run, and nobody but its caller can observe it: a harness runs
  /// steps in place rather than through such an adapter (DECISIONS M21).
  pub fn runs_inline(&self) -> bool {
    !self.durable
  }

  /// `spawn(request)`. `facts` is a sketch one level deep of `{ request, kind, stepId, executor, stepRunner,
  /// replayer }`: the request, the fields of it read here, and the functions that could run it. Anything but a step
  /// request is a process request, as upstream reads `kind`.
  pub fn spawn(&mut self, facts: Sketch, now: &str) -> Result<Spawned, ConfigError> {
    let request = facts.field("request");
    if !request.is_object() {
      return Err(ConfigError::new(
        "INVALID_SUBPROCESS_REQUEST",
        format!("subprocess.spawn(request): the request is {}; expected an object.", request.described()),
        "Pass { kind: 'step', stepId, serializedInput, executionId, overrides } or { command, args?, cwd? }.",
      ));
    }
    let kind = if facts.field("kind").as_str() == Some("step") { HandleKind::Step } else { HandleKind::Process };
    let handle = self.registry.spawn(kind, now);
    let runs = if kind == HandleKind::Step { step_runner(facts) } else { Runner::Run };
    let manifest = (self.durable && kind == HandleKind::Step).then(|| ManifestWrite {
      key: manifest_key(&handle.id),
      warning: storage_warning("persist", &handle.id),
      layout: manifest(&handle.id, &handle.started_at),
    });
    let fails = (runs == Runner::Nothing).then(|| no_runner(facts.field("stepId")));
    Ok(Spawned { handle, kind, manifest, runs, fails })
  }

  /// Forgets a handle whose spawn failed after `spawn` answered (its metadata could not be built).
  pub fn abandon(&mut self, id: &str) {
    self.registry.abandon(id);
  }

  /// A run ended: well (`ok`, its value the step's result), or not (its value the serialized error, whose `code`
  /// is given). A replay whose step is not registered here keeps its manifest, so that another process or a later
  /// reattach can run it. `None` when nothing changed (a result after a stop).
  pub fn settle(&mut self, id: &str, ok: bool, code: Option<&str>, now: &str) -> Option<Transition> {
    let handle = self.registry.settle(id, if ok { Outcome::Completed } else { Outcome::Failed }, now)?;
    let adds = match (ok, handle.kind) {
      (true, HandleKind::Step) => Some("result"),
      (true, HandleKind::Process) => None,
      (false, _) => Some("error"),
    };
    Some(self.transition(handle, adds, !ok && code == Some(STEP_NOT_REGISTERED)))
  }

  /// `stop(handleId, reason)` of a known handle, whatever its status; its metadata takes the reason.
  pub fn stop(&mut self, id: &str, now: &str) -> Option<Transition> {
    let handle = self.registry.stop(id, now)?;
    Some(self.transition(handle, Some("stopReason"), false))
  }

  /// Once a handle has ended its manifest goes, or every later adapter would list it as live.
  fn transition(&self, handle: HandleRecord, adds: Option<&'static str>, keep_manifest: bool) -> Transition {
    let forget = (self.durable && !keep_manifest)
      .then(|| StorageWrite { key: manifest_key(&handle.id), warning: storage_warning("clear", &handle.id) });
    Transition { ended: handle.status.is_terminal(), handle, adds, forget }
  }

  /// What `pause` and `resume` (`what`) answer of a known handle.
  pub fn unsupported(what: &str) -> String {
    format!("In-memory subprocess adapter does not support {what}.")
  }

  /// Where `reattach(handleId)` reads the handle's manifest; nowhere without storage.
  pub fn manifest_key(&self, handle_id: Sketch) -> Option<String> {
    self.durable.then(|| manifest_key(&handle_id.js_string()))
  }

  /// `reattach` with what was read under the handle's key. `facts` is a sketch two levels deep of `{ manifest,
  /// stepRunner, replayer }`. `None` when it is not a step manifest. The step is replayed from the manifest's input
  /// when someone here can run it (the `stepRunner` option, else a harness); else it is the caller's to run.
  pub fn reattach(&mut self, facts: Sketch, now: &str) -> Option<Reattached> {
    let manifest = facts.field("manifest");
    let (id, started_at) = step_manifest(manifest)?;
    let handle = self.registry.reattach(id, started_at, now);
    let replays = facts.field("stepRunner").is_truthy() || facts.field("replayer").is_truthy();
    let runs = replays.then(|| step_runner(facts));
    let fails = (runs == Some(Runner::Nothing)).then(|| no_runner(manifest.field("stepId")));
    Some(Reattached { handle, runs, fails })
  }

  /// This adapter's live handles, in the order they became live, then where the earlier adapters' manifests are.
  pub fn listing(&self) -> Listing {
    let live = self.registry.live().into_iter().map(|record| record.id.clone()).collect();
    Listing { live, prefix: self.durable.then_some(MANIFEST_PREFIX) }
  }

  /// The handles of `manifests` (a sketch two levels deep of the values read under the prefix, in the order of
  /// their keys) that are not among `live`: each once, the first manifest of an id winning. Listing takes no handle
  /// in.
  pub fn listed(&self, manifests: Sketch, live: &[String], now: &str) -> Vec<Found> {
    let mut seen: HashSet<String> = live.iter().cloned().collect();
    (manifests.as_array().unwrap_or_default().into_iter().enumerate())
      .filter_map(|(at, value)| {
        let (id, started_at) = step_manifest(value)?;
        seen.insert(id.to_owned()).then(|| Found { at, handle: HandleRecord::from_manifest(id, started_at, now) })
      })
      .collect()
  }

  pub fn is_alive(&self, id: &str) -> bool {
    self.registry.is_alive(id)
  }

  /// Whether a known handle has ended (its waiters need not wait).
  pub fn has_ended(&self, id: &str) -> bool {
    self.registry.has_ended(id)
  }
}

/// Which function runs a step: its own executor, else the `stepRunner` option when one is given, else the harness
/// the adapter was given to; `Nothing` when the one chosen is not there.
fn step_runner(facts: Sketch) -> Runner {
  if facts.field("executor").is_truthy() {
    return Runner::Executor;
  }
  let given = facts.field("stepRunner");
  let (runner, which) =
    if given.is_nullish() { (facts.field("replayer"), Runner::Replayer) } else { (given, Runner::StepRunner) };
  if runner.is_truthy() { which } else { Runner::Nothing }
}

fn no_runner(step_id: Sketch) -> String {
  format!(
    "In-memory subprocess adapter has no executor for step \"{}\". Provide a stepRunner option or dispatch via AgentHarness.",
    step_id.js_string()
  )
}

/// `createInMemorySubprocessAdapter(options)`: an object whose `run`, `stepRunner` and `metadataInjector` are
/// functions when given, and whose `storage`, when given, has a StorageAdapter's methods.
pub fn check_options(options: Sketch) -> Result<(), ConfigError> {
  let fail = |message: String| {
    Err(ConfigError::new(
      "INVALID_SUBPROCESS_OPTIONS",
      message,
      "Pass { run?, stepRunner?, metadataInjector?, storage? }: functions, and a StorageAdapter (get, set, delete, list).",
    ))
  };
  if !options.is_object() {
    return fail(format!("createInMemorySubprocessAdapter options are {}; expected an object.", options.described()));
  }
  for name in ["run", "stepRunner", "metadataInjector"] {
    let value = options.field(name);
    if !value.is_nullish() && !value.is_function() {
      return fail(format!("createInMemorySubprocessAdapter {name} is {}; expected a function.", value.described()));
    }
  }
  let storage = options.field("storage");
  let missing = if storage.is_nullish() { Vec::new() } else { storage.lacking(&STORAGE_METHODS) };
  if missing.is_empty() {
    return Ok(());
  }
  let s = if missing.len() > 1 { "s" } else { "" };
  fail(format!("createInMemorySubprocessAdapter storage has no {} method{s}.", missing.join(", ")))
}

#[cfg(test)]
mod tests;
