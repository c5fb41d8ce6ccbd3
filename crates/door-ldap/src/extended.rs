//! Extended operations besides StartTLS (which changes the connection, `conn.rs`): WhoAmI
//! (RFC 4532) and Password Modify (RFC 3062, when `password_modify` is on). Any other
//! name is answered `protocolError` (RFC 4511 4.12).
//!
//! Password Modify changes the bound user's own password only: the old password is
//! required and checked through the core like a bind (budgets, delays), the new one must
//! be 1-1024 bytes and is hashed under `[policy]` on the pool's background queue, as
//! `portcullis user set-password` and the admin API hash it, then written compare-and-set
//! over the hash just checked through the credential cache (`CredentialSource::replace_hash`,
//! rehash-on-login's write), so this instance forgets the old hash at once. The server
//! never generates a password.

use std::time::Instant;

use portcullis_core::{Attempt, AuditContext, Outcome, PrincipalKind, Protocol, SourceError};
use portcullis_ldap::proto::proto::{LdapExtendedRequest, LdapMsg, LdapPasswordModifyRequest};
use portcullis_ldap::{Dn, ResultCode, response};
use zeroize::Zeroizing;

use crate::LdapDoor;
use crate::access::{Identity, Session};
use crate::bind::MAX_PASSWORD_BYTES;

/// WhoAmI's answer: `dn:<bound DN>`, empty when anonymous.
pub fn whoami(msgid: i32, session: &Session) -> LdapMsg {
    let dn = session.identity.dn().map(ToString::to_string);
    response::whoami_response(msgid, dn.as_deref())
}

/// The answer to an extended request this door does not offer.
pub fn unknown(msgid: i32, name: &str) -> (LdapMsg, ResultCode) {
    let text = format!("extended operation {name} is not supported");
    let code = ResultCode::ProtocolError;
    (
        response::extended_response(msgid, code, &text, None, None),
        code,
    )
}

fn reply(msgid: i32, code: ResultCode, text: &str) -> (LdapMsg, ResultCode) {
    (
        response::password_modify_response(msgid, code, text, None),
        code,
    )
}

/// Serve one Password Modify request (the door offers it: checked by the caller).
pub async fn password_modify(
    door: &LdapDoor,
    msgid: i32,
    req: &LdapExtendedRequest,
    session: &Session,
) -> (LdapMsg, ResultCode) {
    let Identity::User { name, dn } = &session.identity else {
        let text = "bind as the user whose password changes";
        return reply(msgid, ResultCode::InsufficientAccessRights, text);
    };
    if !session.secure && !door.ctx.config.allow_plain_binds {
        let text = "passwords need TLS: use ldaps:// or StartTLS";
        return reply(msgid, ResultCode::ConfidentialityRequired, text);
    }
    let Ok(modify) = LdapPasswordModifyRequest::try_from(req) else {
        return reply(
            msgid,
            ResultCode::ProtocolError,
            "malformed Password Modify request",
        );
    };
    if let Some(target) = &modify.user_identity
        && !names_self(target, name, dn)
    {
        let text = "only the bound user's own password can change here";
        return reply(msgid, ResultCode::InsufficientAccessRights, text);
    }
    let (Some(old), Some(new)) = (modify.old_password, modify.new_password) else {
        let text = "give the old and the new password (none is generated)";
        return reply(msgid, ResultCode::UnwillingToPerform, text);
    };
    let (old, new) = (Zeroizing::new(old), Zeroizing::new(new));
    if new.is_empty() || new.len() > MAX_PASSWORD_BYTES {
        let text = "the new password must be 1-1024 bytes";
        return reply(msgid, ResultCode::ConstraintViolation, text);
    }
    let attempt = Attempt {
        kind: PrincipalKind::User,
        principal: name.clone(),
        secret: Zeroizing::new(old.as_bytes().to_vec()),
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
    match door.ctx.verifier.verify(attempt).await {
        Outcome::Accepted { .. } => {}
        Outcome::Overloaded { .. } => return reply(msgid, ResultCode::Busy, "busy"),
        _ => return reply(msgid, ResultCode::InvalidCredentials, ""),
    }
    let secret = Zeroizing::new(new.as_bytes().to_vec());
    let Some(hash) = door.ctx.verifier.hash_with_policy(secret).await else {
        return reply(msgid, ResultCode::Busy, "busy: try again");
    };
    match replace(door, name, &hash).await {
        Ok(true) => reply(msgid, ResultCode::Success, ""),
        Ok(false) => {
            let text = "the password changed meanwhile: try again";
            reply(msgid, ResultCode::Busy, text)
        }
        Err(e) => {
            portcullis_door::metrics::store_failure("changing a password over LDAP", &e);
            reply(msgid, ResultCode::Unavailable, "store unavailable")
        }
    }
}

/// Replace `name`'s stored hash by `hash`, compare-and-set on the one stored now (as
/// rehash-on-login does), through the credential cache so it forgets the old one.
async fn replace(door: &LdapDoor, name: &str, hash: &str) -> Result<bool, SourceError> {
    let source = &door.ctx.credentials;
    let Some(stored) = source.credentials(PrincipalKind::User, name).await? else {
        return Ok(false);
    };
    let Some(old) = stored.hashes.first() else {
        return Ok(false);
    };
    source
        .replace_hash(PrincipalKind::User, name, old, hash)
        .await
}

/// Whether an RFC 3062 userIdentity names the bound user: its DN, `dn:DN` or `u:NAME`.
fn names_self(target: &str, name: &str, dn: &Dn) -> bool {
    if let Some(user) = target.strip_prefix("u:") {
        return user == name;
    }
    let text = target.strip_prefix("dn:").unwrap_or(target);
    Dn::parse(text).is_ok_and(|d| d == *dn)
}
