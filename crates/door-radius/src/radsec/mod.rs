//! The RadSec door (RADIUS over TLS, RFC 6614; issue 28): NASes connect over TCP (port
//! 2083), prove who they are with a client certificate, and send Access-Requests (PAP,
//! EAP), Accounting-Requests and Status-Server over the one connection.
//!
//! It owns only the transport. Each packet read from a connection goes to the same
//! checks and answers as a UDP datagram of the same NAS: the authentication door's
//! [`Radius::admit`] (then `handle`/`eap`) and the accounting door's [`AcctDoor::admit`]
//! (then the group-committing writer: acknowledged only once durable), with a
//! [`ReplyPath::Stream`] instead of a UDP socket. The NAS is the one whose registered
//! certificate the leaf matches (pinned SHA-256, or dNSName/CN) in the NAS table both
//! doors load; its shared secret on this door is "radsec" (RFC 6614 §2.3,
//! [`Nas::over_radsec`]), its station (NAS, Calling-Station-Id) as on UDP. A connection
//! whose handshake negotiated ALPN "radius/1.1" (`radius_1_1`, RFC 9765) has no secret at
//! all: its NAS view says so and the same paths read and write its packets without MD5
//! (`portcullis_radius::v11`).
//!
//! Parts: this module (binding, the accept loop with its connection limits, counters);
//! [`conn`] (one connection: handshake deadline, NAS by certificate, reader with its
//! in-flight bound and idle deadline); `writer` (bounded output, the write deadline from
//! the first wait); [`tls`] (the rustls
//! configuration and certificate names); [`config`] (`[radius.radsec]`). The framing
//! itself is `portcullis_radius::stream`.
//!
//! Bounds (report 003's lesson again: nothing grows with a peer's behaviour): at most
//! `max_connections` connections, `max_connections_per_source` from one address (beyond
//! either, a new connection is closed at once, before TLS); a handshake has
//! `handshake_timeout`; a connection holds at most `max_in_flight` requests and is not
//! read further until one is answered; its buffer holds at most one packet; it is closed
//! when no whole request arrived for `idle_timeout` with none in flight (trickled octets
//! do not count), when its writer, once a write had to wait, has not caught up within
//! `write_timeout` (its output is bounded, kernel send buffer included), when a Length is
//! impossible (RFC 6613 §2.6.4), and when its NAS is removed or no longer matches.

pub mod config;
mod conn;
pub mod tls;
mod writer;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Radius;
use super::acct::AcctDoor;
use super::nas::Nas;
use super::reply::ReplyPath;
use config::RadsecConfig;
use portcullis_door::conn_limit::PerSource;

/// Prometheus: connections by outcome (`accepted`, or why one was refused).
pub const CONNECTIONS: &str = "portcullis_radsec_connections_total";
/// Prometheus: connections closed, by reason.
pub const CLOSED: &str = "portcullis_radsec_closed_total";
/// Prometheus: connections open now.
pub const OPEN: &str = "portcullis_radsec_connections_open";

/// Bind every `radius.radsec_listen` address (none: RadSec is off).
pub fn bind(config: &super::RadiusConfig) -> std::io::Result<Vec<TcpListener>> {
    config
        .radsec_listen
        .iter()
        .map(|a| {
            let bound = std::net::TcpListener::bind(a).and_then(|l| {
                l.set_nonblocking(true)?;
                TcpListener::from_std(l)
            });
            bound.map_err(|e| std::io::Error::new(e.kind(), format!("{a}: {e}")))
        })
        .collect()
}

/// The RadSec door's shared state.
pub struct RadsecDoor {
    /// The authentication door: NAS table, PAP, EAP, Status-Server.
    radius: Arc<Radius>,
    /// The accounting door: its queue and writer.
    acct: Arc<AcctDoor>,
    /// `[radius.radsec]`.
    config: RadsecConfig,
    /// The TLS acceptor (client certificate required); replaced whole by a SIGHUP reload
    /// (certificate, key, client CAs, CRLs re-read). Connections already open keep theirs.
    acceptor: parking_lot::RwLock<TlsAcceptor>,
    /// Bound on open connections.
    limit: Arc<Semaphore>,
    /// Bound per source address.
    per_source: Arc<PerSource>,
    /// When a refused certificate was last logged (at most one line per 10 s).
    refused_logged: Mutex<Option<std::time::Instant>>,
}

impl std::fmt::Debug for RadsecDoor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RadsecDoor")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl RadsecDoor {
    /// Assemble the door over the two UDP doors' state; reads and checks the TLS files.
    pub fn new(
        radius: Arc<Radius>,
        acct: Arc<AcctDoor>,
    ) -> Result<Arc<RadsecDoor>, portcullis_door::DoorError> {
        let Some(config) = radius.config.radsec.clone() else {
            return Err(portcullis_door::DoorError::Config(
                "radius.radsec_listen needs [radius.radsec] cert, key and client_ca".into(),
            ));
        };
        let tls = tls::server_config(&config)
            .map_err(|e| portcullis_door::DoorError::Config(format!("radius.radsec: {e}")))?;
        for (outcome, _) in conn::REFUSALS {
            metrics::counter!(CONNECTIONS, "outcome" => outcome).absolute(0);
        }
        let ctx = Arc::clone(&radius.ctx);
        let door = Arc::new(RadsecDoor {
            limit: Arc::new(Semaphore::new(config.max_connections)),
            per_source: Arc::new(PerSource::new(config.max_connections_per_source)),
            acceptor: parking_lot::RwLock::new(TlsAcceptor::from(tls)),
            refused_logged: Mutex::new(None),
            radius,
            acct,
            config,
        });
        ctx.reloads
            .register(Arc::clone(&door) as Arc<dyn portcullis_door::reload::Reloadable>);
        Ok(door)
    }

    /// The acceptor in force (a reload swaps it).
    fn acceptor(&self) -> TlsAcceptor {
        self.acceptor.read().clone()
    }

    /// Log a refused NAS certificate, at most once per 10 seconds (a peer retrying in a
    /// loop must not fill the log; the counter has every refusal).
    fn log_refused(&self, peer: SocketAddr, what: &str) {
        let now = std::time::Instant::now();
        let mut last = self.refused_logged.lock();
        if last.is_some_and(|t| now.duration_since(t) < Duration::from_secs(10)) {
            return;
        }
        *last = Some(now);
        tracing::warn!(
            %peer,
            "RadSec: refused {peer}: {what} (register the NAS with `portcullis nas add NAME \
             --address CIDR --certificate FILE` or `--certificate-name NAME`; logged at most \
             every 10 s)"
        );
    }
}

impl portcullis_door::reload::Reloadable for RadsecDoor {
    fn name(&self) -> &'static str {
        "radius.radsec"
    }

    /// Re-read the certificate, key, NAS CAs and CRLs with the start-up checks; on error
    /// the configuration in force stays. New handshakes use the new one.
    fn reload(&self) -> Result<String, String> {
        let tls = tls::server_config(&self.config).map_err(|e| e.to_string())?;
        *self.acceptor.write() = TlsAcceptor::from(tls);
        Ok(format!(
            "certificate {} and NAS CAs {} re-read, {} CRL file(s)",
            self.config.cert.display(),
            self.config.client_ca.display(),
            self.config.crl.len()
        ))
    }
}

/// Accept RadSec connections on `listeners` until `stop`; then stop reading, let the
/// requests in flight be answered and written, and return.
pub async fn run(door: Arc<RadsecDoor>, listeners: Vec<TcpListener>, stop: CancellationToken) {
    let tracker = TaskTracker::new();
    for l in listeners {
        match l.local_addr() {
            Ok(a) => tracing::info!("RadSec listening on tcp {a}"),
            Err(e) => tracing::warn!("RadSec listener: {e}"),
        }
        tracker.spawn(accept_loop(
            Arc::clone(&door),
            l,
            stop.clone(),
            tracker.clone(),
        ));
    }
    tracker.close();
    tracker.wait().await;
}

async fn accept_loop(
    door: Arc<RadsecDoor>,
    listener: TcpListener,
    stop: CancellationToken,
    tracker: TaskTracker,
) {
    let mut backoff = Duration::from_millis(5);
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning, keep serving.
                    tracing::warn!("RadSec accept failed: {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            },
            () = stop.cancelled() => return,
        };
        backoff = Duration::from_millis(5);
        // Refused before TLS: a full door costs a peer nothing but a closed socket.
        let Ok(permit) = Arc::clone(&door.limit).try_acquire_owned() else {
            metrics::counter!(CONNECTIONS, "outcome" => "limit").increment(1);
            drop(stream);
            continue;
        };
        let Some(held) = PerSource::enter(&door.per_source, peer.ip()) else {
            metrics::counter!(CONNECTIONS, "outcome" => "per_source").increment(1);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let door = Arc::clone(&door);
        let stop = stop.clone();
        let requests = tracker.clone();
        tracker.spawn(async move {
            metrics::gauge!(OPEN).increment(1.0);
            conn::serve(&door, stream, peer, stop, &requests).await;
            metrics::gauge!(OPEN).decrement(1.0);
            drop((permit, held));
        });
    }
}

/// Hand one packet read from a connection to the door that serves its code; `false`:
/// a code no door serves here (the connection goes on; the packet is counted and
/// dropped, as on UDP).
fn dispatch(
    door: &RadsecDoor,
    nas: &Arc<Nas>,
    data: &[u8],
    peer: SocketAddr,
    path: ReplyPath,
    tracker: &TaskTracker,
) -> bool {
    let arrived = std::time::Instant::now();
    match data.first().map(|c| portcullis_radius::Code::from_u8(*c)) {
        Some(portcullis_radius::Code::AccountingRequest) => {
            door.acct.count_request(&nas.name);
            door.acct.admit(nas, data, peer, path, arrived, tracker);
            true
        }
        Some(portcullis_radius::Code::AccessRequest | portcullis_radius::Code::StatusServer) => {
            nas.stats.request();
            door.radius.admit(nas, data, peer, path, arrived, tracker);
            true
        }
        _ => {
            nas.stats.request();
            nas.stats.dropped(super::nas::DropReason::Malformed);
            false
        }
    }
}
