//! What the server talks to and agrees with: the store (PostgreSQL answering; SQLite is
//! embedded), Redis (when `[throttle] redis` is set), the issuer of a shared store, and
//! the clock (not behind this binary's file time, and within a few seconds of
//! PostgreSQL's, which every instance of a cluster shares).

use std::time::{Duration, SystemTime};

use portcullis_store::backend::without_credentials;

use super::{Finding, Level};
use crate::config::{Config, SHARED_STORE_NEEDS_ISSUER, StoreBackend};

/// How long each service may take to answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// Clock difference with PostgreSQL above which a warning is given; tokens carry `iat`
/// and `exp` in seconds, so a second or two is noise.
const SKEW_WARN: Duration = Duration::from_secs(2);
/// Above this, instances (and resource servers) disagree on token validity.
const SKEW_FAIL: Duration = Duration::from_secs(30);

pub(super) async fn check(config: &Config, out: &mut Vec<Finding>) {
    let db_clock = store(config, out).await;
    redis(config, out).await;
    issuer(config, out);
    clock(db_clock, out);
}

/// The store answering; returns PostgreSQL's clock when it answered.
async fn store(config: &Config, out: &mut Vec<Finding>) -> Option<SystemTime> {
    const S: &str = "store";
    match &config.store {
        StoreBackend::Sqlite => {
            out.push(Finding::new(
                Level::Ok,
                S,
                format!(
                    "SQLite in {} (embedded; one instance only)",
                    config.data_dir.display()
                ),
            ));
            None
        }
        StoreBackend::Postgres { url, .. } => {
            let shown = without_credentials(url);
            let fix =
                "fix: start PostgreSQL or correct store.url (host, port, database, credentials)";
            match tokio::time::timeout(PROBE_TIMEOUT, portcullis_store::PgStore::probe(url)).await {
                Ok(Ok(clock)) => {
                    out.push(Finding::new(
                        Level::Ok,
                        S,
                        format!("PostgreSQL at {shown} answers"),
                    ));
                    Some(clock)
                }
                Ok(Err(e)) => {
                    out.push(Finding::new(
                        Level::Fail,
                        S,
                        format!("PostgreSQL at {shown} unreachable: {e}; {fix}"),
                    ));
                    None
                }
                Err(_) => {
                    out.push(Finding::new(
                        Level::Fail,
                        S,
                        format!(
                            "PostgreSQL at {shown} unreachable: no answer within {PROBE_TIMEOUT:?}; {fix}"
                        ),
                    ));
                    None
                }
            }
        }
    }
}

async fn redis(config: &Config, out: &mut Vec<Finding>) {
    const S: &str = "throttle";
    let Some(r) = &config.throttle_redis else {
        let level = if config.store == StoreBackend::Sqlite {
            Level::Ok
        } else {
            // Several instances without Redis: an attacker gets one budget per instance.
            Level::Warn
        };
        let text = if level == Level::Ok {
            "failure budgets in this process".to_owned()
        } else {
            "a shared store but failure budgets per instance: a guesser spreading over N \
             instances gets N budgets; fix: set [throttle] redis"
                .to_owned()
        };
        out.push(Finding::new(level, S, text));
        return;
    };
    let shown = r.target.shown();
    let fix = "fix: start Redis or correct throttle.redis";
    let result = match portcullis_store::RedisThrottleStore::new(r) {
        Ok(store) => match tokio::time::timeout(PROBE_TIMEOUT, store.ping()).await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(_) => Err(format!("no answer within {PROBE_TIMEOUT:?}")),
        },
        Err(e) => Err(e.to_string()),
    };
    out.push(match result {
        Ok(()) => Finding::new(Level::Ok, S, format!("Redis at {shown} answers")),
        Err(e) => Finding::new(
            Level::Fail,
            S,
            format!("Redis at {shown} unreachable: {e}; {fix}"),
        ),
    });
}

fn issuer(config: &Config, out: &mut Vec<Finding>) {
    const S: &str = "issuer";
    let shared = matches!(config.store, StoreBackend::Postgres { .. });
    match (&config.issuer, shared) {
        // `Config::from_file` refuses this; a configuration assembled in code may not.
        (None, true) => out.push(Finding::new(Level::Fail, S, SHARED_STORE_NEEDS_ISSUER)),
        (Some(i), true) => out.push(Finding::new(
            Level::Ok,
            S,
            format!("{i} (the same on every instance of the shared store)"),
        )),
        (Some(i), false) => out.push(Finding::new(Level::Ok, S, i.clone())),
        (None, false) if config.http.ip().is_unspecified() => out.push(Finding::new(
            Level::Warn,
            S,
            format!(
                "derived from {}, which no client can reach; fix: set server.issuer to the URL clients use",
                config.http
            ),
        )),
        (None, false) => out.push(Finding::new(
            Level::Note,
            S,
            format!(
                "derived from the listen address ({}); set server.issuer when clients reach it by another name",
                config.http
            ),
        )),
    }
}

fn clock(db_clock: Option<SystemTime>, out: &mut Vec<Finding>) {
    const S: &str = "clock";
    let now = SystemTime::now();
    let fix = "fix: synchronise the clock (timedatectl set-ntp true, or chrony)";
    // A clock behind the binary's own file time is certainly wrong: tokens would be
    // issued already expired or not yet valid for everyone else.
    let built = std::env::current_exe()
        .and_then(std::fs::metadata)
        .and_then(|m| m.modified())
        .ok();
    if let Some(b) = built
        && let Ok(ahead) = b.duration_since(now)
        && ahead > Duration::from_secs(300)
    {
        out.push(Finding::new(
            Level::Fail,
            S,
            format!(
                "this machine's clock ({}) is earlier than this binary's file time ({}); {fix}",
                humantime::format_rfc3339_seconds(now),
                humantime::format_rfc3339_seconds(b)
            ),
        ));
        return;
    }
    let Some(db) = db_clock else {
        out.push(Finding::new(
            Level::Ok,
            S,
            format!(
                "{} (not behind this binary's file time)",
                humantime::format_rfc3339_seconds(now)
            ),
        ));
        return;
    };
    let skew = now
        .duration_since(db)
        .or_else(|_| db.duration_since(now))
        .unwrap_or_default();
    let shown = format!("differs from PostgreSQL's by {:.1} s", skew.as_secs_f64());
    out.push(if skew > SKEW_FAIL {
        Finding::new(
            Level::Fail,
            S,
            format!("{shown}: instances disagree on token expiry; {fix}"),
        )
    } else if skew > SKEW_WARN {
        Finding::new(Level::Warn, S, format!("{shown}; {fix}"))
    } else {
        Finding::new(Level::Ok, S, shown)
    });
}
