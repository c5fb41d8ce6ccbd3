//! Mutual-TLS client authentication (RFC 8705 section 2) and certificate-bound tokens
//! (section 3). The certificate reaches a request from its connection's handshake
//! (`crate::tls::client_certs` accepts any certificate there and proves key possession);
//! here it is judged against the client's registration:
//!
//! - `self_signed_tls_client_auth`: the presented leaf must be one of the registered
//!   certificates (compared by SHA-256 of the DER; validity dates are not checked, as
//!   section 2.2 allows);
//! - `tls_client_auth`: the chain must validate against `[tls] client_ca` (dates, signature,
//!   clientAuth usage) and the leaf's subject DN must equal the registered one, compared
//!   attribute by attribute after RFC 4514 rendering (case and spacing of values ignored,
//!   string encodings alike).
//!
//! A token issued on either carries `cnf: {"x5t#S256": ...}`, the certificate's SHA-256
//! thumbprint, so a resource server can insist it is used over the same certificate.

use std::str::FromStr;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rustls::pki_types::CertificateDer;
use x509_cert::Certificate;
use x509_cert::der::Decode;
use x509_cert::name::Name;

// A name parsed from a certificate is compared with one an operator typed: both go
// through x509-cert's RFC 4514 attribute rendering, and the typed one is read in RFC 4514
// order (most specific first), which is the reverse of the certificate's DER order.

/// The certificate chain a connection's client presented (leaf first), set on each of
/// its requests by the accept loop.
#[derive(Debug, Clone)]
pub struct ClientCerts(pub std::sync::Arc<Vec<CertificateDer<'static>>>);

/// `x5t#S256`: base64url SHA-256 of the DER (RFC 8705 3.1).
pub fn thumbprint(der: &[u8]) -> String {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, der);
    URL_SAFE_NO_PAD.encode(d.as_ref())
}

/// A client's registered certificates could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("certificate: {0}")]
pub struct CertError(pub String);

/// Thumbprints of the PEM certificates registered for a `self_signed_tls_client_auth`
/// client.
pub fn registered_thumbprints(pem: &str) -> Result<Vec<String>, CertError> {
    let mut out = Vec::new();
    for c in rustls_pemfile::certs(&mut pem.as_bytes()) {
        let c = c.map_err(|e| CertError(format!("malformed PEM: {e}")))?;
        Certificate::from_der(c.as_ref())
            .map_err(|e| CertError(format!("not an X.509 certificate: {e}")))?;
        out.push(thumbprint(c.as_ref()));
    }
    if out.is_empty() {
        return Err(CertError("no CERTIFICATE block".into()));
    }
    if out.len() > super::keys::MAX_KEYS {
        return Err(CertError(format!(
            "{} certificates; at most {} per client",
            out.len(),
            super::keys::MAX_KEYS
        )));
    }
    Ok(out)
}

/// One attribute as comparable text: its RFC 4514 rendering with the value folded to
/// lower case and runs of spaces collapsed (string encodings render alike).
fn canonical_ava(atv: &x509_cert::attr::AttributeTypeAndValue) -> String {
    let s = atv.to_string();
    let (k, v) = s.split_once('=').unwrap_or((s.as_str(), ""));
    let v: Vec<&str> = v.split_whitespace().collect();
    format!("{}={}", k.to_ascii_uppercase(), v.join(" ").to_lowercase())
}

/// A certificate name as comparable RDNs, most specific first (RFC 4514 order, the
/// reverse of the DER sequence); a multi-valued RDN's attributes sorted.
fn canonical(name: &Name) -> Vec<String> {
    name.0
        .iter()
        .rev()
        .map(|rdn| {
            let mut avas: Vec<String> = rdn.0.iter().map(canonical_ava).collect();
            avas.sort();
            avas.join("+")
        })
        .collect()
}

/// A name in RFC 4514 form, most specific first ("CN=client,O=Example"), as OpenSSL's
/// `-nameopt RFC2253` and Python's `rfc4514_string()` print it.
pub fn rfc4514(name: &Name) -> String {
    name.0
        .iter()
        .rev()
        .map(|rdn| {
            rdn.0
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Split at `sep` where it is not escaped (RFC 4514 2.4).
fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for ch in s.chars() {
        if ch == sep && !escaped {
            parts.push(String::new());
            continue;
        }
        escaped = ch == '\\' && !escaped;
        if let Some(last) = parts.last_mut() {
            last.push(ch);
        }
    }
    parts
}

/// Parse and check a subject DN as registered (`CN=client-1,O=Example`, RFC 4514 order):
/// attribute types are matched without regard to case (RFC 4512 2.5) and spaces around
/// `,`, `+` and `=` are dropped. Returns the comparable RDNs.
pub fn parse_dn(dn: &str) -> Result<Vec<String>, CertError> {
    let bad = |why: &str| CertError(format!("subject DN {dn:?} is not an RFC 4514 DN: {why}"));
    let mut rdns = Vec::new();
    for rdn in split_unescaped(dn.trim(), ',') {
        let mut avas = Vec::new();
        for ava in split_unescaped(&rdn, '+') {
            let (k, v) = ava
                .split_once('=')
                .ok_or_else(|| bad("an attribute has no '='"))?;
            let (k, v) = (k.trim(), v.trim());
            if k.is_empty() || v.is_empty() {
                return Err(bad("empty attribute type or value"));
            }
            let atv = [k.to_owned(), k.to_ascii_uppercase(), k.to_ascii_lowercase()]
                .iter()
                .find_map(|c| {
                    x509_cert::attr::AttributeTypeAndValue::from_str(&format!("{c}={v}")).ok()
                })
                .ok_or_else(|| bad(&format!("unknown attribute type {k:?}")))?;
            avas.push(canonical_ava(&atv));
        }
        avas.sort();
        rdns.push(avas.join("+"));
    }
    Ok(rdns)
}

/// Whether the leaf certificate's subject is `dn`.
pub fn subject_is(leaf: &[u8], dn: &str) -> bool {
    let (Ok(cert), Ok(want)) = (Certificate::from_der(leaf), parse_dn(dn)) else {
        return false;
    };
    canonical(&cert.tbs_certificate.subject) == want
}

/// The leaf certificate's subject in RFC 4514 form (for `client add` messages and logs).
pub fn subject_of(leaf: &[u8]) -> Option<String> {
    Certificate::from_der(leaf)
        .ok()
        .map(|c| rfc4514(&c.tbs_certificate.subject))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn dn_comparison_ignores_case_spacing_and_string_types() {
        let a = parse_dn("CN=Client  One,O=Example Corp").unwrap();
        let b = parse_dn("cn=client one, o=EXAMPLE CORP").unwrap();
        assert_eq!(a, b);
        let c = parse_dn("CN=Client One,O=Other").unwrap();
        assert_ne!(a, c);
        // Order matters: a DN is a sequence.
        let d = parse_dn("O=Example Corp,CN=Client One").unwrap();
        assert_ne!(a, d);
        assert_eq!(parse_dn("CN=a\\,b,O=x").unwrap().len(), 2, "escaped comma");
        assert!(parse_dn("").is_err());
        assert!(parse_dn("not a dn").is_err());
        assert!(parse_dn("XX=1").is_err());
    }

    #[test]
    fn thumbprint_is_base64url_sha256() {
        // SHA-256("abc") = ba7816bf...
        assert_eq!(
            thumbprint(b"abc"),
            "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"
        );
    }
}
