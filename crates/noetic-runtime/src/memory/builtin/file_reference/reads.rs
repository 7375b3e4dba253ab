//! What a reference may read (inside baseDir, an allowed extension, no link below baseDir, within the size
//! limit), the read the filesystem is asked for, and what its outcome means for the tracked file.

use crate::adapters::{FileOutcome, FileRead};

use super::FileReferenceConfig;

/// Absolute, `.` and empty segments dropped, `..` popping one (never above `/`); unlike the in-memory
/// filesystem's normalisation, nothing is trimmed.
pub(super) fn normalize(path: &str) -> String {
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
pub(super) fn resolve(base: &str, reference: &str) -> String {
  if reference.starts_with('/') { normalize(reference) } else { normalize(&format!("{base}/{reference}")) }
}

pub(super) fn basename(path: &str) -> &str {
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
pub(super) fn read_for(absolute: &str, base_dir: &str, config: &FileReferenceConfig) -> Result<FileRead, String> {
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

/// A read's result as the layer keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ReadResult {
  Content(String),
  Deleted,
  Error(String),
}

pub(super) fn read_result(outcome: FileOutcome, config: &FileReferenceConfig) -> ReadResult {
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
