//! One item: its JSON object, plus what the runtime asks of it often enough to keep at hand (cost, tool link,
//! system-ness), computed once because items never change (DECISIONS A3).

use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::Arc;

use once_cell::race::OnceBox;

use serde_json::{Map, Value, json};

use super::js_json::object_to_js_json;
use super::link::Pairing;
use crate::error::NoeticError;
use crate::tokens::{tokens_for_units, utf16_len};

/// An item as the log keeps it: its compact JSON text and the few facts projection reads (type, role, cost, tool
/// link), packed into a few bytes beside the text. The fields themselves are parsed only when asked for, so an item
/// that just sits in a long history costs about its JSON text (issue 8: a 300-byte item takes about 1.4x its
/// text), and one that came from JS keeps JS's very text (lone surrogates included) for when JS reads it back.
#[derive(Debug, Clone)]
pub struct Item {
  text: Box<str>,
  /// The parsed fields, made on the first `json`/`get` and kept. [`Item::fields`] reads without keeping them.
  parsed: OnceBox<Map<String, Value>>,
  cost: u32,
  /// Index into [`BASE_TYPES`], or [`UNUSUAL`]: the type is then read at `fact`.
  ty: u8,
  /// A message's role: index into [`ROLES`], [`UNUSUAL`] (read at `fact`) or [`NONE`].
  role: u8,
  /// The one string fact that is not a known name: a call's or output's call id, an unusual role, an unusual type
  /// (an item has at most one of them).
  fact: Span,
}

/// A string fact of an item: where it sits in the item's text (the JSON string had no escapes, so its text is its
/// value), or [`Span::PARSED`] to read it from the parsed fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
  at: u32,
  len: u32,
}

impl Span {
  const NONE: Span = Span { at: 0, len: u32::MAX };
  const PARSED: Span = Span { at: u32::MAX, len: u32::MAX };

  /// `value`'s place in `text` when it is a slice of it; otherwise the value is read from the parsed fields.
  #[allow(clippy::ptr_arg, reason = "whether the value was borrowed from the text is the point")]
  fn of(text: &str, value: &Cow<'_, str>) -> Span {
    let Cow::Borrowed(value) = value else { return Span::PARSED };
    let at = (value.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    match (u32::try_from(at), u32::try_from(value.len())) {
      (Ok(at), Ok(len)) if at as usize + value.len() <= text.len() && len != u32::MAX => Span { at, len },
      _ => Span::PARSED,
    }
  }
}

/// An item's packed type, role and string fact.
struct Facts {
  ty: u8,
  role: u8,
  fact: Span,
}

const UNUSUAL: u8 = u8::MAX;
const NONE: u8 = u8::MAX - 1;

const BASE_TYPES: [&str; 7] = [
  "message",
  "function_call",
  "function_call_output",
  "reasoning",
  "web_search_call",
  "file_search_call",
  "image_generation_call",
];
const MESSAGE: u8 = 0;
const FUNCTION_CALL: u8 = 1;
const FUNCTION_CALL_OUTPUT: u8 = 2;

const ROLES: [&str; 4] = ["user", "assistant", "system", "developer"];
const SYSTEM: u8 = 2;

/// `name`'s index among `usual`, or [`UNUSUAL`].
fn code_of(name: &str, usual: &[&str]) -> u8 {
  usual.iter().position(|known| *known == name).map_or(UNUSUAL, |i| i as u8)
}

impl PartialEq for Item {
  fn eq(&self, other: &Self) -> bool {
    self.text == other.text
  }
}

/// Parses text this module made or validated; it cannot fail, and an empty map stands in if it ever did.
fn parse_known(text: &str) -> Map<String, Value> {
  match crate::js_text::from_js_json(text) {
    Ok(Value::Object(map)) => map,
    _ => Map::new(),
  }
}

/// The few fields an item's facts come from, read without building the rest: other fields are skipped unparsed.
/// `None` for anything unusual (not an object, a field of another type, a duplicate key, a lone surrogate), which the
/// full parse then decides.
#[derive(serde::Deserialize)]
struct Head<'a> {
  #[serde(rename = "type", borrow)]
  ty: Cow<'a, str>,
  #[serde(default, borrow)]
  role: Option<Borrowed<'a>>,
  #[serde(rename = "callId", default, borrow)]
  call_id: Option<Borrowed<'a>>,
}

/// A string borrowed from the text when it has no escapes (serde borrows a `Cow` directly in a field, but not one
/// inside an `Option`).
#[derive(serde::Deserialize)]
struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);

impl<'a> Head<'a> {
  fn read(text: &'a str) -> Option<Self> {
    // A struct also reads from an array; an item is only ever an object.
    if !text.trim_start().starts_with('{') {
      return None;
    }
    serde_json::from_str::<Head<'a>>(text).ok().filter(|head| !head.ty.is_empty())
  }
}

/// Why a value is not an item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemError {
  /// The text is not JSON (`serde_json`'s message).
  Json(String),
  /// Upstream's base check failed: not an object, or `type` missing, not a string, or empty.
  NotAnItem,
}

impl std::fmt::Display for ItemError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      Self::Json(msg) => write!(f, "item is not valid JSON: {msg}"),
      Self::NotAnItem => f.write_str("not an item: expected an object whose \"type\" is a non-empty string"),
    }
  }
}

impl std::error::Error for ItemError {}

impl Item {
  /// An item from the text JS's `JSON.stringify(item)` produced. The cost comes from the text itself, so it is
  /// exactly upstream's even where the parsed copy cannot hold the value bit for bit (see [`crate::js_text::from_js_json`]).
  pub fn from_json_text(text: &str) -> Result<Item, ItemError> {
    Self::with_text(text.into(), |text| {
      base_check(crate::js_text::from_js_json(text).map_err(|e| ItemError::Json(e.to_string()))?)
    })
  }

  /// An item made in Rust. The cost is measured on the JS JSON form without building it.
  pub fn from_map(map: Map<String, Value>) -> Result<Item, ItemError> {
    let map = base_check(Value::Object(map))?;
    Ok(Self::from_checked_map(map))
  }

  /// [`Item::from_map`] for any JSON value.
  pub fn from_value(value: Value) -> Result<Item, ItemError> {
    Ok(Self::from_checked_map(base_check(value)?))
  }

  /// For maps whose `type` the caller has just set to a non-empty string.
  pub(crate) fn from_checked_map(map: Map<String, Value>) -> Item {
    let text = object_to_js_json(&map).into_boxed_str();
    let Ok(item) = Self::with_text(text, |_| Ok::<_, Infallible>(map));
    item
  }

  /// The item of `text`. Its facts are read from the text where they can be (most items); otherwise from the
  /// fields `parse` gives, which are then kept as the parsed fields.
  fn with_text<E>(text: Box<str>, parse: impl FnOnce(&str) -> Result<Map<String, Value>, E>) -> Result<Item, E> {
    let cost = u32::try_from(tokens_for_units(utf16_len(&text))).unwrap_or(u32::MAX);
    let mut item = Item { text, parsed: OnceBox::new(), cost, ty: UNUSUAL, role: NONE, fact: Span::NONE };
    let facts = Head::read(&item.text).map(|head| item.facts_of(&head));
    match facts {
      Some(facts) if facts.fact != Span::PARSED => (item.ty, item.role, item.fact) = (facts.ty, facts.role, facts.fact),
      _ => {
        let map = parse(&item.text)?;
        let field = |key| map.get(key).and_then(Value::as_str).map(Cow::Borrowed);
        let head = Head {
          ty: field("type").unwrap_or_default(),
          role: field("role").map(Borrowed),
          call_id: field("callId").map(Borrowed),
        };
        // Facts only: the map's strings are not in the text, so their places in it mean nothing.
        let facts = item.facts_of(&head);
        let fact = if facts.fact == Span::NONE { Span::NONE } else { Span::PARSED };
        (item.ty, item.role, item.fact) = (facts.ty, facts.role, fact);
        let _ = item.parsed.set(Box::new(map));
      }
    }
    Ok(item)
  }

  /// The packed facts of `head`, read from this item's text.
  fn facts_of(&self, head: &Head<'_>) -> Facts {
    let ty = code_of(&head.ty, &BASE_TYPES);
    let (role, fact) = match (ty, head.role.as_ref().map(|r| &r.0), head.call_id.as_ref().map(|c| &c.0)) {
      (MESSAGE, Some(role), _) => match code_of(role, &ROLES) {
        UNUSUAL => (UNUSUAL, Span::of(&self.text, role)),
        known => (known, Span::NONE),
      },
      (FUNCTION_CALL | FUNCTION_CALL_OUTPUT, _, Some(id)) => (NONE, Span::of(&self.text, id)),
      (UNUSUAL, _, _) => (NONE, Span::of(&self.text, &head.ty)),
      _ => (NONE, Span::NONE),
    };
    Facts { ty, role, fact }
  }

  /// The string fact at `fact`.
  fn fact(&self) -> Option<&str> {
    match self.fact {
      Span::NONE => None,
      Span::PARSED => {
        let key = match self.ty {
          MESSAGE => "role",
          UNUSUAL => "type",
          _ => "callId",
        };
        self.json().get(key).and_then(Value::as_str)
      }
      Span { at, len } => self.text.get(at as usize..at as usize + len as usize),
    }
  }

  /// The `type` discriminant (never empty).
  pub fn item_type(&self) -> &str {
    match self.ty {
      UNUSUAL => self.fact().unwrap_or_default(),
      known => BASE_TYPES[known as usize],
    }
  }

  /// The role of a `message` item; `None` for other types.
  pub fn role(&self) -> Option<&str> {
    match self.role {
      NONE => None,
      UNUSUAL => self.fact(),
      known => Some(ROLES[known as usize]),
    }
  }

  pub fn id(&self) -> Option<&str> {
    self.str_field("id")
  }

  pub fn call_id(&self) -> Option<&str> {
    self.str_field("callId")
  }

  pub fn name(&self) -> Option<&str> {
    self.str_field("name")
  }

  /// The raw `arguments` JSON text of a function call.
  pub fn arguments(&self) -> Option<&str> {
    self.str_field("arguments")
  }

  /// A field by name.
  pub fn get(&self, key: &str) -> Option<&Value> {
    self.json().get(key)
  }

  fn str_field(&self, key: &str) -> Option<&str> {
    self.json().get(key).and_then(Value::as_str)
  }

  /// How the item pairs up in tool calls: a `function_call` or `function_call_output` with a string `callId`.
  pub fn link(&self) -> Pairing<&str> {
    match (self.ty, self.fact()) {
      (FUNCTION_CALL, Some(id)) => Pairing::Call(id),
      (FUNCTION_CALL_OUTPUT, Some(id)) => Pairing::Output(id),
      _ => Pairing::Unlinked,
    }
  }

  /// A `message` with role `system`.
  pub fn is_system_message(&self) -> bool {
    self.role == SYSTEM
  }

  /// ⌈UTF-16 length of the compact JS JSON / 4⌉: upstream's `estimateTokens(JSON.stringify(item))`.
  pub fn cost(&self) -> u64 {
    u64::from(self.cost)
  }

  /// The fields, parsed on first use and kept for the item's life: for items a step works on, not for reading
  /// every item of a long history (use [`Item::fields`] there).
  pub fn json(&self) -> &Map<String, Value> {
    self.parsed.get_or_init(|| Box::new(parse_known(&self.text)))
  }

  /// The fields without keeping them: borrowed when already parsed, parsed afresh otherwise.
  pub fn fields(&self) -> Cow<'_, Map<String, Value>> {
    match self.parsed.get() {
      Some(map) => Cow::Borrowed(map),
      None => Cow::Owned(parse_known(&self.text)),
    }
  }

  pub fn into_json(self) -> Map<String, Value> {
    self.fields().into_owned()
  }

  /// The compact JSON text: JS's own for an item from JS, `JSON.stringify`'s form for one made here.
  pub fn json_text(&self) -> &str {
    &self.text
  }

  pub fn to_json_text(&self) -> String {
    self.text.to_string()
  }
}

/// Upstream's `ItemSchema`: a non-null object with a non-empty string `type`.
fn base_check(value: Value) -> Result<Map<String, Value>, ItemError> {
  match value {
    Value::Object(map) if map.get("type").and_then(Value::as_str).is_some_and(|t| !t.is_empty()) => Ok(map),
    _ => Err(ItemError::NotAnItem),
  }
}

/// Types accepted without a registered extension schema under the default strict registry.
pub fn is_known_base_type(ty: &str) -> bool {
  BASE_TYPES.contains(&ty) || ty.starts_with("openrouter:")
}

/// Which item types may enter a context: upstream's `strictItemSchemas` (default true) admits the known base types
/// only; `false` admits extension types too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ItemTypes {
  #[default]
  Known,
  Any,
}

impl ItemTypes {
  /// The types admitted for a batch of items the host says it has already put to its item schemas (a registry
  /// with extension schemas, which only JS can run): any type when it has, `self` otherwise.
  pub fn unless_checked(self, checked: bool) -> ItemTypes {
    if checked { ItemTypes::Any } else { self }
  }
}

/// [`check_known_type`] under the harness's `strictItemSchemas`.
pub fn check_item_type(item: &Item, types: ItemTypes) -> Result<(), NoeticError> {
  match types {
    ItemTypes::Known => check_known_type(item),
    ItemTypes::Any => Ok(()),
  }
}

/// The strict registry's last step (spec §1.3): with no extension schema accepting the item, an unknown `type`
/// is `item_schema_mismatch {category: "items", itemType}`.
pub fn check_known_type(item: &Item) -> Result<(), NoeticError> {
  let ty = item.item_type();
  if is_known_base_type(ty) {
    return Ok(());
  }
  Err(NoeticError::described("item_schema_mismatch", json!({ "category": "items", "itemType": ty })))
}

/// An item JS handed over (a model reply, an injected or appended item) as it enters the log: text that is not an
/// item, or an item of a type `types` does not admit, is `item_schema_mismatch`.
pub fn parse_js_item(text: &str, types: ItemTypes) -> Result<Item, NoeticError> {
  let item = Item::from_json_text(text)
    .map_err(|error| NoeticError::new("item_schema_mismatch", json!({ "category": "items" }), error.to_string()))?;
  check_item_type(&item, types)?;
  Ok(item)
}

/// [`parse_js_item`] for a batch (a long history JS hands over at once), on several threads when it is long: the
/// items, or the index of the first bad one and why.
pub fn parse_js_items(texts: &[&str], types: ItemTypes) -> Result<Vec<Arc<Item>>, Box<(usize, NoeticError)>> {
  /// Below this many items a thread costs more than it saves.
  const PER_THREAD: usize = 4_096;
  // Each run gives its items, or the index of its first bad one (whose error is made again below: it is one item).
  let parse_run = |from: usize, run: &[&str]| -> Result<Vec<Arc<Item>>, usize> {
    run.iter().enumerate().map(|(i, text)| parse_js_item(text, types).map(Arc::new).map_err(|_| from + i)).collect()
  };
  // Read once: on Linux each call reads the cgroup files under /proc, which cost more than a short batch.
  static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
  let threads = match texts.len() / PER_THREAD {
    0 | 1 => 1,
    runs => (*CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))).min(runs),
  };
  let parsed = if threads == 1 {
    parse_run(0, texts)
  } else {
    let chunk = texts.len().div_ceil(threads);
    std::thread::scope(|scope| {
      let handles: Vec<_> =
        texts.chunks(chunk).enumerate().map(|(i, run)| scope.spawn(move || parse_run(i * chunk, run))).collect();
      let mut items = Vec::with_capacity(texts.len());
      for (i, handle) in handles.into_iter().enumerate() {
        // A parse thread is not expected to panic; if one did, its first item is the one reported.
        items.extend(handle.join().unwrap_or(Err(i * chunk))?);
      }
      Ok(items)
    })
  };
  parsed.map_err(|index| {
    let error = parse_js_item(texts[index], types).err().unwrap_or_else(|| {
      NoeticError::new("item_schema_mismatch", json!({ "category": "items" }), "the item could not be read")
    });
    Box::new((index, error))
  })
}

#[cfg(test)]
mod tests {
  use super::*;

  fn obj(v: Value) -> Map<String, Value> {
    match v {
      Value::Object(m) => m,
      _ => Map::new(),
    }
  }

  #[test]
  fn unusual_texts_get_the_facts_the_full_parse_gives() {
    // A repeated key: the last one wins, as in JS.
    let item = Item::from_json_text(r#"{"type":"reasoning","type":"message","role":"user"}"#).expect("item");
    assert_eq!((item.item_type(), item.role()), ("message", Some("user")));
    // A call id that is not a string links nothing; a role off a message is no role.
    let call = Item::from_json_text(r#"{"type":"function_call","callId":7}"#).expect("item");
    assert_eq!(call.link(), Pairing::Unlinked);
    let output = Item::from_json_text(r#"{"type":"function_call_output","callId":"c1","role":"user"}"#).expect("item");
    assert_eq!((output.link(), output.role()), (Pairing::Output("c1"), None));
    // Escapes in the read fields are decoded; a lone surrogate in one still makes an item.
    let escaped = Item::from_json_text(r#"{"type":"mess\u0061ge","role":"\ud835"}"#).expect("item");
    assert_eq!((escaped.item_type(), escaped.role()), ("message", Some("\u{fffd}")));
    // An array is not an item, though a struct could be read from one.
    assert_eq!(Item::from_json_text(r#"["message"]"#), Err(ItemError::NotAnItem));
  }

  #[test]
  fn facts_are_read_in_place_and_the_fields_parsed_only_when_needed() {
    // The packed facts keep an item about its text's size; the fields of a usual item are not kept.
    assert!(std::mem::size_of::<Item>() <= 40, "{}", std::mem::size_of::<Item>());
    let texts = [
      r#"{"type":"function_call","callId":"call-7","name":"t","arguments":"{}"}"#,
      r#"{"type":"function_call_output","output":"x","callId":"call-7"}"#,
      r#"{"type":"message","role":"tool","content":"é"}"#,
      r#"{"type":"acme:note","role":"system","callId":"c"}"#,
      r#"{"type":"message","role":"system"}"#,
    ];
    let items: Vec<Item> = texts.iter().map(|text| Item::from_json_text(text).expect("item")).collect();
    assert!(items.iter().all(|item| item.parsed.get().is_none()));
    assert_eq!(items[0].link(), Pairing::Call("call-7"));
    assert_eq!(items[1].link(), Pairing::Output("call-7"));
    assert_eq!((items[2].item_type(), items[2].role(), items[2].link()), ("message", Some("tool"), Pairing::Unlinked));
    assert_eq!((items[3].item_type(), items[3].role(), items[3].link()), ("acme:note", None, Pairing::Unlinked));
    assert!(!items[3].is_system_message() && items[4].is_system_message());
    assert!(items.iter().all(|item| item.parsed.get().is_none()), "reading the facts parses nothing");

    // Escaped names cannot be read in place: they come from the parsed fields, which are then kept.
    let escaped = [
      (r#"{"type":"function_call","callId":"c\"1"}"#, "function_call", None, Pairing::Call("c\"1")),
      (r#"{"type":"message","role":"r\u00f4le"}"#, "message", Some("rôle"), Pairing::Unlinked),
      (r#"{"type":"acme:n\u00f6te"}"#, "acme:nöte", None, Pairing::Unlinked),
    ];
    for (text, ty, role, link) in escaped {
      let item = Item::from_json_text(text).expect("item");
      assert_eq!((item.item_type(), item.role(), item.link()), (ty, role, link), "{text}");
      assert!(item.parsed.get().is_some(), "{text}");
    }
    // Items made in Rust read their facts from the text written for them, too.
    let made = Item::from_value(json!({"type": "function_call_output", "callId": "k", "output": "o"})).expect("item");
    assert_eq!((made.link(), made.parsed.get().is_none()), (Pairing::Output("k"), true));
    let odd = Item::from_value(json!({"type": "function_call", "callId": "a\nb"})).expect("item");
    assert_eq!(odd.link(), Pairing::Call("a\nb"));
  }

  #[test]
  fn a_long_batch_keeps_its_order_and_names_its_first_bad_item() {
    let texts: Vec<String> =
      (0..20_000).map(|i| format!(r#"{{"type":"message","role":"user","id":"m{i}"}}"#)).collect();
    let mut refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let items = parse_js_items(&refs, ItemTypes::Known).expect("every item is good");
    assert!(items.iter().enumerate().all(|(i, item)| item.id() == Some(format!("m{i}").as_str())));
    // Bad items in two different stretches: the first one is named, with the check's own reason.
    refs[15_000] = r#"{"type":"acme:x"}"#;
    refs[12_345] = "[1]";
    let failure = parse_js_items(&refs, ItemTypes::Known).map(drop).unwrap_err();
    assert_eq!(failure.0, 12_345);
    assert!(failure.1.message.contains("not an item"), "{}", failure.1.message);
    refs[12_345] = texts[12_345].as_str();
    let failure = parse_js_items(&refs, ItemTypes::Known).map(drop).unwrap_err();
    assert_eq!((failure.0, failure.1.kind.as_str()), (15_000, "item_schema_mismatch"));
    assert!(parse_js_items(&refs, ItemTypes::Any).is_ok());
  }

  #[test]
  fn base_check_wants_an_object_with_a_non_empty_string_type() {
    for bad in ["null", "[]", "\"message\"", "{}", r#"{"type":""}"#, r#"{"type":3}"#, r#"{"type":null}"#] {
      assert_eq!(Item::from_json_text(bad), Err(ItemError::NotAnItem), "{bad}");
    }
    assert!(matches!(Item::from_json_text("{"), Err(ItemError::Json(_))));
    assert_eq!(Item::from_value(json!([1])), Err(ItemError::NotAnItem));
    assert_eq!(Item::from_map(obj(json!({"role": "user"}))), Err(ItemError::NotAnItem));
    let ok = Item::from_json_text(r#"{"type":"noetic:foo","x":1}"#).expect("any non-empty type passes the base check");
    assert_eq!(ok.item_type(), "noetic:foo");
  }

  #[test]
  fn strict_check_rejects_unknown_types_with_the_upstream_payload() {
    for ty in [
      "message",
      "function_call",
      "function_call_output",
      "reasoning",
      "web_search_call",
      "file_search_call",
      "image_generation_call",
      "openrouter:datetime",
    ] {
      let item = Item::from_value(json!({ "type": ty })).expect("item");
      assert_eq!(check_known_type(&item), Ok(()), "{ty}");
    }
    let item = Item::from_value(json!({"type": "noetic:foo"})).expect("item");
    let err = check_known_type(&item).expect_err("unknown type");
    assert_eq!(err.kind, "item_schema_mismatch");
    assert_eq!(err.payload, json!({"kind": "item_schema_mismatch", "category": "items", "itemType": "noetic:foo"}));
    assert_eq!(
      serde_json::to_string(&err.payload).ok().as_deref(),
      Some(r#"{"kind":"item_schema_mismatch","category":"items","itemType":"noetic:foo"}"#)
    );
  }

  #[test]
  fn non_strict_item_types_admit_extension_items_but_not_non_items() {
    let note = r#"{"type":"acme:note","text":"x"}"#;
    assert_eq!(parse_js_item(note, ItemTypes::Known).map(drop).unwrap_err().kind, "item_schema_mismatch");
    assert_eq!(parse_js_item(note, ItemTypes::Any).expect("admitted").item_type(), "acme:note");
    // Items JS already put to its item schemas are admitted whatever their type; others as the harness says.
    assert!(parse_js_item(note, ItemTypes::Known.unless_checked(true)).is_ok());
    assert!(parse_js_item(note, ItemTypes::Known.unless_checked(false)).is_err());
    assert!(parse_js_item(r#""text""#, ItemTypes::Any).is_err());
  }

  #[test]
  fn accessors_and_links() {
    let call = Item::from_json_text(r#"{"type":"function_call","callId":"c1","name":"t","arguments":"{}","id":"x"}"#)
      .expect("item");
    assert_eq!(call.link(), Pairing::Call("c1"));
    assert_eq!(
      (call.call_id(), call.name(), call.arguments(), call.id()),
      (Some("c1"), Some("t"), Some("{}"), Some("x"))
    );
    assert_eq!(call.role(), None);

    let out = Item::from_value(json!({"type": "function_call_output", "callId": "c1", "output": "ok"})).expect("item");
    assert_eq!(out.link(), Pairing::Output("c1"));

    // A non-string callId does not link.
    let odd = Item::from_value(json!({"type": "function_call", "callId": 7})).expect("item");
    assert_eq!(odd.link(), Pairing::Unlinked);

    let sys = Item::from_value(json!({"type": "message", "role": "system"})).expect("item");
    assert!(sys.is_system_message());
    assert_eq!(sys.role(), Some("system"));
    let user = Item::from_value(json!({"type": "message", "role": "user"})).expect("item");
    assert!(!user.is_system_message());
    // `role` belongs to messages only.
    let other = Item::from_value(json!({"type": "reasoning", "role": "system"})).expect("item");
    assert!(!other.is_system_message());
    assert_eq!(other.role(), None);
  }

  #[test]
  fn text_and_map_constructors_agree_and_round_trip() {
    let text = r#"{"id":"a","type":"message","role":"user","status":"completed","content":[{"type":"input_text","text":"é😀\n"}],"n":1e+21}"#;
    let from_text = Item::from_json_text(text).expect("item");
    let from_map = Item::from_map(from_text.json().clone()).expect("item");
    assert_eq!(from_text.cost(), from_map.cost());
    assert_eq!(from_text.to_json_text(), text);
    assert_eq!(from_text.cost(), tokens_for_units(utf16_len(text)));
  }

  #[test]
  fn lone_surrogates_from_js_are_accepted_and_costed_from_the_text() {
    // JSON.stringify('\ud800x') is "\ud800x" (an escape, 6 units).
    let text = r#"{"type":"message","a":"\ud800x","b":"\udc00","c":"\ud83d\ude00","d":"\\ud800"}"#;
    let item = Item::from_json_text(text).expect("item");
    assert_eq!(item.cost(), tokens_for_units(utf16_len(text)));
    assert_eq!(item.get("a"), Some(&json!("\u{fffd}x")));
    assert_eq!(item.get("b"), Some(&json!("\u{fffd}")));
    assert_eq!(item.get("c"), Some(&json!("😀")));
    assert_eq!(item.get("d"), Some(&json!("\\ud800")));
  }
}
