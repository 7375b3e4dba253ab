//! What a built-in layer asks of the harness's filesystem (`ctx.fs`) and what comes back: one request names many
//! files, so a layer that tracks several costs one round trip to a JS adapter, and none to the in-memory one.

use serde::{Deserialize, Serialize};

use super::memory_fs::{FsErrorKind, MemoryFs};

/// One file to read. The paths in `walk` are `lstat`ed first, in order, and a symbolic link among them refuses
/// the read; with no `walk`, the file itself is `stat`ed. A size over `max_size` (none: no limit) refuses it too;
/// otherwise its text is read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileRead {
  pub path: String,
  pub walk: Vec<String>,
  pub max_size: Option<f64>,
}

/// How one read ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum FileOutcome {
  Text {
    text: String,
  },
  /// `ENOENT` anywhere along the way.
  Missing,
  Symlink,
  TooLarge {
    size: f64,
  },
  /// `EACCES`.
  Denied,
  /// Any other failure, with its message.
  Failed {
    message: String,
  },
}

/// `read` answered from the in-memory filesystem, which has no links (its `lstat` is its `stat`).
pub fn read_memory_fs(fs: &MemoryFs, read: &FileRead) -> FileOutcome {
  let failed = |error: super::FsError| match error.kind {
    FsErrorKind::NotFound => FileOutcome::Missing,
    _ => FileOutcome::Failed { message: error.to_string() },
  };
  // Every component must exist; the last one's size is the file's.
  let size = if read.walk.is_empty() {
    fs.stat(&read.path).map(|stat| stat.size)
  } else {
    read.walk.iter().try_fold(0, |_, path| fs.stat(path).map(|stat| stat.size))
  };
  let size = match size {
    Ok(size) => size as f64,
    Err(error) => return failed(error),
  };
  if read.max_size.is_some_and(|max| size > max) {
    return FileOutcome::TooLarge { size };
  }
  match fs.read_file_text(&read.path) {
    Ok(text) => FileOutcome::Text { text },
    Err(error) => failed(error),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn read(path: &str, walk: &[&str], max_size: Option<f64>) -> FileRead {
    FileRead { path: path.into(), walk: walk.iter().map(|p| (*p).to_owned()).collect(), max_size }
  }

  #[test]
  fn reads_the_in_memory_filesystem() {
    let mut fs = MemoryFs::new();
    fs.seed_file("/repo/src/a.ts", b"let a = 1;").expect("seeds");
    let walk = ["/repo/src", "/repo/src/a.ts"];
    assert_eq!(
      read_memory_fs(&fs, &read("/repo/src/a.ts", &walk, Some(100.0))),
      FileOutcome::Text { text: "let a = 1;".into() }
    );
    assert_eq!(read_memory_fs(&fs, &read("/repo/src/a.ts", &[], Some(4.0))), FileOutcome::TooLarge { size: 10.0 });
    assert_eq!(
      read_memory_fs(&fs, &read("/repo/src/b.ts", &["/repo/src", "/repo/src/b.ts"], None)),
      FileOutcome::Missing
    );
    assert_eq!(read_memory_fs(&fs, &read("/repo/x/b.ts", &["/repo/x", "/repo/x/b.ts"], None)), FileOutcome::Missing);
    let FileOutcome::Failed { message } = read_memory_fs(&fs, &read("/repo/src", &[], None)) else {
      panic!("a directory is no file")
    };
    assert!(message.starts_with("EISDIR"), "{message}");
  }
}
