//! The item log, appended to and cut back only to an earlier length (a failed session turn leaves no items), with
//! what projection needs kept up to date at append time: prefix sums of item costs (any range's cost in O(1)) and
//! where the system messages are. Reading never copies the log; upstream's
//! rebuild-the-snapshot-after-every-append is the quadratic behaviour DECISIONS A3 rules out.
//!
//! Validation is the caller's job (the context's schema registry decides what may enter).

use std::hash::BuildHasher;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;
use rustc_hash::FxBuildHasher;

use super::item::Item;
use super::link::Pairing;
use crate::tokens::Tokenizer;

#[derive(Debug, Clone)]
pub struct ItemLog {
  items: Vec<Arc<Item>>,
  /// `prefix[i]` is the total cost of `items[..i]`; one longer than `items`.
  prefix: Vec<u64>,
  /// Positions of system-role messages, ascending.
  system: Vec<usize>,
  /// Where the first user and the first assistant message are: a history window asks whether one lies before a
  /// position, which would otherwise be a scan of the whole log.
  first_user: Option<usize>,
  first_assistant: Option<usize>,
  /// Each item's tool-call pairing, its call id numbered once here: projection pairs every step's kept history,
  /// and this way does so over one dense array, comparing numbers.
  pairings: Vec<Pairing<u32>>,
  /// A call id's number is the position of the first item naming it; only that position is kept, and the id read
  /// back from its item, so numbering costs a few bytes per call, not a copy of every id.
  call_ids: HashTable<u32>,
  /// The harness's real tokenizer, when it has one: then an item's cost here is its token count, not the estimate
  /// the item carries (DECISIONS A3).
  tokenizer: Option<Tokenizer>,
  /// How many positions from the start the host is known to hold its own objects for (it placed them, or was sent
  /// them): at a turn's end it is sent only the items past this (see [`ItemLog::unheld`]). It moves with the log, as
  /// the host's copy does; a log made afresh starts with none.
  host_holds: usize,
}

/// An item's cost counted with `tokenizer`, or the estimate it carries.
fn cost_with(tokenizer: Option<Tokenizer>, item: &Item) -> u64 {
  tokenizer.map_or_else(|| item.cost(), |tokenizer| tokenizer.count(item.json_text()))
}

impl Default for ItemLog {
  fn default() -> Self {
    Self::new()
  }
}

impl ItemLog {
  pub fn new() -> Self {
    Self {
      items: Vec::new(),
      prefix: vec![0],
      system: Vec::new(),
      first_user: None,
      first_assistant: None,
      pairings: Vec::new(),
      call_ids: HashTable::new(),
      tokenizer: None,
      host_holds: 0,
    }
  }

  /// The host holds its own objects for the `count` items from `from` (it gave them, or was sent them).
  pub fn host_holds(&mut self, from: usize, count: usize) {
    if from <= self.host_holds {
      self.host_holds = self.host_holds.max((from + count).min(self.items.len()));
    }
  }

  /// The items the host does not hold yet, with the position of the first; from now on it is taken to hold them.
  pub fn unheld(&mut self) -> (usize, &[Arc<Item>]) {
    let from = self.host_holds.min(self.items.len());
    self.host_holds = self.items.len();
    (from, &self.items[from..])
  }

  /// Appends an item and returns its position.
  pub fn push(&mut self, item: Arc<Item>) -> usize {
    let pos = self.items.len();
    self.prefix.push(self.total_cost() + self.cost_of(&item));
    if item.is_system_message() {
      self.system.push(pos);
    }
    match item.role() {
      Some("user") => _ = self.first_user.get_or_insert(pos),
      Some("assistant") => _ = self.first_assistant.get_or_insert(pos),
      _ => {}
    }
    let pairing = match item.link() {
      Pairing::Unlinked => Pairing::Unlinked,
      Pairing::Call(id) => Pairing::Call(self.call_number(id, pos)),
      Pairing::Output(id) => Pairing::Output(self.call_number(id, pos)),
    };
    self.pairings.push(pairing);
    self.items.push(item);
    pos
  }

  /// Cuts the log back to its first `len` items, as it was when it had that many (a failed session turn's items
  /// leave the history). Costs what is cut, not the whole log.
  pub fn truncate(&mut self, len: usize) {
    if len >= self.items.len() {
      return;
    }
    self.items.truncate(len);
    self.prefix.truncate(len + 1);
    self.pairings.truncate(len);
    let cut = self.system.partition_point(|&pos| pos < len);
    self.system.truncate(cut);
    self.first_user = self.first_user.filter(|&pos| pos < len);
    self.first_assistant = self.first_assistant.filter(|&pos| pos < len);
    // A call id's number is the position of the first item naming it: the ones first named past the cut go.
    self.call_ids.retain(|&mut number| (number as usize) < len);
    self.host_holds = self.host_holds.min(len);
  }

  /// An empty log that costs items as this one does (its tokenizer).
  pub fn empty_like(&self) -> Self {
    Self { tokenizer: self.tokenizer, ..Self::new() }
  }

  /// What an item costs in this log.
  pub fn cost_of(&self, item: &Item) -> u64 {
    cost_with(self.tokenizer, item)
  }

  /// The cost of the item at `pos` (0 past the end).
  pub fn cost_at(&self, pos: usize) -> u64 {
    self.range_cost(pos..pos + 1)
  }

  /// Counts this log's costs with `tokenizer` (the harness's), recounting the items already in it.
  pub fn use_tokenizer(&mut self, tokenizer: Option<Tokenizer>) {
    if self.tokenizer == tokenizer {
      return;
    }
    self.tokenizer = tokenizer;
    let mut total = 0;
    for (i, item) in self.items.iter().enumerate() {
      total += cost_with(tokenizer, item);
      self.prefix[i + 1] = total;
    }
  }

  /// The number of call id `id`, named by the item about to be pushed at `pos`.
  fn call_number(&mut self, id: &str, pos: usize) -> u32 {
    let items = &self.items;
    let id_at = |number: u32| match items[number as usize].link() {
      Pairing::Call(id) | Pairing::Output(id) => id,
      Pairing::Unlinked => "",
    };
    let hash = |id: &str| FxBuildHasher.hash_one(id);
    match self.call_ids.entry(hash(id), |&number| id_at(number) == id, |&number| hash(id_at(number))) {
      Entry::Occupied(entry) => *entry.get(),
      Entry::Vacant(entry) => *entry.insert(pos as u32).get(),
    }
  }

  /// The tool-call pairing of the item at `pos` (unlinked past the end).
  pub fn pairing(&self, pos: usize) -> Pairing<u32> {
    self.pairings.get(pos).copied().unwrap_or(Pairing::Unlinked)
  }

  pub fn len(&self) -> usize {
    self.items.len()
  }

  pub fn is_empty(&self) -> bool {
    self.items.is_empty()
  }

  pub fn get(&self, pos: usize) -> Option<&Arc<Item>> {
    self.items.get(pos)
  }

  pub fn items(&self) -> &[Arc<Item>] {
    &self.items
  }

  /// The items from `pos` on (none when `pos` is past the end).
  pub fn iter_from(&self, pos: usize) -> std::slice::Iter<'_, Arc<Item>> {
    self.items.get(pos..).unwrap_or_default().iter()
  }

  /// Sum of every item's cost (each item rounded up on its own, as upstream sums them).
  pub fn total_cost(&self) -> u64 {
    self.prefix.last().copied().unwrap_or(0)
  }

  /// Total cost of the items in `range`, clamped to the log (an empty or inverted range costs 0).
  pub fn range_cost(&self, range: impl RangeBounds<usize>) -> u64 {
    let len = self.items.len();
    let start = match range.start_bound() {
      Bound::Included(&s) => s,
      Bound::Excluded(&s) => s.saturating_add(1),
      Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
      Bound::Included(&e) => e.saturating_add(1),
      Bound::Excluded(&e) => e,
      Bound::Unbounded => len,
    };
    let end = end.min(len);
    if start >= end {
      return 0;
    }
    self.prefix[end] - self.prefix[start]
  }

  /// The position of the first `message` item with role `user`.
  pub fn first_user_message(&self) -> Option<usize> {
    self.first_user
  }

  /// The position of the first `message` item with role `assistant`.
  pub fn first_assistant_message(&self) -> Option<usize> {
    self.first_assistant
  }

  /// Positions of `message` items with role `system`, ascending.
  pub fn system_positions(&self) -> &[usize] {
    &self.system
  }
}

#[cfg(test)]
mod tests {
  use serde_json::json;

  use super::*;

  fn item(role: &str, text: &str) -> Arc<Item> {
    let v = json!({"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]});
    Arc::new(Item::from_value(v).expect("item"))
  }

  #[test]
  fn the_host_is_sent_only_the_items_it_does_not_hold() {
    let mut log = ItemLog::new();
    for text in ["a", "b", "c"] {
      log.push(item("user", text));
    }
    // It gave the first two; the third was made here.
    log.host_holds(0, 2);
    let (from, unheld) = log.unheld();
    assert_eq!((from, unheld.len()), (2, 1));
    // Now it holds all three: nothing more to send.
    assert_eq!(log.unheld().1.len(), 0);
    // A placement past a gap it does not hold says nothing about the gap.
    log.push(item("assistant", "d"));
    log.push(item("assistant", "e"));
    log.host_holds(4, 1);
    let (from, unheld) = log.unheld();
    assert_eq!((from, unheld.len()), (3, 2));
    // A placement never counts past the log's end, and a moved log keeps what the host holds of it.
    log.host_holds(5, 10);
    let mut moved = std::mem::take(&mut log);
    moved.push(item("user", "f"));
    assert_eq!(moved.unheld().0, 5);
    assert_eq!(log.unheld(), (0, &[][..]));
  }

  #[test]
  fn a_truncated_log_is_the_log_it_was_at_that_length() {
    let call = |id: &str| {
      Arc::new(
        Item::from_value(json!({"type": "function_call", "callId": id, "name": "f", "arguments": "{}"})).expect("call"),
      )
    };
    let output = |id: &str| {
      Arc::new(Item::from_value(json!({"type": "function_call_output", "callId": id, "output": "ok"})).expect("output"))
    };
    let before = [item("system", "s"), call("c1"), output("c1")];
    let after = [item("user", "u"), item("assistant", "a"), item("system", "t"), call("c2"), output("c1")];
    let mut log = ItemLog::new();
    for it in before.iter().chain(&after) {
      log.push(Arc::clone(it));
    }
    log.host_holds(0, 8);
    log.truncate(before.len());
    let mut fresh = ItemLog::new();
    for it in &before {
      fresh.push(Arc::clone(it));
    }
    assert_eq!(log.len(), fresh.len());
    assert_eq!((log.total_cost(), log.system_positions()), (fresh.total_cost(), fresh.system_positions()));
    assert_eq!((log.first_user_message(), log.first_assistant_message()), (None, None));
    assert_eq!(log.unheld(), (3, &[][..]), "the host holds no more than what is left");
    // Appending again numbers calls and places messages as in a log that never had the cut items.
    for it in &after {
      log.push(Arc::clone(it));
      fresh.push(Arc::clone(it));
    }
    assert_eq!(
      (0..log.len()).map(|pos| log.pairing(pos)).collect::<Vec<_>>(),
      (0..fresh.len()).map(|pos| fresh.pairing(pos)).collect::<Vec<_>>()
    );
    assert_eq!(
      (log.first_user_message(), log.first_assistant_message(), log.system_positions()),
      (Some(3), Some(4), &[0, 5][..])
    );
    assert_eq!(log.range_cost(3..), fresh.range_cost(3..));
    // Cutting to the length it has, or past it, changes nothing.
    log.truncate(log.len() + 4);
    assert_eq!(log.len(), 8);
  }

  #[test]
  fn tracks_costs_and_system_positions() {
    let mut log = ItemLog::new();
    assert!(log.is_empty());
    assert_eq!((log.total_cost(), log.range_cost(..)), (0, 0));
    let items = [item("system", "a"), item("user", "bb"), item("system", &"c".repeat(50)), item("user", "d")];
    for (i, it) in items.iter().enumerate() {
      assert_eq!(log.push(Arc::clone(it)), i);
    }
    let costs: Vec<u64> = items.iter().map(|i| i.cost()).collect();
    assert_eq!(log.len(), 4);
    assert_eq!(log.total_cost(), costs.iter().sum::<u64>());
    assert_eq!(log.range_cost(1..3), costs[1] + costs[2]);
    assert_eq!(log.range_cost(1..=3), costs[1] + costs[2] + costs[3]);
    assert_eq!(log.range_cost(2..), costs[2] + costs[3]);
    assert_eq!(log.range_cost(..1), costs[0]);
    // Out-of-range and inverted ranges do not panic.
    assert_eq!(log.range_cost(3..99), costs[3]);
    let (hi, lo) = (3, 1);
    assert_eq!(log.range_cost(hi..lo), 0);
    assert_eq!(log.range_cost(7..9), 0);
    assert_eq!(log.system_positions(), &[0, 2]);
    assert!(Arc::ptr_eq(log.get(1).expect("pos 1"), &items[1]));
    assert!(log.get(4).is_none());
    assert_eq!(log.iter_from(3).count(), 1);
    assert_eq!(log.iter_from(10).count(), 0);
    assert_eq!(log.items().len(), 4);
  }

  #[test]
  fn call_ids_are_numbered_by_their_first_item() {
    let linked = |ty: &str, id: &str| Arc::new(Item::from_value(json!({"type": ty, "callId": id})).expect("item"));
    let mut log = ItemLog::new();
    log.push(item("user", "go"));
    // Enough ids that the table grows (and rehashes by reading ids back from their items) several times.
    for i in 0..1_000 {
      log.push(linked("function_call", &format!("c{i}")));
    }
    for i in (0..1_000).rev() {
      log.push(linked("function_call_output", &format!("c{i}")));
    }
    log.push(linked("function_call_output", "c\"escaped"));
    log.push(linked("function_call", "c\"escaped"));
    assert_eq!(log.pairing(0), Pairing::Unlinked);
    for i in 0..1_000 {
      let number = (i + 1) as u32;
      assert_eq!(log.pairing(i + 1), Pairing::Call(number));
      assert_eq!(log.pairing(2_000 - i), Pairing::Output(number));
    }
    assert_eq!(log.pairing(2_001), Pairing::Output(2_001));
    assert_eq!(log.pairing(2_002), Pairing::Call(2_001));
    assert_eq!(log.pairing(9_999), Pairing::Unlinked);
  }

  #[test]
  fn a_hundred_thousand_appends() {
    let shared = [item("user", "hello"), item("system", "rules"), item("developer", &"x".repeat(37))];
    let mut log = ItemLog::default();
    let mut expected_total = 0;
    for i in 0..100_000 {
      let it = &shared[i % 3];
      expected_total += it.cost();
      log.push(Arc::clone(it));
      // Reading after each append is cheap and never copies.
      assert_eq!(log.total_cost(), expected_total);
    }
    assert_eq!(log.len(), 100_000);
    assert_eq!(log.system_positions().len(), 33_333);
    assert_eq!(log.system_positions()[..3], [1, 4, 7]);
    assert_eq!(log.range_cost(..), expected_total);
    let per_cycle: u64 = shared.iter().map(|i| i.cost()).sum();
    assert_eq!(log.range_cost(300..600), 100 * per_cycle);
  }
}
