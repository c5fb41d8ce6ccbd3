//! HTTPS for the lab (issue 14, report 001): what a client's TLS looks like (`tls = { ca,
//! server_name, versions, cert, key }` on the target or a group), one rustls client
//! configuration per virtual client, and connection set-up timed in its phases.
//!
//! Each virtual client gets its own session cache, as separate processes would: with
//! `per-request-resume` it resumes its own previous session (a TLS 1.3 ticket or a TLS 1.2
//! ticket or session id); with `per-request` resumption is off, so every call pays a full
//! handshake; `keep-alive` handshakes once per connection. Handshakes are measured as the
//! client sees them: TCP connect, then the TLS handshake, then the request.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::{ClientSessionMemoryCache, Resumption};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use serde::{Deserialize, Serialize};

use crate::LabError;

/// Connection handling of a client group: what `TlsSpec::for_client` configures
/// resumption for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectionMode {
    /// Reuse one connection per client.
    KeepAlive,
    /// Open a new connection for every request (over HTTPS: a full handshake each time).
    PerRequest,
    /// A new connection for every request, resuming the client's previous TLS session.
    PerRequestResume,
}

/// `tls = { ... }` as written, on `[target]` (every group) or on a group (its own).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RawTls {
    /// PEM bundle of the CAs to trust (default: the system's bundle).
    #[serde(default)]
    pub ca: Option<String>,
    /// Name to verify and send as SNI (default: the target's host).
    #[serde(default)]
    pub server_name: Option<String>,
    /// `["1.2", "1.3"]` (default both; the server picks).
    #[serde(default)]
    pub versions: Option<Vec<String>>,
    /// Client certificate chain (PEM) for mutual TLS.
    #[serde(default)]
    pub cert: Option<String>,
    /// Its private key (PEM).
    #[serde(default)]
    pub key: Option<String>,
}

/// A validated client TLS setting.
#[derive(Clone)]
pub struct TlsSpec {
    /// Roots, versions and client certificate; cloned per virtual client.
    base: Arc<ClientConfig>,
    /// Verified name and SNI.
    pub server_name: ServerName<'static>,
    /// Versions offered, e.g. "1.2+1.3" (reports).
    pub versions: String,
    /// Whether a client certificate is presented.
    pub client_cert: bool,
}

impl std::fmt::Debug for TlsSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSpec")
            .field("server_name", &self.server_name)
            .field("versions", &self.versions)
            .field("client_cert", &self.client_cert)
            .finish()
    }
}

/// Where a client's connection goes through TLS: its configuration and the name.
#[derive(Clone, Debug)]
pub struct Tls {
    /// This client's configuration (its own session cache, or resumption off).
    pub config: Arc<ClientConfig>,
    /// Verified name and SNI.
    pub name: ServerName<'static>,
}

fn bad(msg: impl Into<String>) -> LabError {
    LabError::Scenario(msg.into())
}

/// CA bundles of common distributions, for `https://` targets without `tls.ca`.
const SYSTEM_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
];

/// A PEM parse error in words, a bad line quoted as text (the parser prints it as bytes).
pub(crate) fn pem_error(e: &rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::MissingSectionEnd { end_marker } => format!(
            "\"-----END {}-----\" missing: a block is cut short",
            String::from_utf8_lossy(end_marker)
        ),
        Error::IllegalSectionStart { line } => {
            format!("illegal section start: {:?}", String::from_utf8_lossy(line))
        }
        other => other.to_string(),
    }
}

/// The first private key of a PEM text (PKCS#8, PKCS#1 or SEC1); `Ok(None)`: none.
pub(crate) fn private_key(pem: &[u8]) -> Result<Option<PrivateKeyDer<'static>>, String> {
    match PrivateKeyDer::from_pem_slice(pem) {
        Ok(k) => Ok(Some(k)),
        Err(rustls::pki_types::pem::Error::NoItemsFound) => Ok(None),
        Err(e) => Err(pem_error(&e)),
    }
}

/// Every CERTIFICATE block of a PEM text.
pub(crate) fn pem_certs(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| pem_error(&e))
}

fn read_pem(path: &Path, what: &str) -> Result<Vec<u8>, LabError> {
    crate::safety::read_file(path, 16 << 20).map_err(|e| bad(format!("tls.{what}: {e}")))
}

fn certs(pem: &[u8], path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, LabError> {
    let c = pem_certs(pem).map_err(|e| bad(format!("tls.{what}: {}: {e}", path.display())))?;
    if c.is_empty() {
        return Err(bad(format!(
            "tls.{what}: {} holds no CERTIFICATE",
            path.display()
        )));
    }
    Ok(c)
}

impl TlsSpec {
    /// Validate `raw` for a target named `host`; relative paths go through `resolve`.
    pub fn from_raw(
        raw: &RawTls,
        host: &str,
        resolve: &dyn Fn(&str) -> PathBuf,
    ) -> Result<TlsSpec, LabError> {
        let mut roots = RootCertStore::empty();
        let ca = match &raw.ca {
            Some(p) => resolve(p),
            None => SYSTEM_BUNDLES
                .iter()
                .map(PathBuf::from)
                .find(|p| p.exists())
                .ok_or_else(|| bad("https target: give tls.ca (no system CA bundle found)"))?,
        };
        for c in certs(&read_pem(&ca, "ca")?, &ca, "ca")? {
            // A system bundle may hold a certificate rustls cannot use; skip it there.
            if let Err(e) = roots.add(c)
                && raw.ca.is_some()
            {
                return Err(bad(format!("tls.ca: {}: {e}", ca.display())));
            }
        }
        let name = raw.server_name.clone().unwrap_or_else(|| host.to_owned());
        let server_name = ServerName::try_from(name.clone())
            .map_err(|_| bad(format!("tls.server_name: {name:?} is not a DNS name or IP")))?;
        let mut versions = Vec::new();
        for v in raw
            .versions
            .clone()
            .unwrap_or_else(|| vec!["1.2".into(), "1.3".into()])
        {
            let v = match v.as_str() {
                "1.2" => &rustls::version::TLS12,
                "1.3" => &rustls::version::TLS13,
                o => return Err(bad(format!("tls.versions: {o:?} (use \"1.2\", \"1.3\")"))),
            };
            if !versions.contains(&v) {
                versions.push(v);
            }
        }
        if versions.is_empty() {
            return Err(bad("tls.versions must name at least one version"));
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&versions)
            .map_err(|e| bad(format!("tls: {e}")))?
            .with_root_certificates(roots);
        let (config, client_cert) = match (&raw.cert, &raw.key) {
            (Some(c), Some(k)) => {
                let (cp, kp) = (resolve(c), resolve(k));
                let chain = certs(&read_pem(&cp, "cert")?, &cp, "cert")?;
                let key = private_key(&read_pem(&kp, "key")?)
                    .map_err(|e| bad(format!("tls.key: {}: {e}", kp.display())))?
                    .ok_or_else(|| bad(format!("tls.key: {} holds no key", kp.display())))?;
                let cfg = builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| bad(format!("tls.cert/key: {e}")))?;
                (cfg, true)
            }
            (None, None) => (builder.with_no_client_auth(), false),
            _ => return Err(bad("tls.cert and tls.key go together")),
        };
        let mut config = config;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsSpec {
            base: Arc::new(config),
            server_name,
            versions: versions
                .iter()
                .map(|v| match v.version {
                    rustls::ProtocolVersion::TLSv1_2 => "1.2",
                    _ => "1.3",
                })
                .collect::<Vec<_>>()
                .join("+"),
            client_cert,
        })
    }

    /// One virtual client's TLS: its own session cache, or none with `per-request`.
    pub fn for_client(&self, mode: ConnectionMode) -> Tls {
        let mut c = (*self.base).clone();
        c.resumption = match mode {
            ConnectionMode::PerRequest => Resumption::disabled(),
            ConnectionMode::KeepAlive | ConnectionMode::PerRequestResume => {
                Resumption::store(Arc::new(ClientSessionMemoryCache::new(4)))
            }
        };
        Tls {
            config: Arc::new(c),
            name: self.server_name.clone(),
        }
    }

    /// One 802.1X station's TLS (no ALPN: EAP carries TLS itself): its own session cache
    /// kept across logins with `resume`, else resumption off, so every login is a full
    /// handshake (what a fresh configuration per login would give, without rebuilding
    /// one).
    pub fn for_eap(&self, resume: bool) -> Tls {
        let mut c = (*self.base).clone();
        c.alpn_protocols = Vec::new();
        c.resumption = if resume {
            Resumption::store(Arc::new(ClientSessionMemoryCache::new(4)))
        } else {
            Resumption::disabled()
        };
        Tls {
            config: Arc::new(c),
            name: self.server_name.clone(),
        }
    }
}
