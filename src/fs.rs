//! The in-memory filesystem as JS sees it: `createInMemoryFsAdapter()` wraps a `NativeFs` (Rust owns the files;
//! `js/adapters.cjs` gives it upstream's async methods). Every call is synchronous: there is nothing to wait for.

use napi::bindgen_prelude::{Buffer, Uint8Array};
use napi_derive::napi;
use noetic_runtime::adapters::{FsError, MemoryFs};

/// `stat`'s answer; the JS wrapper turns it into upstream's `FsStats`.
#[napi(object)]
pub struct NativeFsStat {
  pub size: f64,
  pub is_directory: bool,
}

#[napi(js_name = "NativeFs")]
pub struct NativeFs {
  inner: MemoryFs,
}

/// A failed operation, carrying upstream's message (e.g. `ENOENT: no such file or directory, '/a'`).
fn fs_error(error: FsError) -> napi::Error {
  napi::Error::new(napi::Status::GenericFailure, error.to_string())
}

#[napi]
impl NativeFs {
  #[napi(constructor, catch_unwind)]
  pub fn new() -> Self {
    Self { inner: MemoryFs::new() }
  }

  /// One entry of the adapter's seed: the file `path` with `content`, parents created.
  #[napi(catch_unwind)]
  pub fn seed_file(&mut self, path: String, content: Uint8Array) -> napi::Result<()> {
    self.inner.seed_file(&path, &content).map_err(fs_error)
  }

  /// A copy of the file's bytes, as a new Buffer (typed with the header's `BinaryData`, so that the declarations
  /// need no @types/node).
  #[napi(catch_unwind, ts_return_type = "BinaryData")]
  pub fn read_file(&self, path: String) -> napi::Result<Buffer> {
    self.inner.read_file(&path).map(|bytes| Buffer::from(bytes.to_vec())).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn read_file_text(&self, path: String) -> napi::Result<String> {
    self.inner.read_file_text(&path).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn write_file(&mut self, path: String, content: String) -> napi::Result<()> {
    self.inner.write_file(&path, &content).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn write_file_bytes(&mut self, path: String, content: Uint8Array) -> napi::Result<()> {
    self.inner.write_file_bytes(&path, &content).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn append_file(&mut self, path: String, content: String) -> napi::Result<()> {
    self.inner.append_file(&path, &content).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn mkdir(&mut self, dir: String) -> napi::Result<()> {
    self.inner.mkdir(&dir).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn rename(&mut self, old_path: String, new_path: String) -> napi::Result<()> {
    self.inner.rename(&old_path, &new_path).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn rm(&mut self, path: String, recursive: bool, force: bool) -> napi::Result<()> {
    self.inner.rm(&path, recursive, force).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn access(&self, path: String) -> napi::Result<()> {
    self.inner.access(&path).map_err(fs_error)
  }

  #[napi(catch_unwind)]
  pub fn stat(&self, path: String) -> napi::Result<NativeFsStat> {
    let stat = self.inner.stat(&path).map_err(fs_error)?;
    Ok(NativeFsStat { size: stat.size as f64, is_directory: stat.is_directory })
  }

  #[napi(catch_unwind)]
  pub fn readdir(&self, path: String) -> napi::Result<Vec<String>> {
    self.inner.readdir(&path).map_err(fs_error)
  }
}

impl Default for NativeFs {
  fn default() -> Self {
    Self::new()
  }
}
