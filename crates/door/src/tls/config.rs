//! The `[tls]` section: its TOML form, validation into [`TlsSettings`] and its documented
//! example (part of `portcullis config example`).

use std::path::PathBuf;

use serde::Deserialize;

use super::{
    DEFAULT_HSTS_MAX_AGE_SECS, DEFAULT_SESSION_CACHE, DEFAULT_TICKET_ROTATION_SECS, TlsSettings,
    TlsVersion,
};
use crate::config_error::{ConfigError, invalid};

/// `[tls]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileTls {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// Protocol versions: "1.2", "1.3".
    #[serde(default = "default_versions")]
    pub versions: Vec<String>,
    /// Cipher suites by IANA name; empty: every suite compatible with the key.
    #[serde(default)]
    pub cipher_suites: Vec<String>,
    /// Issue session tickets for resumption.
    #[serde(default = "yes")]
    pub session_tickets: bool,
    /// Ticket key rotation period in seconds.
    #[serde(default = "default_rotation")]
    pub ticket_key_rotation_secs: u32,
    /// Derive ticket keys from the secrets file, shared by every instance.
    #[serde(default)]
    pub shared_ticket_keys: bool,
    /// TLS 1.2 session-id cache entries.
    #[serde(default = "default_cache")]
    pub session_cache_entries: usize,
    /// Ask clients for an (optional) certificate.
    #[serde(default = "yes")]
    pub client_certificates: bool,
    /// CAs for `tls_client_auth` clients.
    #[serde(default)]
    pub client_ca: Option<PathBuf>,
    /// `Strict-Transport-Security` max-age of HTTPS answers (0: none).
    #[serde(default = "default_hsts")]
    pub hsts_max_age_secs: u32,
    /// `includeSubDomains` in that header.
    #[serde(default)]
    pub hsts_include_subdomains: bool,
}

fn default_versions() -> Vec<String> {
    vec!["1.2".into(), "1.3".into()]
}
fn yes() -> bool {
    true
}
fn default_rotation() -> u32 {
    DEFAULT_TICKET_ROTATION_SECS
}
fn default_hsts() -> u32 {
    DEFAULT_HSTS_MAX_AGE_SECS
}
fn default_cache() -> usize {
    DEFAULT_SESSION_CACHE
}

/// The `versions` list of a TLS section (`[tls]`, `[radius.eap]`, `[radius.radsec]`;
/// `field` names it in errors): "1.2" and/or "1.3", each once, at least one.
pub fn versions(field: &str, list: &[String]) -> Result<Vec<TlsVersion>, ConfigError> {
    let mut versions = Vec::new();
    for name in list {
        let v = TlsVersion::parse(name).ok_or_else(|| {
            invalid(format!(
                "{field}: unknown version '{name}' (use \"1.2\" and/or \"1.3\")"
            ))
        })?;
        if !versions.contains(&v) {
            versions.push(v);
        }
    }
    if versions.is_empty() {
        return Err(invalid(format!("{field} must name at least one version")));
    }
    Ok(versions)
}

/// Check `[tls]` (files are read at start-up, not here).
pub fn validate(t: FileTls) -> Result<TlsSettings, ConfigError> {
    let versions = versions("tls.versions", &t.versions)?;
    if !(60..=DEFAULT_TICKET_ROTATION_SECS).contains(&t.ticket_key_rotation_secs) {
        return Err(invalid(format!(
            "tls.ticket_key_rotation_secs must be 60-{DEFAULT_TICKET_ROTATION_SECS}"
        )));
    }
    if t.session_cache_entries > 10_000_000 {
        return Err(invalid(
            "tls.session_cache_entries must be at most 10000000",
        ));
    }
    if t.hsts_include_subdomains && t.hsts_max_age_secs == 0 {
        return Err(invalid(
            "tls.hsts_include_subdomains needs tls.hsts_max_age_secs > 0 (0 sends no \
             Strict-Transport-Security header)",
        ));
    }
    if t.client_ca.is_some() && !t.client_certificates {
        return Err(invalid(
            "tls.client_ca needs tls.client_certificates = true (tls_client_auth clients \
             present a certificate)",
        ));
    }
    Ok(TlsSettings {
        cert: t.cert,
        key: t.key,
        versions,
        cipher_suites: t.cipher_suites,
        session_tickets: t.session_tickets,
        ticket_key_rotation_secs: t.ticket_key_rotation_secs,
        shared_ticket_keys: t.shared_ticket_keys,
        session_cache_entries: t.session_cache_entries,
        client_certificates: t.client_certificates,
        client_ca: t.client_ca,
        hsts_max_age_secs: t.hsts_max_age_secs,
        hsts_include_subdomains: t.hsts_include_subdomains,
    })
}

/// The `[tls]` part of `portcullis config example`.
pub const EXAMPLE: &str = r#"# [tls]
# Serve HTTPS. Without this section the server speaks plain HTTP.
# PEM certificate chain (leaf first) and private key (PKCS#8, PKCS#1 or SEC1). SIGHUP
# re-reads both (after the same checks as at start; on a failed check the old
# certificate stays) without dropping connections; `portcullis tls check` runs the
# checks on its own.
# cert = "/etc/portcullis/cert.pem"
# key = "/etc/portcullis/key.pem"
# Protocol versions to enable: "1.2", "1.3". Default: both.
# versions = ["1.2", "1.3"]
# Cipher suites by IANA name, in the server's order of preference: the server picks the
# first one the client also offers, whatever the client's own order. Default (empty):
# every suite compatible with the key, strongest first (AES-256-GCM, AES-128-GCM,
# ChaCha20-Poly1305; TLS 1.3 before 1.2), the SHA-256 suites first on a CPU with SHA
# instructions (x86 SHA-NI, ARMv8 SHA-2: their handshakes cost less there). At
# start-up the certificate's key type, key usage and extended key usage are checked
# against the enabled suites; a mismatch is a start-up error, not sporadic handshake
# failures. TLS 1.3: TLS13_AES_256_GCM_SHA384, TLS13_AES_128_GCM_SHA256,
# TLS13_CHACHA20_POLY1305_SHA256. TLS 1.2: TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
# TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
# (ECDSA or Ed25519 keys), TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
# TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
# (RSA keys).
# cipher_suites = []
# Session resumption: clients that reconnect per call resume with a ticket (TLS 1.3 and
# TLS 1.2) instead of a full handshake. Tickets are sealed under a random key made every
# ticket_key_rotation_secs (60-21600); the previous key still opens tickets for one more
# period. Keys never leave the process (unless shared_ticket_keys): a client landing on
# another instance makes a full handshake there. /metrics counts full and resumed handshakes.
# session_tickets = true
# ticket_key_rotation_secs = 21600
# Several instances behind one balancer: derive each period's ticket key from the secrets
# file's master key, so every instance sharing that file resumes every other's sessions.
# The cost: whoever holds the secrets file can derive the ticket keys of every period, past
# ones included (random keys are gone once rotated out), and so open recorded tickets.
# shared_ticket_keys = false
# Sessions remembered for TLS 1.2 session-id resumption.
# session_cache_entries = 16384
# Ask every client for a certificate, without requiring one (RFC 8705 client
# authentication: tls_client_auth and self_signed_tls_client_auth clients). Clients
# without a certificate are served as before.
# client_certificates = true
# PEM bundle of the CAs that issue tls_client_auth certificates (clients registered with
# `portcullis client add --auth-method tls_client_auth --tls-subject-dn DN`). Absent: only
# self-signed certificates registered per client authenticate.
# client_ca = "/etc/portcullis/client-ca.pem"
# Strict-Transport-Security on every HTTPS answer of the HTTP door (RFC 6797): browsers
# that saw it use only https:// for this host for max-age seconds. Default: one year;
# 0: no header. Never sent over plain HTTP (without [tls]).
# hsts_max_age_secs = 31536000
# Add includeSubDomains: every subdomain of this host must serve HTTPS too.
# hsts_include_subdomains = false

"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    fn tls(extra: &str) -> Result<TlsSettings, String> {
        let text = format!("cert = \"c.pem\"\nkey = \"k.pem\"\n{extra}");
        let file: FileTls = toml::from_str(&text).map_err(|e| e.to_string())?;
        validate(file).map_err(|e| e.to_string())
    }

    #[test]
    fn hsts_is_one_year_by_default_configurable_and_off_at_zero() {
        assert_eq!(tls("").unwrap().hsts().as_deref(), Some("max-age=31536000"));
        let with_subdomains = "hsts_max_age_secs = 600\nhsts_include_subdomains = true\n";
        assert_eq!(
            tls(with_subdomains).unwrap().hsts().as_deref(),
            Some("max-age=600; includeSubDomains")
        );
        assert_eq!(tls("hsts_max_age_secs = 0\n").unwrap().hsts(), None);
        let e = tls("hsts_max_age_secs = 0\nhsts_include_subdomains = true\n").unwrap_err();
        assert!(e.contains("tls.hsts_include_subdomains"), "{e}");
        let e = tls("hsts_max_age = 5\n").unwrap_err();
        assert!(e.contains("unknown field `hsts_max_age`"), "{e}");
    }

    #[test]
    fn versions_keep_the_order_given_once_each() {
        let v = versions("tls.versions", &list(&["1.3", "1.2", "1.3"])).unwrap();
        assert_eq!(v, [TlsVersion::Tls13, TlsVersion::Tls12]);
    }

    #[test]
    fn versions_refuse_an_unknown_name_and_an_empty_list_naming_the_field() {
        let e = versions("radius.eap.versions", &list(&["1.2", "1.1"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("radius.eap.versions") && e.contains("'1.1'"),
            "{e}"
        );
        let e = versions("radius.radsec.versions", &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("radius.radsec.versions must name at least one version"),
            "{e}"
        );
    }
}
