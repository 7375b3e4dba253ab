//! A JS string read as UTF-16 and transcoded here, for the large texts JS sends (hook and model replies).
//!
//! Why: napi's UTF-8 read makes V8 walk the string twice, character by character (its UTF-8 length, then the
//! write), which for a two-byte string (any text with a character past Latin-1) cost more than the work the text
//! was sent for. The UTF-16 read is a length lookup and a copy; the transcoding below runs a word at a time over
//! ASCII. Lone surrogates become U+FFFD, as napi's UTF-8 read makes them (B1).

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue, TypeName, ValidateNapiValue};
use napi::{ValueType, sys};

pub struct JsText(pub String);

impl TypeName for JsText {
  fn type_name() -> &'static str {
    "String"
  }

  fn value_type() -> ValueType {
    ValueType::String
  }
}

impl ValidateNapiValue for JsText {}

impl FromNapiValue for JsText {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    let checked = |status| match status {
      sys::Status::napi_ok => Ok(()),
      _ => Err(napi::Error::new(napi::Status::StringExpected, "expected a string")),
    };
    let mut len = 0;
    checked(unsafe { sys::napi_get_value_string_utf16(env, value, std::ptr::null_mut(), 0, &mut len) })?;
    // One more unit for the terminator napi writes; not zeroed first, since only what napi wrote is read.
    let mut units: Vec<u16> = Vec::with_capacity(len + 1);
    let mut written = 0;
    checked(unsafe { sys::napi_get_value_string_utf16(env, value, units.as_mut_ptr(), len + 1, &mut written) })?;
    // SAFETY: napi wrote `written` units (at most `len`) from the start of the buffer.
    unsafe { units.set_len(written.min(len)) };
    // Lone surrogates become U+FFFD, as napi's UTF-8 read makes them (B1).
    Ok(Self(noetic_runtime::js_text::utf16_to_utf8(&units)))
  }
}

impl std::ops::Deref for JsText {
  type Target = str;

  fn deref(&self) -> &str {
    &self.0
  }
}

/// A text going to JS, made as a one-byte string when it is ASCII (a copy) and as UTF-16 otherwise.
///
/// Why: napi's UTF-8 path has V8 decode the text character by character, which for the large texts sent each turn
/// (request batches, stored states) cost more than the work they carry. Checking for ASCII and transcoding run a word
/// at a time here.
pub struct JsOutText(pub String);

impl ToNapiValue for JsOutText {
  unsafe fn to_napi_value(env: sys::napi_env, value: Self) -> napi::Result<sys::napi_value> {
    unsafe { js_string(env, &value.0) }
  }
}

/// `text` as a JS string, made as [`JsOutText`] says.
///
/// # Safety
/// `env` is the environment of the current callback, on the JS thread.
pub unsafe fn js_string(env: sys::napi_env, text: &str) -> napi::Result<sys::napi_value> {
  let mut out = std::ptr::null_mut();
  let status = if text.is_ascii() {
    unsafe { sys::napi_create_string_latin1(env, text.as_ptr().cast(), text.len() as isize, &mut out) }
  } else {
    // The converter wants room for one unit more than the text has bytes.
    let mut units = vec![0u16; text.len() + 1];
    let written = encoding_rs::mem::convert_utf8_to_utf16(text.as_bytes(), &mut units);
    unsafe { sys::napi_create_string_utf16(env, units.as_ptr(), written as isize, &mut out) }
  };
  match status {
    sys::Status::napi_ok => Ok(out),
    _ => Err(napi::Error::new(napi::Status::GenericFailure, "could not make a JS string")),
  }
}

impl TypeName for JsOutText {
  fn type_name() -> &'static str {
    "String"
  }

  fn value_type() -> ValueType {
    ValueType::String
  }
}
