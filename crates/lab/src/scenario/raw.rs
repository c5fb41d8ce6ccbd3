//! The scenario file format as a person writes it: every table and key, with its default.
//! Unknown keys are rejected (`deny_unknown_fields`), naming the key.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::LabError;
use crate::safety;

// ---------------------------------------------------------------------------------------

/// A scenario file as written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    /// Short name (used in reports and file names).
    pub name: String,
    /// One line saying what the scenario shows.
    #[serde(default)]
    pub description: String,
    /// The server under test.
    pub target: RawTarget,
    /// How one attempt is made.
    pub driver: RawDriver,
    /// The principals (clients or users) valid credentials are drawn from.
    #[serde(default)]
    pub principals: Option<RawPrincipals>,
    /// Whole-run settings.
    #[serde(default)]
    pub run: RawRun,
    /// Groups of virtual clients (at least one).
    #[serde(rename = "group")]
    pub groups: Vec<RawGroup>,
    /// Pass/fail rules deciding the exit code.
    #[serde(default, rename = "threshold")]
    pub thresholds: Vec<RawThreshold>,
    /// Settings `portcullis demo` applies to the servers it starts (ignored by `lab run`).
    #[serde(default)]
    pub demo: RawDemo,
}

/// `[target]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTarget {
    /// Base URL, `http://host:port` (default `http://127.0.0.1:8080`).
    #[serde(default = "default_url")]
    pub url: String,
    /// Token endpoint path (default `/oauth2/token`).
    #[serde(default = "default_token_path")]
    pub token_path: String,
    /// Where signing keys come from: `"discover"` (RFC 8414 metadata, falling back to
    /// `/oauth2/jwks`) or a path/URL of a JWKS document. Default `"discover"`.
    #[serde(default = "default_jwks")]
    pub jwks: String,
    /// Prometheus metrics URL or path scraped every second; `"off"` disables. Default `/metrics`.
    #[serde(default = "default_metrics")]
    pub metrics: String,
    /// Expected `iss` claim; not checked when absent.
    #[serde(default)]
    pub issuer: Option<String>,
    /// `https://` targets: CA bundle, server name, versions, client certificate (every
    /// group's default; a group's own `tls` replaces it).
    #[serde(default)]
    pub tls: Option<crate::tls::RawTls>,
}

fn default_url() -> String {
    "http://127.0.0.1:8080".into()
}
fn default_token_path() -> String {
    "/oauth2/token".into()
}
fn default_jwks() -> String {
    "discover".into()
}
fn default_metrics() -> String {
    "/metrics".into()
}

/// `[driver]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawDriver {
    /// `"oauth2"` (token endpoint), `"radius"` (RADIUS PAP Access-Requests to a
    /// `radius://host:port` target) or `"http-get"` (trivial GET of `path`, for tool
    /// comparisons).
    pub kind: String,
    /// OAuth2 grant: `"client_credentials"` (default) or `"password"`.
    #[serde(default)]
    pub grant: Option<String>,
    /// OAuth2 client authentication: `"client_secret_basic"` (default),
    /// `"client_secret_post"`, `"private_key_jwt"` (RFC 7523 assertions signed with
    /// `private_key`) or `"tls_client_auth"` (RFC 8705: the TLS client certificate of
    /// `tls.cert`; only `client_id` in the body). Self-signed certificates
    /// (`self_signed_tls_client_auth`) are sent the same way.
    #[serde(default)]
    pub client_auth: Option<String>,
    /// `private_key_jwt`: PEM private key every client signs its assertions with (the
    /// server has each client's public key registered).
    #[serde(default)]
    pub private_key: Option<String>,
    /// `private_key_jwt`: `"PS256"` to sign with RSA-PSS (default: RS256, ES256 or EdDSA
    /// after the key type).
    #[serde(default)]
    pub assertion_alg: Option<String>,
    /// `private_key_jwt`: the `aud` claim (default: the token endpoint URL).
    #[serde(default)]
    pub assertion_audience: Option<String>,
    /// `private_key_jwt`: assertion lifetime in seconds (default 60).
    #[serde(default)]
    pub assertion_lifetime_secs: Option<u32>,
    /// Requested scope (optional).
    #[serde(default)]
    pub scope: Option<String>,
    /// Password grant: the application's client id (principals are then users).
    #[serde(default)]
    pub client_id: Option<String>,
    /// Password grant: the application's client secret.
    #[serde(default)]
    pub client_secret: Option<String>,
    /// `http-get`: the path requested (default `/healthz`).
    #[serde(default)]
    pub path: Option<String>,
    /// `radius`: the NAS shared secret (or `secret_env`).
    #[serde(default)]
    pub secret: Option<String>,
    /// `radius`: the environment variable holding the NAS shared secret.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// `radius`: retransmit after this many milliseconds without a reply (default 2000).
    #[serde(default)]
    pub retransmit_ms: Option<u64>,
    /// `radius`: retransmissions before giving up (default 2), like a NAS.
    #[serde(default)]
    pub retries: Option<u32>,
    /// `radius`: replies without a valid Message-Authenticator count as wrong responses
    /// (default true).
    #[serde(default)]
    pub require_message_authenticator: Option<bool>,
    /// `radius`: NAS-Identifier sent in every request (default `portcullis-lab`).
    #[serde(default)]
    pub nas_identifier: Option<String>,
    /// `radius`: Accounting-Requests (RFC 2866: each client's sessions as Start,
    /// Interim-Update, Stop in turn) to an accounting port instead of PAP requests.
    #[serde(default)]
    pub accounting: Option<bool>,
    /// `radius` with `accounting`: every request is an Accounting-On (the NAS restarted:
    /// "close all my sessions"), as every access point sends after a controller reboot.
    #[serde(default)]
    pub accounting_on: Option<bool>,
    /// `radius`: RadSec (RADIUS over TLS, RFC 6614) instead of UDP: `{ ca, cert, key,
    /// server_name, versions }`, the NAS's client certificate and the CA of the server's.
    /// The shared secret is then "radsec" unless `secret`/`secret_env` say otherwise.
    #[serde(default)]
    pub radsec: Option<crate::tls::RawTls>,
    /// `radius` with `radsec`: RADIUS/1.1 (RFC 9765): offer only ALPN "radius/1.1" (a
    /// server that does not agree is a connection error) and send no MD5 at all (Token,
    /// User-Password in the clear inside TLS, no Message-Authenticator).
    #[serde(default)]
    pub radius_1_1: Option<bool>,
    /// `radius`: 802.1X logins (EAP-TLS or EAP-TTLS/PAP) instead of PAP requests, for
    /// every group (a group's own `eap` overrides it key by key).
    #[serde(default)]
    pub eap: Option<RawEap>,
    /// `ldap`: the directory's layout, how users are found and what is read after the
    /// bind (`[driver.ldap]`).
    #[serde(default)]
    pub ldap: Option<RawLdap>,
}

/// `[driver.ldap]` (with `kind = "ldap"`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RawLdap {
    /// Base DN of the directory (where users are searched for).
    pub base_dn: String,
    /// Bind with this DN, `{user}` standing for the user name (e.g.
    /// `uid={user},ou=people,dc=example,dc=org`). Give this, or `service_dn` and `filter`.
    #[serde(default)]
    pub user_dn: Option<String>,
    /// Search-then-bind: the service account's DN.
    #[serde(default)]
    pub service_dn: Option<String>,
    /// Search-then-bind: the service account's password (or `service_password_env`).
    #[serde(default)]
    pub service_password: Option<String>,
    /// Search-then-bind: the environment variable holding the service account's password.
    #[serde(default)]
    pub service_password_env: Option<String>,
    /// Search-then-bind: the filter that finds the user's entry under `base_dn`, `{user}`
    /// standing for the user name (default `(uid={user})`).
    #[serde(default)]
    pub filter: Option<String>,
    /// StartTLS (RFC 4511 §4.14) on an `ldap://` target before anything else.
    #[serde(default)]
    pub starttls: Option<bool>,
    /// After the bind, read the user's own entry (base search), as applications do to
    /// get the name and mail (default true).
    #[serde(default)]
    pub read_entry: Option<bool>,
    /// Attributes asked for when reading the entry (default cn, mail, memberOf).
    #[serde(default)]
    pub attributes: Option<Vec<String>>,
    /// After the bind, also search `base_dn` for the user's groups with this filter
    /// (`{dn}`: the user's DN, `{user}`: the name), e.g. `(member={dn})`; as the service
    /// account (bound again) with search-then-bind, else as the user.
    #[serde(default)]
    pub group_filter: Option<String>,
}

/// `eap = { ... }` on `[driver]` (every group) or on a group (its own, key by key over the
/// driver's): each virtual client is a station running whole EAP logins.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RawEap {
    /// `"tls"` (EAP-TLS, a client certificate) or `"ttls"` (EAP-TTLS, inner PAP with the
    /// group's credentials).
    #[serde(default)]
    pub method: Option<String>,
    /// Each station keeps its TLS session cache across logins, so logins after its first
    /// resume (default false: a full handshake every login).
    #[serde(default)]
    pub resume: Option<bool>,
    /// PEM bundle of the CAs the server's certificate must chain to (required).
    #[serde(default)]
    pub ca: Option<String>,
    /// Name the server's certificate must carry (default: the target's host).
    #[serde(default)]
    pub server_name: Option<String>,
    /// `["1.2"]`, `["1.3"]` or both (default both; the server picks).
    #[serde(default)]
    pub versions: Option<Vec<String>>,
    /// EAP-TLS: the client certificate chain (PEM) every station of the group presents.
    #[serde(default)]
    pub cert: Option<String>,
    /// EAP-TLS: its private key (PEM).
    #[serde(default)]
    pub key: Option<String>,
    /// EAP-TTLS: the outer identity (e.g. `"anonymous"`; default the user name).
    #[serde(default)]
    pub anonymous_identity: Option<String>,
}

impl RawEap {
    /// `self`'s keys over `base`'s.
    pub fn over(&self, base: &RawEap) -> RawEap {
        let pick = |a: &Option<String>, b: &Option<String>| a.clone().or_else(|| b.clone());
        RawEap {
            method: pick(&self.method, &base.method),
            resume: self.resume.or(base.resume),
            ca: pick(&self.ca, &base.ca),
            server_name: pick(&self.server_name, &base.server_name),
            versions: self.versions.clone().or_else(|| base.versions.clone()),
            cert: pick(&self.cert, &base.cert),
            key: pick(&self.key, &base.key),
            anonymous_identity: pick(&self.anonymous_identity, &base.anonymous_identity),
        }
    }
}

/// `[principals]`: either generated (`prefix` + n, secret `secret_prefix` + n) or a file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPrincipals {
    /// Id of principal n is `prefix` followed by n (default `lab-client-`).
    #[serde(default)]
    pub prefix: Option<String>,
    /// Secret of principal n is `secret_prefix` followed by n (default `lab-secret-`).
    #[serde(default)]
    pub secret_prefix: Option<String>,
    /// How many generated principals exist on the target.
    #[serde(default)]
    pub count: Option<usize>,
    /// Alternatively: a file of `id,secret` lines (relative to the scenario file).
    #[serde(default)]
    pub file: Option<String>,
}

/// `[run]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRun {
    /// Length of one repeat (default `"10s"`).
    #[serde(default = "default_duration")]
    pub duration: String,
    /// Closed-loop clients start evenly spread over this; open-loop rates rise from zero
    /// over it (default `"0s"`).
    #[serde(default = "default_zero")]
    pub ramp_up: String,
    /// How many times the whole run is repeated (default 1).
    #[serde(default = "default_one")]
    pub repeats: u32,
    /// Seed for Poisson arrivals and think-time jitter (default 1).
    #[serde(default = "default_one_u64")]
    pub seed: u64,
    /// Per-request timeout, counted from the intended send time (default `"10s"`).
    #[serde(default = "default_timeout")]
    pub timeout: String,
    /// Cap on requests per repeat (default 1,000,000; hard ceiling 20,000,000).
    #[serde(default = "default_max_requests")]
    pub max_requests: u64,
}

impl Default for RawRun {
    fn default() -> Self {
        RawRun {
            duration: default_duration(),
            ramp_up: default_zero(),
            repeats: 1,
            seed: 1,
            timeout: default_timeout(),
            max_requests: default_max_requests(),
        }
    }
}

fn default_duration() -> String {
    "10s".into()
}
fn default_zero() -> String {
    "0s".into()
}
fn default_one() -> u32 {
    1
}
fn default_one_u64() -> u64 {
    1
}
fn default_timeout() -> String {
    "10s".into()
}
fn default_max_requests() -> u64 {
    1_000_000
}

/// `[[group]]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawGroup {
    /// Group name (unique).
    pub name: String,
    /// `"valid"`, `"wrong_secret"`, `"unknown_principal"` or `"file"` (default `"valid"`).
    #[serde(default = "default_valid")]
    pub credentials: String,
    /// With `credentials = "file"`: `id,secret` lines, relative to the scenario file.
    #[serde(default)]
    pub credentials_file: Option<String>,
    /// With `credentials = "file"`: `"success"` (default) or `"failure"`.
    #[serde(default)]
    pub expect: Option<String>,
    /// Number of clients (each a distinct principal and, with `sources`, a distinct address).
    pub size: usize,
    /// Index of this group's first principal (default: after the previous groups').
    #[serde(default)]
    pub principal_offset: Option<usize>,
    /// How many principals the group's clients share, from `principal_offset`: client i
    /// uses principal offset + (i mod this). `1` makes every client of a guessing group try
    /// the same user (default: `size`, each client its own).
    #[serde(default)]
    pub principal_count: Option<usize>,
    /// `"closed"` (each client waits for its answer, thinks, sends again) or `"open"`
    /// (arrivals at `rate` per second regardless of answers). Default `"closed"`.
    #[serde(default = "default_closed")]
    pub model: String,
    /// Closed loop: pause between an answer and the next request (default `"0s"`).
    #[serde(default)]
    pub think: Option<String>,
    /// Open loop: arrivals per second for the whole group.
    #[serde(default)]
    pub rate: Option<f64>,
    /// Open loop: if set, the rate ramps linearly from `rate` to this over the group's run.
    #[serde(default)]
    pub rate_end: Option<f64>,
    /// Open loop: `"uniform"` (evenly spaced, default) or `"poisson"` (seeded).
    #[serde(default)]
    pub arrival: Option<String>,
    /// Open loop: most requests in flight at once; later arrivals wait (their latency still
    /// counts from the intended time). Default 4096.
    #[serde(default)]
    pub max_outstanding: Option<usize>,
    /// Offset from the start of the run (default `"0s"`).
    #[serde(default)]
    pub start: Option<String>,
    /// How long the group runs (default: until the end of the run).
    #[serde(default)]
    pub duration: Option<String>,
    /// `"keep-alive"` (default), `"per-request"` (new connection, and over HTTPS a full
    /// handshake, per request) or `"per-request-resume"` (new connection per request,
    /// resuming the client's previous TLS session).
    #[serde(default)]
    pub connection: Option<String>,
    /// This group's own TLS settings (default: `[target] tls`).
    #[serde(default)]
    pub tls: Option<crate::tls::RawTls>,
    /// This group's own client authentication (default: `[driver] client_auth`), so one
    /// run can compare methods: `"client_secret_basic"`, `"client_secret_post"`,
    /// `"private_key_jwt"` (with `private_key` here or in `[driver]`) or
    /// `"tls_client_auth"`.
    #[serde(default)]
    pub client_auth: Option<String>,
    /// `private_key_jwt`: this group's signing key (default: `[driver] private_key`).
    #[serde(default)]
    pub private_key: Option<String>,
    /// Local source addresses, e.g. `"127.0.0.2-127.0.0.250"`, `"127.0.0.7"` or
    /// `"127.0.1.1-127.0.100.1 step 256"` (one address per /24); client i binds to
    /// address i mod n before connecting. Default: the OS's choice.
    #[serde(default)]
    pub sources: Option<String>,
    /// Whether clients wait out a `Retry-After` on 429/503 (default true).
    #[serde(default = "default_true", alias = "honor_retry_after")]
    pub honour_retry_after: bool,
    /// `radius`: this group's own EAP settings, key by key over `[driver] eap`.
    #[serde(default)]
    pub eap: Option<RawEap>,
}

fn default_valid() -> String {
    "valid".into()
}
fn default_closed() -> String {
    "closed".into()
}
fn default_true() -> bool {
    true
}

/// `[[threshold]]`: `metric` of `group` (or of all legitimate groups together) must be
/// `>= min` and/or `<= max`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawThreshold {
    /// Group name; absent means all groups expecting success, merged.
    #[serde(default)]
    pub group: Option<String>,
    /// `success_rate`, `p50_ms`, `p90_ms`, `p99_ms`, `p999_ms`, `max_ms`, `throughput`,
    /// `timeout_rate`.
    pub metric: String,
    /// Lower bound.
    #[serde(default)]
    pub min: Option<f64>,
    /// Upper bound.
    #[serde(default)]
    pub max: Option<f64>,
}

/// `[demo]`: settings for the servers `portcullis demo` starts.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawDemo {
    /// Delay before a failed attempt is answered (`"1s"`, `"5s"`).
    #[serde(default)]
    pub reject_delay: Option<String>,
    /// Sets open-loop legitimate groups' rate to this multiple of the measured capacity.
    #[serde(default)]
    pub rate_x_capacity: Option<f64>,
    /// Whether `demo --quick` runs this scenario too (default true; the full demo runs all).
    #[serde(default)]
    pub quick: Option<bool>,
    /// Run it over HTTPS (the demo makes a throwaway CA and server certificate; servers
    /// without TLS sit it out).
    #[serde(default)]
    pub tls: Option<bool>,
    /// Store the clients' secrets as generated secrets are stored (peppered HMAC,
    /// microseconds) instead of the demo's PBKDF2, so connection costs are not hidden
    /// behind the hash.
    #[serde(default)]
    pub generated_secrets: Option<bool>,
    /// EAP scenarios: the demo makes a throwaway CA, server and client certificates and
    /// fills in `eap.ca`, `eap.cert` and `eap.key` (the file may then leave them out).
    #[serde(default)]
    pub eap_pki: Option<bool>,
    /// Run only when `portcullis demo --only` names it (default false).
    #[serde(default)]
    pub on_request: Option<bool>,
    /// `[demo.directory]`: the users live in a directory (slapd behind the lab's delaying
    /// relay) that every server checks passwords against.
    #[serde(default)]
    pub directory: Option<RawDirectory>,
}

/// `[demo.directory]` as written.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawDirectory {
    /// Users `user1` .. `user<users>` in the directory (default: `[principals] count`).
    #[serde(default)]
    pub users: Option<usize>,
    /// How long the relay holds the answer to a failed bind (default `"5s"`).
    #[serde(default)]
    pub failed_bind_delay: Option<String>,
    /// The directory locks an account after this many failed binds (OpenLDAP ppolicy,
    /// `pwdLockout` TRUE); default none.
    #[serde(default)]
    pub ppolicy_max_failure: Option<u32>,
    /// PBKDF2-SHA256 iterations of the users' stored passwords (default 1000: the
    /// directory's own cost is not what the scenario is about).
    #[serde(default)]
    pub pbkdf2_iterations: Option<u32>,
    /// A user (`user<n>`) whose lock state is read at the directory after each run, with
    /// a bind of its right password straight to slapd.
    #[serde(default)]
    pub victim: Option<String>,
    /// Run the groups expected to succeed alone first, so the report gives their
    /// retention under the attack (default true).
    #[serde(default)]
    pub compare_alone: Option<bool>,
}

fn bad(msg: impl Into<String>) -> LabError {
    LabError::Scenario(msg.into())
}

/// Parse a duration such as `"250ms"`, `"2s"`, `"1.5s"`, `"3m"`.
pub fn parse_duration(s: &str) -> Result<Duration, LabError> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => t.split_at(i),
        None => return Err(bad(format!("duration {s:?} needs a unit (ms, s, m)"))),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| bad(format!("duration {s:?}: {num:?} is not a number")))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" => v,
        "m" => v * 60.0,
        _ => return Err(bad(format!("duration {s:?}: unit must be ms, s or m"))),
    };
    if !secs.is_finite() || !(0.0..=safety::MAX_DURATION.as_secs_f64()).contains(&secs) {
        return Err(bad(format!("duration {s:?} out of range")));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parse `"127.0.0.2-127.0.0.250"`, `"127.0.0.7"` or `"a,b,c"` into addresses.
pub fn parse_sources(s: &str) -> Result<Vec<IpAddr>, LabError> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        // `A-B step N`: every Nth address of the range (step 256 = one per /24).
        let (part, step) = match part.split_once(" step ") {
            Some((range, n)) => {
                let n: u32 = n
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| bad(format!("sources: bad step in {part:?}")))?;
                (range.trim(), n)
            }
            None => (part, 1),
        };
        if let Some((a, b)) = part.split_once('-') {
            let a: Ipv4Addr = a
                .trim()
                .parse()
                .map_err(|_| bad(format!("sources: {a:?} is not an IPv4 address")))?;
            let b: Ipv4Addr = b
                .trim()
                .parse()
                .map_err(|_| bad(format!("sources: {b:?} is not an IPv4 address")))?;
            let (a, b) = (u32::from(a), u32::from(b));
            if b < a || (b - a) / step >= 65_536 {
                return Err(bad(format!("sources: bad range {part:?}")));
            }
            out.extend(
                (a..=b)
                    .step_by(step as usize)
                    .map(|v| IpAddr::V4(Ipv4Addr::from(v))),
            );
        } else if step != 1 {
            return Err(bad(format!("sources: step needs a range, not {part:?}")));
        } else {
            out.push(
                part.parse()
                    .map_err(|_| bad(format!("sources: {part:?} is not an IP address")))?,
            );
        }
    }
    if out.is_empty() {
        return Err(bad("sources: empty"));
    }
    Ok(out)
}

pub(super) fn read_pairs(path: &Path) -> Result<Vec<(String, String)>, LabError> {
    let bytes = crate::safety::read_file(path, 256 << 20)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| bad(format!("{} is not UTF-8 text", path.display())))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (id, secret) = line.split_once(',').ok_or_else(|| {
            bad(format!(
                "{}:{}: expected `id,secret`",
                path.display(),
                n + 1
            ))
        })?;
        out.push((id.trim().to_string(), secret.to_string()));
    }
    if out.is_empty() {
        return Err(bad(format!("{} has no `id,secret` lines", path.display())));
    }
    Ok(out)
}
