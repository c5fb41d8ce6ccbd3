//! The RADIUS front door (RFC 2865 over UDP): PAP Access-Requests and Status-Server from
//! registered NASes, verified through the same core as the token endpoint.
//!
//! Report 003's lessons, each a rule here:
//! - **Bounded work on the receive path.** One receive loop per socket ([`run`], on a
//!   thread of its own: [`socket::start_receiving`]) that never hashes and never waits for
//!   a verdict: it drops what it can drop cheaply (unknown
//!   source, malformed, bad Message-Authenticator, duplicate, over the in-progress bound),
//!   and answers each new request right there as far as it can without waiting; one that
//!   must wait (the core, a store, a reject delay) or do a full TLS handshake's
//!   signatures goes on in a task of its own ([`inline`]).
//! - **Duplicates** are answered from [`dedup`] byte for byte, without a second hash.
//! - **Early drop under overload.** At most `receive_queue` requests in progress; beyond
//!   that, and whenever the core answers "overloaded", the datagram is dropped silently and
//!   counted (the NAS retransmits); the kernel's socket buffer absorbs short bursts and
//!   drops the rest. Nothing grows without bound.
//! - **Replies go to their own request's source**, from the local address it arrived on:
//!   the addressing comes back from the same `recvmsg` as the bytes ([`socket`]).
//! - **Reject delay is a timer** (plus jitter), never a thread; delayed replies are bounded
//!   too.
//!
//! Fairness: every user behind a NAS shares its address, so the core's source is the NAS
//! address and its *station* is Calling-Station-Id (else User-Name): throttling and fair
//! queuing see (NAS, station), not the NAS alone.
//!
//! Accounting (RFC 2866) is the sibling door in [`acct`]: its own sockets, queue and
//! writer over the same NAS table.
//!
//! BlastRADIUS (CVE-2024-3596): Access-Requests without a valid Message-Authenticator are
//! dropped unless the NAS is registered with `--no-message-authenticator`, and every reply
//! carries Message-Authenticator as its first attribute (`portcullis_radius`).

// Unsafe blocks only in `priority` (per-thread nice and SCHED_IDLE); the rest may not add any.
#![deny(unsafe_code)]

pub mod acct;
pub mod config;
mod context;
pub mod dedup;
pub mod eap;
mod handle;
mod inline;
pub mod nas;
mod priority;
pub use priority::ThreadPriority;
pub mod radsec;
mod reply;
pub mod socket;
mod status;
mod verdict;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, RwLock};
use portcullis_core::{AuditContext, AuditEvent, AuditOutcome, PrincipalKind, Protocol};
use portcullis_radius::{
    Code, MessageAuthenticator, Packet, attr, check_request_message_authenticator_keyed,
};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use config::RadiusConfig;
pub use context::{RadiusContext, RadiusDoorConfig};
pub use socket::RadiusSocket;

use dedup::{DuplicateCache, Seen};
use nas::{DropReason, Nas, NasStats, NasTable, StatsRegistry, UNKNOWN_NAS};
use reply::ReplyPath;
use socket::Received;

/// Bind every configured RADIUS address (none: RADIUS is off).
pub fn bind(config: &RadiusConfig) -> std::io::Result<Vec<RadiusSocket>> {
    config
        .listen
        .iter()
        .map(|a| {
            RadiusSocket::bind(*a).map_err(|e| std::io::Error::new(e.kind(), format!("{a}: {e}")))
        })
        .collect()
}

/// The state the RADIUS front door shares between its receive loops and request tasks.
pub struct Radius {
    /// The server's shared state: the core, the store, the master key.
    ctx: Arc<RadiusContext>,
    /// `[radius]`, validated.
    config: RadiusConfig,
    /// The current NAS snapshot; swapped whole on refresh.
    nas: RwLock<Arc<NasTable>>,
    /// Per-NAS counters, surviving refreshes (also read by the status page).
    stats: Arc<StatsRegistry>,
    /// Counters of sources that match no NAS.
    unknown: Arc<NasStats>,
    /// Requests answered or in progress, for duplicate detection.
    dedup: Mutex<DuplicateCache>,
    /// Bound on requests being verified.
    in_progress: Arc<Semaphore>,
    /// Bound on replies waiting out their reject delay (each holds a timer and its bytes).
    delayed: Arc<Semaphore>,
    /// When each NAS was last told (in the log) that we refuse CHAP/MS-CHAP/EAP.
    unsupported_logged: Mutex<HashMap<String, Instant>>,
    /// Reject-delay jitter.
    rng: Mutex<SmallRng>,
    /// 802.1X, when `[radius.eap]` is configured.
    pub eap: Option<Arc<eap::EapDoor>>,
}

impl std::fmt::Debug for Radius {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Radius")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Radius {
    /// The audit event of a datagram the core never saw (dropped at the door, or a
    /// retransmission answered again): the NAS is the event's client, the User-Name (when
    /// the datagram got far enough to have one) its principal.
    pub(crate) fn audit_door(
        &self,
        peer: IpAddr,
        nas: Option<&str>,
        user: Option<&[u8]>,
        outcome: AuditOutcome,
        reason: &'static str,
    ) {
        let Some(sink) = self.ctx.verifier.audit_sink() else {
            return;
        };
        sink.record(AuditEvent {
            time: std::time::SystemTime::now(),
            protocol: Protocol::RadiusPap,
            kind: PrincipalKind::User,
            principal: user
                .map(|u| String::from_utf8_lossy(u).into_owned())
                .unwrap_or_default(),
            context: AuditContext {
                request_id: portcullis_core::audit::request_id(),
                client_id: nas.map(str::to_owned),
                eap: None,
            },
            source: peer,
            station: None,
            outcome,
            reason,
            latency: std::time::Duration::ZERO,
            class: None,
            directory: None,
        });
    }

    /// Assemble the front door and load the NAS table once (a store failure here is a
    /// start-up error, not a server that silently drops everything).
    pub async fn new(
        ctx: Arc<RadiusContext>,
        stats: Arc<StatsRegistry>,
    ) -> Result<Arc<Radius>, portcullis_door::DoorError> {
        let config = ctx.config.radius.clone();
        let table = NasTable::load(ctx.nas.as_ref(), &ctx.master_key, &stats, None).await?;
        if table.is_empty() {
            tracing::warn!(
                "RADIUS is on but no NAS is registered: every request will be dropped \
                 (add one with `portcullis nas add NAME --address CIDR`)"
            );
        }
        let eap = match config.eap.clone() {
            Some(c) => {
                let door = Arc::new(eap::EapDoor::new(&ctx, c)?);
                let _ = stats.eap.set(Arc::clone(&door.stats));
                ctx.reloads
                    .register(Arc::clone(&door) as Arc<dyn portcullis_door::reload::Reloadable>);
                Some(door)
            }
            None => None,
        };
        Ok(Arc::new(Radius {
            eap,
            unknown: stats.get(UNKNOWN_NAS),
            nas: RwLock::new(Arc::new(table)),
            stats,
            dedup: Mutex::new(DuplicateCache::new(
                config.duplicate_cache_entries,
                config.duplicate_ttl,
            )),
            in_progress: Arc::new(Semaphore::new(config.receive_queue)),
            delayed: Arc::new(Semaphore::new(config.duplicate_cache_entries)),
            unsupported_logged: Mutex::new(HashMap::new()),
            rng: Mutex::new(SmallRng::from_os_rng()),
            config,
            ctx,
        }))
    }

    /// Per-NAS counters (the status page reads them).
    pub fn stats(&self) -> &Arc<StatsRegistry> {
        &self.stats
    }

    /// Reload the NAS table from the store (keeps the old one if the store fails).
    async fn refresh(&self) {
        NasTable::refresh(
            &self.nas,
            self.ctx.nas.as_ref(),
            &self.ctx.master_key,
            &self.stats,
        )
        .await;
    }

    /// The cheap checks on one datagram, in the receive loop: who sent it, is it a
    /// well-formed request with a good Message-Authenticator, have we seen it, is there
    /// room. Hands new requests to a task of their own.
    fn dispatch(
        self: &Arc<Self>,
        sock: &Arc<RadiusSocket>,
        data: &[u8],
        got: Received,
        tracker: &TaskTracker,
    ) {
        let arrived = Instant::now();
        let table = Arc::clone(&self.nas.read());
        let peer = got.peer.ip();
        let Some(nas) = table.lookup(peer) else {
            self.unknown.request();
            self.unknown.dropped(DropReason::UnknownNas);
            self.audit_door(peer, None, None, AuditOutcome::Dropped, "unknown_nas");
            return;
        };
        nas.stats.request();
        if got.truncated {
            nas.stats.dropped(DropReason::Malformed);
            let name = Some(nas.name.as_str());
            self.audit_door(peer, name, None, AuditOutcome::Dropped, "malformed");
            return;
        }
        let path = ReplyPath::Udp {
            sock: Arc::clone(sock),
            peer: got.peer,
            local: got.local,
        };
        self.admit(nas, data, got.peer, path, arrived, tracker);
    }

    /// The checks every request of a known NAS passes, whatever its transport (the UDP
    /// receive loop above, a RadSec connection): well-formed, a code this door serves, a
    /// good Message-Authenticator, not a copy of one in progress, room in the bound. A
    /// new request gets a task of its own that answers through `path`.
    pub(crate) fn admit(
        self: &Arc<Self>,
        nas: &Arc<Nas>,
        data: &[u8],
        from: SocketAddr,
        path: ReplyPath,
        arrived: Instant,
        tracker: &TaskTracker,
    ) {
        let peer = from.ip();
        let name = Some(nas.name.as_str());
        let Ok(packet) = Packet::parse(data) else {
            nas.stats.dropped(DropReason::Malformed);
            self.audit_door(peer, name, None, AuditOutcome::Dropped, "malformed");
            return;
        };
        let user = packet.attr(attr::USER_NAME);
        if !matches!(packet.code, Code::AccessRequest | Code::StatusServer) {
            nas.stats.dropped(DropReason::Malformed);
            self.audit_door(peer, name, user, AuditOutcome::Dropped, "malformed");
            return;
        }
        let checked = if nas.radius_1_1 {
            // RFC 9765 §5.2: TLS authenticates the packet; a Message-Authenticator sent
            // anyway is an invalid attribute, ignored.
            MessageAuthenticator::Valid
        } else {
            check_request_message_authenticator_keyed(&packet, nas.keyed_secret())
        };
        match checked {
            MessageAuthenticator::Valid => {}
            MessageAuthenticator::Absent
                if packet.code == Code::AccessRequest && !nas.require_message_authenticator => {}
            // Status-Server must carry one (RFC 5997 §3), whatever the NAS policy.
            MessageAuthenticator::Absent | MessageAuthenticator::Invalid => {
                nas.stats.dropped(DropReason::BadAuthenticator);
                let why = DropReason::BadAuthenticator.label();
                self.audit_door(peer, name, user, AuditOutcome::Dropped, why);
                return;
            }
        }
        let key = nas.request_key(from, &packet);
        let seen = self.dedup.lock().check(key, arrived);
        match seen {
            Seen::New => {}
            Seen::InProgress => {
                nas.stats.dropped(DropReason::InProgress);
                self.audit_door(peer, name, user, AuditOutcome::Duplicate, "in_progress");
                return;
            }
            Seen::Answered(reply) => {
                nas.stats.duplicate();
                self.audit_door(peer, name, user, AuditOutcome::Duplicate, "answered_again");
                inline::answer_here_or_spawn(tracker, async move {
                    if let Err(e) = path.send(reply).await {
                        tracing::debug!(peer = %from, "resending a RADIUS reply failed: {e}");
                    }
                });
                return;
            }
        }
        let Ok(permit) = Arc::clone(&self.in_progress).try_acquire_owned() else {
            self.dedup.lock().forget(&key);
            nas.stats.dropped(DropReason::Overload);
            self.audit_door(
                peer,
                name,
                user,
                AuditOutcome::Dropped,
                "receive_queue_full",
            );
            if let Some(answer) = nas.overloaded_answer(&packet) {
                path.send_later(answer, tracker);
            }
            return;
        };
        let request = verdict::Request {
            data: data.to_vec(),
            peer: from,
            path,
            key,
            arrived,
            nas: Arc::clone(nas),
            request_id: portcullis_core::audit::request_id(),
        };
        inline::answer_here_or_spawn(tracker, handle::answer(Arc::clone(self), request, permit));
    }
}

/// Serve RADIUS on `sockets` until `stop` is cancelled, then let the requests in progress
/// finish (a pending reject still waits out its delay) and return. The receive threads
/// are started before this returns: one that cannot be started fails start-up here
/// instead of leaving a socket bound that nobody reads.
pub fn run(
    radius: Arc<Radius>,
    sockets: Vec<RadiusSocket>,
    stop: CancellationToken,
) -> Result<impl Future<Output = ()> + Send + 'static, portcullis_door::DoorError> {
    let tracker = TaskTracker::new();
    socket::start_all(
        sockets,
        "RADIUS",
        ThreadPriority::Normal,
        &tracker,
        &stop,
        |reply_sock| {
            let (door, t) = (Arc::clone(&radius), tracker.clone());
            move |data, got| door.dispatch(&reply_sock, data, got, &t)
        },
    )?;
    Ok(async move {
        let mut tick = tokio::time::interval(radius.config.nas_refresh);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        // Idle EAP conversations are forgotten once a second.
        let mut sweep = tokio::time::interval(std::time::Duration::from_secs(1));
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => radius.refresh().await,
                _ = sweep.tick() => {
                    if let Some(eap) = &radius.eap {
                        eap.sweep();
                    }
                }
                () = stop.cancelled() => break,
            }
        }
        tracker.close();
        tracker.wait().await;
    })
}

/// The addresses RADIUS sockets are bound to (for logs and embedding).
pub fn addresses(sockets: &[RadiusSocket]) -> Vec<SocketAddr> {
    sockets.iter().map(RadiusSocket::local_addr).collect()
}
