//! Items (the conversation's units), their cached costs, and the append-only log.

mod item;
mod js_json;
mod link;
mod log;
mod message;
mod text;
mod tool_calls;

pub use self::item::{
  Item, ItemError, ItemTypes, check_item_type, check_known_type, is_known_base_type, parse_js_item, parse_js_items,
};
pub use self::js_json::{
  js_json_utf16_len, js_number_string, object_js_json_utf16_len, object_to_js_json, to_js_json, write_js_number,
};
pub(crate) use self::js_json::{write_joined_string, write_js_json, write_string as write_js_string};
pub use self::link::{Pairing, strip_unresolved_mask};
pub use self::log::ItemLog;
pub use self::message::{
  assistant_message, create_message, create_message_from_literal, create_message_with_id, function_call,
  function_call_output, input_message,
};
pub(crate) use self::text::find_function_call as text_find_function_call;
pub use self::text::{
  assistant_text_of, collect_input_text, collect_output_text, extract_assistant_text, output_text_literal,
};
pub use self::tool_calls::{find_function_call, strip_unresolved_tool_calls};
