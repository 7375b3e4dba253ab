//! The built-in scripted model: deterministic replies for demos and tests, tool calls included. Each model round
//! takes the next scripted turn; when the script runs out it echoes the last user message.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::items::{Item, assistant_message, function_call};
use crate::provider::Round;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScriptedToolCall {
  pub name: String,
  /// JSON text of the arguments.
  pub arguments: String,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScriptedTurn {
  pub text: Option<String>,
  pub tool_calls: Vec<ScriptedToolCall>,
  pub usage: Option<(f64, f64)>,
}

#[derive(Debug, Default)]
pub struct ScriptedModel {
  turns: Mutex<VecDeque<ScriptedTurn>>,
  counter: Mutex<u64>,
}

impl ScriptedModel {
  pub fn new(turns: Vec<ScriptedTurn>) -> Self {
    Self { turns: Mutex::new(turns.into()), counter: Mutex::new(0) }
  }

  fn next_id(&self) -> u64 {
    let mut counter = self.counter.lock().unwrap_or_else(PoisonError::into_inner);
    *counter += 1;
    *counter
  }

  /// Answers one round given the conversation it would see.
  pub fn respond(&self, view: &[Arc<Item>]) -> Round {
    let turn = self.turns.lock().unwrap_or_else(PoisonError::into_inner).pop_front();
    let turn = turn.unwrap_or_else(|| ScriptedTurn { text: Some(echo(view)), ..ScriptedTurn::default() });
    let mut items = Vec::new();
    for call in &turn.tool_calls {
      let n = self.next_id();
      items.push(Arc::new(function_call(format!("fc_{n}"), format!("call_{n}"), &call.name, &call.arguments)));
    }
    if let Some(text) = &turn.text {
      items.push(Arc::new(assistant_message(format!("msg_{}", self.next_id()), text)));
    }
    // Deterministic usage: what the model read and what it wrote, by the same estimate as everything else.
    let (input_tokens, output_tokens) = turn.usage.unwrap_or_else(|| {
      let read: u64 = view.iter().map(|item| item.cost()).sum();
      let wrote: u64 = items.iter().map(|item| item.cost()).sum();
      (read as f64, wrote as f64)
    });
    Round { items, input_tokens, output_tokens, ..Round::default() }
  }
}

fn echo(view: &[Arc<Item>]) -> String {
  let last_user = view.iter().rev().find(|item| item.role() == Some("user"));
  let text = last_user
    .and_then(|item| item.json().get("content"))
    .and_then(Value::as_array)
    .map(|parts| parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect::<String>())
    .unwrap_or_default();
  if text.is_empty() { "Hello from the scripted model.".to_owned() } else { format!("You said: {text}") }
}
