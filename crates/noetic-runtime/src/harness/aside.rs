//! The harness's model as built-in layers ask it (steering's verdicts, fileReference's scores): one round beside
//! the conversation, as a hook's `ctx.callModel` would make. Its usage is not added to any context (D8).

use std::sync::Arc;

use async_trait::async_trait;

use super::model::Model;
use super::round_model::{RoundModel, RoundRequest};
use crate::host::{Host, ModelCall, ViewEntry};
use crate::items::{Item, assistant_text_of, create_message};
use crate::memory::native::AsideModel;
use crate::steps::{Emit, ModelParams};

pub(super) struct LayerAsks {
  pub model: Arc<Model>,
  pub host: Arc<dyn Host>,
}

/// The last assistant message's text among `items`, as upstream's `extractAssistantText` over a reply.
fn assistant_text<'a>(items: impl DoubleEndedIterator<Item = &'a Item>) -> String {
  let answer = items.rev().find(|item| item.role() == Some("assistant"));
  answer.map(assistant_text_of).unwrap_or_default()
}

#[async_trait]
impl AsideModel for LayerAsks {
  async fn ask(&self, context: &str, model: &str, instructions: Option<&str>, prompt: &str) -> Result<String, String> {
    let ask = Arc::new(create_message(prompt, "user").map_err(|error| error.message)?);
    let params = ModelParams::default();
    let round = RoundRequest {
      step_id: "callModel",
      model,
      instructions,
      params: &params,
      conversation: std::slice::from_ref(&ask),
      tools: &[],
      output_schema: None,
      ctx: None,
      nudge: false,
      emit: Emit::None,
      first_event: None,
      stalled: None,
      cache: None,
    };
    let round = match &*self.model {
      Model::Scripted(scripted) => scripted.answer(&round).await,
      Model::OpenRouter(provider) => provider.answer(&round).await,
      Model::None => Err(super::llm::no_provider().into()),
      Model::Host => {
        let call = ModelCall {
          context: context.to_owned(),
          model: model.to_owned(),
          instructions: instructions.map(str::to_owned),
          view: vec![ViewEntry::Layer { item: ask, kept: None }],
          tools: Vec::new(),
          allowed_tool_names: None,
          step: None,
          aside: true,
          layers: None,
        };
        let reply = self.host.call_model(call).await.map_err(|error| error.to_string())?;
        let items = reply.items.iter().map(|text| Item::from_json_text(text)).collect::<Result<Vec<_>, _>>();
        return items.map(|items| assistant_text(items.iter())).map_err(|error| error.to_string());
      }
    };
    round.map(|round| assistant_text(round.items.iter().map(|item| &**item))).map_err(|error| error.to_string())
  }
}
