//! TLS for the PostgreSQL store, with libpq's `sslmode`s and `sslrootcert`. The driver itself knows only
//! `disable`, `prefer` and `require` and refuses other parameters, so the TLS ones are taken out of the connection
//! string here and the rest goes to the driver.
//!
//! As libpq: `prefer` (the default) and `require` encrypt without checking the certificate (`prefer` falls back to
//! plain TCP when the server has no TLS); `verify-ca` checks the chain, `verify-full` the chain and the host name;
//! `require` with an `sslrootcert` checks the chain as `verify-ca` does. Roots are the file's certificates, else
//! Mozilla's (`webpki-roots`).

use std::sync::Arc;

use percent_encoding::percent_decode_str;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::ConfigError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
  Disable,
  Prefer,
  Require,
  VerifyCa,
  VerifyFull,
}

impl TlsMode {
  /// What the driver is told: whether TLS is tried, and whether it must succeed.
  pub fn driver_mode(self) -> SslMode {
    match self {
      Self::Disable => SslMode::Disable,
      Self::Prefer => SslMode::Prefer,
      Self::Require | Self::VerifyCa | Self::VerifyFull => SslMode::Require,
    }
  }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
  pub mode: TlsMode,
  /// A PEM file of the certificates to trust (`sslrootcert`).
  pub root_cert: Option<String>,
}

const HINT: &str = "Use sslmode=disable, prefer, require, verify-ca or verify-full, and sslrootcert=<path of a PEM \
                    file> for a server whose certificate is not signed by a public authority.";

fn bad(message: String) -> ConfigError {
  ConfigError::new("STORAGE_OPEN_FAILED", message, HINT)
}

fn mode_of(value: &str) -> Result<TlsMode, ConfigError> {
  Ok(match value {
    "disable" => TlsMode::Disable,
    "prefer" => TlsMode::Prefer,
    "require" => TlsMode::Require,
    "verify-ca" => TlsMode::VerifyCa,
    "verify-full" => TlsMode::VerifyFull,
    other => return Err(bad(format!("createPostgresStorage: sslmode={other} is not a TLS mode."))),
  })
}

/// Takes `sslmode` and `sslrootcert` out of a connection string (a `postgres://` URL's query, or a libpq
/// `key=value` string), returning the rest for the driver and the TLS settings.
pub fn split(url: &str) -> Result<(String, TlsSettings), ConfigError> {
  let mut settings = TlsSettings { mode: TlsMode::Prefer, root_cert: None };
  let mut take = |key: &str, value: String| -> Result<bool, ConfigError> {
    match key {
      "sslmode" => settings.mode = mode_of(&value)?,
      "sslrootcert" => settings.root_cert = Some(value),
      _ => return Ok(false),
    }
    Ok(true)
  };
  let rest = if url.contains("://") {
    let Some((base, query)) = url.split_once('?') else { return Ok((url.to_owned(), settings)) };
    let mut kept = Vec::new();
    for pair in query.split('&') {
      let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
      let value = percent_decode_str(value).decode_utf8_lossy().into_owned();
      if !take(key, value)? {
        kept.push(pair);
      }
    }
    if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) }
  } else {
    // Values of these two keys with spaces (quoted) are not supported; the driver reads everything else.
    let mut kept = Vec::new();
    for word in url.split_whitespace() {
      let (key, value) = word.split_once('=').unwrap_or((word, ""));
      if !take(key, value.trim_matches('\'').to_owned())? {
        kept.push(word);
      }
    }
    kept.join(" ")
  };
  if settings.mode == TlsMode::Disable && settings.root_cert.is_some() {
    return Err(bad("createPostgresStorage: sslrootcert was given with sslmode=disable.".to_owned()));
  }
  Ok((rest, settings))
}

/// The driver's TLS connector for these settings; `None` for `disable`. Reads the root certificate file.
pub fn connector(settings: &TlsSettings) -> Result<Option<MakeRustlsConnect>, ConfigError> {
  if settings.mode == TlsMode::Disable {
    return Ok(None);
  }
  let provider = Arc::new(rustls::crypto::ring::default_provider());
  let roots = Arc::new(roots(settings.root_cert.as_deref())?);
  let chain = WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
    .build()
    .map_err(|error| bad(format!("createPostgresStorage: the trusted certificates cannot be used ({error}).")))?;
  let checks = match (settings.mode, settings.root_cert.is_some()) {
    (TlsMode::VerifyFull, _) => Checks::Full,
    (TlsMode::VerifyCa, _) | (TlsMode::Require, true) => Checks::Chain,
    _ => Checks::None,
  };
  let verifier = Arc::new(Verifier { chain, checks, provider: Arc::clone(&provider) });
  let config = ClientConfig::builder_with_provider(provider)
    .with_safe_default_protocol_versions()
    .map_err(|error| bad(format!("createPostgresStorage: TLS cannot be set up ({error}).")))?
    .dangerous()
    .with_custom_certificate_verifier(verifier)
    .with_no_client_auth();
  Ok(Some(MakeRustlsConnect::new(config)))
}

fn roots(file: Option<&str>) -> Result<RootCertStore, ConfigError> {
  let Some(file) = file else { return Ok(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() }) };
  let unreadable = |why: String| bad(format!("createPostgresStorage: sslrootcert '{file}' {why}."));
  let certs = CertificateDer::pem_file_iter(file)
    .map_err(|error| unreadable(format!("cannot be read ({error})")))?
    .collect::<Result<Vec<_>, _>>()
    .map_err(|error| unreadable(format!("is not a PEM file of certificates ({error})")))?;
  if certs.is_empty() {
    return Err(unreadable("holds no certificate".to_owned()));
  }
  let mut store = RootCertStore::empty();
  for cert in certs {
    store.add(cert).map_err(|error| unreadable(format!("holds a certificate that cannot be trusted ({error})")))?;
  }
  Ok(store)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checks {
  /// Encrypt only (libpq's `prefer` and `require`).
  None,
  /// The chain, not the name (`verify-ca`).
  Chain,
  /// The chain and the name (`verify-full`).
  Full,
}

/// The certificate checks of the chosen mode; the handshake's signatures are always checked.
#[derive(Debug)]
struct Verifier {
  chain: Arc<WebPkiServerVerifier>,
  checks: Checks,
  provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
  fn verify_server_cert(
    &self,
    end_entity: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
    server_name: &ServerName<'_>,
    ocsp_response: &[u8],
    now: UnixTime,
  ) -> Result<ServerCertVerified, rustls::Error> {
    if self.checks == Checks::None {
      return Ok(ServerCertVerified::assertion());
    }
    match self.chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
      Err(rustls::Error::InvalidCertificate(CertificateError::NotValidForName))
      | Err(rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. }))
        if self.checks == Checks::Chain =>
      {
        Ok(ServerCertVerified::assertion())
      }
      result => result,
    }
  }

  fn verify_tls12_signature(
    &self,
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
  ) -> Result<HandshakeSignatureValid, rustls::Error> {
    verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
  }

  fn verify_tls13_signature(
    &self,
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
  ) -> Result<HandshakeSignatureValid, rustls::Error> {
    verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
  }

  fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
    self.provider.signature_verification_algorithms.supported_schemes()
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn settings(mode: TlsMode, root_cert: Option<&str>) -> TlsSettings {
    TlsSettings { mode, root_cert: root_cert.map(str::to_owned) }
  }

  #[test]
  fn the_tls_parameters_leave_the_url_and_the_rest_stays() {
    let (rest, tls) = split("postgres://u:p@db:5432/app?sslmode=verify-full&application_name=x").unwrap();
    assert_eq!(rest, "postgres://u:p@db:5432/app?application_name=x");
    assert_eq!(tls, settings(TlsMode::VerifyFull, None));
    let (rest, tls) = split("postgresql://db/app?sslrootcert=%2Fetc%2Fca.pem&sslmode=verify-ca").unwrap();
    assert_eq!(rest, "postgresql://db/app");
    assert_eq!(tls, settings(TlsMode::VerifyCa, Some("/etc/ca.pem")));
    let (rest, tls) = split("host=db user=u sslmode=require sslrootcert='/ca.pem' dbname=app").unwrap();
    assert_eq!(rest, "host=db user=u dbname=app");
    assert_eq!(tls, settings(TlsMode::Require, Some("/ca.pem")));
    assert_eq!(split("postgres://db/app").unwrap(), ("postgres://db/app".to_owned(), settings(TlsMode::Prefer, None)));
  }

  #[test]
  fn a_mode_libpq_does_not_know_or_a_root_file_without_tls_is_refused() {
    let error = split("postgres://db/app?sslmode=always").unwrap_err();
    assert_eq!(error.code, "STORAGE_OPEN_FAILED");
    assert!(error.message.contains("sslmode=always is not a TLS mode"), "{}", error.message);
    assert!(split("postgres://db/app?sslmode=disable&sslrootcert=/ca.pem").is_err());
  }

  #[test]
  fn a_root_file_that_is_missing_or_holds_no_certificate_is_refused_when_the_store_is_made() {
    let message = |file: &str| connector(&settings(TlsMode::VerifyFull, Some(file))).err().unwrap().message;
    assert!(message("/nonexistent/ca.pem").contains("cannot be read"));
    let empty = std::env::temp_dir().join(format!("noetic-empty-{}.pem", std::process::id()));
    std::fs::write(&empty, "not a certificate\n").unwrap();
    assert!(message(empty.to_str().unwrap()).contains("holds no certificate"));
    std::fs::remove_file(empty).unwrap();
    assert!(connector(&settings(TlsMode::Disable, None)).unwrap().is_none());
    assert!(connector(&settings(TlsMode::VerifyFull, None)).unwrap().is_some(), "public roots by default");
  }
}
