//! Items (the conversation's units), their cached costs, and the append-only log.

mod link;
mod text;

pub use self::link::{ToolLink, strip_unresolved_mask};
pub use self::text::{
  collect_input_text, collect_output_text, extract_assistant_text, find_function_call,
};
