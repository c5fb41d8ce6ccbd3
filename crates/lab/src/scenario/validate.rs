//! Validation of a scenario file into the typed [`Scenario`]: the target (and its TLS),
//! the driver, principals, run settings, groups and thresholds, each refused with a
//! message naming the key.

use std::path::{Path, PathBuf};

use super::raw::{self, RawScenario, parse_duration, parse_sources, read_pairs};
use super::*;

// ---------------------------------------------------------------------------------------
// Parsing and validation.
// ---------------------------------------------------------------------------------------

fn parse_client_auth(a: &str) -> Result<ClientAuth, LabError> {
    Ok(match a {
        "client_secret_basic" => ClientAuth::ClientSecretBasic,
        "client_secret_post" => ClientAuth::ClientSecretPost,
        "private_key_jwt" => ClientAuth::PrivateKeyJwt,
        "tls_client_auth" | "self_signed_tls_client_auth" => ClientAuth::TlsClientAuth,
        a => return Err(bad(format!("client_auth: unknown method {a:?}"))),
    })
}

/// Whether every group of an HTTPS scenario presents a client certificate (the target's
/// `tls`, or each group's own).
fn target_has_client_cert(raw: &RawScenario, https: bool) -> bool {
    let has = |t: &Option<crate::tls::RawTls>| t.as_ref().is_some_and(|t| t.cert.is_some());
    https
        && raw
            .groups
            .iter()
            .all(|g| has(&g.tls) || (g.tls.is_none() && has(&raw.target.tls)))
}

fn radius_spec(
    d: &raw::RawDriver,
    host: &str,
    resolve: &dyn Fn(&str) -> PathBuf,
) -> Result<RadiusSpec, LabError> {
    if d.grant.is_some()
        || d.client_auth.is_some()
        || d.scope.is_some()
        || d.client_id.is_some()
        || d.client_secret.is_some()
        || d.path.is_some()
    {
        return Err(bad(
            "driver.grant, client_auth, scope, client_id, client_secret and path are not \
             RADIUS settings",
        ));
    }
    let secret = match (&d.secret, &d.secret_env) {
        (Some(s), None) => s.clone().into_bytes(),
        (None, Some(var)) => std::env::var(var)
            .map_err(|_| bad(format!("driver.secret_env: ${var} is not set")))?
            .into_bytes(),
        // RFC 6614 §2.3: over TLS the shared secret is "radsec".
        (None, None) if d.radsec.is_some() => b"radsec".to_vec(),
        (None, None) => return Err(bad("driver: kind = \"radius\" needs secret or secret_env")),
        (Some(_), Some(_)) => return Err(bad("driver: give secret or secret_env, not both")),
    };
    if secret.is_empty() || secret.len() > 128 {
        return Err(bad("driver: the RADIUS shared secret must be 1-128 octets"));
    }
    let retransmit = Duration::from_millis(d.retransmit_ms.unwrap_or(2000));
    if !(Duration::from_millis(10)..=Duration::from_secs(60)).contains(&retransmit) {
        return Err(bad("driver.retransmit_ms must be between 10 and 60000"));
    }
    let retries = d.retries.unwrap_or(2);
    if retries > 10 {
        return Err(bad("driver.retries must be at most 10"));
    }
    let nas_identifier = d
        .nas_identifier
        .clone()
        .unwrap_or_else(|| "portcullis-lab".into());
    if nas_identifier.is_empty() || nas_identifier.len() > 253 {
        return Err(bad("driver.nas_identifier must be 1-253 octets"));
    }
    Ok(RadiusSpec {
        secret,
        retransmit,
        retries,
        require_message_authenticator: d.require_message_authenticator.unwrap_or(true),
        nas_identifier,
        accounting: d.accounting.unwrap_or(false),
        accounting_on: match (d.accounting_on, d.accounting) {
            (Some(true), Some(true)) => true,
            (Some(true), _) => return Err(bad("driver.accounting_on needs accounting = true")),
            _ => false,
        },
        radius_1_1: match (d.radius_1_1, &d.radsec) {
            (Some(true), None) => {
                return Err(bad(
                    "driver.radius_1_1 needs driver.radsec: RADIUS/1.1 is negotiated by TLS ALPN",
                ));
            }
            (v, _) => v.unwrap_or(false),
        },
        radsec: match &d.radsec {
            Some(t) => {
                if t.cert.is_none() || t.key.is_none() {
                    return Err(bad(
                        "driver.radsec needs cert and key: a RadSec NAS proves who it is with \
                         a client certificate",
                    ));
                }
                let abs = |p: &Option<String>| {
                    p.as_ref()
                        .map(|p| resolve(p).to_string_lossy().into_owned())
                };
                let t = crate::tls::RawTls {
                    ca: abs(&t.ca),
                    cert: abs(&t.cert),
                    key: abs(&t.key),
                    server_name: t.server_name.clone(),
                    versions: t.versions.clone(),
                };
                // Built now so a bad file is a scenario error; the driver builds it again.
                crate::tls::TlsSpec::from_raw(&t, host, &|p| PathBuf::from(p))
                    .map_err(|e| bad(format!("driver.radsec: {e}")))?;
                Some(t)
            }
            None => None,
        },
    })
}

/// Group `gi`'s EAP settings: its own `eap` key by key over `[driver] eap`, checked;
/// `None` for a PAP group. With `eap_pki` (the demo makes the certificates) missing
/// `ca`, `cert` and `key` are allowed, and no TLS is built until they are filled in.
pub(super) fn eap_spec(
    raw: &RawScenario,
    gi: usize,
    host: &str,
    base_dir: Option<&Path>,
    eap_pki: bool,
) -> Result<Option<EapSpec>, LabError> {
    let Some(g) = raw.groups.get(gi) else {
        return Ok(None);
    };
    let merged = match (&g.eap, &raw.driver.eap) {
        (None, None) => return Ok(None),
        (Some(own), Some(base)) => own.over(base),
        (Some(own), None) => own.clone(),
        (None, Some(base)) => base.clone(),
    };
    let ctx = |m: &str| bad(format!("group {:?}: eap: {m}", g.name));
    let method = match merged.method.as_deref() {
        Some("tls") => EapMethod::Tls,
        Some("ttls") => EapMethod::Ttls,
        Some(m) => {
            return Err(ctx(&format!(
                "method must be \"tls\" or \"ttls\", not {m:?}"
            )));
        }
        None => return Err(ctx("method is required (\"tls\" or \"ttls\")")),
    };
    match method {
        EapMethod::Tls => {
            if merged.anonymous_identity.is_some() {
                return Err(ctx("anonymous_identity is for method = \"ttls\""));
            }
            if !matches!(g.credentials.as_str(), "valid" | "file") {
                return Err(ctx(
                    "EAP-TLS stations present a certificate, not a password: credentials must \
                     be \"valid\" (guessing stations use method = \"ttls\")",
                ));
            }
            if !eap_pki && (merged.cert.is_none() || merged.key.is_none()) {
                return Err(ctx("method = \"tls\" needs cert and key"));
            }
        }
        EapMethod::Ttls => {
            if merged.cert.is_some() || merged.key.is_some() {
                return Err(ctx("cert and key are for method = \"tls\""));
            }
            if let Some(a) = &merged.anonymous_identity
                && (a.is_empty() || a.len() > 253)
            {
                return Err(ctx("anonymous_identity must be 1-253 octets"));
            }
        }
    }
    if merged.cert.is_some() != merged.key.is_some() {
        return Err(ctx("cert and key go together"));
    }
    let complete = merged.ca.is_some() && (method == EapMethod::Ttls || merged.cert.is_some());
    if !complete && !eap_pki {
        return Err(ctx(
            "ca is required (the CA bundle the server's certificate chains to)",
        ));
    }
    let tls = if complete {
        let resolve = |p: &str| match base_dir {
            Some(d) => d.join(p),
            None => PathBuf::from(p),
        };
        let t = crate::tls::RawTls {
            ca: merged.ca.clone(),
            server_name: merged.server_name.clone(),
            versions: merged.versions.clone(),
            cert: merged.cert.clone(),
            key: merged.key.clone(),
        };
        Some(
            crate::tls::TlsSpec::from_raw(&t, host, &resolve)
                .map_err(|e| ctx(&e.to_string().replace("tls.", "")))?,
        )
    } else {
        None
    };
    Ok(Some(EapSpec {
        method,
        resume: merged.resume.unwrap_or(false),
        tls,
        anonymous_identity: merged.anonymous_identity.clone(),
    }))
}

impl Scenario {
    /// Validate a raw scenario.
    pub fn from_raw(raw: RawScenario, base_dir: Option<&Path>) -> Result<Scenario, LabError> {
        let resolve = |p: &str| match base_dir {
            Some(d) => d.join(p),
            None => PathBuf::from(p),
        };
        let radius = raw.driver.kind == "radius";
        let is_ldap = raw.driver.kind == "ldap";
        let mut ldap_spec = None;
        let (https, host, port) = if radius {
            let (h, p) = safety::parse_url(&raw.target.url, "radius", 1812)?;
            (false, h, p)
        } else if is_ldap {
            let (ldaps, h, p) = ldap::parse_url(&raw.target.url)?;
            let spec = ldap::spec(raw.driver.ldap.as_ref(), ldaps)?;
            let tls = spec.tls();
            ldap_spec = Some(spec);
            (tls, h, p)
        } else {
            if raw.driver.ldap.is_some() {
                return Err(bad("driver.ldap is only for kind = \"ldap\""));
            }
            safety::parse_web_url(&raw.target.url)?
        };
        let resolve_str = |p: &str| resolve(p);
        let target_tls = if let Some(spec) = &ldap_spec {
            ldap::target_tls(raw.target.tls.as_ref(), spec, &host, &resolve_str)?
        } else {
            match (&raw.target.tls, https) {
                (Some(t), true) => Some(crate::tls::TlsSpec::from_raw(t, &host, &resolve_str)?),
                (None, true) => Some(crate::tls::TlsSpec::from_raw(
                    &crate::tls::RawTls::default(),
                    &host,
                    &resolve_str,
                )?),
                (Some(_), false) => return Err(bad("target.tls needs an https:// target url")),
                (None, false) => None,
            }
        };
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
            // A RADIUS target has no HTTP side of its own to take a path against; its
            // metrics are scraped only from an explicit URL (default: off).
            "/metrics" if radius || is_ldap => None,
            p if (radius || is_ldap) && !p.starts_with("http://") => {
                return Err(bad(format!(
                    "with a radius:// or ldap:// target, target.metrics must be \"off\" or an http:// URL, \
                     not {p:?}"
                )));
            }
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
            tls: target_tls,
        };

        let d = &raw.driver;
        if !radius
            && (d.secret.is_some()
                || d.secret_env.is_some()
                || d.retransmit_ms.is_some()
                || d.retries.is_some()
                || d.require_message_authenticator.is_some()
                || d.nas_identifier.is_some()
                || d.accounting.is_some()
                || d.eap.is_some()
                || raw.groups.iter().any(|g| g.eap.is_some()))
        {
            return Err(bad("driver.secret, secret_env, retransmit_ms, retries, \
                 require_message_authenticator, nas_identifier, accounting and eap are only for kind = \"radius\""));
        }
        if d.accounting == Some(true)
            && (d.eap.is_some() || raw.groups.iter().any(|g| g.eap.is_some()))
        {
            return Err(bad(
                "driver.accounting and eap cannot be combined: a scenario drives one port",
            ));
        }
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
                let auth =
                    parse_client_auth(d.client_auth.as_deref().unwrap_or("client_secret_basic"))
                        .map_err(|e| bad(format!("driver.{e}")))?;
                let assertion = match (auth, &d.private_key) {
                    (ClientAuth::PrivateKeyJwt, Some(k)) => {
                        let spec = AssertionSpec {
                            key: resolve(k),
                            alg: d.assertion_alg.clone(),
                            audience: d.assertion_audience.clone(),
                            lifetime_secs: i64::from(d.assertion_lifetime_secs.unwrap_or(60)),
                        };
                        // Refuse a bad key now, not at the first request.
                        crate::assertion::AssertionKey::load(&spec.key, spec.alg.as_deref())?;
                        Some(spec)
                    }
                    (ClientAuth::PrivateKeyJwt, None) => {
                        return Err(bad("driver: private_key_jwt needs driver.private_key"));
                    }
                    (_, Some(k))
                        if raw.groups.iter().any(|g| {
                            g.private_key.is_none()
                                && g.client_auth.as_deref() == Some("private_key_jwt")
                        }) =>
                    {
                        // The driver's key serves groups that switch to private_key_jwt.
                        Some(AssertionSpec {
                            key: resolve(k),
                            alg: d.assertion_alg.clone(),
                            audience: d.assertion_audience.clone(),
                            lifetime_secs: i64::from(d.assertion_lifetime_secs.unwrap_or(60)),
                        })
                    }
                    (_, None)
                        if d.assertion_alg.is_none()
                            && d.assertion_audience.is_none()
                            && d.assertion_lifetime_secs.is_none() =>
                    {
                        None
                    }
                    _ => {
                        return Err(bad(
                            "driver.private_key and assertion_* are only for private_key_jwt",
                        ));
                    }
                };
                if auth == ClientAuth::TlsClientAuth && !target_has_client_cert(&raw, https) {
                    return Err(bad(
                        "driver: tls_client_auth needs an https:// target and tls.cert/tls.key",
                    ));
                }
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
                    assertion,
                }
            }
            "http-get" => {
                let path = d.path.clone().unwrap_or_else(|| "/healthz".into());
                if !path.starts_with('/') {
                    return Err(bad("driver.path must start with '/'"));
                }
                DriverSpec::HttpGet { path }
            }
            "radius" => DriverSpec::Radius(radius_spec(d, &target.host, &resolve_str)?),
            "ldap" => {
                ldap::refuse_other_keys(d)?;
                match ldap_spec {
                    Some(spec) => DriverSpec::Ldap(spec),
                    None => return Err(bad("driver.ldap: no LDAP target")),
                }
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
        if let DriverSpec::Radius(r) = &driver
            && r.retransmit * (r.retries + 1) > run.timeout
        {
            return Err(bad(format!(
                "run.timeout ({:?}) is shorter than the RADIUS retransmission schedule \
                 (retransmit_ms x (retries + 1) = {:?}): the last retransmissions could never \
                 be answered",
                run.timeout,
                r.retransmit * (r.retries + 1)
            )));
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
                    let f = g.credentials_file.as_deref().ok_or_else(|| {
                        ctx("credentials = \"file\" needs credentials_file".into())
                    })?;
                    let expect_success = match g.expect.as_deref().unwrap_or("success") {
                        "success" => true,
                        "failure" => false,
                        e => {
                            return Err(ctx(format!(
                                "expect must be success or failure, not {e:?}"
                            )));
                        }
                    };
                    Credentials::File {
                        pairs: read_pairs(&resolve(f))?,
                        expect_success,
                    }
                }
                c => return Err(ctx(format!("unknown credentials {c:?}"))),
            };
            let principal_offset = g.principal_offset.unwrap_or(next_principal);
            let principal_count = g.principal_count.unwrap_or(g.size);
            if principal_count == 0 || principal_count > g.size {
                return Err(ctx("principal_count must be 1..=size".into()));
            }
            if matches!(credentials, Credentials::Valid | Credentials::WrongSecret)
                && !matches!(driver, DriverSpec::HttpGet { .. })
            {
                let end = principal_offset + principal_count;
                if end > principals.len() {
                    return Err(ctx(format!(
                        "needs principals {principal_offset}..{end} but [principals] has {}",
                        principals.len()
                    )));
                }
                next_principal = next_principal.max(end);
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
                return Err(ctx(
                    "start + duration must fit in run.duration and be > start".into(),
                ));
            }
            let model = match g.model.as_str() {
                "closed" => {
                    if g.rate.is_some()
                        || g.rate_end.is_some()
                        || g.arrival.is_some()
                        || g.max_outstanding.is_some()
                    {
                        return Err(ctx(
                            "rate, rate_end, arrival and max_outstanding are for model = \"open\""
                                .into(),
                        ));
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
                    let rate = g
                        .rate
                        .ok_or_else(|| ctx("model = \"open\" needs rate".into()))?;
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
                        a => {
                            return Err(ctx(format!(
                                "arrival must be uniform or poisson, not {a:?}"
                            )));
                        }
                    };
                    let max_outstanding = g.max_outstanding.unwrap_or(4096);
                    if max_outstanding == 0 || max_outstanding > safety::MAX_CLIENTS {
                        return Err(ctx(format!(
                            "max_outstanding must be 1..={}",
                            safety::MAX_CLIENTS
                        )));
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
                "per-request-resume" => ConnectionMode::PerRequestResume,
                c => {
                    return Err(ctx(format!(
                        "connection must be keep-alive, per-request or per-request-resume, \
                         not {c:?}"
                    )));
                }
            };
            let auth = match (&driver, &g.client_auth, &g.private_key) {
                (_, None, None) => None,
                (DriverSpec::OAuth2 { assertion, .. }, Some(a), key) => {
                    let a = parse_client_auth(a).map_err(|e| ctx(e.to_string()))?;
                    let spec = match (a, key, assertion) {
                        (ClientAuth::PrivateKeyJwt, Some(k), base) => {
                            let spec = AssertionSpec {
                                key: resolve(k),
                                alg: None,
                                audience: base.as_ref().and_then(|b| b.audience.clone()),
                                lifetime_secs: base.as_ref().map_or(60, |b| b.lifetime_secs),
                            };
                            crate::assertion::AssertionKey::load(&spec.key, None)
                                .map_err(|e| ctx(e.to_string()))?;
                            Some(spec)
                        }
                        (ClientAuth::PrivateKeyJwt, None, Some(base)) => Some(base.clone()),
                        (ClientAuth::PrivateKeyJwt, None, None) => {
                            return Err(ctx(
                                "private_key_jwt needs private_key (here or in [driver])".into(),
                            ));
                        }
                        (_, Some(_), _) => {
                            return Err(ctx("private_key is only for private_key_jwt".into()));
                        }
                        (_, None, _) => None,
                    };
                    if a == ClientAuth::TlsClientAuth
                        && g.tls
                            .as_ref()
                            .or(raw.target.tls.as_ref())
                            .is_none_or(|t| t.cert.is_none())
                    {
                        return Err(ctx("tls_client_auth needs tls.cert and tls.key".into()));
                    }
                    Some((a, spec))
                }
                _ => {
                    return Err(ctx(
                        "client_auth and private_key are for the oauth2 driver".into()
                    ));
                }
            };
            let tls = match (&g.tls, &target.tls) {
                (Some(t), Some(_)) => Some(
                    crate::tls::TlsSpec::from_raw(t, &target.host, &resolve_str)
                        .map_err(|e| ctx(e.to_string()))?,
                ),
                (Some(_), None) => return Err(ctx("tls needs an https:// target url".into())),
                (None, t) => t.clone(),
            };
            let sources = match &g.sources {
                Some(s) => parse_sources(s).map_err(|e| ctx(e.to_string()))?,
                None => Vec::new(),
            };
            let eap = eap_spec(
                &raw,
                groups.len(),
                &target.host,
                base_dir,
                raw.demo.eap_pki.unwrap_or(false),
            )?;
            groups.push(GroupSpec {
                name: g.name.clone(),
                credentials,
                size: g.size,
                principal_offset,
                principal_count,
                model,
                start,
                duration,
                connection,
                tls,
                auth,
                sources,
                honour_retry_after: g.honour_retry_after,
                eap,
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
                return Err(bad(format!(
                    "threshold on {}: give min and/or max",
                    t.metric
                )));
            }
            thresholds.push(Threshold {
                group: t.group.clone(),
                metric,
                min: t.min,
                max: t.max,
            });
        }

        let demo = DemoSpec {
            reject_delay: raw
                .demo
                .reject_delay
                .as_deref()
                .map(parse_duration)
                .transpose()?,
            rate_x_capacity: raw.demo.rate_x_capacity,
            quick: raw.demo.quick.unwrap_or(true),
            tls: raw.demo.tls.unwrap_or(false),
            generated_secrets: raw.demo.generated_secrets.unwrap_or(false),
            eap_pki: raw.demo.eap_pki.unwrap_or(false),
            on_request: raw.demo.on_request.unwrap_or(false),
            directory: super::directory::spec(&raw, &driver, &principals, &groups)?,
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
            base_dir: base_dir.map(Path::to_path_buf),
        })
    }
}
