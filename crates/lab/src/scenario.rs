//! Scenario files: the TOML a person writes (`Raw*`, `deny_unknown_fields`) and the
//! validated, typed [`Scenario`] the runner executes.
//!
//! A scenario names a target, a driver (how one attempt is made), the principals it may use,
//! whole-run settings (ramp-up, duration, repeats, seed, caps) and groups of virtual clients.
//! Each group has its own credentials, load model (closed loop with think time, or open loop
//! at a constant or ramping arrival rate), timing, connection mode and source addresses.
//! Thresholds decide the exit code. See `scenarios/README.md` for the annotated format.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::LabError;
use crate::safety;

/// Built-in scenarios shipped in `scenarios/`: (name, TOML text).
pub const BUILTIN: &[(&str, &str)] = &[
    ("baseline-10-valid", include_str!("../../../scenarios/baseline-10-valid.toml")),
    ("brute-force-2x1s", include_str!("../../../scenarios/brute-force-2x1s.toml")),
    ("brute-force-3x1s", include_str!("../../../scenarios/brute-force-3x1s.toml")),
    ("brute-force-4x1s", include_str!("../../../scenarios/brute-force-4x1s.toml")),
    ("brute-force-2x5s", include_str!("../../../scenarios/brute-force-2x5s.toml")),
    ("connect-per-request", include_str!("../../../scenarios/connect-per-request.toml")),
    ("overload-2x", include_str!("../../../scenarios/overload-2x.toml")),
    ("healthz-peak", include_str!("../../../scenarios/healthz-peak.toml")),
];

/// Look up a built-in scenario by name.
pub fn builtin(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

// ---------------------------------------------------------------------------------------
// The file format.
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
    /// `"oauth2"` (token endpoint) or `"http-get"` (trivial GET of `path`, for tool comparisons).
    pub kind: String,
    /// OAuth2 grant: `"client_credentials"` (default) or `"password"`.
    #[serde(default)]
    pub grant: Option<String>,
    /// OAuth2 client authentication: `"client_secret_basic"` (default) or `"client_secret_post"`.
    #[serde(default)]
    pub client_auth: Option<String>,
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
    /// `"keep-alive"` (default) or `"per-request"` (new connection per request).
    #[serde(default)]
    pub connection: Option<String>,
    /// Local source addresses, e.g. `"127.0.0.2-127.0.0.250"` or `"127.0.0.7"`; client i
    /// binds to address i mod n before connecting. Default: the OS's choice.
    #[serde(default)]
    pub sources: Option<String>,
    /// Whether clients wait out a `Retry-After` on 429/503 (default true).
    #[serde(default = "default_true", alias = "honor_retry_after")]
    pub honour_retry_after: bool,
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
    },
    /// `GET path`, expecting 200.
    HttpGet {
        /// Request path.
        path: String,
    },
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
}

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

/// Connection handling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectionMode {
    /// Reuse one connection per client.
    KeepAlive,
    /// Open a new connection for every request.
    PerRequest,
}

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
    /// Load model.
    pub model: Model,
    /// Start offset.
    pub start: Duration,
    /// Length.
    pub duration: Duration,
    /// Connection mode.
    pub connection: ConnectionMode,
    /// Source addresses (empty: OS choice).
    pub sources: Vec<IpAddr>,
    /// Whether Retry-After is honoured.
    pub honour_retry_after: bool,
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
}

// ---------------------------------------------------------------------------------------
// Parsing and validation.
// ---------------------------------------------------------------------------------------

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
            if b < a || b - a >= 65_536 {
                return Err(bad(format!("sources: bad range {part:?}")));
            }
            out.extend((a..=b).map(|v| IpAddr::V4(Ipv4Addr::from(v))));
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

fn read_pairs(path: &Path) -> Result<Vec<(String, String)>, LabError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
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

    /// Validate a raw scenario.
    pub fn from_raw(raw: RawScenario, base_dir: Option<&Path>) -> Result<Scenario, LabError> {
        let resolve = |p: &str| match base_dir {
            Some(d) => d.join(p),
            None => PathBuf::from(p),
        };
        let (host, port) = safety::parse_http_url(&raw.target.url)?;
        if !raw.target.token_path.starts_with('/') {
            return Err(bad("target.token_path must start with '/'"));
        }
        let jwks = match raw.target.jwks.as_str() {
            "discover" => JwksSource::Discover,
            p if p.starts_with('/') => JwksSource::Path(p.to_string()),
            other => {
                return Err(bad(format!(
                    "target.jwks must be \"discover\" or a path starting with '/', not {other:?}"
                )));
            }
        };
        let metrics = match raw.target.metrics.as_str() {
            "off" => None,
            p if p.starts_with('/') || p.starts_with("http://") => Some(p.to_string()),
            other => {
                return Err(bad(format!(
                    "target.metrics must be \"off\", a path or an http:// URL, not {other:?}"
                )));
            }
        };
        let target = Target {
            host,
            port,
            token_path: raw.target.token_path.clone(),
            jwks,
            metrics,
            issuer: raw.target.issuer.clone(),
        };

        let d = &raw.driver;
        let driver = match d.kind.as_str() {
            "oauth2" => {
                if d.path.is_some() {
                    return Err(bad("driver.path is only for kind = \"http-get\""));
                }
                let grant = match d.grant.as_deref().unwrap_or("client_credentials") {
                    "client_credentials" => Grant::ClientCredentials,
                    "password" => Grant::Password,
                    g => return Err(bad(format!("driver.grant: unknown grant {g:?}"))),
                };
                let auth = match d.client_auth.as_deref().unwrap_or("client_secret_basic") {
                    "client_secret_basic" => ClientAuth::ClientSecretBasic,
                    "client_secret_post" => ClientAuth::ClientSecretPost,
                    a => return Err(bad(format!("driver.client_auth: unknown method {a:?}"))),
                };
                let app_client = match (grant, &d.client_id, &d.client_secret) {
                    (Grant::Password, Some(id), Some(s)) => Some((id.clone(), s.clone())),
                    (Grant::Password, _, _) => {
                        return Err(bad(
                            "driver: the password grant needs client_id and client_secret",
                        ));
                    }
                    (Grant::ClientCredentials, None, None) => None,
                    (Grant::ClientCredentials, _, _) => {
                        return Err(bad(
                            "driver.client_id/client_secret are only for the password grant \
                             (client_credentials clients are the principals)",
                        ));
                    }
                };
                DriverSpec::OAuth2 {
                    grant,
                    auth,
                    scope: d.scope.clone(),
                    app_client,
                }
            }
            "http-get" => {
                let path = d.path.clone().unwrap_or_else(|| "/healthz".into());
                if !path.starts_with('/') {
                    return Err(bad("driver.path must start with '/'"));
                }
                DriverSpec::HttpGet { path }
            }
            "radius" => {
                return Err(bad(
                    "driver.kind \"radius\" is planned (the Driver trait is ready for it) \
                     but not built yet",
                ));
            }
            k => return Err(bad(format!("driver.kind: unknown driver {k:?}"))),
        };

        let principals = match &raw.principals {
            None => Principals::Generated {
                prefix: "lab-client-".into(),
                secret_prefix: "lab-secret-".into(),
                count: 0,
            },
            Some(p) => match (&p.file, p.count) {
                (Some(f), None) if p.prefix.is_none() && p.secret_prefix.is_none() => {
                    Principals::List(read_pairs(&resolve(f))?)
                }
                (Some(_), _) => {
                    return Err(bad(
                        "principals: give either file or prefix/secret_prefix/count",
                    ));
                }
                (None, count) => Principals::Generated {
                    prefix: p.prefix.clone().unwrap_or_else(|| "lab-client-".into()),
                    secret_prefix: p
                        .secret_prefix
                        .clone()
                        .unwrap_or_else(|| "lab-secret-".into()),
                    count: count.unwrap_or(0),
                },
            },
        };

        let run = RunSpec {
            duration: parse_duration(&raw.run.duration)?,
            ramp_up: parse_duration(&raw.run.ramp_up)?,
            repeats: raw.run.repeats,
            seed: raw.run.seed,
            timeout: parse_duration(&raw.run.timeout)?,
            max_requests: raw.run.max_requests,
        };
        if run.repeats == 0 || run.repeats > safety::MAX_REPEATS {
            return Err(bad(format!(
                "run.repeats must be 1..={}",
                safety::MAX_REPEATS
            )));
        }
        if run.duration.is_zero() {
            return Err(bad("run.duration must be positive"));
        }
        if run.timeout.is_zero() {
            return Err(bad("run.timeout must be positive"));
        }
        if run.max_requests == 0 || run.max_requests > safety::MAX_REQUESTS {
            return Err(bad(format!(
                "run.max_requests must be 1..={}",
                safety::MAX_REQUESTS
            )));
        }

        if raw.groups.is_empty() {
            return Err(bad("at least one [[group]] is needed"));
        }
        let mut groups = Vec::new();
        let mut next_principal = 0usize;
        let mut total_clients = 0usize;
        for g in &raw.groups {
            let gname = &g.name;
            let ctx = |m: String| bad(format!("group {gname:?}: {m}"));
            if g.name.is_empty() || groups.iter().any(|x: &GroupSpec| x.name == g.name) {
                return Err(ctx("names must be non-empty and unique".into()));
            }
            if g.size == 0 {
                return Err(ctx("size must be at least 1".into()));
            }
            total_clients += g.size;
            if g.credentials != "file" && (g.credentials_file.is_some() || g.expect.is_some()) {
                return Err(ctx(
                    "credentials_file and expect are only for credentials = \"file\"".into(),
                ));
            }
            let credentials = match g.credentials.as_str() {
                "valid" => Credentials::Valid,
                "wrong_secret" => Credentials::WrongSecret,
                "unknown_principal" => Credentials::UnknownPrincipal,
                "file" => {
                    let f = g
                        .credentials_file
                        .as_deref()
                        .ok_or_else(|| ctx("credentials = \"file\" needs credentials_file".into()))?;
                    let expect_success = match g.expect.as_deref().unwrap_or("success") {
                        "success" => true,
                        "failure" => false,
                        e => return Err(ctx(format!("expect must be success or failure, not {e:?}"))),
                    };
                    Credentials::File {
                        pairs: read_pairs(&resolve(f))?,
                        expect_success,
                    }
                }
                c => return Err(ctx(format!("unknown credentials {c:?}"))),
            };
            let principal_offset = g.principal_offset.unwrap_or(next_principal);
            if matches!(credentials, Credentials::Valid | Credentials::WrongSecret)
                && matches!(driver, DriverSpec::OAuth2 { .. })
            {
                if principal_offset + g.size > principals.len() {
                    return Err(ctx(format!(
                        "needs principals {}..{} but [principals] has {}",
                        principal_offset,
                        principal_offset + g.size,
                        principals.len()
                    )));
                }
                next_principal = next_principal.max(principal_offset + g.size);
            }
            let start = match &g.start {
                Some(s) => parse_duration(s)?,
                None => Duration::ZERO,
            };
            if start >= run.duration {
                return Err(ctx("start must be before the end of the run".into()));
            }
            let duration = match &g.duration {
                Some(s) => parse_duration(s)?,
                None => run.duration - start,
            };
            if duration.is_zero() || start + duration > run.duration {
                return Err(ctx("start + duration must fit in run.duration and be > start".into()));
            }
            let model = match g.model.as_str() {
                "closed" => {
                    if g.rate.is_some() || g.rate_end.is_some() || g.arrival.is_some() || g.max_outstanding.is_some() {
                        return Err(ctx("rate, rate_end, arrival and max_outstanding are for model = \"open\"".into()));
                    }
                    Model::Closed {
                        think: match &g.think {
                            Some(t) => parse_duration(t)?,
                            None => Duration::ZERO,
                        },
                    }
                }
                "open" => {
                    if g.think.is_some() {
                        return Err(ctx("think is for model = \"closed\"".into()));
                    }
                    let rate = g.rate.ok_or_else(|| ctx("model = \"open\" needs rate".into()))?;
                    let rate_end = g.rate_end.unwrap_or(rate);
                    for r in [rate, rate_end] {
                        if !r.is_finite() || !(0.0..=safety::MAX_RATE).contains(&r) {
                            return Err(ctx(format!("rate must be 0..={}", safety::MAX_RATE)));
                        }
                    }
                    if rate == 0.0 && rate_end == 0.0 {
                        return Err(ctx("rate and rate_end cannot both be 0".into()));
                    }
                    let poisson = match g.arrival.as_deref().unwrap_or("uniform") {
                        "uniform" => false,
                        "poisson" => true,
                        a => return Err(ctx(format!("arrival must be uniform or poisson, not {a:?}"))),
                    };
                    let max_outstanding = g.max_outstanding.unwrap_or(4096);
                    if max_outstanding == 0 || max_outstanding > safety::MAX_CLIENTS {
                        return Err(ctx(format!("max_outstanding must be 1..={}", safety::MAX_CLIENTS)));
                    }
                    Model::Open {
                        rate,
                        rate_end,
                        poisson,
                        max_outstanding,
                    }
                }
                m => return Err(ctx(format!("model must be closed or open, not {m:?}"))),
            };
            let connection = match g.connection.as_deref().unwrap_or("keep-alive") {
                "keep-alive" => ConnectionMode::KeepAlive,
                "per-request" => ConnectionMode::PerRequest,
                c => return Err(ctx(format!("connection must be keep-alive or per-request, not {c:?}"))),
            };
            let sources = match &g.sources {
                Some(s) => parse_sources(s).map_err(|e| ctx(e.to_string()))?,
                None => Vec::new(),
            };
            groups.push(GroupSpec {
                name: g.name.clone(),
                credentials,
                size: g.size,
                principal_offset,
                model,
                start,
                duration,
                connection,
                sources,
                honour_retry_after: g.honour_retry_after,
            });
        }
        if total_clients > safety::MAX_CLIENTS {
            return Err(bad(format!(
                "{total_clients} clients in all; the ceiling is {}",
                safety::MAX_CLIENTS
            )));
        }

        let mut thresholds = Vec::new();
        for t in &raw.thresholds {
            if let Some(g) = &t.group
                && !groups.iter().any(|x| &x.name == g)
            {
                return Err(bad(format!("threshold names unknown group {g:?}")));
            }
            let metric = match t.metric.as_str() {
                "success_rate" => Metric::SuccessRate,
                "p50_ms" => Metric::P50Ms,
                "p90_ms" => Metric::P90Ms,
                "p99_ms" => Metric::P99Ms,
                "p999_ms" => Metric::P999Ms,
                "max_ms" => Metric::MaxMs,
                "throughput" => Metric::Throughput,
                "timeout_rate" => Metric::TimeoutRate,
                m => return Err(bad(format!("threshold: unknown metric {m:?}"))),
            };
            if t.min.is_none() && t.max.is_none() {
                return Err(bad(format!("threshold on {}: give min and/or max", t.metric)));
            }
            thresholds.push(Threshold {
                group: t.group.clone(),
                metric,
                min: t.min,
                max: t.max,
            });
        }

        let demo = DemoSpec {
            reject_delay: raw.demo.reject_delay.as_deref().map(parse_duration).transpose()?,
            rate_x_capacity: raw.demo.rate_x_capacity,
            quick: raw.demo.quick.unwrap_or(true),
        };

        Ok(Scenario {
            raw,
            target,
            driver,
            principals,
            run,
            groups,
            thresholds,
            demo,
        })
    }

    /// Point the scenario at another base URL (`--target`), keeping everything else.
    pub fn with_target_url(mut self, url: &str) -> Result<Scenario, LabError> {
        let (host, port) = safety::parse_http_url(url)?;
        self.target.host = host;
        self.target.port = port;
        self.raw.target.url = url.to_string();
        Ok(self)
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
                Model::Open { rate, rate_end, .. } => (rate + rate_end) / 2.0 * g.duration.as_secs_f64(),
                Model::Closed { .. } => 0.0,
            })
            .sum()
    }
}

#[cfg(test)]
#[path = "scenario_tests.rs"]
mod tests;
