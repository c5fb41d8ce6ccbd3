//! The HTTP front door: the OAuth 2.0 token server over HTTP/TLS and the operator
//! endpoints beside it. Everything here maps core outcomes to HTTP answers; nothing below
//! (`App`, the core, the store) knows about HTTP.
//!
//! - [`routes`]: the router, discovery metadata, JWKS, health, readiness, metrics.
//! - [`oauth`]: token, introspection and revocation endpoints.
//! - [`register`]: RFC 7591 dynamic client registration and the RFC 7592 client
//!   configuration endpoint (`[registration]`).
//! - [`form`]: request body and client credential parsing (RFC 6749 rules).
//! - [`error`]: OAuth error answers; the only place errors become status codes.
//! - [`forwarded`]: the real client address behind trusted load balancers.
//! - [`proxy_protocol`]: the PROXY protocol v2 header of TCP load balancers.
//! - [`status`]: the live status page.

pub mod error;
pub mod form;
pub mod forwarded;
pub mod oauth;
pub mod proxy_protocol;
pub mod register;
pub mod routes;
pub mod status;

/// The id of one HTTP request: in the audit event of every attempt it made and in the
/// `X-Request-Id` response header, so a client's report can be matched with the log. Set
/// by the router's middleware (`routes`), read by the endpoints (`oauth`): defined here,
/// above both, so neither imports the other for it.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);
