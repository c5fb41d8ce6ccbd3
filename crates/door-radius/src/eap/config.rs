//! The `[radius.eap]` section: 802.1X (EAP-TLS, EAP-TTLS/PAP) on the RADIUS door. Off
//! unless `cert` and `key` are set. Files are read when the server starts (with the same
//! certificate checks as `[tls]` and `portcullis tls check`), not when the file is parsed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use portcullis_eap::method;
use serde::Deserialize;

use portcullis_door::config_error::{ConfigError, invalid};
use portcullis_door::tls::TlsVersion;

/// `[radius.eap]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileEap {
    /// Server certificate chain (PEM); EAP is off when unset.
    pub cert: Option<PathBuf>,
    /// Its private key (PEM).
    pub key: Option<PathBuf>,
    /// CAs of EAP-TLS client certificates (PEM bundle).
    pub client_ca: Option<PathBuf>,
    /// PEM CRLs of those CAs: a listed certificate fails, resumed sessions included.
    pub crl: Vec<PathBuf>,
    /// Methods offered, in the order proposed.
    pub methods: Vec<String>,
    /// Per-NAS methods (NAS name to list), overriding `methods`.
    pub nas_methods: BTreeMap<String, Vec<String>>,
    /// TLS versions.
    pub versions: Vec<String>,
    /// Cipher suites by IANA name, chosen in the client's order (empty: every suite fit
    /// for the key, the SHA-256 ones preferred where SHA-256 runs in hardware).
    pub cipher_suites: Vec<String>,
    /// Where an EAP-TLS identity comes from.
    pub tls_identity: String,
    /// EAP-TLS identities must name an enabled user.
    pub require_user: bool,
    /// TLS octets per EAP packet.
    pub fragment_size: usize,
    /// Issue tickets so devices resume.
    pub resumption: bool,
    /// How long a TTLS identity carries over to resumed sessions, seconds.
    pub resumption_lifetime_secs: u64,
    /// Derive ticket keys from the secrets file (every instance resumes every other's).
    pub shared_ticket_keys: bool,
    /// Conversations in progress, in all.
    pub max_conversations: usize,
    /// Conversations in progress per NAS.
    pub max_conversations_per_nas: usize,
    /// A conversation idle this long is forgotten, seconds.
    pub conversation_timeout_secs: u64,
    /// Most round trips of one conversation.
    pub max_round_trips: u32,
}

impl Default for FileEap {
    fn default() -> Self {
        FileEap {
            cert: None,
            key: None,
            client_ca: None,
            crl: Vec::new(),
            methods: vec!["tls".into(), "ttls".into()],
            nas_methods: BTreeMap::new(),
            versions: vec!["1.2".into(), "1.3".into()],
            cipher_suites: Vec::new(),
            tls_identity: "subject_cn".into(),
            require_user: false,
            fragment_size: 1024,
            resumption: true,
            resumption_lifetime_secs: 3600,
            shared_ticket_keys: false,
            max_conversations: 65_536,
            max_conversations_per_nas: 16_384,
            conversation_timeout_secs: 30,
            max_round_trips: 64,
        }
    }
}

/// Where an EAP-TLS login's identity is read from the client certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsIdentity {
    /// The subject's commonName.
    SubjectCn,
    /// The first rfc822Name (e-mail) of subjectAltName.
    SanEmail,
    /// The first dNSName of subjectAltName.
    SanDns,
    /// The whole subject DN in RFC 4514 form.
    SubjectDn,
}

/// The validated `[radius.eap]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EapConfig {
    /// Server certificate chain.
    pub cert: PathBuf,
    /// Its key.
    pub key: PathBuf,
    /// Client CAs (required when EAP-TLS is offered).
    pub client_ca: Option<PathBuf>,
    /// CRL files.
    pub crl: Vec<PathBuf>,
    /// Methods (EAP type numbers) in proposal order.
    pub methods: Vec<u8>,
    /// Per-NAS overrides.
    pub nas_methods: BTreeMap<String, Vec<u8>>,
    /// TLS versions.
    pub versions: Vec<TlsVersion>,
    /// Cipher suites by name.
    pub cipher_suites: Vec<String>,
    /// EAP-TLS identity source.
    pub tls_identity: TlsIdentity,
    /// EAP-TLS identities must be enabled users.
    pub require_user: bool,
    /// TLS octets per EAP packet.
    pub fragment_size: usize,
    /// Tickets on.
    pub resumption: bool,
    /// TTLS identity carry-over lifetime.
    pub resumption_lifetime: Duration,
    /// Ticket keys from the secrets file.
    pub shared_ticket_keys: bool,
    /// Bound on conversations.
    pub max_conversations: usize,
    /// Bound per NAS.
    pub max_conversations_per_nas: usize,
    /// Idle expiry.
    pub conversation_timeout: Duration,
    /// Round-trip cap.
    pub max_round_trips: u32,
}

fn methods(key: &str, names: &[String]) -> Result<Vec<u8>, ConfigError> {
    let mut out = Vec::new();
    for n in names {
        let m = match n.as_str() {
            "tls" => method::TLS,
            "ttls" => method::TTLS,
            "peap" | "mschapv2" => {
                return Err(invalid(format!(
                    "{key}: '{n}' needs the unsalted MD4 (NT) hash of each password, which \
                     Portcullis never stores; offer \"ttls\" (inner PAP) or \"tls\""
                )));
            }
            other => {
                return Err(invalid(format!(
                    "{key}: unknown method '{other}' (expected \"tls\" or \"ttls\")"
                )));
            }
        };
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        return Err(invalid(format!("{key} must name at least one method")));
    }
    Ok(out)
}

impl EapConfig {
    /// Validate; `Ok(None)` when EAP is off (no certificate).
    pub fn from_file(f: FileEap) -> Result<Option<EapConfig>, ConfigError> {
        let (cert, key) = match (f.cert, f.key) {
            (None, None) => return Ok(None),
            (Some(c), Some(k)) => (c, k),
            _ => return Err(invalid("radius.eap.cert and radius.eap.key go together")),
        };
        let m = methods("radius.eap.methods", &f.methods)?;
        let mut nas_methods = BTreeMap::new();
        for (nas, list) in &f.nas_methods {
            nas_methods.insert(
                nas.clone(),
                methods(&format!("radius.eap.nas_methods.{nas}"), list)?,
            );
        }
        let wants_tls =
            m.contains(&method::TLS) || nas_methods.values().any(|l| l.contains(&method::TLS));
        if wants_tls && f.client_ca.is_none() {
            return Err(invalid(
                "radius.eap.client_ca is required when EAP-TLS is offered (\"tls\" in \
                 radius.eap.methods): without it no client certificate could ever be accepted",
            ));
        }
        let versions = portcullis_door::tls::config::versions("radius.eap.versions", &f.versions)?;
        let tls_identity = match f.tls_identity.as_str() {
            "subject_cn" => TlsIdentity::SubjectCn,
            "san_email" => TlsIdentity::SanEmail,
            "san_dns" => TlsIdentity::SanDns,
            "subject_dn" => TlsIdentity::SubjectDn,
            other => {
                return Err(invalid(format!(
                    "radius.eap.tls_identity: '{other}' (expected subject_cn, san_email, san_dns or subject_dn)"
                )));
            }
        };
        if !(200..=4000).contains(&f.fragment_size) {
            return Err(invalid(
                "radius.eap.fragment_size must be between 200 and 4000",
            ));
        }
        if !(60..=7 * 86_400).contains(&f.resumption_lifetime_secs) {
            return Err(invalid(
                "radius.eap.resumption_lifetime_secs must be between 60 and 604800",
            ));
        }
        if !(16..=10_000_000).contains(&f.max_conversations) {
            return Err(invalid(
                "radius.eap.max_conversations must be between 16 and 10000000",
            ));
        }
        if !(1..=f.max_conversations).contains(&f.max_conversations_per_nas) {
            return Err(invalid(
                "radius.eap.max_conversations_per_nas must be between 1 and max_conversations",
            ));
        }
        if !(5..=600).contains(&f.conversation_timeout_secs) {
            return Err(invalid(
                "radius.eap.conversation_timeout_secs must be between 5 and 600",
            ));
        }
        if !(8..=1000).contains(&f.max_round_trips) {
            return Err(invalid(
                "radius.eap.max_round_trips must be between 8 and 1000",
            ));
        }
        Ok(Some(EapConfig {
            cert,
            key,
            client_ca: f.client_ca,
            crl: f.crl,
            methods: m,
            nas_methods,
            versions,
            cipher_suites: f.cipher_suites,
            tls_identity,
            require_user: f.require_user,
            fragment_size: f.fragment_size,
            resumption: f.resumption,
            resumption_lifetime: Duration::from_secs(f.resumption_lifetime_secs),
            shared_ticket_keys: f.shared_ticket_keys,
            max_conversations: f.max_conversations,
            max_conversations_per_nas: f.max_conversations_per_nas,
            conversation_timeout: Duration::from_secs(f.conversation_timeout_secs),
            max_round_trips: f.max_round_trips,
        }))
    }

    /// The methods a NAS may use.
    pub fn methods_for(&self, nas: &str) -> &[u8] {
        self.nas_methods
            .get(nas)
            .map_or(&self.methods, Vec::as_slice)
    }
}

/// The documented `[radius.eap]` section of `portcullis config example`.
pub const EXAMPLE: &str = r#"
# 802.1X on the RADIUS door (EAP over RADIUS, RFC 3579): EAP-TLS (client certificates,
# RFC 5216/9190) and EAP-TTLS with inner PAP (RFC 5281/9427), keys to the NAS as
# MS-MPPE-Send/Recv-Key. Off unless cert and key are set. PEAP and EAP-MSCHAPv2 are not
# offered: they need the unsalted MD4 (NT) hash of every password, which Portcullis never
# stores; a peer asking only for them gets EAP-Failure (audit reason nt_hash_method).
[radius.eap]
# The server certificate chain and key the devices check (PEM), checked at start like
# [tls] (every enabled suite must fit the key; KeyUsage/EKU must allow a TLS server).
# cert = "/etc/portcullis/radius.crt"
# key = "/etc/portcullis/radius.key"
# CAs that issue EAP-TLS client certificates (required when "tls" is offered): the
# chain, dates and clientAuth EKU are checked in the handshake.
# client_ca = "/etc/portcullis/devices-ca.crt"
# PEM CRLs of those CAs: a listed certificate is refused, resumed sessions included.
# SIGHUP re-reads cert, key, client_ca and these files (same paths; checked as at start,
# a bad file is refused and the old ones stay); devices keep resuming across it.
crl = []
# Methods offered, in the order proposed; a peer may Nak to another in the list.
methods = ["tls", "ttls"]
# Per NAS (by `portcullis nas` name), e.g. { "guest-wlc" = ["ttls"] }.
nas_methods = {}
versions = ["1.2", "1.3"]
# IANA names, chosen in the client's order; empty: every suite fit for the certificate's
# key, the SHA-256 ones preferred where the CPU has SHA-256 instructions (cheaper logins).
cipher_suites = []
# EAP-TLS identity: subject_cn, san_email, san_dns or subject_dn. If a user of that name
# exists and is disabled the login fails; with require_user the user must exist.
tls_identity = "subject_cn"
require_user = false
# TLS octets per EAP packet (lowered further by the NAS's Framed-MTU).
fragment_size = 1024
# Session resumption (tickets): a device reconnecting within the ticket lifetime gets an
# abbreviated handshake; for TTLS the identity proven in the first session carries over
# for resumption_lifetime_secs, unless the user is disabled or removed meanwhile.
resumption = true
resumption_lifetime_secs = 3600
# Derive ticket keys from the secrets file so every instance sharing it resumes every
# other's sessions (whoever holds the file can open past tickets). TTLS identities
# carry over across instances only through Redis ([throttle] redis).
shared_ticket_keys = false
# Conversations in progress are bounded in all and per NAS and forgotten when idle; new
# conversations are refused before conversations in progress when the table fills.
max_conversations = 65536
max_conversations_per_nas = 16384
conversation_timeout_secs = 30
max_round_trips = 64
"#;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Option<EapConfig>, String> {
        let f: FileEap = toml::from_str(text).map_err(|e| e.to_string())?;
        EapConfig::from_file(f).map_err(|e| e.to_string())
    }

    #[test]
    fn issue_25_example_section_is_the_defaults_and_eap_is_off_without_a_certificate() {
        let text = EXAMPLE.replace("[radius.eap]\n", "");
        assert_eq!(parse(&text).unwrap(), None);
        let on = parse("cert = \"c.pem\"\nkey = \"k.pem\"\nclient_ca = \"ca.pem\"")
            .unwrap()
            .unwrap();
        assert_eq!(on.methods, [method::TLS, method::TTLS]);
        assert!(on.resumption, "resumption is on by default");
    }

    #[test]
    fn issue_25_settings_that_would_break_logins_are_errors() {
        let base = "cert = \"c.pem\"\nkey = \"k.pem\"\n";
        for (text, needle) in [
            ("cert = \"c.pem\"", "go together"),
            (base, "client_ca is required"),
            (&format!("{base}methods = [\"ttls\", \"peap\"]"), "NT"),
            (&format!("{base}methods = [\"md5\"]"), "unknown method"),
            (&format!("{base}methods = []"), "at least one"),
            (
                &format!("{base}methods = [\"ttls\"]\nnas_methods = {{ w = [\"tls\"] }}"),
                "client_ca is required",
            ),
            (
                &format!("{base}methods = [\"ttls\"]\nversions = [\"1.1\"]"),
                "unknown version",
            ),
            (
                &format!("{base}methods = [\"ttls\"]\ntls_identity = \"uid\""),
                "tls_identity",
            ),
            (
                &format!("{base}methods = [\"ttls\"]\nfragment_size = 100"),
                "fragment_size",
            ),
            (
                &format!("{base}methods = [\"ttls\"]\nmax_conversations_per_nas = 0"),
                "per_nas",
            ),
            (&format!("{base}methods = [\"ttls\"]\nbogus = 1"), "bogus"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
        let ttls_only = parse(&format!("{base}methods = [\"ttls\"]"))
            .unwrap()
            .unwrap();
        assert_eq!(ttls_only.methods_for("any"), [method::TTLS]);
    }
}
