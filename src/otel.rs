//! `@noetic-tools/core/otel`'s native half: the runtime maps our spans to OpenTelemetry's and holds them until they
//! can start parent first (`noetic_runtime::otel`); this converts.

use std::sync::{Mutex, PoisonError};

use napi_derive::napi;
use serde_json::Value;

use noetic_runtime::otel::OtelBatcher;

/// One OTel trace exporter's spans in waiting.
#[napi]
pub struct OtelSpans {
  inner: Mutex<OtelBatcher>,
}

#[napi]
impl OtelSpans {
  #[napi(constructor)]
  pub fn new(capture_content: bool) -> Self {
    Self { inner: Mutex::new(OtelBatcher::new(capture_content)) }
  }

  /// Takes one exported batch (the spans as JSON) and answers, as JSON, the OTel spans ready to start, parents
  /// first. A batch that is not a JSON array adds nothing.
  #[napi(catch_unwind)]
  pub fn push(&self, spans: String) -> String {
    let spans = match serde_json::from_str(&spans) {
      Ok(Value::Array(spans)) => spans,
      _ => Vec::new(),
    };
    let ready = self.inner.lock().unwrap_or_else(PoisonError::into_inner).push(spans);
    serde_json::to_string(&ready).unwrap_or_else(|_| "[]".to_owned())
  }
}
