//! Fitting the model's view into the token budget (§11.2).
//!
//! Items are immutable and their costs are cached when they enter the log (DECISIONS A3), so the plan is computed
//! from costs and positions alone and names the kept items by index. The caller hands over the objects it already
//! holds. The history walk starts at the newest item and stops at the first that does not fit, so its cost grows
//! with the number of items kept, never with the length of the log.

use super::budget::js_max;
use crate::items::{Pairing, strip_unresolved_mask};

/// `ProjectionPolicy.overflow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
  Truncate,
  Summarize,
  #[default]
  SlidingWindow,
}

impl Overflow {
  pub fn parse(text: &str) -> Option<Self> {
    Some(match text {
      "truncate" => Self::Truncate,
      "summarize" => Self::Summarize,
      "sliding_window" => Self::SlidingWindow,
      _ => return None,
    })
  }

  pub fn as_str(self) -> &'static str {
    match self {
      Self::Truncate => "truncate",
      Self::Summarize => "summarize",
      Self::SlidingWindow => "sliding_window",
    }
  }
}

/// How the context window is filled: a token cap (less the response reserve), an overflow strategy and an
/// optional cap on the number of history items.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectionPolicy {
  pub token_budget: f64,
  pub response_reserve: f64,
  pub overflow: Overflow,
  pub overflow_model: Option<String>,
  pub window_size: Option<f64>,
}

/// Used when neither the step nor the harness sets a policy.
pub const DEFAULT_PROJECTION: ProjectionPolicy = ProjectionPolicy {
  token_budget: 128_000.0,
  response_reserve: 4_000.0,
  overflow: Overflow::SlidingWindow,
  overflow_model: None,
  window_size: None,
};

impl Default for ProjectionPolicy {
  fn default() -> Self {
    DEFAULT_PROJECTION
  }
}

/// The conversation history as projection sees it: each item's cached cost and its tool-call pairing, by position.
pub trait HistoryView {
  fn len(&self) -> usize;
  fn cost(&self, i: usize) -> u64;
  fn link(&self, i: usize) -> Pairing<u32>;

  fn is_empty(&self) -> bool {
    self.len() == 0
  }

  /// Index of the oldest item of the longest run ending at the newest item, not reaching before `start`, whose
  /// costs fit in `budget`: the walk from the newest item that stops at the first that does not fit. A history
  /// that knows its suffix costs answers without the walk.
  fn newest_run_within(&self, start: usize, budget: f64) -> usize {
    let mut first = self.len();
    let mut used = 0.0;
    while first > start {
      let cost = self.cost(first - 1) as f64;
      if used + cost > budget {
        break;
      }
      used += cost;
      first -= 1;
    }
    first
  }
}

impl HistoryView for [(u64, Pairing<u32>)] {
  fn len(&self) -> usize {
    <[_]>::len(self)
  }

  fn cost(&self, i: usize) -> u64 {
    self[i].0
  }

  fn link(&self, i: usize) -> Pairing<u32> {
    self[i].1
  }
}

/// Which layer-output and history items make it into the view, as ascending indices into the inputs. System items
/// are always all kept, so they are not listed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ViewPlan {
  pub layers_kept: Vec<usize>,
  pub history_kept: Vec<usize>,
}

/// `assembleView`: without a policy everything is kept as is. With one, system items are always kept (even over
/// budget); each layer item is kept if it still fits, on its own; history keeps the newest contiguous run that
/// fits in what is left (after the optional window), minus tool calls and outputs whose partner was cut off.
pub fn assemble_view<H: HistoryView + ?Sized>(
  system_costs: &[u64],
  layer_costs: &[u64],
  history: &H,
  policy: Option<&ProjectionPolicy>,
) -> ViewPlan {
  assemble_view_from(system_costs, layer_costs, history, policy, None).0
}

/// Share of the history's budget left free when a cut must move (prompt-cache anchoring): the next turns grow into
/// it, so the cut, and with it the start of every request, moves once per block of turns rather than every turn.
pub const CUT_SLACK: f64 = 0.25;

/// Share of the history's budget kept when the cut moves early, on a request whose start breaks before its history
/// anyway: the move costs no more of the cache then, and the longer block it leaves lets the next breaks of the
/// start (a re-anchor) come before the cut must move on its own.
pub const EARLY_CUT_KEEP: f64 = 0.6;

/// Where the history began in the lineage's last request, held while it fits, and whether this request's start
/// breaks before its history anyway (the cut may then move early, for free).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldCut {
  pub at: usize,
  pub start_breaks: bool,
}

/// [`assemble_view`], with the history's first kept item held at `cut` (an index into the history) while the history
/// from there still fits; when it no longer does, the cut moves to where the history takes at most `1 - CUT_SLACK`
/// of what is left for it. On a request whose start breaks anyway, a history from the cut over `1 - CUT_SLACK` of
/// its share is cut early, to [`EARLY_CUT_KEEP`] of it. The view fits its budget either way. Also returns where the
/// kept history began (before tool calls cut from their partners were dropped): the next call's cut.
pub fn assemble_view_from<H: HistoryView + ?Sized>(
  system_costs: &[u64],
  layer_costs: &[u64],
  history: &H,
  policy: Option<&ProjectionPolicy>,
  cut: Option<HeldCut>,
) -> (ViewPlan, usize) {
  let Some(policy) = policy else {
    return (ViewPlan { layers_kept: (0..layer_costs.len()).collect(), history_kept: (0..history.len()).collect() }, 0);
  };

  // Comparisons are `used + cost > budget` in doubles, as upstream, so a NaN budget keeps everything.
  let budget = js_max(0.0, policy.token_budget - policy.response_reserve);
  let after_system = js_max(0.0, budget - sum(system_costs));

  let mut layers_kept = Vec::new();
  let mut layers_used = 0.0;
  for (i, &cost) in layer_costs.iter().enumerate() {
    let cost = cost as f64;
    if layers_used + cost > after_system {
      continue;
    }
    layers_kept.push(i);
    layers_used += cost;
  }
  let after_layers = js_max(0.0, after_system - layers_used);

  // D10: only `sliding_window` takes the last `window_size` items before the budget walk; `truncate` and
  // `summarize` drop just what the budget cannot hold (the LLM step then summarises that prefix for `summarize`).
  let start = match policy.overflow {
    Overflow::SlidingWindow => window_start(history.len(), policy.window_size),
    Overflow::Truncate | Overflow::Summarize => 0,
  };
  let fitting = history.newest_run_within(start, after_layers);
  let slack = |keep: f64| fitting.max(history.newest_run_within(start, after_layers * keep));
  let first = match cut {
    None => fitting,
    // The start breaks anyway and the history from the cut has outgrown the slack: the move is free now, and
    // would soon be forced on a request whose start otherwise repeats.
    Some(HeldCut { at, start_breaks: true }) if at <= history.len() && slack(1.0 - CUT_SLACK) > at.max(start) => {
      slack(EARLY_CUT_KEEP)
    }
    Some(HeldCut { at, .. }) if at >= fitting && at <= history.len() => at,
    // Nothing was cut before, or nothing need be: keep what fits.
    Some(_) if fitting == start => fitting,
    Some(_) => slack(1.0 - CUT_SLACK),
  };
  let len = history.len();
  let pairings: Vec<Pairing<u32>> = (first..len).map(|i| history.link(i)).collect();
  let mask = strip_unresolved_mask(&pairings);
  let history_kept = (first..len).zip(mask).filter_map(|(i, keep)| keep.then_some(i)).collect();

  (ViewPlan { layers_kept, history_kept }, first)
}

fn sum(costs: &[u64]) -> f64 {
  costs.iter().fold(0.0, |total, &c| total + c as f64)
}

/// Where `items.slice(-w)` starts when `w` is truthy; 0 (no window) when it is absent, 0 or NaN. `-w` is truncated
/// toward zero, so a fraction below 1 keeps everything and a negative `w` drops the first |w| items.
fn window_start(len: usize, window_size: Option<f64>) -> usize {
  let Some(w) = window_size.filter(|w| *w != 0.0 && !w.is_nan()) else {
    return 0;
  };
  let relative = (-w).trunc();
  if relative < 0.0 {
    let start = len as f64 + relative;
    if start <= 0.0 { 0 } else { start as usize }
  } else {
    relative.min(len as f64) as usize
  }
}

#[cfg(test)]
mod tests {
  use std::cell::Cell;

  use super::*;

  // Costs from the reference fixtures: system "s", developer items l1/l2, history h1..h5 (h3 calls c1, h4 answers).
  const SYSTEM: [u64; 1] = [28];
  const LAYERS: [u64; 2] = [78, 33];

  fn history() -> Vec<(u64, Pairing<u32>)> {
    vec![
      (28, Pairing::Unlinked),
      (29, Pairing::Unlinked),
      (19, Pairing::Call(1)),
      (23, Pairing::Output(1)),
      (28, Pairing::Unlinked),
    ]
  }

  fn policy(token_budget: f64, response_reserve: f64, window_size: Option<f64>) -> ProjectionPolicy {
    ProjectionPolicy { token_budget, response_reserve, window_size, ..DEFAULT_PROJECTION }
  }

  fn plan(layers: &[usize], history: &[usize]) -> ViewPlan {
    ViewPlan { layers_kept: layers.to_vec(), history_kept: history.to_vec() }
  }

  #[test]
  fn reference_table_for_every_overflow_strategy() {
    let rows: [(f64, ViewPlan); 5] = [
      (400.0, plan(&[0, 1], &[0, 1, 2, 3, 4])),
      (200.0, plan(&[0, 1], &[4])),
      (150.0, plan(&[0], &[])),
      (100.0, plan(&[1], &[])),
      (60.0, plan(&[], &[])),
    ];
    let history = history();
    for overflow in [Overflow::Truncate, Overflow::Summarize, Overflow::SlidingWindow] {
      for (token_budget, expected) in &rows {
        let p = ProjectionPolicy { overflow, ..policy(*token_budget, 20.0, None) };
        assert_eq!(assemble_view(&SYSTEM, &LAYERS, history.as_slice(), Some(&p)), *expected, "{token_budget}");
      }
    }
  }

  #[test]
  fn no_policy_keeps_everything_unstripped() {
    let orphan = [(19, Pairing::Call(9))];
    assert_eq!(assemble_view(&SYSTEM, &LAYERS, orphan.as_slice(), None), plan(&[0, 1], &[0]));
  }

  #[test]
  fn system_items_over_budget_still_leave_nothing_for_the_rest() {
    let p = policy(10.0, 20.0, None);
    assert_eq!(assemble_view(&SYSTEM, &LAYERS, history().as_slice(), Some(&p)), plan(&[], &[]));
  }

  #[test]
  fn window_of_two_strips_the_output_whose_call_fell_outside() {
    let p = policy(1e9, 0.0, Some(2.0));
    assert_eq!(assemble_view(&[], &[], history().as_slice(), Some(&p)).history_kept, vec![4]);
  }

  #[test]
  fn only_sliding_window_applies_the_window() {
    let history = history();
    for (overflow, expected) in [
      (Overflow::SlidingWindow, vec![4]),
      (Overflow::Truncate, vec![0, 1, 2, 3, 4]),
      (Overflow::Summarize, vec![0, 1, 2, 3, 4]),
    ] {
      let p = ProjectionPolicy { overflow, ..policy(1e9, 0.0, Some(2.0)) };
      assert_eq!(assemble_view(&[], &[], history.as_slice(), Some(&p)).history_kept, expected, "{overflow:?}");
    }
  }

  #[test]
  fn window_follows_js_slice_semantics() {
    let cases: [(f64, &[usize]); 12] = [
      (0.0, &[0, 1, 2, 3, 4]),
      (f64::NAN, &[0, 1, 2, 3, 4]),
      (2.9, &[4]),
      (3.0, &[2, 3, 4]),
      (0.5, &[0, 1, 2, 3, 4]),
      (-0.5, &[0, 1, 2, 3, 4]),
      (10.0, &[0, 1, 2, 3, 4]),
      (f64::INFINITY, &[0, 1, 2, 3, 4]),
      (-2.0, &[2, 3, 4]),
      (-3.7, &[4]),
      (-5.0, &[]),
      (f64::NEG_INFINITY, &[]),
    ];
    let history = history();
    for (w, expected) in cases {
      let p = policy(1e9, 0.0, Some(w));
      assert_eq!(assemble_view(&[], &[], history.as_slice(), Some(&p)).history_kept, expected, "w={w}");
    }
  }

  #[test]
  fn exact_fit_boundaries() {
    let history = history();
    let run = |budget: f64| assemble_view(&[], &[], history.as_slice(), Some(&policy(budget, 0.0, None)));
    // h5 alone costs 28.
    assert_eq!(run(27.0).history_kept, Vec::<usize>::new());
    assert_eq!(run(28.0).history_kept, vec![4]);
    assert_eq!(run(29.0).history_kept, vec![4]);
    // h3..h5 cost 70; one less cuts h3 off and its output h4 goes with it.
    assert_eq!(run(69.0).history_kept, vec![4]);
    assert_eq!(run(70.0).history_kept, vec![2, 3, 4]);
    assert_eq!(run(71.0).history_kept, vec![2, 3, 4]);

    // Layer items: l1 (78) fits exactly after the system item (28) at 106, not at 105.
    let layers_at = |budget: f64| assemble_view(&SYSTEM, &[78], &[][..], Some(&policy(budget, 0.0, None))).layers_kept;
    assert_eq!(layers_at(105.0), Vec::<usize>::new());
    assert_eq!(layers_at(106.0), vec![0]);
    assert_eq!(layers_at(107.0), vec![0]);
  }

  #[test]
  fn layer_items_are_skipped_one_at_a_time() {
    let p = policy(50.0, 0.0, None);
    assert_eq!(assemble_view(&[], &[60, 30, 25, 20], &[][..], Some(&p)).layers_kept, vec![1, 3]);
  }

  #[test]
  fn nan_budget_keeps_everything() {
    let p = policy(f64::INFINITY, f64::INFINITY, None);
    assert_eq!(assemble_view(&SYSTEM, &LAYERS, history().as_slice(), Some(&p)), plan(&[0, 1], &[0, 1, 2, 3, 4]));
  }

  fn held(at: Option<usize>, start_breaks: bool) -> Option<HeldCut> {
    at.map(|at| HeldCut { at, start_breaks })
  }

  #[test]
  fn a_cut_moves_early_only_on_a_request_whose_start_breaks_anyway() {
    let p = policy(1000.0, 0.0, None);
    // Eight 100-token items from the cut at 0: they fit, and take more than 1 - CUT_SLACK of the budget.
    let history = vec![(100, Pairing::Unlinked); 8];
    let from = |cut, breaks| assemble_view_from(&[], &[], history.as_slice(), Some(&p), held(cut, breaks)).1;
    assert_eq!(from(Some(0), false), 0, "held while it fits");
    assert_eq!(from(Some(0), true), 2, "moved early to keep EARLY_CUT_KEEP of the budget");
    // Within the slack, the cut stays even when the start breaks.
    assert_eq!(from(Some(3), true), 3);
    // No cut held yet (a lineage's first request): what fits.
    assert_eq!(from(None, true), 0);
  }

  #[test]
  fn a_held_cut_moves_once_per_block_of_turns_and_the_view_still_fits() {
    let p = policy(1000.0, 0.0, None);
    let mut cut = None;
    let mut cuts = Vec::new();
    // A history of 100-token items, one more each turn: 10 fit.
    for len in 1..=40 {
      let history: Vec<(u64, Pairing<u32>)> = vec![(100, Pairing::Unlinked); len];
      let (plan, first) = assemble_view_from(&[], &[], history.as_slice(), Some(&p), held(cut, false));
      let used: u64 = plan.history_kept.iter().map(|&i| history[i].0).sum();
      assert!(used <= 1000, "fits its budget");
      assert_eq!(plan.history_kept.first().copied().unwrap_or(len), first);
      cut = Some(first);
      cuts.push(first);
    }
    let moves = cuts.windows(2).filter(|pair| pair[0] != pair[1]).count();
    // Without a held cut it would move on each of the 30 turns after the 10th; with one, every third turn or so.
    assert!(moves <= 12, "the cut moved {moves} times: {cuts:?}");
    assert_eq!(
      assemble_view_from(&[], &[], vec![(100, Pairing::Unlinked); 5].as_slice(), Some(&p), held(Some(3), false)).1,
      3
    );
  }

  /// A log far too long to walk, counting how many costs are read.
  struct HugeLog {
    reads: Cell<usize>,
  }

  impl HistoryView for HugeLog {
    fn len(&self) -> usize {
      1_000_000_000_000
    }

    fn cost(&self, _: usize) -> u64 {
      self.reads.set(self.reads.get() + 1);
      10
    }

    fn link(&self, _: usize) -> Pairing<u32> {
      Pairing::Unlinked
    }
  }

  #[test]
  fn cost_is_proportional_to_items_kept_not_log_length() {
    let log = HugeLog { reads: Cell::new(0) };
    let kept = assemble_view(&[], &[], &log, Some(&policy(105.0, 0.0, None))).history_kept;
    assert_eq!(kept.len(), 10);
    assert_eq!(kept[0], log.len() - 10);
    assert_eq!(log.reads.get(), 11);

    let log = HugeLog { reads: Cell::new(0) };
    let kept = assemble_view(&[], &[], &log, Some(&policy(1e9, 0.0, Some(3.0)))).history_kept;
    assert_eq!(kept, (log.len() - 3..log.len()).collect::<Vec<_>>());
    assert_eq!(log.reads.get(), 3);
  }

  #[test]
  fn overflow_names_round_trip() {
    for o in [Overflow::Truncate, Overflow::Summarize, Overflow::SlidingWindow] {
      assert_eq!(Overflow::parse(o.as_str()), Some(o));
    }
    assert_eq!(Overflow::parse("drop"), None);
    assert_eq!(ProjectionPolicy::default(), DEFAULT_PROJECTION);
  }
}
