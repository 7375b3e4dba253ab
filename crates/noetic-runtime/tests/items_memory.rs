//! What an item costs in memory once it sits in a log (issue 8): about its JSON text, not a parsed map of it. In a
//! test binary of its own, so that nothing else allocates while the resident size is read.

use std::sync::Arc;

use noetic_runtime::items::{Item, ItemLog};

/// The process's resident size, from `/proc/self/statm` (Linux); `None` elsewhere.
fn resident_bytes() -> Option<u64> {
  let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
  let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
  Some(pages * 4096)
}

#[test]
fn an_item_in_the_log_costs_about_its_json_text() {
  const COUNT: usize = 200_000;
  let texts: Vec<String> = (0..COUNT)
    .map(|i| {
      let words = "the user asked about green tea and the assistant answered with care ".repeat(3);
      format!(
        r#"{{"id":"msg-{i:08}","type":"message","role":"assistant","status":"completed","content":[{{"type":"output_text","text":"{words}{i}"}}]}}"#
      )
    })
    .collect();
  let json_bytes: usize = texts.iter().map(String::len).sum();
  let Some(before) = resident_bytes() else { return };
  let mut log = ItemLog::new();
  for text in &texts {
    log.push(Arc::new(Item::from_json_text(text).expect("item")));
  }
  let after = resident_bytes().expect("statm");
  let per_item = (after.saturating_sub(before)) as f64 / COUNT as f64;
  let json_per_item = json_bytes as f64 / COUNT as f64;
  eprintln!("{per_item:.0} bytes per item for {json_per_item:.0} bytes of JSON ({:.2}x)", per_item / json_per_item);
  // A parsed map per item costs several times its JSON; the text and a few facts about one and a half (aim <= 1.5x).
  assert!(per_item < 1.75 * json_per_item, "{per_item:.0} bytes per item for {json_per_item:.0} bytes of JSON");
  assert_eq!(log.len(), COUNT);
}
