//! `fileReference(opts)`: `#path` references in input messages become markdown anchors, the files they name are
//! read through the harness's filesystem and kept in the layer's state, and recall injects them by priority within
//! the budget (spec §20.7). A file that changes, disappears or starts failing is noticed on the next append, which
//! then asks for an immediate re-render of the layer.
//!
//! An append runs in three steps so that the files and the model are asked once each, whoever asks them (the
//! native layer, or the JS face with `ctx.fs` and `ctx.callModel`): [`plan_append`] finds the new references and
//! the reads to make, [`settle_reads`] folds the read outcomes into the state and says which files to score, and
//! [`apply_scores`] sets their priorities.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::ConfigError;
use crate::host::{RerenderRequest, RerenderScope};
use crate::js_sketch::{Sketch, number_sketch};
use crate::memory::{HookKind, HookSet, LayerSpec, Scope};

mod append;
mod reads;
mod recall;
mod references;

pub use self::append::{
  AppendPlan, NewReference, SCORING_INSTRUCTIONS, ScoreAsk, Settled, apply_scores, parse_score, plan_append,
  settle_reads,
};
pub use self::reads::content_hash;
pub use self::recall::recall;
pub use self::references::{anchor, references, with_anchors};
pub const ID: &str = "file-reference";
pub const NAME: &str = "File Reference";
/// Slot.RAG.
pub const DEFAULT_SLOT: f64 = 350.0;
pub const DEFAULT_SCORING_MODEL: &str = "anthropic/claude-haiku-4-5-20251001";
/// 1 MiB, as `stat` reports sizes.
pub const DEFAULT_MAX_FILE_SIZE: f64 = 1_048_576.0;
/// Reading files and scoring new ones cannot fit the 5 s default.
pub const APPEND_TIMEOUT_MS: f64 = 30_000.0;
const CONFIG_ERROR: &str = "INVALID_FILE_REFERENCE_CONFIG";

/// Extensions (and exact file names) read when the config names none.
pub const DEFAULT_ALLOWED_EXTENSIONS: [&str; 44] = [
  ".ts",
  ".tsx",
  ".js",
  ".jsx",
  ".mjs",
  ".cjs",
  ".json",
  ".yaml",
  ".yml",
  ".toml",
  ".md",
  ".mdx",
  ".txt",
  ".csv",
  ".html",
  ".css",
  ".scss",
  ".less",
  ".py",
  ".rb",
  ".go",
  ".rs",
  ".java",
  ".kt",
  ".swift",
  ".c",
  ".cpp",
  ".h",
  ".hpp",
  ".sh",
  ".bash",
  ".zsh",
  ".sql",
  ".graphql",
  ".xml",
  ".svg",
  ".env",
  ".env.local",
  ".env.example",
  ".gitignore",
  ".dockerignore",
  "Dockerfile",
  "Makefile",
  "Taskfile",
];

// ---- config ----

#[derive(Debug, Clone, PartialEq)]
pub struct FileReferenceConfig {
  pub base_dir: String,
  pub slot: f64,
  pub scoring_model: String,
  /// Bytes; `+∞` reads any size.
  pub max_file_size: f64,
  pub follow_symlinks: bool,
  /// Empty: every extension is allowed.
  pub allowed_extensions: Vec<String>,
}

impl FileReferenceConfig {
  pub fn with_base_dir(base_dir: impl Into<String>) -> Self {
    Self {
      base_dir: base_dir.into(),
      slot: DEFAULT_SLOT,
      scoring_model: DEFAULT_SCORING_MODEL.to_owned(),
      max_file_size: DEFAULT_MAX_FILE_SIZE,
      follow_symlinks: false,
      allowed_extensions: DEFAULT_ALLOWED_EXTENSIONS.iter().map(|ext| (*ext).to_owned()).collect(),
    }
  }
}

/// The options from a sketch of what was given (or of settings answered before), checked: upstream checks none,
/// and a wrong kind there fails much later or never (a string `maxFileSize` compares as NaN and lets every size
/// through). `baseDir` defaults to `cwd`, the process's working directory when the factory is called, and a
/// relative one is taken from there (upstream would read it from the root).
pub fn config_from(given: Sketch<'_>, cwd: &str) -> Result<FileReferenceConfig, ConfigError> {
  let field = |key: &str| Some(given.field(key)).filter(|value| !value.is_nullish());
  let base_dir = match field("baseDir") {
    None if !cwd.is_empty() => cwd.to_owned(),
    None => return Err(bad("baseDir", "must be a non-empty path", "undefined".into())),
    Some(dir) => match dir.as_str() {
      Some(dir) if !dir.is_empty() && !dir.starts_with('/') => format!("{cwd}/{dir}"),
      Some(dir) if !dir.is_empty() => dir.to_owned(),
      _ => return Err(bad("baseDir", "must be a non-empty path", dir.described())),
    },
  };
  let mut config = FileReferenceConfig::with_base_dir(base_dir);
  if let Some(value) = field("slot") {
    match value.as_number() {
      Some(slot) if slot.is_finite() => config.slot = slot,
      _ => {
        return Err(ConfigError::new(
          "INVALID_LAYER_SLOT",
          format!("fileReference: slot must be a finite number, got {}", value.described()),
          "Pass a slot such as Slot.RAG, or leave it out.",
        ));
      }
    }
  }
  if let Some(value) = field("scoringModel") {
    match value.as_str() {
      Some(model) if !model.trim().is_empty() => config.scoring_model = model.to_owned(),
      _ => return Err(bad("scoringModel", "must be a model name", value.described())),
    }
  }
  if let Some(value) = field("maxFileSize") {
    match value.as_number() {
      Some(size) if size >= 0.0 => config.max_file_size = size,
      _ => return Err(bad("maxFileSize", "must be a number of bytes, at least 0", value.described())),
    }
  }
  if let Some(value) = field("followSymlinks") {
    config.follow_symlinks =
      value.as_bool().ok_or_else(|| bad("followSymlinks", "must be true or false", value.described()))?;
  }
  if let Some(value) = field("allowedExtensions") {
    let list: Option<Vec<String>> =
      value.as_array().and_then(|list| list.iter().map(|ext| ext.as_str().map(str::to_owned)).collect());
    config.allowed_extensions =
      list.ok_or_else(|| bad("allowedExtensions", "must be a list of extensions such as '.ts'", value.described()))?;
  }
  Ok(config)
}

/// The settings the JS face holds, which [`config_from`] reads back.
pub fn config_json(config: &FileReferenceConfig) -> Value {
  json!({
    "baseDir": config.base_dir,
    "slot": config.slot,
    "scoringModel": config.scoring_model,
    "maxFileSize": number_sketch(config.max_file_size),
    "followSymlinks": config.follow_symlinks,
    "allowedExtensions": config.allowed_extensions,
  })
}

fn bad(key: &str, rule: &str, shown: String) -> ConfigError {
  ConfigError::new(
    CONFIG_ERROR,
    format!("fileReference: {key} {rule}, got {shown}"),
    "Pass baseDir and scoringModel as strings, maxFileSize as bytes, followSymlinks as a boolean and \
     allowedExtensions as a list such as ['.ts', '.md'].",
  )
}

/// The layer as the runtime sees it: thread-scoped, budget auto, onItemAppend given 30 s.
pub fn layer_spec(config: &FileReferenceConfig) -> LayerSpec {
  let mut spec = LayerSpec::new(ID, config.slot, Scope::Thread);
  spec.hooks = [HookKind::Init, HookKind::Recall, HookKind::OnItemAppend].into_iter().collect::<HookSet>();
  spec.timeouts[HookKind::OnItemAppend as usize] = Some(APPEND_TIMEOUT_MS);
  spec
}

/// What every change the layer sees asks for: its own recall, again, before the model is called.
pub fn rerender_request() -> RerenderRequest {
  RerenderRequest { scope: RerenderScope::OnlySelf, timing: "immediate".into() }
}

// ---- state ----

/// One referenced file, as upstream's `TrackedFile`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrackedFile {
  pub absolute_path: String,
  /// The reference as written (`src/a.ts`), also its key in the state.
  pub reference_path: String,
  pub content: Option<String>,
  /// 0 to 100, higher first in recall.
  pub priority: f64,
  /// Upstream's `simpleHash` of the content, `""` for none.
  pub content_hash: String,
  pub deleted: bool,
  pub token_count: f64,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub error: Option<String>,
}

impl TrackedFile {
  /// The content when it is non-empty: upstream reads an empty file as nothing to show or score.
  fn text(&self) -> Option<&str> {
    self.content.as_deref().filter(|text| !text.is_empty())
  }
}

/// `{files: {[referencePath]: TrackedFile}, baseDir}`; the files keep the order they were first referenced in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileRefState {
  #[serde(with = "ordered_files")]
  pub files: Vec<(String, TrackedFile)>,
  pub base_dir: String,
}

impl FileRefState {
  pub fn empty(base_dir: &str) -> Self {
    Self { files: Vec::new(), base_dir: base_dir.to_owned() }
  }

  /// The state a hook was given: `None` (never initialised) is an empty one; a state of the wrong shape is the
  /// hook's error, and the state is kept.
  pub fn from_json(state: Option<&Value>, base_dir: &str) -> Result<Self, String> {
    match state {
      None | Some(Value::Null) => Ok(Self::empty(base_dir)),
      Some(value) => Self::deserialize(value).map_err(|e| format!("file-reference: the state is not usable: {e}")),
    }
  }

  pub fn to_json(&self) -> Value {
    serde_json::to_value(self).unwrap_or(Value::Null)
  }

  pub fn get(&self, reference: &str) -> Option<&TrackedFile> {
    self.files.iter().find(|(key, _)| key == reference).map(|(_, file)| file)
  }
}

/// The tracked files as a JSON object in insertion order (upstream's Map), read back in the same order.
mod ordered_files {
  use serde::de::{MapAccess, Visitor};
  use serde::ser::SerializeMap;
  use serde::{Deserializer, Serializer};

  use super::TrackedFile;

  pub fn serialize<S: Serializer>(files: &[(String, TrackedFile)], serializer: S) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(files.len()))?;
    for (key, file) in files {
      map.serialize_entry(key, file)?;
    }
    map.end()
  }

  pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<(String, TrackedFile)>, D::Error> {
    struct Files;
    impl<'de> Visitor<'de> for Files {
      type Value = Vec<(String, TrackedFile)>;
      fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object of tracked files")
      }
      fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut files = Vec::new();
        while let Some(entry) = access.next_entry::<String, TrackedFile>()? {
          files.push(entry);
        }
        Ok(files)
      }
    }
    deserializer.deserialize_map(Files)
  }
}

/// init: a saved state for the same `baseDir` (its files are read again on the next append), else an empty one.
/// Upstream starts empty every time; a thread that comes back should still see the files it referenced.
pub fn init_state(saved: Option<&Value>, base_dir: &str) -> Value {
  let rehydrated = saved
    .and_then(|saved| FileRefState::deserialize(saved).ok())
    .filter(|state| state.base_dir == base_dir)
    .unwrap_or_else(|| FileRefState::empty(base_dir));
  rehydrated.to_json()
}

#[cfg(test)]
mod tests;
