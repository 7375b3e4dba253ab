//! The harness's default adapters as Rust decides them: the in-memory filesystem behind `createInMemoryFsAdapter()`,
//! the in-memory subprocess adapter, and how a detached run's handle follows whichever adapter runs it. (The default
//! shell is a stub with no state, so it stays JS glue; the adapters' user-facing functions and the JS values they
//! carry stay with their JS wrappers, A2.)

pub mod detached;
mod file_read;
mod fs_path;
mod memory_fs;
pub mod subprocess;

pub use self::file_read::{FileOutcome, FileRead, read_memory_fs};
pub use self::fs_path::{basename, normalize_path, parent_path};
pub use self::memory_fs::{FsError, FsErrorKind, FsResult, FsStat, MemoryFs, decode_utf8_text};
