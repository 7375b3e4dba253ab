//! Reading a recorded call whole, for the page: its history is read back from the log it came from.

use crate::harness::Harness;

impl Harness {
  /// Recorded call `id` as JSON, with its history read back from the context that made it, or from its session's
  /// current context once that one has ended (a session's turns hand the one log on). `None` once no longer kept.
  pub fn inspected_call(&self, id: u64) -> Option<String> {
    let mut call = self.inspector.call(id)?;
    let ctx = self
      .context(&call.context)
      .or_else(|| self.existing_session(&call.thread_id).and_then(|session| session.context()));
    match ctx {
      Some(ctx) => call.window_items.read_history(Some(&ctx.state().log)),
      None => call.window_items.read_history(None),
    }
    serde_json::to_string(&call).ok()
  }
}
