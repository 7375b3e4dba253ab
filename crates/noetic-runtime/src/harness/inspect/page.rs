//! The inspector's page: one document with its style and script inlined, so that the token never has to travel in a
//! subresource's URL. Built into the binary, so a packed install has nothing to find on disk.

use std::sync::LazyLock;

use bytes::Bytes;

const INDEX: &str = include_str!("page/index.html");
const STYLE: &str = include_str!("page/style.css");
const SCRIPT: &str = include_str!("page/app.js");

/// Made once; each response shares it.
pub(super) static PAGE: LazyLock<Bytes> =
  LazyLock::new(|| Bytes::from(INDEX.replacen("/* style.css */", STYLE, 1).replacen("/* app.js */", SCRIPT, 1)));

/// What the page may do: its own inline script and style, requests to itself, nothing framed or submitted.
pub(super) const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src \
                              'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn the_page_holds_its_style_and_script() {
    let page = std::str::from_utf8(&PAGE).unwrap();
    assert!(!page.contains("/* style.css */") && !page.contains("/* app.js */"));
    assert!(page.contains("EventSource"));
    assert_eq!(
      CSP,
      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; \
       base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
  }
}
