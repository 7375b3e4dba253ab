//! A session as its turns' executions see it ([`ExecIo`]): their steps and model calls report to its event stream,
//! and its `between-rounds` messages join a turn before its next tool round.

use std::sync::{Arc, Weak};

use serde_json::Value;

use super::{Session, Streams, message_text};
use crate::harness::exec_io::{ExecIo, Injected};

pub struct SessionIo {
  streams: Arc<Streams>,
  /// Weak: the session holds its contexts.
  session: Weak<Session>,
}

impl SessionIo {
  pub fn new(session: &Arc<Session>) -> Self {
    Self { streams: Arc::clone(&session.streams), session: Arc::downgrade(session) }
  }
}

impl ExecIo for SessionIo {
  fn step(&self, agent: &str, event: &str, step_id: &str, kind: &str) {
    self.streams.step(agent, event, step_id, kind);
  }

  fn framework(&self, agent: &str, kind: &str, data: &Value) {
    self.streams.framework(agent, kind, data);
  }

  fn sdk(&self, kind: &str, data: Value) {
    self.streams.sdk(kind, data);
  }

  fn take_injected(&self) -> Vec<Injected> {
    let Some(session) = self.session.upgrade() else { return Vec::new() };
    let messages = session.take_between_rounds();
    messages.iter().map(|message| Injected { id: message.id.clone(), text: message_text(message) }).collect()
  }
}
