//! The in-memory filesystem as JS sees it: `createInMemoryFsAdapter()` wraps a `NativeFs` (Rust owns the files;
//! `js/adapters.cjs` gives it upstream's async methods). Every call is synchronous: there is nothing to wait for.
//!
//! The harness's filesystem as built-in layers read it ([`HarnessFiles`]): a harness whose `fs` is one of these
//! reads it here, with no crossing; any other adapter is asked in JS, once per request.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use napi::bindgen_prelude::{Buffer, Uint8Array};
use napi_derive::napi;
use noetic_runtime::adapters::{FileOutcome, FileRead, FsError, MemoryFs, read_memory_fs};
use noetic_runtime::memory::native::LayerFiles;
use serde::Deserialize;

use crate::dispatcher::Dispatch;
use crate::protocol::open;

/// `stat`'s answer; the JS wrapper turns it into upstream's `FsStats`.
#[napi(object)]
pub struct NativeFsStat {
  pub size: f64,
  pub is_directory: bool,
}

#[napi(js_name = "NativeFs")]
pub struct NativeFs {
  /// Shared with the harness whose `fs` this is, which reads it for built-in layers.
  inner: Arc<RwLock<MemoryFs>>,
}

/// A failed operation, carrying upstream's message (e.g. `ENOENT: no such file or directory, '/a'`).
fn fs_error(error: FsError) -> napi::Error {
  napi::Error::new(napi::Status::GenericFailure, error.to_string())
}

#[napi]
impl NativeFs {
  #[napi(constructor, catch_unwind)]
  pub fn new() -> Self {
    Self { inner: Arc::default() }
  }

  /// One entry of the adapter's seed: the file `path` with `content`, parents created.
  #[napi(catch_unwind)]
  pub fn seed_file(&self, path: String, content: Uint8Array) -> napi::Result<()> {
    self.write().seed_file(&path, &content).map_err(fs_error)
  }

  /// A copy of the file's bytes, as a new Buffer (typed with the header's `BinaryData`, so that the declarations
  /// need no @types/node).
  #[napi(catch_unwind, ts_return_type = "BinaryData")]
  pub fn read_file(&self, path: String) -> napi::Result<Buffer> {
    self.read().read_file(&path).map(|bytes| Buffer::from(bytes.to_vec())).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn read_file_text(&self, path: String) -> napi::Result<String> {
    self.read().read_file_text(&path).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn write_file(&self, path: String, content: String) -> napi::Result<()> {
    self.write().write_file(&path, &content).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn write_file_bytes(&self, path: String, content: Uint8Array) -> napi::Result<()> {
    self.write().write_file_bytes(&path, &content).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn append_file(&self, path: String, content: String) -> napi::Result<()> {
    self.write().append_file(&path, &content).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn mkdir(&self, dir: String) -> napi::Result<()> {
    self.write().mkdir(&dir).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn rename(&self, old_path: String, new_path: String) -> napi::Result<()> {
    self.write().rename(&old_path, &new_path).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn rm(&self, path: String, recursive: bool, force: bool) -> napi::Result<()> {
    self.write().rm(&path, recursive, force).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn access(&self, path: String) -> napi::Result<()> {
    self.read().access(&path).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn stat(&self, path: String) -> napi::Result<NativeFsStat> {
    let stat = self.read().stat(&path).map_err(fs_error)?;
    Ok(NativeFsStat { size: stat.size as f64, is_directory: stat.is_directory })
  }

  #[napi(catch_unwind)]
  pub fn readdir(&self, path: String) -> napi::Result<Vec<String>> {
    self.read().readdir(&path).map_err(fs_error)
  }
}

impl NativeFs {
  fn read(&self) -> RwLockReadGuard<'_, MemoryFs> {
    self.inner.read().unwrap_or_else(PoisonError::into_inner)
  }

  fn write(&self) -> RwLockWriteGuard<'_, MemoryFs> {
    self.inner.write().unwrap_or_else(PoisonError::into_inner)
  }

  /// The files, for the harness whose `fs` this is.
  pub(crate) fn shared(&self) -> Arc<RwLock<MemoryFs>> {
    Arc::clone(&self.inner)
  }
}

impl Default for NativeFs {
  fn default() -> Self {
    Self::new()
  }
}

/// The harness's `fs` for built-in layers: its own in-memory filesystem when it has one (read here), else the
/// user's adapter (one `readFiles` request to JS for all the files of a hook).
pub struct HarnessFiles {
  dispatch: Dispatch,
  /// Replaced when JS assigns `harness.fs` (`NativeHarness.useFs`).
  native: RwLock<Option<Arc<RwLock<MemoryFs>>>>,
}

impl HarnessFiles {
  pub fn new(dispatch: Dispatch, fs: Option<&NativeFs>) -> Self {
    Self { dispatch, native: RwLock::new(fs.map(NativeFs::shared)) }
  }

  pub fn use_fs(&self, fs: Option<&NativeFs>) {
    *self.native.write().unwrap_or_else(PoisonError::into_inner) = fs.map(NativeFs::shared);
  }
}

#[derive(Deserialize)]
struct Outcomes {
  outcomes: Vec<FileOutcome>,
}

#[async_trait]
impl LayerFiles for HarnessFiles {
  async fn read(&self, reads: &[FileRead]) -> Result<Vec<FileOutcome>, String> {
    let native = self.native.read().unwrap_or_else(PoisonError::into_inner).clone();
    if let Some(fs) = native {
      let fs = fs.read().unwrap_or_else(PoisonError::into_inner);
      return Ok(reads.iter().map(|read| read_memory_fs(&fs, read)).collect());
    }
    let message = serde_json::json!({ "op": "readFiles", "reads": reads }).to_string();
    // Bounded by the hook's timeout, as a built-in layer's callback is: a read that never settles ends with it.
    let text = self.dispatch.call_bounded(message).await?;
    let reply: Outcomes = open(&text).map_err(|error| error.to_string())?;
    if reply.outcomes.len() != reads.len() {
      return Err(format!("the filesystem answered {} of {} reads", reply.outcomes.len(), reads.len()));
    }
    Ok(reply.outcomes)
  }
}
