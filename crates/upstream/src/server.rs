//! One server of a directory: its connection pool, its breaker and its counters.
//!
//! This module owns the connections to one server: idle ones are kept (up to the pool's
//! size and idle age), each tagged with whom it is bound as, so that searches reuse
//! connections already bound as the service account and user binds take the others. A
//! connection whose operation failed or timed out is dropped, never pooled. A pooled
//! connection the server had closed while idle is replaced once, without blaming the server.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::breaker::{Breaker, BreakerState};
use crate::config::{ServerUrl, Validated};
use crate::conn::{ConnError, Connection};

/// Whom a pooled connection is bound as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundAs {
    /// The service account (ready for a search).
    Service,
    /// Anyone else: anonymous, a user, or a failed bind.
    Other,
}

struct Idle {
    conn: Connection,
    bound: BoundAs,
    since: Instant,
}

/// A connection taken from the pool (or new), with how it is bound.
pub struct Lease {
    /// The connection.
    pub conn: Connection,
    /// Whom it is bound as.
    pub bound: BoundAs,
    /// Whether it was pooled (then a "closed" error may just mean it went stale).
    pub reused: bool,
}

/// One server.
pub struct Server {
    /// Its URL and how it is reached.
    pub url: ServerUrl,
    /// Its breaker.
    pub breaker: Breaker,
    idle: Mutex<Vec<Idle>>,
    tls: Option<tokio_rustls::TlsConnector>,
    max_idle: usize,
    idle_timeout: Duration,
    connect_timeout: Duration,
    /// Operations (checks' attempts) on this server now.
    pub in_flight: AtomicUsize,
    /// Attempts that got an answer from this server.
    pub answered: AtomicU64,
    /// Attempts that failed for the server's fault.
    pub errors: AtomicU64,
    /// Connections opened.
    pub connects: AtomicU64,
    last_error: Mutex<Option<(Instant, String)>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("url", &self.url.url)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// The server `url` of the directory `cfg`.
    pub fn new(
        url: ServerUrl,
        cfg: &Validated,
        tls: Option<tokio_rustls::TlsConnector>,
    ) -> Arc<Self> {
        Arc::new(Self {
            url,
            breaker: Breaker::new(
                cfg.breaker.failures_to_open,
                Duration::from_millis(cfg.breaker.open_ms),
            ),
            idle: Mutex::new(Vec::new()),
            tls,
            max_idle: cfg.pool.max_idle_per_server,
            idle_timeout: Duration::from_millis(cfg.pool.idle_timeout_ms),
            connect_timeout: cfg.connect_timeout,
            in_flight: AtomicUsize::new(0),
            answered: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            connects: AtomicU64::new(0),
            last_error: Mutex::new(None),
        })
    }

    /// An idle connection bound as `prefer` if there is one; for the service account any
    /// idle one (it is rebound); else a new one.
    pub async fn lease(&self, prefer: BoundAs) -> Result<Lease, ConnError> {
        if let Some(lease) = self.take_idle(prefer) {
            return Ok(lease);
        }
        self.connect().await
    }

    /// A new connection.
    pub async fn connect(&self) -> Result<Lease, ConnError> {
        self.connects.fetch_add(1, Ordering::Relaxed);
        let conn = Connection::open(&self.url, self.tls.as_ref(), self.connect_timeout).await?;
        Ok(Lease {
            conn,
            bound: BoundAs::Other,
            reused: false,
        })
    }

    fn take_idle(&self, prefer: BoundAs) -> Option<Lease> {
        let mut idle = self.idle.lock();
        let now = Instant::now();
        idle.retain(|i| now.saturating_duration_since(i.since) < self.idle_timeout);
        // A search may rebind any connection as the service account; a user bind never
        // takes a service-bound one, so those stay bound and ready.
        let i = idle
            .iter()
            .rposition(|i| i.bound == prefer)
            .or_else(|| match prefer {
                BoundAs::Service => idle.len().checked_sub(1),
                BoundAs::Other => None,
            })?;
        let Idle { conn, bound, .. } = idle.swap_remove(i);
        Some(Lease {
            conn,
            bound,
            reused: true,
        })
    }

    /// Returns a connection whose last operation completed; closed when the pool is full.
    pub fn give_back(&self, conn: Connection, bound: BoundAs) {
        let mut idle = self.idle.lock();
        if idle.len() < self.max_idle {
            idle.push(Idle {
                conn,
                bound,
                since: Instant::now(),
            });
        }
    }

    /// Closes every idle connection (the server failed: they are likely dead).
    pub fn clear_idle(&self) {
        self.idle.lock().clear();
    }

    /// Idle connections now.
    pub fn idle_count(&self) -> usize {
        self.idle.lock().len()
    }

    /// Records a failure of the server's.
    pub fn record_error(&self, now: Instant, error: &str) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock() = Some((now, error.to_owned()));
    }

    /// The last error and when it happened.
    pub fn last_error(&self) -> Option<(Instant, String)> {
        self.last_error.lock().clone()
    }

    /// Whether checks go to this server now.
    pub fn state(&self, now: Instant) -> BreakerState {
        self.breaker.state(now)
    }
}

/// Counts an attempt in flight on a server while it lives (status and the
/// `portcullis_upstream_in_flight{directory,server}` gauge).
pub struct InFlight<'a> {
    counter: &'a AtomicUsize,
    gauge: metrics::Gauge,
}

impl<'a> InFlight<'a> {
    /// Counts one more on `server` of `directory`.
    pub fn new(server: &'a Server, directory: &str, label: &str) -> Self {
        server.in_flight.fetch_add(1, Ordering::Relaxed);
        let gauge = metrics::gauge!(
            "portcullis_upstream_in_flight",
            "directory" => directory.to_owned(),
            "server" => label.to_owned()
        );
        gauge.increment(1.0);
        Self {
            counter: &server.in_flight,
            gauge,
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.counter.fetch_sub(1, Ordering::Relaxed);
        self.gauge.decrement(1.0);
    }
}
