//! One request's task: decide the answer (through the core for PAP), wait out the reject
//! delay on a timer, record the reply for duplicates, send it back the way the request
//! came ([`super::reply::ReplyPath`]: its UDP source from the address it arrived on, or
//! its RadSec connection).

use std::sync::Arc;
use std::time::{Duration, Instant};

use portcullis_core::{Attempt, AuditContext, AuditOutcome, Outcome, PrincipalKind, Protocol};
use portcullis_radius::{Code, Packet, attr, unhide_user_password, v11};
use tokio::sync::OwnedSemaphorePermit;
use zeroize::Zeroizing;

use super::Radius;
use super::nas::{DropReason, Nas};
use super::verdict::{Request, Verdict, reject};

/// Longest Calling-Station-Id kept as the station key (MAC addresses, phone numbers and
/// IPs are far shorter; a longer value is cut rather than stored whole).
const MAX_STATION_CHARS: usize = 64;
/// How often a NAS is reminded in the log that CHAP, MS-CHAP and EAP are refused.
const UNSUPPORTED_LOG_EVERY: Duration = Duration::from_secs(60);

/// Answer one request. `permit` bounds requests being verified; it is released once the
/// verdict is known, and a reply that must wait out a reject delay takes a `delayed`
/// permit instead.
pub(super) async fn answer(radius: Arc<Radius>, req: Request, permit: OwnedSemaphorePermit) {
    // Parsed in the receive loop already; a failure here cannot happen, but is a drop.
    let Ok(packet) = Packet::parse(&req.data) else {
        return drop_request(&radius, &req, DropReason::Malformed);
    };
    let verdict = decide(&radius, &req, &packet).await;
    drop(permit);
    let (code, not_before, attrs) = match verdict {
        Verdict::Reply {
            code,
            not_before,
            attrs,
        } => (code, not_before, attrs),
        Verdict::Drop(why) => {
            drop_request(&radius, &req, why);
            // RADIUS/1.1 says "cannot now" instead of silence (RFC 9765 §6.1).
            if why == DropReason::Overload
                && let Some(answer) = req.nas.overloaded_answer(&packet)
            {
                let _ = req.path.send(answer).await;
            }
            return;
        }
    };
    let attrs: Vec<(u8, &[u8])> = attrs.iter().map(|(t, v)| (*t, v.as_slice())).collect();
    let reply = match req.nas.encode_response(code, &packet, &attrs) {
        Ok(r) => Arc::<[u8]>::from(r),
        // Only a request with Proxy-State octets filling the packet could overflow.
        Err(_) => return drop_request(&radius, &req, DropReason::Malformed),
    };
    if not_before > Instant::now() {
        let Ok(_delayed) = Arc::clone(&radius.delayed).try_acquire_owned() else {
            return drop_request(&radius, &req, DropReason::Overload);
        };
        tokio::time::sleep_until(not_before.into()).await;
        send(&radius, req, code, reply).await;
    } else {
        send(&radius, req, code, reply).await;
    }
}

async fn send(radius: &Radius, req: Request, code: Code, reply: Arc<[u8]>) {
    // Recorded before sending, so a retransmission that races the reply finds it.
    radius.dedup.lock().complete(&req.key, Arc::clone(&reply));
    match code {
        Code::AccessAccept if req_is_access_request(&req.data) => req.nas.stats.accept(),
        Code::AccessReject => req.nas.stats.reject(),
        _ => {}
    }
    if let Err(e) = req.path.send(reply).await {
        tracing::debug!(peer = %req.peer, nas = %req.nas.name, "sending a RADIUS reply failed: {e}");
    }
}

fn req_is_access_request(data: &[u8]) -> bool {
    data.first() == Some(&Code::AccessRequest.as_u8())
}

fn drop_request(radius: &Radius, req: &Request, why: DropReason) {
    radius.dedup.lock().forget(&req.key);
    req.nas.stats.dropped(why);
}

async fn decide(radius: &Radius, req: &Request, packet: &Packet<'_>) -> Verdict {
    if packet.code == Code::StatusServer {
        // RFC 5997 §3: answered with Access-Accept, no authentication of any user.
        return Verdict::Reply {
            code: Code::AccessAccept,
            not_before: req.arrived,
            attrs: Vec::new(),
        };
    }
    if packet.attr(attr::EAP_MESSAGE).is_some()
        && let Some(eap) = &radius.eap
    {
        return super::eap::answer(radius, eap, req, packet).await;
    }
    let door = |user: Option<&[u8]>, outcome, reason| {
        radius.audit_door(req.peer.ip(), Some(&req.nas.name), user, outcome, reason);
    };
    let Some(user) = packet.attr(attr::USER_NAME) else {
        door(None, AuditOutcome::Dropped, "no_user_name");
        return Verdict::Drop(DropReason::Malformed);
    };
    let method = if packet.attr(attr::CHAP_PASSWORD).is_some() {
        Some("CHAP")
    } else if packet.attr(attr::EAP_MESSAGE).is_some() {
        Some("EAP")
    } else if packet.has_vendor(attr::VENDOR_MICROSOFT) {
        Some("MS-CHAP")
    } else {
        None
    };
    if let Some(method) = method {
        // These need the plaintext or an NT hash, which we never store: refuse plainly.
        log_unsupported(radius, &req.nas, method);
        door(Some(user), AuditOutcome::Rejected, "unsupported_method");
        return reject(radius, req.arrived, Duration::ZERO);
    }
    let Some(hidden) = packet.attr(attr::USER_PASSWORD) else {
        door(Some(user), AuditOutcome::Dropped, "no_user_password");
        return Verdict::Drop(DropReason::Malformed);
    };
    let password = if req.nas.radius_1_1 {
        // RFC 9765 §5.1.1: the password itself, 1..=128 octets.
        v11::user_password(packet).map(|p| Zeroizing::new(p.unwrap_or(hidden).to_vec()))
    } else {
        unhide_user_password(hidden, req.nas.secret(), &packet.authenticator)
    };
    let Ok(password) = password else {
        door(Some(user), AuditOutcome::Dropped, "malformed");
        return Verdict::Drop(DropReason::Malformed);
    };
    let principal = String::from_utf8_lossy(user).into_owned();
    let station = match packet.attr(attr::CALLING_STATION_ID) {
        Some(s) => String::from_utf8_lossy(s)
            .chars()
            .take(MAX_STATION_CHARS)
            .collect(),
        None => principal.chars().take(MAX_STATION_CHARS).collect(),
    };
    let deferred = radius
        .ctx
        .verifier
        .verify_deferred(Attempt {
            kind: PrincipalKind::User,
            principal,
            secret: password,
            source: req.peer.ip(),
            station: Some(station),
            protocol: Protocol::RadiusPap,
            deadline: req.arrived + radius.config.answer_timeout,
            context: AuditContext {
                request_id: req.request_id.clone(),
                client_id: Some(req.nas.name.clone()),
                eap: None,
            },
        })
        .await;
    match deferred.outcome {
        Outcome::Accepted { .. } => Verdict::Reply {
            code: Code::AccessAccept,
            not_before: req.arrived,
            attrs: Vec::new(),
        },
        Outcome::Rejected | Outcome::Throttled { .. } => {
            reject(radius, req.arrived, deferred.answer_after)
        }
        Outcome::Overloaded { .. } => Verdict::Drop(DropReason::Overload),
        // The user's directory could not answer (issue 40): silence, so the NAS retries
        // or fails over, as for overload; counted apart.
        Outcome::Unavailable { .. } => Verdict::Drop(DropReason::Unavailable),
    }
}

fn log_unsupported(radius: &Radius, nas: &Nas, method: &str) {
    let now = Instant::now();
    let mut logged = radius.unsupported_logged.lock();
    let due = logged
        .get(&nas.name)
        .is_none_or(|t| now.saturating_duration_since(*t) >= UNSUPPORTED_LOG_EVERY);
    if due {
        logged.insert(nas.name.clone(), now);
        tracing::warn!(
            nas = %nas.name,
            "NAS {:?} sent a {method} Access-Request: refused with Access-Reject. Portcullis \
             checks PAP, and EAP-TLS/EAP-TTLS when [radius.eap] is configured (CHAP and \
             MS-CHAP need the plaintext password or its NT hash, which are never stored); \
             configure the NAS for PAP or 802.1X. (Logged at most once a minute per NAS.)",
            nas.name
        );
    }
}
