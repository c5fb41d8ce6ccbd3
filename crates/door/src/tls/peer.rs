//! What a TLS peer presented, and its names: the certificates of a connection, their
//! SHA-256 thumbprints, RFC 4514 renderings of X.509 names. Used by mutual-TLS client
//! authentication (RFC 8705 section 2) and certificate-bound tokens (section 3), by the
//! admin door's client certificates, RadSec's NAS certificates and the 802.1X door's
//! identities. The certificate reaches a request from its connection's handshake
//! (`crate::tls::client_certs` accepts any certificate there and proves key possession);
//! an OAuth client's is judged against its registration:
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
pub fn registered_thumbprints(pem: &str, max: usize) -> Result<Vec<String>, CertError> {
    let mut out = Vec::new();
    let certs =
        crate::pem::certs(pem.as_bytes()).map_err(|e| CertError(format!("malformed PEM: {e}")))?;
    for c in certs {
        Certificate::from_der(c.as_ref())
            .map_err(|e| CertError(format!("not an X.509 certificate: {e}")))?;
        out.push(thumbprint(c.as_ref()));
    }
    if out.is_empty() {
        return Err(CertError("no CERTIFICATE block".into()));
    }
    if out.len() > max {
        return Err(CertError(format!(
            "{} certificates; at most {max} per client",
            out.len(),
        )));
    }
    Ok(out)
}

/// An OID in dotted form, decoded from its DER bytes here: const-oid's own `Display`
/// panics on an arc too large for its decoder, which a certificate may carry (found by
/// the `jwt_verify` fuzz target through a registered DN).
pub fn oid_text(oid: &x509_cert::der::asn1::ObjectIdentifier) -> String {
    let mut arcs: Vec<String> = Vec::new();
    let mut acc: u128 = 0;
    for (i, b) in oid.as_bytes().iter().enumerate() {
        acc = acc.saturating_mul(128).saturating_add(u128::from(b & 0x7f));
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (acc / 40).min(2);
                arcs.push(first.to_string());
                arcs.push((acc - first * 40).to_string());
            } else {
                arcs.push(acc.to_string());
            }
            acc = 0;
        } else if i + 1 == oid.as_bytes().len() {
            arcs.push("?".into());
        }
    }
    arcs.join(".")
}

/// One attribute in RFC 4514 form (x509-cert's rendering for attribute types it knows;
/// `OID=#hex` of the value otherwise, as RFC 4514 2.4 says, without const-oid's panic).
pub fn ava_text(atv: &x509_cert::attr::AttributeTypeAndValue) -> String {
    use x509_cert::der::Encode;
    if x509_cert::der::oid::db::DB.by_oid(&atv.oid).is_some() {
        return atv.to_string();
    }
    let der = atv.value.to_der().unwrap_or_default();
    let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}=#{hex}", oid_text(&atv.oid))
}

/// One attribute as comparable text: its RFC 4514 rendering with the value folded to
/// lower case and runs of spaces collapsed (string encodings render alike).
fn canonical_ava(atv: &x509_cert::attr::AttributeTypeAndValue) -> String {
    let s = ava_text(atv);
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
        .map(|rdn| rdn.0.iter().map(ava_text).collect::<Vec<_>>().join("+"))
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

/// An attribute type as RFC 4514 allows it: a name (`CN`, `emailAddress`) or a dotted
/// numeric OID. Checked before x509-cert sees it: its OID parser overflows (a panic in
/// checked builds) on an arc of more digits than fit 32 bits, which the `jwt_verify` fuzz
/// target found.
fn attribute_type_ok(k: &str) -> bool {
    let name = k.len() <= 64
        && k.starts_with(|c: char| c.is_ascii_alphabetic())
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let oid = k.split('.').count() <= 32
        && k.split('.').all(|arc| {
            !arc.is_empty() && arc.len() <= 9 && arc.bytes().all(|b| b.is_ascii_digit())
        });
    name || oid
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
            if !attribute_type_ok(k) {
                return Err(bad(&format!(
                    "attribute type {k:?} is neither a name nor an OID"
                )));
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

/// The most specific commonName of an X.509 name (the last RDN that has one), as text.
pub fn common_name(name: &Name) -> Option<String> {
    const ID_AT_COMMON_NAME: x509_cert::der::asn1::ObjectIdentifier =
        x509_cert::der::asn1::ObjectIdentifier::new_unwrap("2.5.4.3");
    name.0
        .iter()
        .rev()
        .flat_map(|rdn| rdn.0.iter())
        .find(|a| a.oid == ID_AT_COMMON_NAME)
        .and_then(|a| any_string(&a.value))
}

fn any_string(v: &x509_cert::der::Any) -> Option<String> {
    use x509_cert::der::asn1::{Ia5StringRef, PrintableStringRef, Utf8StringRef};
    if let Ok(s) = v.decode_as::<Utf8StringRef<'_>>() {
        return Some(s.as_str().to_owned());
    }
    if let Ok(s) = v.decode_as::<PrintableStringRef<'_>>() {
        return Some(s.as_str().to_owned());
    }
    v.decode_as::<Ia5StringRef<'_>>()
        .ok()
        .map(|s| s.as_str().to_owned())
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
        assert_eq!(
            parse_dn("2.5.4.3=client").unwrap(),
            parse_dn("CN=client").unwrap()
        );
    }

    /// Found by the `jwt_verify` fuzz target: an attribute type of many digits made
    /// x509-cert's OID parser overflow. The fuzzer's own input is kept as a fixture.
    #[test]
    fn issue_14_an_overlong_numeric_attribute_type_is_an_error_not_a_panic() {
        let input = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/fuzz/dn-oid-overflow"
        ))
        .unwrap();
        let dn = String::from_utf8_lossy(&input[1..]).into_owned();
        let e = parse_dn(&dn).unwrap_err();
        assert!(e.0.contains("neither a name nor an OID"), "{e}");
        assert!(parse_dn(&format!("{}=x", "9".repeat(40))).is_err());
        // Its second form: arcs that pass the OID parser but not const-oid's decoder.
        let input = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/fuzz/dn-oid-arc-too-big"
        ))
        .unwrap();
        let dn = String::from_utf8_lossy(&input[1..]).into_owned();
        let parsed = parse_dn(&dn).unwrap();
        assert!(
            parsed[0].starts_with("0.9.2342.19200342.592003000=#"),
            "{parsed:?}"
        );
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
