//! The dispatcher's way to the JS runtime object that answers requests, without keeping it alive.
//!
//! The native side holds the dispatcher function for as long as the harness lives, so it must not hold the runtime
//! strongly, or no harness would ever be collected. A JS `WeakRef` would not do either: JS keeps a WeakRef's target
//! alive until the microtask queue next drains, and a program driven only by promises (a scripted model in a loop)
//! may never let it drain, so every harness it made would stay. A Node-API reference with a count of zero is weak
//! without that rule.

use napi::bindgen_prelude::*;
use napi::sys;

/// A zero-count reference to the runtime. Made, read and deleted only on the JS thread: in the harness constructor,
/// in the dispatcher's JS-thread callback, and when that callback is dropped with the dispatcher.
pub struct WeakRuntime {
  env: sys::napi_env,
  reference: sys::napi_ref,
}

// SAFETY: the raw handles are only used on the JS thread that made them (see the type's comment); the dispatcher's
// callback, which owns this, needs `Send` only to be handed to the thread-safe function machinery.
unsafe impl Send for WeakRuntime {}

impl WeakRuntime {
  pub fn new(env: &Env, runtime: &Object) -> Result<Self> {
    let mut reference = std::ptr::null_mut();
    // SAFETY: called on the JS thread with a live env and value, as napi requires.
    let status = unsafe { sys::napi_create_reference(env.raw(), runtime.raw(), 0, &mut reference) };
    if status != sys::Status::napi_ok {
      return Err(Error::new(Status::GenericFailure, "could not reference the JS runtime"));
    }
    Ok(Self { env: env.raw(), reference })
  }

  /// The runtime, or `undefined` once it has been collected.
  pub fn get(&self, env: &Env) -> MaybeRuntime {
    let mut value = std::ptr::null_mut();
    // SAFETY: on the JS thread (the dispatcher's callback); a collected target reads as a null value.
    let status = unsafe { sys::napi_get_reference_value(env.raw(), self.reference, &mut value) };
    MaybeRuntime((status == sys::Status::napi_ok && !value.is_null()).then_some(value))
  }
}

impl Drop for WeakRuntime {
  fn drop(&mut self) {
    // SAFETY: dropped with the dispatcher's callback, on the JS thread, while the env is alive.
    unsafe { sys::napi_delete_reference(self.env, self.reference) };
  }
}

/// The runtime as the dispatcher's first argument.
pub struct MaybeRuntime(Option<sys::napi_value>);

impl ToNapiValue for MaybeRuntime {
  unsafe fn to_napi_value(env: sys::napi_env, value: Self) -> Result<sys::napi_value> {
    match value.0 {
      Some(runtime) => Ok(runtime),
      // SAFETY: as for any ToNapiValue, on the JS thread with a live env.
      None => unsafe { <()>::to_napi_value(env, ()) },
    }
  }
}
