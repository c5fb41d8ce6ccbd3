//! The decisions a conversation asks its door for (`Step::Verify`), made through the
//! core so that throttling, charging, fair queuing, reject delays and audit are those of
//! every credential: the TTLS inner password (`Verifier::verify_deferred`), a client
//! certificate or a resumed TTLS session (`Verifier::verify_proof_deferred`). A refusal
//! of the core is also noted against the station ([`super::hold`]), so that station's
//! next conversations are refused before their TLS handshake.

use std::time::Duration;

use portcullis_core::{
    Attempt, AuditContext, EapDetail, Outcome, PrincipalKind, ProofCheck, Protocol,
};
use portcullis_eap::{Conversation, Decision, Pending, method};
use portcullis_radius::Packet;
use zeroize::Zeroizing;

use super::{EapDoor, eap_detail, station, unix_ms};
use crate::Radius;
use crate::RadiusContext;
use crate::verdict::Request;

/// What a decision came to.
pub(super) enum Decided {
    /// Go on with this decision; a refusal waits `answer_after` more; a resumed TTLS
    /// login carries the first session's end (`Some`, unix ms).
    Done(Decision, Duration, Option<i64>),
    /// The core could not decide now (overloaded): keep the question for the retransmit.
    Unavailable,
}

/// The core's attempt for this round trip: the NAS's address as the source and the
/// Calling-Station-Id as the station (the principal when there is none).
pub(super) fn attempt(
    radius: &Radius,
    req: &Request,
    packet: &Packet<'_>,
    principal: &str,
    protocol: Protocol,
    eap: Option<EapDetail>,
) -> Attempt {
    Attempt {
        kind: PrincipalKind::User,
        principal: principal.to_owned(),
        secret: Zeroizing::new(Vec::new()),
        source: req.peer.ip(),
        station: Some(station(packet).unwrap_or_else(|| principal.chars().take(64).collect())),
        protocol,
        deadline: req.arrived + radius.config.answer_timeout,
        context: AuditContext {
            request_id: req.request_id.clone(),
            client_id: Some(req.nas.name.clone()),
            eap,
        },
    }
}

fn outcome_to_decision(
    o: Outcome,
    identity: String,
    after: Duration,
    deny: &'static str,
) -> Decided {
    match o {
        Outcome::Accepted { .. } => {
            Decided::Done(Decision::Allow { identity }, Duration::ZERO, None)
        }
        Outcome::Rejected => Decided::Done(Decision::Deny(deny), after, None),
        Outcome::Throttled { .. } => Decided::Done(Decision::Deny("throttled"), after, None),
        Outcome::Overloaded { .. } | Outcome::Unavailable { .. } => Decided::Unavailable,
    }
}

/// Ask the core what the machine's question `p` comes to.
pub(super) async fn decide(
    radius: &Radius,
    door: &EapDoor,
    req: &Request,
    packet: &Packet<'_>,
    conv: &Conversation,
    p: &Pending,
) -> Decided {
    let ctx = &radius.ctx;
    match p {
        Pending::Password { user, password } => {
            let mut a = attempt(
                radius,
                req,
                packet,
                user,
                Protocol::RadiusEapTtls,
                Some(eap_detail(conv, Some(method::TTLS), false)),
            );
            a.secret = password.clone();
            let d = ctx.verifier.verify_deferred(a).await;
            learn_hold(radius, door, req, packet, user, &d.outcome).await;
            outcome_to_decision(d.outcome, user.clone(), d.answer_after, "wrong_password")
        }
        Pending::Certificate { chain, resumed } => {
            let facts = door.chains.facts(chain);
            let identity = facts
                .leaf
                .as_ref()
                .and_then(|l| l.identity.clone())
                .unwrap_or_default();
            let refuse = door
                .loaded()
                .check
                .as_ref()
                .map_or(Some("no_client_ca"), |c| c.refuse(&facts, *resumed));
            let who = if identity.is_empty() {
                conv.outer_identity().to_owned()
            } else {
                identity.clone()
            };
            let check = user_check(
                ctx,
                who.clone(),
                refuse,
                identity.is_empty(),
                door.config.require_user,
            );
            let a = attempt(
                radius,
                req,
                packet,
                &who,
                Protocol::RadiusEapTls,
                Some(eap_detail(conv, Some(method::TLS), *resumed)),
            );
            let d = ctx.verifier.verify_proof_deferred(a, check).await;
            learn_hold(radius, door, req, packet, &who, &d.outcome).await;
            outcome_to_decision(d.outcome, who, d.answer_after, "certificate_refused")
        }
        Pending::Resumption { binding } => {
            let (identity, until) = match ctx.sessions.recall(binding, unix_ms()).await {
                Ok(Some(found)) => found,
                Ok(None) => {
                    return Decided::Done(
                        Decision::Deny("resumption_unknown"),
                        Duration::ZERO,
                        None,
                    );
                }
                Err(e) => {
                    portcullis_door::metrics::store_failure("recalling an 802.1X session", &e);
                    return Decided::Done(
                        Decision::Deny("resumption_unavailable"),
                        Duration::ZERO,
                        None,
                    );
                }
            };
            let check = user_check(ctx, identity.clone(), None, false, true);
            let a = attempt(
                radius,
                req,
                packet,
                &identity,
                Protocol::RadiusEapTtls,
                Some(eap_detail(conv, Some(method::TTLS), true)),
            );
            let d = ctx.verifier.verify_proof_deferred(a, check).await;
            match outcome_to_decision(d.outcome, identity, d.answer_after, "user_refused") {
                Decided::Done(dec, after, _) => Decided::Done(dec, after, Some(until)),
                other => other,
            }
        }
    }
}

/// The proof check of a certificate or resumed login: not revoked, and the user (when
/// one exists, or always with `require`) enabled. The user is read through the app's
/// credential cache, as a PAP or inner-TTLS password check reads it: a login costs no
/// database round trip while the entry is fresh, and a user disabled elsewhere stops
/// logging in within `store.client_cache_ttl_ms` (at once with PostgreSQL's change feed),
/// the same bound as for passwords.
async fn user_check(
    ctx: &RadiusContext,
    identity: String,
    refuse: Option<&'static str>,
    no_identity: bool,
    require: bool,
) -> ProofCheck {
    if let Some(r) = refuse {
        return ProofCheck::Invalid(r);
    }
    if no_identity {
        return ProofCheck::Invalid("no_certificate_identity");
    }
    match ctx
        .credentials
        .credentials(PrincipalKind::User, &identity)
        .await
    {
        Ok(Some(u)) if u.disabled => ProofCheck::Invalid("user_disabled"),
        Ok(Some(_)) => ProofCheck::Valid,
        Ok(None) if require => ProofCheck::Invalid("unknown_user"),
        Ok(None) => ProofCheck::Valid,
        Err(_) => ProofCheck::Unavailable("store"),
    }
}

/// After the core answered an attempt of this station: when it refused it
/// (`Throttled`), or a rejection leaves a budget of this principal from this station
/// refusing the next attempt, hold the station's new conversations for as long
/// ([`super::hold`]). Every budget that applies to the attempt counts, the user's budget
/// for all untrusted origins too: a station refused by it stays refused for that user by
/// the core (it cannot become trusted without a success), so its handshakes are what
/// the hold saves. A trusted station is never refused by that budget, and other stations
/// and the same user elsewhere are not held. Nothing for a station without
/// Calling-Station-Id.
pub(super) async fn learn_hold(
    radius: &Radius,
    door: &EapDoor,
    req: &Request,
    packet: &Packet<'_>,
    principal: &str,
    outcome: &Outcome,
) {
    let Some(st) = station(packet) else {
        return;
    };
    let refused_for = match outcome {
        Outcome::Throttled { retry_after } => Some(*retry_after),
        Outcome::Rejected => radius
            .ctx
            .verifier
            .throttle_report(
                PrincipalKind::User,
                Some(principal),
                Some((req.peer.ip(), Some(st.clone()))),
            )
            .await
            .refused_for(),
        Outcome::Accepted { .. } | Outcome::Overloaded { .. } | Outcome::Unavailable { .. } => None,
    };
    if let Some(d) = refused_for {
        door.holds
            .hold(&req.nas.name, &st, d, std::time::Instant::now());
    }
}
