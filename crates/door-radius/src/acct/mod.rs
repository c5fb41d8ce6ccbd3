//! The RADIUS accounting door (RFC 2866 over UDP, issue 28): Accounting-Requests from the
//! registered NASes, acknowledged only once their record is durable in the store.
//!
//! It is a sibling of the authentication door ([`super`]), not a part of it: its own
//! sockets (`[radius] accounting_listen`), its own receive loops, queue and writer, the
//! same NAS table (its own snapshot of the store's `nas` rows, refreshed on the same
//! period) and secrets. Parts:
//! - this module: the receive loop's cheap checks ([`AcctDoor::dispatch`]: NAS lookup,
//!   parse, RFC 2866 authenticator and Message-Authenticator when present, the typed
//!   record, the duplicate cache); [`run`] wires the loops, the writer and the
//!   background upkeep (NAS refresh, retention, sessions online);
//! - [`queue`]: what the receive paths share with the writer, and the hand-off to the
//!   bounded queue with its admission by time; [`pace`]: how long the writer's commits
//!   take, and so how long a record arriving now would wait;
//! - [`writer`]: the one task, on a thread of its own, that group-commits queued records
//!   and then sends their Accounting-Responses;
//! - [`super::priority`]: why the door's threads run below authentication's CPU priority;
//! - [`config`]: the `[accounting]` section; [`stats`]: counters per NAS and status type.
//!
//! Report 003's lessons, as for authentication: the receive loop never waits on the
//! store; the queue in front of the writer is bounded, in records (`[accounting] queue`)
//! and in time (`max_queue_age_ms`: a record the writer is not expected to commit within
//! it is dropped on arrival, `late`), and a request it cannot take is dropped unanswered
//! and counted, never acknowledged early (the NAS retransmits). A retransmission with the same identifier and authenticator is answered
//! from the duplicate cache once its batch committed (and dropped while it waits); one
//! with a new identifier (Acct-Delay-Time grew), or one the cache no longer holds, reaches
//! the store, whose duplicate rule (same NAS, session, status and fingerprint, event times
//! within 30 s: [`portcullis_store::accounting::RETRANSMIT_SLACK_SECS`]) stores it once,
//! and is answered again. A record that could no longer be committed within
//! `max_queue_age_ms` when the writer takes it out is dropped unanswered (`stale`) by the
//! writer. Authentication keeps its
//! share of the machine during an accounting storm: nothing here runs on a runtime worker
//! or the hash pool, and the threads that do the work (receive, writer, the writer's store
//! connection) run at a higher nice value (`[accounting] nice`), so the scheduler gives
//! them what logins leave, and the admission by time sheds at the door what the writer
//! cannot answer in time meanwhile.

pub mod audit;
pub mod config;
#[cfg(test)]
mod overload_tests;
mod pace;
mod queue;
pub mod stats;
mod writer;

pub use writer::{Writer, start as start_writer};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use portcullis_radius::{
    AcctRequest, Packet, StatusType, check_accounting_request, encode_accounting_response, v11,
};
use portcullis_store::AcctRecord;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::dedup::{DuplicateCache, RequestKey, Seen};
use super::nas::{Nas, NasTable, StatsRegistry, UNKNOWN_NAS};
use super::reply::ReplyPath;
use super::socket::{RadiusSocket, Received};
use crate::RadiusContext;
use portcullis_door::unix_now;
use queue::Shared;
use stats::{AcctDrop, AcctNasStats, ONLINE};

/// Bind every configured accounting address (none: accounting is off).
pub fn bind(config: &super::RadiusConfig) -> std::io::Result<Vec<RadiusSocket>> {
    config
        .accounting_listen
        .iter()
        .map(|a| {
            RadiusSocket::bind(*a).map_err(|e| std::io::Error::new(e.kind(), format!("{a}: {e}")))
        })
        .collect()
}

/// What the writer needs to answer one request once its record is committed.
pub(crate) struct Reply {
    /// The Accounting-Response, built in the receive loop (it does not depend on the
    /// store's answer: a duplicate is acknowledged like a new record).
    bytes: Arc<[u8]>,
    /// Where the reply goes (UDP, or the RadSec connection it was read from).
    path: ReplyPath,
    /// Where it came from (logs).
    peer: SocketAddr,
    /// Its duplicate-cache key (completed after the commit, forgotten if it fails).
    key: RequestKey,
    /// Its status type, for the per-status counters.
    status: StatusType,
    /// Its NAS's counters.
    stats: Arc<AcctNasStats>,
    /// When it arrived (the commit latency histogram counts from here).
    arrived: Instant,
    /// RADIUS/1.1 only: the Protocol-Error (Error-Cause 506, its Token) sent if the
    /// commit fails (RFC 9765 §6.1: "cannot now" instead of silence).
    unable: Option<Arc<[u8]>>,
}

/// One queued request: the record to store and how to answer it (opaque outside).
pub struct Pending {
    /// The row to write.
    record: AcctRecord,
    /// The answer, sent only after the commit.
    reply: Reply,
}

/// The accounting door's shared state.
pub struct AcctDoor {
    /// The server's shared state (the store, the master key for NAS secrets).
    ctx: Arc<RadiusContext>,
    /// How often the NAS table is reloaded (`[radius] nas_refresh_secs`).
    nas_refresh: Duration,
    /// The current NAS snapshot; swapped whole on refresh.
    nas: RwLock<Arc<NasTable>>,
    /// The authentication door's registry, which `NasTable::load` keys NASes into (and
    /// which carries our counters to the status page).
    registry: Arc<StatsRegistry>,
    /// What the receive paths share with the writer: config, counters, duplicate cache,
    /// the queue and its admission.
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AcctDoor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcctDoor")
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

impl AcctDoor {
    /// Assemble the door and load the NAS table once; returns the queue's receiving end
    /// for [`run`]'s writer.
    pub async fn new(
        ctx: Arc<RadiusContext>,
        registry: Arc<StatsRegistry>,
    ) -> Result<(Arc<AcctDoor>, mpsc::Receiver<Pending>), portcullis_door::DoorError> {
        let config = ctx.config.accounting.clone();
        let radius = &ctx.config.radius;
        let table = NasTable::load(ctx.nas.as_ref(), &ctx.master_key, &registry, None).await?;
        let stats = Arc::clone(registry.acct.get_or_init(Arc::default));
        let dedup = DuplicateCache::new(radius.duplicate_cache_entries, radius.duplicate_ttl);
        let audit = ctx.verifier.audit_sink().cloned();
        let (shared, rx) = Shared::new(config, stats, dedup, audit);
        let door = AcctDoor {
            nas_refresh: radius.nas_refresh,
            nas: RwLock::new(Arc::new(table)),
            registry,
            shared: Arc::new(shared),
            ctx,
        };
        Ok((Arc::new(door), rx))
    }

    /// The cheap checks on one datagram, in the receive loop; a good new record goes to
    /// the writer's queue, or is dropped (counted) if the queue is full.
    fn dispatch(
        &self,
        sock: &Arc<RadiusSocket>,
        data: &[u8],
        got: Received,
        tracker: &TaskTracker,
    ) {
        // When it reached the socket: a receive thread that fell behind (it runs at the
        // door's nice value) reads datagrams that waited in the kernel's buffer, and their
        // wait counts toward `max_queue_age` like the queue's.
        let now = Instant::now();
        let arrived = got.buffered.and_then(|w| now.checked_sub(w)).unwrap_or(now);
        let table = Arc::clone(&self.nas.read());
        let Some(nas) = table.lookup(got.peer.ip()) else {
            let unknown = self.shared.stats.nas(UNKNOWN_NAS);
            unknown.request();
            self.dropped(&unknown, UNKNOWN_NAS, got.peer.ip(), AcctDrop::UnknownNas);
            return;
        };
        let stats = self.shared.stats.nas(&nas.name);
        stats.request();
        if got.truncated {
            self.dropped(&stats, &nas.name, got.peer.ip(), AcctDrop::Malformed);
            return;
        }
        // Too old to be answered in time already: dropped before any further work.
        let admissible = self.shared.config.max_queue_age.mul_f64(queue::ADMIT_SHARE);
        if now.saturating_duration_since(arrived) > admissible {
            self.dropped(&stats, &nas.name, got.peer.ip(), AcctDrop::Late);
            return;
        }
        let path = ReplyPath::Udp {
            sock: Arc::clone(sock),
            peer: got.peer,
            local: got.local,
        };
        self.admit(nas, data, got.peer, path, arrived, tracker);
    }

    /// The checks every Accounting-Request of a known NAS passes, whatever its transport
    /// (the UDP receive loop above, a RadSec connection, which counted the request
    /// already): the RFC 2866 authenticator, the typed record, the duplicate cache; then
    /// the bounded queue to the writer, which answers through `path` after the commit.
    pub(crate) fn admit(
        &self,
        nas: &Nas,
        data: &[u8],
        from: SocketAddr,
        path: ReplyPath,
        arrived: Instant,
        tracker: &TaskTracker,
    ) {
        let stats = self.shared.stats.nas(&nas.name);
        let Ok(packet) = Packet::parse(data) else {
            self.dropped(&stats, &nas.name, from.ip(), AcctDrop::Malformed);
            return;
        };
        let checked = if nas.radius_1_1 {
            // RFC 9765: no Request Authenticator to check, TLS authenticated the packet.
            if packet.code == portcullis_radius::Code::AccountingRequest {
                Ok(portcullis_radius::MessageAuthenticator::Absent)
            } else {
                Err(portcullis_radius::AcctError::NotAccountingRequest)
            }
        } else {
            check_accounting_request(&packet, nas.secret())
        };
        if let Err(e) = checked {
            let why = match e {
                portcullis_radius::AcctError::NotAccountingRequest => AcctDrop::Malformed,
                _ => AcctDrop::BadAuthenticator,
            };
            self.dropped(&stats, &nas.name, from.ip(), why);
            return;
        }
        let Ok(request) = AcctRequest::parse(&packet) else {
            self.dropped(&stats, &nas.name, from.ip(), AcctDrop::Malformed);
            return;
        };
        let record = to_record(&nas.name, &request, &packet, unix_now());
        let bytes = if nas.radius_1_1 {
            v11::encode_response(portcullis_radius::Code::AccountingResponse, &packet, &[])
        } else {
            encode_accounting_response(&packet, nas.secret())
        };
        let Ok(bytes) = bytes else {
            self.dropped(&stats, &nas.name, from.ip(), AcctDrop::Malformed);
            return;
        };
        if record.validate().is_err() {
            self.dropped(&stats, &nas.name, from.ip(), AcctDrop::Malformed);
            return;
        }
        let key = nas.request_key(from, &packet);
        match self.shared.dedup.lock().check(key, arrived) {
            Seen::New => {}
            Seen::InProgress => {
                self.dropped(&stats, &nas.name, from.ip(), AcctDrop::InProgress);
                return;
            }
            Seen::Answered(reply) => {
                stats.duplicate();
                tracker.spawn(async move {
                    if let Err(e) = path.send(reply).await {
                        tracing::debug!(peer = %from, "resending an Accounting-Response failed: {e}");
                    }
                });
                return;
            }
        }
        let pending = Pending {
            record,
            reply: Reply {
                bytes: bytes.into(),
                path,
                peer: from,
                key,
                status: request.status,
                stats: Arc::clone(&stats),
                arrived,
                unable: nas.overloaded_answer(&packet),
            },
        };
        // The clock the writer reads (tokio's: a paused test clock in the writer's tests).
        let now = tokio::time::Instant::now().into_std();
        self.shared.enqueue(pending, &nas.name, now, tracker);
    }

    /// Count a request of `nas` from `source` dropped unanswered, and audit its class.
    fn dropped(&self, stats: &AcctNasStats, nas: &str, source: std::net::IpAddr, why: AcctDrop) {
        self.shared.dropped(stats, nas, source, why);
    }

    /// Count an Accounting-Request of `nas` that arrived other than by UDP (RadSec), before
    /// [`AcctDoor::admit`] (which counts only what it drops, queues or answers again).
    pub(crate) fn count_request(&self, nas: &str) {
        self.shared.stats.nas(nas).request();
    }

    /// Reload the NAS table (keeps the old one if the store fails).
    async fn refresh(&self) {
        NasTable::refresh(
            &self.nas,
            self.ctx.nas.as_ref(),
            &self.ctx.master_key,
            &self.registry,
        )
        .await;
    }

    /// Retention: forget what is older than `keep_days`.
    async fn prune(&self) {
        let Some(keep) = self.shared.config.keep else {
            return;
        };
        let before = unix_now() - i64::try_from(keep.as_secs()).unwrap_or(i64::MAX);
        match self.ctx.accounting.prune_accounting(before).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!("accounting retention: {n} records older than {before} removed")
            }
            Err(e) => portcullis_door::metrics::store_failure("pruning accounting records", &e),
        }
    }

    /// Count the open sessions for the status page and `/metrics`.
    async fn count_online(&self) {
        match self.ctx.accounting.acct_sessions_online().await {
            Ok(n) => {
                self.shared
                    .stats
                    .online
                    .store(n, std::sync::atomic::Ordering::Relaxed);
                metrics::gauge!(ONLINE).set(n as f64);
            }
            Err(e) => portcullis_door::metrics::store_failure("counting accounting sessions", &e),
        }
    }
}

/// Text of an attribute (lossy: a NAS may send any octets; the raw value stays in
/// `attributes`).
fn text(v: Option<&[u8]>) -> Option<String> {
    v.map(|b| String::from_utf8_lossy(b).into_owned())
}

/// The stored form of one parsed request received at `now`.
fn to_record(nas: &str, r: &AcctRequest<'_>, packet: &Packet<'_>, now: i64) -> AcctRecord {
    let clamp = |v: Option<u64>| v.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    let framed = r
        .framed_ip
        .map(|a| a.to_string())
        .or_else(|| r.framed_ipv6.map(|a| a.to_string()));
    AcctRecord {
        nas: nas.to_owned(),
        session_id: String::from_utf8_lossy(r.session_id).into_owned(),
        status: i64::from(r.status.as_u32()),
        event_time: r.event_time(now),
        received_at: now,
        delay: i64::from(r.delay),
        username: text(r.user_name),
        station: text(r.calling_station_id),
        called_station: text(r.called_station_id),
        framed_ip: framed,
        input_octets: clamp(r.input_octets),
        output_octets: clamp(r.output_octets),
        input_packets: r.input_packets.map(i64::from),
        output_packets: r.output_packets.map(i64::from),
        session_time: r.session_time.map(i64::from),
        terminate_cause: r.terminate_cause.map(i64::from),
        attributes: packet.raw().get(20..).unwrap_or_default().to_vec(),
    }
}

/// Serve accounting on `sockets` until `stop`; then wait for `writer` to commit and
/// answer what is queued. The receive threads are started before this returns: one that
/// cannot be started fails start-up here instead of leaving a socket bound that nobody
/// reads.
pub fn run(
    door: Arc<AcctDoor>,
    writer: Writer,
    sockets: Vec<RadiusSocket>,
    stop: CancellationToken,
) -> Result<impl Future<Output = ()> + Send + 'static, portcullis_door::DoorError> {
    let tracker = TaskTracker::new();
    let priority = door.shared.config.priority;
    super::socket::start_all(
        sockets,
        "RADIUS accounting",
        priority,
        &tracker,
        &stop,
        |reply_sock| {
            let (d, t) = (Arc::clone(&door), tracker.clone());
            move |data, got| d.dispatch(&reply_sock, data, got, &t)
        },
    )?;
    Ok(async move {
        let mut refresh = tokio::time::interval(door.nas_refresh);
        let mut prune = tokio::time::interval(door.shared.config.prune_interval);
        let mut online = tokio::time::interval(Duration::from_secs(5));
        for t in [&mut refresh, &mut prune, &mut online] {
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        }
        refresh.tick().await;
        loop {
            tokio::select! {
                _ = refresh.tick() => door.refresh().await,
                _ = prune.tick() => door.prune().await,
                _ = online.tick() => door.count_online().await,
                () = stop.cancelled() => break,
            }
        }
        tracker.close();
        tracker.wait().await;
        writer.finished().await;
    })
}
