//! OpenRouter's embeddings endpoint, for `createOpenRouterEmbed`: texts in, one vector each, in input order.

use serde::Deserialize;
use serde_json::json;

use crate::error::ConfigError;

pub struct OpenRouterEmbed {
  http: reqwest::Client,
  endpoint: reqwest::Url,
  api_key: String,
  model: String,
}

#[derive(Deserialize)]
struct Embeddings {
  data: Vec<Embedding>,
}

#[derive(Deserialize)]
struct Embedding {
  index: usize,
  embedding: Vec<f64>,
}

impl OpenRouterEmbed {
  pub const DEFAULT_MODEL: &str = "openai/text-embedding-3-small";

  pub fn new(api_key: &str, model: Option<&str>, base_url: Option<&str>) -> Result<Self, ConfigError> {
    if api_key.trim().is_empty() {
      return Err(ConfigError::new(
        "MISSING_API_KEY",
        "createOpenRouterEmbed() requires an OpenRouter API key.",
        "Pass the key explicitly, e.g. createOpenRouterEmbed(process.env.OPENROUTER_API_KEY).",
      ));
    }
    let hint = "Set OPENROUTER_BASE_URL like 'https://openrouter.ai/api/v1', or leave it unset.";
    let endpoint = super::openrouter::endpoint(base_url, "embeddings", hint)?;
    let no_limits = super::Timeouts { connect: None, idle: None, total: None };
    let http = super::openrouter::http_client(&no_limits)?;
    Ok(Self { http, endpoint, api_key: api_key.to_owned(), model: model.unwrap_or(Self::DEFAULT_MODEL).to_owned() })
  }

  /// One vector per text, in the texts' order (the response may list them in any).
  pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f64>>, String> {
    let body = json!({ "model": self.model, "input": texts });
    let response = self
      .http
      .post(self.endpoint.clone())
      .bearer_auth(&self.api_key)
      .json(&body)
      .send()
      .await
      .map_err(|error| format!("OpenRouter embeddings request failed: {error}"))?;
    let status = response.status();
    if !status.is_success() {
      let reason = status.canonical_reason().unwrap_or_default();
      return Err(format!("OpenRouter embeddings request failed: {} {reason}", status.as_u16()));
    }
    let text = response.text().await.map_err(|error| format!("OpenRouter embeddings response unreadable: {error}"))?;
    let mut parsed: Embeddings =
      serde_json::from_str(&text).map_err(|error| format!("OpenRouter embeddings response is malformed: {error}"))?;
    parsed.data.sort_by_key(|entry| entry.index);
    Ok(parsed.data.into_iter().map(|entry| entry.embedding).collect())
  }
}

#[cfg(test)]
mod tests {
  use wiremock::matchers::{body_json, header, method, path};
  use wiremock::{Mock, MockServer, ResponseTemplate};

  use super::*;

  #[tokio::test]
  async fn vectors_come_back_in_input_order_and_failures_name_the_status() {
    let server = MockServer::start().await;
    let reply = json!({ "data": [{ "index": 1, "embedding": [0.0, 1.0] }, { "index": 0, "embedding": [1.0, 0.5] }] });
    Mock::given(method("POST"))
      .and(path("/embeddings"))
      .and(header("authorization", "Bearer key"))
      .and(body_json(json!({ "model": "m/e", "input": ["a", "b"] })))
      .respond_with(ResponseTemplate::new(200).set_body_json(reply))
      .mount(&server)
      .await;
    let embed = OpenRouterEmbed::new("key", Some("m/e"), Some(&server.uri())).expect("client");
    assert_eq!(embed.embed(&["a".into(), "b".into()]).await, Ok(vec![vec![1.0, 0.5], vec![0.0, 1.0]]));
    let refused = OpenRouterEmbed::new("other", Some("m/e"), Some(&server.uri())).expect("client");
    let error = refused.embed(&["a".into(), "b".into()]).await.expect_err("no mock matches");
    assert_eq!(error, "OpenRouter embeddings request failed: 404 Not Found");
    assert_eq!(OpenRouterEmbed::new(" ", None, None).err().map(|e| e.code), Some("MISSING_API_KEY".to_owned()));
  }
}
