//! The in-memory store's `get` as a plain JS function, made with Node-API directly.
//!
//! Why: every layer's `init` reads its state this way, so a loaded harness makes one such read per layer per turn.
//! A `#[napi]` method call pays napi-rs's checks of its receiver (the class's identity, a borrow registered in a
//! locked map and released), and returning the text meant copying it out of the store first; together more than
//! the lookup itself (DECISIONS S26). This function knows its store from the data it was made with, reads the key
//! into a buffer on the stack, and makes the JS string from the stored text in place.

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::null_mut;
use std::sync::Arc;

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue, TypeName};
use napi::{ValueType, sys};
use noetic_runtime::storage::InMemoryStorage;

use crate::js_string::js_string;

/// A store's reader, `(key: string) => string | null`, made when it goes to JS.
pub struct StoreReader(pub Arc<InMemoryStorage>);

impl TypeName for StoreReader {
  fn type_name() -> &'static str {
    "Function"
  }

  fn value_type() -> ValueType {
    ValueType::Function
  }
}

impl ToNapiValue for StoreReader {
  unsafe fn to_napi_value(env: sys::napi_env, value: Self) -> napi::Result<sys::napi_value> {
    // The function holds its store until JS collects it.
    let data = Box::into_raw(Box::new(value.0)).cast::<c_void>();
    let name = "getNow";
    let mut function = null_mut();
    let made = unsafe {
      sys::napi_create_function(env, name.as_ptr().cast(), name.len() as isize, Some(read), data, &mut function)
    };
    if made != sys::Status::napi_ok {
      drop(unsafe { Box::from_raw(data.cast::<Arc<InMemoryStorage>>()) });
      return Err(napi::Error::from_reason("could not make the store's reader"));
    }
    // Should this fail, the store outlives its function: a leak of one store, not worth failing the call for.
    let _ = unsafe { sys::napi_add_finalizer(env, function, data, Some(release), null_mut(), null_mut()) };
    Ok(function)
  }
}

unsafe extern "C" fn release(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
  drop(unsafe { Box::from_raw(data.cast::<Arc<InMemoryStorage>>()) });
}

/// Keys up to this many UTF-8 bytes are read without allocating; longer ones are read again, whole.
const KEY_ON_STACK: usize = 256;

unsafe extern "C" fn read(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
  let answer = catch_unwind(AssertUnwindSafe(|| unsafe { answer(env, info) }));
  match answer {
    Ok(Ok(value)) => value,
    Ok(Err(message)) => unsafe { throw(env, &message) },
    Err(_) => unsafe { throw(env, "internal error: the store's read failed") },
  }
}

unsafe fn answer(env: sys::napi_env, info: sys::napi_callback_info) -> Result<sys::napi_value, String> {
  let mut argc = 1;
  let mut key = null_mut();
  let mut data = null_mut();
  let status = unsafe { sys::napi_get_cb_info(env, info, &mut argc, &mut key, null_mut(), &mut data) };
  if status != sys::Status::napi_ok || argc < 1 {
    return Err("storage.get: expected a key".into());
  }
  // SAFETY: the function was made with a boxed store as its data, released only when the function is collected.
  let store = unsafe { &*data.cast::<Arc<InMemoryStorage>>() };
  let mut buffer = [0u8; KEY_ON_STACK];
  let mut len = 0;
  let status = unsafe { sys::napi_get_value_string_utf8(env, key, buffer.as_mut_ptr().cast(), KEY_ON_STACK, &mut len) };
  if status != sys::Status::napi_ok {
    return Err("storage.get: the key must be a string".into());
  }
  // napi writes whole characters only, up to one byte short of the buffer (its terminator): a key that came within
  // a character (4 bytes) of that may have been cut short, and is read whole.
  let long;
  let key = if len + 4 < KEY_ON_STACK {
    &buffer[..len]
  } else {
    long =
      unsafe { String::from_napi_value(env, key) }.map_err(|_| "storage.get: the key must be a string".to_string())?;
    long.as_bytes()
  };
  // napi writes UTF-8 (a lone surrogate as U+FFFD), cut at a character boundary.
  let key = std::str::from_utf8(key).map_err(|_| "storage.get: the key is not valid text".to_string())?;
  store.read_json_now(key, |text| match text {
    Some(text) => unsafe { js_string(env, text) }.map_err(|e| e.reason),
    None => {
      let mut null = null_mut();
      unsafe { sys::napi_get_null(env, &mut null) };
      Ok(null)
    }
  })
}

unsafe fn throw(env: sys::napi_env, message: &str) -> sys::napi_value {
  let message = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
  unsafe { sys::napi_throw_error(env, null_mut(), message.as_ptr()) };
  null_mut()
}
