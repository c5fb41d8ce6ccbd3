//! 802.1X on the RADIUS door: EAP-TLS and EAP-TTLS/PAP (RFC 3579 over RFC 2865), driven
//! by the pure machine of `portcullis_eap`. This module owns what the machine leaves to
//! its caller: the conversation [`table`] (State attribute, NAS binding, bounds, expiry),
//! the decisions (inner PAP through the same `Verifier` as every password; client
//! certificates and resumed sessions through the core's proof path, so throttling and
//! charging are the same as for any credential), the keys to the NAS (MS-MPPE-*-Key,
//! RFC 2548), the TTLS identities that resumed sessions carry over (the app's
//! `SessionStore`: Redis when configured, so roaming devices resume on any instance),
//! counters, metrics and audit events.
//!
//! One login's path: Access-Request with EAP-Message → [`answer`] → new conversation
//! (admitted only below 7/8 of the table, so logins in progress are never the ones
//! refused) or the one its State names (same NAS only) → `Conversation::step` →
//! Access-Challenge with State and the next EAP-Request, or a decision, then
//! Access-Accept with EAP-Success and keys, or Access-Reject with EAP-Failure after the
//! reject delay. Retransmissions are answered by the door's duplicate cache before they
//! get here, so a round trip never advances a conversation twice.

pub mod chain;
pub mod config;
mod decide;
pub mod hold;
pub mod stats;
pub mod table;
pub mod tls;

pub use stats::EapStats;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use portcullis_core::{AuditContext, EapDetail, PrincipalKind, ProofCheck, Protocol};
use portcullis_eap::{Conversation, Reason, Start, Step, method};
use portcullis_radius::{Packet, attr, mppe};
use rand::Rng;

use self::config::EapConfig;
use self::table::{Miss, Table};
use super::Radius;
use super::nas::DropReason;
use super::verdict::{Request, Verdict};
use crate::RadiusContext;

/// The EAP side of the RADIUS door.
pub struct EapDoor {
    /// `[radius.eap]`.
    pub config: EapConfig,
    /// What was read from the files `config` names; swapped whole on SIGHUP.
    loaded: RwLock<Arc<Loaded>>,
    /// Opens the shared ticket keys again on reload.
    master_key: portcullis_store::MasterKey,
    /// Conversations between round trips.
    table: Table,
    /// What client chains came to, read once per distinct chain.
    chains: chain::ChainCache,
    /// Handles of the series every login touches.
    series: Series,
    /// Stations whose new conversations the core's throttle would refuse.
    holds: hold::Holds,
    /// Counters (shared with the status page through the NAS stats registry).
    pub stats: Arc<EapStats>,
}

/// The parts of the door read from files: certificate and key, client CAs, CRLs.
struct Loaded {
    /// What every conversation shares (rustls configurations, bounds).
    settings: portcullis_eap::Settings,
    /// Client certificate checks (EAP-TLS offered).
    check: Option<tls::ClientCheck>,
}

impl std::fmt::Debug for EapDoor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EapDoor")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl EapDoor {
    /// Build from `[radius.eap]`: certificates are read and checked now.
    pub fn new(
        ctx: &RadiusContext,
        config: EapConfig,
    ) -> Result<EapDoor, portcullis_door::DoorError> {
        let (settings, check) =
            tls::build(&config, &ctx.master_key, config.max_conversations, None)
                .map_err(|e| portcullis_door::DoorError::Config(format!("radius.eap: {e}")))?;
        let series = register_series();
        Ok(EapDoor {
            table: Table::new(
                config.max_conversations,
                config.max_conversations_per_nas,
                config.conversation_timeout,
            ),
            loaded: RwLock::new(Arc::new(Loaded { settings, check })),
            chains: chain::ChainCache::new(config.tls_identity),
            series,
            master_key: ctx.master_key.clone(),
            holds: hold::Holds::default(),
            stats: Arc::new(EapStats::default()),
            config,
        })
    }

    /// What is in force now (conversations in progress keep the rustls configuration
    /// their handshake started with).
    fn loaded(&self) -> Arc<Loaded> {
        Arc::clone(&self.loaded.read())
    }

    /// Conversations in progress.
    pub fn conversations(&self) -> usize {
        self.table.len()
    }

    /// Publish the table's size to the counters (status page) and the gauge.
    fn publish_size(&self) {
        let n = self.table.len();
        self.stats.conversations.store(n as u64, Ordering::Relaxed);
        self.series.conversations.set(n as f64);
    }

    /// Forget idle conversations (called every second by the door).
    pub fn sweep(&self) {
        let n = self.table.sweep(Instant::now());
        if n > 0 {
            self.stats.expired.fetch_add(n as u64, Ordering::Relaxed);
            metrics::counter!("portcullis_eap_expired_total").increment(n as u64);
        }
        self.publish_size();
    }
}

/// Refusal reasons registered at zero (the dashboard's series exist before the first).
const REFUSALS: [&str; 13] = [
    "new_conversation_overload",
    "station_throttled",
    "unknown_state",
    "state_other_nas",
    "nt_hash_method",
    "no_common_method",
    "protocol",
    "tls_handshake",
    "too_many_rounds",
    "inner_method",
    "wrong_password",
    "throttled",
    "resumption_unknown",
];

/// The series a successful login or a round trip touches, registered once instead of
/// looked up by name and labels (a hash and a registry lock) every time.
struct Series {
    /// `portcullis_eap_logins_total{outcome="success"}` by [method][resumed].
    logins: [[metrics::Counter; 2]; 2],
    /// `portcullis_eap_round_trips_total` by method.
    round_trips: [metrics::Counter; 2],
    /// `portcullis_eap_conversations`.
    conversations: metrics::Gauge,
}

impl Series {
    /// Index of a method in the arrays (EAP-TLS 0, EAP-TTLS 1).
    fn of(m: u8) -> usize {
        usize::from(m != method::TLS)
    }
}

/// Every EAP series at zero, so dashboards and alerts see them before the first login;
/// returns the handles of the hot ones.
fn register_series() -> Series {
    let methods = ["tls", "ttls"];
    let success = |m: &'static str, h: &'static str| metrics::counter!("portcullis_eap_logins_total", "method" => m, "handshake" => h, "outcome" => "success");
    for m in methods {
        for h in ["full", "resumed"] {
            success(m, h).increment(0);
            metrics::counter!("portcullis_eap_logins_total", "method" => m, "handshake" => h, "outcome" => "failure")
                .increment(0);
        }
        metrics::counter!("portcullis_eap_round_trips_total", "method" => m).increment(0);
    }
    for r in REFUSALS {
        metrics::counter!("portcullis_eap_refused_total", "reason" => r).increment(0);
    }
    metrics::counter!("portcullis_eap_expired_total").increment(0);
    let conversations = metrics::gauge!("portcullis_eap_conversations");
    conversations.set(0.0);
    Series {
        logins: methods.map(|m| [success(m, "full"), success(m, "resumed")]),
        round_trips: methods
            .map(|m| metrics::counter!("portcullis_eap_round_trips_total", "method" => m)),
        conversations,
    }
}

pub(super) fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl EapDoor {
    fn lifetime_ms(&self) -> i64 {
        i64::try_from(self.config.resumption_lifetime.as_millis()).unwrap_or(i64::MAX)
    }
}

pub(super) fn station(packet: &Packet<'_>) -> Option<String> {
    packet
        .attr(attr::CALLING_STATION_ID)
        .map(|s| String::from_utf8_lossy(s).chars().take(64).collect())
}

fn state_key(v: &[u8]) -> Option<[u8; 16]> {
    v.try_into().ok()
}

/// Answer an Access-Request that carries EAP-Message.
pub(super) async fn answer(
    radius: &Radius,
    door: &EapDoor,
    req: &Request,
    packet: &Packet<'_>,
) -> Verdict {
    // RFC 3579 §3.3: an Access-Request with EAP-Message must carry Message-Authenticator,
    // whatever the NAS's PAP policy. The receive loop already dropped one that does not
    // verify, so presence is what is left to check. RADIUS/1.1 has none (RFC 9765 §5.2).
    if !req.nas.radius_1_1 && packet.attr(attr::MESSAGE_AUTHENTICATOR).is_none() {
        return Verdict::Drop(DropReason::BadAuthenticator);
    }
    let parts = packet
        .attributes()
        .filter(|(t, _)| *t == attr::EAP_MESSAGE)
        .map(|(_, v)| v);
    let Ok(eap) = portcullis_eap::radius::join(parts, portcullis_radius::MAX_PACKET) else {
        return Verdict::Drop(DropReason::Malformed);
    };
    let now = Instant::now();
    match packet.attr(attr::STATE) {
        Some(s) => {
            let Some(key) = state_key(s) else {
                return failure_for_unknown(radius, door, req, &eap);
            };
            match door.table.checkout(&key, &req.nas.name) {
                Ok((conv, pending)) => {
                    let step = match pending {
                        Some(p) => Step::Verify(p),
                        None => {
                            let mut conv = conv;
                            if conv.may_be_costly(&eap) {
                                if conv.opens_full_handshake(&eap) {
                                    door.stats.full_handshakes.fetch_add(1, Ordering::Relaxed);
                                }
                                super::inline::off_loop().await;
                            }
                            let step = conv.step(&door.loaded().settings, &eap);
                            return drive(radius, door, req, packet, key, conv, step, now).await;
                        }
                    };
                    drive(radius, door, req, packet, key, conv, step, now).await
                }
                Err(Miss::Unknown) => {
                    door.stats.unknown_state.fetch_add(1, Ordering::Relaxed);
                    failure_for_unknown(radius, door, req, &eap)
                }
                Err(Miss::OtherNas) => {
                    door.stats.other_nas.fetch_add(1, Ordering::Relaxed);
                    refused_at_door(
                        radius,
                        req,
                        packet,
                        ("state_other_nas", "eap_state_other_nas"),
                        portcullis_core::AuditOutcome::Dropped,
                    );
                    Verdict::Drop(DropReason::Malformed)
                }
                Err(Miss::Busy) => Verdict::Drop(DropReason::InProgress),
            }
        }
        None => {
            if let Some(v) = refuse_held(radius, door, req, packet, &eap, now) {
                return v;
            }
            let queue_low =
                radius.in_progress.available_permits() < radius.config.receive_queue / 8;
            if queue_low || !door.table.admit(&req.nas.name) {
                door.stats.refused_new.fetch_add(1, Ordering::Relaxed);
                metrics::counter!("portcullis_eap_refused_total", "reason" => "new_conversation_overload").increment(1);
                return Verdict::Drop(DropReason::Overload);
            }
            let (key, binding): ([u8; 16], [u8; 16]) = {
                let mut rng = rand::rng();
                (rng.random(), rng.random())
            };
            let framed_mtu = packet
                .attr(attr::FRAMED_MTU)
                .and_then(|v| <[u8; 4]>::try_from(v).ok())
                .map(|b| u32::from_be_bytes(b) as usize);
            let start = Start {
                methods: door.config.methods_for(&req.nas.name),
                framed_mtu,
                binding,
            };
            let (conv, step) = Conversation::start(&door.loaded().settings, &eap, &start);
            door.stats.started.fetch_add(1, Ordering::Relaxed);
            match conv {
                Some(c) => drive(radius, door, req, packet, key, Box::new(c), step, now).await,
                None => finish_without_conversation(radius, door, req, packet, step),
            }
        }
    }
}

/// A new conversation from a station the core's throttle refuses ([`hold`]): EAP-Failure
/// after the reject delay (a timer), before any TLS handshake is spent on it.
fn refuse_held(
    radius: &Radius,
    door: &EapDoor,
    req: &Request,
    packet: &Packet<'_>,
    eap: &[u8],
    now: Instant,
) -> Option<Verdict> {
    let st = station(packet)?;
    door.holds.held(&req.nas.name, &st, now)?;
    door.stats.held.fetch_add(1, Ordering::Relaxed);
    refused_at_door(
        radius,
        req,
        packet,
        ("station_throttled", "eap_station_throttled"),
        portcullis_core::AuditOutcome::Throttled,
    );
    let id = portcullis_eap::Packet::parse(eap).map_or(0, |p| p.identifier);
    Some(reject_with(
        radius,
        req.arrived,
        Duration::ZERO,
        portcullis_eap::packet::failure(id),
    ))
}

/// A refusal decided at the door, before the core: counted under `reason` in
/// `portcullis_eap_refused_total`, audited with `outcome` and `audit_reason`.
fn refused_at_door(
    radius: &Radius,
    req: &Request,
    packet: &Packet<'_>,
    (reason, audit_reason): (&'static str, &'static str),
    outcome: portcullis_core::AuditOutcome,
) {
    metrics::counter!("portcullis_eap_refused_total", "reason" => reason).increment(1);
    radius.audit_door(
        req.peer.ip(),
        Some(&req.nas.name),
        packet.attr(attr::USER_NAME),
        outcome,
        audit_reason,
    );
}

/// A State we do not know (expired, or from before a restart): EAP-Failure, so the
/// peer starts over instead of waiting out its timeouts.
fn failure_for_unknown(radius: &Radius, door: &EapDoor, req: &Request, eap: &[u8]) -> Verdict {
    let id = portcullis_eap::Packet::parse(eap).map_or(0, |p| p.identifier);
    door.stats.failures.fetch_add(1, Ordering::Relaxed);
    metrics::counter!("portcullis_eap_refused_total", "reason" => "unknown_state").increment(1);
    radius.audit_door(
        req.peer.ip(),
        Some(&req.nas.name),
        None,
        portcullis_core::AuditOutcome::Rejected,
        "eap_unknown_state",
    );
    reject_with(
        radius,
        req.arrived,
        Duration::ZERO,
        portcullis_eap::packet::failure(id),
    )
}

fn finish_without_conversation(
    radius: &Radius,
    door: &EapDoor,
    req: &Request,
    packet: &Packet<'_>,
    step: Step,
) -> Verdict {
    match step {
        Step::Reject { eap, reason } => {
            door.stats.failures.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("portcullis_eap_refused_total", "reason" => reason.label())
                .increment(1);
            radius.audit_door(
                req.peer.ip(),
                Some(&req.nas.name),
                packet.attr(attr::USER_NAME),
                portcullis_core::AuditOutcome::Rejected,
                reason.label(),
            );
            reject_with(radius, req.arrived, Duration::ZERO, eap)
        }
        _ => Verdict::Drop(DropReason::Malformed),
    }
}

fn reject_with(radius: &Radius, arrived: Instant, after: Duration, eap: Vec<u8>) -> Verdict {
    let mut v = super::verdict::reject(radius, arrived, after);
    if let Verdict::Reply { attrs, .. } = &mut v {
        attrs.extend(portcullis_eap::radius::split(&eap).map(|c| (attr::EAP_MESSAGE, c.to_vec())));
    }
    v
}

pub(super) fn eap_detail(conv: &Conversation, m: Option<u8>, resumed: bool) -> EapDetail {
    EapDetail {
        method: method::name(m.or(conv.method()).unwrap_or(0)),
        outer_identity: conv.outer_identity().to_owned(),
        resumed,
        rounds: conv.rounds(),
    }
}

#[allow(clippy::too_many_arguments)]
async fn drive(
    radius: &Radius,
    door: &EapDoor,
    req: &Request,
    packet: &Packet<'_>,
    key: [u8; 16],
    mut conv: Box<Conversation>,
    mut step: Step,
    now: Instant,
) -> Verdict {
    let mut answer_after = Duration::ZERO;
    let mut proven_until = None;
    loop {
        match step {
            Step::Challenge(eap) => {
                if !door.table.checkin(key, &req.nas.name, conv, None, now) {
                    door.stats.refused_new.fetch_add(1, Ordering::Relaxed);
                    return Verdict::Drop(DropReason::Overload);
                }
                door.publish_size();
                let mut attrs = vec![(attr::STATE, key.to_vec())];
                attrs.extend(
                    portcullis_eap::radius::split(&eap).map(|c| (attr::EAP_MESSAGE, c.to_vec())),
                );
                return Verdict::Reply {
                    code: portcullis_radius::Code::AccessChallenge,
                    not_before: req.arrived,
                    attrs,
                };
            }
            Step::Verify(p) => match decide::decide(radius, door, req, packet, &conv, &p).await {
                decide::Decided::Done(d, after, until) => {
                    answer_after = after;
                    proven_until = until;
                    step = conv.resolve(d);
                }
                decide::Decided::Unavailable => {
                    door.table.checkin(key, &req.nas.name, conv, Some(p), now);
                    return Verdict::Drop(DropReason::Overload);
                }
            },
            Step::Accept(a) => {
                door.table.remove(&key);
                door.publish_size();
                let rounds = u64::from(conv.rounds());
                door.stats.round_trips.fetch_add(rounds, Ordering::Relaxed);
                let counter = match (a.method, a.resumed) {
                    (method::TLS, false) => &door.stats.tls_full,
                    (method::TLS, true) => &door.stats.tls_resumed,
                    (_, false) => &door.stats.ttls_full,
                    (_, true) => &door.stats.ttls_resumed,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                let m = Series::of(a.method);
                door.series.logins[m][usize::from(a.resumed)].increment(1);
                door.series.round_trips[m].increment(rounds);
                if let Some(b) = a.binding {
                    let now = unix_ms();
                    let until = proven_until.unwrap_or(now + door.lifetime_ms());
                    if let Err(e) = radius
                        .ctx
                        .sessions
                        .remember(&b, &a.identity, until, now)
                        .await
                    {
                        portcullis_door::metrics::store_failure(
                            "remembering an 802.1X session",
                            &e,
                        );
                    }
                }
                let (recv, send) = if req.nas.radius_1_1 {
                    // RFC 9765 §5.1.4: the keys as strings; TLS hides them.
                    (
                        portcullis_radius::v11::mppe_key_attribute(
                            mppe::MS_MPPE_RECV_KEY,
                            a.keys.recv_key(),
                        ),
                        portcullis_radius::v11::mppe_key_attribute(
                            mppe::MS_MPPE_SEND_KEY,
                            a.keys.send_key(),
                        ),
                    )
                } else {
                    let secret = req.nas.secret();
                    let mut salt: [u8; 2] = rand::rng().random();
                    let recv = mppe::encode_key_attribute(
                        mppe::MS_MPPE_RECV_KEY,
                        a.keys.recv_key(),
                        secret,
                        &packet.authenticator,
                        salt,
                    );
                    salt[1] = salt[1].wrapping_add(1);
                    let send = mppe::encode_key_attribute(
                        mppe::MS_MPPE_SEND_KEY,
                        a.keys.send_key(),
                        secret,
                        &packet.authenticator,
                        salt,
                    );
                    (recv, send)
                };
                let mut attrs = vec![(attr::VENDOR_SPECIFIC, recv), (attr::VENDOR_SPECIFIC, send)];
                if !a.identity.is_empty() && a.identity.len() <= 253 {
                    attrs.push((attr::USER_NAME, a.identity.as_bytes().to_vec()));
                }
                if packet.attr(attr::EAP_KEY_NAME).is_some()
                    && let Some(id) = &a.keys.session_id
                {
                    attrs.push((attr::EAP_KEY_NAME, id.clone()));
                }
                attrs.extend(
                    portcullis_eap::radius::split(&a.eap).map(|c| (attr::EAP_MESSAGE, c.to_vec())),
                );
                return Verdict::Reply {
                    code: portcullis_radius::Code::AccessAccept,
                    not_before: req.arrived,
                    attrs,
                };
            }
            Step::Reject { eap, reason } => {
                door.table.remove(&key);
                door.publish_size();
                door.stats.failures.fetch_add(1, Ordering::Relaxed);
                door.stats
                    .round_trips
                    .fetch_add(u64::from(conv.rounds()), Ordering::Relaxed);
                metrics::counter!("portcullis_eap_refused_total", "reason" => reason.label())
                    .increment(1);
                let m = conv.method();
                metrics::counter!(
                    "portcullis_eap_logins_total",
                    "method" => method::name(m.unwrap_or(0)),
                    "handshake" => "full",
                    "outcome" => "failure"
                )
                .increment(1);
                match (&reason, m) {
                    // A failed EAP-TLS handshake is charged like a wrong password.
                    (Reason::Tls(_), Some(method::TLS)) => {
                        let who = conv.outer_identity().to_owned();
                        let d = radius
                            .ctx
                            .verifier
                            .verify_proof_deferred(
                                decide::attempt(
                                    radius,
                                    req,
                                    packet,
                                    &who,
                                    Protocol::RadiusEapTls,
                                    Some(eap_detail(&conv, m, false)),
                                ),
                                std::future::ready(ProofCheck::Invalid("tls_handshake")),
                            )
                            .await;
                        decide::learn_hold(radius, door, req, packet, &who, &d.outcome).await;
                        answer_after = answer_after.max(d.answer_after);
                    }
                    // Decisions were audited by the core; the rest here.
                    (Reason::Denied(_), _) => {}
                    _ => audit_failure(radius, req, packet, &conv, &reason),
                }
                return reject_with(radius, req.arrived, answer_after, eap);
            }
            Step::Discard(_) => {
                door.table.checkin(key, &req.nas.name, conv, None, now);
                return Verdict::Drop(DropReason::Malformed);
            }
        }
    }
}

fn audit_failure(
    radius: &Radius,
    req: &Request,
    packet: &Packet<'_>,
    conv: &Conversation,
    reason: &Reason,
) {
    let Some(sink) = radius.ctx.verifier.audit_sink() else {
        return;
    };
    let method = match reason {
        Reason::NtHashMethod => "peap_or_mschapv2",
        _ => method::name(conv.method().unwrap_or(0)),
    };
    sink.record(portcullis_core::AuditEvent {
        time: std::time::SystemTime::now(),
        protocol: if conv.method() == Some(method::TLS) {
            Protocol::RadiusEapTls
        } else {
            Protocol::RadiusEapTtls
        },
        kind: PrincipalKind::User,
        principal: conv.outer_identity().to_owned(),
        context: AuditContext {
            request_id: req.request_id.clone(),
            client_id: Some(req.nas.name.clone()),
            eap: Some(EapDetail {
                method,
                outer_identity: conv.outer_identity().to_owned(),
                resumed: false,
                rounds: conv.rounds(),
            }),
        },
        source: req.peer.ip(),
        station: station(packet),
        outcome: portcullis_core::AuditOutcome::Rejected,
        reason: reason.label(),
        latency: req.arrived.elapsed(),
        class: None,
        directory: None,
    });
}

/// SIGHUP: the certificate, key, client CAs and CRLs are read again from the paths in
/// force (a CA renewal or a new CRL needs no restart; other `[radius.eap]` changes do, and
/// the reload says so), checked as at start-up; on a failed check the old ones stay. Ticket
/// keys and session caches carry over, so devices keep resuming.
impl portcullis_door::reload::Reloadable for EapDoor {
    fn name(&self) -> &'static str {
        "radius.eap"
    }

    fn reload(&self) -> Result<String, String> {
        let previous = self.loaded();
        let (settings, check) = tls::build(
            &self.config,
            &self.master_key,
            self.config.max_conversations,
            Some(&previous.settings),
        )
        .map_err(|e| e.to_string())?;
        let revoked = check.as_ref().map_or(0, tls::ClientCheck::revoked);
        *self.loaded.write() = Arc::new(Loaded { settings, check });
        Ok(format!(
            "certificate {} re-read, {} revoked client certificates in {} CRL file(s)",
            self.config.cert.display(),
            revoked,
            self.config.crl.len()
        ))
    }
}

/// Shared with the door: `Arc` so the sweeper task can hold it.
pub type Door = Arc<EapDoor>;
