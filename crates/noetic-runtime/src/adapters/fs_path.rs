//! Paths as upstream's in-memory filesystem reads them: trimmed (JS `String.prototype.trim`), always absolute,
//! `.` and empty segments dropped, `..` popping a segment (never above `/`).
//!
//! Normalising twice is not always the same as once: the trim applies to the whole string, so `/a /` becomes `/a `
//! and then `/a`. Upstream normalises some paths twice (a parent computed from a normalised path, a lookup of one),
//! and [`super::MemoryFs`] repeats exactly those calls so that such paths land on the same keys as upstream's.

/// The characters JS's `trim` removes (WhiteSpace and LineTerminator). Unlike `char::is_whitespace` it includes
/// U+FEFF and excludes U+0085.
fn is_js_whitespace(c: char) -> bool {
  matches!(
    c,
    '\u{9}'..='\u{d}'
      | ' '
      | '\u{a0}'
      | '\u{1680}'
      | '\u{2000}'..='\u{200a}'
      | '\u{2028}'
      | '\u{2029}'
      | '\u{202f}'
      | '\u{205f}'
      | '\u{3000}'
      | '\u{feff}'
  )
}

/// The absolute form of `path`: `''` and whitespace are `/`, `a/./b/../c` is `/a/c`, `/..` is `/`.
pub fn normalize_path(path: &str) -> String {
  let raw = path.trim_matches(is_js_whitespace);
  let mut parts: Vec<&str> = Vec::new();
  for part in raw.split('/') {
    match part {
      "" | "." => {}
      ".." => {
        parts.pop();
      }
      _ => parts.push(part),
    }
  }
  format!("/{}", parts.join("/"))
}

/// `normalize_path(normalized)` for a path that is already normalised, without redoing the work: only a trailing
/// whitespace character can change it.
pub fn renormalize(normalized: String) -> String {
  if normalized.ends_with(is_js_whitespace) { normalize_path(&normalized) } else { normalized }
}

/// The directory that holds `path` (normalised first); `/` for `/` and its children.
pub fn parent_path(path: &str) -> String {
  let normalized = normalize_path(path);
  match normalized.rfind('/') {
    Some(idx) if idx > 0 => normalized[..idx].to_owned(),
    _ => "/".to_owned(),
  }
}

/// The last segment of `path` (normalised first); empty for `/`.
pub fn basename(path: &str) -> String {
  let normalized = normalize_path(path);
  normalized.rfind('/').map_or(String::new(), |idx| normalized[idx + 1..].to_owned())
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn normalises_like_upstream() {
    let cases = [
      ("", "/"),
      ("   ", "/"),
      ("/", "/"),
      ("a", "/a"),
      ("a/b/", "/a/b"),
      ("//a//b", "/a/b"),
      ("/a/./b/../c", "/a/c"),
      ("/../..", "/"),
      ("  /x/y  ", "/x/y"),
      ("/a /", "/a "),
      ("/a b/c", "/a b/c"),
      ("\u{feff}/bom", "/bom"),
      ("/nel\u{85}", "/nel\u{85}"),
      ("..", "/"),
    ];
    for (input, expected) in cases {
      assert_eq!(normalize_path(input), expected, "normalize_path({input:?})");
    }
  }

  #[test]
  fn normalising_twice_can_trim_again() {
    assert_eq!(normalize_path(&normalize_path("/a /")), "/a");
    assert_eq!(renormalize(normalize_path("/a /")), "/a");
    assert_eq!(renormalize("/a b/c".to_owned()), "/a b/c");
  }

  #[test]
  fn parents_and_basenames() {
    assert_eq!(parent_path("/"), "/");
    assert_eq!(parent_path("/a"), "/");
    assert_eq!(parent_path("a/b/c"), "/a/b");
    assert_eq!(parent_path("/a/b/.."), "/");
    assert_eq!(basename("/"), "");
    assert_eq!(basename("/a/b.txt"), "b.txt");
    assert_eq!(basename("/a/b "), "b");
  }
}
