//! One LLM step (§7.3): the input enters the log, layers recall within their budgets, the view is projected from
//! cached costs, the model answers (running tools), the response enters the log, usage is recorded, layers store.
//! `Model::Host` (`_testCallModel`) answers the whole step itself; every other model runs in the tool loop.

use crate::memory::cache_anchor::Bands;
use crate::provider::CacheMarks;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::json;

use super::context::{ExecContext, StepMeta};
use super::inspect::{CallFacts, DROPPED_SHOWN, HistoryRun, SteeringRecord, WindowShape};
use super::model::Model;
use super::round_model::RoundRequest;
use super::tool_loop::StepRecall;
use super::tools::{ToolDef, layer_tools, merge_tools};
use super::usage::{FixedCosts, LayerUsage, UsageInputs};
use super::{RunResult, Runner, layer_budgets};
use crate::error::{ConfigError, NoeticError};
use crate::host::{LazyCall, ModelCall, OutputCall, SteeringAction, SteeringDecision, StepValue, ViewEntry};
use crate::items::{
  Item, ItemLog, Pairing, assistant_text_of, create_message, create_message_from_literal, output_text_literal,
  parse_js_item,
};
use crate::memory::lifecycle::{self, Projected, RecallEntry};
use crate::memory::registry::LayerSet;
use crate::memory::{DEFAULT_PROJECTION, HeldCut, HistoryView, Overflow, ProjectionPolicy, assemble_view_from};
use crate::provider::Round;
use crate::steps::{LazyField, LazyFields, LlmStep};

pub(super) fn no_provider() -> ConfigError {
  ConfigError::new(
    "NO_LLM_PROVIDER",
    "No LLM provider configured on this runner.",
    "Pass `llm: { provider: 'scripted' }` for the built-in scripted model, `llm: { provider: 'openrouter', apiKey }`, or set OPENROUTER_API_KEY.",
  )
}

/// The log without its system messages (they are hoisted), indexed without copying it.
struct HistoryOfLog<'a> {
  log: &'a ItemLog,
  system: &'a [usize],
  /// Items before this index are not offered: an overflow summary stands for them (D10).
  floor: usize,
}

impl HistoryOfLog<'_> {
  fn position(&self, i: usize) -> usize {
    // System messages are few; skip the ones at or before the position being mapped.
    let mut pos = i;
    for &system in self.system {
      if system <= pos {
        pos += 1;
      } else {
        break;
      }
    }
    pos
  }
}

impl HistoryView for HistoryOfLog<'_> {
  fn len(&self) -> usize {
    self.log.len() - self.system.len()
  }

  fn cost(&self, i: usize) -> u64 {
    self.log.cost_at(self.position(i))
  }

  fn link(&self, i: usize) -> Pairing<u32> {
    self.log.pairing(self.position(i))
  }

  /// Suffix costs only shrink as the run starts later, so the first start that fits is found by bisection over the
  /// log's prefix sums: a step reads a few costs, not one per kept item.
  fn newest_run_within(&self, start: usize, budget: f64) -> usize {
    // Not `<=`: a NaN budget fits everything, as the walk's `used + cost > budget` never stops it.
    let fits = |i: usize| (self.suffix_cost(i) as f64).partial_cmp(&budget) != Some(std::cmp::Ordering::Greater);
    let (mut low, mut high) = (start.max(self.floor), self.len());
    while low < high {
      let mid = low + (high - low) / 2;
      if fits(mid) {
        high = mid;
      } else {
        low = mid + 1;
      }
    }
    low
  }
}

impl HistoryOfLog<'_> {
  /// The cost of history items `i..`: their stretch of the log less the system messages in it.
  fn suffix_cost(&self, i: usize) -> u64 {
    let pos = self.position(i);
    let system: u64 = self.system.iter().filter(|&&p| p >= pos).map(|&p| self.log.cost_at(p)).sum();
    self.log.range_cost(pos..) - system
  }
}

/// The context window of one model call, as log positions and layer items.
struct View {
  entries: Vec<ViewEntry>,
  items: Vec<Arc<Item>>,
  /// What the inspector shows of it, made only while one is open.
  shape: Option<WindowShape>,
  /// Log positions of the history the budget dropped beyond what an overflow summary covers: `[from, to)`.
  dropped: std::ops::Range<usize>,
  /// Where the kept history began, as an index into the history: an anchored lineage holds it (see
  /// [`assemble_view_from`]).
  cut: usize,
  /// Anchored, for a native provider: where the cacheable parts of `items` end.
  cache: Option<CacheMarks>,
}

impl Runner {
  /// Its memory phases (append, recall, projection, steering, store) and the tool loop are awaited boxed: this future
  /// lives as long as the step, held by every turn in flight while the model answers, and an async fn's future is as
  /// large as the largest thing it awaits. Inline they made it 5 KB (and the turn's in-flight state 16 KB a session);
  /// a box costs one allocation, and only while its phase runs.
  pub(crate) async fn execute_llm(
    &self,
    step: &LlmStep,
    input: &StepValue,
    ctx: &Arc<ExecContext>,
  ) -> RunResult<StepValue> {
    let resolved;
    let step = match &step.lazy {
      Some(lazy) => {
        resolved = self.resolve_lazy(step, lazy, ctx).await?;
        &resolved
      }
      None => step,
    };
    if step.model.trim().is_empty() {
      return Err(missing_model(&step.id).into());
    }
    // The step reads the whole log (its projection, and `historyTokens` as upstream counts them).
    ctx.take_held_items(&*self.env.host).await?;
    let layers = ctx.layers();
    let has_layers = !layers.is_empty();
    let query = input.as_text().unwrap_or_default().to_owned();
    if !query.is_empty() {
      // A model's text holding a lone surrogate becomes the message JS's createMessage would make (B1).
      let exact = match &input {
        StepValue::Utf16Text { json, .. } => create_message_from_literal(json, "user"),
        _ => None,
      };
      let message = Arc::new(match exact {
        Some(message) => message,
        None => create_message(&query, "user")?,
      });
      let items = if has_layers {
        Box::pin(lifecycle::append_items(&self.env, &self.scope(ctx), vec![message])).await?
      } else {
        vec![message]
      };
      let mut state = ctx.state();
      for item in items {
        state.log.push(item);
      }
    }

    let tools = match &step.tools {
      Some(tools) if tools.is_empty() => Vec::new(),
      Some(tools) => merge_tools(tools.clone(), layer_tools(&layers)),
      // In a session's own context, a step without tools of its own is offered the session's (upstream's
      // `unifiedTools`); a fork's paths and a spawn's child are not (upstream gives them none of the session's).
      None if ctx.receives_input() => merge_tools(self.turn_tools.to_vec(), layer_tools(&layers)),
      None => layer_tools(&layers),
    };
    let offer = self.host_offer(step, &tools, &layers, ctx);
    let policy = step.projection.clone().or_else(|| self.projection.clone()).unwrap_or(DEFAULT_PROJECTION);
    let fixed = FixedCosts::of(step.instructions.as_deref(), &tools, self.tokenizer);
    let view_policy =
      ProjectionPolicy { token_budget: (policy.token_budget - fixed.system_tokens as f64).max(0.0), ..policy.clone() };

    let mut budgets = HashMap::new();
    let recalled = if has_layers {
      budgets = layer_budgets(&layers, &policy, fixed.system_tokens as f64)?;
      let cache = self.recall_cache_in_use().map(|cache| &**cache);
      // A JS model can be handed the recalled items JS still holds: JS keeps them until this step is done.
      let keep_recalled = matches!(*self.model, Model::Host);
      Box::pin(lifecycle::recall_layers(&self.env, &self.scope(ctx), &budgets, &query, cache, keep_recalled)).await
    } else {
      Vec::new()
    };

    let _released = ReleaseRecalled {
      host: Arc::clone(&self.env.host),
      keys: recalled.iter().filter_map(|entry| entry.host_key).collect(),
    };
    // With `contextCache`, what the request carries of each layer: its pin or its fresh output, in its band.
    let (mut recalled, mut bands) = if has_layers {
      let window = policy.token_budget - policy.response_reserve;
      Box::pin(self.anchor_layers(ctx, step.instructions.as_deref(), &layers, recalled, (window, &budgets))).await
    } else {
      (recalled, None)
    };
    // A JS model reads the view as log positions and layer items; only a native one needs the items themselves.
    let with_items = !matches!(*self.model, Model::Host);
    // The inspector records each attempt (a steering guide asks again) while it is open.
    let inspecting = self.inspector.is_open();
    // Steering (§7.3, step 7): with layers, afterModelCall judges each response; a guide asks again, up to
    // MAX_STEERING_RETRIES times, with the guidance appended as a developer message.
    let mut retries = 0;
    let response = loop {
      // Layers may project the history (read-side, once per model attempt, §11.1).
      let read_log = |read: &mut dyn FnMut(&ItemLog)| read(&ctx.state().log);
      let projected = if has_layers {
        Box::pin(lifecycle::project_history(&self.env, &self.scope(ctx), None, &read_log)).await?
      } else {
        None
      };
      let mut view =
        project(ctx, projected.as_deref(), &recalled, bands.as_ref(), &view_policy, with_items, inspecting);
      if policy.overflow == Overflow::Summarize
        && !view.dropped.is_empty()
        && Box::pin(self.summarize_overflow(ctx, step, &policy, view.dropped.clone())).await
      {
        view = project(ctx, projected.as_deref(), &recalled, bands.as_ref(), &view_policy, with_items, inspecting);
      }
      if let Some(bands) = bands.as_mut() {
        self.note_request(ctx, &view.entries, view.cut, bands);
        self.trace_assembly(ctx, bands);
      }
      let shape = view.shape.take();
      // The recall entries' order, before the tool loop may recall again.
      let recall_order: Vec<(String, usize)> = shape
        .as_ref()
        .map_or_else(Vec::new, |_| recalled.iter().map(|e| (e.layer_id.clone(), e.items.len())).collect());
      let memory = has_layers.then(|| StepRecall { recalled: &mut recalled, budgets: &budgets, query: &query });
      let started = inspecting.then(|| (crate::memory::trace::now_ms(), std::time::Instant::now()));
      let traced = self.env.sink.tracing().then(crate::memory::trace::now_ms);
      let prompt = (traced.is_some() && self.env.sink.tracing_content()).then(|| super::spans::items_json(&view.items));
      let response = self.call_model(step, &tools, offer.as_ref(), view, ctx, memory).await;
      if let Some(start) = traced {
        let about = (&*step.id, &*step.model, super::spans::provider_name(&self.model));
        let mut span = super::spans::model_call(ctx, about, start, &response);
        if let Some(prompt) = prompt {
          super::spans::content(&mut span, step.instructions.as_deref(), prompt, &response);
        }
        self.env.sink.trace_run(span);
      }
      let response = response?;
      let called = started.map(|(at, clock)| (at, clock.elapsed().as_secs_f64() * 1000.0));
      // Every response counts, including one steering rejects: the spend is real.
      track_usage(ctx, &response, self.cache.is_some());
      if let Some(bands) = &bands {
        self.judge_cache(bands, fixed.system_tokens, response.cache_read, response.cache_write);
      }
      let decision = if has_layers {
        let usage = || json!({ "inputTokens": response.input_tokens, "outputTokens": response.output_tokens });
        Box::pin(lifecycle::after_model_call(&self.env, &self.scope(ctx), &response.items, usage)).await?
      } else {
        SteeringDecision::ALLOW
      };
      if let (Some(shape), Some((at, duration_ms))) = (shape, called) {
        let record = super::inspect::capture(CallFacts {
          id: self.inspector.next_id(),
          ctx,
          step,
          fixed,
          layers: &layers,
          budgets: &budgets,
          recall_order: &recall_order,
          recalled: &recalled,
          shape,
          policy: &policy,
          response: &response,
          steering: (decision.action != SteeringAction::Allow).then(|| SteeringRecord::of(&decision)),
          at,
          duration_ms,
          bands: bands.as_ref(),
        });
        // The server's feed task is told, when a page listens.
        self.inspector.record(record);
      }
      match decision.action {
        SteeringAction::Deny => return Err(NoeticError::steering_denied(decision.guidance.as_deref()).into()),
        SteeringAction::Guide if retries < MAX_STEERING_RETRIES => {
          let guidance = decision.guidance.as_deref().unwrap_or("Please adjust your response.");
          // The guidance is an injected message: it passes through onItemAppend (D7).
          let message = Arc::new(create_message(guidance, "developer")?);
          for item in Box::pin(lifecycle::append_items(&self.env, &self.scope(ctx), vec![message])).await? {
            ctx.state().log.push(item);
          }
          retries += 1;
        }
        _ => break response,
      }
    };

    let from_host = matches!(*self.model, Model::Host);
    let (from, to, history_tokens) = {
      let mut state = ctx.state();
      let from = state.log.len();
      for item in &response.items {
        state.log.push(Arc::clone(item));
      }
      if from_host {
        // A JS test model's items: JS keeps the objects it made, and nothing is converted back for it.
        self.env.host.model_items_placed(&ctx.id, from);
        state.log.host_holds(from, response.items.len());
      }
      let tool_calls: Vec<Arc<Item>> =
        response.items.iter().filter(|item| item.item_type() == "function_call").cloned().collect();
      state.last_tool_calls = tool_calls.len();
      state.last_model = Some(step.model.clone());
      state.last_step_meta = Some(StepMeta::Model {
        tool_calls,
        input_tokens: response.input_tokens,
        output_tokens: response.output_tokens,
        cost: response.cost,
      });
      (from, state.log.len(), state.log.total_cost())
    };
    let usage = LayerUsage::new(UsageInputs {
      execution_id: &ctx.id,
      model_id: &step.model,
      fixed,
      recalled,
      history_tokens,
      bands,
    });
    ctx.state().last_layer_usage = Some(usage);

    if has_layers {
      let usage = json!({ "inputTokens": response.input_tokens, "outputTokens": response.output_tokens });
      let scope = self.scope(ctx);
      Box::pin(lifecycle::store_layers(&self.env, &scope, &response.items, Some((from, to)), usage, from_host)).await;
      // D6: every eventual layer, not only those whose store changed state: tools, onItemAppend and in-place
      // mutation change state too. The next model call sees whichever refreshes have finished by then.
      if let Some(cache) = self.recall_cache_in_use() {
        lifecycle::refresh_eventual(&self.env, cache, &scope, &budgets);
      }
    }
    // Read without keeping the parsed fields: these items stay in the log for the session's life.
    let last_answer = response.items.iter().rev().find(|item| item.role() == Some("assistant"));
    let text = last_answer.map(|item| assistant_text_of(item)).unwrap_or_default();
    match &step.output {
      // Parsed once everything else is recorded, so a reply that does not parse still counts (as upstream).
      Some(output) => {
        let call = OutputCall { schema: output.schema, step_id: step.id.clone(), raw: text };
        Ok(self.env.host.parse_output(call).await?)
      }
      None => Ok(match last_answer.and_then(|item| output_text_literal(item.json_text())) {
        Some(json) => StepValue::Utf16Text { text, json: json.into() },
        None => StepValue::Text(text),
      }),
    }
  }

  /// Runs the step's getters once, with the live context, before anything else the step does (as upstream).
  async fn resolve_lazy(&self, step: &LlmStep, lazy: &LazyFields, ctx: &Arc<ExecContext>) -> RunResult<LlmStep> {
    let call = LazyCall { step: lazy.step, context: ctx.id.clone(), fields: lazy.fields.clone() };
    let mut values = self.env.host.resolve_lazy(call).await?;
    let mut resolved = LlmStep { lazy: None, ..step.clone() };
    for field in &lazy.fields {
      match field {
        LazyField::Model => {
          resolved.model = values.model.take().unwrap_or_default();
          if resolved.model.trim().is_empty() {
            return Err(missing_model(&step.id).into());
          }
        }
        LazyField::Instructions => resolved.instructions = values.instructions.take(),
        LazyField::Tools => resolved.tools = values.tools.take(),
      }
    }
    Ok(resolved)
  }

  /// What a JS model is shown beyond the step's tools, as upstream's request shows it: in a session's own context
  /// a step that lists its tools is handed every tool of the session (its step tree's, the harness's, its layers'),
  /// with the names it may call as `allowedToolNames`. Those names are the tools the step runs with, layer tools
  /// included (D19: they stay offered). `None` when the request is the step's tools alone.
  fn host_offer(&self, step: &LlmStep, tools: &[ToolDef], layers: &LayerSet, ctx: &ExecContext) -> Option<HostOffer> {
    let listed = step.tools.as_ref().is_some_and(|listed| !listed.is_empty());
    if !matches!(*self.model, Model::Host) || !listed || !ctx.receives_input() {
      return None;
    }
    let offered = merge_tools(self.turn_tools.to_vec(), layer_tools(layers));
    if offered.is_empty() {
      return None;
    }
    Some(HostOffer {
      allowed: tools.iter().map(|tool| tool.name.clone()).collect(),
      // A listed tool outside the session's (a getter's, a step chosen at run time) is still handed over.
      tools: merge_tools(offered, tools.to_vec()),
    })
  }

  async fn call_model(
    &self,
    step: &LlmStep,
    tools: &[ToolDef],
    offer: Option<&HostOffer>,
    view: View,
    ctx: &Arc<ExecContext>,
    memory: Option<StepRecall<'_>>,
  ) -> RunResult<Round> {
    let request = RoundRequest {
      step_id: &step.id,
      model: &step.model,
      instructions: step.instructions.as_deref(),
      params: &step.params,
      conversation: &[],
      tools,
      output_schema: step.output.as_ref().map(|output| &output.json_schema),
      ctx: Some(ctx),
      nudge: false,
      emit: step.emit,
      first_event: None,
      stalled: None,
      cache: view.cache.as_ref(),
    };
    match &*self.model {
      Model::None => Err(no_provider().into()),
      // Boxed: a JS model's round is far smaller than the tool loop, and this future lives while the model answers.
      Model::Scripted(model) => Box::pin(self.tool_loop(model, request, view.items, ctx, memory)).await,
      Model::OpenRouter(provider) => Box::pin(self.tool_loop(provider, request, view.items, ctx, memory)).await,
      Model::Host => {
        let call = ModelCall {
          context: ctx.id.clone(),
          model: step.model.clone(),
          instructions: step.instructions.clone(),
          view: view.entries,
          tools: offer.map_or(tools, |offer| &offer.tools).iter().map(|tool| self.tool_ref(tool, ctx)).collect(),
          allowed_tool_names: offer.map(|offer| offer.allowed.clone()),
          step: step.source,
          aside: false,
          layers: Some(ctx.layers().layers().iter().map(|layer| layer.handle).collect()),
        };
        self.host_round(call).await
      }
    }
  }

  /// Asks the JS model (`_testCallModel`) and takes its reply items as the harness admits them.
  pub(super) async fn host_round(&self, call: ModelCall) -> RunResult<Round> {
    let reply = self.env.host.call_model(call).await?;
    let items = reply
      .items
      .iter()
      .map(|text| parse_js_item(text, self.item_types.unless_checked(reply.items_checked)).map(Arc::new))
      .collect::<Result<_, _>>()?;
    Ok(Round {
      items,
      input_tokens: reply.input_tokens,
      output_tokens: reply.output_tokens,
      cached_tokens: reply.cached_tokens.unwrap_or(0.0),
      cost: reply.cost.unwrap_or(0.0),
      cache_read: reply.cached_tokens,
      cache_write: reply.cache_write_tokens,
    })
  }
}

/// A JS model's tools when they are more than the step's own (see [`Runner::host_offer`]).
struct HostOffer {
  tools: Vec<ToolDef>,
  allowed: Vec<String>,
}

/// Guides a step accepts before it takes the response as it is (upstream's `MAX_STEERING_RETRIES`).
const MAX_STEERING_RETRIES: usize = 3;

/// `anchored`: the harness has `contextCache`, under which reported cache figures are shown as reported.
pub(super) fn track_usage(ctx: &ExecContext, response: &Round, anchored: bool) {
  let mut state = ctx.state();
  state.tokens.add(response.input_tokens, response.output_tokens, response.cached_tokens);
  if anchored {
    state.tokens.cache_reported |= response.cache_read.is_some();
    if let Some(write) = response.cache_write {
      state.tokens.cache_write = Some(state.tokens.cache_write.unwrap_or(0.0) + write);
    }
  }
  state.cost += response.cost;
}

/// Where the host keeps a recalled item: its recall's key and the item's index there.
type Kept = Option<(u32, usize)>;

/// Tells the host, when a step is done with them, that the recalled items it kept may go (see
/// [`crate::host::HookBatch::keep_recalled`]); on any way out of the step.
struct ReleaseRecalled {
  host: Arc<dyn crate::host::Host>,
  keys: Vec<u32>,
}

impl Drop for ReleaseRecalled {
  fn drop(&mut self) {
    if !self.keys.is_empty() {
      self.host.release_recalled(&self.keys);
    }
  }
}

/// Hoists system messages, then assembles the view under the policy from cached costs (D10: with or without
/// layers). Work is proportional to what is kept, not to the log's length. `with_items`: the view also lists the
/// items themselves, which only a native model reads.
fn project(
  ctx: &ExecContext,
  projected: Option<&[Projected]>,
  recalled: &[RecallEntry],
  bands: Option<&Bands>,
  policy: &ProjectionPolicy,
  with_items: bool,
  inspecting: bool,
) -> View {
  let state = ctx.state();
  // A summary of dropped history stands for the log before `covers`, after the layer items (D10).
  let summary = state.overflow_summary.as_ref().filter(|s| projected.is_none() && s.covers <= state.log.len());
  // A projected history is costed as a log of its own; `origin` maps its positions back to the context's log,
  // so that the log's own items are still named by position (`None`: an item a hook made).
  let built;
  let (log, origin) = match projected {
    None => (&state.log, None),
    Some(entries) => {
      let mut log = state.log.empty_like();
      let mut origin = Vec::with_capacity(entries.len());
      for entry in entries {
        match entry {
          Projected::Log(pos) => {
            if let Some(item) = state.log.get(*pos) {
              log.push(Arc::clone(item));
              origin.push(Some(*pos));
            }
          }
          Projected::Made(item) => {
            log.push(Arc::clone(item));
            origin.push(None);
          }
        }
      }
      built = log;
      (&built, Some(origin))
    }
  };
  let system = log.system_positions();
  let floor = summary.map_or(0, |s| s.covers - system.partition_point(|&pos| pos < s.covers));
  let history = HistoryOfLog { log, system, floor };
  // Each layer item, with where the host keeps it when it does. Anchored (`contextCache`): the anchor band and the
  // summary go before the history, the live band and the changes message after it; else all go before it.
  // Anchored (`contextCache`): the anchor band and the summary go before the history, the epoch's updates within it
  // (each where its change was seen), the live band after it. Else every layer item goes before the history.
  let live_from = bands.map_or(recalled.len(), |bands| bands.live_from);
  let updates = bands.map_or(&[][..], |bands| &bands.updates[..]);
  let mut layer_items = entry_items(&recalled[..live_from]);
  let recalled_before = layer_items.len();
  layer_items.extend(summary.map(|s| (&s.item, None)));
  let updates_from = layer_items.len();
  layer_items.extend(updates.iter().map(|update| (&update.item, None)));
  let live_start = layer_items.len();
  layer_items.extend(entry_items(&recalled[live_from..]));
  let system_costs: Vec<u64> = system.iter().map(|&pos| log.cost_at(pos)).collect();
  // Layer items are costed as the log would cost them (with the harness's tokenizer, when it has one).
  let layer_costs: Vec<u64> = layer_items.iter().map(|(item, _)| log.cost_of(item)).collect();
  // Anchored, the history's cut is held while it fits, so that the request's start moves once per block of turns.
  let (plan, cut) = assemble_view_from(
    &system_costs,
    &layer_costs,
    &history,
    Some(policy),
    bands
      .and_then(|bands| bands.history_cut.map(|at| HeldCut { at, start_breaks: bands.start_breaks }))
      .filter(|_| projected.is_none()),
  );

  let first = plan.history_kept.first().copied().unwrap_or(history.len());
  let dropped = if origin.is_some() || first <= floor {
    0..0
  } else {
    let to = if first < history.len() { history.position(first) } else { log.len() };
    summary.map_or(0, |s| s.covers)..to
  };
  let shape = inspecting.then(|| {
    let history_runs = history_runs(&plan.history_kept, &history, origin.as_deref());
    // The recalled entries' items only, as `recall_order` divides them: the summary and the updates are not a
    // layer's, and are shown apart.
    let mut layer_items = vec![(false, 0); layer_items.len()];
    for &i in &plan.layers_kept {
      layer_items[i] = (true, layer_costs[i]);
    }
    layer_items.drain(recalled_before..live_start);
    WindowShape {
      layer_items,
      history_total: log.len(),
      history_kept: plan.history_kept.len(),
      history_tokens: system_costs.iter().sum::<u64>()
        + history_runs
          .iter()
          .map(|run| match run {
            HistoryRun::Log { start, end, .. } => state.log.range_cost(*start..*end),
            HistoryRun::Made(item) => log.cost_of(item),
          })
          .sum::<u64>(),
      dropped: dropped.len(),
      summarized: summary.is_some(),
      projected: origin.is_some(),
      system_items: system.iter().filter_map(|&pos| log.get(pos).cloned()).collect(),
      summary_item: summary.map(|s| Arc::clone(&s.item)),
      history_runs,
      dropped_items: dropped
        .clone()
        .rev()
        .take(DROPPED_SHOWN)
        .filter_map(|pos| state.log.get(pos).cloned())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect(),
    }
  });
  let mut view = View { entries: Vec::new(), items: Vec::new(), dropped, shape, cut, cache: None };
  let push_log = |pos: usize, view: &mut View| {
    if let Some(item) = log.get(pos) {
      let pos = match origin.as_ref().map(|origin| origin[pos]) {
        None => pos,
        Some(Some(original)) => original,
        Some(None) => {
          view.entries.push(ViewEntry::Layer { item: Arc::clone(item), kept: None });
          if with_items {
            view.items.push(Arc::clone(item));
          }
          return;
        }
      };
      match view.entries.last_mut() {
        Some(ViewEntry::Log { end, .. }) if *end == pos => *end += 1,
        _ => view.entries.push(ViewEntry::Log { start: pos, end: pos + 1 }),
      }
      if with_items {
        view.items.push(Arc::clone(item));
      }
    }
  };
  for &pos in system {
    push_log(pos, &mut view);
  }
  let push_layer = |i: usize, view: &mut View| {
    let (item, kept) = layer_items[i];
    view.entries.push(ViewEntry::Layer { item: Arc::clone(item), kept });
    if with_items {
      view.items.push(Arc::clone(item));
    }
  };
  let kept = |range: std::ops::Range<usize>| plan.layers_kept.iter().copied().filter(move |i| range.contains(i));
  for i in kept(0..updates_from) {
    push_layer(i, &mut view);
  }
  let anchor_end = view.items.len();
  // An update stands before the first kept log item at or after its place; a projected history has no places.
  let mut pending = kept(updates_from..live_start).peekable();
  for &i in &plan.history_kept {
    let pos = history.position(i);
    while let Some(u) = pending.next_if(|&u| origin.is_none() && updates[u - updates_from].at <= pos) {
      push_layer(u, &mut view);
    }
    push_log(pos, &mut view);
  }
  for i in pending {
    push_layer(i, &mut view);
  }
  // Anchored, a provider is told where the cacheable parts end: the anchor band, and the start that repeats.
  if let Some(bands) = bands.filter(|_| with_items) {
    let breakpoints: Vec<usize> =
      [anchor_end, view.items.len()].into_iter().filter(|&end| end > 0).map(|end| end - 1).collect();
    view.cache = Some(CacheMarks { session: bands.key.clone(), breakpoints });
  }
  for i in kept(live_start..layer_items.len()) {
    push_layer(i, &mut view);
  }
  view
}

/// Each of `entries`' items, with where the host keeps it when it does.
fn entry_items(entries: &[RecallEntry]) -> Vec<(&Arc<Item>, Kept)> {
  entries
    .iter()
    .flat_map(|entry| {
      entry.items.iter().enumerate().map(|(index, item)| (item, entry.host_key.map(|key| (key, index))))
    })
    .collect()
}

/// The history kept as runs of the context's log (an item a layer's projection made stands alone): a window keeps
/// one or two runs, however long.
fn history_runs(kept: &[usize], history: &HistoryOfLog<'_>, origin: Option<&[Option<usize>]>) -> Vec<HistoryRun> {
  let mut runs: Vec<HistoryRun> = Vec::new();
  for &i in kept {
    let at = history.position(i);
    let Some(item) = history.log.get(at) else { continue };
    let pos = match origin {
      None => at,
      Some(origin) => match origin[at] {
        Some(pos) => pos,
        None => {
          runs.push(HistoryRun::Made(Arc::clone(item)));
          continue;
        }
      },
    };
    match runs.last_mut() {
      Some(HistoryRun::Log { end, .. }) if *end == pos => *end += 1,
      _ => runs.push(HistoryRun::Log { start: pos, end: pos + 1, first: Arc::clone(item) }),
    }
  }
  runs
}

/// An LLM step whose model, given or resolved from its getter, is none or blank: upstream's error, the same both ways.
fn missing_model(step_id: &str) -> ConfigError {
  ConfigError::new(
    "MISSING_MODEL",
    format!("step.llm({}) resolved model to an empty string.", serde_json::Value::from(step_id)),
    "Ensure `model` (or your `(ctx) => string` getter) returns a non-empty identifier, e.g. 'anthropic/claude-sonnet-4-20250514'.",
  )
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::items::input_message;

  /// The walk the bisection stands for, over the same history.
  struct Walk<'a>(&'a HistoryOfLog<'a>);

  impl HistoryView for Walk<'_> {
    fn len(&self) -> usize {
      self.0.len()
    }
    fn cost(&self, i: usize) -> u64 {
      self.0.log.cost_at(self.0.position(i))
    }
    fn link(&self, i: usize) -> Pairing<u32> {
      self.0.link(i)
    }
  }

  #[test]
  fn bisecting_suffix_costs_finds_where_the_walk_stops() {
    let mut log = ItemLog::new();
    for i in 0..60 {
      let role = if i % 17 == 3 { "system" } else { "user" };
      log.push(Arc::new(input_message(format!("m{i}"), role, "x".repeat(i * 7 % 50))));
    }
    let history = HistoryOfLog { log: &log, system: log.system_positions(), floor: 0 };
    assert!(!history.system.is_empty());
    for start in [0, 5, 30, history.len()] {
      for budget in [0.0, 1.0, 25.0, 100.0, 333.0, 1e9, f64::NAN] {
        assert_eq!(
          history.newest_run_within(start, budget),
          Walk(&history).newest_run_within(start, budget),
          "start {start}, budget {budget}"
        );
      }
    }
  }
}
