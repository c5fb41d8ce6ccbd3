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
