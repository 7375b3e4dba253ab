//! A model the runtime's tool loop can drive: it answers one round given the conversation and the tools. The
//! scripted model and the OpenRouter provider both are one, so they share the loop (and its behaviour).

use crate::provider::CacheMarks;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::context::ExecContext;
use super::error::{RunError, RunResult};
use super::exec_io::ExecIo;
use super::scripted::ScriptedModel;
use super::tools::ToolDef;
use crate::error::NoeticError;
use crate::host::HostError;
use crate::items::Item;
use crate::js_date::now_millis;
use crate::provider::wire::camel_keys;
use crate::provider::{DeltaSink, OpenRouter, ProviderError, ProviderRequest, Round, Timeout, Unusable};
use crate::steps::{Emit, ModelParams};

/// One round's question. Copy, so that the loop can restate it with the grown conversation.
#[derive(Clone, Copy)]
pub(crate) struct RoundRequest<'a> {
  /// Named in errors (`llm_rate_limit.stepId`).
  pub step_id: &'a str,
  pub model: &'a str,
  pub instructions: Option<&'a str>,
  pub params: &'a ModelParams,
  pub conversation: &'a [Arc<Item>],
  pub tools: &'a [ToolDef],
  /// The JSON Schema every round's reply must follow (`step.llm`'s `output`).
  pub output_schema: Option<&'a serde_json::Value>,
  /// Aborting this context ends a round in flight; `None` outside a run (`harness.callModel`).
  pub ctx: Option<&'a ExecContext>,
  /// Ask with the ephemeral "continue" message after the conversation (not part of it, nor of the log).
  pub nudge: bool,
  /// What the step lets onto the session's stream (the tool loop's events).
  pub emit: Emit,
  /// Called on the round's first provider event, before it is forwarded (`llm_call_first_event`).
  pub first_event: Option<&'a (dyn Fn() + Sync)>,
  /// Called with the limit in milliseconds when the provider went quiet past `streamIdleTimeoutMs`, before the
  /// round fails (`llm_call_stalled`).
  pub stalled: Option<&'a (dyn Fn(f64) + Sync)>,
  /// The cache directive of an anchored request (`contextCache`); its breakpoints index `conversation`'s start.
  pub cache: Option<&'a CacheMarks>,
}

#[async_trait]
pub(crate) trait RoundModel: Sync {
  /// The round, the model's own retries included.
  async fn answer(&self, request: &RoundRequest<'_>) -> RunResult<Round>;

  /// One attempt at the round, nudged when `nudged`: the round, or why the response cannot be used (the caller
  /// retries, reporting each attempt). A model whose every answer is usable has no attempts of its own.
  async fn attempt(&self, request: &RoundRequest<'_>, _nudged: bool) -> RunResult<Result<Round, Unusable>> {
    self.answer(request).await.map(Ok)
  }
}

#[async_trait]
impl RoundModel for ScriptedModel {
  async fn answer(&self, request: &RoundRequest<'_>) -> RunResult<Round> {
    Ok(self.respond(request.conversation))
  }
}

#[async_trait]
impl RoundModel for OpenRouter {
  async fn answer(&self, request: &RoundRequest<'_>) -> RunResult<Round> {
    // Every attempt, nudges included, is the provider's own here.
    ask(self, request, None)
      .await?
      .map_err(|problem| provider_failure(ProviderError::Unusable(problem.message), request.step_id))
  }

  async fn attempt(&self, request: &RoundRequest<'_>, nudged: bool) -> RunResult<Result<Round, Unusable>> {
    ask(self, request, Some(nudged)).await
  }
}

/// The provider asked with `request`: one attempt (`nudged` given), or the round with the provider's own retries.
/// The session's stream is the sink of its events, and the context's abort ends it.
async fn ask(
  provider: &OpenRouter,
  request: &RoundRequest<'_>,
  nudged: Option<bool>,
) -> RunResult<Result<Round, Unusable>> {
  let session = request.ctx.and_then(|ctx| ctx.io()).map(|io| SessionEvents { io, first_event: request.first_event });
  let provider_request = ProviderRequest {
    model: request.model,
    instructions: request.instructions,
    items: request.conversation,
    tools: request.tools,
    params: request.params,
    output_schema: request.output_schema,
    deltas: session.as_ref().map(|sink| sink as &dyn DeltaSink),
    nudge: request.nudge,
    cache: request.cache,
  };
  // With tools, upstream's SDK reads a round as a turn of its own: its events come between `turn.start` and
  // `turn.end` (turn 0: each round is a call of its own), which a session's stream forwards as it does the rest.
  let turn = |kind: &str| {
    if let Some(sink) = session.as_ref().filter(|_| !request.tools.is_empty()) {
      sink.event(kind, &serde_json::json!({ "type": kind, "turnNumber": 0, "timestamp": now_millis() }));
    }
  };
  let call = async {
    turn("turn.start");
    let answer = match nudged {
      Some(nudged) => provider.attempt(&provider_request, nudged).await,
      None => provider.respond(&provider_request).await.map(Ok),
    };
    if answer.is_ok() {
      turn("turn.end");
    }
    answer
  };
  let result = match request.ctx {
    // Dropping the call's future closes its connection, so an abort ends the request itself.
    Some(ctx) => tokio::select! {
      result = call => result,
      reason = ctx.until_aborted() => return Err(NoeticError::cancelled(&reason).into()),
    },
    None => call.await,
  };
  if let (Err(ProviderError::TimedOut { timeout: Timeout::Idle, limit, .. }), Some(stalled)) =
    (&result, request.stalled)
  {
    stalled(limit.as_secs_f64() * 1000.0);
  }
  result.map_err(|error| provider_failure(error, request.step_id))
}

/// A session's stream sees every provider event, as upstream forwards its SDK's: `{source: 'sdk', type, data,
/// outputIndex, contentIndex}`, the data camelCased as the SDK gives it. The text and reasoning streams read the
/// deltas out of these events, so the deltas themselves need nothing more here.
struct SessionEvents<'a> {
  io: &'a dyn ExecIo,
  first_event: Option<&'a (dyn Fn() + Sync)>,
}

impl DeltaSink for SessionEvents<'_> {
  fn event(&self, kind: &str, event: &Value) {
    if let Some(first_event) = self.first_event {
      first_event();
    }
    self.io.sdk(kind, camel_keys(event));
  }
}

/// A 429 is upstream's `llm_rate_limit`; a bad item type its `item_schema_mismatch`; the rest fail the run with
/// a plain error that says what happened, as the upstream SDK's errors do.
fn provider_failure(error: ProviderError, step_id: &str) -> RunError {
  match error {
    ProviderError::RateLimited { retry_after_ms } => {
      let mut payload = Map::new();
      payload.insert("stepId".into(), Value::String(step_id.to_owned()));
      if let Some(ms) = retry_after_ms {
        payload.insert("retryAfter".into(), serde_json::json!(ms));
      }
      NoeticError::described("llm_rate_limit", Value::Object(payload)).into()
    }
    ProviderError::Item(error) => error.into(),
    other => RunError::Host(HostError::Thrown { message: other.to_string(), error: None }),
  }
}
