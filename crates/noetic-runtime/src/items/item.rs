//! One item: its JSON object, plus what the runtime asks of it often enough to keep at hand (cost, tool link,
//! system-ness), computed once because items never change (DECISIONS A3).

use std::borrow::Cow;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::js_json::object_to_js_json;
use super::link::ToolLink;
use crate::error::NoeticError;
use crate::tokens::{tokens_for_units, utf16_len};

/// An immutable conversation item.
/// An item as the log keeps it: its compact JSON text and the few facts projection reads (type, cost, tool link,
/// whether it is a system message). The fields themselves are parsed only when asked for, so an item that just sits
/// in a long history costs about its JSON text (issue 8), and one that came from JS keeps JS's very text (lone
/// surrogates included) for when JS reads it back.
#[derive(Debug, Clone)]
pub struct Item {
  text: Box<str>,
  ty: Name,
  cost: u64,
  link: ToolLink,
  /// A message's `role`, kept so that finding the last user or assistant message parses nothing.
  role: Option<Name>,
  /// The parsed fields, made on the first `json`/`get` and kept (boxed: most items never have them, and an empty
  /// map is large). [`Item::fields`] reads without keeping them.
  parsed: OnceLock<Box<Map<String, Value>>>,
}

/// An item's `type` or a message's `role`: the usual ones are named without an allocation per item.
#[derive(Debug, Clone)]
enum Name {
  Base(&'static str),
  Other(Box<str>),
}

const BASE_TYPES: [&str; 7] = [
  "message",
  "function_call",
  "function_call_output",
  "reasoning",
  "web_search_call",
  "file_search_call",
  "image_generation_call",
];

const ROLES: [&str; 4] = ["user", "assistant", "system", "developer"];

impl Name {
  fn of(name: &str, usual: &[&'static str]) -> Self {
    usual.iter().find(|base| **base == name).map_or_else(|| Self::Other(name.into()), |base| Self::Base(base))
  }

  fn as_str(&self) -> &str {
    match self {
      Self::Base(ty) => ty,
      Self::Other(ty) => ty,
    }
  }
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
  role: Option<Cow<'a, str>>,
  #[serde(rename = "callId", default, borrow)]
  call_id: Option<Cow<'a, str>>,
}

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
    let cost = tokens_for_units(utf16_len(text));
    if let Some(head) = Head::read(text) {
      return Ok(Self::with_facts(text.into(), cost, &head.ty, head.role.as_deref(), head.call_id.as_deref()));
    }
    let map = base_check(crate::js_text::from_js_json(text).map_err(|e| ItemError::Json(e.to_string()))?)?;
    Ok(Self::build(&map, text.into(), cost))
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
    let text = object_to_js_json(&map);
    let cost = tokens_for_units(utf16_len(&text));
    Self::build(&map, text.into_boxed_str(), cost)
  }

  fn build(json: &Map<String, Value>, text: Box<str>, cost: u64) -> Item {
    let field = |key| json.get(key).and_then(Value::as_str);
    Self::with_facts(text, cost, field("type").unwrap_or(""), field("role"), field("callId"))
  }

  fn with_facts(text: Box<str>, cost: u64, ty: &str, role: Option<&str>, call_id: Option<&str>) -> Item {
    let call_id = || call_id.map(str::to_owned);
    let link = match ty {
      "function_call" => call_id().map_or(ToolLink::None, ToolLink::Call),
      "function_call_output" => call_id().map_or(ToolLink::None, ToolLink::Output),
      _ => ToolLink::None,
    };
    let role = role.filter(|_| ty == "message").map(|role| Name::of(role, &ROLES));
    Item { text, ty: Name::of(ty, &BASE_TYPES), cost, link, role, parsed: OnceLock::new() }
  }

  /// The `type` discriminant (never empty).
  pub fn item_type(&self) -> &str {
    self.ty.as_str()
  }

  /// The role of a `message` item; `None` for other types.
  pub fn role(&self) -> Option<&str> {
    self.role.as_ref().map(Name::as_str)
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
  pub fn link(&self) -> &ToolLink {
    &self.link
  }

  /// A `message` with role `system`.
  pub fn is_system_message(&self) -> bool {
    self.role() == Some("system")
  }

  /// ⌈UTF-16 length of the compact JS JSON / 4⌉: upstream's `estimateTokens(JSON.stringify(item))`.
  pub fn cost(&self) -> u64 {
    self.cost
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
    let Self { text, parsed, .. } = self;
    parsed.into_inner().map_or_else(|| parse_known(&text), |map| *map)
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
  Err(NoeticError::new(
    "item_schema_mismatch",
    json!({ "kind": "item_schema_mismatch", "category": "items", "itemType": ty }),
    format!("Item type '{ty}' did not match any registered item extension schema."),
  ))
}

/// An item JS handed over (a model reply, an injected or appended item) as it enters the log: text that is not an
/// item, or an item of a type `types` does not admit, is `item_schema_mismatch`.
pub fn parse_js_item(text: &str, types: ItemTypes) -> Result<Item, NoeticError> {
  let item = Item::from_json_text(text)
    .map_err(|error| NoeticError::new("item_schema_mismatch", json!({ "category": "items" }), error.to_string()))?;
  check_item_type(&item, types)?;
  Ok(item)
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
    assert_eq!(call.link(), &ToolLink::None);
    let output = Item::from_json_text(r#"{"type":"function_call_output","callId":"c1","role":"user"}"#).expect("item");
    assert_eq!((output.link(), output.role()), (&ToolLink::Output("c1".into()), None));
    // Escapes in the read fields are decoded; a lone surrogate in one still makes an item.
    let escaped = Item::from_json_text(r#"{"type":"mess\u0061ge","role":"\ud835"}"#).expect("item");
    assert_eq!((escaped.item_type(), escaped.role()), ("message", Some("\u{fffd}")));
    // An array is not an item, though a struct could be read from one.
    assert_eq!(Item::from_json_text(r#"["message"]"#), Err(ItemError::NotAnItem));
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
    assert_eq!(call.link(), &ToolLink::Call("c1".into()));
    assert_eq!(
      (call.call_id(), call.name(), call.arguments(), call.id()),
      (Some("c1"), Some("t"), Some("{}"), Some("x"))
    );
    assert_eq!(call.role(), None);

    let out = Item::from_value(json!({"type": "function_call_output", "callId": "c1", "output": "ok"})).expect("item");
    assert_eq!(out.link(), &ToolLink::Output("c1".into()));

    // A non-string callId does not link.
    let odd = Item::from_value(json!({"type": "function_call", "callId": 7})).expect("item");
    assert_eq!(odd.link(), &ToolLink::None);

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
