//! The state behind the harness's adapters that Rust owns. The adapters' user-facing functions and the JS values
//! they carry stay with their JS wrappers (A2).

pub mod subprocess;
