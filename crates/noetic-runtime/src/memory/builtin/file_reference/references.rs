//! `#path` references as upstream's pattern finds them, and their anchor links.

/// A character a path segment may hold.
fn in_segment(b: u8) -> bool {
  b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// The end of the reference whose path starts at `start` (just after a `#`), as upstream's pattern matches it:
/// directory segments `seg/`, then a name holding a dot followed by letters or digits. The pattern is greedy, so
/// the match takes as many directories as it can, then in its last segment the last dot followed by an
/// alphanumeric, and all the alphanumerics after it.
fn reference_end(bytes: &[u8], start: usize) -> Option<usize> {
  let run_end = start + bytes[start..].iter().take_while(|&&b| in_segment(b) || b == b'/').count();
  // Segment bounds, up to the first empty one (a `//` or the run's end), which no directory can cross.
  let mut segments = Vec::new();
  let mut from = start;
  loop {
    let end = bytes[from..run_end].iter().position(|&b| b == b'/').map_or(run_end, |at| from + at);
    segments.push((from, end));
    if end == run_end || end == from {
      break;
    }
    from = end + 1;
  }
  segments.iter().rev().find_map(|&(from, end)| {
    let dot =
      (from + 1..end.saturating_sub(1)).rev().find(|&at| bytes[at] == b'.' && bytes[at + 1].is_ascii_alphanumeric())?;
    Some(dot + 1 + bytes[dot + 1..end].iter().take_while(|b| b.is_ascii_alphanumeric()).count())
  })
}

/// Each reference in `text`, as the byte range of its path (without the `#`), in order.
fn reference_spans(text: &str) -> Vec<(usize, usize)> {
  let bytes = text.as_bytes();
  let mut spans = Vec::new();
  let mut at = 0;
  while let Some(offset) = bytes[at..].iter().position(|&b| b == b'#') {
    let start = at + offset + 1;
    match reference_end(bytes, start) {
      Some(end) => {
        spans.push((start, end));
        at = end;
      }
      None => at = start,
    }
  }
  spans
}

/// The distinct references in `text`, in the order they first appear.
pub fn references(text: &str) -> Vec<String> {
  let mut found: Vec<String> = Vec::new();
  for (start, end) in reference_spans(text) {
    let path = &text[start..end];
    if !found.iter().any(|known| known == path) {
      found.push(path.to_owned());
    }
  }
  found
}

/// The anchor of a reference: every character but ASCII letters, digits and `-` becomes `-`, lower-cased.
pub fn anchor(path: &str) -> String {
  path.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c.to_ascii_lowercase() } else { '-' }).collect()
}

/// `text` with every reference written as a markdown link to its anchor: `#a.ts` becomes `[#a.ts](#a-ts)`.
pub fn with_anchors(text: &str) -> String {
  let mut out = String::with_capacity(text.len() + 16);
  let mut copied = 0;
  for (start, end) in reference_spans(text) {
    let path = &text[start..end];
    out.push_str(&text[copied..start - 1]);
    out.push_str(&format!("[#{path}](#{})", anchor(path)));
    copied = end;
  }
  out.push_str(&text[copied..]);
  out
}
