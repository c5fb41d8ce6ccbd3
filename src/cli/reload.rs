//! SIGHUP for `portcullis serve` (issue 15): re-read the configuration file and the
//! secrets file without a restart.
//!
//! The secrets file's pepper keys replace the core's (so a `client rotate-pepper` takes
//! effect on a running server); the master key is never swapped under a running server.
//! From the configuration file, with the same command-line overrides as at start, the
//! reloadable parts are applied: `[audit] per_source_limit` and `interval_secs`, and `[log]
//! level`, and the TLS certificate and key (issue 14: re-read from `[tls] cert` and `key`
//! even when the file is unchanged, since renewals replace the PEM files in place; checked
//! like at start-up, and on a failed check the old certificate stays), and the 802.1X door's
//! certificate, key, client CAs and CRLs from the paths it started with (issue 25; ticket
//! keys carry over, so devices keep resuming). Any other change is
//! reported as needing a restart. A file that does not parse
//! or validate is refused with one error line, and the running configuration stays.

use std::path::PathBuf;
use std::sync::Arc;

use portcullis_server::{Assembly, Config};

/// Reload on every SIGHUP until the process ends. `load` reads the configuration again
/// the way `serve` read it at start (file plus command-line overrides); `None` when it was
/// started without a file. Passed in, so this module does not import `serve`, which
/// spawns it.
pub async fn watch(
    parts: Arc<Assembly>,
    load: impl Fn() -> Option<Result<Config, String>> + Send,
    secrets_file: PathBuf,
    mut running: Config,
) {
    let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
        tracing::warn!("cannot listen for SIGHUP: reloading needs a restart");
        return;
    };
    while hup.recv().await.is_some() {
        tracing::info!("SIGHUP: reloading the configuration, the secrets file and the certificate");
        if let Some(loaded) = load() {
            match loaded {
                Err(e) => tracing::error!(
                    "configuration reload refused, the running configuration stays: {}",
                    one_line(&e)
                ),
                Ok(new) => {
                    apply(&parts, &running, &new);
                    running = new;
                }
            }
        }
        reload_certificate(&parts, &running);
        for (part, outcome) in parts.reloads.reload_all() {
            match outcome {
                Ok(what) => tracing::info!("{part}: reloaded: {what}"),
                Err(e) => tracing::error!("{part}: reload refused, the old files stay: {e}"),
            }
        }
        match portcullis_store::Secrets::load(&secrets_file) {
            Ok(s) => {
                let current = s.peppers.current().map_or("none", |k| k.id()).to_owned();
                let n = s.peppers.keys().count();
                parts.verifier.set_peppers(s.peppers);
                tracing::info!(
                    "secrets file reloaded: {n} pepper keys, current {current} (the master \
                     key is only read at start)"
                );
            }
            Err(e) => tracing::error!(
                "secrets file reload refused, the loaded keys stay: {}: {e}",
                secrets_file.display()
            ),
        }
    }
}

/// Serve the certificate and key the running configuration names, if they pass the
/// start-up checks; connections already open keep theirs.
fn reload_certificate(parts: &Assembly, running: &Config) {
    let (Some(server), Some(files)) = (&parts.tls, &running.tls) else {
        return;
    };
    match server.certs.reload(&files.cert, &files.key) {
        Ok(f) => tracing::info!(
            "tls: now serving certificate {}",
            portcullis_server::tls::facts::one_line(&f)
        ),
        Err(e) => tracing::error!("tls: certificate reload refused, the old one stays: {e}"),
    }
}

/// Apply the reloadable parts of `new`, and name what only a restart would apply.
fn apply(parts: &Assembly, old: &Config, new: &Config) {
    parts.audit.set_limits(&new.audit);
    if let Err(e) = portcullis_server::logging::set_level(&new.log.level) {
        tracing::error!("log.level {:?} not applied: {e}", new.log.level);
    }
    let d = |x: &dyn std::fmt::Debug| format!("{x:?}");
    // Certificate and key reload on every SIGHUP; the rest of [tls] needs a restart.
    let tls_rest = |c: &Config| {
        d(&c.tls.as_ref().map(|t| {
            (
                &t.versions,
                &t.cipher_suites,
                t.session_tickets,
                t.ticket_key_rotation_secs,
                t.shared_ticket_keys,
                t.session_cache_entries,
                t.client_certificates,
                &t.client_ca,
            )
        }))
    };
    let sections: [(&str, String, String); 14] = [
        ("server.http", d(&old.http), d(&new.http)),
        ("server.issuer", d(&old.issuer), d(&new.issuer)),
        (
            "server limits",
            d(&(
                old.body_limit,
                old.request_timeout,
                old.header_timeout,
                old.max_header_bytes,
                old.max_connections,
                old.max_connections_per_source,
            )),
            d(&(
                new.body_limit,
                new.request_timeout,
                new.header_timeout,
                new.max_header_bytes,
                new.max_connections,
                new.max_connections_per_source,
            )),
        ),
        (
            "server proxies",
            d(&(&old.trusted_proxies, old.proxy_protocol)),
            d(&(&new.trusted_proxies, new.proxy_protocol)),
        ),
        (
            "[tls] (other than cert and key)",
            tls_rest(old),
            tls_rest(new),
        ),
        ("[client_auth]", d(&old.client_auth), d(&new.client_auth)),
        (
            "[tokens]",
            d(&(&old.audience, old.token_lifetime, old.key_rotation)),
            d(&(&new.audience, new.token_lifetime, new.key_rotation)),
        ),
        ("[verifier]", d(&old.verifier), d(&new.verifier)),
        ("[policy]", d(&old.policy), d(&new.policy)),
        (
            "[store]",
            d(&(&old.data_dir, &old.store, old.client_cache_ttl)),
            d(&(&new.data_dir, &new.store, new.client_cache_ttl)),
        ),
        ("[throttle]", d(&old.throttle_redis), d(&new.throttle_redis)),
        ("[radius]", d(&old.radius), d(&new.radius)),
        ("[[directory]]", d(&old.directories), d(&new.directories)),
        (
            "audit.destination, log.format",
            d(&(&old.audit.destination, old.log.format)),
            d(&(&new.audit.destination, new.log.format)),
        ),
    ];
    let restart: Vec<&str> = sections
        .iter()
        .filter(|(_, a, b)| a != b)
        .map(|(name, _, _)| *name)
        .collect();
    tracing::info!(
        "configuration reloaded: audit at most {} failures per source prefix per {:?}, log level {:?}",
        new.audit.per_source_limit,
        new.audit.interval,
        new.log.level
    );
    if !restart.is_empty() {
        tracing::warn!(
            "changed in the file but applied only on restart: {}",
            restart.join(", ")
        );
    }
}

/// A multi-line error (TOML's quote the offending line with a caret) as one log line.
fn one_line(e: &str) -> String {
    e.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '|' || c == '^' || c == ' '))
        .collect::<Vec<_>>()
        .join(" ")
}
