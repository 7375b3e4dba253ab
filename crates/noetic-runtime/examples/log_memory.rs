//! How much memory an item log takes per item: a million items of about 300 bytes of JSON each (the shape of the
//! shared projection benchmark's history), appended one by one, then the resident set is read back.
//!
//! `cargo run --release -p noetic-runtime --example log_memory [-- N]`

use std::sync::Arc;

use noetic_runtime::items::{Item, ItemLog};

fn resident_bytes() -> u64 {
  let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
  status
    .lines()
    .find_map(|line| line.strip_prefix("VmRSS:"))
    .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    .map_or(0, |kb| kb * 1024)
}

const WORDS: [&str; 16] = [
  "memory",
  "token",
  "über",
  "projection",
  "مرحبا",
  "budget",
  "layer",
  "history",
  "北京市",
  "slot",
  "recall",
  "naïve",
  "thread",
  "window",
  "cache",
  "policy",
];

/// About 300 bytes of JSON, cycling through the benchmark's four item shapes.
fn item_text(i: usize) -> String {
  let mut words = String::new();
  let mut seed = i.wrapping_mul(2_654_435_761) | 1;
  while words.len() < 150 + i % 60 {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    words.push_str(WORDS[seed % WORDS.len()]);
    words.push(' ');
  }
  let id = format!("h-{i:07}");
  match i % 4 {
    0 => format!(
      r#"{{"id":"{id}","type":"message","role":"user","status":"completed","content":[{{"type":"input_text","text":"{words}"}}]}}"#
    ),
    1 => format!(
      r#"{{"id":"{id}","type":"message","role":"assistant","status":"completed","content":[{{"type":"output_text","text":"{words}","annotations":[]}}]}}"#
    ),
    2 => format!(
      r#"{{"id":"{id}","type":"function_call","callId":"call-{i}","name":"list_dir","arguments":"{{\"query\":\"{}\"}}","status":"completed"}}"#,
      words.chars().take(80).collect::<String>()
    ),
    _ => format!(
      r#"{{"id":"{id}","type":"function_call_output","callId":"call-{}","output":"{words}","status":"completed"}}"#,
      i - 1
    ),
  }
}

// Printing the figure is what this example is for.
#[allow(clippy::print_stdout)]
fn main() {
  let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
  let before = resident_bytes();
  let mut log = ItemLog::new();
  let mut json_bytes = 0u64;
  for i in 0..n {
    let text = item_text(i);
    json_bytes += text.len() as u64;
    log.push(Arc::new(Item::from_json_text(&text).expect("a valid item")));
  }
  let used = resident_bytes().saturating_sub(before);
  println!(
    "{n} items, {:.0} MB of JSON ({:.0} B each): log {:.0} MB resident, {:.0} B an item, {:.2}x the JSON",
    json_bytes as f64 / 1e6,
    json_bytes as f64 / n as f64,
    used as f64 / 1e6,
    used as f64 / n as f64,
    used as f64 / json_bytes as f64,
  );
  assert_eq!(log.len(), n);
}
