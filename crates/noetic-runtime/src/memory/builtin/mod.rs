//! The built-in layers implemented in Rust, as pure functions over their JSON state: the lifecycle calls them
//! directly (no JS crossing) and the JS-facing `hooks` objects call the same functions.

pub mod durable_task_state;
pub mod faces;
pub mod file_reference;
pub mod flow_schema;
pub mod history_window;
pub mod js_json;
pub mod layers;
pub mod observational_memory;
pub mod plan_memory;
pub mod static_content;
pub mod steering;
pub mod steering_layer;
pub mod temporal_memory;
pub mod tool_memory;
pub mod working_memory;
