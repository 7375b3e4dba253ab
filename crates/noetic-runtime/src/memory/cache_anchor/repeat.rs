//! How much of a request's start repeats the previous request of its lineage, by item identity. A request is read
//! as parts: each layer item (and update) on its own, and each run of the log as one part, so that the measure costs
//! a few parts per request, not one step per history item (a long thread's request is thousands of log items).

/// One part of a request: an item a layer gave, or a run of the context's log. Items are named by their addresses
/// (the request holds them, or the log does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
  Item {
    at: usize,
    cost: u64,
  },
  /// Log positions `start..end` (never empty), with the addresses of the first and last item there.
  Log {
    start: usize,
    end: usize,
    first: usize,
    last: usize,
    cost: u64,
  },
}

impl Part {
  fn cost(&self) -> u64 {
    match self {
      Self::Item { cost, .. } | Self::Log { cost, .. } => *cost,
    }
  }
}

/// The cost of `now`'s start that repeats `before`'s. A log run that grew since (the same start and first item, and
/// the old last item still where it was: the log only grows at its end or is cut back) repeats as far as it went;
/// `address_at` reads the log's item addresses now, `range_cost` the cost of a run of it.
pub fn repeated_cost(
  before: &[Part],
  now: &[Part],
  address_at: &dyn Fn(usize) -> Option<usize>,
  range_cost: &dyn Fn(usize, usize) -> u64,
) -> u64 {
  let mut repeated = 0;
  for (before, now) in before.iter().zip(now) {
    if before == now {
      repeated += now.cost();
      continue;
    }
    if let (
      Part::Log { start, end, first, last, .. },
      Part::Log { start: start_now, end: end_now, first: first_now, .. },
    ) = (before, now)
      && start == start_now
      && first == first_now
      && end < end_now
      && address_at(end - 1) == Some(*last)
    {
      repeated += range_cost(*start, *end);
    }
    break;
  }
  repeated
}

#[cfg(test)]
mod tests {
  use super::*;

  fn log(start: usize, end: usize) -> Part {
    // Addresses stand in as 1000 + position; each item costs 10.
    Part::Log { start, end, first: 1000 + start, last: 1000 + end - 1, cost: 10 * (end - start) as u64 }
  }

  #[test]
  fn equal_parts_repeat_and_a_grown_run_repeats_as_far_as_it_went() {
    let address_at = |pos: usize| Some(1000 + pos);
    let range_cost = |start: usize, end: usize| 10 * (end - start) as u64;
    let measure = |before: &[Part], now: &[Part]| repeated_cost(before, now, &address_at, &range_cost);
    let layer = Part::Item { at: 7, cost: 50 };
    let live = Part::Item { at: 9, cost: 5 };
    // Anchor item, then the history 0..4, then a live item; the next request's history is 0..6.
    assert_eq!(measure(&[layer, log(0, 4), live], &[layer, log(0, 6), live]), 90);
    assert_eq!(measure(&[layer, log(0, 4)], &[layer, log(0, 4), live]), 90);
    // The history's start moved: only the layer item repeats.
    assert_eq!(measure(&[layer, log(0, 4)], &[layer, log(2, 6)]), 50);
    // Another first item: nothing of the run repeats.
    assert_eq!(measure(&[layer, log(0, 4)], &[Part::Item { at: 8, cost: 50 }, log(0, 6)]), 0);
    // The log was cut back and grew again: the old last item is gone from its place.
    let rewritten = |pos: usize| Some(if pos >= 2 { 2000 + pos } else { 1000 + pos });
    assert_eq!(repeated_cost(&[layer, log(0, 4)], &[layer, log(0, 6)], &rewritten, &range_cost), 50);
  }
}
