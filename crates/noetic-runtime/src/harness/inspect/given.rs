//! Thread ids as JS gave them. A JS string may hold a lone surrogate, which reaches the runtime as U+FFFD (B1); the
//! inspector names such a thread as it was given, so JS notes each ill-formed id it is handed, as `JSON.stringify`
//! writes it (a `\udXXX` escape for the surrogate), and what the inspector serves has its `threadId`s put back.
//! Kept for the process, as JS's note of them was: a harness does not know which ids were given to it.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use crate::js_text::from_js_json;

/// The most ids kept; the one noted longest ago goes first.
const MOST: usize = 10_000;

#[derive(Default)]
struct Given {
  /// The id as the runtime has it, to the JSON string JS wrote for it and when that was noted.
  by_native: HashMap<String, (u64, String)>,
  /// Ids in the order noted, each with when; an id noted again leaves a stale entry, skipped and swept.
  order: VecDeque<(u64, String)>,
  clock: u64,
}

static GIVEN: LazyLock<Mutex<Given>> = LazyLock::new(Mutex::default);
/// Whether any id was ever noted: until then what is served is passed on as it is, with no lock taken.
static ANY: AtomicBool = AtomicBool::new(false);

fn given() -> MutexGuard<'static, Given> {
  GIVEN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Notes a thread id JS was given, as `JSON.stringify(id)` wrote it.
pub fn note_given_thread_id(literal: &str) -> Result<(), String> {
  let native: String =
    from_js_json(literal).map_err(|e| format!("a thread id to note must be a JSON string, not {literal}: {e}"))?;
  let mut given = given();
  given.clock += 1;
  let at = given.clock;
  given.by_native.insert(native.clone(), (at, literal.to_owned()));
  given.order.push_back((at, native));
  while given.by_native.len() > MOST {
    let Some((at, oldest)) = given.order.pop_front() else { break };
    if given.by_native.get(&oldest).is_some_and(|(noted, _)| *noted == at) {
      given.by_native.remove(&oldest);
    }
  }
  // The same id noted at every call would grow the order for ever: stale entries are swept once they are half.
  if given.order.len() > 2 * given.by_native.len() + 64 {
    let Given { by_native, order, .. } = &mut *given;
    order.retain(|(at, id)| by_native.get(id).is_some_and(|(noted, _)| noted == at));
  }
  ANY.store(true, Ordering::Release);
  Ok(())
}

const KEY: &str = "\"threadId\":\"";

/// `text`, JSON the runtime wrote, with each `"threadId"` string that stands for a noted id written as it was given.
/// The key with its colon and quote cannot occur inside a JSON string (a quote there is escaped), so every match is
/// a key.
pub fn with_given_thread_ids(text: String) -> String {
  if !ANY.load(Ordering::Acquire) {
    return text;
  }
  let given = given();
  let (mut out, mut copied) = (String::new(), 0);
  for (at, _) in text.match_indices(KEY) {
    let open = at + KEY.len() - 1;
    let Some(end) = string_end(&text, open) else { continue };
    let Ok(native) = serde_json::from_str::<String>(&text[open..end]) else { continue };
    if let Some((_, literal)) = given.by_native.get(&native) {
      out.push_str(&text[copied..open]);
      out.push_str(literal);
      copied = end;
    }
  }
  if copied == 0 {
    return text;
  }
  out.push_str(&text[copied..]);
  out
}

/// Where the JSON string opening at `open` ends (just past its closing quote).
fn string_end(text: &str, open: usize) -> Option<usize> {
  let bytes = text.as_bytes();
  let mut i = open + 1;
  while i < bytes.len() {
    match bytes[i] {
      b'\\' => i += 2,
      b'"' => return Some(i + 1),
      _ => i += 1,
    }
  }
  None
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_noted_id_is_written_back_as_given_wherever_it_is_a_thread_id() {
    note_given_thread_id(r#""given \ud800 one""#).unwrap();
    let text = r#"{"threadId":"given � one","x":[{"threadId":"other"},{"threadId":"given � one"}],"t":"\"threadId\":\"given � one\""}"#;
    assert_eq!(
      with_given_thread_ids(text.to_owned()),
      r#"{"threadId":"given \ud800 one","x":[{"threadId":"other"},{"threadId":"given \ud800 one"}],"t":"\"threadId\":\"given � one\""}"#
    );
    assert_eq!(with_given_thread_ids(r#"{"threadId":"other"}"#.to_owned()), r#"{"threadId":"other"}"#);
    assert!(note_given_thread_id("42").is_err());
  }

  #[test]
  fn noting_one_id_again_and_again_keeps_the_order_small() {
    for _ in 0..1000 {
      note_given_thread_id(r#""again \udc00""#).unwrap();
    }
    let given = given();
    assert!(given.order.len() <= 2 * given.by_native.len() + 64);
  }
}
