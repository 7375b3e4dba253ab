//! recall: the tracked files by priority within the budget, long ones cut to whole lines around a marker.

use super::{FileRefState, TrackedFile};
use crate::tokens::{estimate_tokens, utf16_len};

fn status_block(file: &TrackedFile) -> Option<String> {
  if file.deleted {
    return Some(format!("## {}\n\n[FILE DELETED: {}]", file.reference_path, file.absolute_path));
  }
  file.error.as_ref().map(|error| format!("## {}\n\n[ERROR: {error}]", file.reference_path))
}

fn marker(omitted: usize) -> String {
  format!("\n\n... [truncated {omitted} lines] ...\n\n")
}

/// How many lines, from `lines` in the order given, fit in `budget` UTF-16 units joined by newlines.
fn fitting<'a>(lines: impl Iterator<Item = &'a str>, budget: f64) -> usize {
  let mut used = 0usize;
  let mut count = 0;
  for line in lines {
    let next = utf16_len(line) + usize::from(count > 0);
    if (used + next) as f64 > budget {
      break;
    }
    used += next;
    count += 1;
  }
  count
}

/// The content cut to `remaining` tokens (4 UTF-16 units each): whole leading lines in 60% of the room, whole
/// trailing lines in the rest, and a marker saying how many lines were left out between them.
pub(super) fn truncated(content: &str, token_count: f64, remaining: f64) -> String {
  if token_count <= remaining {
    return content.to_owned();
  }
  let lines: Vec<&str> = content.split('\n').collect();
  let total = (remaining * 4.0).max(0.0);
  let room = (total - utf16_len(&marker(lines.len())) as f64).max(0.0);
  let head_count = fitting(lines.iter().copied(), (room * 0.6).floor());
  let head = lines[..head_count].join("\n");
  let tail_room = room - utf16_len(&head) as f64;
  let tail_count = fitting(lines[head_count..].iter().rev().copied(), tail_room);
  let tail = lines[lines.len() - tail_count..].join("\n");
  let omitted = lines.len() - head_count - tail_count;
  if omitted == 0 {
    return [head, tail].into_iter().filter(|part| !part.is_empty()).collect::<Vec<_>>().join("\n");
  }
  format!("{head}{}{tail}", marker(omitted))
}

fn block(file: &TrackedFile, used: f64, budget: f64) -> Option<String> {
  if let Some(status) = status_block(file) {
    return (used + estimate_tokens(&status) as f64 <= budget).then_some(status);
  }
  let text = file.text()?;
  let header = format!("## {}", file.reference_path);
  let header_tokens = estimate_tokens(&header) as f64;
  if used + header_tokens >= budget {
    return None;
  }
  let remaining = budget - used - header_tokens - 10.0;
  Some(format!("{header}\n\n```\n{}\n```", truncated(text, file.token_count, remaining)))
}

/// recall: under a "# Referenced Files" heading, each file by priority (highest first, ties in reference order):
/// a deleted or failing file as a one-line note, a readable one in a code block cut to what is left of the budget.
/// A block that does not fit is left out. Nothing when no block fits.
pub fn recall(state: &FileRefState, budget: f64) -> Option<(String, u64)> {
  let mut files: Vec<&TrackedFile> = state.files.iter().map(|(_, file)| file).collect();
  files.sort_by(|a, b| b.priority.partial_cmp(&a.priority).unwrap_or(std::cmp::Ordering::Equal));
  let mut used = 0.0;
  let mut blocks = Vec::new();
  for file in files {
    if let Some(block) = block(file, used, budget) {
      used += estimate_tokens(&block) as f64;
      blocks.push(block);
    }
  }
  if blocks.is_empty() {
    return None;
  }
  let text = format!("# Referenced Files\n\n{}", blocks.join("\n\n"));
  let tokens = estimate_tokens(&text);
  Some((text, tokens))
}
