//! JSON text from JS, read the same way everywhere it crosses into Rust.
//!
//! JS strings may hold lone UTF-16 surrogates (an emoji cut in half by `slice`). `JSON.stringify` writes them as
//! `\udXXX` escapes, which `serde_json` refuses, and Rust strings cannot hold them. So every JSON text that comes
//! from JS is parsed with each unpaired surrogate replaced by U+FFFD, the one replacement this crate makes
//! (DECISIONS, Strings). Text that has none costs one ordinary parse.

use serde::de::{DeserializeOwned, Error as _};

/// How deep a value from JS may nest. Deeper values are refused with a clear error rather than risk the stack:
/// Rust walks, copies and drops values recursively.
pub const MAX_DEPTH: usize = 128;

/// A number as JS describes it in JSON: a JSON number, or NaN / ±Infinity, which JSON cannot carry, as the strings
/// `"NaN"`, `"Infinity"` and `"-Infinity"`.
pub fn described_number(value: &serde_json::Value) -> Option<f64> {
  match value {
    serde_json::Value::Number(n) => n.as_f64(),
    serde_json::Value::String(text) => match text.as_str() {
      "NaN" => Some(f64::NAN),
      "Infinity" => Some(f64::INFINITY),
      "-Infinity" => Some(f64::NEG_INFINITY),
      _ => None,
    },
    _ => None,
  }
}

/// Parses JSON text from JS, replacing each unpaired surrogate escape with U+FFFD.
pub fn from_js_json<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
  parse(text, false).map_err(|error| {
    if error.to_string().starts_with("recursion limit exceeded") {
      serde_json::Error::custom(format!("the value nests deeper than {MAX_DEPTH} levels, the most Noetic accepts"))
    } else {
      error
    }
  })
}

/// Whether `JSON.parse` would read `text`. A value nesting deeper than [`MAX_DEPTH`] counts as JSON (JS reads it;
/// whoever takes it in refuses it with its own error), so only text that is not JSON at all is false.
pub fn is_js_json(text: &str) -> bool {
  match parse::<serde::de::IgnoredAny>(text, false) {
    Ok(_) => true,
    Err(error) => error.to_string().starts_with("recursion limit exceeded"),
  }
}

/// As [`from_js_json`], for values that may rightly nest deeper than [`MAX_DEPTH`] (a JSON step tree, whose every
/// level is an object in a list): the text's nesting is measured first, without recursion, and a value nesting
/// past `max_nesting` is refused before anything recurses into it.
pub fn from_js_json_nested<T: DeserializeOwned>(text: &str, max_nesting: usize) -> serde_json::Result<T> {
  let nesting = nesting_of(text);
  if nesting > max_nesting {
    return Err(serde_json::Error::custom(format!("the value nests {nesting} levels deep, more than {max_nesting}")));
  }
  parse(text, true)
}

fn parse<T: DeserializeOwned>(text: &str, unbounded: bool) -> serde_json::Result<T> {
  let read = |text: &str| -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    if unbounded {
      de.disable_recursion_limit();
    }
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
  };
  match read(text) {
    Ok(value) => Ok(value),
    Err(first) => match replace_lone_surrogate_escapes(text) {
      Some(fixed) => read(&fixed),
      None => Err(first),
    },
  }
}

/// A JS string's UTF-16 units as UTF-8, a lone surrogate as U+FFFD (B1). The buffer starts at a byte a unit, which
/// ASCII takes, and grows only for the rest of a text past ASCII: zeroing three bytes a unit up front cost more than
/// the conversion.
pub fn utf16_to_utf8(units: &[u16]) -> String {
  let mut bytes = vec![0u8; units.len() + 8];
  let (mut read, mut used) = (0, 0);
  loop {
    let (r, w) = encoding_rs::mem::convert_utf16_to_utf8_partial(&units[read..], &mut bytes[used..]);
    read += r;
    used += w;
    if read == units.len() {
      break;
    }
    bytes.resize(used + (units.len() - read) * 3 + 8, 0);
  }
  bytes.truncate(used);
  // SAFETY: the converter writes well-formed UTF-8.
  unsafe { String::from_utf8_unchecked(bytes) }
}

/// JSON text from JS made fit to be kept as text, without parsing it: refused past [`MAX_DEPTH`] as a parse would
/// be, and with each unpaired surrogate escape replaced by U+FFFD, as a parse would read it (one scan, and a copy
/// only when there is a surrogate escape).
pub fn js_json_text(text: String) -> Result<String, String> {
  let (deepest, surrogate_escape) = scan(&text);
  if deepest > MAX_DEPTH {
    return Err(format!("the value nests deeper than {MAX_DEPTH} levels, the most Noetic accepts"));
  }
  Ok(if surrogate_escape { replace_lone_surrogate_escapes(&text).unwrap_or(text) } else { text })
}

/// How deeply the arrays and objects of a JSON text nest (brackets inside strings do not count).
fn nesting_of(text: &str) -> usize {
  scan(text).0
}

/// One pass over a JSON text: how deeply it nests, and whether a string holds a surrogate escape (`\uD800`-
/// `\uDFFF`, lone or paired; JSON.stringify writes pairs as they are, so usually a lone one). Strings are skipped
/// to their closing quote, looking only at escapes on the way.
fn scan(text: &str) -> (usize, bool) {
  let (mut depth, mut deepest, mut surrogate_escape) = (0usize, 0usize, false);
  let bytes = text.as_bytes();
  let mut i = 0;
  while i < bytes.len() {
    match bytes[i] {
      b'"' => {
        i += 1;
        while let Some(at) = bytes.get(i..).and_then(|rest| memchr::memchr2(b'"', b'\\', rest)) {
          i += at + 1;
          if bytes[i - 1] == b'"' {
            break;
          }
          if matches!(bytes.get(i..i + 3), Some([b'u', b'd' | b'D', b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F'])) {
            surrogate_escape = true;
          }
          i += 1;
        }
        continue;
      }
      b'[' | b'{' => {
        depth += 1;
        deepest = deepest.max(depth);
      }
      b']' | b'}' => depth = depth.saturating_sub(1),
      _ => {}
    }
    i += 1;
  }
  (deepest, surrogate_escape)
}

/// `text` with every `\uXXXX` escape of an unpaired surrogate replaced by `\ufffd`; `None` when there is none.
fn replace_lone_surrogate_escapes(text: &str) -> Option<String> {
  let bytes = text.as_bytes();
  let hex_at = |i: usize| -> Option<u16> {
    let digits = text.get(i..i + 4)?;
    u16::from_str_radix(digits, 16).ok()
  };
  // A `\u` escape at `i` (the backslash) and its code unit.
  let escape_at = |i: usize| -> Option<u16> {
    if bytes.get(i) == Some(&b'\\') && bytes.get(i + 1) == Some(&b'u') { hex_at(i + 2) } else { None }
  };
  let mut out: Option<String> = None;
  let mut copied = 0;
  let mut i = 0;
  while i < bytes.len() {
    if bytes[i] != b'\\' {
      i += 1;
      continue;
    }
    let Some(unit) = escape_at(i) else {
      // Some other escape: skip the backslash and the escaped character together.
      i += 2;
      continue;
    };
    let is_high = (0xd800..0xdc00).contains(&unit);
    let is_low = (0xdc00..0xe000).contains(&unit);
    if is_high && escape_at(i + 6).is_some_and(|next| (0xdc00..0xe000).contains(&next)) {
      i += 12;
      continue;
    }
    if is_high || is_low {
      let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
      buf.push_str(&text[copied..i]);
      buf.push_str("\\ufffd");
      copied = i + 6;
    }
    i += 6;
  }
  let mut buf = out?;
  buf.push_str(&text[copied..]);
  Some(buf)
}

#[cfg(test)]
mod tests {
  use serde_json::{Value, json};

  use super::*;

  #[test]
  fn utf16_becomes_utf8_with_lone_surrogates_replaced() {
    // ASCII, then text past it (the buffer grows), then a lone half of 😀 (D83D DE00) and a pair.
    let mut units: Vec<u16> = "plain ascii, then 東京 and 😀 ".encode_utf16().collect();
    units.extend([0xd83d, 0x41, 0xde00]);
    units.extend("é".repeat(40).encode_utf16());
    assert_eq!(utf16_to_utf8(&units), format!("plain ascii, then 東京 and 😀 \u{fffd}A\u{fffd}{}", "é".repeat(40)));
    assert_eq!(utf16_to_utf8(&[]), "");
  }

  #[test]
  fn unpaired_surrogates_become_the_replacement_character_and_pairs_stay() {
    let text = r#"{"a":"\ud800x","b":"\udc00","c":"\ud83d\ude00","d":"\\ud800","e":"\uD83D"}"#;
    let value: Value = from_js_json(text).expect("parsed");
    assert_eq!(value, json!({"a": "\u{fffd}x", "b": "\u{fffd}", "c": "😀", "d": "\\ud800", "e": "\u{fffd}"}));
  }

  #[test]
  fn text_kept_as_text_is_checked_and_made_well_formed_as_a_parse_would() {
    let plain = r#"{"a":"x\\ud800","b":[1e+21]}"#.to_owned();
    assert_eq!(js_json_text(plain.clone()).as_deref(), Ok(plain.as_str()));
    let lone = r#"{"a":"said\ud83d","b":"\ud83d\ude00"}"#.to_owned();
    assert_eq!(js_json_text(lone).as_deref(), Ok(r#"{"a":"said\ufffd","b":"\ud83d\ude00"}"#));
    let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    assert!(js_json_text(deep).unwrap_err().contains("deeper than 128 levels"));
    // Not JSON.stringify's, but never a panic: a text that ends inside a string or an escape.
    for cut in [r#"["ab"#, r#"["ab\"#, r#"["\ud8"#] {
      assert!(js_json_text(cut.to_owned()).is_ok());
    }
    let fine = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(js_json_text(fine).is_ok());
  }

  #[test]
  fn a_high_surrogate_at_the_very_end_and_keys_with_surrogates_are_read() {
    let value: Value = from_js_json(r#"{"\ud83d":["\ud83d"]}"#).expect("parsed");
    assert_eq!(value, json!({"\u{fffd}": ["\u{fffd}"]}));
  }

  #[test]
  fn too_deep_a_value_is_refused_with_a_clear_reason() {
    let deep = format!("{}1{}", "[".repeat(MAX_DEPTH + 2), "]".repeat(MAX_DEPTH + 2));
    let error = from_js_json::<Value>(&deep).expect_err("too deep");
    assert!(error.to_string().contains("nests deeper than 128 levels"), "{error}");
    let fine = format!("{}1{}", "[".repeat(MAX_DEPTH - 1), "]".repeat(MAX_DEPTH - 1));
    assert!(from_js_json::<Value>(&fine).is_ok());
  }

  #[test]
  fn deeper_values_are_read_when_asked_and_refused_past_the_limit_before_parsing() {
    let nested = |n: usize| format!("{}\"[{{\"{}", "[{\"a\":".repeat(n), "}]".repeat(n));
    assert_eq!(nesting_of(&nested(3)), 6);
    let value: Value = from_js_json_nested(&nested(200), 400).expect("parsed");
    assert!(value.is_array());
    let error = from_js_json_nested::<Value>(&nested(201), 400).expect_err("too deep");
    assert!(error.to_string().contains("nests 402 levels deep, more than 400"), "{error}");
    let with_surrogate: Value = from_js_json_nested(r#"[{"a":"\ud800"}]"#, 4).expect("parsed");
    assert_eq!(with_surrogate, json!([{"a": "\u{fffd}"}]));
  }

  #[test]
  fn text_without_lone_surrogates_is_left_alone_and_bad_json_still_fails() {
    assert_eq!(replace_lone_surrogate_escapes(r#"{"a":"\ud83d\ude00\\ud800"}"#), None);
    assert!(from_js_json::<Value>("{").is_err());
    assert!(from_js_json::<Value>(r#"{"a":"\ud800"#).is_err());
  }
}
