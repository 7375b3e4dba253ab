//! Summaries made by the harness's model: a spawn's `contextOut: summary` (D12) and the history a `summarize`
//! projection drops (D10). One model round without tools, on part of a context's log.

use std::ops::Range;
use std::sync::Arc;

use super::context::OverflowSummary;
use super::llm::track_usage;
use super::{ExecContext, Model, ModelRequest, RunResult, Runner};
use crate::host::{ModelCall, ViewEntry};
use crate::items::{Item, Pairing, assistant_text_of, create_message};
use crate::memory::ProjectionPolicy;
use crate::steps::LlmStep;

/// Asked of the model for an overflow summary.
const OVERFLOW_PROMPT: &str = "The conversation above no longer fits the context window. Summarize it so the \
                               conversation can go on without it: the user's goals, decisions, facts learned, tool \
                               results that still matter, and what remains open. Be concise.";

/// What to summarize: a run of a context's log, after an earlier summary it extends (if any), asked with `prompt`.
pub(crate) struct SummaryRequest<'a> {
  /// Named in errors.
  pub step_id: &'a str,
  pub model: &'a str,
  pub range: Range<usize>,
  pub earlier: Option<&'a str>,
  pub prompt: &'a str,
}

impl Runner {
  /// The model's text for `request`. Its usage counts in `ctx`, like any model call the context makes.
  pub(crate) async fn summarize(&self, ctx: &Arc<ExecContext>, request: SummaryRequest<'_>) -> RunResult<String> {
    let earlier = match request.earlier {
      Some(text) => {
        Some(Arc::new(create_message(format!("Summary of the conversation so far:\n{text}"), "developer")?))
      }
      None => None,
    };
    let ask = Arc::new(create_message(request.prompt, "user")?);
    let round = if matches!(*self.model, Model::Host) {
      // A JS model is handed log positions it already holds, not the items again.
      let mut view: Vec<ViewEntry> = earlier.into_iter().map(|item| ViewEntry::Layer { item, kept: None }).collect();
      view.push(ViewEntry::Log { start: request.range.start, end: request.range.end });
      view.push(ViewEntry::Layer { item: ask, kept: None });
      let call = ModelCall {
        context: ctx.id.clone(),
        model: request.model.to_owned(),
        instructions: None,
        view,
        tools: Vec::new(),
        allowed_tool_names: None,
        step: None,
        aside: true,
        layers: None,
      };
      self.host_round(call).await?
    } else {
      // No context: a summary is not streamed to a session's readers as if it were the agent's reply.
      let mut items: Vec<Arc<Item>> = earlier.into_iter().collect();
      items.extend(ctx.state().log.items().get(request.range.clone()).unwrap_or_default().iter().cloned());
      items.push(ask);
      let aside = ModelRequest { model: request.model.to_owned(), items, ..ModelRequest::default() };
      self.answer_aside(request.step_id, &aside).await?
    };
    track_usage(ctx, &round, self.cache.is_some());
    let answer = round.items.iter().rev().find(|item| item.role() == Some("assistant"));
    Ok(answer.map(|item| assistant_text_of(item)).unwrap_or_default())
  }

  /// Summarizes the history the budget dropped (`dropped`, log positions), with the earlier summary and half of
  /// what the budget kept: the next summary is then due only once the history has grown by about half the budget
  /// again, not on every step. Whether the context's summary changed. Without a model the history is only truncated;
  /// a failed summary is a diagnostic, and the step goes on truncated.
  pub(crate) async fn summarize_overflow(
    &self,
    ctx: &Arc<ExecContext>,
    step: &LlmStep,
    policy: &ProjectionPolicy,
    dropped: Range<usize>,
  ) -> bool {
    if matches!(*self.model, Model::None) {
      return false;
    }
    let (to, earlier) = {
      let state = ctx.state();
      let len = state.log.len();
      let mut to = dropped.end + (len - dropped.end) / 2;
      // A tool output goes where its call goes.
      while to < len && matches!(state.log.pairing(to), Pairing::Output(_)) {
        to += 1;
      }
      // The newest item (the question at hand) is never summarized away.
      let to = to.min(len.saturating_sub(1)).max(dropped.end);
      (to, state.overflow_summary.as_ref().map(|s| s.text.clone()))
    };
    let model = policy.overflow_model.as_deref().unwrap_or(&step.model);
    let request = SummaryRequest {
      step_id: &step.id,
      model,
      range: dropped.start..to,
      earlier: earlier.as_deref(),
      prompt: OVERFLOW_PROMPT,
    };
    let summarized = match self.summarize(ctx, request).await {
      Ok(text) => create_message(format!("Summary of the earlier conversation:\n{text}"), "developer")
        .map(|item| OverflowSummary { covers: to, text, item: Arc::new(item) })
        .map_err(|e| e.to_string()),
      Err(error) => Err(error.to_string()),
    };
    match summarized {
      Ok(summary) => {
        ctx.state().overflow_summary = Some(summary);
        true
      }
      Err(message) => {
        self.env.sink.step_diagnostic(&step.id, "summarize", &format!("Overflow summary failed: {message}"));
        false
      }
    }
  }
}
