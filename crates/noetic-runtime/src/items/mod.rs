//! Items (the conversation's units), their cached costs, and the append-only log.

mod link;

pub use self::link::{ToolLink, strip_unresolved_mask};
