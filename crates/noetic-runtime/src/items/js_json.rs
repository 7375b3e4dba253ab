//! JS `JSON.stringify`, byte for byte, for `serde_json` values.
//!
//! Item costs are ⌈UTF-16 length of the item's compact JSON / 4⌉ (spec §0), so the serialisation has to agree
//! with V8 exactly: the same escapes, the same number spelling, the same key order. [`js_json_utf16_len`] gives the
//! length without building the string, for costing items made in Rust.
//!
//! Key order: JS enumerates an object's array-index keys ("0", "17", ...) first, in ascending numeric order, and
//! the remaining keys in insertion order. `serde_json` (with `preserve_order`) keeps plain insertion order, so
//! objects holding such keys are reordered on output. Order never changes the length.

use std::fmt::{self, Write as _};

use serde_json::{Map, Number, Value};

/// Compact JS JSON text of `v`.
pub fn to_js_json(v: &Value) -> String {
  let mut out = String::new();
  write_value(&mut out, v);
  out
}

/// Appends the compact JS JSON text of `v` to `out`.
pub(crate) fn write_js_json(out: &mut String, v: &Value) {
  write_value(out, v);
}

/// Compact JS JSON text of an object.
pub fn object_to_js_json(map: &Map<String, Value>) -> String {
  let mut out = String::new();
  write_object(&mut out, map);
  out
}

/// UTF-16 length of [`to_js_json`]`(v)`, computed by walking the tree.
pub fn js_json_utf16_len(v: &Value) -> usize {
  match v {
    Value::Null => 4,
    Value::Bool(true) => 4,
    Value::Bool(false) => 5,
    Value::Number(n) => number_len(n),
    Value::String(s) => string_len(s),
    Value::Array(items) => {
      // Brackets plus one comma between each pair of elements.
      2 + items.len().saturating_sub(1) + items.iter().map(js_json_utf16_len).sum::<usize>()
    }
    Value::Object(map) => object_js_json_utf16_len(map),
  }
}

/// UTF-16 length of [`object_to_js_json`]`(map)`.
pub fn object_js_json_utf16_len(map: &Map<String, Value>) -> usize {
  // Braces, commas between entries, and a colon per entry.
  let punctuation = 2 + map.len().saturating_sub(1) + map.len();
  punctuation + map.iter().map(|(k, v)| string_len(k) + js_json_utf16_len(v)).sum::<usize>()
}

// UTF-16 units each UTF-8 byte contributes to the JSON form of a string. ASCII bytes count their escaped width;
// a multi-byte character is counted at its lead byte (one unit, two for 4-byte sequences = surrogate pairs) and
// its continuation bytes count zero.
const UNITS_PER_BYTE: [u8; 256] = {
  let mut table = [0u8; 256];
  let mut b = 0;
  while b < 256 {
    table[b] = match b as u8 {
      b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 2,
      0x00..=0x1f => 6,
      0x20..=0x7f => 1,
      0x80..=0xbf => 0,
      0xc0..=0xef => 1,
      _ => 2,
    };
    b += 1;
  }
  table
};

fn string_len(s: &str) -> usize {
  2 + s.bytes().map(|b| UNITS_PER_BYTE[b as usize] as usize).sum::<usize>()
}

fn write_value(out: &mut String, v: &Value) {
  match v {
    Value::Null => out.push_str("null"),
    Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
    Value::Number(n) => write_number(out, n),
    Value::String(s) => write_string(out, s),
    Value::Array(items) => {
      out.push('[');
      for (i, item) in items.iter().enumerate() {
        if i > 0 {
          out.push(',');
        }
        write_value(out, item);
      }
      out.push(']');
    }
    Value::Object(map) => write_object(out, map),
  }
}

fn write_object(out: &mut String, map: &Map<String, Value>) {
  out.push('{');
  let mut first = true;
  let mut entry = |out: &mut String, k: &str, v: &Value| {
    if !first {
      out.push(',');
    }
    first = false;
    write_string(out, k);
    out.push(':');
    write_value(out, v);
  };
  if map.keys().any(|k| array_index(k).is_some()) {
    let mut indexed: Vec<(u32, &String, &Value)> =
      map.iter().filter_map(|(k, v)| array_index(k).map(|i| (i, k, v))).collect();
    indexed.sort_unstable_by_key(|(i, _, _)| *i);
    for (_, k, v) in indexed {
      entry(out, k, v);
    }
    for (k, v) in map.iter().filter(|(k, _)| array_index(k).is_none()) {
      entry(out, k, v);
    }
  } else {
    for (k, v) in map {
      entry(out, k, v);
    }
  }
  out.push('}');
}

/// The numeric value of a key JS treats as an array index: canonical decimal digits below 2³² − 1.
fn array_index(key: &str) -> Option<u32> {
  let bytes = key.as_bytes();
  if bytes.is_empty() || bytes.len() > 10 || !bytes.iter().all(u8::is_ascii_digit) {
    return None;
  }
  if bytes.len() > 1 && bytes[0] == b'0' {
    return None;
  }
  let n: u64 = key.parse().ok()?;
  if n < u64::from(u32::MAX) { u32::try_from(n).ok() } else { None }
}

pub(crate) fn write_string(out: &mut String, s: &str) {
  out.push('"');
  push_escaped(out, s);
  out.push('"');
}

/// `first`, `separator` and `second` as one JSON string literal, without joining them into a string first (an
/// event's `<agent>:<kind>` type, written several times a turn).
pub(crate) fn write_joined_string(out: &mut String, first: &str, separator: char, second: &str) {
  out.push('"');
  push_escaped(out, first);
  push_escaped(out, separator.encode_utf8(&mut [0; 4]));
  push_escaped(out, second);
  out.push('"');
}

/// `s` as the inside of a JSON string literal, escaped as V8 escapes it. Runs that need no escape (nearly all text)
/// are found eight bytes at a time.
fn push_escaped(out: &mut String, s: &str) {
  let bytes = s.as_bytes();
  let (mut run_start, mut i) = (0, 0);
  while i < bytes.len() {
    if let Some(word) = bytes.get(i..i + 8)
      && !needs_escape(u64::from_le_bytes(word.try_into().unwrap_or_default()))
    {
      i += 8;
      continue;
    }
    let b = bytes[i];
    let escape: &str = match b {
      b'"' => "\\\"",
      b'\\' => "\\\\",
      0x08 => "\\b",
      0x09 => "\\t",
      0x0a => "\\n",
      0x0c => "\\f",
      0x0d => "\\r",
      0x00..=0x1f => "",
      _ => {
        i += 1;
        continue;
      }
    };
    // Only ASCII bytes reach here, so `i` is a char boundary.
    out.push_str(&s[run_start..i]);
    if escape.is_empty() {
      // Other control characters: \u00xx with lowercase hex, as V8 writes them.
      let _ = write!(out, "\\u{:04x}", b);
    } else {
      out.push_str(escape);
    }
    i += 1;
    run_start = i;
  }
  out.push_str(&s[run_start..]);
}

/// Whether any of eight bytes is a control character, a quote or a backslash. The borrow of the zero-byte test can
/// flag a byte above one that matches, never miss one, and a flagged word is only looked at byte by byte.
const fn needs_escape(word: u64) -> bool {
  const ONES: u64 = 0x0101_0101_0101_0101;
  const HIGH: u64 = 0x8080_8080_8080_8080;
  const fn has_zero(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGH
  }
  let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
  (control | has_zero(word ^ (ONES * b'"' as u64)) | has_zero(word ^ (ONES * b'\\' as u64))) != 0
}

// Integers up to 2^53 are exact doubles and print as plain digits; anything larger was rounded by JS when it
// became a number, so it is printed through the double it rounds to.
const MAX_SAFE: u64 = 1 << 53;

fn write_number(out: &mut String, n: &Number) {
  let _ = write_number_to(out, n);
}

fn write_number_to<W: fmt::Write>(w: &mut W, n: &Number) -> fmt::Result {
  if let Some(u) = n.as_u64() {
    if u <= MAX_SAFE {
      return write!(w, "{u}");
    }
    return write_js_number(w, u as f64);
  }
  if let Some(i) = n.as_i64() {
    if i.unsigned_abs() <= MAX_SAFE {
      return write!(w, "{i}");
    }
    return write_js_number(w, i as f64);
  }
  match n.as_f64() {
    Some(x) => write_js_number(w, x),
    None => w.write_str("null"),
  }
}

fn number_len(n: &Number) -> usize {
  if let Some(u) = n.as_u64().filter(|u| *u <= MAX_SAFE) {
    return decimal_digits(u);
  }
  if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= MAX_SAFE) {
    return decimal_digits(i.unsigned_abs()) + usize::from(i < 0);
  }
  let mut buf = StackBuf::new();
  match write_number_to(&mut buf, n) {
    Ok(()) => buf.len,
    // Unreachable: every JS number fits the buffer. Fall back to the allocating path rather than guess.
    Err(_) => {
      let mut s = String::new();
      let _ = write_number_to(&mut s, n);
      s.len()
    }
  }
}

fn decimal_digits(mut u: u64) -> usize {
  let mut digits = 1;
  while u >= 10 {
    u /= 10;
    digits += 1;
  }
  digits
}

/// `String(x)` in JS: [`write_js_number`] into a new string.
pub fn js_number_string(x: f64) -> String {
  // `String(x)`, unlike JSON, spells out the non-finite values.
  if x.is_nan() {
    return "NaN".into();
  }
  if x.is_infinite() {
    return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
  }
  let mut s = String::new();
  let _ = write_js_number(&mut s, x);
  s
}

/// `Number.prototype.toString()` for a double (ECMAScript Number::toString with radix 10).
///
/// Rust's `{:e}` gives the shortest digit string that round-trips, which is the digit string the ECMAScript
/// algorithm asks for; only the layout (plain, fixed or exponent form) differs, and it is rebuilt here.
pub fn write_js_number<W: fmt::Write>(w: &mut W, x: f64) -> fmt::Result {
  if !x.is_finite() {
    // JSON.stringify writes NaN and ±Infinity as null.
    return w.write_str("null");
  }
  if x == 0.0 {
    // Both zeros print as "0".
    return w.write_char('0');
  }
  // Whole numbers below 2^53 (token counts, budgets, slots) print as their integer: no digit search needed.
  if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
    return write!(w, "{}", x as i64);
  }
  let mut sci = StackBuf::new();
  write!(sci, "{:e}", x.abs())?;
  let (mantissa, exp) = sci.as_str().split_once('e').ok_or(fmt::Error)?;
  let exp: i32 = exp.parse().map_err(|_| fmt::Error)?;
  let mut digits = StackBuf::new();
  for c in mantissa.chars().filter(char::is_ascii_digit) {
    digits.write_char(c)?;
  }
  let k = digits.len as i32;
  // The value is 0.<digits> × 10^n.
  let n = exp + 1;
  if let Some(even) = even_tie_digits(x.abs(), digits.as_str(), n) {
    digits = StackBuf::new();
    write!(digits, "{even}")?;
  }
  let digits = digits.as_str();
  if x < 0.0 {
    w.write_char('-')?;
  }
  if k <= n && n <= 21 {
    w.write_str(digits)?;
    for _ in 0..(n - k) {
      w.write_char('0')?;
    }
  } else if 0 < n && n <= 21 {
    let (int, frac) = digits.split_at(n as usize);
    w.write_str(int)?;
    w.write_char('.')?;
    w.write_str(frac)?;
  } else if -6 < n && n <= 0 {
    w.write_str("0.")?;
    for _ in 0..(-n) {
      w.write_char('0')?;
    }
    w.write_str(digits)?;
  } else {
    let (first, rest) = digits.split_at(1);
    w.write_str(first)?;
    if !rest.is_empty() {
      w.write_char('.')?;
      w.write_str(rest)?;
    }
    let e = n - 1;
    write!(w, "e{}{}", if e < 0 { '-' } else { '+' }, e.unsigned_abs())?;
  }
  Ok(())
}

/// Where the exact value of `x` lies exactly halfway between two shortest digit strings, ECMAScript takes the even
/// one and Rust's formatter the upper one (20186706095220.0625 is "20186706095220.062" in JS). Returns the even
/// digits when that case applies and they differ from `digits`; `None` otherwise.
///
/// A tie at k digits means the exact decimal expansion of `x` has k + 1 significant digits ending in 5. Doubles
/// whose expansion is that short (at most 18 digits, as k ≤ 17) are computed exactly in `u128`; all others are
/// ruled out up front.
fn even_tie_digits(x: f64, digits: &str, n: i32) -> Option<u128> {
  const LIMIT: u128 = 1_000_000_000_000_000_000; // 10^18
  let bits = x.to_bits();
  let biased = ((bits >> 52) & 0x7ff) as i32;
  let fraction = bits & ((1 << 52) - 1);
  let (mut m, mut e) = if biased == 0 { (fraction, -1074) } else { (fraction | (1 << 52), biased - 1075) };
  if m == 0 {
    return None;
  }
  let zeros = m.trailing_zeros();
  m >>= zeros;
  e += zeros as i32;
  // x = m × 2^e with m odd, so its exact significant digits are those of m × 2^e (an integer with no trailing
  // zeros) or, for e < 0, of m × 5^-e (x = m × 5^-e / 10^-e).
  let exact: u128 = if e >= 0 {
    if 64 - m.leading_zeros() as i32 + e > 60 {
      return None;
    }
    u128::from(m) << e
  } else {
    // 5^26 > 10^18 already.
    if -e > 25 {
      return None;
    }
    u128::from(m) * 5u128.pow(e.unsigned_abs())
  };
  if exact >= LIMIT || exact % 10 != 5 || decimal_digits_u128(exact) != digits.len() + 1 {
    return None;
  }
  let below = exact / 10;
  let even = if below.is_multiple_of(2) { below } else { below + 1 };
  if decimal_digits_u128(even) != digits.len() || digits.parse::<u128>().ok() == Some(even) {
    return None;
  }
  // The even neighbour only qualifies if it reads back as x too.
  let back: f64 = format!("{even}e{}", n - digits.len() as i32).parse().ok()?;
  (back == x).then_some(even)
}

fn decimal_digits_u128(mut u: u128) -> usize {
  let mut digits = 1;
  while u >= 10 {
    u /= 10;
    digits += 1;
  }
  digits
}

/// A small fixed buffer for formatting one number without allocating. The longest JS number text is 25 bytes.
struct StackBuf {
  buf: [u8; 40],
  len: usize,
}

impl StackBuf {
  fn new() -> Self {
    Self { buf: [0; 40], len: 0 }
  }

  fn as_str(&self) -> &str {
    // Only whole `&str`s are ever copied in, so the prefix is valid UTF-8.
    std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
  }
}

impl fmt::Write for StackBuf {
  fn write_str(&mut self, s: &str) -> fmt::Result {
    let end = self.len + s.len();
    let slot = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
    slot.copy_from_slice(s.as_bytes());
    self.len = end;
    Ok(())
  }
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;
  use crate::tokens::utf16_len;

  fn num(x: f64) -> String {
    js_number_string(x)
  }

  #[test]
  fn an_escape_in_any_lane_of_a_long_run_is_found() {
    for at in 0..24 {
      for special in ['"', '\\', '\n', '\u{1}'] {
        let mut text: Vec<char> = "abcdéfghijklmnopqrstuvw".chars().collect();
        text.insert(at, special);
        let text: String = text.into_iter().collect();
        let mut out = String::new();
        write_string(&mut out, &text);
        assert_eq!(out, serde_json::to_string(&text).unwrap(), "{special:?} at {at}");
      }
    }
  }

  #[test]
  fn numbers_are_spelled_as_js_does() {
    let cases: &[(f64, &str)] = &[
      (0.0, "0"),
      (-0.0, "0"),
      (1.0, "1"),
      (-1.0, "-1"),
      (0.1, "0.1"),
      (0.1 + 0.2, "0.30000000000000004"),
      (1.5, "1.5"),
      (100.0, "100"),
      (123.456, "123.456"),
      (1e21, "1e+21"),
      (1e20, "100000000000000000000"),
      (123456789012345680000.0, "123456789012345680000"),
      (1.2345e21, "1.2345e+21"),
      (1.5e-7, "1.5e-7"),
      (1e-7, "1e-7"),
      (0.000001, "0.000001"),
      (0.0000015, "0.0000015"),
      (-2.5e-10, "-2.5e-10"),
      (5e-324, "5e-324"),
      (f64::MAX, "1.7976931348623157e+308"),
      (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
      (9007199254740991.0, "9007199254740991"),
      (-9007199254740991.0, "-9007199254740991"),
      (-4096.0, "-4096"),
      (9007199254740992.0, "9007199254740992"),
      (9007199254740993.0, "9007199254740992"),
      (1e300, "1e+300"),
      // Exact ties between two shortest candidates go to the even one.
      (20_186_706_095_220.062, "20186706095220.062"),
      (0.5000000000000001, "0.5000000000000001"),
      (2f64.powi(-25), "2.9802322387695312e-8"),
      (5.0 * 2f64.powi(-23), "5.960464477539062e-7"),
      (2f64.powi(-24), "5.960464477539063e-8"),
      (7.0 * 2f64.powi(-21), "0.000003337860107421875"),
      (1.5 * 2f64.powi(55), "54043195528445950"),
      (2f64.powi(57) + 16.0, "144115188075855870"),
      (f64::NAN, "NaN"),
      (f64::INFINITY, "Infinity"),
      (f64::NEG_INFINITY, "-Infinity"),
    ];
    for (x, want) in cases {
      assert_eq!(num(*x), *want, "formatting {x:e}");
    }
    // In JSON the non-finite values are null.
    let mut json = String::new();
    write_js_number(&mut json, f64::NAN).unwrap();
    assert_eq!(json, "null");
  }

  #[test]
  fn serde_numbers_follow_the_double_they_become_in_js() {
    assert_eq!(to_js_json(&json!(42)), "42");
    assert_eq!(to_js_json(&json!(-42)), "-42");
    assert_eq!(to_js_json(&json!(2.0)), "2");
    assert_eq!(to_js_json(&json!(-0.0)), "0");
    // Past 2^53 JS holds the nearest double.
    assert_eq!(to_js_json(&json!(u64::MAX)), "18446744073709552000");
    assert_eq!(to_js_json(&json!(i64::MIN)), "-9223372036854776000");
    assert_eq!(to_js_json(&json!(9007199254740993u64)), "9007199254740992");
    let parsed: Value = serde_json::from_str("[1e21,1.5e-7,123456789012345680000,0.1,-0.0,-0]").expect("json");
    assert_eq!(to_js_json(&parsed), "[1e+21,1.5e-7,123456789012345680000,0.1,0,0]");
  }

  #[test]
  fn strings_escape_exactly_what_js_escapes() {
    let s = "q\"b\\\u{8}\u{c}\n\r\t\u{0}\u{1f}\u{7f}\u{2028}é😀/";
    assert_eq!(to_js_json(&json!(s)), "\"q\\\"b\\\\\\b\\f\\n\\r\\t\\u0000\\u001f\u{7f}\u{2028}é😀/\"");
    assert_eq!(to_js_json(&json!("\u{1b}")), "\"\\u001b\"");
    assert_eq!(js_json_utf16_len(&json!(s)), utf16_len(&to_js_json(&json!(s))));
  }

  #[test]
  fn containers_are_compact_and_keep_insertion_order() {
    let v = json!({"b": [1, null, true, false, {}], "a": {"z": [], "y": "x"}});
    assert_eq!(to_js_json(&v), r#"{"b":[1,null,true,false,{}],"a":{"z":[],"y":"x"}}"#);
    assert_eq!(to_js_json(&json!([])), "[]");
    assert_eq!(to_js_json(&json!({})), "{}");
  }

  #[test]
  fn array_index_keys_come_first_in_numeric_order() {
    let v: Value =
      serde_json::from_str(r#"{"b":1,"10":2,"a":3,"2":4,"01":5,"4294967295":6,"4294967294":7,"-1":8}"#).expect("json");
    assert_eq!(to_js_json(&v), r#"{"2":4,"10":2,"4294967294":7,"b":1,"a":3,"01":5,"4294967295":6,"-1":8}"#);
  }

  // A small deterministic generator, so the property test needs no extra crates and never flakes.
  struct Rng(u64);

  impl Rng {
    fn next(&mut self) -> u64 {
      self.0 ^= self.0 << 13;
      self.0 ^= self.0 >> 7;
      self.0 ^= self.0 << 17;
      self.0
    }

    fn below(&mut self, n: u64) -> u64 {
      self.next() % n
    }

    fn string(&mut self) -> String {
      const PALETTE: &[char] = &[
        'a',
        'Z',
        '0',
        ' ',
        '"',
        '\\',
        '/',
        '\u{0}',
        '\u{8}',
        '\u{9}',
        '\u{a}',
        '\u{c}',
        '\u{d}',
        '\u{1f}',
        '\u{7f}',
        '\u{80}',
        'é',
        '\u{2028}',
        '\u{2029}',
        '中',
        '\u{fffd}',
        '\u{ffff}',
        '😀',
        '\u{10ffff}',
      ];
      let len = self.below(12);
      (0..len).map(|_| PALETTE[self.below(PALETTE.len() as u64) as usize]).collect()
    }

    fn number(&mut self) -> Value {
      match self.below(6) {
        0 => json!(self.below(1000) as i64 - 500),
        1 => json!(self.next()),
        2 => json!(-((self.next() >> 1) as i64)),
        3 => {
          let x = f64::from_bits(self.next());
          if x.is_finite() { json!(x) } else { json!(0.5) }
        }
        4 => json!((self.below(2_000_000) as f64 - 1_000_000.0) / 1024.0),
        _ => json!(10f64.powi(self.below(60) as i32 - 30) * (self.below(9) + 1) as f64),
      }
    }

    fn value(&mut self, depth: u32) -> Value {
      let pick = if depth == 0 { self.below(4) } else { self.below(6) };
      match pick {
        0 => Value::Null,
        1 => Value::Bool(self.below(2) == 0),
        2 => self.number(),
        3 => Value::String(self.string()),
        4 => Value::Array((0..self.below(5)).map(|_| self.value(depth - 1)).collect()),
        _ => {
          let mut map = Map::new();
          for _ in 0..self.below(5) {
            let key = match self.below(4) {
              0 => self.below(20).to_string(),
              _ => self.string(),
            };
            map.insert(key, self.value(depth - 1));
          }
          Value::Object(map)
        }
      }
    }
  }

  #[test]
  fn walked_length_matches_the_built_string() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..5_000 {
      let v = rng.value(4);
      let text = to_js_json(&v);
      assert_eq!(js_json_utf16_len(&v), utf16_len(&text), "{text}");
      // The text is valid JSON describing the same value.
      let back: Value = serde_json::from_str(&text).expect("output parses");
      assert_eq!(to_js_json(&back), text);
    }
  }
}
