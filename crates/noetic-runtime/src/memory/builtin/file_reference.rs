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
use serde_json::{Map, Value, json};

use crate::adapters::{FileOutcome, FileRead};
use crate::error::ConfigError;
use crate::host::{RerenderRequest, RerenderScope};
use crate::memory::{HookKind, HookSet, LayerSpec, Scope};
use crate::tokens::{estimate_tokens, utf16_len, utf16_prefix};

pub const ID: &str = "file-reference";
pub const NAME: &str = "File Reference";
/// Slot.RAG.
pub const DEFAULT_SLOT: f64 = 350.0;
pub const DEFAULT_SCORING_MODEL: &str = "anthropic/claude-haiku-4-5-20251001";
/// 1 MiB, as `stat` reports sizes.
pub const DEFAULT_MAX_FILE_SIZE: f64 = 1_048_576.0;
/// Reading files and scoring new ones cannot fit the 5 s default.
pub const APPEND_TIMEOUT_MS: f64 = 30_000.0;
/// The score a file gets when the model cannot give one.
const NEUTRAL_SCORE: f64 = 50.0;
const CONFIG_ERROR: &str = "INVALID_FILE_REFERENCE_CONFIG";
/// How much of a file the scoring prompt shows, in UTF-16 units.
const SCORING_EXCERPT: usize = 2_000;

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

/// The options as JS describes them (a value of the wrong kind as `{invalid: description}`, numbers JSON cannot
/// carry as strings), checked: upstream checks none, and a wrong kind there fails much later or never (a string
/// `maxFileSize` compares as NaN and lets every size through). `baseDir` is required: JS fills in the process's
/// working directory at factory time, as upstream does.
pub fn config_from(described: &Value) -> Result<FileReferenceConfig, ConfigError> {
  let given = |key: &str| described.get(key).filter(|value| !value.is_null());
  let base_dir = match given("baseDir") {
    Some(Value::String(dir)) if !dir.is_empty() => dir.clone(),
    Some(other) => return Err(bad("baseDir", "must be a non-empty path", other)),
    None => return Err(bad("baseDir", "must be a non-empty path", &Value::String("undefined".into()))),
  };
  let mut config = FileReferenceConfig::with_base_dir(base_dir);
  if let Some(value) = given("slot") {
    match read_number(value) {
      Some(slot) if slot.is_finite() => config.slot = slot,
      _ => {
        return Err(ConfigError::new(
          "INVALID_LAYER_SLOT",
          format!("fileReference: slot must be a finite number, got {}", shown(value)),
          "Pass a slot such as Slot.RAG, or leave it out.",
        ));
      }
    }
  }
  match given("scoringModel") {
    None => {}
    Some(Value::String(model)) if !model.trim().is_empty() => config.scoring_model = model.clone(),
    Some(other) => return Err(bad("scoringModel", "must be a model name", other)),
  }
  if let Some(value) = given("maxFileSize") {
    match read_number(value) {
      Some(size) if size >= 0.0 => config.max_file_size = size,
      _ => return Err(bad("maxFileSize", "must be a number of bytes, at least 0", value)),
    }
  }
  match given("followSymlinks") {
    None => {}
    Some(Value::Bool(follow)) => config.follow_symlinks = *follow,
    Some(other) => return Err(bad("followSymlinks", "must be true or false", other)),
  }
  match given("allowedExtensions") {
    None => {}
    Some(Value::Array(list)) if list.iter().all(Value::is_string) => {
      config.allowed_extensions = list.iter().filter_map(Value::as_str).map(str::to_owned).collect();
    }
    Some(other) => return Err(bad("allowedExtensions", "must be a list of extensions such as '.ts'", other)),
  }
  Ok(config)
}

/// The config as JS holds it, which [`config_from`] reads back.
pub fn config_json(config: &FileReferenceConfig) -> Value {
  let size = config.max_file_size;
  json!({
    "baseDir": config.base_dir,
    "slot": config.slot,
    "scoringModel": config.scoring_model,
    "maxFileSize": if size.is_finite() { json!(size) } else { json!(crate::js_number(size)) },
    "followSymlinks": config.follow_symlinks,
    "allowedExtensions": config.allowed_extensions,
  })
}

fn read_number(value: &Value) -> Option<f64> {
  match value {
    Value::Number(n) => n.as_f64(),
    Value::String(text) => match text.as_str() {
      "Infinity" => Some(f64::INFINITY),
      "-Infinity" => Some(f64::NEG_INFINITY),
      "NaN" => Some(f64::NAN),
      _ => None,
    },
    _ => None,
  }
}

fn shown(value: &Value) -> String {
  match (value.get("invalid").and_then(Value::as_str), value) {
    (Some(description), _) => description.to_owned(),
    (None, Value::String(text)) if read_number(value).is_some() || text == "undefined" => text.clone(),
    (None, Value::String(text)) => format!("\"{text}\""),
    (None, other) => other.to_string(),
  }
}

fn bad(key: &str, rule: &str, value: &Value) -> ConfigError {
  ConfigError::new(
    CONFIG_ERROR,
    format!("fileReference: {key} {rule}, got {}", shown(value)),
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

  fn get(&self, reference: &str) -> Option<&TrackedFile> {
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

// ---- references ----

/// A character a path segment may hold.
fn in_segment(b: u8) -> bool {
  b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// The end of the reference whose path starts at `start` (just after a `#`), as upstream's pattern matches it:
/// directory segments `seg/`, then a name holding a dot followed by letters or digits. The pattern is greedy, so
/// the match takes as many directories as it can, then in its last segment the last dot followed by an
/// alphanumeric, and all the alphanumerics after it.
fn reference_end(bytes: &[u8], start: usize) -> Option<usize> {
  let run_end = start + bytes[start..].iter().take_while(|&&b| in_segment(b) || b == b'/').count();
  // Segment bounds, up to the first empty one (a `//` or the run's end), which no directory can cross.
  let mut segments = Vec::new();
  let mut from = start;
  loop {
    let end = bytes[from..run_end].iter().position(|&b| b == b'/').map_or(run_end, |at| from + at);
    segments.push((from, end));
    if end == run_end || end == from {
      break;
    }
    from = end + 1;
  }
  segments.iter().rev().find_map(|&(from, end)| {
    let dot =
      (from + 1..end.saturating_sub(1)).rev().find(|&at| bytes[at] == b'.' && bytes[at + 1].is_ascii_alphanumeric())?;
    Some(dot + 1 + bytes[dot + 1..end].iter().take_while(|b| b.is_ascii_alphanumeric()).count())
  })
}

/// Each reference in `text`, as the byte range of its path (without the `#`), in order.
fn reference_spans(text: &str) -> Vec<(usize, usize)> {
  let bytes = text.as_bytes();
  let mut spans = Vec::new();
  let mut at = 0;
  while let Some(offset) = bytes[at..].iter().position(|&b| b == b'#') {
    let start = at + offset + 1;
    match reference_end(bytes, start) {
      Some(end) => {
        spans.push((start, end));
        at = end;
      }
      None => at = start,
    }
  }
  spans
}

/// The distinct references in `text`, in the order they first appear.
pub fn references(text: &str) -> Vec<String> {
  let mut found: Vec<String> = Vec::new();
  for (start, end) in reference_spans(text) {
    let path = &text[start..end];
    if !found.iter().any(|known| known == path) {
      found.push(path.to_owned());
    }
  }
  found
}

/// The anchor of a reference: every character but ASCII letters, digits and `-` becomes `-`, lower-cased.
pub fn anchor(path: &str) -> String {
  path.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c.to_ascii_lowercase() } else { '-' }).collect()
}

/// `text` with every reference written as a markdown link to its anchor: `#a.ts` becomes `[#a.ts](#a-ts)`.
pub fn with_anchors(text: &str) -> String {
  let mut out = String::with_capacity(text.len() + 16);
  let mut copied = 0;
  for (start, end) in reference_spans(text) {
    let path = &text[start..end];
    out.push_str(&text[copied..start - 1]);
    out.push_str(&format!("[#{path}](#{})", anchor(path)));
    copied = end;
  }
  out.push_str(&text[copied..]);
  out
}

// ---- paths ----

/// Absolute, `.` and empty segments dropped, `..` popping one (never above `/`); unlike the in-memory
/// filesystem's normalisation, nothing is trimmed.
fn normalize(path: &str) -> String {
  let mut parts: Vec<&str> = Vec::new();
  for part in path.split('/') {
    match part {
      "" | "." => {}
      ".." => {
        parts.pop();
      }
      _ => parts.push(part),
    }
  }
  format!("/{}", parts.join("/"))
}

/// Where a reference points: `base/reference`, normalised.
fn resolve(base: &str, reference: &str) -> String {
  if reference.starts_with('/') { normalize(reference) } else { normalize(&format!("{base}/{reference}")) }
}

fn basename(path: &str) -> &str {
  path.rsplit('/').next().unwrap_or_default()
}

/// The name's extension with its dot (`.ts`), empty for none; a leading dot (`.env`) is no extension.
fn extension(name: &str) -> &str {
  match name.rfind('.') {
    Some(at) if at > 0 => &name[at..],
    _ => "",
  }
}

/// `child` under `dir` (both normalised).
fn join(dir: &str, child: &str) -> String {
  if dir == "/" { format!("/{child}") } else { format!("{dir}/{child}") }
}

/// Whether `path` lies inside `base` (or is it); everything lies inside `/`, which upstream gets wrong.
fn contains(base: &str, path: &str) -> bool {
  base == "/" || path == base || path.strip_prefix(base).is_some_and(|rest| rest.starts_with('/'))
}

/// The read a file needs, or why it may not be read at all (upstream's error texts).
fn read_for(absolute: &str, base_dir: &str, config: &FileReferenceConfig) -> Result<FileRead, String> {
  let base = normalize(base_dir);
  let path = normalize(absolute);
  if !contains(&base, &path) {
    return Err("PATH_TRAVERSAL: File outside allowed directory".into());
  }
  let name = basename(&path);
  let ext = extension(name).to_lowercase();
  let allowed = config.allowed_extensions.is_empty()
    || config.allowed_extensions.iter().any(|allowed| ext == allowed.to_lowercase() || name == allowed);
  if !allowed {
    let ext = if ext.is_empty() { "no extension" } else { &ext };
    return Err(format!("DISALLOWED_EXTENSION: {ext}"));
  }
  // Every component below baseDir is lstat'ed: a linked directory keeps the path's text inside baseDir while the
  // filesystem leaves it. baseDir itself and its ancestors are trusted (macOS's /tmp is a link).
  let walk = if config.follow_symlinks || path == base {
    Vec::new()
  } else {
    let below = if base == "/" { &path[1..] } else { &path[base.len() + 1..] };
    let mut current = base.clone();
    below
      .split('/')
      .map(|segment| {
        current = join(&current, segment);
        current.clone()
      })
      .collect()
  };
  let max_size = config.max_file_size.is_finite().then_some(config.max_file_size);
  Ok(FileRead { path, walk, max_size })
}

// ---- reads ----

/// A read's result as the layer keeps it.
#[derive(Debug, Clone, PartialEq)]
enum ReadResult {
  Content(String),
  Deleted,
  Error(String),
}

fn read_result(outcome: FileOutcome, config: &FileReferenceConfig) -> ReadResult {
  match outcome {
    // A NUL is what marks binary data; the text such a file decodes to would only fill the prompt with noise.
    FileOutcome::Text { text } if text.contains('\0') => {
      ReadResult::Error("BINARY_FILE: Binary files cannot be referenced".into())
    }
    FileOutcome::Text { text } => ReadResult::Content(text),
    FileOutcome::Missing => ReadResult::Deleted,
    FileOutcome::Symlink => ReadResult::Error("SYMLINK: Symlinks not allowed".into()),
    FileOutcome::TooLarge { size } => ReadResult::Error(format!(
      "FILE_TOO_LARGE: {} bytes exceeds limit of {}",
      crate::js_number(size),
      crate::js_number(config.max_file_size)
    )),
    FileOutcome::Denied => ReadResult::Error("PERMISSION_DENIED: Cannot read file".into()),
    FileOutcome::Failed { message } => ReadResult::Error(format!("READ_FAILED: {message}")),
  }
}

/// Upstream's `simpleHash`: a 32-bit rolling hash over UTF-16 units, with the length; `""` for no content.
pub fn content_hash(text: &str) -> String {
  if text.is_empty() {
    return String::new();
  }
  let mut hash: i32 = 0;
  let mut units = 0usize;
  for unit in text.encode_utf16() {
    hash = hash.wrapping_shl(5).wrapping_sub(hash).wrapping_add(i32::from(unit));
    units += 1;
  }
  let hex = if hash < 0 { format!("-{:x}", -(i64::from(hash))) } else { format!("{hash:x}") };
  format!("{units}:{hex}")
}

// ---- append ----

/// A message's input text as the layer reads it: only a message whose parts are all `input_text`.
fn input_parts(item: &Map<String, Value>) -> Option<Vec<&str>> {
  if item.get("type").and_then(Value::as_str) != Some("message") || !item.contains_key("role") {
    return None;
  }
  let parts = item.get("content")?.as_array()?;
  parts
    .iter()
    .map(|part| match (part.get("type").and_then(Value::as_str), part.get("text").and_then(Value::as_str)) {
      (Some("input_text"), Some(text)) => Some(text),
      _ => None,
    })
    .collect()
}

/// A reference met for the first time in this append.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewReference {
  pub reference: String,
  pub absolute: String,
  /// The user message that stood last when the reference was met: what its relevance is scored against.
  pub query: String,
}

/// What an append has to do: the items it rewrites, the new references, and the reads (each tracked file's, then
/// each new reference's, skipping those that may not be read at all).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppendPlan {
  /// Per item: its rewritten fields, or `None` to pass it on as it is.
  pub items: Vec<Option<Map<String, Value>>>,
  pub new_references: Vec<NewReference>,
  /// The last user message's text.
  pub user_query: String,
  pub reads: Vec<FileRead>,
}

/// Step one: references in the items' input text, the items rewritten with anchors, and the reads to make. A
/// reference already tracked, or resolving to a path already tracked (`#a.ts` and `#./a.ts`), is not new.
pub fn plan_append(state: &FileRefState, items: &[&Map<String, Value>], config: &FileReferenceConfig) -> AppendPlan {
  let mut new_references: Vec<NewReference> = Vec::new();
  let mut user_query = String::new();
  let mut rewritten = Vec::with_capacity(items.len());
  for item in items {
    let Some(parts) = input_parts(item) else {
      rewritten.push(None);
      continue;
    };
    let text = parts.join("\n");
    if text.is_empty() {
      rewritten.push(None);
      continue;
    }
    if item.get("role").and_then(Value::as_str) == Some("user") {
      user_query.clone_from(&text);
    }
    let found = references(&text);
    for reference in &found {
      let absolute = resolve(&state.base_dir, reference);
      let known = state.files.iter().any(|(key, file)| key == reference || file.absolute_path == absolute)
        || new_references.iter().any(|new| &new.reference == reference || new.absolute == absolute);
      if !known {
        new_references.push(NewReference { reference: reference.clone(), absolute, query: user_query.clone() });
      }
    }
    rewritten.push((!found.is_empty()).then(|| {
      let mut fields = (*item).clone();
      let content = parts.iter().map(|part| json!({ "type": "input_text", "text": with_anchors(part) })).collect();
      fields.insert("content".into(), Value::Array(content));
      fields
    }));
  }
  let tracked = state.files.iter().map(|(_, file)| file.absolute_path.as_str());
  let reads = tracked
    .chain(new_references.iter().map(|new| new.absolute.as_str()))
    .filter_map(|path| read_for(path, &state.base_dir, config).ok())
    .collect();
  AppendPlan { items: rewritten, new_references, user_query, reads }
}

/// A file whose relevance is to be scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoreAsk {
  pub reference: String,
  /// The scoring prompt (the query, the path and the start of the file).
  pub prompt: String,
  /// The score when no model is at hand: 80 when the path and the query name each other, else 50.
  pub heuristic: f64,
}

/// The state after the reads, the files to score, and whether anything changed (the layer then re-renders).
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
  pub state: FileRefState,
  pub asks: Vec<ScoreAsk>,
  pub changed: bool,
}

/// Step two: `outcomes` answer `plan.reads` in order. New references join the state after the tracked files, in
/// the order they were met; a tracked file takes what its read found. A file always shows its latest read (upstream
/// keeps a file deleted, or its first error, until its content changes).
pub fn settle_reads(
  mut state: FileRefState,
  plan: &AppendPlan,
  outcomes: Vec<FileOutcome>,
  config: &FileReferenceConfig,
) -> Settled {
  let mut outcomes = outcomes.into_iter();
  let mut result_for = |absolute: &str| match read_for(absolute, &state.base_dir, config) {
    Ok(_) => match outcomes.next() {
      Some(outcome) => read_result(outcome, config),
      None => ReadResult::Error("READ_FAILED: the filesystem gave no answer".into()),
    },
    Err(error) => ReadResult::Error(error),
  };
  let refreshed: Vec<ReadResult> = state.files.iter().map(|(_, file)| result_for(&file.absolute_path)).collect();
  let fresh: Vec<ReadResult> = plan.new_references.iter().map(|new| result_for(&new.absolute)).collect();
  let mut asks = Vec::new();
  let mut changed = false;
  for ((reference, file), result) in state.files.iter_mut().zip(refreshed) {
    let Some(content) = refresh(file, result) else { continue };
    changed = true;
    if !plan.user_query.is_empty() && !content.is_empty() {
      asks.push(score_ask(reference, &content, &plan.user_query));
    }
  }
  for (new, result) in plan.new_references.iter().zip(fresh) {
    let file = tracked(new, result);
    if let Some(text) = file.text() {
      asks.push(score_ask(&new.reference, text, &new.query));
    }
    state.files.push((new.reference.clone(), file));
    changed = true;
  }
  Settled { state, asks, changed }
}

/// A new reference's entry; its priority is set once scored.
fn tracked(new: &NewReference, result: ReadResult) -> TrackedFile {
  let (content, deleted, error) = match result {
    ReadResult::Content(text) => (Some(text), false, None),
    ReadResult::Deleted => (None, true, None),
    ReadResult::Error(error) => (None, false, Some(error)),
  };
  let text = content.as_deref().unwrap_or_default();
  TrackedFile {
    absolute_path: new.absolute.clone(),
    reference_path: new.reference.clone(),
    content_hash: content_hash(text),
    token_count: estimate_tokens(text) as f64,
    content,
    priority: 0.0,
    deleted,
    error,
  }
}

/// Applies a tracked file's new read; the new content when it changed (to be scored again), `Some("")` for a
/// change with nothing to score, `None` for no change.
fn refresh(file: &mut TrackedFile, result: ReadResult) -> Option<String> {
  match result {
    ReadResult::Deleted if file.deleted => None,
    ReadResult::Deleted => {
      (file.content, file.deleted, file.error) = (None, true, None);
      Some(String::new())
    }
    ReadResult::Error(error) if file.error.as_ref() == Some(&error) => None,
    ReadResult::Error(error) => {
      (file.content, file.deleted, file.error) = (None, false, Some(error));
      Some(String::new())
    }
    ReadResult::Content(text) => {
      let hash = content_hash(&text);
      let was_shown = !file.deleted && file.error.is_none() && file.content.is_some();
      if was_shown && hash == file.content_hash {
        return None;
      }
      file.token_count = estimate_tokens(&text) as f64;
      (file.content_hash, file.deleted, file.error) = (hash, false, None);
      file.content = Some(text.clone());
      Some(text)
    }
  }
}

/// The scoring prompt for a file (upstream's, which the scoring model is asked as a user message).
fn score_ask(reference: &str, content: &str, query: &str) -> ScoreAsk {
  let excerpt = utf16_prefix(content, SCORING_EXCERPT);
  let prompt = format!(
    "Rate the relevance of this file to the user's query.\n\nUser Query: {query}\n\nFile Path: {reference}\n\
     File Content (first 2000 chars):\n{excerpt}\n\nRespond with ONLY a number from 0-100 where:\n\
     - 0-20: Not relevant at all\n- 21-40: Slightly relevant\n- 41-60: Moderately relevant\n\
     - 61-80: Highly relevant\n- 81-100: Critical/essential\n\nScore:"
  );
  ScoreAsk { reference: reference.to_owned(), prompt, heuristic: heuristic_score(reference, query) }
}

/// The instructions that go with every scoring prompt.
pub const SCORING_INSTRUCTIONS: &str = "You are a relevance scorer. Respond with only a number 0-100.";

/// Without a model: 80 when the lower-cased path contains the query or the query contains the file's name.
fn heuristic_score(reference: &str, query: &str) -> f64 {
  let query = query.to_lowercase();
  let path = reference.to_lowercase();
  let name = basename(&normalize(&path)).to_owned();
  if path.contains(&query) || query.contains(&name) { 80.0 } else { NEUTRAL_SCORE }
}

/// The model's reply text read as a score: its leading integer (as `parseInt`), 50 when there is none or it lies
/// outside 0..=100. `None` (the call failed) is 50 too.
pub fn parse_score(reply: Option<&str>) -> f64 {
  let Some(reply) = reply else { return NEUTRAL_SCORE };
  let text = reply.trim();
  let (negative, digits) = match text.as_bytes().first() {
    Some(b'-') => (true, &text[1..]),
    Some(b'+') => (false, &text[1..]),
    _ => (false, text),
  };
  let digits: &str = &digits[..digits.bytes().take_while(u8::is_ascii_digit).count()];
  if digits.is_empty() {
    return NEUTRAL_SCORE;
  }
  // Past three digits only a run of zeros can still be in range.
  let value = digits.trim_start_matches('0');
  let score = if value.len() > 3 { f64::INFINITY } else { value.parse::<f64>().unwrap_or(0.0) };
  match (negative, score) {
    (_, score) if score == 0.0 => 0.0,
    (false, score) if score <= 100.0 => score,
    _ => NEUTRAL_SCORE,
  }
}

/// Step three: each asked file's priority.
pub fn apply_scores(state: &mut FileRefState, asks: &[ScoreAsk], scores: &[f64]) {
  for (ask, score) in asks.iter().zip(scores) {
    if let Some((_, file)) = state.files.iter_mut().find(|(key, _)| *key == ask.reference) {
      file.priority = *score;
    }
  }
}

// ---- recall ----

fn status_block(file: &TrackedFile) -> Option<String> {
  if file.deleted {
    return Some(format!("## {}\n\n[FILE DELETED: {}]", file.reference_path, file.absolute_path));
  }
  file.error.as_ref().map(|error| format!("## {}\n\n[ERROR: {error}]", file.reference_path))
}

fn marker(omitted: usize) -> String {
  format!("\n\n... [truncated {omitted} lines] ...\n\n")
}

/// How many lines, from `lines` in the order given, fit in `budget` UTF-16 units joined by newlines.
fn fitting<'a>(lines: impl Iterator<Item = &'a str>, budget: f64) -> usize {
  let mut used = 0usize;
  let mut count = 0;
  for line in lines {
    let next = utf16_len(line) + usize::from(count > 0);
    if (used + next) as f64 > budget {
      break;
    }
    used += next;
    count += 1;
  }
  count
}

/// The content cut to `remaining` tokens (4 UTF-16 units each): whole leading lines in 60% of the room, whole
/// trailing lines in the rest, and a marker saying how many lines were left out between them.
fn truncated(content: &str, token_count: f64, remaining: f64) -> String {
  if token_count <= remaining {
    return content.to_owned();
  }
  let lines: Vec<&str> = content.split('\n').collect();
  let total = (remaining * 4.0).max(0.0);
  let room = (total - utf16_len(&marker(lines.len())) as f64).max(0.0);
  let head_count = fitting(lines.iter().copied(), (room * 0.6).floor());
  let head = lines[..head_count].join("\n");
  let tail_room = room - utf16_len(&head) as f64;
  let tail_count = fitting(lines[head_count..].iter().rev().copied(), tail_room);
  let tail = lines[lines.len() - tail_count..].join("\n");
  let omitted = lines.len() - head_count - tail_count;
  if omitted == 0 {
    return [head, tail].into_iter().filter(|part| !part.is_empty()).collect::<Vec<_>>().join("\n");
  }
  format!("{head}{}{tail}", marker(omitted))
}

fn block(file: &TrackedFile, used: f64, budget: f64) -> Option<String> {
  if let Some(status) = status_block(file) {
    return (used + estimate_tokens(&status) as f64 <= budget).then_some(status);
  }
  let text = file.text()?;
  let header = format!("## {}", file.reference_path);
  let header_tokens = estimate_tokens(&header) as f64;
  if used + header_tokens >= budget {
    return None;
  }
  let remaining = budget - used - header_tokens - 10.0;
  Some(format!("{header}\n\n```\n{}\n```", truncated(text, file.token_count, remaining)))
}

/// recall: under a "# Referenced Files" heading, each file by priority (highest first, ties in reference order):
/// a deleted or failing file as a one-line note, a readable one in a code block cut to what is left of the budget.
/// A block that does not fit is left out. Nothing when no block fits.
pub fn recall(state: &FileRefState, budget: f64) -> Option<(String, u64)> {
  let mut files: Vec<&TrackedFile> = state.files.iter().map(|(_, file)| file).collect();
  files.sort_by(|a, b| b.priority.partial_cmp(&a.priority).unwrap_or(std::cmp::Ordering::Equal));
  let mut used = 0.0;
  let mut blocks = Vec::new();
  for file in files {
    if let Some(block) = block(file, used, budget) {
      used += estimate_tokens(&block) as f64;
      blocks.push(block);
    }
  }
  if blocks.is_empty() {
    return None;
  }
  let text = format!("# Referenced Files\n\n{}", blocks.join("\n\n"));
  let tokens = estimate_tokens(&text);
  Some((text, tokens))
}

#[cfg(test)]
mod tests;
