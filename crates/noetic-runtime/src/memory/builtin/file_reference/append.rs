//! An append in three steps: plan (references, rewritten items, reads), settle (the outcomes folded into the
//! state, the files to score) and scores.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::reads::{ReadResult, basename, content_hash, normalize, read_for, read_result, resolve};
use super::references::{references, with_anchors};
use super::{FileRefState, FileReferenceConfig, TrackedFile};
use crate::adapters::{FileOutcome, FileRead};
use crate::tokens::{estimate_tokens, utf16_prefix};

/// The score a file gets when the model cannot give one.
const NEUTRAL_SCORE: f64 = 50.0;
/// How much of a file the scoring prompt shows, in UTF-16 units.
const SCORING_EXCERPT: usize = 2_000;

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
      let was_shown = !file.deleted && file.error.is_none();
      // The same text is the common case (every append reads every file): compared as is, before any hashing.
      if was_shown && file.content.as_deref() == Some(text.as_str()) {
        return None;
      }
      let hash = content_hash(&text);
      if was_shown && file.content.is_some() && hash == file.content_hash {
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
pub(super) fn heuristic_score(reference: &str, query: &str) -> f64 {
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
    (_, 0.0) => 0.0,
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
