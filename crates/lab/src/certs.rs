//! Throwaway certificates for the demo's HTTPS section and the TLS tests (issue 14): a CA,
//! server certificates for loopback names, CA-issued and self-signed client certificates,
//! and assertion signing keys, written as PEM files into a directory (keys 0600). Real
//! deployments bring their own certificates; nothing here is used by `serve`.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SignatureAlgorithm,
};

use crate::LabError;

fn err(e: impl std::fmt::Display) -> LabError {
    LabError::Output(format!("generating test certificates: {e}"))
}

fn write(path: &Path, text: &str, secret: bool) -> Result<(), LabError> {
    std::fs::write(path, text).map_err(|e| LabError::Output(format!("{}: {e}", path.display())))?;
    if secret {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| LabError::Output(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

/// A PEM certificate and key written to files.
#[derive(Debug, Clone)]
pub struct Pair {
    /// Certificate chain (leaf first).
    pub cert: PathBuf,
    /// Private key.
    pub key: PathBuf,
}

/// A throwaway certificate authority.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    dir: PathBuf,
    /// The CA certificate (PEM file): what clients and `[tls] client_ca` trust.
    pub cert: PathBuf,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").field("cert", &self.cert).finish()
    }
}

fn params(cn: &str, names: &[&str]) -> Result<CertificateParams, LabError> {
    let mut p = CertificateParams::new(names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
        .map_err(err)?;
    // Most general first in DER, so the RFC 4514 form reads "CN=...,O=Portcullis test"
    // (rcgen's default name holds a CN already, which would keep the first place).
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name
        .push(DnType::OrganizationName, "Portcullis test");
    p.distinguished_name.push(DnType::CommonName, cn);
    Ok(p)
}

impl TestCa {
    /// A new CA, `ca.crt` in `dir`.
    pub fn new(dir: &Path, name: &str) -> Result<TestCa, LabError> {
        let mut p = params(name, &[])?;
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(err)?;
        let issuer = CertifiedIssuer::self_signed(p, key).map_err(err)?;
        let cert = dir.join(format!("{name}.crt"));
        write(&cert, &issuer.pem(), false)?;
        Ok(TestCa {
            issuer,
            dir: dir.to_owned(),
            cert,
        })
    }

    fn issue(
        &self,
        file: &str,
        cn: &str,
        names: &[&str],
        eku: ExtendedKeyUsagePurpose,
        alg: &'static SignatureAlgorithm,
    ) -> Result<Pair, LabError> {
        let mut p = params(cn, names)?;
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        p.extended_key_usages = vec![eku];
        let key = KeyPair::generate_for(alg).map_err(err)?;
        let c = p.signed_by(&key, &self.issuer).map_err(err)?;
        let pair = Pair {
            cert: self.dir.join(format!("{file}.crt")),
            key: self.dir.join(format!("{file}.key")),
        };
        write(&pair.cert, &c.pem(), false)?;
        write(&pair.key, &key.serialize_pem(), true)?;
        Ok(pair)
    }

    /// A server certificate (ECDSA P-256, serverAuth) for `names` (DNS names or IPs).
    pub fn server(&self, file: &str, names: &[&str]) -> Result<Pair, LabError> {
        self.issue(
            file,
            names.first().copied().unwrap_or("localhost"),
            names,
            ExtendedKeyUsagePurpose::ServerAuth,
            &rcgen::PKCS_ECDSA_P256_SHA256,
        )
    }

    /// A client certificate (ECDSA P-256, clientAuth) with subject `CN=cn,O=Portcullis test`.
    pub fn client(&self, file: &str, cn: &str) -> Result<Pair, LabError> {
        self.issue(
            file,
            cn,
            &[],
            ExtendedKeyUsagePurpose::ClientAuth,
            &rcgen::PKCS_ECDSA_P256_SHA256,
        )
    }
}

impl TestCa {
    /// A CRL of this CA (`{file}.crl`, PEM) revoking the certificates `revoked`.
    pub fn crl(&self, file: &str, revoked: &[&Pair]) -> Result<PathBuf, LabError> {
        let mut certs = Vec::new();
        for pair in revoked {
            let pem = std::fs::read(&pair.cert).map_err(err)?;
            let der = crate::tls::pem_certs(&pem)
                .map_err(err)?
                .into_iter()
                .next()
                .ok_or_else(|| err("no certificate to revoke"))?;
            let serial = serial_of(&der).ok_or_else(|| err("unreadable certificate serial"))?;
            certs.push(rcgen::RevokedCertParams {
                serial_number: rcgen::SerialNumber::from_slice(serial),
                revocation_time: rcgen::date_time_ymd(2025, 1, 1),
                reason_code: Some(rcgen::RevocationReason::KeyCompromise),
                invalidity_date: None,
            });
        }
        let crl = rcgen::CertificateRevocationListParams {
            this_update: rcgen::date_time_ymd(2025, 1, 1),
            next_update: rcgen::date_time_ymd(2045, 1, 1),
            crl_number: rcgen::SerialNumber::from(1u64),
            issuing_distribution_point: None,
            revoked_certs: certs,
            key_identifier_method: rcgen::KeyIdMethod::Sha256,
        }
        .signed_by(&self.issuer)
        .map_err(err)?;
        let path = self.dir.join(format!("{file}.crl"));
        write(&path, &crl.pem().map_err(err)?, false)?;
        Ok(path)
    }
}

/// The serialNumber of a DER certificate: Certificate ::= SEQUENCE { TBSCertificate ::=
/// SEQUENCE { [0] version OPTIONAL, serialNumber INTEGER, ... } }.
fn serial_of(der: &[u8]) -> Option<&[u8]> {
    fn header(b: &[u8]) -> Option<(u8, usize, usize)> {
        let tag = *b.first()?;
        let first = *b.get(1)?;
        if first < 0x80 {
            return Some((tag, 2, usize::from(first)));
        }
        let n = usize::from(first & 0x7f);
        let mut len = 0usize;
        for i in 0..n {
            len = len.checked_mul(256)? + usize::from(*b.get(2 + i)?);
        }
        Some((tag, 2 + n, len))
    }
    let (_, h, _) = header(der)?;
    let tbs = der.get(h..)?;
    let (_, h, _) = header(tbs)?;
    let mut rest = tbs.get(h..)?;
    let (tag, h, len) = header(rest)?;
    if tag == 0xa0 {
        rest = rest.get(h + len..)?;
    }
    let (tag, h, len) = header(rest)?;
    (tag == 0x02).then(|| rest.get(h..h + len)).flatten()
}

/// A self-signed client certificate (for `self_signed_tls_client_auth`).
pub fn self_signed_client(dir: &Path, file: &str, cn: &str) -> Result<Pair, LabError> {
    let mut p = params(cn, &[])?;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    // P-256 rather than Ed25519: every TLS client stack (curl's OpenSSL builds
    // included) loads it.
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(err)?;
    let c = p.self_signed(&key).map_err(err)?;
    let pair = Pair {
        cert: dir.join(format!("{file}.crt")),
        key: dir.join(format!("{file}.key")),
    };
    write(&pair.cert, &c.pem(), false)?;
    write(&pair.key, &key.serialize_pem(), true)?;
    Ok(pair)
}

/// An assertion signing key (`private_key_jwt`): `{file}.key` (PKCS#8) and `{file}.pub`
/// (SPKI), for `alg` one of "EdDSA", "ES256", "RS256".
pub fn signing_key(dir: &Path, file: &str, alg: &str) -> Result<Pair, LabError> {
    let a: &'static SignatureAlgorithm = match alg {
        "EdDSA" => &rcgen::PKCS_ED25519,
        "ES256" => &rcgen::PKCS_ECDSA_P256_SHA256,
        "RS256" | "PS256" => &rcgen::PKCS_RSA_SHA256,
        other => return Err(err(format!("unsupported algorithm {other}"))),
    };
    let pair = Pair {
        cert: dir.join(format!("{file}.pub")),
        key: dir.join(format!("{file}.key")),
    };
    if alg == "EdDSA" {
        // PKCS#8 v1: the v2 form (with the public key) that rcgen writes is refused by
        // some OpenSSL-based libraries (Python's `cryptography` among them).
        use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
        let k = Ed25519KeyPair::generate().map_err(err)?;
        let pkcs8 = k.to_pkcs8v1().map_err(err)?;
        // SubjectPublicKeyInfo: SEQUENCE { SEQUENCE { id-Ed25519 }, BIT STRING key }.
        let mut spki = vec![
            0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
        ];
        spki.extend_from_slice(k.public_key().as_ref());
        write(&pair.cert, &pem("PUBLIC KEY", &spki), false)?;
        write(&pair.key, &pem("PRIVATE KEY", pkcs8.as_ref()), true)?;
        return Ok(pair);
    }
    let key = KeyPair::generate_for(a).map_err(err)?;
    write(&pair.cert, &key.public_key_pem(), false)?;
    write(&pair.key, &key.serialize_pem(), true)?;
    Ok(pair)
}

fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}
