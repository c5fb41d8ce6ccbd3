//! Who is calling the admin API, and may they: a bearer access token this server issued
//! (RFC 6750), verified like any token of ours (signature against the published keys,
//! issuer, audience, expiry, revocation, and the RFC 8705 `cnf` certificate binding when
//! the token carries one), issued to a client that still exists and still holds the
//! admin scope. `portcullis:admin:read` allows reads, `portcullis:admin:write` reads and
//! changes.
//!
//! The token check is a proof for the verification core (`Verifier::verify_proof`,
//! protocol `admin_bearer`), so a failed admin authentication spends the same failure
//! budgets (per source prefix, per claimed client, per both) as a wrong client secret,
//! is delayed like one, ends up refused with 429 once a budget is spent, and produces
//! one audit event. A missing token costs nothing and is simply 401.
//!
//! Or mutual TLS: with `[admin] client_ca`, a request without a token whose connection
//! presented a client certificate chaining to those CAs (valid now, client-auth EKU) is
//! the caller `cert:<subject DN>` with `[admin] client_cert_scope`; the chain check is a
//! proof for the core too (protocol `admin_tls`), so failing certificates are throttled.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use portcullis_core::{Attempt, AuditContext, Outcome, PrincipalKind, ProofCheck, Protocol};
use zeroize::Zeroizing;

use crate::AdminContext;
use crate::problem::Problem;
use portcullis_door::http_conn::Peer;
use portcullis_door::tls::peer::{ClientCerts, thumbprint};

/// Reads everything.
pub const READ: &str = "portcullis:admin:read";
/// Reads and changes everything.
pub const WRITE: &str = "portcullis:admin:write";

/// The authenticated caller of one admin request (a request extension).
#[derive(Debug, Clone)]
pub struct Caller {
    /// The admin client the token was issued to.
    pub client_id: String,
    /// The token's id (in the audit stream, so an action can be traced to its token).
    pub jti: String,
    /// The token allows changes.
    pub write: bool,
    /// The request's id (also `X-Request-Id`).
    pub request_id: String,
    /// Where the request came from.
    pub source: IpAddr,
}

/// The id the router gave this request.
fn request_id(req: &Request) -> String {
    req.extensions()
        .get::<portcullis_door::http_conn::RequestId>()
        .map_or_else(portcullis_core::audit::request_id, |r| r.0.clone())
}

/// Middleware: authenticate every admin request except the OpenAPI document, and check
/// the scope its method needs.
pub async fn require(
    State(ctx): State<Arc<AdminContext>>,
    mut req: Request,
    next: Next,
) -> Response {
    let needs_write = !matches!(*req.method(), Method::GET | Method::HEAD);
    let token = match bearer(&req) {
        Ok(t) => t,
        Err(p) => return p.into_response(),
    };
    let source = req
        .extensions()
        .get::<Peer>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |p| p.0.ip());
    let presented = Presented {
        request_id: request_id(&req),
        certs: req.extensions().get::<ClientCerts>().cloned(),
        source,
    };
    let result = match (token, ctx.admin_ca.as_ref(), presented.certs.clone()) {
        (None, Some(ca), Some(certs)) => by_certificate(&ctx, ca, certs, presented).await,
        (token, _, _) => authenticate(&ctx, token, presented).await,
    };
    match result {
        Ok(caller) => {
            if needs_write && !caller.write {
                return Problem::forbidden(WRITE).into_response();
            }
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(p) => p.into_response(),
    }
}

/// The bearer token of `Authorization`, if the header is one.
fn bearer(req: &Request) -> Result<Option<String>, Problem> {
    let Some(v) = req.headers().get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let v = v
        .to_str()
        .map_err(|_| Problem::unauthenticated("the Authorization header is not ASCII", true))?;
    let (scheme, token) = v.split_once(' ').unwrap_or((v, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Problem::unauthenticated(
            "use Authorization: Bearer <access token>",
            false,
        ));
    }
    let token = token.trim();
    if token.is_empty() || token.len() > 8192 {
        return Err(Problem::unauthenticated(
            "the bearer token is malformed",
            true,
        ));
    }
    Ok(Some(token.to_owned()))
}

/// The client a token claims to be issued to, read without any cryptography: only the
/// throttle's key (a forged claim only spends the forger's budgets).
fn claimed_client(token: &str) -> String {
    let claimed = token
        .split('.')
        .nth(1)
        .and_then(|p| URL_SAFE_NO_PAD.decode(p).ok())
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("client_id")?.as_str().map(str::to_owned))
        .filter(|c| portcullis_store::record::validate_name("client id", c).is_ok());
    claimed.unwrap_or_else(|| "(malformed admin token)".to_owned())
}

/// What the request presented besides its token.
struct Presented {
    request_id: String,
    certs: Option<ClientCerts>,
    source: IpAddr,
}

async fn authenticate(
    ctx: &AdminContext,
    token: Option<String>,
    presented: Presented,
) -> Result<Caller, Problem> {
    let Presented {
        request_id,
        certs,
        source,
    } = presented;
    let Some(token) = token else {
        return Err(Problem::unauthenticated(
            "this call needs Authorization: Bearer <access token>",
            false,
        ));
    };
    let principal = claimed_client(&token);
    let attempt = Attempt {
        kind: PrincipalKind::Client,
        principal: principal.clone(),
        secret: Zeroizing::default(),
        source,
        protocol: Protocol::AdminBearer,
        deadline: Instant::now() + ctx.config.request_timeout,
        station: None,
        context: AuditContext {
            request_id: request_id.clone(),
            client_id: None,
            eap: None,
        },
    };
    let mut found: Option<(String, String, bool, bool)> = None;
    let outcome = ctx
        .verifier
        .verify_proof(attempt, async {
            let (check, who) = check_token(ctx, &token, &principal, certs.as_ref()).await;
            found = who;
            check
        })
        .await;
    match outcome {
        Outcome::Accepted { .. } => {}
        Outcome::Rejected => {
            return Err(Problem::unauthenticated(
                "the access token is not valid for the admin API",
                true,
            ));
        }
        Outcome::Throttled { retry_after } => return Err(Problem::throttled(retry_after)),
        Outcome::Overloaded { retry_after } | Outcome::Unavailable { retry_after } => {
            return Err(Problem::unavailable(
                "cannot check the token now; retry",
                retry_after,
            ));
        }
    }
    let Some((client_id, jti, read, write)) = found else {
        return Err(Problem::unavailable(
            "cannot check the token now; retry",
            Duration::from_secs(1),
        ));
    };
    if !read && !write {
        return Err(Problem::forbidden(READ));
    }
    Ok(Caller {
        client_id,
        jti,
        write,
        request_id,
        source,
    })
}

/// A caller with a client certificate from the admin CA and no token.
async fn by_certificate(
    ctx: &AdminContext,
    ca: &portcullis_door::tls::client_certs::ClientCa,
    certs: ClientCerts,
    presented: Presented,
) -> Result<Caller, Problem> {
    let leaf = certs
        .0
        .first()
        .map(|c| c.as_ref().to_vec())
        .unwrap_or_default();
    let subject = portcullis_door::tls::peer::subject_of(&leaf)
        .filter(|s| portcullis_store::record::validate_name("subject", s).is_ok())
        .unwrap_or_else(|| "(unreadable subject)".to_owned());
    let attempt = Attempt {
        kind: PrincipalKind::Client,
        principal: format!("cert:{subject}"),
        secret: Zeroizing::default(),
        source: presented.source,
        protocol: Protocol::AdminTls,
        deadline: Instant::now() + ctx.config.request_timeout,
        station: None,
        context: AuditContext {
            request_id: presented.request_id.clone(),
            client_id: None,
            eap: None,
        },
    };
    let outcome = ctx
        .verifier
        .verify_proof(attempt, async {
            if ca.verify(&certs.0) {
                ProofCheck::Valid
            } else {
                ProofCheck::Invalid("admin_certificate")
            }
        })
        .await;
    match outcome {
        Outcome::Accepted { .. } => Ok(Caller {
            client_id: format!("cert:{subject}"),
            jti: format!("x5t#S256:{}", thumbprint(&leaf)),
            write: ctx.config.admin.client_cert_write,
            request_id: presented.request_id,
            source: presented.source,
        }),
        Outcome::Rejected => Err(Problem::unauthenticated(
            "the client certificate is not from the admin CA",
            false,
        )),
        Outcome::Throttled { retry_after } => Err(Problem::throttled(retry_after)),
        Outcome::Overloaded { retry_after } | Outcome::Unavailable { retry_after } => Err(
            Problem::unavailable("cannot check the certificate now; retry", retry_after),
        ),
    }
}

/// The proof: a token of ours, for our audience, unexpired, unrevoked, bound to the
/// presented certificate if it says so, issued to the client it claims, which still
/// exists. Answers (client, jti, may read, may write) on success; the admin scopes are
/// those both the token and the client's current registration hold, so taking the scope
/// away from a client ends its tokens' admin rights at once.
async fn check_token(
    ctx: &AdminContext,
    token: &str,
    claimed: &str,
    certs: Option<&ClientCerts>,
) -> (ProofCheck, Option<(String, String, bool, bool)>) {
    let claims = match ctx.oauth.active_claims(token).await {
        Ok(Some(c)) => c,
        Ok(None) => return (ProofCheck::Invalid("invalid_token"), None),
        Err(_) => return (ProofCheck::Unavailable("store_unavailable"), None),
    };
    if claims.client_id != claimed || claims.aud != ctx.oauth.audience {
        return (ProofCheck::Invalid("invalid_token"), None);
    }
    if let Some(cnf) = &claims.cnf {
        let presented = certs
            .and_then(|c| c.0.first())
            .map(|leaf| thumbprint(leaf.as_ref()));
        if presented.as_deref() != Some(cnf.x5t_s256.as_str()) {
            return (ProofCheck::Invalid("certificate_binding"), None);
        }
    }
    let client = match ctx.oauth.clients.get(&claims.client_id).await {
        Ok(Some(c)) => c,
        Ok(None) => return (ProofCheck::Invalid("client_removed"), None),
        Err(_) => return (ProofCheck::Unavailable("store_unavailable"), None),
    };
    let holds =
        |s: &str| claims.scope.split(' ').any(|t| t == s) && client.scopes.iter().any(|c| c == s);
    let write = holds(WRITE);
    let read = write || holds(READ);
    (
        ProofCheck::Valid,
        Some((claims.client_id.clone(), claims.jti.clone(), read, write)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claimed_client_is_read_without_trusting_it() {
        let payload = URL_SAFE_NO_PAD.encode(br#"{"client_id":"ops"}"#);
        assert_eq!(claimed_client(&format!("x.{payload}.y")), "ops");
        assert_eq!(claimed_client("garbage"), "(malformed admin token)");
        let bad = URL_SAFE_NO_PAD.encode(b"{\"client_id\":\"a\\nb\"}");
        assert_eq!(
            claimed_client(&format!("x.{bad}.y")),
            "(malformed admin token)"
        );
    }
}
