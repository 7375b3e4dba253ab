//! Upstream's process-local, POSIX-like in-memory filesystem: a map from normalised absolute paths to files (bytes)
//! and directories, with upstream's operations, error messages and edge cases (as upstream, a write replaces
//! whatever was at the path, even a directory, and renaming onto an existing path overwrites it).
//!
//! Upstream keeps its entries in a JS `Map`, whose iteration order is insertion order; only a directory rename
//! observes that order (when the target lies inside the source), so each entry remembers when it was inserted.

use std::collections::BTreeMap;
use std::fmt;

use super::fs_path::{basename, normalize_path, parent_path, renormalize};

/// The POSIX condition behind a failed operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsErrorKind {
  NotFound,
  IsDirectory,
  NotDirectory,
  NotEmpty,
}

impl FsErrorKind {
  pub fn code(self) -> &'static str {
    match self {
      Self::NotFound => "ENOENT",
      Self::IsDirectory => "EISDIR",
      Self::NotDirectory => "ENOTDIR",
      Self::NotEmpty => "ENOTEMPTY",
    }
  }

  fn description(self) -> &'static str {
    match self {
      Self::NotFound => "no such file or directory",
      Self::IsDirectory => "illegal operation on a directory",
      Self::NotDirectory => "not a directory",
      Self::NotEmpty => "directory not empty",
    }
  }
}

/// A failed operation; it displays as upstream's message, e.g. `ENOENT: no such file or directory, rm '/a'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsError {
  pub kind: FsErrorKind,
  /// The operation named in the message; upstream names none when a lookup fails.
  pub syscall: Option<&'static str>,
  pub path: String,
}

impl FsError {
  fn new(kind: FsErrorKind, syscall: Option<&'static str>, path: &str) -> Self {
    Self { kind, syscall, path: path.to_owned() }
  }
}

impl fmt::Display for FsError {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "{}: {}, ", self.kind.code(), self.kind.description())?;
    if let Some(syscall) = self.syscall {
      write!(f, "{syscall} ")?;
    }
    write!(f, "'{}'", self.path)
  }
}

impl std::error::Error for FsError {}

pub type FsResult<T> = Result<T, FsError>;

/// What `stat` reports; there are no symbolic links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsStat {
  /// Bytes for a file, 0 for a directory.
  pub size: usize,
  pub is_directory: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
  File(Vec<u8>),
  Dir,
}

#[derive(Debug, Clone)]
struct Entry {
  inserted: u64,
  node: Node,
}

/// The filesystem. Paths are normalised as upstream's are (see [`normalize_path`]); `/` always starts as a directory.
#[derive(Debug, Clone)]
pub struct MemoryFs {
  entries: BTreeMap<String, Entry>,
  next_insert: u64,
}

impl Default for MemoryFs {
  fn default() -> Self {
    Self::new()
  }
}

/// UTF-8 text as `TextDecoder` reads it: a leading byte-order mark is dropped, invalid sequences become U+FFFD.
pub fn decode_utf8_text(bytes: &[u8]) -> String {
  let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
  String::from_utf8_lossy(body).into_owned()
}

impl MemoryFs {
  pub fn new() -> Self {
    let mut fs = Self { entries: BTreeMap::new(), next_insert: 0 };
    fs.set("/".to_owned(), Node::Dir);
    fs
  }

  /// A `Map.set`: a new key goes last in insertion order, an existing one keeps its place.
  fn set(&mut self, path: String, node: Node) {
    if let Some(entry) = self.entries.get_mut(&path) {
      entry.node = node;
      return;
    }
    let inserted = self.next_insert;
    self.next_insert += 1;
    self.entries.insert(path, Entry { inserted, node });
  }

  fn node(&self, normalized: &str) -> Option<&Node> {
    self.entries.get(normalized).map(|entry| &entry.node)
  }

  /// Keys under the directory `normalized` (every key that starts with `normalized/`), in key order.
  fn keys_below<'a>(&'a self, normalized: &str) -> impl Iterator<Item = &'a String> + 'a {
    let prefix = format!("{normalized}/");
    self.entries.range(prefix.clone()..).map(|(key, _)| key).take_while(move |key| key.starts_with(&prefix))
  }

  /// The entry at `path`, or ENOENT naming no operation.
  fn require(&self, path: &str) -> FsResult<&Node> {
    let normalized = normalize_path(path);
    self.node(&normalized).ok_or_else(|| FsError::new(FsErrorKind::NotFound, None, &normalized))
  }

  /// `mkdir -p`: creates `path` and its missing ancestors, top-down. A file in the way is ENOTDIR, naming it;
  /// nothing is created then.
  fn ensure_dir(&mut self, path: &str) -> FsResult<()> {
    let mut missing = Vec::new();
    let mut current = normalize_path(path);
    loop {
      match self.node(&current) {
        Some(Node::Dir) => break,
        Some(Node::File(_)) => return Err(FsError::new(FsErrorKind::NotDirectory, Some("mkdir"), &current)),
        None if current == "/" => {
          missing.push(current);
          break;
        }
        None => {
          // Upstream recurses on `normalize(parentPath(current))`; cut in place instead of re-parsing the path.
          let parent = renormalize(current.clone());
          let cut = parent.rfind('/').filter(|&idx| idx > 0).unwrap_or(1);
          missing.push(current);
          current = renormalize(parent[..cut].to_owned());
        }
      }
    }
    for dir in missing.into_iter().rev() {
      self.set(dir, Node::Dir);
    }
    Ok(())
  }

  fn write_bytes(&mut self, path: &str, bytes: Vec<u8>) -> FsResult<()> {
    let normalized = normalize_path(path);
    self.ensure_dir(&parent_path(&normalized))?;
    self.set(normalized, Node::File(bytes));
    Ok(())
  }

  fn read(&self, path: &str) -> FsResult<&[u8]> {
    match self.require(path)? {
      Node::File(bytes) => Ok(bytes),
      Node::Dir => Err(FsError::new(FsErrorKind::IsDirectory, Some("read"), &normalize_path(path))),
    }
  }

  pub fn read_file(&self, path: &str) -> FsResult<&[u8]> {
    self.read(path)
  }

  pub fn read_file_text(&self, path: &str) -> FsResult<String> {
    self.read(path).map(decode_utf8_text)
  }

  /// Writes `content` (UTF-8), creating missing parent directories.
  pub fn write_file(&mut self, path: &str, content: &str) -> FsResult<()> {
    self.write_bytes(path, content.as_bytes().to_vec())
  }

  pub fn write_file_bytes(&mut self, path: &str, content: &[u8]) -> FsResult<()> {
    self.write_bytes(path, content.to_vec())
  }

  /// Appends `content` (UTF-8), creating the file (and its parents) when missing.
  pub fn append_file(&mut self, path: &str, content: &str) -> FsResult<()> {
    let normalized = normalize_path(path);
    let combined = match self.node(&normalized) {
      None => return self.write_bytes(&normalized, content.as_bytes().to_vec()),
      Some(Node::Dir) => return Err(FsError::new(FsErrorKind::IsDirectory, Some("append"), &normalized)),
      Some(Node::File(bytes)) => [bytes.as_slice(), content.as_bytes()].concat(),
    };
    self.set(normalized, Node::File(combined));
    Ok(())
  }

  /// Creates `dir` and any missing ancestors; an existing directory is fine.
  pub fn mkdir(&mut self, dir: &str) -> FsResult<()> {
    self.ensure_dir(dir)
  }

  /// Moves the entry at `old_path`, and a directory's whole subtree, to `new_path`, replacing what was there.
  pub fn rename(&mut self, old_path: &str, new_path: &str) -> FsResult<()> {
    let old = normalize_path(old_path);
    let new = normalize_path(new_path);
    let node = self.require(&old)?.clone();
    self.ensure_dir(&parent_path(&new))?;
    let is_dir = node == Node::Dir;
    self.set(new.clone(), node);
    self.entries.remove(&old);
    if !is_dir {
      return Ok(());
    }
    // Upstream walks a snapshot of its map in insertion order, moving each descendant as it goes.
    let mut below: Vec<(String, Entry)> =
      self.keys_below(&old).map(|key| (key.clone(), self.entries[key].clone())).collect();
    below.sort_by_key(|(_, entry)| entry.inserted);
    for (path, entry) in below {
      let moved = format!("{new}{}", &path[old.len()..]);
      self.set(moved, entry.node);
      self.entries.remove(&path);
    }
    Ok(())
  }

  /// Removes a file, or a directory (with its contents only when `recursive`). A missing path is ENOENT unless
  /// `force`. `/` itself is never removed.
  pub fn rm(&mut self, path: &str, recursive: bool, force: bool) -> FsResult<()> {
    let normalized = normalize_path(path);
    match self.node(&normalized) {
      None if force => return Ok(()),
      None => return Err(FsError::new(FsErrorKind::NotFound, Some("rm"), &normalized)),
      Some(Node::Dir) => {
        // Upstream looks for children under `<path>/`, so for `/` (prefix `//`) there are never any.
        let children: Vec<String> = self.keys_below(&normalized).cloned().collect();
        if !children.is_empty() && !recursive {
          return Err(FsError::new(FsErrorKind::NotEmpty, Some("rm"), &normalized));
        }
        for child in children {
          self.entries.remove(&child);
        }
      }
      Some(Node::File(_)) => {}
    }
    if normalized != "/" {
      self.entries.remove(&normalized);
    }
    Ok(())
  }

  /// Succeeds when `path` exists.
  pub fn access(&self, path: &str) -> FsResult<()> {
    self.require(path).map(drop)
  }

  pub fn stat(&self, path: &str) -> FsResult<FsStat> {
    Ok(match self.require(path)? {
      Node::File(bytes) => FsStat { size: bytes.len(), is_directory: false },
      Node::Dir => FsStat { size: 0, is_directory: true },
    })
  }

  /// The names directly inside the directory `path`, sorted as JS's default sort does (by UTF-16 code units).
  pub fn readdir(&self, path: &str) -> FsResult<Vec<String>> {
    let normalized = normalize_path(path);
    if *self.require(&normalized)? != Node::Dir {
      return Err(FsError::new(FsErrorKind::NotDirectory, Some("scandir"), &normalized));
    }
    let prefix_len = if normalized == "/" { 1 } else { normalized.len() + 1 };
    let keys: Box<dyn Iterator<Item = &String>> =
      if normalized == "/" { Box::new(self.entries.keys()) } else { Box::new(self.keys_below(&normalized)) };
    let mut names: Vec<String> = keys
      .filter(|key| **key != normalized)
      .filter(|key| !key[prefix_len..].is_empty() && !key[prefix_len..].contains('/'))
      .map(|key| basename(key))
      .collect();
    names.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
    names.dedup();
    Ok(names)
  }

  /// One entry of `createInMemoryFsAdapter(seed)`: the file `path` with `content`, parents created.
  pub fn seed_file(&mut self, path: &str, content: &[u8]) -> FsResult<()> {
    self.ensure_dir(&parent_path(path))?;
    self.set(normalize_path(path), Node::File(content.to_vec()));
    Ok(())
  }
}

#[cfg(test)]
mod tests;
