//! What the inspector's server answers one request with: the gate's refusal, or the page, the recorder's snapshot, one
//! call whole, the layers' stored states for a thread, or the live feed. Every response is `no-store`, unframable and
//! sends no referrer (the token is in the page's URL).

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, LazyLock, Weak};

use bytes::Bytes;
use futures_util::FutureExt;
use http_body_util::{Either, Full};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::http::request::Parts;
use hyper::{Request, Response, StatusCode};
use url::Url;

use super::feed::{FeedBody, Feeds};
use super::gate::{self, Gate};
use super::given::with_given_thread_ids;
use super::page::{CSP, PAGE};
use crate::harness::Harness;
use crate::items::{to_js_json, write_js_number, write_js_string};

pub(super) type Body = Either<Full<Bytes>, FeedBody>;

/// What answers a server's requests.
pub(super) struct Site {
  pub harness: Weak<Harness>,
  pub gate: Gate,
  /// Each layer's name by id, as JSON: JS has them (the runtime's layers do not carry one).
  pub names: HashMap<String, String>,
  pub feeds: Arc<Feeds>,
}

const HEADERS: [(&str, &str); 5] = [
  ("cache-control", "no-store"),
  ("x-content-type-options", "nosniff"),
  ("x-frame-options", "DENY"),
  // The token is in the page's URL: it must not leave in a Referer.
  ("referrer-policy", "no-referrer"),
  ("cross-origin-resource-policy", "same-origin"),
];

/// What a request's target is read against, as `new URL(target, base)` would.
static BASE: LazyLock<Url> = LazyLock::new(|| Url::parse("http://inspector/").expect("a valid URL"));

fn respond_with(status: StatusCode, content_type: &'static str, body: Body) -> Response<Body> {
  let mut response = Response::new(body);
  *response.status_mut() = status;
  let headers = response.headers_mut();
  for (name, value) in HEADERS {
    headers.insert(name, HeaderValue::from_static(value));
  }
  headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
  response
}

fn text(status: u16, text: impl Into<Bytes>) -> Response<Body> {
  let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
  respond_with(status, "text/plain; charset=utf-8", Either::Left(Full::new(text.into())))
}

fn json(text: String) -> Response<Body> {
  respond_with(StatusCode::OK, "application/json; charset=utf-8", Either::Left(Full::new(Bytes::from(text))))
}

/// The answer to `request`; a panic on the way is a 500 that says so, never a dropped connection.
pub(super) async fn respond<B>(site: &Site, request: Request<B>) -> Response<Body> {
  // Only the head is read (the inspector takes no bodies).
  let (request, _) = request.into_parts();
  match AssertUnwindSafe(answer(site, &request)).catch_unwind().await {
    Ok(response) => response,
    Err(panic) => {
      let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned());
      text(500, format!("The inspector failed: {message}"))
    }
  }
}

async fn answer(site: &Site, request: &Parts) -> Response<Body> {
  let Ok(url) = BASE.join(&request.uri.to_string()) else { return text(400, "Bad request.") };
  let headers = &request.headers;
  let host = first_header(headers, &header::HOST).unwrap_or_default();
  let origin = joined_header(headers, &header::ORIGIN);
  let fetch_site = joined_header(headers, &HeaderName::from_static("sec-fetch-site"));
  let token = query(&url, "token").unwrap_or_default();
  let asked = gate::Request {
    method: request.method.as_str(),
    host: &host,
    origin: origin.as_deref(),
    fetch_site: fetch_site.as_deref(),
    token: &token,
  };
  if let Some((status, refusal)) = site.gate.refusal(&asked) {
    return text(status, refusal);
  }
  let Some(harness) = site.harness.upgrade() else { return text(500, "The inspector failed: its harness is gone.") };
  match url.path() {
    "/" => {
      let mut page = respond_with(StatusCode::OK, "text/html; charset=utf-8", Either::Left(Full::new(PAGE.clone())));
      page.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
      page
    }
    "/api/snapshot" => json(snapshot(site, &harness)),
    "/api/call" => {
      let id = js_number(query(&url, "id").as_deref());
      match (id.fract() == 0.0 && id >= 0.0).then(|| harness.inspected_call(id as u64)).flatten() {
        Some(call) => json(with_given_thread_ids(call)),
        None => text(404, "That call is no longer kept."),
      }
    }
    "/api/state" => {
      let thread = query(&url, "thread").unwrap_or_default();
      match layer_states(&harness, &thread, query(&url, "resource").as_deref()).await {
        Ok(states) => json(states),
        Err(message) => text(500, format!("Reading the layers' states failed: {message}")),
      }
    }
    "/api/events" => {
      let mut feed = respond_with(StatusCode::OK, "text/event-stream; charset=utf-8", Either::Right(site.feeds.open()));
      feed.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
      feed
    }
    _ => text(404, "Not found."),
  }
}

/// `{harness, layers, recorder}`: the harness's name, its layers (with the names JS gave) and what is recorded.
fn snapshot(site: &Site, harness: &Harness) -> String {
  let mut out = String::from("{\"harness\":");
  write_js_string(&mut out, &harness.name);
  out.push_str(",\"layers\":[");
  for (i, layer) in harness.inspected_layers("", None).iter().enumerate() {
    out.push_str(if i == 0 { "{\"id\":" } else { ",{\"id\":" });
    write_js_string(&mut out, layer.id);
    if let Some(name) = site.names.get(layer.id) {
      out.push_str(",\"name\":");
      out.push_str(name);
    }
    out.push_str(",\"slot\":");
    let _ = write_js_number(&mut out, layer.slot);
    out.push_str(",\"scope\":");
    write_js_string(&mut out, layer.scope);
    out.push_str(",\"recallMode\":");
    write_js_string(&mut out, layer.recall_mode);
    out.push('}');
  }
  out.push_str("],\"recorder\":");
  out.push_str(&with_given_thread_ids(harness.inspector.snapshot()));
  out.push('}');
  out
}

/// Each layer's state as the harness's storage holds it for the thread (what the next turn's init reads), through
/// the storage the harness runs with: a native store, or the user's adapter through the host.
async fn layer_states(harness: &Harness, thread: &str, resource: Option<&str>) -> Result<String, String> {
  let layers: Vec<_> = harness
    .inspected_layers(thread, resource)
    .into_iter()
    .map(|layer| (layer.id.to_owned(), layer.scope, layer.scope_key.map(str::to_owned), layer.state_key))
    .collect();
  let mut out = String::from("[");
  for (i, (id, scope, scope_key, state_key)) in layers.into_iter().enumerate() {
    let state = match state_key {
      Some(key) => harness.env.storage.get(&key).await.map_err(|error| error.message)?,
      None => None,
    };
    out.push_str(if i == 0 { "{\"id\":" } else { ",{\"id\":" });
    write_js_string(&mut out, &id);
    out.push_str(",\"scope\":");
    write_js_string(&mut out, scope);
    out.push_str(",\"scopeKey\":");
    match &scope_key {
      Some(key) => write_js_string(&mut out, key),
      None => out.push_str("null"),
    }
    out.push_str(",\"state\":");
    match &state {
      Some(state) => out.push_str(&to_js_json(state)),
      None => out.push_str("null"),
    }
    out.push('}');
  }
  out.push(']');
  Ok(out)
}

/// The first value of `name` in the URL's query, decoded as `URLSearchParams.get` decodes it.
fn query(url: &Url, name: &str) -> Option<String> {
  url.query_pairs().find(|(key, _)| key == name).map(|(_, value)| value.into_owned())
}

/// A header's bytes as Node reads them (one char a byte).
fn latin1(value: &HeaderValue) -> String {
  value.as_bytes().iter().map(|&b| char::from(b)).collect()
}

/// The first of a header Node keeps only once (`Host`).
fn first_header(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
  headers.get(name).map(latin1)
}

/// A header Node joins when it comes more than once (`Origin`, `Sec-Fetch-Site`): so two origins are refused.
fn joined_header(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
  let values: Vec<String> = headers.get_all(name).iter().map(latin1).collect();
  (!values.is_empty()).then(|| values.join(", "))
}

/// `Number(text)` as JS reads it (`Number(null)` is 0): the page asks for a call by `?id=`.
fn js_number(text: Option<&str>) -> f64 {
  let Some(text) = text else { return 0.0 };
  let text = text.trim_matches(is_js_space);
  let radix = |digits: &str, radix: u32| {
    if digits.is_empty() {
      return f64::NAN;
    }
    digits
      .chars()
      .try_fold(0.0, |n, c| c.to_digit(radix).map(|d| n * f64::from(radix) + f64::from(d)))
      .unwrap_or(f64::NAN)
  };
  match text.get(..2) {
    _ if text.is_empty() => 0.0,
    Some("0x" | "0X") => radix(&text[2..], 16),
    Some("0o" | "0O") => radix(&text[2..], 8),
    Some("0b" | "0B") => radix(&text[2..], 2),
    _ => match text {
      "Infinity" | "+Infinity" => f64::INFINITY,
      "-Infinity" => f64::NEG_INFINITY,
      // Rust also reads `inf` and `nan`, which JS does not.
      _ if text.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')) => {
        text.parse().unwrap_or(f64::NAN)
      }
      _ => f64::NAN,
    },
  }
}

/// JS's white space and line terminators, which `Number` trims.
fn is_js_space(c: char) -> bool {
  matches!(
    c,
    '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
      ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
  )
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_call_id_is_read_as_number_reads_it() {
    for (given, read) in [
      (None, 0.0),
      (Some(""), 0.0),
      (Some(" 12 "), 12.0),
      (Some("0x10"), 16.0),
      (Some("1e1"), 10.0),
      (Some("5."), 5.0),
      (Some("\u{feff}7\n"), 7.0),
      (Some("-Infinity"), f64::NEG_INFINITY),
    ] {
      assert_eq!(js_number(given), read, "{given:?}");
    }
    for nan in ["inf", "nan", "1_0", "0x", "1e", ".", "12px", "0x1g"] {
      assert!(js_number(Some(nan)).is_nan(), "{nan}");
    }
  }

  #[test]
  fn a_target_is_read_as_new_url_reads_it() {
    assert!(BASE.join("//").is_err(), "an empty host");
    let url = BASE.join("/api/state?thread=a+b%20%EF%BF%BD&token=t&token=u&tok%65n=v").unwrap();
    assert_eq!(url.path(), "/api/state");
    assert_eq!(query(&url, "thread").as_deref(), Some("a b \u{fffd}"));
    assert_eq!(query(&url, "token").as_deref(), Some("t"));
    assert_eq!(BASE.join("http://elsewhere/api/snapshot").unwrap().path(), "/api/snapshot");
    assert_eq!(BASE.join("/api/%73napshot").unwrap().path(), "/api/%73napshot");
  }
}
