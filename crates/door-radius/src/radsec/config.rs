//! The `[radius.radsec]` section: the RadSec door's certificate, the CA its NASes'
//! certificates chain to, and the bounds on its connections. Required when `[radius]
//! radsec_listen` names an address, refused without it (a section that configures nothing
//! would be a silent mistake). Files are read when the server starts, with the same checks
//! as `[tls]` (`portcullis tls check`).

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use portcullis_door::config_error::{ConfigError, invalid};
use portcullis_door::tls::TlsVersion;

/// `[radius.radsec]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileRadsec {
    /// Server certificate chain (PEM).
    pub cert: Option<PathBuf>,
    /// Its private key (PEM).
    pub key: Option<PathBuf>,
    /// CAs that issue NAS certificates (PEM bundle).
    pub client_ca: Option<PathBuf>,
    /// PEM CRLs of those CAs.
    pub crl: Vec<PathBuf>,
    /// TLS versions.
    pub versions: Vec<String>,
    /// Cipher suites by IANA name (empty: every suite fit for the key).
    pub cipher_suites: Vec<String>,
    /// Connections open at once, in all.
    pub max_connections: usize,
    /// Connections open at once from one address.
    pub max_connections_per_source: usize,
    /// Requests of one connection being answered at once.
    pub max_in_flight: usize,
    /// Time for the TLS handshake, in milliseconds.
    pub handshake_timeout_ms: u64,
    /// A connection with no request for this long (and none in flight) is closed, seconds.
    pub idle_timeout_secs: u64,
    /// Once a write has to wait, the writer must catch up within this long or the
    /// connection is closed, milliseconds. Also the socket's `TCP_USER_TIMEOUT`.
    pub write_timeout_ms: u64,
    /// RADIUS/1.1 (RFC 9765) by ALPN: "off", "allow" or "require".
    pub radius_1_1: String,
}

impl Default for FileRadsec {
    fn default() -> Self {
        FileRadsec {
            cert: None,
            key: None,
            client_ca: None,
            crl: Vec::new(),
            versions: vec!["1.2".into(), "1.3".into()],
            cipher_suites: Vec::new(),
            max_connections: 1024,
            max_connections_per_source: 16,
            max_in_flight: 256,
            handshake_timeout_ms: 5000,
            idle_timeout_secs: 300,
            write_timeout_ms: 10_000,
            radius_1_1: "allow".into(),
        }
    }
}

/// Whether a RadSec connection may, or must, speak RADIUS/1.1 (RFC 9765 §3.3's
/// "Version" variable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Radius11 {
    /// No ALPN at all ("unset"): every connection is RADIUS/1.0 (RFC 6614); a client's
    /// ALPN offer gets no answer.
    Off,
    /// "1.0, 1.1": ALPN "radius/1.1" when the NAS offers it, else RADIUS/1.0 (also for
    /// a NAS that offers no ALPN).
    Allow,
    /// "1.1": only RADIUS/1.1; a NAS offering only "radius/1.0" fails the handshake
    /// (no_application_protocol), one offering no ALPN is told why (Protocol-Error) and
    /// closed.
    Require,
}

/// The validated `[radius.radsec]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RadsecConfig {
    /// Server certificate chain.
    pub cert: PathBuf,
    /// Its key.
    pub key: PathBuf,
    /// CAs of NAS certificates.
    pub client_ca: PathBuf,
    /// CRL files.
    pub crl: Vec<PathBuf>,
    /// TLS versions (non-empty, no duplicates).
    pub versions: Vec<TlsVersion>,
    /// Cipher suites by name.
    pub cipher_suites: Vec<String>,
    /// Bound on open connections.
    pub max_connections: usize,
    /// Bound per source address.
    pub max_connections_per_source: usize,
    /// Bound on one connection's requests in flight.
    pub max_in_flight: usize,
    /// TLS handshake deadline.
    pub handshake_timeout: Duration,
    /// Idle connection lifetime.
    pub idle_timeout: Duration,
    /// Reply write deadline.
    pub write_timeout: Duration,
    /// RADIUS/1.1 negotiation.
    pub radius_1_1: Radius11,
}

impl RadsecConfig {
    /// Validate; `Ok(None)` when the section configures nothing (then `radsec_listen`
    /// must be empty, which the caller checks).
    pub fn from_file(f: FileRadsec) -> Result<Option<RadsecConfig>, ConfigError> {
        let (cert, key, client_ca) = match (f.cert, f.key, f.client_ca) {
            (None, None, None) => return Ok(None),
            (Some(c), Some(k), Some(ca)) => (c, k, ca),
            _ => {
                return Err(invalid(
                    "radius.radsec.cert, radius.radsec.key and radius.radsec.client_ca go \
                     together (NASes are authenticated by certificates from client_ca)",
                ));
            }
        };
        let versions =
            portcullis_door::tls::config::versions("radius.radsec.versions", &f.versions)?;
        if !(1..=1_000_000).contains(&f.max_connections) {
            return Err(invalid(
                "radius.radsec.max_connections must be between 1 and 1000000",
            ));
        }
        if !(1..=f.max_connections).contains(&f.max_connections_per_source) {
            return Err(invalid(
                "radius.radsec.max_connections_per_source must be between 1 and \
                 radius.radsec.max_connections",
            ));
        }
        if !(1..=4096).contains(&f.max_in_flight) {
            return Err(invalid(
                "radius.radsec.max_in_flight must be between 1 and 4096",
            ));
        }
        if !(100..=60_000).contains(&f.handshake_timeout_ms) {
            return Err(invalid(
                "radius.radsec.handshake_timeout_ms must be between 100 and 60000",
            ));
        }
        if !(1..=86_400).contains(&f.idle_timeout_secs) {
            return Err(invalid(
                "radius.radsec.idle_timeout_secs must be between 1 and 86400",
            ));
        }
        if !(100..=600_000).contains(&f.write_timeout_ms) {
            return Err(invalid(
                "radius.radsec.write_timeout_ms must be between 100 and 600000",
            ));
        }
        let radius_1_1 = match f.radius_1_1.as_str() {
            "off" => Radius11::Off,
            "allow" => Radius11::Allow,
            "require" => Radius11::Require,
            other => {
                return Err(invalid(format!(
                    "radius.radsec.radius_1_1: unknown value '{other}' (\"off\", \"allow\", \
                     \"require\")"
                )));
            }
        };
        if radius_1_1 != Radius11::Off && !versions.contains(&TlsVersion::Tls13) {
            return Err(invalid(
                "radius.radsec.radius_1_1 needs TLS 1.3 in radius.radsec.versions (RFC 9765 \
                 §3.4); add \"1.3\" or set radius_1_1 = \"off\"",
            ));
        }
        Ok(Some(RadsecConfig {
            cert,
            key,
            client_ca,
            crl: f.crl,
            versions,
            cipher_suites: f.cipher_suites,
            max_connections: f.max_connections,
            max_connections_per_source: f.max_connections_per_source,
            max_in_flight: f.max_in_flight,
            handshake_timeout: Duration::from_millis(f.handshake_timeout_ms),
            idle_timeout: Duration::from_secs(f.idle_timeout_secs),
            write_timeout: Duration::from_millis(f.write_timeout_ms),
            radius_1_1,
        }))
    }
}

/// The documented `[radius.radsec]` section of `portcullis config example`.
pub const EXAMPLE: &str = r#"
# RadSec (RADIUS over TLS, RFC 6614): authentication (PAP, EAP), accounting and
# Status-Server from NASes over one TLS connection each, on the addresses of
# `radius.radsec_listen` (usually port 2083). A NAS proves who it is with a client
# certificate that chains to client_ca and is registered for it:
# `portcullis nas add NAME --address CIDR --certificate FILE` (pins that certificate) or
# `--certificate-name NAME` (any certificate from client_ca whose dNSName, or subject CN
# without one, is NAME). Its connections must come from its CIDR. The shared secret is
# "radsec" (RFC 6614 §2.3), as the NAS must be configured. Accounting is acknowledged only
# once durable, as on UDP ([accounting]).
[radius.radsec]
# Server certificate chain and key (PEM); checked at start-up like [tls].
# cert = "/etc/portcullis/radsec.crt"
# key = "/etc/portcullis/radsec.key"
# CAs that issue NAS certificates (PEM bundle); a certificate from any other CA fails the
# handshake.
# client_ca = "/etc/portcullis/nas-ca.pem"
# CRLs of those CAs (PEM); a revoked NAS certificate fails the handshake.
crl = []
versions = ["1.2", "1.3"]
# IANA names; empty: every suite fit for the certificate's key.
cipher_suites = []
# Connections open at once, in all and from one address; more are closed at once.
max_connections = 1024
max_connections_per_source = 16
# Requests of one connection being answered at once; the connection is not read further
# until one is answered (TCP pushes back on the NAS).
max_in_flight = 256
# A TLS handshake not done within this many milliseconds is dropped.
handshake_timeout_ms = 5000
# A connection that sends no whole request for this long, with none in flight, is closed
# (octets trickling in do not keep it open).
idle_timeout_secs = 300
# Output per connection is bounded (max_in_flight answers queued, one packet being
# written, 8 KiB in TLS, a kernel send buffer of max_in_flight x 4 KiB between 64 KiB and
# 1 MiB). Once a write has to wait, the writer must catch up (everything queued in the
# kernel) within this many milliseconds, or the connection is closed: a NAS that stops
# reading, or reads slower than it asks. Also the socket's TCP_USER_TIMEOUT (answers the
# NAS does not acknowledge within it close the connection).
write_timeout_ms = 10000
# RADIUS/1.1 (RFC 9765), negotiated by TLS ALPN: no MD5 and no shared secret at all
# (TLS authenticates and hides every packet), a 32-bit Token instead of the 8-bit
# Identifier, User-Password and MS-MPPE keys in the clear inside TLS. Needs TLS 1.3.
#   "allow": a NAS that offers "radius/1.1" speaks it; one that offers "radius/1.0" or
#            no ALPN speaks RADIUS/1.0 (RFC 6614), as before (the RFC's default).
#   "require": only RADIUS/1.1; a NAS offering only "radius/1.0" fails the handshake
#            (TLS alert no_application_protocol), one offering no ALPN gets a
#            Protocol-Error saying so and is closed. Set it once every NAS negotiates 1.1.
#   "off": no ALPN; every connection is RADIUS/1.0.
# TLS session resumption is off unless "off" (a resumed session must not downgrade a
# NAS that negotiated RADIUS/1.1, RFC 9765 §3.5).
radius_1_1 = "allow"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Option<RadsecConfig>, String> {
        let f: FileRadsec = toml::from_str(text).map_err(|e| e.to_string())?;
        RadsecConfig::from_file(f).map_err(|e| e.to_string())
    }

    #[test]
    fn issue_28_radsec_section_is_validated() {
        assert_eq!(parse("").unwrap(), None, "off without files");
        let files = "cert = \"a\"\nkey = \"b\"\nclient_ca = \"c\"\n";
        let c = parse(files).unwrap().unwrap();
        assert_eq!(c.max_in_flight, 256);
        assert_eq!(c.idle_timeout, Duration::from_secs(300));
        for (extra, needle) in [
            ("versions = []", "versions"),
            ("versions = [\"1.1\"]", "versions"),
            ("max_connections = 0", "max_connections"),
            (
                "max_connections_per_source = 5000",
                "max_connections_per_source",
            ),
            ("max_in_flight = 0", "max_in_flight"),
            ("handshake_timeout_ms = 1", "handshake_timeout_ms"),
            ("idle_timeout_secs = 0", "idle_timeout_secs"),
            ("write_timeout_ms = 1", "write_timeout_ms"),
            ("radius_1_1 = \"on\"", "radius_1_1"),
            ("versions = [\"1.2\"]\nradius_1_1 = \"require\"", "TLS 1.3"),
            ("bogus = 1", "bogus"),
        ] {
            let err = parse(&format!("{files}{extra}")).unwrap_err();
            assert!(err.contains(needle), "{extra}: {err}");
        }
        let err = parse("cert = \"a\"\nkey = \"b\"").unwrap_err();
        assert!(err.contains("client_ca"), "{err}");
    }

    #[test]
    fn issue_28_example_section_is_the_defaults() {
        let text = EXAMPLE.replace("[radius.radsec]\n", "");
        let f: FileRadsec = toml::from_str(&text).unwrap();
        let d = FileRadsec::default();
        assert_eq!(
            (
                f.max_connections,
                f.max_connections_per_source,
                f.max_in_flight
            ),
            (
                d.max_connections,
                d.max_connections_per_source,
                d.max_in_flight
            )
        );
        assert_eq!(
            (
                f.handshake_timeout_ms,
                f.idle_timeout_secs,
                f.write_timeout_ms
            ),
            (
                d.handshake_timeout_ms,
                d.idle_timeout_secs,
                d.write_timeout_ms
            )
        );
        assert_eq!(f.versions, d.versions);
        assert_eq!(f.radius_1_1, d.radius_1_1);
    }

    #[test]
    fn issue_28_radius_1_1_modes() {
        let files = "cert = \"a\"\nkey = \"b\"\nclient_ca = \"c\"\n";
        let mode = |m: &str| {
            parse(&format!("{files}radius_1_1 = \"{m}\""))
                .unwrap()
                .unwrap()
        };
        assert_eq!(mode("off").radius_1_1, Radius11::Off);
        assert_eq!(mode("allow").radius_1_1, Radius11::Allow);
        assert_eq!(mode("require").radius_1_1, Radius11::Require);
        assert_eq!(parse(files).unwrap().unwrap().radius_1_1, Radius11::Allow);
        let tls12 = parse(&format!(
            "{files}versions = [\"1.2\"]\nradius_1_1 = \"off\""
        ));
        assert!(tls12.is_ok(), "RADIUS/1.0 over TLS 1.2 stays possible");
    }
}
