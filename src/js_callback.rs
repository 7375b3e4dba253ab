//! A function from a built-in layer's JS config (`schema`, `observer`), called through the dispatcher: the runtime's
//! `HostCallback`, for the layer descriptions (`describe`) to hand built-in layers.

use async_trait::async_trait;
use noetic_runtime::host::{ExecInfo, HostRef};
use noetic_runtime::memory::native::HostCallback;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::dispatcher::Dispatch;
use crate::protocol::open;

/// A function from a built-in layer's JS config (`schema`, `observer`), called through the dispatcher.
pub struct JsCallback {
  pub dispatch: Dispatch,
  pub layer: HostRef,
  pub name: &'static str,
}

#[async_trait]
impl HostCallback for JsCallback {
  async fn call(&self, args: Value) -> Result<Value, String> {
    self.send(json!({ "op": "layerCallback", "layer": self.layer, "name": self.name, "args": args })).await
  }

  /// The host builds the hook's `ctx` from `info` and hands it to the function after its arguments.
  async fn call_in(&self, args: Value, exec: &ExecInfo) -> Result<Value, String> {
    self
      .send(json!({ "op": "layerCallback", "layer": self.layer, "name": self.name, "args": args, "info": exec }))
      .await
  }
}

impl JsCallback {
  async fn send(&self, message: Value) -> Result<Value, String> {
    let text = self.dispatch.call_bounded(message.to_string()).await?;
    open::<JsValue>(&text).map(|reply| reply.value).map_err(|error| error.to_string())
  }
}

#[derive(Deserialize)]
struct JsValue {
  value: Value,
}
