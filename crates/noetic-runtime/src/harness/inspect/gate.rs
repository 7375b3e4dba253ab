//! Who the inspector's server answers: a read-only page on a random token, refusing other origins, other sites and,
//! on loopback, other host names (a page elsewhere that rebound a name of its own to 127.0.0.1: DNS rebinding).
//! The server (`server.rs`) puts every request to [`Gate::refusal`] first.

/// What the server was bound to, and the token every request must carry.
pub struct Gate {
  token: String,
  origin: String,
  hosts: [String; 2],
  loopback: bool,
}

/// The parts of a request the gate looks at.
pub struct Request<'a> {
  pub method: &'a str,
  pub host: &'a str,
  pub origin: Option<&'a str>,
  pub fetch_site: Option<&'a str>,
  pub token: &'a str,
}

/// How many hex digits the token has (24 random bytes).
const TOKEN_DIGITS: usize = 48;

impl Gate {
  /// A gate for a server bound to `address` (as the host reports it: `127.0.0.1`, `::1`, ...) and `port`, with a
  /// fresh random token.
  pub fn new(address: &str, port: u16) -> Self {
    let shown = if address.contains(':') { format!("[{address}]") } else { address.to_owned() };
    let random = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    Self {
      token: random[..TOKEN_DIGITS].to_owned(),
      origin: format!("http://{shown}:{port}"),
      hosts: [format!("{shown}:{port}"), format!("localhost:{port}")],
      loopback: address.starts_with("127.") || address == "::1" || address.starts_with("::ffff:127."),
    }
  }

  pub fn origin(&self) -> &str {
    &self.origin
  }

  /// The page's address, token included.
  pub fn url(&self) -> String {
    format!("{}/?token={}", self.origin, self.token)
  }

  /// The status and text a request is refused with, or `None` when it may be answered.
  pub fn refusal(&self, request: &Request) -> Option<(u16, &'static str)> {
    if request.method != "GET" && request.method != "HEAD" {
      return Some((405, "The inspector is read-only."));
    }
    if self.loopback && !self.hosts.iter().any(|host| host.eq_ignore_ascii_case(request.host)) {
      return Some((403, "Unknown host."));
    }
    if request.origin.is_some_and(|origin| origin != self.origin) {
      return Some((403, "Other origins are refused."));
    }
    if request.fetch_site.is_some_and(|site| site != "same-origin" && site != "none") {
      return Some((403, "Other sites are refused."));
    }
    if !same_in_constant_time(request.token.as_bytes(), self.token.as_bytes()) {
      return Some((401, "This URL needs the token startInspector gave."));
    }
    None
  }
}

/// Whether `given` is `wanted`, taking as long whichever byte differs (the token is not found a byte at a time).
fn same_in_constant_time(given: &[u8], wanted: &[u8]) -> bool {
  given.len() == wanted.len() && given.iter().zip(wanted).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
  use super::*;

  fn request<'a>(gate: &'a Gate, token: &'a str) -> Request<'a> {
    Request { method: "GET", host: &gate.hosts[0], origin: None, fetch_site: None, token }
  }

  #[test]
  fn only_a_read_from_its_own_origin_and_host_with_the_token_is_answered() {
    let gate = Gate::new("127.0.0.1", 4000);
    assert!(gate.url().starts_with("http://127.0.0.1:4000/?token="));
    assert_eq!(gate.token.len(), TOKEN_DIGITS);
    let token = gate.token.clone();
    assert_eq!(gate.refusal(&request(&gate, &token)), None);
    assert_eq!(gate.refusal(&Request { host: "LOCALHOST:4000", ..request(&gate, &token) }), None);
    assert_eq!(gate.refusal(&request(&gate, "x")).map(|r| r.0), Some(401));
    assert_eq!(gate.refusal(&Request { method: "POST", ..request(&gate, &token) }).map(|r| r.0), Some(405));
    assert_eq!(gate.refusal(&Request { host: "rebound.example:80", ..request(&gate, &token) }).map(|r| r.0), Some(403));
    let other = Request { origin: Some("http://evil.example"), ..request(&gate, &token) };
    assert_eq!(gate.refusal(&other).map(|r| r.1), Some("Other origins are refused."));
    let cross = Request { fetch_site: Some("cross-site"), ..request(&gate, &token) };
    assert_eq!(gate.refusal(&cross).map(|r| r.0), Some(403));
  }

  #[test]
  fn off_loopback_any_host_name_is_taken_and_an_ipv6_address_is_bracketed() {
    let gate = Gate::new("0.0.0.0", 5);
    let token = gate.token.clone();
    assert_eq!(gate.refusal(&Request { host: "anything:5", ..request(&gate, &token) }), None);
    assert_eq!(Gate::new("::1", 7).origin(), "http://[::1]:7");
  }
}
