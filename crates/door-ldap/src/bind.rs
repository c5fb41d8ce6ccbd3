//! Simple Bind (RFC 4511 4.2, RFC 4513 5.1): every name-and-password bind goes through
//! the verification core, so the pool, fair queuing, the failure budgets, the reject delay
//! (a timer) and rehash-on-login apply as on every other door.
//!
//! - `uid=NAME,ou=people,BASE`: the user's password (kind user).
//! - `cn=ID,ou=services,BASE` with an `[ldap.service_accounts.ID]` grant: the OAuth
//!   client's generated secret, checked by the peppered HMAC in microseconds (kind client).
//! - Any other DN is checked as a principal that cannot exist (its name starts with a
//!   space, which no stored name may), of the kind its place suggests: the core answers
//!   it after the delay a real rejection of that kind takes, spends no hash, and charges
//!   the source's budget. Unknown DNs, wrong passwords and disabled users therefore all
//!   get `invalidCredentials` (49) in the same time.
//!
//! Refused before the core: a version other than 3 (`protocolError`), SASL
//! (`authMethodNotSupported`), a name with an empty password (an "unauthenticated bind",
//! RFC 4513 5.1.2: `unwillingToPerform`), a password over a plain connection unless
//! `allow_plain_binds` (`confidentialityRequired`, 389-ds's require-secure-binds). An
//! anonymous bind (empty name and password) succeeds and grants only what anonymous
//! sessions have (the root DSE unless `allow_anonymous_search`): clients such as
//! `ldapsearch -x` bind anonymously before reading the root DSE.

use std::time::Instant;

use portcullis_core::{Attempt, AuditContext, Outcome, PrincipalKind, Protocol};
use portcullis_ldap::proto::proto::{LdapBindCred, LdapBindRequest, LdapMsg};
use portcullis_ldap::{Dn, ResultCode, response};
use zeroize::Zeroizing;

use crate::LdapDoor;
use crate::access::{Identity, Session};

/// Longest password accepted, in bytes (as the token endpoint's).
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// A bind's answer and the identity the connection has after it.
#[derive(Debug)]
pub struct Bound {
    /// The BindResponse.
    pub reply: LdapMsg,
    /// The result code sent.
    pub code: ResultCode,
    /// The connection's identity from now on (anonymous after a failed bind).
    pub identity: Identity,
}

fn answer(msgid: i32, code: ResultCode, text: &str, identity: Identity) -> Bound {
    Bound {
        reply: response::bind_response(msgid, code, text),
        code,
        identity,
    }
}

/// Serve one BindRequest on a connection in `session`'s state. A failed bind (49, for
/// whatever reason: wrong password, unknown name, throttled, an oversized password) is
/// answered no earlier than `failed_bind_delay` (or the core's `reject_delay_ms`, if
/// longer) after it arrived, on a timer: a guessing client waits as long per refused
/// guess as per wrong one instead of spinning on instant refusals (a refusal costs
/// microseconds, connections by thousands a second: the CPU honest binds need), and
/// every 49 leaves at the same floor, so none tells which it was.
pub async fn bind(door: &LdapDoor, msgid: i32, req: LdapBindRequest, session: &Session) -> Bound {
    let arrived = Instant::now();
    let bound = check(door, msgid, req, session).await;
    if bound.code == ResultCode::InvalidCredentials {
        let v = &door.ctx.verifier;
        let floor = door.ctx.config.failed_bind_delay.max(v.reject_delay());
        v.answer_delay(floor.saturating_sub(arrived.elapsed()))
            .await;
    }
    bound
}

async fn check(door: &LdapDoor, msgid: i32, req: LdapBindRequest, session: &Session) -> Bound {
    let anonymous = Identity::Anonymous;
    if req.version != 3 {
        return answer(
            msgid,
            ResultCode::ProtocolError,
            "only LDAPv3 is supported",
            anonymous,
        );
    }
    let password = match req.cred {
        LdapBindCred::Simple(p) => Zeroizing::new(p),
        LdapBindCred::SASL(_) | LdapBindCred::Unsupported => {
            let text = "only simple binds are supported";
            return answer(msgid, ResultCode::AuthMethodNotSupported, text, anonymous);
        }
    };
    match (req.dn.is_empty(), password.is_empty()) {
        (true, true) => return answer(msgid, ResultCode::Success, "", anonymous),
        (false, true) => {
            let text = "unauthenticated bind (a name without a password) is not allowed";
            return answer(msgid, ResultCode::UnwillingToPerform, text, anonymous);
        }
        _ => {}
    }
    if !session.secure && !door.ctx.config.allow_plain_binds {
        let text = "binds need TLS: use ldaps:// or StartTLS";
        return answer(msgid, ResultCode::ConfidentialityRequired, text, anonymous);
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return answer(msgid, ResultCode::InvalidCredentials, "", anonymous);
    }
    let Ok(dn) = Dn::parse(&req.dn) else {
        return answer(msgid, ResultCode::InvalidDnSyntax, "invalid DN", anonymous);
    };
    let (kind, principal, identity) = principal_of(door, &dn, &req.dn);
    let attempt = Attempt {
        kind,
        principal,
        secret: Zeroizing::new(password.as_bytes().to_vec()),
        source: session.source,
        station: None,
        protocol: Protocol::Ldap,
        deadline: Instant::now() + door.ctx.config.bind_timeout,
        context: AuditContext {
            request_id: session.request_id(msgid),
            client_id: None,
            eap: None,
        },
    };
    match (door.ctx.verifier.verify(attempt).await, identity) {
        (Outcome::Accepted { .. }, Some(identity)) => {
            answer(msgid, ResultCode::Success, "", identity)
        }
        (Outcome::Overloaded { retry_after }, _) => {
            let text = format!("busy: try again in {} s", retry_after.as_secs().max(1));
            answer(msgid, ResultCode::Busy, &text, anonymous)
        }
        // The user's directory (issue 40) is down: a refusal that says so, not 49.
        (Outcome::Unavailable { retry_after }, _) => {
            let text = format!(
                "directory unavailable: try again in {} s",
                retry_after.as_secs().max(1)
            );
            answer(msgid, ResultCode::Unavailable, &text, anonymous)
        }
        // Rejected, throttled (its budget is spent: no hash was), or a principal that
        // cannot exist: one answer for all, so none tells which (`bind` delays it).
        _ => answer(msgid, ResultCode::InvalidCredentials, "", anonymous),
    }
}

/// The principal checked for `dn`, and the identity it gives when the check passes.
fn principal_of(
    door: &LdapDoor,
    dn: &Dn,
    given: &str,
) -> (PrincipalKind, String, Option<Identity>) {
    let layout = &door.layout;
    if let Some(name) = layout.user_name(dn) {
        let dn = layout.user(&name);
        return (
            PrincipalKind::User,
            name.clone(),
            Some(Identity::User { name, dn }),
        );
    }
    if let Some(id) = layout.service_id(dn)
        && door.ctx.config.service_accounts.contains_key(&id)
    {
        let dn = layout.service(&id);
        return (
            PrincipalKind::Client,
            id.clone(),
            Some(Identity::Service { id, dn }),
        );
    }
    // A leading space: never a stored name (`portcullis_store::names`), so never found.
    let kind = if dn.is_descendant_or_self(&layout.services) {
        PrincipalKind::Client
    } else {
        PrincipalKind::User
    };
    (kind, format!(" {given}"), None)
}
