//! `createOpenRouterEmbed`'s embedder: the HTTP call runs in Rust, as the provider's do.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use noetic_runtime::provider::OpenRouterEmbed;

use crate::guard::guarded;
use crate::protocol::{config_json, to_napi};

#[napi]
pub struct NativeEmbedder {
  inner: Arc<OpenRouterEmbed>,
}

#[napi]
impl NativeEmbedder {
  #[napi(constructor)]
  pub fn new(api_key: String, model: Option<String>, base_url: Option<String>) -> Result<Self> {
    let embed = OpenRouterEmbed::new(&api_key, model.as_deref(), base_url.as_deref().filter(|url| !url.is_empty()))
      .map_err(|error| to_napi(config_json(&error)))?;
    Ok(Self { inner: Arc::new(embed) })
  }

  /// One vector per text, in order.
  #[napi]
  pub async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f64>>> {
    let inner = Arc::clone(&self.inner);
    guarded(async move { inner.embed(&texts).await.map_err(|message| Error::new(Status::GenericFailure, message)) })
      .await
  }
}
