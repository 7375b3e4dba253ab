//! The harness's default adapters that hold data: the in-memory filesystem behind `createInMemoryFsAdapter()`.
//! (The default shell is a stub with no state, so it stays JS glue.)

mod fs_path;
mod memory_fs;

pub use self::fs_path::{basename, normalize_path, parent_path};
pub use self::memory_fs::{FsError, FsErrorKind, FsResult, FsStat, MemoryFs, decode_utf8_text};
