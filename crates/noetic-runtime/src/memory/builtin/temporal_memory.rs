//! `temporalMemory()`: a ledger of timestamped facts distilled from the conversation by the host's `extract`,
//! searched through the `temporal/searchMemory` function (the host's `search`, or the whole ledger), and a
//! `<current_datetime>` block on recall that grounds relative time (spec §20.6).
//!
//! The extractor, the searcher and a configured clock are host callbacks, so accumulating is split like
//! observationalMemory's: [`accumulate`] says whether `extract` must run, and [`apply_extracted`] folds its
//! answer in. The clock's reading arrives as [`LocalTime`]: a JS `Date`'s local fields, or the system's.

use serde_json::{Map, Value, json};

use super::js_json::number_value;
use super::js_json::reorder_like_js;
use crate::error::ConfigError;
use crate::items::{collect_input_text, collect_output_text};
use crate::js_sketch::{Sketch, function_sketch, number_sketch};
use crate::memory::{BudgetConfig, HookKind, HookSet, LayerSpec, Scope};
use crate::tokens::{estimate_tokens, tokens_for_units, utf16_len};

pub const ID: &str = "temporal";
pub const NAME: &str = "Temporal Memory";
/// Slot.REMINDER: the grounding sits before the reasoning content.
pub const SLOT: f64 = 80.0;
pub const DEFAULT_BUFFER_THRESHOLD: f64 = 2_000.0;
pub const DEFAULT_MAX_FACTS: f64 = 200.0;
/// store and onItemAppend may run the extractor (an LLM call), so both get this instead of the defaults.
pub const EXTRACTING_HOOK_TIMEOUT_MS: f64 = 60_000.0;
/// The searcher (an LLM call) gets as long; a function has no hook timeout, and one that never settles must not
/// hold the model's turn forever.
pub const SEARCH_TIMEOUT_MS: f64 = 60_000.0;
pub const SEARCH_FUNCTION: &str = "searchMemory";
pub const SEARCH_DESCRIPTION: &str = "Search remembered facts about the user by topic or fact, and resolve relative time. Returns matching facts and, when the query implies a time, a resolved date (which may be approximate).";
const CONFIG_ERROR: &str = "INVALID_TEMPORAL_MEMORY_CONFIG";

const LEDGER_OPEN: &str = "<remembered_facts>";
const LEDGER_CLOSE: &str = "</remembered_facts>";
const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TemporalConfig {
  pub scope: Scope,
  /// Buffered tokens at which the buffer is handed to `extract` (`>=`).
  pub buffer_threshold: f64,
  /// How many facts the ledger keeps, the newest; a whole number or +∞.
  pub max_facts: f64,
  pub ground_date_time: bool,
  pub inject_ledger: bool,
  /// Which host callbacks were given: a layer without them never crosses to the host.
  pub has_now: bool,
  pub has_extract: bool,
  pub has_search: bool,
}

impl Default for TemporalConfig {
  fn default() -> Self {
    Self {
      scope: Scope::Resource,
      buffer_threshold: DEFAULT_BUFFER_THRESHOLD,
      max_facts: DEFAULT_MAX_FACTS,
      ground_date_time: true,
      inject_ledger: false,
      has_now: false,
      has_extract: false,
      has_search: false,
    }
  }
}

/// The layer as the runtime sees it: init, recall, store, onItemAppend and onSpawn; 60 s for the two hooks that
/// may extract; a larger budget when the ledger is injected.
pub fn layer_spec(config: &TemporalConfig) -> LayerSpec {
  let mut spec = LayerSpec::new(ID, SLOT, config.scope);
  spec.budget = BudgetConfig::Range { min: 0.0, max: if config.inject_ledger { 800.0 } else { 200.0 } };
  spec.hooks = [HookKind::Init, HookKind::Recall, HookKind::Store, HookKind::OnItemAppend, HookKind::OnSpawn]
    .into_iter()
    .collect::<HookSet>();
  spec.timeouts[HookKind::Store as usize] = Some(EXTRACTING_HOOK_TIMEOUT_MS);
  spec.timeouts[HookKind::OnItemAppend as usize] = Some(EXTRACTING_HOOK_TIMEOUT_MS);
  // It shows the current time, which changes every turn: pinning it would only fill the changes message.
  spec.placement = crate::memory::cache_anchor::Placement::Live;
  spec
}

// ---- config ----

/// The config from a sketch of what was given (or of settings answered before), checked. Upstream checks nothing:
/// a threshold of `'500'` would compare as text and a fractional cap keeps everything.
pub fn config_from(given: Sketch<'_>) -> Result<TemporalConfig, ConfigError> {
  let field = |key: &str| Some(given.field(key)).filter(|value| !value.is_nullish());
  let defaults = TemporalConfig::default();
  let scope = match field("scope") {
    None => defaults.scope,
    Some(value) => value
      .as_str()
      .and_then(Scope::parse)
      .ok_or_else(|| bad("scope", "must be 'thread', 'resource', 'global' or 'execution'", value))?,
  };
  let buffer_threshold = match field("bufferThreshold") {
    None => defaults.buffer_threshold,
    Some(value) => value.as_number().filter(|n| *n >= 0.0).ok_or_else(|| {
      bad("bufferThreshold", "must be a number of at least 0 (tokens; Infinity never extracts)", value)
    })?,
  };
  let max_facts = match field("maxFacts") {
    None => defaults.max_facts,
    Some(value) => value
      .as_number()
      .filter(|n| *n >= 0.0 && (n.fract() == 0.0 || n.is_infinite()))
      .ok_or_else(|| bad("maxFacts", "must be a whole number of at least 0 (or Infinity)", value))?,
  };
  let flag = |key: &str, default: bool| match field(key) {
    None => Ok(default),
    Some(value) => value.as_bool().ok_or_else(|| bad(key, "must be a boolean", value)),
  };
  let callback = |key: &str| match field(key) {
    None => Ok(false),
    Some(value) if value.is_function() => Ok(true),
    Some(value) => Err(bad(key, "must be a function", value)),
  };
  Ok(TemporalConfig {
    scope,
    buffer_threshold,
    max_facts,
    ground_date_time: flag("groundDateTime", defaults.ground_date_time)?,
    inject_ledger: flag("injectLedger", defaults.inject_ledger)?,
    has_now: callback("now")?,
    has_extract: callback("extract")?,
    has_search: callback("search")?,
  })
}

/// The settings the JS face holds, which [`config_from`] reads back.
pub fn config_json(config: &TemporalConfig) -> Value {
  let mut settings = json!({
    "scope": config.scope.as_str(),
    "bufferThreshold": number_sketch(config.buffer_threshold),
    "maxFacts": number_sketch(config.max_facts),
    "groundDateTime": config.ground_date_time,
    "injectLedger": config.inject_ledger,
  });
  for (key, given) in [("now", config.has_now), ("extract", config.has_extract), ("search", config.has_search)] {
    if given {
      settings[key] = function_sketch();
    }
  }
  settings
}

fn bad(key: &str, rule: &str, value: Sketch<'_>) -> ConfigError {
  ConfigError::new(
    CONFIG_ERROR,
    format!("temporalMemory: {key} {rule}, got {}", value.described()),
    "Pass bufferThreshold and maxFacts as numbers, groundDateTime / injectLedger as booleans, and now / extract / search as functions.",
  )
}

// ---- the clock ----

/// An instant's local-time fields as a JS `Date`'s getters read them: month 1 to 12, weekday 0 (Sunday) to 6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalTime {
  pub year: i64,
  pub month: u32,
  pub day: u32,
  pub weekday: u32,
  pub hour: u32,
  pub minute: u32,
}

/// The system clock in the local time zone (`TZ`, else the system's), as `new Date()` reads it.
#[cfg(unix)]
pub fn system_now() -> LocalTime {
  // POSIX; the libc crate does not declare it for Unix.
  unsafe extern "C" {
    fn tzset();
  }
  let field = |n: libc::c_int| u32::try_from(n).unwrap_or(0);
  // SAFETY: `time` accepts a null pointer; `localtime_r` writes only into the `tm` it is given. `tzset` first, as
  // `localtime_r` need not call it: a `TZ` changed since the last call (Node calls `tzset` when JS sets
  // `process.env.TZ`) counts, as it does for `new Date()`.
  let tm = unsafe {
    let now = libc::time(std::ptr::null_mut());
    let mut tm: libc::tm = std::mem::zeroed();
    tzset();
    libc::localtime_r(&raw const now, &raw mut tm);
    tm
  };
  LocalTime {
    year: i64::from(tm.tm_year) + 1900,
    month: field(tm.tm_mon) + 1,
    day: field(tm.tm_mday),
    weekday: field(tm.tm_wday),
    hour: field(tm.tm_hour),
    minute: field(tm.tm_min),
  }
}

/// The system clock in the local time zone, as `new Date()` reads it.
#[cfg(windows)]
pub fn system_now() -> LocalTime {
  use chrono::{Datelike, Timelike};
  let now = chrono::Local::now();
  LocalTime {
    year: i64::from(now.year()),
    month: now.month(),
    day: now.day(),
    weekday: now.weekday().num_days_from_sunday(),
    hour: now.hour(),
    minute: now.minute(),
  }
}

/// A configured clock's reading as the JS face sends it: `[year, month, day, weekday, hour, minute]`.
pub fn local_time_from(value: &Value) -> Result<LocalTime, String> {
  let fields: Option<Vec<i64>> = value.as_array().map(|list| list.iter().filter_map(Value::as_i64).collect());
  let field = |fields: &[i64], at: usize, max: i64| fields.get(at).copied().filter(|n| (0..=max).contains(n));
  let read = |fields: &[i64]| -> Option<LocalTime> {
    Some(LocalTime {
      year: *fields.first()?,
      month: u32::try_from(field(fields, 1, 12)?).ok()?,
      day: u32::try_from(field(fields, 2, 31)?).ok()?,
      weekday: u32::try_from(field(fields, 3, 6)?).ok()?,
      hour: u32::try_from(field(fields, 4, 23)?).ok()?,
      minute: u32::try_from(field(fields, 5, 59)?).ok()?,
    })
  };
  fields
    .as_deref()
    .filter(|fields| fields.len() == 6)
    .and_then(read)
    .ok_or_else(|| "temporalMemory: now() must return a valid Date".to_owned())
}

/// `YYYY/MM/DD (Ddd) HH:MM`, each field padded as JS's `padStart` pads it.
pub fn format_now(time: &LocalTime) -> String {
  let weekday = WEEKDAYS.get(time.weekday as usize).copied().unwrap_or("undefined");
  format!(
    "{:0>4}/{:02}/{:02} ({weekday}) {:02}:{:02}",
    time.year.to_string(),
    time.month,
    time.day,
    time.hour,
    time.minute
  )
}

/// The grounding block recall puts first, with `now` formatted by [`format_now`].
pub fn datetime_block(now: &str) -> String {
  [
    "<current_datetime>",
    &format!("Now: {now}"),
    "Resolve relative time (\"N days/weeks/months ago\", \"last/next <weekday>\",",
    "\"before/after\", \"first/earliest/most recent\", \"how long since/until\") against",
    "Now above and compute the difference explicitly before answering. Use the",
    "temporal/searchMemory tool to look up when something happened.",
    "</current_datetime>",
  ]
  .join("\n")
}

// ---- state ----

/// One remembered fact and the instant it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemporalFact {
  pub ts: String,
  pub fact: String,
}

/// The layer's state, read from and written as upstream's JSON: `facts` maps a timestamp to its facts (kept in
/// JS property order), `buffer` the text awaiting extraction. Missing fields read as their defaults.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TemporalState {
  pub facts: Vec<(String, Vec<String>)>,
  pub buffer: Vec<String>,
  pub buffer_tokens: f64,
  pub version: f64,
}

fn strings(value: &Value) -> Option<Vec<String>> {
  value.as_array()?.iter().map(|v| v.as_str().map(str::to_owned)).collect()
}

impl TemporalState {
  /// Reads a state; `null` (nothing saved) is the default. A field of the wrong kind is an error naming it.
  pub fn from_value(value: &Value) -> Result<Self, String> {
    let Some(object) = value.as_object() else {
      return if value.is_null() { Ok(Self::default()) } else { Err(format!("temporal: the state is {value}")) };
    };
    let present = |key: &str| object.get(key).filter(|v| !v.is_null());
    let facts = match present("facts") {
      None => Vec::new(),
      Some(Value::Object(map)) => map
        .iter()
        .map(|(ts, list)| strings(list).map(|facts| (ts.clone(), facts)))
        .collect::<Option<_>>()
        .ok_or("temporal: state.facts must map timestamps to lists of strings")?,
      Some(_) => return Err("temporal: state.facts must map timestamps to lists of strings".into()),
    };
    let buffer = match present("buffer") {
      None => Vec::new(),
      Some(list) => strings(list).ok_or("temporal: state.buffer must be a list of strings")?,
    };
    let number = |key: &str| match present(key) {
      None => Ok(0.0),
      Some(n) => n.as_f64().ok_or_else(|| format!("temporal: state.{key} must be a number")),
    };
    Ok(Self { facts, buffer, buffer_tokens: number("bufferTokens")?, version: number("version")? })
  }

  pub fn to_value(&self) -> Value {
    let mut facts: Map<String, Value> = self.facts.iter().map(|(ts, list)| (ts.clone(), json!(list))).collect();
    reorder_like_js(&mut facts);
    json!({
      "facts": facts,
      "buffer": self.buffer,
      "bufferTokens": number_value(self.buffer_tokens),
      "version": number_value(self.version),
    })
  }

  /// Every fact, oldest first: sorted stably by timestamp as JS compares strings (by UTF-16 units).
  pub fn chronological(&self) -> Vec<TemporalFact> {
    let mut out: Vec<TemporalFact> = self
      .facts
      .iter()
      .flat_map(|(ts, list)| list.iter().map(|fact| TemporalFact { ts: ts.clone(), fact: fact.clone() }))
      .collect();
    out.sort_by(|a, b| a.ts.encode_utf16().cmp(b.ts.encode_utf16()));
    out
  }

  fn fact_count(&self) -> usize {
    self.facts.iter().map(|(_, list)| list.len()).sum()
  }
}

/// Whole numbers as JSON integers, so the state prints as the JS object does (`0`, not `0.0`).
/// init: the saved state, or an empty ledger.
pub fn init_state(saved: Option<Value>) -> Value {
  saved.filter(|value| !value.is_null()).unwrap_or_else(|| TemporalState::default().to_value())
}

/// onSpawn: the child gets a copy of the parent's ledger, whatever the scope.
pub fn on_spawn(state: &Value) -> Value {
  state.clone()
}

// ---- accumulating and extracting ----

/// The outcome of buffering new text.
#[derive(Debug, Clone, PartialEq)]
pub enum Accumulated {
  /// The new state, final.
  Kept(TemporalState),
  /// The threshold was reached and there is an extractor: call it with `transcript` (and the clock's reading),
  /// then pass its answer to [`apply_extracted`] with the state given to [`accumulate`].
  Extract { transcript: String },
}

/// Appends `texts` to the buffer. Only with an extractor, a non-empty buffer and the threshold reached is the
/// buffer handed over; without an extractor it only grows, since nothing here may invent facts.
pub fn accumulate(state: &TemporalState, texts: Vec<String>, config: &TemporalConfig) -> Accumulated {
  let added: f64 = texts.iter().map(|text| estimate_tokens(text) as f64).sum();
  let total = state.buffer_tokens + added;
  let mut buffer = state.buffer.clone();
  buffer.extend(texts);
  if config.has_extract && total >= config.buffer_threshold && !buffer.is_empty() {
    return Accumulated::Extract { transcript: buffer.join("\n") };
  }
  Accumulated::Kept(TemporalState { buffer, buffer_tokens: total, ..state.clone() })
}

/// store: buffers the assistant output text of `new_items`; it always yields a state.
pub fn store(state: &TemporalState, new_items: &[&Map<String, Value>], config: &TemporalConfig) -> Accumulated {
  accumulate(state, collect_output_text(new_items), config)
}

/// onItemAppend: buffers the input text of `items`; `None` when there is none, so nothing is written.
pub fn on_item_append(
  state: &TemporalState,
  items: &[&Map<String, Value>],
  config: &TemporalConfig,
) -> Option<Accumulated> {
  let texts = collect_input_text(items);
  (!texts.is_empty()).then(|| accumulate(state, texts, config))
}

/// The extractor's input: the buffered transcript and the clock's reading.
pub fn extract_request(transcript: &str, now: &str) -> Value {
  json!({ "transcript": transcript, "now": now })
}

/// The extractor's answer as facts: a list of `{ts, fact}` with string fields, anything else refused whole.
pub fn extracted(answer: &Value) -> Result<Vec<TemporalFact>, String> {
  let fact = |entry: &Value| {
    Some(TemporalFact { ts: entry.get("ts")?.as_str()?.to_owned(), fact: entry.get("fact")?.as_str()?.to_owned() })
  };
  let Some(list) = answer.as_array() else {
    return Err(format!("temporalMemory: extract must resolve to a list of {{ ts, fact }}, got {answer}"));
  };
  list
    .iter()
    .enumerate()
    .map(|(at, entry)| {
      fact(entry).ok_or_else(|| {
        format!("temporalMemory: extract answered {entry} at index {at}; each fact needs a string ts and fact")
      })
    })
    .collect()
}

/// Folds extracted facts into `state` (the state before accumulating): merged, capped, the buffer emptied, the
/// version bumped.
pub fn apply_extracted(state: &TemporalState, incoming: Vec<TemporalFact>, config: &TemporalConfig) -> TemporalState {
  let mut facts = state.facts.clone();
  for TemporalFact { ts, fact } in incoming {
    match facts.iter_mut().find(|(key, _)| *key == ts) {
      Some((_, list)) if list.contains(&fact) => {}
      Some((_, list)) => list.push(fact),
      None => facts.push((ts, vec![fact])),
    }
  }
  let merged = TemporalState { facts, buffer: Vec::new(), buffer_tokens: 0.0, version: state.version + 1.0 };
  cap(merged, config.max_facts)
}

/// Keeps the newest `max_facts` facts, counted one by one (not per timestamp, so one large extraction at a single
/// instant cannot evict itself), regrouped by timestamp in chronological order.
fn cap(state: TemporalState, max_facts: f64) -> TemporalState {
  let total = state.fact_count();
  if total as f64 <= max_facts {
    return state;
  }
  let flat = state.chronological();
  // `max_facts` is a whole number below `total` here.
  let kept = &flat[total - max_facts as usize..];
  let mut facts: Vec<(String, Vec<String>)> = Vec::new();
  for TemporalFact { ts, fact } in kept {
    match facts.last_mut() {
      Some((last, list)) if last == ts => list.push(fact.clone()),
      _ => facts.push((ts.clone(), vec![fact.clone()])),
    }
  }
  TemporalState { facts, ..state }
}

// ---- recall ----

/// The `<remembered_facts>` block: the newest facts first, stopping at the first that would take the block past
/// `budget` tokens. `None` when there are none or not even the newest fits.
pub fn ledger_block(facts: &[TemporalFact], budget: f64) -> Option<String> {
  let frame = utf16_len(LEDGER_OPEN) + utf16_len(LEDGER_CLOSE);
  let mut lines: Vec<String> = Vec::new();
  let mut units = 0;
  for fact in facts.iter().rev() {
    let line = format!("- [{}] {}", fact.ts, fact.fact);
    let line_units = utf16_len(&line);
    // The block with this line: the frame, the lines, and one newline after the opening tag and each line.
    if tokens_for_units(frame + units + line_units + lines.len() + 2) as f64 > budget {
      break;
    }
    units += line_units;
    lines.push(line);
  }
  if lines.is_empty() {
    return None;
  }
  Some(format!("{LEDGER_OPEN}\n{}\n{LEDGER_CLOSE}", lines.join("\n")))
}

/// recall: the grounding block (when on, whatever the budget, as upstream) and the ledger (when injected) in what
/// remains of `budget`, joined by a blank line, with their token estimate. `now` is the formatted clock reading,
/// needed only with `groundDateTime`.
pub fn recall(state: &TemporalState, budget: f64, now: Option<&str>, config: &TemporalConfig) -> Option<(String, u64)> {
  let mut blocks = Vec::new();
  if let (true, Some(now)) = (config.ground_date_time, now) {
    blocks.push(datetime_block(now));
  }
  if config.inject_ledger {
    let used = if blocks.is_empty() { 0 } else { estimate_tokens(&format!("{}\n\n", blocks.join("\n\n"))) };
    blocks.extend(ledger_block(&state.chronological(), budget - used as f64));
  }
  if blocks.is_empty() {
    return None;
  }
  let text = blocks.join("\n\n");
  let tokens = estimate_tokens(&text);
  Some((text, tokens))
}

// ---- searchMemory ----

/// The function's `query`, which its input schema requires.
pub fn search_query(args: &Value) -> Result<&str, String> {
  args.get("query").and_then(Value::as_str).ok_or_else(|| "searchMemory: query must be a string".to_owned())
}

/// The answer without a searcher: every fact, oldest first, as `[ts] fact`.
pub fn unsearched(state: &TemporalState) -> Value {
  let facts: Vec<String> = state.chronological().iter().map(|f| format!("[{}] {}", f.ts, f.fact)).collect();
  json!({ "facts": facts })
}

/// The searcher's input: the query, every fact oldest first, and the clock's reading.
pub fn search_request(query: &str, state: &TemporalState, now: &str) -> Value {
  let facts: Vec<Value> = state.chronological().into_iter().map(|f| json!({ "ts": f.ts, "fact": f.fact })).collect();
  json!({ "query": query, "facts": facts, "now": now })
}

/// The JSON Schema of the function's input, `{query: string}`.
pub fn search_input_schema() -> Value {
  json!({
    "type": "object",
    "properties": { "query": { "type": "string" } },
    "required": ["query"],
    "additionalProperties": false
  })
}

#[cfg(test)]
mod tests {
  use super::*;

  fn facts_state(facts: &[(&str, &[&str])]) -> TemporalState {
    TemporalState {
      facts: facts.iter().map(|(ts, list)| (ts.to_string(), list.iter().map(|f| f.to_string()).collect())).collect(),
      ..Default::default()
    }
  }

  fn fact(ts: &str, fact: &str) -> TemporalFact {
    TemporalFact { ts: ts.into(), fact: fact.into() }
  }

  fn with_extract(threshold: f64, max_facts: f64) -> TemporalConfig {
    TemporalConfig { buffer_threshold: threshold, max_facts, has_extract: true, ..Default::default() }
  }

  fn kept(outcome: Accumulated) -> TemporalState {
    match outcome {
      Accumulated::Kept(state) => state,
      Accumulated::Extract { .. } => panic!("expected a final state, got {outcome:?}"),
    }
  }

  const NOON: LocalTime = LocalTime { year: 2024, month: 3, day: 5, weekday: 2, hour: 9, minute: 7 };

  #[test]
  fn identity() {
    let spec = layer_spec(&TemporalConfig::default());
    assert_eq!((spec.id.as_str(), spec.slot, spec.scope), ("temporal", 80.0, Scope::Resource));
    assert_eq!(spec.budget, BudgetConfig::Range { min: 0.0, max: 200.0 });
    let expected = [HookKind::Init, HookKind::Recall, HookKind::Store, HookKind::OnItemAppend, HookKind::OnSpawn];
    for hook in HookKind::ALL {
      assert_eq!(spec.hooks.has(hook), expected.contains(&hook), "{}", hook.name());
    }
    assert_eq!(spec.timeout_ms(HookKind::Store), 60_000.0);
    assert_eq!(spec.timeout_ms(HookKind::OnItemAppend), 60_000.0);
    assert_eq!(spec.timeout_ms(HookKind::Recall), 5_000.0);
    let injecting = layer_spec(&TemporalConfig { inject_ledger: true, scope: Scope::Thread, ..Default::default() });
    assert_eq!((injecting.budget, injecting.scope), (BudgetConfig::Range { min: 0.0, max: 800.0 }, Scope::Thread));
  }

  #[test]
  fn config_is_checked_and_round_trips() {
    let function = json!({ "$sketch": "a function", "type": "function" });
    let infinity = json!({ "$sketch": "Infinity", "type": "number" });
    let config = config_from(Sketch::of(
      &json!({"maxFacts": infinity, "bufferThreshold": 0, "extract": function, "scope": "thread", "now": null}),
    ));
    let config = config.unwrap_or_default();
    assert_eq!((config.max_facts, config.buffer_threshold, config.scope), (f64::INFINITY, 0.0, Scope::Thread));
    assert!(config.has_extract && !config.has_search && config.ground_date_time && !config.inject_ledger);
    assert_eq!(config_from(Sketch::of(&config_json(&config))).ok(), Some(config));
    assert_eq!(config_from(Sketch::of(&Value::Null)).ok(), Some(TemporalConfig::default()));
    for (described, message) in [
      (
        json!({"maxFacts": 2.5}),
        "temporalMemory: maxFacts must be a whole number of at least 0 (or Infinity), got 2.5",
      ),
      (json!({"maxFacts": -1}), "maxFacts must be"),
      (
        json!({"bufferThreshold": {"$sketch": "NaN", "type": "number"}}),
        "bufferThreshold must be a number of at least 0 (tokens; Infinity never extracts), got NaN",
      ),
      (json!({"bufferThreshold": "500"}), "got \"500\""),
      (json!({"groundDateTime": "yes"}), "groundDateTime must be a boolean, got \"yes\""),
      (json!({"injectLedger": 1}), "injectLedger must be a boolean"),
      (json!({"extract": {}}), "extract must be a function, got an object"),
      (json!({"now": {"$sketch": "a Date", "type": "object", "methods": []}}), "now must be a function, got a Date"),
      (json!({"scope": "forever"}), "scope must be"),
    ] {
      let error = config_from(Sketch::of(&described)).err();
      assert_eq!(error.as_ref().map(|e| e.code.as_str()), Some(CONFIG_ERROR), "{described}");
      assert!(error.is_some_and(|e| e.message.contains(message)), "{described}");
    }
  }

  #[test]
  fn the_clock_formats_local_fields() {
    assert_eq!(format_now(&NOON), "2024/03/05 (Tue) 09:07");
    assert_eq!(format_now(&LocalTime { year: 33, ..NOON }), "0033/03/05 (Tue) 09:07");
    assert_eq!(local_time_from(&json!([2024, 3, 5, 2, 9, 7])), Ok(NOON));
    for bad in [json!(null), json!([2024, 3, 5, 2, 9]), json!([2024, 13, 5, 2, 9, 7]), json!([2024, 3, 5, 7, 9, 7])] {
      assert_eq!(local_time_from(&bad), Err("temporalMemory: now() must return a valid Date".into()), "{bad}");
    }
    let now = system_now();
    assert!((1..=12).contains(&now.month) && now.weekday < 7 && now.year >= 2024, "{now:?}");
    let block = datetime_block(&format_now(&NOON));
    assert!(block.starts_with("<current_datetime>\nNow: 2024/03/05 (Tue) 09:07\nResolve relative time"));
    assert!(block.ends_with("when something happened.\n</current_datetime>"));
  }

  #[test]
  fn state_round_trips_upstream_json() {
    let json = json!({"facts": {"2024-01-02": ["b"], "2024-01-01": ["a", "a2"]}, "buffer": ["x"], "bufferTokens": 3, "version": 2});
    let state = TemporalState::from_value(&json).unwrap_or_default();
    assert_eq!(state.to_value(), json);
    assert_eq!(state.chronological(), vec![fact("2024-01-01", "a"), fact("2024-01-01", "a2"), fact("2024-01-02", "b")]);
    assert_eq!(init_state(None), json!({"facts": {}, "buffer": [], "bufferTokens": 0, "version": 0}));
    assert_eq!(init_state(Some(json.clone())), json);
    assert_eq!(TemporalState::from_value(&json!({"version": 4})).map(|s| s.version), Ok(4.0));
    assert!(TemporalState::from_value(&json!({"facts": {"t": "x"}})).is_err());
    assert!(TemporalState::from_value(&json!({"buffer": [1]})).is_err());
    assert!(TemporalState::from_value(&json!(7)).is_err());
    // A timestamp JS would treat as an array index is enumerated first, as the JS object would be.
    let odd = facts_state(&[("b", &["1"]), ("7", &["2"])]).to_value();
    assert_eq!(
      odd["facts"].as_object().map(|m| m.keys().cloned().collect::<Vec<_>>()),
      Some(vec!["7".into(), "b".into()])
    );
  }

  #[test]
  fn timestamps_sort_by_utf16_units_as_js_compares() {
    // U+FF5E sorts after U+1F600 by code point but before it by UTF-16 unit (0xFF5E < 0xD83D).
    let state = facts_state(&[("\u{FF5E}", &["wide"]), ("😀", &["emoji"])]);
    assert_eq!(state.chronological().iter().map(|f| f.fact.as_str()).collect::<Vec<_>>(), ["emoji", "wide"]);
  }

  #[test]
  fn without_an_extractor_the_buffer_only_grows() {
    let config = TemporalConfig { buffer_threshold: 1.0, ..Default::default() };
    let first = kept(accumulate(&TemporalState::default(), vec!["abcd".into(), "efgh".into()], &config));
    let second = kept(accumulate(&first, vec!["ij".into()], &config));
    assert_eq!((second.buffer.len(), second.buffer_tokens, second.version), (3, 3.0, 0.0));
    assert!(second.facts.is_empty());
  }

  #[test]
  fn the_threshold_hands_the_buffer_to_the_extractor() {
    let config = with_extract(3.0, 200.0);
    let below = kept(accumulate(&TemporalState::default(), vec!["abcd".into()], &config));
    assert_eq!(below.buffer_tokens, 1.0);
    assert_eq!(
      accumulate(&below, vec!["efghijkl".into()], &config),
      Accumulated::Extract { transcript: "abcd\nefghijkl".into() }
    );
    // A zero threshold still needs something buffered.
    let zero = with_extract(0.0, 200.0);
    assert_eq!(kept(accumulate(&TemporalState::default(), Vec::new(), &zero)), TemporalState::default());
    let state = TemporalState { version: 4.0, ..facts_state(&[("t1", &["old"])]) };
    let next = apply_extracted(&state, vec![fact("t1", "old"), fact("t1", "new"), fact("t0", "first")], &config);
    assert_eq!(
      next.to_value(),
      json!({"facts": {"t1": ["old", "new"], "t0": ["first"]}, "buffer": [], "bufferTokens": 0, "version": 5})
    );
  }

  #[test]
  fn the_cap_keeps_the_newest_facts_one_by_one() {
    let same = vec![fact("2020-01-01", "alpha"), fact("2020-01-01", "beta"), fact("2020-01-01", "gamma")];
    let next = apply_extracted(&TemporalState::default(), same, &with_extract(1.0, 2.0));
    assert_eq!(next.facts, vec![("2020-01-01".into(), vec!["beta".to_string(), "gamma".into()])]);
    let spread = vec![fact("2020-03", "newest"), fact("2020-01", "oldest"), fact("2020-02", "middle")];
    let next = apply_extracted(&TemporalState::default(), spread, &with_extract(1.0, 2.0));
    assert_eq!(next.to_value()["facts"], json!({"2020-02": ["middle"], "2020-03": ["newest"]}));
    let none = apply_extracted(&facts_state(&[("t", &["a"])]), vec![fact("u", "b")], &with_extract(1.0, 0.0));
    assert!(none.facts.is_empty());
    let all = apply_extracted(&facts_state(&[("t", &["a"])]), vec![fact("u", "b")], &with_extract(1.0, f64::INFINITY));
    assert_eq!(all.fact_count(), 2);
  }

  #[test]
  fn extractor_answers_are_checked() {
    assert_eq!(extracted(&json!([{"ts": "t", "fact": "f", "extra": 1}])), Ok(vec![fact("t", "f")]));
    assert_eq!(extracted(&json!([])), Ok(Vec::new()));
    let error = extracted(&json!([{"ts": "t", "fact": "f"}, {"ts": 3, "fact": "g"}])).err().unwrap_or_default();
    assert_eq!(
      error,
      r#"temporalMemory: extract answered {"ts":3,"fact":"g"} at index 1; each fact needs a string ts and fact"#
    );
    assert!(extracted(&json!({"facts": []})).is_err_and(|e| e.contains("must resolve to a list")));
    assert!(extracted(&Value::Null).is_err());
  }

  #[test]
  fn store_and_append_read_their_sides_of_the_conversation() {
    let config = TemporalConfig::default();
    let items = [
      json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "I moved in May"}]}),
      json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Noted"}]}),
    ];
    let items: Vec<_> = items.iter().filter_map(Value::as_object).collect();
    assert_eq!(kept(store(&TemporalState::default(), &items, &config)).buffer, vec!["Noted".to_string()]);
    let appended = on_item_append(&TemporalState::default(), &items[..1], &config).map(kept);
    assert_eq!(appended.map(|s| s.buffer), Some(vec!["I moved in May".to_string()]));
    let silent = [json!({"type": "function_call", "callId": "c", "name": "f", "arguments": "{}"})];
    let silent: Vec<_> = silent.iter().filter_map(Value::as_object).collect();
    assert_eq!(on_item_append(&TemporalState::default(), &silent, &config), None);
  }

  #[test]
  fn the_ledger_fits_its_budget_newest_first() {
    let facts = vec![fact("t1", "aaaa"), fact("t2", "bbbb"), fact("t3", "cc")];
    // 18 + 19 + "- [t3] cc" (9) + 2 newlines = 48 units, 12 tokens.
    assert_eq!(ledger_block(&facts, 12.0), Some("<remembered_facts>\n- [t3] cc\n</remembered_facts>".into()));
    assert_eq!(ledger_block(&facts, 11.0), None);
    let all = ledger_block(&facts, f64::INFINITY).unwrap_or_default();
    assert_eq!(all, "<remembered_facts>\n- [t3] cc\n- [t2] bbbb\n- [t1] aaaa\n</remembered_facts>");
    assert_eq!(ledger_block(&facts, estimate_tokens(&all) as f64).as_deref(), Some(all.as_str()));
    assert_eq!(ledger_block(&facts, f64::NAN).as_deref(), Some(all.as_str()), "NaN compares false, as in JS");
    assert_eq!(ledger_block(&[], 100.0), None);
  }

  #[test]
  fn recall_grounds_then_injects_what_remains() {
    let state = facts_state(&[("2024-03-01", &["moved to Lisbon"])]);
    let now = format_now(&NOON);
    let grounded = recall(&state, 0.0, Some(&now), &TemporalConfig::default());
    let block = datetime_block(&now);
    assert_eq!(grounded, Some((block.clone(), estimate_tokens(&block))), "the grounding ignores the budget");
    let injecting = TemporalConfig { inject_ledger: true, ..Default::default() };
    let (text, tokens) = recall(&state, 200.0, Some(&now), &injecting).unwrap_or_default();
    assert_eq!(text, format!("{block}\n\n<remembered_facts>\n- [2024-03-01] moved to Lisbon\n</remembered_facts>"));
    assert!(tokens <= 200);
    // The block's share is reserved: a budget that only just covers it leaves nothing for the ledger.
    let reserved = estimate_tokens(&format!("{block}\n\n")) as f64;
    assert_eq!(recall(&state, reserved + 5.0, Some(&now), &injecting).map(|(t, _)| t), Some(block));
    let ledger_only = TemporalConfig { ground_date_time: false, ..injecting };
    assert_eq!(recall(&TemporalState::default(), 100.0, None, &ledger_only), None);
    assert_eq!(recall(&state, 100.0, None, &TemporalConfig { ground_date_time: false, ..Default::default() }), None);
  }

  #[test]
  fn search_without_a_searcher_lists_the_ledger() {
    let state = facts_state(&[("2024-02", &["b"]), ("2024-01", &["a"])]);
    assert_eq!(unsearched(&state), json!({"facts": ["[2024-01] a", "[2024-02] b"]}));
    assert_eq!(
      search_request("when?", &state, "now"),
      json!({"query": "when?", "facts": [{"ts": "2024-01", "fact": "a"}, {"ts": "2024-02", "fact": "b"}], "now": "now"})
    );
    assert_eq!(search_query(&json!({"query": "x"})), Ok("x"));
    assert!(search_query(&json!({"q": "x"})).is_err());
  }
}
