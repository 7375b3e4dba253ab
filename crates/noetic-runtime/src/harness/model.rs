//! Which model answers LLM steps.

use super::round_model::RoundModel;
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

  /// The model the runtime's own tool loop drives: the scripted one or OpenRouter; `None` for no provider and for
  /// the host's, which answers whole requests.
  pub(super) fn rounds(&self) -> Option<&dyn RoundModel> {
    match self {
      Self::Scripted(model) => Some(model),
      Self::OpenRouter(provider) => Some(provider),
      Self::None | Self::Host => None,
    }
  }
}
