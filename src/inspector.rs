//! The inspector's gate as JS's server calls it (`harness/inspect/gate.rs` decides).

use napi_derive::napi;

use noetic_runtime::harness::inspect::gate::{Gate, Request};

#[napi]
pub struct InspectorGate {
  gate: Gate,
}

#[napi]
impl InspectorGate {
  /// For a server bound to `address` and `port`, with a fresh token.
  #[napi(constructor)]
  pub fn new(address: String, port: u32) -> Self {
    Self { gate: Gate::new(&address, u16::try_from(port).unwrap_or(0)) }
  }

  #[napi(getter)]
  pub fn origin(&self) -> String {
    self.gate.origin().to_owned()
  }

  #[napi(getter)]
  pub fn url(&self) -> String {
    self.gate.url()
  }

  /// `[status, text]` when the request is refused; `null` when it may be answered.
  #[napi(catch_unwind)]
  pub fn refusal(
    &self,
    method: String,
    host: String,
    origin: Option<String>,
    fetch_site: Option<String>,
    token: String,
  ) -> Option<(u32, String)> {
    let request = Request {
      method: &method,
      host: &host,
      origin: origin.as_deref(),
      fetch_site: fetch_site.as_deref(),
      token: &token,
    };
    self.gate.refusal(&request).map(|(status, text)| (u32::from(status), text.to_owned()))
  }
}
