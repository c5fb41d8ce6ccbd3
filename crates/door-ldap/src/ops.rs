//! One decoded request to what the connection does about it: answer now, answer later
//! (a bind, a search, a compare, Password Modify: a future the connection polls beside
//! its reads), StartTLS, abandon or close. Writes are refused here (`unwillingToPerform`:
//! the admin API and `apply` change data).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use portcullis_core::{AuditContext, AuditEvent, AuditOutcome, Protocol};
use portcullis_ldap::frame::OpKind;
use portcullis_ldap::proto::control::LdapControl;
use portcullis_ldap::proto::proto::{LdapExtendedRequest, LdapMsg, LdapOp, LdapSearchRequest};
use portcullis_ldap::{ResultCode, response};

use crate::LdapDoor;
use crate::access::{self, Identity, Session};
use crate::search::{self, RootDse};

/// A request answered later.
pub type Pending = Pin<Box<dyn Future<Output = Done> + Send>>;

/// What a pending request produced.
#[derive(Debug)]
pub struct Done {
    /// Its messageID.
    pub msgid: i32,
    /// The messages to send, in order.
    pub replies: Vec<LdapMsg>,
    /// A bind's new identity for the connection.
    pub identity: Option<Identity>,
}

/// What the connection does with one request.
pub enum Step {
    /// Send these now (possibly none).
    Reply(Vec<LdapMsg>),
    /// Poll this; a bind (`exclusive`) stops reading until it is answered.
    Later {
        /// The work.
        pending: Pending,
        /// A bind: outstanding operations are abandoned and nothing more is read first.
        exclusive: bool,
    },
    /// StartTLS (message id): the connection answers and upgrades itself.
    StartTls(i32),
    /// Abandon this message id.
    Abandon(i32),
    /// Unbind: close.
    Close,
}

/// Decide what to do with `message` on a connection in `session`'s state.
pub fn dispatch(door: &Arc<LdapDoor>, session: &Session, message: LdapMsg) -> Step {
    let msgid = message.msgid;
    if let Some(kind) = answered_kind(&message.op)
        && critical_unsupported(&message.ctrl)
    {
        // RFC 4511 4.1.11: a critical control the server does not serve fails the
        // operation, which is not performed.
        let code = ResultCode::UnavailableCriticalExtension;
        door.stats.operation(kind.name(), code);
        let text = "a critical control of this request is not supported";
        return Step::Reply(refusal(msgid, kind, code, text));
    }
    match message.op {
        LdapOp::BindRequest(req) => {
            let (door, session) = (Arc::clone(door), session.clone());
            Step::Later {
                pending: Box::pin(async move {
                    let bound = crate::bind::bind(&door, msgid, req, &session).await;
                    door.stats.operation("bind", bound.code);
                    Done {
                        msgid,
                        replies: vec![bound.reply],
                        identity: Some(bound.identity),
                    }
                }),
                exclusive: true,
            }
        }
        LdapOp::UnbindRequest => Step::Close,
        LdapOp::AbandonRequest(id) => Step::Abandon(id),
        LdapOp::SearchRequest(req) => search_step(door, session, msgid, req, message.ctrl),
        LdapOp::CompareRequest(req) => {
            let (door, session) = (Arc::clone(door), session.clone());
            later(async move {
                let (replies, code) = match directory_for(&door).await {
                    Ok(dir) => {
                        let scope = access::scope(&door.ctx.config, &session.identity);
                        match scope {
                            Ok(scope) => {
                                let a = search::compare(msgid, &req, &dir, &scope);
                                (a.replies, a.code)
                            }
                            Err((code, text)) => {
                                (refusal(msgid, OpKind::Compare, code, text), code)
                            }
                        }
                    }
                    Err((code, text)) => (refusal(msgid, OpKind::Compare, code, text), code),
                };
                door.stats.operation("compare", code);
                audit(&door, &session, msgid, code);
                Done {
                    msgid,
                    replies,
                    identity: None,
                }
            })
        }
        LdapOp::ExtendedRequest(req) => extended_step(door, session, msgid, req),
        op => {
            let kind = write_kind(&op);
            let code = ResultCode::UnwillingToPerform;
            door.stats.operation(kind.name(), code);
            let text = "this directory is read-only over LDAP: change data with the admin API or `portcullis apply`";
            Step::Reply(refusal(msgid, kind, code, text))
        }
    }
}

/// The kind of a request that has a response (all but Unbind and Abandon).
fn answered_kind(op: &LdapOp) -> Option<OpKind> {
    Some(match op {
        LdapOp::BindRequest(_) => OpKind::Bind,
        LdapOp::SearchRequest(_) => OpKind::Search,
        LdapOp::CompareRequest(_) => OpKind::Compare,
        LdapOp::ExtendedRequest(_) => OpKind::Extended,
        LdapOp::UnbindRequest | LdapOp::AbandonRequest(_) => return None,
        other => write_kind(other),
    })
}

/// Whether a control marked critical is one this door does not act on. Paged results is
/// served (searches); ManageDsaIT is met by a directory without referrals.
fn critical_unsupported(controls: &[LdapControl]) -> bool {
    controls.iter().any(|c| match c {
        LdapControl::SimplePagedResults { .. } | LdapControl::ManageDsaIT { .. } => false,
        LdapControl::SyncRequest { criticality, .. }
        | LdapControl::PasswordPolicyRequest { criticality, .. }
        | LdapControl::SearchOptions { criticality, .. }
        | LdapControl::ShowDeleted { criticality, .. }
        | LdapControl::SdFlags { criticality, .. }
        | LdapControl::ExtendedDn { criticality, .. }
        | LdapControl::Unknown { criticality, .. } => *criticality,
        // The rest carry no criticality once decoded (or are responses' controls).
        _ => false,
    })
}

fn later(f: impl Future<Output = Done> + Send + 'static) -> Step {
    Step::Later {
        pending: Box::pin(f),
        exclusive: false,
    }
}

/// A request's own response type carrying `code`.
fn refusal(msgid: i32, kind: OpKind, code: ResultCode, text: &str) -> Vec<LdapMsg> {
    response::error_response(msgid, kind, code, text)
        .into_iter()
        .collect()
}

/// The kind of a request that is not served (writes; anything else the codec decodes).
fn write_kind(op: &LdapOp) -> OpKind {
    match op {
        LdapOp::ModifyRequest(_) => OpKind::Modify,
        LdapOp::AddRequest(_) => OpKind::Add,
        LdapOp::DelRequest(_) => OpKind::Delete,
        LdapOp::ModifyDNRequest(_) => OpKind::ModifyDn,
        _ => OpKind::Extended,
    }
}

/// The directory snapshot, or the code answering a store failure.
async fn directory_for(
    door: &LdapDoor,
) -> Result<Arc<crate::directory::Directory>, (ResultCode, &'static str)> {
    let ctx = &door.ctx;
    match door
        .view
        .get(&door.layout, ctx.users.as_ref(), ctx.groups.as_ref())
        .await
    {
        Ok(d) => Ok(d),
        Err(e) => {
            portcullis_door::metrics::store_failure("reading the directory for LDAP", &e);
            Err((
                ResultCode::Unavailable,
                "the directory is unavailable: try again",
            ))
        }
    }
}

fn search_step(
    door: &Arc<LdapDoor>,
    session: &Session,
    msgid: i32,
    req: LdapSearchRequest,
    controls: Vec<LdapControl>,
) -> Step {
    if search::is_root_dse(&req) {
        let dse = RootDse {
            base: door.ctx.config.base.clone(),
            start_tls: door.acceptor().is_some() && !session.secure,
            password_modify: door.ctx.config.password_modify,
        };
        door.stats.operation("search", ResultCode::Success);
        return Step::Reply(search::root_dse_search(msgid, &req, &dse));
    }
    let (door, session) = (Arc::clone(door), session.clone());
    later(async move {
        let paged = response::paged_request(&controls).is_some();
        let refused = |code, text: &str| search::refused(msgid, code, text, paged);
        let answer = match access::scope(&door.ctx.config, &session.identity) {
            Err((code, text)) => refused(code, text),
            Ok(scope) => match directory_for(&door).await {
                Err((code, text)) => refused(code, text),
                Ok(dir) => {
                    let max = door.ctx.config.max_search_entries;
                    search::search(msgid, &req, &controls, &dir, &scope, max)
                }
            },
        };
        door.stats.operation("search", answer.code);
        audit(&door, &session, msgid, answer.code);
        Done {
            msgid,
            replies: answer.replies,
            identity: None,
        }
    })
}

fn extended_step(
    door: &Arc<LdapDoor>,
    session: &Session,
    msgid: i32,
    req: LdapExtendedRequest,
) -> Step {
    match req.name.as_str() {
        response::OID_START_TLS if door.acceptor().is_some() => Step::StartTls(msgid),
        response::OID_WHOAMI => {
            door.stats.operation("whoami", ResultCode::Success);
            Step::Reply(vec![crate::extended::whoami(msgid, session)])
        }
        response::OID_PASSWORD_MODIFY if door.ctx.config.password_modify => {
            let (door, session) = (Arc::clone(door), session.clone());
            later(async move {
                let (reply, code) =
                    crate::extended::password_modify(&door, msgid, &req, &session).await;
                door.stats.operation("password_modify", code);
                audit(&door, &session, msgid, code);
                Done {
                    msgid,
                    replies: vec![reply],
                    identity: None,
                }
            })
        }
        name => {
            let (reply, code) = crate::extended::unknown(msgid, name);
            door.stats.operation("extended", code);
            Step::Reply(vec![reply])
        }
    }
}

/// One audit event for an operation that is not a bind (binds are the core's events):
/// who, from where, and the result code as the reason.
pub fn audit(door: &LdapDoor, session: &Session, msgid: i32, code: ResultCode) {
    let outcome = match code {
        ResultCode::Success
        | ResultCode::SizeLimitExceeded
        | ResultCode::TimeLimitExceeded
        | ResultCode::CompareTrue
        | ResultCode::CompareFalse => AuditOutcome::Accepted,
        ResultCode::Busy | ResultCode::Unavailable => AuditOutcome::Overloaded,
        _ => AuditOutcome::Rejected,
    };
    door.ctx.audit.record(AuditEvent {
        time: SystemTime::now(),
        protocol: Protocol::Ldap,
        kind: session.identity.kind(),
        principal: session.identity.principal().to_owned(),
        context: AuditContext {
            request_id: session.request_id(msgid),
            client_id: None,
            eap: None,
        },
        source: session.source,
        station: None,
        outcome,
        reason: code.name(),
        latency: std::time::Duration::ZERO,
        class: None,
    });
}
