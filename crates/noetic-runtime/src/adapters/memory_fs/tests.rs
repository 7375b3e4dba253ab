use super::*;

fn message<T: std::fmt::Debug>(result: FsResult<T>) -> String {
  result.expect_err("expected an error").to_string()
}

fn text(fs: &MemoryFs, path: &str) -> String {
  fs.read_file_text(path).unwrap()
}

#[test]
fn starts_with_an_empty_root_directory() {
  let fs = MemoryFs::new();
  assert_eq!(fs.stat("/").unwrap(), FsStat { size: 0, is_directory: true });
  assert_eq!(fs.readdir("/").unwrap(), Vec::<String>::new());
  assert_eq!(fs.stat("").unwrap(), fs.stat("/").unwrap());
}

#[test]
fn writes_create_parents_and_reads_return_the_bytes() {
  let mut fs = MemoryFs::new();
  fs.write_file("a/b/c.txt", "héllo").unwrap();
  assert_eq!(fs.read_file("/a/b/c.txt").unwrap(), "héllo".as_bytes());
  assert_eq!(text(&fs, "/a/./b/../b/c.txt"), "héllo");
  assert!(fs.stat("/a").unwrap().is_directory);
  assert!(fs.stat("/a/b").unwrap().is_directory);
  assert_eq!(fs.stat("/a/b/c.txt").unwrap(), FsStat { size: 6, is_directory: false });
  fs.write_file("/a/b/c.txt", "x").unwrap();
  assert_eq!(text(&fs, "/a/b/c.txt"), "x");
}

#[test]
fn bytes_round_trip_and_text_decodes_like_text_decoder() {
  let mut fs = MemoryFs::new();
  let bytes = [0xEF, 0xBB, 0xBF, b'h', 0xFF, b'i', 0xE2, 0x82];
  fs.write_file_bytes("/bin", &bytes).unwrap();
  assert_eq!(fs.read_file("/bin").unwrap(), bytes);
  assert_eq!(text(&fs, "/bin"), "h\u{fffd}i\u{fffd}");
  assert_eq!(decode_utf8_text(b"\xEF\xBB\xBF\xEF\xBB\xBFx"), "\u{feff}x");
}

#[test]
fn reading_missing_paths_and_directories_fails_like_upstream() {
  let mut fs = MemoryFs::new();
  fs.mkdir("/d").unwrap();
  assert_eq!(message(fs.read_file("/nope/x")), "ENOENT: no such file or directory, '/nope/x'");
  assert_eq!(message(fs.read_file_text(" d/ ")), "EISDIR: illegal operation on a directory, read '/d'");
  assert_eq!(message(fs.access("missing")), "ENOENT: no such file or directory, '/missing'");
  assert_eq!(message(fs.stat("/missing")), "ENOENT: no such file or directory, '/missing'");
  assert_eq!(fs.read_file("/x").unwrap_err().kind.code(), "ENOENT");
}

#[test]
fn append_creates_extends_and_refuses_directories() {
  let mut fs = MemoryFs::new();
  fs.append_file("/logs/a.log", "one\n").unwrap();
  fs.append_file("/logs/a.log", "two\n").unwrap();
  assert_eq!(text(&fs, "/logs/a.log"), "one\ntwo\n");
  assert_eq!(message(fs.append_file("/logs", "x")), "EISDIR: illegal operation on a directory, append '/logs'");
}

#[test]
fn mkdir_is_recursive_idempotent_and_stops_at_files() {
  let mut fs = MemoryFs::new();
  fs.mkdir("/a/b/c").unwrap();
  fs.mkdir("/a/b/c").unwrap();
  assert_eq!(fs.readdir("/a").unwrap(), ["b"]);
  fs.write_file("/f", "x").unwrap();
  assert_eq!(message(fs.mkdir("/f")), "ENOTDIR: not a directory, mkdir '/f'");
  // The file is named, not the path asked for, and nothing is created.
  assert_eq!(message(fs.mkdir("/f/g/h")), "ENOTDIR: not a directory, mkdir '/f'");
  assert_eq!(message(fs.write_file("/f/g", "x")), "ENOTDIR: not a directory, mkdir '/f'");
  assert!(fs.access("/f/g").is_err());
}

#[test]
fn readdir_lists_direct_children_sorted_by_utf16() {
  let mut fs = MemoryFs::new();
  for path in ["/d/b", "/d/a", "/d/sub/deep", "/d/\u{ff61}", "/d/\u{1f600}", "/d/B"] {
    fs.write_file(path, "").unwrap();
  }
  // UTF-16 order puts the astral emoji (a surrogate pair, 0xD83D...) before U+FF61; UTF-8 order would not.
  assert_eq!(fs.readdir("/d/").unwrap(), ["B", "a", "b", "sub", "\u{1f600}", "\u{ff61}"]);
  assert_eq!(fs.readdir("/").unwrap(), ["d"]);
  assert_eq!(message(fs.readdir("/d/a")), "ENOTDIR: not a directory, scandir '/d/a'");
  assert_eq!(message(fs.readdir("/zz")), "ENOENT: no such file or directory, '/zz'");
}

#[test]
fn rm_removes_files_and_directories_as_asked() {
  let mut fs = MemoryFs::new();
  fs.write_file("/d/x", "1").unwrap();
  fs.write_file("/d/e/y", "2").unwrap();
  fs.write_file("/dd", "3").unwrap();
  assert_eq!(message(fs.rm("/d", false, false)), "ENOTEMPTY: directory not empty, rm '/d'");
  assert_eq!(message(fs.rm("/gone", true, false)), "ENOENT: no such file or directory, rm '/gone'");
  fs.rm("/gone", false, true).unwrap();
  fs.rm("/d", true, false).unwrap();
  assert_eq!(fs.readdir("/").unwrap(), ["dd"]);
  assert!(fs.access("/d/e/y").is_err());
  fs.mkdir("/empty").unwrap();
  fs.rm("/empty", false, false).unwrap();
  fs.rm("/dd", false, false).unwrap();
  assert_eq!(fs.readdir("/").unwrap(), Vec::<String>::new());
}

#[test]
fn rm_of_the_root_removes_nothing() {
  let mut fs = MemoryFs::new();
  fs.write_file("/a", "1").unwrap();
  fs.rm("/", false, false).unwrap();
  fs.rm("/", true, false).unwrap();
  assert_eq!(fs.readdir("/").unwrap(), ["a"]);
}

#[test]
fn rename_moves_files_and_whole_trees() {
  let mut fs = MemoryFs::new();
  fs.write_file("/a.txt", "A").unwrap();
  fs.rename("/a.txt", "/moved/b.txt").unwrap();
  assert_eq!(text(&fs, "/moved/b.txt"), "A");
  assert!(fs.access("/a.txt").is_err());

  fs.write_file("/src/one", "1").unwrap();
  fs.write_file("/src/sub/two", "2").unwrap();
  fs.rename("/src", "/dst").unwrap();
  assert_eq!(fs.readdir("/dst").unwrap(), ["one", "sub"]);
  assert_eq!(text(&fs, "/dst/sub/two"), "2");
  assert!(fs.access("/src").is_err());
  assert!(fs.access("/src/sub/two").is_err());

  assert_eq!(message(fs.rename("/nothing", "/x")), "ENOENT: no such file or directory, '/nothing'");
  assert_eq!(message(fs.rename("/dst/one", "/moved/b.txt/c")), "ENOTDIR: not a directory, mkdir '/moved/b.txt'");
}

#[test]
fn rename_overwrites_the_target_and_onto_itself_deletes() {
  let mut fs = MemoryFs::new();
  fs.write_file("/a", "new").unwrap();
  fs.write_file("/b", "old").unwrap();
  fs.rename("/a", "/b").unwrap();
  assert_eq!(text(&fs, "/b"), "new");
  // Upstream sets the target, then deletes the source: the same path ends up gone.
  fs.rename("/b", "/b").unwrap();
  assert!(fs.access("/b").is_err());
}

#[test]
fn rename_into_its_own_subtree_follows_upstreams_map_walk() {
  let mut fs = MemoryFs::new();
  fs.write_file("/a/x", "1").unwrap();
  fs.rename("/a", "/a/b").unwrap();
  // `/a/b` is set, `/a` deleted; then every `/a/...` key moves under `/a/b`, the new `/a/b` included.
  assert_eq!(fs.stat("/a/b/x").unwrap().size, 1);
  assert!(fs.stat("/a/b/b").unwrap().is_directory);
  assert!(fs.access("/a").is_err());
  assert!(fs.access("/a/x").is_err());
}

#[test]
fn writes_replace_directories_as_upstream_does() {
  let mut fs = MemoryFs::new();
  fs.write_file("/d/child", "c").unwrap();
  fs.write_file("/d", "now a file").unwrap();
  assert_eq!(text(&fs, "/d"), "now a file");
  // The old child stays reachable by its path, as in upstream's flat map.
  assert_eq!(text(&fs, "/d/child"), "c");
  assert_eq!(message(fs.readdir("/d")), "ENOTDIR: not a directory, scandir '/d'");
}

#[test]
fn trailing_whitespace_segments_follow_upstreams_double_normalisation() {
  let mut fs = MemoryFs::new();
  // `/a /` normalises to `/a ` (the key written) ...
  fs.write_file("/d/a /", "x").unwrap();
  assert_eq!(text(&fs, "/d/a /"), "x");
  // ... but readdir names entries by normalising the key again, which trims it.
  assert_eq!(fs.readdir("/d").unwrap(), ["a"]);
  // appendFile on a missing `/b /` writes the twice-normalised `/b`.
  fs.append_file("/b /", "y").unwrap();
  assert_eq!(text(&fs, "/b"), "y");
  assert!(fs.access("/b /").is_err());
}

#[test]
fn seeds_create_parents_and_refuse_files_in_the_way() {
  let mut fs = MemoryFs::new();
  fs.seed_file("docs/readme.md", b"# hi").unwrap();
  assert_eq!(text(&fs, "/docs/readme.md"), "# hi");
  assert_eq!(fs.readdir("/").unwrap(), ["docs"]);
  assert_eq!(message(fs.seed_file("/docs/readme.md/x", b"")), "ENOTDIR: not a directory, mkdir '/docs/readme.md'");
}
