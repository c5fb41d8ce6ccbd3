//! Scenario files: the TOML a person writes (`Raw*`, `deny_unknown_fields`) and the
//! validated, typed [`Scenario`] the runner executes.
//!
//! A scenario names a target, a driver (how one attempt is made), the principals it may use,
//! whole-run settings (ramp-up, duration, repeats, seed, caps) and groups of virtual clients.
//! Each group has its own credentials, load model (closed loop with think time, or open loop
//! at a constant or ramping arrival rate), timing, connection mode and source addresses.
//! Thresholds decide the exit code. See `scenarios/README.md` for the annotated format.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::LabError;
use crate::safety;

pub mod directory;
pub mod ldap;
mod raw;
mod validate;
pub use directory::DirectorySpec;
pub use ldap::{LdapSpec, ServicePassword, UserBind};
pub use raw::*;

/// Built-in scenarios shipped in `scenarios/`: (name, TOML text).
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "baseline-10-valid",
        include_str!("../../../../scenarios/baseline-10-valid.toml"),
    ),
    (
        "radius-brute-force",
        include_str!("../../../../scenarios/radius-brute-force.toml"),
    ),
    (
        "radius-demo-legit",
        include_str!("../../../../scenarios/radius-demo-legit.toml"),
    ),
    (
        "radius-demo-attack",
        include_str!("../../../../scenarios/radius-demo-attack.toml"),
    ),
    (
        "eap-login-storm",
        include_str!("../../../../scenarios/eap-login-storm.toml"),
    ),
    (
        "brute-force-2x1s",
        include_str!("../../../../scenarios/brute-force-2x1s.toml"),
    ),
    (
        "brute-force-3x1s",
        include_str!("../../../../scenarios/brute-force-3x1s.toml"),
    ),
    (
        "brute-force-4x1s",
        include_str!("../../../../scenarios/brute-force-4x1s.toml"),
    ),
    (
        "brute-force-2x5s",
        include_str!("../../../../scenarios/brute-force-2x5s.toml"),
    ),
    (
        "connect-per-request",
        include_str!("../../../../scenarios/connect-per-request.toml"),
    ),
    (
        "handshake-cost",
        include_str!("../../../../scenarios/handshake-cost.toml"),
    ),
    (
        "overload-2x",
        include_str!("../../../../scenarios/overload-2x.toml"),
    ),
    (
        "healthz-peak",
        include_str!("../../../../scenarios/healthz-peak.toml"),
    ),
    (
        "ldap-guessing-wave",
        include_str!("../../../../scenarios/ldap-guessing-wave.toml"),
    ),
    (
        "slow-directory",
        include_str!("../../../../scenarios/slow-directory.toml"),
    ),
    (
        "slow-directory-oauth",
        include_str!("../../../../scenarios/slow-directory-oauth.toml"),
    ),
    (
        "directory-lockout",
        include_str!("../../../../scenarios/directory-lockout.toml"),
    ),
];

/// Look up a built-in scenario by name.
pub fn builtin(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

// ---------------------------------------------------------------------------------------
// The validated form.
// ---------------------------------------------------------------------------------------

/// A validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file as written (shown in reports).
    pub raw: RawScenario,
    /// Target base URL parts.
    pub target: Target,
    /// The driver.
    pub driver: DriverSpec,
    /// Valid principals.
    pub principals: Principals,
    /// Whole-run settings.
    pub run: RunSpec,
    /// Groups.
    pub groups: Vec<GroupSpec>,
    /// Thresholds.
    pub thresholds: Vec<Threshold>,
    /// Demo settings.
    pub demo: DemoSpec,
    /// Where relative file names resolve (the scenario file's directory).
    pub base_dir: Option<PathBuf>,
}

/// Where the server under test is.
#[derive(Debug, Clone)]
pub struct Target {
    /// Host as written (a name or an IP literal).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Token endpoint path.
    pub token_path: String,
    /// JWKS source.
    pub jwks: JwksSource,
    /// Metrics path or URL (`None`: not scraped).
    pub metrics: Option<String>,
    /// Expected issuer.
    pub issuer: Option<String>,
    /// `https://`: every group's TLS unless it has its own.
    pub tls: Option<crate::tls::TlsSpec>,
}

impl Target {
    /// The base URL (scheme, host and port).
    pub fn base_url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        if self.host.contains(':') {
            format!("{scheme}://[{}]:{}", self.host, self.port)
        } else {
            format!("{scheme}://{}:{}", self.host, self.port)
        }
    }
}

/// Where signing keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// RFC 8414 discovery, falling back to `/oauth2/jwks`.
    Discover,
    /// This path on the target.
    Path(String),
}

/// The typed driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverSpec {
    /// OAuth 2.0 token requests.
    OAuth2 {
        /// Grant type.
        grant: Grant,
        /// Client authentication method.
        auth: ClientAuth,
        /// Requested scope.
        scope: Option<String>,
        /// Password grant: the application client (id, secret).
        app_client: Option<(String, String)>,
        /// `private_key_jwt`: how assertions are made.
        assertion: Option<AssertionSpec>,
    },
    /// `GET path`, expecting 200.
    HttpGet {
        /// Request path.
        path: String,
    },
    /// RADIUS PAP Access-Requests (RFC 2865) over UDP, or RadSec.
    Radius(RadiusSpec),
    /// LDAP simple binds (RFC 4511, 4513) and the searches around them.
    Ldap(LdapSpec),
}

/// The RADIUS driver's settings.
#[derive(Clone, PartialEq, Eq)]
pub struct RadiusSpec {
    /// The NAS shared secret.
    pub secret: Vec<u8>,
    /// Retransmit after this long without a reply.
    pub retransmit: Duration,
    /// Retransmissions before an attempt is a timeout.
    pub retries: u32,
    /// A reply without a valid Message-Authenticator is a wrong response.
    pub require_message_authenticator: bool,
    /// NAS-Identifier attribute.
    pub nas_identifier: String,
    /// Accounting-Requests (Start, Interim-Update, Stop) instead of PAP.
    pub accounting: bool,
    /// With `accounting`: Accounting-On storms instead of sessions.
    pub accounting_on: bool,
    /// RadSec (RADIUS over TLS) instead of UDP: the client TLS settings, paths resolved
    /// (checked when the scenario was validated; the driver builds them again).
    pub radsec: Option<crate::tls::RawTls>,
    /// With `radsec`: offer only ALPN "radius/1.1" and speak RADIUS/1.1 (RFC 9765: Token,
    /// no MD5, no secret); a server that does not agree is a connection error.
    pub radius_1_1: bool,
}

impl std::fmt::Debug for RadiusSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RadiusSpec")
            .field("secret", &"<redacted>")
            .field("retransmit", &self.retransmit)
            .field("retries", &self.retries)
            .field(
                "require_message_authenticator",
                &self.require_message_authenticator,
            )
            .field("nas_identifier", &self.nas_identifier)
            .field("accounting", &self.accounting)
            .field("accounting_on", &self.accounting_on)
            .field("radsec", &self.radsec.is_some())
            .field("radius_1_1", &self.radius_1_1)
            .finish()
    }
}

/// OAuth 2.0 grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// RFC 6749 4.4.
    ClientCredentials,
    /// RFC 6749 4.3.
    Password,
}

/// Client authentication at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// HTTP Basic.
    ClientSecretBasic,
    /// Form body fields.
    ClientSecretPost,
    /// RFC 7523 assertion signed with the scenario's private key.
    PrivateKeyJwt,
    /// RFC 8705: the TLS client certificate; only `client_id` in the body.
    TlsClientAuth,
}

/// How `private_key_jwt` assertions are made (defined beside the signer that reads it, so
/// `assertion` does not import the scenario that validates keys with it).
pub use crate::assertion::AssertionSpec;

/// Where valid principals come from.
#[derive(Debug, Clone)]
pub enum Principals {
    /// `prefix`n / `secret_prefix`n for n in 0..count.
    Generated {
        /// Id prefix.
        prefix: String,
        /// Secret prefix.
        secret_prefix: String,
        /// How many exist.
        count: usize,
    },
    /// Loaded from a file.
    List(Vec<(String, String)>),
}

impl Principals {
    /// Number of valid principals.
    pub fn len(&self) -> usize {
        match self {
            Principals::Generated { count, .. } => *count,
            Principals::List(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Principal `i` as (id, secret).
    pub fn get(&self, i: usize) -> Option<(String, String)> {
        match self {
            Principals::Generated {
                prefix,
                secret_prefix,
                count,
            } => (i < *count).then(|| (format!("{prefix}{i}"), format!("{secret_prefix}{i}"))),
            Principals::List(v) => v.get(i).cloned(),
        }
    }

    /// Id prefix for unknown principals (never provisioned).
    pub fn unknown_prefix(&self) -> String {
        match self {
            Principals::Generated { prefix, .. } => format!("{prefix}unknown-"),
            Principals::List(_) => "lab-unknown-".into(),
        }
    }
}

/// Whole-run settings.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// Length of one repeat.
    pub duration: Duration,
    /// Ramp-up.
    pub ramp_up: Duration,
    /// Repeats.
    pub repeats: u32,
    /// Seed.
    pub seed: u64,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Request cap per repeat.
    pub max_requests: u64,
}

/// What a group's clients present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    /// Valid principals' real secrets.
    Valid,
    /// Valid principals with a wrong secret.
    WrongSecret,
    /// Ids the target does not know.
    UnknownPrincipal,
    /// `id,secret` pairs from a file, with the expected result.
    File {
        /// The pairs.
        pairs: Vec<(String, String)>,
        /// Whether success is expected.
        expect_success: bool,
    },
}

/// Load model.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    /// Closed loop with think time.
    Closed {
        /// Pause between an answer and the next request.
        think: Duration,
    },
    /// Open loop.
    Open {
        /// Arrivals per second at the start.
        rate: f64,
        /// Arrivals per second at the end (equal to `rate` when constant).
        rate_end: f64,
        /// Poisson (true) or uniform spacing.
        poisson: bool,
        /// Most requests in flight.
        max_outstanding: usize,
    },
}

/// Connection handling (defined beside the TLS client settings it selects, so `tls`
/// does not import the scenario that imports it).
pub use crate::tls::ConnectionMode;

/// A validated group.
#[derive(Debug, Clone)]
pub struct GroupSpec {
    /// Name.
    pub name: String,
    /// Credentials.
    pub credentials: Credentials,
    /// Number of clients.
    pub size: usize,
    /// First principal index.
    pub principal_offset: usize,
    /// Principals the clients share (client i uses offset + i mod this; at least 1).
    pub principal_count: usize,
    /// Load model.
    pub model: Model,
    /// Start offset.
    pub start: Duration,
    /// Length.
    pub duration: Duration,
    /// Connection mode.
    pub connection: ConnectionMode,
    /// TLS for `https://` targets (the group's own or the target's).
    pub tls: Option<crate::tls::TlsSpec>,
    /// The group's own client authentication (OAuth driver), if it differs.
    pub auth: Option<(ClientAuth, Option<AssertionSpec>)>,
    /// Source addresses (empty: OS choice).
    pub sources: Vec<IpAddr>,
    /// Whether Retry-After is honoured.
    pub honour_retry_after: bool,
    /// RADIUS driver: 802.1X logins instead of PAP requests.
    pub eap: Option<EapSpec>,
}

/// The EAP method a group's stations log in with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EapMethod {
    /// EAP-TLS (RFC 5216, RFC 9190): a client certificate.
    Tls,
    /// EAP-TTLS with inner PAP (RFC 5281, RFC 9427): the group's credentials.
    Ttls,
}

/// A group's validated 802.1X settings.
#[derive(Debug, Clone)]
pub struct EapSpec {
    /// The method.
    pub method: EapMethod,
    /// Stations keep their TLS session cache across logins (later logins resume).
    pub resume: bool,
    /// Server verification and, for EAP-TLS, the client certificate. `None` only while
    /// the demo has still to make the certificates (`[demo] eap_pki`).
    pub tls: Option<crate::tls::TlsSpec>,
    /// TTLS outer identity (default the user name).
    pub anonymous_identity: Option<String>,
}

impl GroupSpec {
    /// Whether this group's clients should get tokens (they are "legitimate").
    pub fn expects_success(&self) -> bool {
        match &self.credentials {
            Credentials::Valid => true,
            Credentials::WrongSecret | Credentials::UnknownPrincipal => false,
            Credentials::File { expect_success, .. } => *expect_success,
        }
    }
}

/// Metric a threshold checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Successes / completed.
    SuccessRate,
    /// Latency percentiles (ms).
    P50Ms,
    /// 90th percentile.
    P90Ms,
    /// 99th percentile.
    P99Ms,
    /// 99.9th percentile.
    P999Ms,
    /// Maximum.
    MaxMs,
    /// Successes per second.
    Throughput,
    /// Timeouts / completed.
    TimeoutRate,
}

/// A validated threshold.
#[derive(Debug, Clone, Serialize)]
pub struct Threshold {
    /// Group (None: legitimate groups merged).
    pub group: Option<String>,
    /// Metric.
    pub metric: Metric,
    /// Lower bound.
    pub min: Option<f64>,
    /// Upper bound.
    pub max: Option<f64>,
}

/// Validated demo settings.
#[derive(Debug, Clone, Default)]
pub struct DemoSpec {
    /// Reject delay for the servers.
    pub reject_delay: Option<Duration>,
    /// Rate multiple of capacity.
    pub rate_x_capacity: Option<f64>,
    /// Run by `demo --quick` as well.
    pub quick: bool,
    /// Over HTTPS.
    pub tls: bool,
    /// Clients' secrets stored as generated ones (no KDF).
    pub generated_secrets: bool,
    /// The demo makes the EAP certificates.
    pub eap_pki: bool,
    /// Run only when `demo --only` names it.
    pub on_request: bool,
    /// The users live in a directory behind the delaying relay (`[demo.directory]`).
    pub directory: Option<DirectorySpec>,
}

fn bad(msg: impl Into<String>) -> LabError {
    LabError::Scenario(msg.into())
}

impl Scenario {
    /// Parse and validate TOML text; relative file names resolve against `base_dir`.
    pub fn parse(text: &str, base_dir: Option<&Path>) -> Result<Scenario, LabError> {
        let raw: RawScenario = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        Scenario::from_raw(raw, base_dir)
    }

    /// Load a scenario: a built-in name or a file path.
    pub fn load(name_or_path: &str) -> Result<Scenario, LabError> {
        if let Some(text) = builtin(name_or_path) {
            return Scenario::parse(text, None);
        }
        let path = PathBuf::from(name_or_path);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            bad(format!(
                "{name_or_path:?} is neither a built-in scenario nor a readable file: {e}"
            ))
        })?;
        Scenario::parse(&text, path.parent())
    }

    /// Point the scenario at another base URL (`--target`), keeping everything else.
    pub fn with_target_url(mut self, url: &str) -> Result<Scenario, LabError> {
        let (https, host, port) = match &mut self.driver {
            DriverSpec::Radius(_) => {
                let (h, p) = safety::parse_url(url, "radius", 1812)?;
                (false, h, p)
            }
            DriverSpec::Ldap(spec) => {
                let (ldaps, h, p) = ldap::parse_url(url)?;
                if ldaps && spec.starttls {
                    return Err(bad(
                        "driver.ldap.starttls is for ldap:// targets (ldaps:// is TLS already)",
                    ));
                }
                spec.ldaps = ldaps;
                (spec.tls(), h, p)
            }
            _ => safety::parse_web_url(url)?,
        };
        self.target.host = host;
        self.target.port = port;
        self.raw.target.url = url.to_string();
        self.retls(https)?;
        self.reeap()?;
        Ok(self)
    }

    /// Use these certificates for the EAP groups (the demo's throwaway PKI): `ca` for
    /// every group, the client certificate for the EAP-TLS groups without one.
    pub fn with_eap_pki(
        mut self,
        ca: &Path,
        client: &crate::certs::Pair,
    ) -> Result<Scenario, LabError> {
        let path = |p: &Path| Some(p.to_string_lossy().into_owned());
        let base = self.raw.driver.eap.get_or_insert_with(Default::default);
        base.ca = path(ca);
        let base = base.clone();
        for g in &mut self.raw.groups {
            let merged = g.eap.clone().unwrap_or_default().over(&base);
            if merged.method.as_deref() == Some("tls") && merged.cert.is_none() {
                let own = g.eap.get_or_insert_with(Default::default);
                own.cert = path(&client.cert);
                own.key = path(&client.key);
            }
        }
        self.reeap()?;
        Ok(self)
    }

    /// Rebuild every group's EAP settings from the file's (after the target or the
    /// certificates changed).
    fn reeap(&mut self) -> Result<(), LabError> {
        let base = self.base_dir.clone();
        for (gi, g) in self.groups.iter_mut().enumerate() {
            g.eap = validate::eap_spec(
                &self.raw,
                gi,
                &self.target.host,
                base.as_deref(),
                self.demo.eap_pki,
            )?;
        }
        Ok(())
    }

    /// Whether any group logs in with EAP.
    pub fn uses_eap(&self) -> bool {
        self.groups.iter().any(|g| g.eap.is_some())
    }

    /// Trust this CA bundle for the HTTPS target (`lab run --tls-ca`), for every group.
    pub fn with_tls_ca(mut self, ca: &Path) -> Result<Scenario, LabError> {
        let ca = Some(ca.to_string_lossy().into_owned());
        self.raw.target.tls.get_or_insert_with(Default::default).ca = ca.clone();
        for g in &mut self.raw.groups {
            if let Some(t) = &mut g.tls {
                t.ca = ca.clone();
            }
        }
        let https = self.target.tls.is_some();
        self.retls(https)?;
        Ok(self)
    }

    /// Rebuild every group's TLS from the file's settings for the current target (its
    /// host is the default server name).
    fn retls(&mut self, https: bool) -> Result<(), LabError> {
        if !https {
            self.target.tls = None;
            for g in &mut self.groups {
                g.tls = None;
            }
            return Ok(());
        }
        let base = self.base_dir.clone();
        let resolve = |p: &str| match &base {
            Some(d) => d.join(p),
            None => PathBuf::from(p),
        };
        let target = crate::tls::TlsSpec::from_raw(
            &self.raw.target.tls.clone().unwrap_or_default(),
            &self.target.host,
            &resolve,
        )?;
        for (g, raw) in self.groups.iter_mut().zip(&self.raw.groups) {
            g.tls = Some(match &raw.tls {
                Some(t) => crate::tls::TlsSpec::from_raw(t, &self.target.host, &resolve)?,
                None => target.clone(),
            });
        }
        self.target.tls = Some(target);
        Ok(())
    }

    /// Multiply every time in the scenario by `f` (the demo's `--quick`).
    pub fn scale_time(&mut self, f: f64) {
        let s = |d: Duration| Duration::from_secs_f64(d.as_secs_f64() * f);
        self.run.duration = s(self.run.duration);
        self.run.ramp_up = s(self.run.ramp_up);
        for g in &mut self.groups {
            g.start = s(g.start);
            g.duration = s(g.duration);
        }
    }

    /// Upper bound on the requests one repeat may make (for the safety cap check).
    pub fn planned_open_requests(&self) -> f64 {
        self.groups
            .iter()
            .map(|g| match g.model {
                Model::Open { rate, rate_end, .. } => {
                    (rate + rate_end) / 2.0 * g.duration.as_secs_f64()
                }
                Model::Closed { .. } => 0.0,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests;
