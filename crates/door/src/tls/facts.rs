//! What a certificate says, for `portcullis tls check` and the log line of a reload:
//! subject, issuer, validity, names, key, usages and fingerprint, read with RustCrypto's
//! DER parser (no OpenSSL).

use std::fmt;

use rustls::pki_types::CertificateDer;
use x509_cert::Certificate;
use x509_cert::der::Decode;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{ExtendedKeyUsage, KeyUsage, SubjectAltName};

use super::TlsError;

/// The facts of a leaf certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertFacts {
    /// RFC 4514 subject.
    pub subject: String,
    /// RFC 4514 issuer.
    pub issuer: String,
    /// Serial number, hex.
    pub serial: String,
    /// Validity start (RFC 3339-ish, UTC, as DER states it).
    pub not_before: String,
    /// Validity end.
    pub not_after: String,
    /// Seconds from now until `not_after` (negative: expired).
    pub expires_in_secs: i64,
    /// DNS names and IP addresses of the subjectAltName.
    pub names: Vec<String>,
    /// Key algorithm and size, e.g. "ECDSA P-256", "RSA 2048".
    pub key: String,
    /// KeyUsage bits set (empty: no extension, no restriction).
    pub key_usage: Vec<String>,
    /// ExtendedKeyUsage purposes (empty: no extension).
    pub extended_key_usage: Vec<String>,
    /// SHA-256 of the DER, hex with colons.
    pub sha256: String,
}

impl CertFacts {
    /// Facts of the first certificate of a PEM chain file.
    pub fn of_pem_file(path: &std::path::Path) -> Result<CertFacts, TlsError> {
        let pem = super::read(path)?;
        let chain = crate::pem::certs(&pem)
            .map_err(|e| TlsError::Pem(format!("{}: {e}", path.display())))?;
        CertFacts::of(&chain)
    }

    /// Facts of the first (leaf) certificate of `chain`.
    pub fn of(chain: &[CertificateDer<'_>]) -> Result<CertFacts, TlsError> {
        let leaf = chain
            .first()
            .ok_or_else(|| TlsError::Pem("no certificate".into()))?;
        let cert = Certificate::from_der(leaf.as_ref())
            .map_err(|e| TlsError::Pem(format!("leaf certificate is not valid DER X.509: {e}")))?;
        let tbs = &cert.tbs_certificate;
        let mut names = Vec::new();
        let mut key_usage = Vec::new();
        let mut extended_key_usage = Vec::new();
        for ext in tbs.extensions.iter().flatten() {
            let v = ext.extn_value.as_bytes();
            if let Ok(san) = SubjectAltName::from_der(v)
                && ext.extn_id == x509_cert::der::oid::db::rfc5280::ID_CE_SUBJECT_ALT_NAME
            {
                for n in san.0 {
                    match n {
                        GeneralName::DnsName(d) => names.push(format!("DNS:{}", d.as_str())),
                        GeneralName::IpAddress(ip) => {
                            names.push(format!("IP:{}", ip_text(ip.as_bytes())))
                        }
                        _ => {}
                    }
                }
            } else if ext.extn_id == x509_cert::der::oid::db::rfc5280::ID_CE_KEY_USAGE {
                if let Ok(ku) = KeyUsage::from_der(v) {
                    key_usage = ku.0.into_iter().map(|f| format!("{f:?}")).collect();
                }
            } else if ext.extn_id == x509_cert::der::oid::db::rfc5280::ID_CE_EXT_KEY_USAGE
                && let Ok(eku) = ExtendedKeyUsage::from_der(v)
            {
                extended_key_usage = eku.0.iter().map(eku_name).collect();
            }
        }
        let not_after = tbs.validity.not_after.to_unix_duration().as_secs() as i64;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, leaf.as_ref());
        Ok(CertFacts {
            subject: crate::tls::peer::rfc4514(&tbs.subject),
            issuer: crate::tls::peer::rfc4514(&tbs.issuer),
            serial: hex(tbs.serial_number.as_bytes(), ""),
            not_before: tbs.validity.not_before.to_string(),
            not_after: tbs.validity.not_after.to_string(),
            expires_in_secs: not_after - now,
            names,
            key: key_text(&tbs.subject_public_key_info),
            key_usage,
            extended_key_usage,
            sha256: hex(digest.as_ref(), ":"),
        })
    }
}

fn hex(b: &[u8], sep: &str) -> String {
    b.iter()
        .map(|x| format!("{x:02X}"))
        .collect::<Vec<_>>()
        .join(sep)
}

fn ip_text(b: &[u8]) -> String {
    match b.len() {
        4 => std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string(),
        16 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(b);
            std::net::Ipv6Addr::from(a).to_string()
        }
        _ => hex(b, ""),
    }
}

fn eku_name(oid: &x509_cert::der::asn1::ObjectIdentifier) -> String {
    use x509_cert::der::oid::db::rfc5280 as r;
    match *oid {
        r::ID_KP_SERVER_AUTH => "serverAuth".into(),
        r::ID_KP_CLIENT_AUTH => "clientAuth".into(),
        r::ID_KP_CODE_SIGNING => "codeSigning".into(),
        r::ID_KP_EMAIL_PROTECTION => "emailProtection".into(),
        r::ID_KP_OCSP_SIGNING => "OCSPSigning".into(),
        r::ANY_EXTENDED_KEY_USAGE => "anyExtendedKeyUsage".into(),
        other => crate::tls::peer::oid_text(&other),
    }
}

fn key_text(spki: &x509_cert::spki::SubjectPublicKeyInfoOwned) -> String {
    use x509_cert::der::oid::db::{rfc5912, rfc8410};
    let oid = spki.algorithm.oid;
    let bits = spki.subject_public_key.raw_bytes();
    if oid == rfc5912::RSA_ENCRYPTION {
        // The modulus is the first INTEGER of the RSAPublicKey: its length gives the size.
        let size = rsa_bits(bits).map_or_else(|| "?".into(), |b| b.to_string());
        format!("RSA {size}")
    } else if oid == rfc5912::ID_EC_PUBLIC_KEY {
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.decode_as::<x509_cert::der::asn1::ObjectIdentifier>().ok());
        match curve {
            Some(rfc5912::SECP_256_R_1) => "ECDSA P-256".into(),
            Some(rfc5912::SECP_384_R_1) => "ECDSA P-384".into(),
            Some(rfc5912::SECP_521_R_1) => "ECDSA P-521".into(),
            Some(c) => format!("ECDSA {}", crate::tls::peer::oid_text(&c)),
            None => "ECDSA".into(),
        }
    } else if oid == rfc8410::ID_ED_25519 {
        "Ed25519".into()
    } else {
        crate::tls::peer::oid_text(&oid)
    }
}

fn rsa_bits(pkcs1: &[u8]) -> Option<usize> {
    use x509_cert::der::asn1::UintRef;
    use x509_cert::der::{Reader, SliceReader};
    let mut r = SliceReader::new(pkcs1).ok()?;
    let n = r.sequence(|s| {
        let n = UintRef::decode(s)?;
        let _e = UintRef::decode(s)?;
        Ok(n.as_bytes().to_vec())
    });
    let n = n.ok()?;
    let first = *n.first()?;
    Some(n.len() * 8 - first.leading_zeros() as usize)
}

impl fmt::Display for CertFacts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |v: &[String]| {
            if v.is_empty() {
                "(none)".to_owned()
            } else {
                v.join(", ")
            }
        };
        writeln!(f, "subject:            {}", self.subject)?;
        writeln!(f, "issuer:             {}", self.issuer)?;
        writeln!(f, "serial:             {}", self.serial)?;
        writeln!(
            f,
            "valid:              {} to {}",
            self.not_before, self.not_after
        )?;
        let days = self.expires_in_secs / 86_400;
        if self.expires_in_secs < 0 {
            writeln!(f, "expires in:         EXPIRED {} days ago", -days)?;
        } else {
            writeln!(f, "expires in:         {days} days")?;
        }
        writeln!(f, "names:              {}", list(&self.names))?;
        writeln!(f, "key:                {}", self.key)?;
        writeln!(
            f,
            "key usage:          {}",
            if self.key_usage.is_empty() {
                "(no extension: any)".into()
            } else {
                self.key_usage.join(", ")
            }
        )?;
        writeln!(
            f,
            "extended key usage: {}",
            if self.extended_key_usage.is_empty() {
                "(no extension: any)".into()
            } else {
                self.extended_key_usage.join(", ")
            }
        )?;
        write!(f, "sha256:             {}", self.sha256)
    }
}

/// Subject, issuer, expiry and fingerprint, to name a certificate in one log line.
pub fn one_line(f: &CertFacts) -> String {
    format!(
        "subject \"{}\", issuer \"{}\", not after {}, sha256 {}",
        f.subject, f.issuer, f.not_after, f.sha256
    )
}
