//! Which model answers LLM steps.

use super::scripted::ScriptedModel;
use crate::provider::OpenRouter;

pub enum Model {
  /// No provider: an LLM step fails with `NO_LLM_PROVIDER`.
  None,
  /// The built-in scripted model; tools run in the runtime's tool loop.
  Scripted(ScriptedModel),
  /// OpenRouter's Responses API over HTTP; tools run in the same loop as the scripted model's.
  OpenRouter(OpenRouter),
  /// The user's `_testCallModel`, which receives the whole request and answers it, tools included.
  Host,
}

impl Model {
  pub fn is_configured(&self) -> bool {
    !matches!(self, Self::None)
  }
}
