//! Token estimates, exactly as upstream: ⌈UTF-16 length / 4⌉.

/// Number of UTF-16 code units in `text`, the unit JS's `String.prototype.length` counts.
pub fn utf16_len(text: &str) -> usize {
  // ASCII is one unit per byte; only non-ASCII needs the slower count.
  if text.is_ascii() { text.len() } else { text.chars().map(char::len_utf16).sum() }
}

/// Tokens for a number of UTF-16 units.
pub fn tokens_for_units(units: usize) -> u64 {
  (units as u64).div_ceil(4)
}

/// `estimateTokens(text)`: ⌈UTF-16 length / 4⌉; the empty string costs 0.
pub fn estimate_tokens(text: &str) -> u64 {
  tokens_for_units(utf16_len(text))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn counts_utf16_units_not_bytes_or_chars() {
    assert_eq!(estimate_tokens(""), 0);
    assert_eq!(estimate_tokens("abcde"), 2);
    // One astral emoji is two UTF-16 units: one token, though it is four UTF-8 bytes.
    assert_eq!(estimate_tokens("😀"), 1);
    assert_eq!(utf16_len("😀"), 2);
    // 'é' is two UTF-8 bytes but one UTF-16 unit.
    assert_eq!(utf16_len("éééé"), 4);
    assert_eq!(estimate_tokens("éééé"), 1);
  }
}
