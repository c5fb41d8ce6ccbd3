//! Drivers: how one attempt is made and what its answer means.
//!
//! The runner knows nothing of protocols: it asks a [`Driver`] to prepare each client once
//! (credentials encoded, request parts built, so the hot path only clones reference-counted
//! bytes), keeps a per-connection [`Driver::Session`], and calls [`Driver::attempt`]. The
//! OAuth 2.0 and `http-get` drivers share the HTTP transport; the RADIUS driver
//! (`crate::radius`) prepares each client's attributes and keeps a UDP socket as its
//! session; the LDAP driver (`crate::ldap`) keeps an LDAP connection.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{AUTHORIZATION, CONNECTION, CONTENT_TYPE, HOST, HeaderValue, RETRY_AFTER};
use hyper::{Method, Request, Response};
use serde::Deserialize;

use crate::LabError;
use futures::FutureExt;

use crate::clock::unix_now;
use crate::conn::{self, Body, ClientConn};
use crate::jwt::{self, Check, Expected, Jwks};
use crate::outcome::Outcome;
use crate::scenario::{ClientAuth, ConnectionMode, Grant};

/// Who one virtual client is.
#[derive(Debug, Clone)]
pub struct Identity {
    /// Principal id (client id, or user name for the password grant).
    pub id: String,
    /// The secret it presents (right or wrong).
    pub secret: String,
    /// Local address to bind, if any.
    pub source: Option<IpAddr>,
    /// Keep-alive or a new connection per request.
    pub connection: ConnectionMode,
    /// This client's TLS (own session cache), for `https://` targets.
    pub tls: Option<crate::tls::Tls>,
    /// RADIUS: this client is an 802.1X station (its method and own TLS).
    pub eap: Option<crate::eap::station::Station>,
    /// Its group's own client authentication, when it differs from the driver's.
    pub auth: Option<GroupAuth>,
}

/// A group's own client authentication.
#[derive(Debug, Clone)]
pub struct GroupAuth {
    /// The method.
    pub auth: ClientAuth,
    /// `private_key_jwt`: how its clients sign (`None`: the driver's key).
    pub signer: Option<Arc<crate::assertion::Signer>>,
}

/// What one attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptResult {
    /// Classified outcome.
    pub outcome: Outcome,
    /// `Retry-After` of a 429/503, if given in seconds.
    pub retry_after: Option<Duration>,
    /// The answer was a valid token for someone else (or, for RADIUS, a reply that
    /// belongs to no request of this client).
    pub misdelivered: bool,
    /// Retransmissions this attempt needed (RADIUS; 0 for HTTP).
    pub retransmits: u32,
    /// The attempt opened a connection: how its connect and TLS handshake went.
    pub conn: Option<conn::Phases>,
    /// The attempt was an 802.1X login: its round trips, resumption and key check.
    pub eap: Option<crate::eap::station::EapLogin>,
    /// The attempt was an LDAP login: its operations' result codes and bind time.
    pub ldap: Option<crate::ldap::stats::LdapAttempt>,
}

impl AttemptResult {
    /// A result with nothing but its outcome.
    pub fn of(outcome: Outcome) -> AttemptResult {
        AttemptResult {
            outcome,
            retry_after: None,
            misdelivered: false,
            retransmits: 0,
            conn: None,
            eap: None,
            ldap: None,
        }
    }
}

/// A way of making attempts against a target.
pub trait Driver: Send + Sync + 'static {
    /// Per-client prepared data.
    type Client: Send + Sync + 'static;
    /// Per-connection state (kept by closed-loop clients, pooled per client in open loop).
    type Session: Send + 'static;

    /// Prepare a client once, before the run.
    fn client(&self, who: &Identity) -> Result<Self::Client, LabError>;
    /// A fresh, unconnected session.
    fn session(&self) -> Self::Session;
    /// Make one attempt. Dropping the future (timeout) must leave the session reusable
    /// (an HTTP session then simply reconnects).
    fn attempt<'a>(
        &'a self,
        client: &'a Self::Client,
        session: &'a mut Self::Session,
    ) -> impl Future<Output = AttemptResult> + Send + 'a;
    /// After an attempt timed out (its future dropped): whether the runner should keep
    /// `session` for the client's next attempt (after the driver set it right) rather
    /// than start a fresh one. A datagram socket should be kept: a new one may get the
    /// port the old one just freed, and the late answer to the timed-out request then
    /// reaches a socket that never sent it.
    fn keep_after_timeout(&self, session: &mut Self::Session) -> bool {
        let _ = session;
        false
    }
}

/// How requests reach the target: address and `Host` header.
#[derive(Debug, Clone)]
pub struct Transport {
    /// Target address.
    pub addr: SocketAddr,
    /// `Host` header value.
    pub host: HeaderValue,
}

/// An HTTP session: at most one open connection.
#[derive(Debug, Default)]
pub struct HttpSession {
    conn: Option<(SendRequest<Body>, ClientConn)>,
}

impl Transport {
    /// Send `req` from `source`, reusing the session's connection when allowed. Also
    /// says how opening a connection went, when this request opened one.
    async fn send(
        &self,
        session: &mut HttpSession,
        (source, mode, tls): (Option<IpAddr>, ConnectionMode, Option<&crate::tls::Tls>),
        host: &HeaderValue,
        mut req: Request<Body>,
        keep_body: bool,
    ) -> Result<(Response<Bytes>, Option<conn::Phases>), ()> {
        // Taken out for the duration of the attempt: if the attempt is dropped by a timeout
        // the half-used connection is dropped with it.
        let reuse = match session.conn.take() {
            // Polling the idle connection once notices a close by the server since the
            // last request, so we reconnect instead of failing on a dead socket.
            Some((s, mut c)) => {
                (!s.is_closed() && c.as_mut().now_or_never().is_none()).then_some((s, c))
            }
            None => None,
        };
        let (mut sender, mut conn, phases) = match reuse {
            Some((s, c)) => (s, c, None),
            None => {
                let (s, c, p) = conn::open(self.addr, source, tls).await.map_err(|_| ())?;
                (s, c, Some(p))
            }
        };
        let h = req.headers_mut();
        h.insert(HOST, host.clone());
        if mode != ConnectionMode::KeepAlive {
            // The server closes first, so TIME_WAIT lands on its side, not on our ports.
            h.insert(CONNECTION, HeaderValue::from_static("close"));
        }
        let mut conn_done = false;
        let (parts, body) = {
            let exchange = async {
                sender.ready().await.map_err(|_| ())?;
                let resp = sender.send_request(req).await.map_err(|_| ())?;
                let (parts, mut body) = resp.into_parts();
                let body = if keep_body {
                    body.collect().await.map_err(|_| ())?.to_bytes()
                } else {
                    // Read to the end (the connection is reusable only then) but keep
                    // nothing: no buffer to fill per request.
                    while let Some(f) = body.frame().await {
                        f.map_err(|_| ())?;
                    }
                    Bytes::new()
                };
                Ok::<_, ()>((parts, body))
            };
            let mut exchange = std::pin::pin!(exchange);
            tokio::select! {
                biased;
                r = &mut exchange => r?,
                _ = conn.as_mut() => {
                    // The connection finished (server closed after answering): whatever it
                    // delivered is already in the body channel.
                    conn_done = true;
                    exchange.await?
                }
            }
        };
        let close = parts
            .headers
            .get(CONNECTION)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
        if mode == ConnectionMode::KeepAlive && !close && !conn_done {
            session.conn = Some((sender, conn));
        }
        Ok((Response::from_parts(parts, body), phases))
    }
}

fn retry_after(resp: &Response<Bytes>) -> Option<Duration> {
    let v = resp.headers().get(RETRY_AFTER)?.to_str().ok()?;
    v.trim()
        .parse::<u64>()
        .ok()
        .map(|s| Duration::from_secs(s.min(3600)))
}

/// Common status classification (shared by both HTTP drivers).
fn classify_status(resp: &Response<Bytes>) -> Option<AttemptResult> {
    let out = match resp.status().as_u16() {
        429 => Outcome::Throttled,
        503 => Outcome::Shed,
        _ => return None,
    };
    Some(AttemptResult {
        retry_after: retry_after(resp),
        ..AttemptResult::of(out)
    })
}

// ---------------------------------------------------------------------------------------

/// `GET path`, success on 200.
#[derive(Debug)]
pub struct HttpGetDriver {
    /// Transport.
    pub transport: Transport,
    /// Request path.
    pub path: hyper::Uri,
}

/// A prepared `http-get` client.
#[derive(Debug)]
pub struct HttpGetClient {
    source: Option<IpAddr>,
    mode: ConnectionMode,
    tls: Option<crate::tls::Tls>,
    /// The client's own copies of the path and `Host`: cloning them per request then bumps
    /// a reference count only this client's thread touches, not one all clients share.
    path: hyper::Uri,
    host: HeaderValue,
}

impl Driver for HttpGetDriver {
    type Client = HttpGetClient;
    type Session = HttpSession;

    fn client(&self, who: &Identity) -> Result<HttpGetClient, LabError> {
        let path = hyper::Uri::try_from(self.path.to_string())
            .map_err(|e| LabError::Scenario(format!("bad request path: {e}")))?;
        let host = HeaderValue::from_bytes(self.transport.host.as_bytes())
            .map_err(|e| LabError::Scenario(format!("bad Host header: {e}")))?;
        Ok(HttpGetClient {
            source: who.source,
            mode: who.connection,
            tls: who.tls.clone(),
            path,
            host,
        })
    }

    fn session(&self) -> HttpSession {
        HttpSession::default()
    }

    async fn attempt<'a>(
        &'a self,
        client: &'a HttpGetClient,
        session: &'a mut HttpSession,
    ) -> AttemptResult {
        let mut req = Request::new(Full::new(Bytes::new()));
        *req.uri_mut() = client.path.clone();
        let Ok((resp, phases)) = self
            .transport
            .send(
                session,
                (client.source, client.mode, client.tls.as_ref()),
                &client.host,
                req,
                false,
            )
            .await
        else {
            return AttemptResult::of(Outcome::ConnectionError);
        };
        let mut r = classify_status(&resp).unwrap_or_else(|| {
            AttemptResult::of(if resp.status() == 200 {
                Outcome::Success
            } else {
                Outcome::WrongResponse
            })
        });
        r.conn = phases;
        r
    }
}

// ---------------------------------------------------------------------------------------

/// OAuth 2.0 token requests (RFC 6749), tokens checked against the JWKS.
#[derive(Debug)]
pub struct OAuth2Driver {
    /// Transport.
    pub transport: Transport,
    /// Token endpoint path.
    pub token_path: hyper::Uri,
    /// Grant type.
    pub grant: Grant,
    /// Client authentication.
    pub auth: ClientAuth,
    /// Scope to request.
    pub scope: Option<String>,
    /// Password grant: the application client (id, secret).
    pub app_client: Option<(String, String)>,
    /// Verification keys (fetched before each repeat).
    pub jwks: Arc<Jwks>,
    /// Expected `iss`.
    pub issuer: Option<String>,
    /// `private_key_jwt`: the signing key, the `aud` and the lifetime of assertions.
    pub assertion: Option<Arc<crate::assertion::Signer>>,
}

/// A prepared OAuth 2.0 client: its encoded request parts and who its tokens must name.
#[derive(Debug)]
pub struct OAuth2Client {
    source: Option<IpAddr>,
    mode: ConnectionMode,
    tls: Option<crate::tls::Tls>,
    authorization: Option<HeaderValue>,
    /// The form body; with `private_key_jwt`, everything but the assertion, which is
    /// signed afresh for each attempt.
    body: Bytes,
    /// `private_key_jwt`: signs each attempt's assertion.
    signer: Option<Arc<crate::assertion::Signer>>,
    expect_client_id: String,
    expect_sub: String,
}

/// `application/x-www-form-urlencoded` encoding of one value.
pub fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// RFC 7523 2.2 `client_assertion_type`.
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

fn basic(id: &str, secret: &str) -> Result<HeaderValue, LabError> {
    // RFC 6749 2.3.1: id and secret are form-encoded before the Basic encoding.
    let raw = format!("{}:{}", form_encode(id), form_encode(secret));
    HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(raw)))
        .map_err(|e| LabError::Scenario(format!("credentials make a bad header: {e}")))
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: String,
}

impl Driver for OAuth2Driver {
    type Client = OAuth2Client;
    type Session = HttpSession;

    fn client(&self, who: &Identity) -> Result<OAuth2Client, LabError> {
        let mut body = String::new();
        let mut field = |k: &str, v: &str| {
            if !body.is_empty() {
                body.push('&');
            }
            body.push_str(k);
            body.push('=');
            body.push_str(&form_encode(v));
        };
        // Who authenticates as the OAuth client, and who the token must name.
        let (client_id, client_secret, sub) = match (self.grant, &self.app_client) {
            (Grant::Password, Some((cid, cs))) => {
                field("grant_type", "password");
                field("username", &who.id);
                field("password", &who.secret);
                (cid.as_str(), cs.as_str(), who.id.as_str())
            }
            _ => {
                field("grant_type", "client_credentials");
                (who.id.as_str(), who.secret.as_str(), who.id.as_str())
            }
        };
        if let Some(s) = &self.scope {
            field("scope", s);
        }
        let method = who.auth.as_ref().map_or(self.auth, |a| a.auth);
        let signer = match (method, &who.auth) {
            (
                ClientAuth::PrivateKeyJwt,
                Some(GroupAuth {
                    signer: Some(s), ..
                }),
            ) => Some(s.clone()),
            (ClientAuth::PrivateKeyJwt, _) => self.assertion.clone(),
            _ => None,
        };
        if method == ClientAuth::PrivateKeyJwt && signer.is_none() {
            return Err(LabError::Scenario(
                "private_key_jwt without a private_key".into(),
            ));
        }
        let authorization = match method {
            ClientAuth::ClientSecretBasic => Some(basic(client_id, client_secret)?),
            ClientAuth::ClientSecretPost => {
                field("client_id", client_id);
                field("client_secret", client_secret);
                None
            }
            ClientAuth::PrivateKeyJwt => {
                field("client_assertion_type", JWT_BEARER);
                None
            }
            ClientAuth::TlsClientAuth => {
                field("client_id", client_id);
                None
            }
        };
        Ok(OAuth2Client {
            source: who.source,
            mode: who.connection,
            tls: who.tls.clone(),
            signer,
            authorization,
            body: Bytes::from(body),
            expect_client_id: client_id.to_string(),
            expect_sub: sub.to_string(),
        })
    }

    fn session(&self) -> HttpSession {
        HttpSession::default()
    }

    async fn attempt<'a>(
        &'a self,
        client: &'a OAuth2Client,
        session: &'a mut HttpSession,
    ) -> AttemptResult {
        let body = match &client.signer {
            None => client.body.clone(),
            Some(signer) => {
                let Some(jws) = signer.assertion(&client.expect_client_id) else {
                    return AttemptResult::of(Outcome::ConnectionError);
                };
                let mut b = Vec::with_capacity(client.body.len() + jws.len() + 20);
                b.extend_from_slice(&client.body);
                b.extend_from_slice(b"&client_assertion=");
                b.extend_from_slice(jws.as_bytes());
                Bytes::from(b)
            }
        };
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.token_path.clone();
        let h = req.headers_mut();
        h.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        if let Some(a) = &client.authorization {
            h.insert(AUTHORIZATION, a.clone());
        }
        let Ok((resp, phases)) = self
            .transport
            .send(
                session,
                (client.source, client.mode, client.tls.as_ref()),
                &self.transport.host,
                req,
                true,
            )
            .await
        else {
            return AttemptResult::of(Outcome::ConnectionError);
        };
        let mut r = token_answer(self, client, &resp);
        r.conn = phases;
        r
    }
}

/// What a token endpoint's answer means for this client.
fn token_answer(d: &OAuth2Driver, client: &OAuth2Client, resp: &Response<Bytes>) -> AttemptResult {
    {
        if let Some(r) = classify_status(resp) {
            return r;
        }
        match resp.status().as_u16() {
            200 => {
                let Ok(t) = serde_json::from_slice::<TokenResponse>(resp.body()) else {
                    return AttemptResult::of(Outcome::WrongResponse);
                };
                let expected = Expected {
                    client_id: &client.expect_client_id,
                    sub: &client.expect_sub,
                    issuer: d.issuer.as_deref(),
                };
                match jwt::check(&t.access_token, &d.jwks, expected, unix_now()) {
                    Check::Valid => AttemptResult::of(Outcome::Success),
                    Check::Invalid(_) => AttemptResult::of(Outcome::WrongResponse),
                    Check::Misdelivered => AttemptResult {
                        misdelivered: true,
                        ..AttemptResult::of(Outcome::WrongResponse)
                    },
                }
            }
            401 => AttemptResult::of(Outcome::AuthFailure),
            400 => match serde_json::from_slice::<ErrorResponse>(resp.body()) {
                Ok(e)
                    if matches!(
                        e.error.as_str(),
                        "invalid_client" | "invalid_grant" | "unauthorized_client"
                    ) =>
                {
                    AttemptResult::of(Outcome::AuthFailure)
                }
                _ => AttemptResult::of(Outcome::WrongResponse),
            },
            _ => AttemptResult::of(Outcome::WrongResponse),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_encoding_matches_the_html_spec() {
        assert_eq!(form_encode("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
        assert_eq!(form_encode("AZaz09-._*"), "AZaz09-._*");
    }

    #[test]
    fn basic_header_form_encodes_before_base64() {
        // "a:b" -> YTpi ; "x y:p%" -> "x+y:p%25" -> eCt5OnAlMjU=
        assert_eq!(basic("a", "b").unwrap(), "Basic YTpi");
        assert_eq!(basic("x y", "p%").unwrap(), "Basic eCt5OnAlMjU=");
    }
}
