//! Prometheus metrics: the process-wide recorder, the `/metrics` rendering, and the HTTP
//! middleware that counts requests by route and status, times them and tracks in-flight.
//!
//! `metrics` has one global recorder per process, and the core records through it too, so
//! it is installed once ([`install`]) and every server in the process shares its handle.
//! Durations are configured with explicit buckets so they render as Prometheus histograms
//! (aggregatable across instances), not summaries. The exporter's own HTTP listener is
//! compiled out: `/metrics` is a route of our server.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Request duration metric (seconds histogram).
pub const HTTP_DURATION: &str = "http_request_duration_seconds";
/// Requests by route and status (counter).
pub const HTTP_REQUESTS: &str = "http_requests_total";
/// Requests being handled (gauge).
pub const HTTP_IN_FLIGHT: &str = "http_requests_in_flight";
/// Tokens issued by grant type (counter).
pub const TOKENS_ISSUED: &str = "oauth_tokens_issued_total";
/// OAuth error answers by code (counter).
pub const OAUTH_ERRORS: &str = "oauth_errors_total";
/// Store failures seen by the front end (counter).
pub const STORE_ERRORS: &str = "store_errors_total";
/// Requests whose source came from a trusted proxy's forwarding header (counter).
pub const FORWARDED: &str = "portcullis_forwarded_requests_total";

/// TLS handshakes completed, by kind (full or resumed) and version (counter).
pub const TLS_HANDSHAKES: &str = "portcullis_tls_handshakes_total";
/// TLS handshakes that failed or timed out (counter).
pub const TLS_HANDSHAKE_FAILURES: &str = "portcullis_tls_handshake_failures_total";
/// TLS connections that presented a client certificate (counter).
pub const TLS_CLIENT_CERTS: &str = "portcullis_tls_client_certificates_total";

/// Count a completed handshake of `conn`; whether it resumed a session.
pub fn tls_handshake(conn: &rustls::ServerConnection) -> bool {
    let resumed = conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    let kind = if resumed { "resumed" } else { "full" };
    let version = match conn.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_2) => "1.2",
        _ => "1.3",
    };
    metrics::counter!(TLS_HANDSHAKES, "kind" => kind, "version" => version).increment(1);
    if conn.peer_certificates().is_some_and(|c| !c.is_empty()) {
        metrics::counter!(TLS_CLIENT_CERTS).increment(1);
    }
    resumed
}

/// Buckets for request and verification latencies: 100 µs to 10 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Install the Prometheus recorder (once per process) and return its handle. If some
/// other recorder was installed first (an embedding application's), our handle renders
/// only what reaches it, which is nothing; that is logged, not fatal.
pub fn install() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS);
            let builder = match builder {
                Ok(b) => b,
                // Only fails for an empty bucket list, which LATENCY_BUCKETS is not.
                Err(e) => unreachable!("bucket configuration rejected: {e}"),
            };
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            if let Err(e) = metrics::set_global_recorder(recorder) {
                tracing::warn!("metrics recorder already installed elsewhere: {e}");
            }
            describe();
            handle
        })
        .clone()
}

fn describe() {
    metrics::describe_histogram!(
        HTTP_DURATION,
        metrics::Unit::Seconds,
        "HTTP request duration by route"
    );
    metrics::describe_counter!(HTTP_REQUESTS, "HTTP requests by route and status");
    metrics::describe_gauge!(HTTP_IN_FLIGHT, "HTTP requests being handled");
    metrics::describe_counter!(TOKENS_ISSUED, "Access tokens issued by grant type");
    metrics::describe_counter!(OAUTH_ERRORS, "OAuth error answers by error code");
    metrics::describe_counter!(STORE_ERRORS, "Store failures answered with 503");
    metrics::describe_counter!(
        FORWARDED,
        "Credential requests whose source address a trusted proxy forwarded"
    );
    metrics::describe_counter!(
        crate::audit::EVENTS,
        "Audit events by outcome (all of them, written or summarised)"
    );
    metrics::describe_counter!(
        crate::audit::SUPPRESSED,
        "Audit events folded into a per-prefix summary under a flood"
    );
    metrics::describe_counter!(
        crate::audit::DROPPED,
        "Audit lines lost because the file writer fell behind or failed"
    );
    metrics::describe_counter!(
        TLS_HANDSHAKES,
        "TLS handshakes completed, by kind (full or resumed with a ticket or session id) and version"
    );
    metrics::describe_counter!(
        TLS_HANDSHAKE_FAILURES,
        "TLS handshakes that failed or did not finish within header_timeout_ms"
    );
    metrics::describe_counter!(
        TLS_CLIENT_CERTS,
        "TLS connections whose client presented a certificate"
    );
    // Series at zero from the start: dashboards and alert rules see 0, not nothing.
    for kind in ["full", "resumed"] {
        for version in ["1.2", "1.3"] {
            metrics::counter!(TLS_HANDSHAKES, "kind" => kind, "version" => version).increment(0);
        }
    }
    metrics::counter!(TLS_HANDSHAKE_FAILURES).increment(0);
    metrics::counter!(TLS_CLIENT_CERTS).increment(0);
    metrics::counter!(STORE_ERRORS).increment(0);
    metrics::counter!(FORWARDED).increment(0);
    metrics::counter!(CONNECTIONS_REFUSED, "reason" => "per_source").increment(0);
    metrics::counter!(crate::audit::SUPPRESSED).increment(0);
    metrics::counter!(crate::audit::DROPPED).increment(0);
    for o in portcullis_core::AuditOutcome::ALL {
        metrics::counter!(crate::audit::EVENTS, "outcome" => o.label()).increment(0);
    }
    for e in ["invalid_request", "invalid_client", "invalid_grant"] {
        metrics::counter!(OAUTH_ERRORS, "error" => e).increment(0);
    }
}

/// Run the recorder's housekeeping (drains histogram buckets) every few seconds until
/// `shutdown` resolves.
pub async fn upkeep(handle: PrometheusHandle, shutdown: tokio_util::sync::CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => handle.run_upkeep(),
            () = shutdown.cancelled() => return,
        }
    }
}

/// Stable, bounded route label: the matched route pattern, or "unmatched" (so a scanner
/// probing random paths cannot create unbounded label sets).
fn route_label(req: &Request) -> &'static str {
    match req
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str)
    {
        Some("/oauth2/token") => "/oauth2/token",
        Some("/oauth2/introspect") => "/oauth2/introspect",
        Some("/oauth2/revoke") => "/oauth2/revoke",
        Some("/oauth2/jwks") => "/oauth2/jwks",
        Some("/.well-known/oauth-authorization-server") => {
            "/.well-known/oauth-authorization-server"
        }
        Some("/.well-known/openid-configuration") => "/.well-known/openid-configuration",
        Some("/metrics") => "/metrics",
        Some("/healthz") => "/healthz",
        Some("/readyz") => "/readyz",
        Some("/status") => "/status",
        Some("/status.json") => "/status.json",
        _ => "unmatched",
    }
}

/// Middleware: count, time and track every request.
pub async fn track(req: Request, next: Next) -> Response {
    let route = route_label(&req);
    let start = Instant::now();
    let in_flight = metrics::gauge!(HTTP_IN_FLIGHT);
    in_flight.increment(1.0);
    // Decrement even if the connection drops and the future is cancelled mid-request.
    let _guard = InFlight(in_flight);
    let resp = next.run(req).await;
    metrics::histogram!(HTTP_DURATION, "route" => route).record(start.elapsed().as_secs_f64());
    metrics::counter!(HTTP_REQUESTS, "route" => route, "status" => status_label(resp.status().as_u16()))
        .increment(1);
    resp
}

struct InFlight(metrics::Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// Status codes we answer with, as static labels (no allocation per request).
fn status_label(code: u16) -> &'static str {
    match code {
        200 => "200",
        400 => "400",
        401 => "401",
        404 => "404",
        405 => "405",
        413 => "413",
        415 => "415",
        429 => "429",
        500 => "500",
        503 => "503",
        c if c < 300 => "2xx",
        c if c < 400 => "3xx",
        c if c < 500 => "4xx",
        _ => "5xx",
    }
}

/// Prometheus: connections closed at accept, by reason (`per_source`).
pub const CONNECTIONS_REFUSED: &str = "portcullis_connections_refused_total";

/// Count a connection closed at accept.
pub fn connection_refused(reason: &'static str) {
    metrics::counter!(CONNECTIONS_REFUSED, "reason" => reason).increment(1);
}

/// Log a store failure and count it. The caller answers "try again later" in its own
/// protocol (HTTP 503, or a silently dropped RADIUS request the NAS retransmits).
pub fn store_failure(what: &str, e: &dyn std::fmt::Display) {
    tracing::error!("store failure while {what}: {e}");
    metrics::counter!(STORE_ERRORS).increment(1);
}
