//! A directory: its servers in failover order, the admission in front of them, the check
//! that callers make, and the status snapshot.
//!
//! This module owns the order of a check: settle what needs no directory (an empty password
//! is never sent: it would be an unauthenticated bind that "succeeds"), take a fair slot,
//! then try the servers in order, skipping those whose breaker is open, until one answers.
//! The whole check is bounded by `timeouts.check_ms`. How one server is asked is in
//! `attempt`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::admission::{Admission, AdmissionStatus};
use crate::breaker::{BreakerState, Pass};
use crate::clock::{Clock, SystemClock};
use crate::config::{ConfigError, DirectoryConfig, Mode, Validated};
use crate::outcome::{Answer, Outcome, Unavailable, UnavailableKind};
use crate::server::{InFlight, Server};

/// Longest user name sent to a directory (bytes); longer names are answered Unknown.
pub const MAX_USER_LEN: usize = 256;
/// Longest password sent (bytes); longer ones are answered Rejected.
pub const MAX_PASSWORD_LEN: usize = 1024;

/// Builds every configured directory; names must be unique (they key metrics, status and
/// audit events).
pub fn directories(configs: &[DirectoryConfig]) -> Result<Vec<Arc<Directory>>, ConfigError> {
    let mut built: Vec<Arc<Directory>> = Vec::with_capacity(configs.len());
    for config in configs {
        if built.iter().any(|d| d.name() == config.name) {
            return Err(ConfigError::Field {
                directory: config.name.clone(),
                field: "name".into(),
                reason: "two directories have this name".into(),
            });
        }
        built.push(Arc::new(Directory::new(config)?));
    }
    Ok(built)
}

/// A client of one upstream directory. Cheap to share (`Arc`); every method takes `&self`.
#[derive(Debug)]
pub struct Directory {
    pub(crate) cfg: Validated,
    pub(crate) name: Arc<str>,
    pub(crate) servers: Vec<(Arc<Server>, Arc<str>)>,
    admission: Arc<Admission>,
    clock: Arc<dyn Clock>,
}

/// The status of a directory (for `/readyz` detail, the status page and `doctor`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct DirectoryStatus {
    /// The directory's name.
    pub name: String,
    /// `dn_template` or `search`.
    pub mode: &'static str,
    /// Whether any server is up (its breaker not open).
    pub up: bool,
    /// The admission's limit.
    pub max_in_flight: usize,
    /// Checks in flight and queued.
    pub admission: AdmissionStatus,
    /// Each server, in failover order.
    pub servers: Vec<ServerStatus>,
}

/// The status of one server.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerStatus {
    /// Its URL.
    pub url: String,
    /// Closed (up), open (down, skipped) or half-open (being probed).
    pub state: BreakerState,
    /// Whether checks go to it (breaker not open).
    pub up: bool,
    /// Attempts on it now.
    pub in_flight: usize,
    /// Idle pooled connections.
    pub idle_connections: usize,
    /// Attempts it answered, since start.
    pub answered: u64,
    /// Attempts that failed for its fault, since start.
    pub errors: u64,
    /// Failures since its last answer.
    pub consecutive_failures: u32,
    /// Connections opened, since start.
    pub connects: u64,
    /// The last failure.
    pub last_error: Option<String>,
    /// How long ago it happened, in seconds.
    pub last_error_age_s: Option<f64>,
}

impl Directory {
    /// Validates `config` and builds the client (no connection is made yet).
    pub fn new(config: &DirectoryConfig) -> Result<Self, ConfigError> {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    /// As [`Directory::new`], with the clock the breakers read (tests move a manual one).
    pub fn with_clock(
        config: &DirectoryConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, ConfigError> {
        let cfg = config.validate()?;
        let tls = match &cfg.ca_pem {
            Some(pem) => {
                Some(
                    crate::tls::tls_connector(pem).map_err(|reason| ConfigError::Field {
                        directory: cfg.name.clone(),
                        field: "ca_file".into(),
                        reason,
                    })?,
                )
            }
            None => None,
        };
        let servers = cfg
            .servers
            .iter()
            .map(|url| {
                let label: Arc<str> = Arc::from(url.url.as_str());
                (Server::new(url.clone(), &cfg, tls.clone()), label)
            })
            .collect();
        Ok(Self {
            name: Arc::from(cfg.name.as_str()),
            admission: Admission::new(cfg.admission.clone()),
            servers,
            clock,
            cfg,
        })
    }

    /// The directory's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Checks `password` for `user`, queued fairly under `source` (the caller's key for who
    /// is asking: a client address, a NAS). Never waits longer than `timeouts.check_ms`.
    pub async fn check(&self, source: &str, user: &str, password: &[u8]) -> Answer {
        let started = Instant::now();
        let answer = match tokio::time::timeout(
            self.cfg.check_timeout,
            self.check_within(source, user, password),
        )
        .await
        {
            Ok(answer) => answer,
            Err(_) => self.answer(
                Outcome::Unavailable(Unavailable::new(
                    UnavailableKind::Timeout,
                    "the check took longer than timeouts.check_ms",
                )),
                None,
            ),
        };
        let labels = [
            ("directory", self.name.to_string()),
            ("outcome", answer.outcome.label().to_owned()),
        ];
        metrics::counter!("portcullis_upstream_checks_total", &labels).increment(1);
        metrics::histogram!("portcullis_upstream_check_seconds", "directory" => self.name.to_string())
            .record(started.elapsed().as_secs_f64());
        answer
    }

    async fn check_within(&self, source: &str, user: &str, password: &[u8]) -> Answer {
        if user.is_empty() || user.len() > MAX_USER_LEN {
            return self.answer(Outcome::Unknown, None);
        }
        let password = match std::str::from_utf8(password) {
            // An empty password would be an unauthenticated bind (RFC 4513 5.1.2), which
            // directories answer with success: it is never sent.
            Ok(p) if !p.is_empty() && p.len() <= MAX_PASSWORD_LEN => p,
            // LDAP simple passwords sent by this client are UTF-8.
            _ => return self.answer(Outcome::Rejected, None),
        };
        let Ok(_permit) = self.admission.acquire(source).await else {
            metrics::counter!("portcullis_upstream_overloaded_total", "directory" => self.name.to_string())
                .increment(1);
            return self.answer(
                Outcome::Unavailable(Unavailable::new(
                    UnavailableKind::Overloaded,
                    "too many checks wait on this directory",
                )),
                None,
            );
        };
        let mut last: Option<Unavailable> = None;
        for (server, label) in &self.servers {
            let Some(pass) = server.breaker.pass(self.clock.now()) else {
                continue;
            };
            let mut probe = ProbeGuard {
                server,
                armed: pass == Pass::Probe,
            };
            let started = Instant::now();
            let result = {
                let _in_flight = InFlight::new(server, &self.name, label);
                self.attempt(server, user, password).await
            };
            probe.armed = false;
            metrics::histogram!(
                "portcullis_upstream_server_seconds",
                "directory" => self.name.to_string(),
                "server" => label.to_string()
            )
            .record(started.elapsed().as_secs_f64());
            match result {
                Ok(outcome) => {
                    server.breaker.success();
                    server.answered.fetch_add(1, Ordering::Relaxed);
                    return self.answer(outcome, Some(Arc::clone(label)));
                }
                Err(fault) => {
                    self.server_failed(server, label, &fault);
                    last = Some(fault);
                }
            }
        }
        let fault = last.unwrap_or_else(|| {
            Unavailable::new(
                UnavailableKind::AllServersDown,
                "every server is marked down (breaker open)",
            )
        });
        self.answer(Outcome::Unavailable(fault), None)
    }

    fn server_failed(&self, server: &Server, label: &str, fault: &Unavailable) {
        let now = self.clock.now();
        server.record_error(now, &fault.to_string());
        server.clear_idle();
        metrics::counter!(
            "portcullis_upstream_server_errors_total",
            "directory" => self.name.to_string(),
            "server" => label.to_owned(),
            "kind" => fault.kind.as_str()
        )
        .increment(1);
        if server.breaker.failure(now) {
            tracing::warn!(directory = %self.name, server = label, error = %fault,
                "upstream LDAP server marked down (breaker open)");
            metrics::counter!(
                "portcullis_upstream_breaker_opened_total",
                "directory" => self.name.to_string(),
                "server" => label.to_owned()
            )
            .increment(1);
        }
    }

    fn answer(&self, outcome: Outcome, server: Option<Arc<str>>) -> Answer {
        Answer {
            outcome,
            directory: Arc::clone(&self.name),
            server,
        }
    }

    /// A snapshot for status pages and readiness.
    pub fn status(&self) -> DirectoryStatus {
        let now = self.clock.now();
        let servers: Vec<ServerStatus> = self
            .servers
            .iter()
            .map(|(s, label)| {
                let state = s.state(now);
                let last = s.last_error();
                ServerStatus {
                    url: label.to_string(),
                    state,
                    up: state != BreakerState::Open,
                    in_flight: s.in_flight.load(Ordering::Relaxed),
                    idle_connections: s.idle_count(),
                    answered: s.answered.load(Ordering::Relaxed),
                    errors: s.errors.load(Ordering::Relaxed),
                    consecutive_failures: s.breaker.consecutive_failures(),
                    connects: s.connects.load(Ordering::Relaxed),
                    last_error_age_s: last
                        .as_ref()
                        .map(|(at, _)| now.saturating_duration_since(*at).as_secs_f64()),
                    last_error: last.map(|(_, e)| e),
                }
            })
            .collect();
        DirectoryStatus {
            name: self.name.to_string(),
            mode: match self.cfg.mode {
                Mode::DnTemplate(_) => "dn_template",
                Mode::Search { .. } => "search",
            },
            up: servers.iter().any(|s| s.up),
            max_in_flight: self.cfg.admission.max_in_flight,
            admission: self.admission.status(),
            servers,
        }
    }
}

/// A half-open probe whose check was cancelled before the server answered either way:
/// another check may probe.
struct ProbeGuard<'a> {
    server: &'a Server,
    armed: bool,
}

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.server.breaker.probe_abandoned();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(name: &str) -> DirectoryConfig {
        toml::from_str(&format!(
            r#"
            name = "{name}"
            servers = ["ldap://127.0.0.1:1"]
            starttls = false
            allow_plaintext = true
            bind_dn_template = "uid={{user}},dc=example,dc=org"
            "#
        ))
        .unwrap()
    }

    #[test]
    fn directory_names_are_unique() {
        assert_eq!(directories(&[config("a"), config("b")]).unwrap().len(), 2);
        let err = directories(&[config("a"), config("a")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("two directories"), "{err}");
    }

    #[tokio::test]
    async fn what_needs_no_directory_is_settled_without_one() {
        // Port 1 on loopback: nothing listens, so any attempt would be Unavailable.
        let dir = Directory::new(&config("a")).unwrap();
        assert_eq!(dir.check("s", "", b"pw").await.outcome, Outcome::Unknown);
        let long = "u".repeat(MAX_USER_LEN + 1);
        assert_eq!(dir.check("s", &long, b"pw").await.outcome, Outcome::Unknown);
        assert_eq!(dir.check("s", "user", b"").await.outcome, Outcome::Rejected);
        assert_eq!(
            dir.check("s", "user", &[0xff, 0xfe]).await.outcome,
            Outcome::Rejected
        );
        assert_eq!(dir.status().servers[0].connects, 0);
    }
}
