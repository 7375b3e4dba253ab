//! Token counts: upstream's estimate, exactly (⌈UTF-16 length / 4⌉), and the optional real BPE tokenizers.

/// Number of UTF-16 code units in `text`, the unit JS's `String.prototype.length` counts.
pub fn utf16_len(text: &str) -> usize {
  let bytes = text.as_bytes();
  // Most item texts are ASCII, one unit a byte; the check runs a word at a time.
  if bytes.is_ascii() {
    return bytes.len();
  }
  // Every character but a continuation byte starts one unit, and a four-byte one (outside the BMP) a second: counted
  // byte by byte without decoding, in runs short enough for a byte-wide count (at most 2 a byte), which the compiler
  // vectorises 16 bytes at a time (a usize-wide count went 4 at a time).
  bytes
    .chunks(127)
    .map(|run| usize::from(run.iter().fold(0u8, |units, &b| units + u8::from(b & 0xC0 != 0x80) + u8::from(b >= 0xF0))))
    .sum()
}

/// The longest prefix of `text` of at most `units` UTF-16 units: JS's `text.slice(0, units)`, except that a cut
/// through a surrogate pair drops the pair's first half too (a Rust string cannot hold it alone).
pub fn utf16_prefix(text: &str, units: usize) -> &str {
  let mut used = 0;
  for (at, c) in text.char_indices() {
    used += c.len_utf16();
    if used > units {
      return &text[..at];
    }
  }
  text
}

/// Tokens for a number of UTF-16 units.
pub fn tokens_for_units(units: usize) -> u64 {
  (units as u64).div_ceil(4)
}

/// `estimateTokens(text)`: ⌈UTF-16 length / 4⌉; the empty string costs 0.
pub fn estimate_tokens(text: &str) -> u64 {
  tokens_for_units(utf16_len(text))
}

/// A real tokenizer a harness may be given (`tokenizer: 'o200k' | 'cl100k'`), counting BPE tokens offline with
/// `tiktoken-rs`: its vocabularies ship inside the crate, and each is loaded once, when first used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokenizer {
  O200k,
  Cl100k,
}

impl Tokenizer {
  pub const NAMES: [&'static str; 2] = ["o200k", "cl100k"];

  pub fn parse(name: &str) -> Option<Self> {
    match name {
      "o200k" => Some(Self::O200k),
      "cl100k" => Some(Self::Cl100k),
      _ => None,
    }
  }

  /// The number of tokens `text` encodes to, special-token names counted as plain text.
  pub fn count(self, text: &str) -> u64 {
    let bpe = match self {
      Self::O200k => tiktoken_rs::o200k_base_singleton(),
      Self::Cl100k => tiktoken_rs::cl100k_base_singleton(),
    };
    bpe.count_ordinary(text) as u64
  }
}

/// What a harness counts with: its tokenizer when it has one, upstream's estimate otherwise.
pub fn count_tokens(tokenizer: Option<Tokenizer>, text: &str) -> u64 {
  tokenizer.map_or_else(|| estimate_tokens(text), |tokenizer| tokenizer.count(text))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn prefixes_by_utf16_units() {
    assert_eq!(utf16_prefix("abcdef", 3), "abc");
    assert_eq!(utf16_prefix("ab", 9), "ab");
    assert_eq!(utf16_prefix("é😀x", 3), "é😀");
    assert_eq!(utf16_prefix("é😀x", 2), "é", "half a pair is not kept");
    assert_eq!(utf16_prefix("abc", 0), "");
  }

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
    // Characters of every UTF-8 length, at every alignment, count as decoding them would.
    let mixed: String = "a\u{7f}\u{80}é\u{7ff}\u{800}北\u{ffff}\u{10000}😀\u{10ffff}".repeat(37);
    for start in mixed.char_indices().map(|(i, _)| i).take(40) {
      let text = &mixed[start..];
      assert_eq!(utf16_len(text), text.chars().map(char::len_utf16).sum::<usize>(), "from byte {start}");
    }
    // Runs of the widest characters, and ASCII with one character past it at the end.
    assert_eq!(utf16_len(&"😀".repeat(300)), 600);
    assert_eq!(utf16_len(&format!("{}é", "a".repeat(1000))), 1001);
  }

  #[test]
  fn the_real_tokenizers_count_bpe_tokens() {
    // Reference counts of these texts under each vocabulary (as tiktoken gives them).
    assert_eq!(Tokenizer::O200k.count("hello world"), 2);
    assert_eq!(Tokenizer::Cl100k.count("hello world"), 2);
    assert_eq!(Tokenizer::O200k.count(""), 0);
    // Special-token names are plain text here, never an error.
    assert!(Tokenizer::Cl100k.count("<|endoftext|>") > 1);
    // The two vocabularies differ: o200k encodes non-Latin text more tightly.
    let text = "東京の天気は晴れです。データを読み込みます。";
    assert!(Tokenizer::O200k.count(text) < Tokenizer::Cl100k.count(text));
    assert_eq!(count_tokens(None, "abcde"), 2);
    assert_eq!(count_tokens(Some(Tokenizer::O200k), "hello world"), 2);
    assert_eq!(Tokenizer::parse("o200k"), Some(Tokenizer::O200k));
    assert_eq!(Tokenizer::parse("gpt2"), None);
  }
}
