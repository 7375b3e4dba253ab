use serde_json::{Map, Value, json};

use super::append::heuristic_score;
use super::reads::read_for;
use super::recall::truncated;
use super::*;
use crate::adapters::{FileOutcome, FileRead};
use crate::tokens::{estimate_tokens, utf16_len};

fn config(base: &str) -> FileReferenceConfig {
  FileReferenceConfig::with_base_dir(base)
}

fn user(text: &str) -> Map<String, Value> {
  let item =
    json!({ "id": "u", "type": "message", "role": "user", "content": [{ "type": "input_text", "text": text }] });
  item.as_object().cloned().expect("an object")
}

fn text(content: &str) -> FileOutcome {
  FileOutcome::Text { text: content.into() }
}

/// One append's three steps, with every read answered by `answer` and every ask scored 75.
fn append(
  state: FileRefState,
  message: &str,
  cfg: &FileReferenceConfig,
  answer: impl Fn(&FileRead) -> FileOutcome,
) -> (AppendPlan, Settled) {
  let item = user(message);
  let plan = plan_append(&state, &[&item], cfg);
  let outcomes = plan.reads.iter().map(answer).collect();
  let mut settled = settle_reads(state, &plan, outcomes, cfg);
  let scores = vec![75.0; settled.asks.len()];
  let asks = settled.asks.clone();
  apply_scores(&mut settled.state, &asks, &scores);
  (plan, settled)
}

fn file<'a>(state: &'a FileRefState, reference: &str) -> &'a TrackedFile {
  state.get(reference).unwrap_or_else(|| panic!("{reference} is tracked"))
}

#[test]
fn finds_references_as_upstream_pattern_does() {
  let cases: [(&str, &[&str]); 14] = [
    ("Check out #test.ts please", &["test.ts"]),
    ("Compare #a.ts and #b.ts", &["a.ts", "b.ts"]),
    ("#dup.ts and #dup.ts again", &["dup.ts"]),
    ("Check #hashtag and #123 and #region", &[]),
    ("Check #/tmp/secret.txt", &[]),
    ("Check #../outside.ts", &["../outside.ts"]),
    ("#a.ts.", &["a.ts"]),
    ("#a.ts/", &["a.ts"]),
    ("#x.tar.gz", &["x.tar.gz"]),
    ("#a.ts-foo", &["a.ts"]),
    ("#a//b.ts", &[]),
    ("#a/b/../c.d/e", &["a/b/../c.d"]),
    ("see #src/a.ts,#b.md;#c and ##d.ts", &["src/a.ts", "b.md", "d.ts"]),
    ("#a.b-c.d_e é #é.ts", &["a.b-c.d"]),
  ];
  for (text, expected) in cases {
    assert_eq!(references(text), expected, "{text}");
  }
}

#[test]
fn writes_references_as_anchor_links() {
  assert_eq!(with_anchors("Check out #test.ts please"), "Check out [#test.ts](#test-ts) please");
  assert_eq!(with_anchors("Check #sub/dir/file.ts"), "Check [#sub/dir/file.ts](#sub-dir-file-ts)");
  assert_eq!(
    with_anchors("#Read_Me.MD, twice: #Read_Me.MD"),
    "[#Read_Me.MD](#read-me-md), twice: [#Read_Me.MD](#read-me-md)"
  );
  assert_eq!(with_anchors("no refs #here"), "no refs #here");
}

#[test]
fn refuses_what_may_not_be_read_before_touching_the_filesystem() {
  let cfg = config("/repo");
  let read = |path: &str| read_for(path, "/repo", &cfg);
  assert_eq!(read("/outside.ts").unwrap_err(), "PATH_TRAVERSAL: File outside allowed directory");
  assert_eq!(
    read("/repository/a.ts").unwrap_err(),
    "PATH_TRAVERSAL: File outside allowed directory",
    "a sibling sharing the prefix"
  );
  assert_eq!(read("/repo/tool.exe").unwrap_err(), "DISALLOWED_EXTENSION: .exe");
  assert_eq!(read("/repo/LICENSE").unwrap_err(), "DISALLOWED_EXTENSION: no extension");
  assert!(read("/repo/Dockerfile").is_ok() && read("/repo/.env").is_ok() && read("/repo/NOTES.MD").is_ok());
  let nested = read("/repo/a/b/c.ts").expect("readable");
  assert_eq!(nested.walk, ["/repo/a", "/repo/a/b", "/repo/a/b/c.ts"], "every component below baseDir is lstat'ed");
  assert_eq!(nested.max_size, Some(DEFAULT_MAX_FILE_SIZE));
  let follow = FileReferenceConfig { follow_symlinks: true, max_file_size: f64::INFINITY, ..config("/repo") };
  let followed = read_for("/repo/a/b/c.ts", "/repo", &follow).expect("readable");
  assert_eq!((followed.walk.len(), followed.max_size), (0, None));
  let root = read_for("/src/a.ts", "/", &cfg).expect("everything lies under /");
  assert_eq!(root.walk, ["/src", "/src/a.ts"]);
  let any = FileReferenceConfig { allowed_extensions: Vec::new(), ..config("/repo") };
  assert!(read_for("/repo/tool.exe", "/repo", &any).is_ok(), "an empty list allows everything");
}

#[test]
fn tracks_new_references_once_and_rewrites_the_message() {
  let cfg = config("/repo");
  let (plan, settled) =
    append(FileRefState::empty("/repo"), "See #config.json and #./config.json, #a.ts", &cfg, |read| {
      text(&format!("content of {}", read.path))
    });
  let rewritten = plan.items[0].as_ref().expect("rewritten");
  assert_eq!(
    rewritten["content"][0]["text"],
    "See [#config.json](#config-json) and [#./config.json](#--config-json), [#a.ts](#a-ts)"
  );
  assert_eq!(plan.reads.len(), 2, "two references to one file are one");
  let keys: Vec<&str> = settled.state.files.iter().map(|(key, _)| key.as_str()).collect();
  assert_eq!(keys, ["config.json", "a.ts"]);
  let config_file = file(&settled.state, "config.json");
  assert_eq!(config_file.content.as_deref(), Some("content of /repo/config.json"));
  assert_eq!((config_file.priority, config_file.token_count), (75.0, 7.0));
  assert!(settled.changed);
  assert!(settled.asks[0].prompt.contains("User Query: See #config.json"));
}

#[test]
fn an_unchanged_file_changes_nothing_and_a_changed_one_is_rescored() {
  let cfg = config("/repo");
  let (_, first) = append(FileRefState::empty("/repo"), "Check #a.ts", &cfg, |_| text("original"));
  let (plan, same) = append(first.state.clone(), "What about now?", &cfg, |_| text("original"));
  assert_eq!(plan.items, [None], "a message without references passes as it is");
  assert!(!same.changed && same.asks.is_empty());
  let (_, changed) = append(first.state.clone(), "and now?", &cfg, |_| text("modified"));
  assert!(changed.changed);
  assert_eq!(changed.asks.len(), 1, "rescored against the new question");
  assert_eq!(file(&changed.state, "a.ts").content.as_deref(), Some("modified"));
}

#[test]
fn a_file_always_shows_its_latest_read() {
  let cfg = FileReferenceConfig { max_file_size: 50.0, ..config("/repo") };
  let (_, big) =
    append(FileRefState::empty("/repo"), "Check #data.ts", &cfg, |_| FileOutcome::TooLarge { size: 200.0 });
  assert_eq!(file(&big.state, "data.ts").error.as_deref(), Some("FILE_TOO_LARGE: 200 bytes exceeds limit of 50"));
  let (_, gone) = append(big.state, "again", &cfg, |_| FileOutcome::Missing);
  let tracked = file(&gone.state, "data.ts");
  assert!(tracked.deleted && tracked.error.is_none(), "deleted, and no stale error");
  let (_, back) = append(gone.state, "again", &cfg, |_| text("ok"));
  let tracked = file(&back.state, "data.ts");
  assert_eq!((tracked.content.as_deref(), tracked.deleted, tracked.error.as_deref()), (Some("ok"), false, None));
  let (_, binary) = append(back.state, "and", &cfg, |_| text("PK\u{3}\u{4}\0\0"));
  assert_eq!(file(&binary.state, "data.ts").error.as_deref(), Some("BINARY_FILE: Binary files cannot be referenced"));
  let (_, broken) =
    append(binary.state, "and", &cfg, |_| FileOutcome::Failed { message: "EISDIR: illegal operation".into() });
  assert_eq!(file(&broken.state, "data.ts").error.as_deref(), Some("READ_FAILED: EISDIR: illegal operation"));
  assert!(broken.changed);
}

#[test]
fn references_that_may_not_be_read_are_tracked_with_their_error() {
  let cfg = FileReferenceConfig { allowed_extensions: vec![".ts".into()], ..config("/repo") };
  let (plan, settled) =
    append(FileRefState::empty("/repo"), "Check #../outside.ts and #bad.exe", &cfg, |_| text("never"));
  assert!(plan.reads.is_empty(), "nothing is read");
  assert_eq!(
    file(&settled.state, "../outside.ts").error.as_deref(),
    Some("PATH_TRAVERSAL: File outside allowed directory")
  );
  assert_eq!(file(&settled.state, "bad.exe").error.as_deref(), Some("DISALLOWED_EXTENSION: .exe"));
  let recalled = recall(&settled.state, 10_000.0).expect("recalls the errors").0;
  assert!(recalled.contains("## bad.exe\n\n[ERROR: DISALLOWED_EXTENSION: .exe]"), "{recalled}");
}

#[test]
fn only_input_text_messages_are_read() {
  let cfg = config("/repo");
  let assistant =
    json!({ "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": "#a.ts" }] });
  let mixed = json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "#b.ts" }, { "type": "input_image" }] });
  let developer =
    json!({ "type": "message", "role": "developer", "content": [{ "type": "input_text", "text": "#c.ts" }] });
  let items: Vec<&Map<String, Value>> = [&assistant, &mixed, &developer].iter().filter_map(|v| v.as_object()).collect();
  let plan = plan_append(&FileRefState::empty("/repo"), &items, &cfg);
  let found: Vec<&str> = plan.new_references.iter().map(|new| new.reference.as_str()).collect();
  assert_eq!(found, ["c.ts"], "any role's input text counts");
  assert_eq!(plan.new_references[0].query, "", "but only a user message is a query");
}

#[test]
fn recall_orders_by_priority_and_marks_deleted_files() {
  let mut state = FileRefState::empty("/repo");
  let entry = |reference: &str, content: Option<&str>, priority: f64, deleted: bool| TrackedFile {
    absolute_path: format!("/repo/{reference}"),
    reference_path: reference.into(),
    content: content.map(str::to_owned),
    priority,
    content_hash: String::new(),
    deleted,
    token_count: content.map_or(0.0, |c| estimate_tokens(c) as f64),
    error: None,
  };
  state.files.push(("low.ts".into(), entry("low.ts", Some("low priority file"), 20.0, false)));
  state.files.push(("high.ts".into(), entry("high.ts", Some("high priority file"), 80.0, false)));
  state.files.push(("gone.ts".into(), entry("gone.ts", None, 50.0, true)));
  let (text, tokens) = recall(&state, 10_000.0).expect("recalls");
  assert_eq!(
    text,
    "# Referenced Files\n\n## high.ts\n\n```\nhigh priority file\n```\n\n## gone.ts\n\n[FILE DELETED: /repo/gone.ts]\n\n## low.ts\n\n```\nlow priority file\n```"
  );
  assert_eq!(tokens, estimate_tokens(&text));
  assert_eq!(recall(&FileRefState::empty("/repo"), 10_000.0), None);
}

#[test]
fn recall_stays_within_the_budget() {
  let cfg = config("/repo");
  // Few long lines (AUDIT-A) and many short ones (AUDIT-B).
  let long = vec!["a".repeat(400); 5].join("\n");
  let many = (0..200).map(|i| format!("line number {i}")).collect::<Vec<_>>().join("\n");
  for (content, budget) in [(long, 80.0), (many.clone(), 100.0)] {
    let (_, settled) = append(FileRefState::empty("/repo"), "Check #big.ts", &cfg, |_| text(&content));
    let (text, tokens) = recall(&settled.state, budget).expect("something fits");
    assert!(tokens as f64 <= budget, "{tokens} tokens for a budget of {budget}");
    assert_eq!(tokens, estimate_tokens(&text));
  }
  let (_, settled) = append(FileRefState::empty("/repo"), "Check #many.ts", &cfg, |_| text(&many));
  let (text, _) = recall(&settled.state, 200.0).expect("fits");
  assert!(text.contains("line number 0\n") && text.contains("line number 199\n```"), "head and tail kept");
  assert!(text.contains("... [truncated "), "{text}");
  assert_eq!(recall(&settled.state, 3.0), None, "not even the header fits");
}

#[test]
fn truncation_keeps_whole_lines_around_a_marker() {
  let content = (1..=100).map(|i| format!("Line {i}: Some content here")).collect::<Vec<_>>().join("\n");
  let cut = truncated(&content, estimate_tokens(&content) as f64, 100.0);
  let omitted: usize = cut
    .split("[truncated ")
    .nth(1)
    .and_then(|rest| rest.split(' ').next())
    .and_then(|n| n.parse().ok())
    .expect("a marker");
  let kept = cut.lines().filter(|line| line.starts_with("Line ")).count();
  assert_eq!(kept + omitted, 100);
  assert!(cut.starts_with("Line 1: ") && cut.ends_with("Line 100: Some content here"));
  assert!(utf16_len(&cut) <= 400);
  assert_eq!(truncated("short", 2.0, 100.0), "short");
  assert_eq!(truncated("a\nb", 1.0, -5.0), "\n\n... [truncated 2 lines] ...\n\n");
}

#[test]
fn hashes_as_upstream() {
  assert_eq!(content_hash("hello"), "5:5e918d2");
  assert_eq!(content_hash("console.log(\"hello\");"), "21:-4db0d857");
  assert_eq!(content_hash(&"x".repeat(200)), "200:156b5c00");
  assert_eq!(content_hash("é😀"), "3:1e780c");
  assert_eq!(content_hash(""), "");
}

#[test]
fn reads_a_score_as_parse_int_does() {
  let cases = [
    (Some("75"), 75.0),
    (Some(" 42 is my answer"), 42.0),
    (Some("+7"), 7.0),
    (Some("-0"), 0.0),
    (Some("-5"), 50.0),
    (Some("101"), 50.0),
    (Some("0000100"), 100.0),
    (Some("99999999999999999999"), 50.0),
    (Some("high"), 50.0),
    (Some(""), 50.0),
    (None, 50.0),
  ];
  for (reply, score) in cases {
    assert_eq!(parse_score(reply), score, "{reply:?}");
  }
  assert_eq!(heuristic_score("src/auth.ts", "fix auth.ts"), 80.0);
  assert_eq!(heuristic_score("src/auth.ts", ""), 80.0, "an empty query is in every path");
  assert_eq!(heuristic_score("src/auth.ts", "what is this"), 50.0);
}

#[test]
fn checks_the_config() {
  let read = |given: Value| config_from(Sketch::of(&given), "/cwd");
  let ok = read(json!({ "baseDir": "/repo" })).expect("defaults");
  assert_eq!(ok, config("/repo"));
  assert_eq!(config_from(Sketch::of(&config_json(&ok)), "").expect("round trip"), ok);
  assert_eq!(read(json!({})).map(|c| c.base_dir), Ok("/cwd".into()), "the working directory by default");
  assert_eq!(read(json!({ "baseDir": "sub" })).map(|c| c.base_dir), Ok("/cwd/sub".into()), "relative to it");
  let infinity = json!({ "$sketch": "Infinity", "type": "number" });
  let unlimited = read(json!({ "baseDir": "/r", "maxFileSize": infinity, "allowedExtensions": [] })).expect("ok");
  assert_eq!((unlimited.max_file_size, unlimited.allowed_extensions.len()), (f64::INFINITY, 0));
  assert_eq!(config_from(Sketch::of(&config_json(&unlimited)), "").expect("round trip"), unlimited);
  let code = |given: Value| read(given).expect_err("refused").code;
  assert_eq!(code(json!({ "baseDir": "/r", "slot": { "$sketch": "NaN", "type": "number" } })), "INVALID_LAYER_SLOT");
  assert_eq!(code(json!({ "baseDir": "/r", "slot": "7" })), "INVALID_LAYER_SLOT");
  for bad in [
    json!({ "baseDir": "" }),
    json!({ "baseDir": 3 }),
    json!({ "baseDir": "/r", "maxFileSize": -1 }),
    json!({ "baseDir": "/r", "maxFileSize": "1mb" }),
    json!({ "baseDir": "/r", "followSymlinks": "yes" }),
    json!({ "baseDir": "/r", "allowedExtensions": [".ts", 3] }),
    json!({ "baseDir": "/r", "scoringModel": " " }),
  ] {
    assert_eq!(code(bad.clone()), "INVALID_FILE_REFERENCE_CONFIG", "{bad}");
  }
  let message = read(json!({ "baseDir": "/r", "maxFileSize": "1mb" })).expect_err("no").message;
  assert_eq!(message, "fileReference: maxFileSize must be a number of bytes, at least 0, got \"1mb\"");
  assert_eq!(config_from(Sketch::of(&json!({})), "").expect_err("no base").code, "INVALID_FILE_REFERENCE_CONFIG");
}

#[test]
fn init_rehydrates_a_saved_state_of_the_same_base_dir() {
  let cfg = config("/repo");
  let (_, settled) = append(FileRefState::empty("/repo"), "Check #a.ts", &cfg, |_| text("a"));
  let saved = settled.state.to_json();
  assert_eq!(init_state(Some(&saved), "/repo"), saved);
  assert_eq!(init_state(Some(&saved), "/elsewhere"), json!({ "files": {}, "baseDir": "/elsewhere" }));
  assert_eq!(init_state(Some(&json!({ "files": 3 })), "/repo"), json!({ "files": {}, "baseDir": "/repo" }));
  assert_eq!(init_state(None, "/repo"), json!({ "files": {}, "baseDir": "/repo" }));
  assert!(FileRefState::from_json(Some(&json!("broken")), "/repo").is_err());
}
