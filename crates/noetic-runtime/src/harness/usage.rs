//! `LastLayerUsage`: the per-layer breakdown of the last model call's context window (§18, D17).

use crate::memory::cache_anchor::{Bands, LayerBand};
use std::cmp::Ordering;
use std::fmt::Write as _;

use crate::items::{write_js_number, write_js_string};
use crate::memory::lifecycle::RecallEntry;
use crate::tokens::{Tokenizer, count_tokens};

use crate::tools::ToolDef;

/// Upstream sorts layer ids with `localeCompare` (ICU root collation). We pin a locale-free approximation of it:
/// characters compare by class first (whitespace < punctuation < symbols < digits < letters), letters ignoring
/// case, punctuation in ICU's order; equal strings then put lowercase before uppercase.
pub fn compare_layer_ids(a: &str, b: &str) -> Ordering {
  // Ids sort at every model step, and a harness's often share a long prefix (`notes-0`, `notes-1`): equal leading
  // characters weigh the same in every rule below, so the comparison starts at the first character that differs.
  let mut at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
  // Back to a character boundary of `a`; the bytes before it are whole characters of `b` too.
  while !a.is_char_boundary(at) {
    at -= 1;
  }
  let (a, b) = (&a[at..], &b[at..]);
  // Compared lazily, char by char.
  let primary = a.chars().map(primary_weight).cmp(b.chars().map(primary_weight));
  primary.then_with(|| a.chars().map(char::is_uppercase).cmp(b.chars().map(char::is_uppercase))).then_with(|| a.cmp(b))
}

fn primary_weight(c: char) -> (u8, u32) {
  const PUNCTUATION: &str = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";
  if c.is_whitespace() {
    (0, c as u32)
  } else if let Some(rank) = PUNCTUATION.find(c) {
    (1, rank as u32)
  } else if c.is_numeric() {
    (3, c.to_digit(10).unwrap_or(c as u32))
  } else if c.is_alphabetic() {
    (4, c.to_lowercase().next().map_or(c as u32, |l| l as u32))
  } else {
    (2, c as u32)
  }
}

/// What an LLM step's instructions and tools take of its window, whatever else it holds: counted once per step
/// (the projection, the inspector's records and `lastLayerUsage` all need them).
#[derive(Debug, Clone, Copy, Default)]
pub struct FixedCosts {
  pub system_tokens: u64,
  /// The tools' descriptors, counted as their JSON.
  pub tools_tokens: u64,
}

impl FixedCosts {
  /// Counted with `tokenizer` (the harness's, or upstream's estimate when none).
  pub fn of(instructions: Option<&str>, tools: &[ToolDef], tokenizer: Option<Tokenizer>) -> Self {
    let system_tokens = instructions.filter(|text| !text.is_empty()).map_or(0, |text| count_tokens(tokenizer, text));
    let tools_tokens = if tools.is_empty() {
      0
    } else {
      let mut descriptors = String::from("[");
      for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
          descriptors.push(',');
        }
        tool.write_descriptor(&mut descriptors);
      }
      descriptors.push(']');
      count_tokens(tokenizer, &descriptors)
    };
    Self { system_tokens, tools_tokens }
  }
}

pub struct UsageInputs<'a> {
  pub execution_id: &'a str,
  pub model_id: &'a str,
  pub fixed: FixedCosts,
  pub recalled: Vec<RecallEntry>,
  /// Cost of the whole log: layer items never enter it, so this is exactly the non-layer history (D17).
  pub history_tokens: u64,
  /// The request's bands, when prompt-cache anchoring is on.
  pub bands: Option<Bands>,
}

/// The last model call's breakdown, kept as facts and rendered as upstream's JSON only when read: most steps'
/// usage is never looked at.
#[derive(Debug, Clone)]
pub struct LayerUsage {
  execution_id: String,
  model_id: String,
  /// Sorted by layer id.
  layers: Vec<RecallEntry>,
  system_tokens: u64,
  tools_tokens: u64,
  history_tokens: u64,
  /// With `contextCache`: each layer's band and the epoch; absent, the JSON is 1.0.0's exactly.
  bands: Option<Bands>,
}

impl LayerUsage {
  pub fn new(inputs: UsageInputs<'_>) -> Self {
    let mut layers = inputs.recalled;
    layers.sort_by(|a, b| compare_layer_ids(&a.layer_id, &b.layer_id));
    // A layer gone live mid-epoch is served twice, its old pin in the anchor and its fresh output live (the sort is
    // stable, so the live one is second): it is shown once, as what it says now.
    if inputs.bands.is_some() {
      layers.dedup_by(|later, earlier| {
        let same = later.layer_id == earlier.layer_id;
        if same {
          std::mem::swap(later, earlier);
        }
        same
      });
    }
    Self {
      execution_id: inputs.execution_id.to_owned(),
      model_id: inputs.model_id.to_owned(),
      layers,
      system_tokens: inputs.fixed.system_tokens,
      tools_tokens: inputs.fixed.tools_tokens,
      history_tokens: inputs.history_tokens,
      bands: inputs.bands,
    }
  }

  /// The layers' recall entries, sorted by layer id.
  pub fn layers(&self) -> &[RecallEntry] {
    &self.layers
  }

  pub fn system_tokens(&self) -> u64 {
    self.system_tokens
  }

  pub fn tools_tokens(&self) -> u64 {
    self.tools_tokens
  }

  /// Upstream's `LastLayerUsage` object as JSON text, written directly: the layers' items go in as the JSON texts
  /// they are.
  pub fn to_json_text(&self) -> String {
    let layer_tokens: f64 = self.layers.iter().filter_map(|entry| entry.token_count).sum();
    let total = self.system_tokens as f64 + self.tools_tokens as f64 + self.history_tokens as f64 + layer_tokens;
    let item_bytes: usize =
      self.layers.iter().flat_map(|entry| &entry.items).map(|item| item.json_text().len() + 1).sum();
    let mut out = String::with_capacity(item_bytes + 64 * self.layers.len() + 160);
    out.push_str(r#"{"executionId":"#);
    write_js_string(&mut out, &self.execution_id);
    out.push_str(r#","modelId":"#);
    write_js_string(&mut out, &self.model_id);
    out.push_str(r#","layers":["#);
    for (i, entry) in self.layers.iter().enumerate() {
      out.push_str(if i == 0 { r#"{"layerId":"# } else { r#",{"layerId":"# });
      write_js_string(&mut out, &entry.layer_id);
      out.push_str(r#","tokenCount":"#);
      match entry.token_count {
        Some(count) => number(&mut out, count),
        None => out.push_str("null"),
      }
      out.push_str(r#","items":["#);
      for (j, item) in entry.items.iter().enumerate() {
        if j > 0 {
          out.push(',');
        }
        out.push_str(item.json_text());
      }
      out.push(']');
      if let Some(band) = self.bands.as_ref().and_then(|b| b.layers.iter().rfind(|l| l.layer_id == entry.layer_id)) {
        write_band(&mut out, band);
      }
      out.push('}');
    }
    let _ = write!(
      out,
      r#"],"systemPromptTokens":{},"toolsTokens":{},"historyTokens":{},"totalUsedTokens":"#,
      self.system_tokens, self.tools_tokens, self.history_tokens
    );
    number(&mut out, total);
    if let Some(bands) = &self.bands {
      write_epoch(&mut out, bands);
    }
    out.push('}');
    out
  }
}

/// A layer's band fields (upstream 5.x's `placement`, `served`, `changed`, `churnRate`).
fn write_band(out: &mut String, band: &LayerBand) {
  let _ = write!(
    out,
    r#","placement":"{}","served":"{}","changed":{},"churnRate":"#,
    band.band.as_str(),
    if band.pinned { "pinned" } else { "fresh" },
    band.changed
  );
  number(out, band.churn_rate);
}

/// `epoch`: the epoch behind this call, what each band cost, and how much of the request repeated the previous
/// request's start (`repeatedTokens`, ours).
fn write_epoch(out: &mut String, bands: &Bands) {
  out.push_str(r#","epoch":{"id":"#);
  write_js_string(out, &bands.epoch.id);
  let _ = write!(
    out,
    r#","age":{},"anchorTokens":{},"liveTokens":{},"deltaTokens":{},"repeatedTokens":{}"#,
    bands.epoch.age, bands.anchor_tokens, bands.live_tokens, bands.delta_tokens, bands.repeated_tokens
  );
  if let Some(reason) = bands.epoch.reanchor_reason {
    let _ = write!(out, r#","reanchorReason":"{}""#, reason.as_str());
  }
  out.push('}');
}

fn number(out: &mut String, x: f64) {
  let _ = write_js_number(out, x);
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn layer_ids_sort_like_locale_compare_on_the_documented_cases() {
    let mut ids = vec!["ab", "a.b", "a-b", "a_b"];
    ids.sort_by(|a, b| compare_layer_ids(a, b));
    assert_eq!(ids, ["a_b", "a-b", "a.b", "ab"]);
    assert_eq!(compare_layer_ids("plan", "Plan"), Ordering::Less);
    assert_eq!(compare_layer_ids("Plan", "Z"), Ordering::Less);
    assert_eq!(compare_layer_ids("working-memory", "observational-memory"), Ordering::Greater);
  }

  #[test]
  fn a_shared_prefix_does_not_change_the_order() {
    // After a common prefix the rules above still decide: class, then case, then the characters themselves.
    assert_eq!(compare_layer_ids("notes-9", "notes-10"), Ordering::Greater);
    assert_eq!(compare_layer_ids("notes_b", "notes-b"), Ordering::Less);
    assert_eq!(compare_layer_ids("notes-plan", "notes-Plan"), Ordering::Less);
    assert_eq!(compare_layer_ids("notes", "notes-a"), Ordering::Less);
    assert_eq!(compare_layer_ids("notes-a", "notes-a"), Ordering::Equal);
    // A prefix that ends inside a multi-byte character: é (C3 A9) and ê (C3 AA) share their first byte.
    assert_eq!(compare_layer_ids("café", "cafê"), Ordering::Less);
    assert_eq!(compare_layer_ids("caféB", "caféa"), Ordering::Greater);
  }
}
