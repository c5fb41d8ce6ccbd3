//! What a front end asks ([`Attempt`]) and what it gets back ([`Outcome`]).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use zeroize::Zeroizing;

/// Which namespace a principal lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PrincipalKind {
    /// An OAuth client (client id + client secret).
    Client,
    /// A human user (username + password).
    User,
}

/// Which front end and mechanism produced the attempt (metrics labels, policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// OAuth 2.0 client authentication at the token, introspection or revocation endpoint.
    OAuthClient,
    /// OAuth 2.0 resource-owner password grant (the user's password).
    OAuthPassword,
    /// RADIUS PAP.
    RadiusPap,
    /// Anything else (CLI, tests).
    Other,
    /// OAuth 2.0 client authentication with a signed assertion (`private_key_jwt`,
    /// RFC 7523): checked by the front end's signature check, never hashed.
    OAuthClientAssertion,
    /// OAuth 2.0 client authentication with a TLS client certificate (RFC 8705).
    OAuthClientTls,
    /// 802.1X EAP-TLS over RADIUS: the client certificate, checked by the TLS handshake
    /// (a proof, never hashed).
    RadiusEapTls,
    /// 802.1X EAP-TTLS over RADIUS: the inner PAP password.
    RadiusEapTtls,
    /// The admin API (issue 27): a bearer access token this server issued, checked by
    /// the admin door (a proof, never hashed); failures spend the same budgets.
    AdminBearer,
    /// The admin API: a TLS client certificate from the configured admin CA (a proof).
    AdminTls,
    /// RFC 7591/7592 dynamic client registration: an initial access token or a client's
    /// registration access token, checked by the front end (a proof, never hashed).
    OAuthRegistration,
    /// RADIUS accounting (RFC 2866): no credential is checked; its audit events are a
    /// NAS's Accounting-On/Off, refused request classes and (when configured) records.
    RadiusAccounting,
    /// An LDAP simple bind (issue 39): a user's password, or a service account's
    /// generated secret (kind client); the LDAP door's own events (searches) too.
    Ldap,
}

impl Protocol {
    /// Stable label for metrics.
    pub const fn label(self) -> &'static str {
        match self {
            Protocol::OAuthClient => "oauth_client",
            Protocol::OAuthPassword => "oauth_password",
            Protocol::RadiusPap => "radius_pap",
            Protocol::Other => "other",
            Protocol::OAuthClientAssertion => "oauth_client_assertion",
            Protocol::OAuthClientTls => "oauth_client_tls",
            Protocol::RadiusEapTls => "radius_eap_tls",
            Protocol::RadiusEapTtls => "radius_eap_ttls",
            Protocol::AdminBearer => "admin_bearer",
            Protocol::AdminTls => "admin_tls",
            Protocol::OAuthRegistration => "oauth_registration",
            Protocol::RadiusAccounting => "radius_accounting",
            Protocol::Ldap => "ldap",
        }
    }
}

/// One credential check.
pub struct Attempt {
    /// Client or user.
    pub kind: PrincipalKind,
    /// Client id or username, as presented (not trusted).
    pub principal: String,
    /// The presented secret; wiped from memory on drop.
    pub secret: Zeroizing<Vec<u8>>,
    /// Network source of the request: the flow key for fairness and throttling.
    pub source: IpAddr,
    /// The end user's station behind a shared source, when the front end knows one: a
    /// RADIUS NAS relays every user's request from its own address, so the NAS fills in
    /// Calling-Station-Id (else User-Name). When set, throttling and fair queuing key on
    /// (`source`, `station`) instead of on the source's prefix alone. `None` for
    /// front ends whose peers are the end users (OAuth).
    pub station: Option<String>,
    /// Front end and mechanism.
    pub protocol: Protocol,
    /// The answer is useless after this instant (the client's timeout); work that cannot
    /// finish before it is refused up front.
    pub deadline: Instant,
    /// Request id and application client for the audit event.
    pub context: AuditContext,
}

impl std::fmt::Debug for Attempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attempt")
            .field("kind", &self.kind)
            .field("principal", &self.principal)
            .field("secret", &"<redacted>")
            .field("source", &self.source)
            .field("station", &self.station)
            .field("protocol", &self.protocol)
            .field("deadline", &self.deadline)
            .field("context", &self.context)
            .finish()
    }
}

/// What the front end knows about the request that the core does not: its id (also sent
/// back to the client, e.g. as `X-Request-Id`) and, for a user's login, the application
/// client it came through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditContext {
    /// Unique id of the request (`crate::audit::request_id` makes one).
    pub request_id: String,
    /// The OAuth client of a password grant (the principal is then the user).
    pub client_id: Option<String>,
    /// An 802.1X login: its EAP method, outer identity and whether it resumed.
    pub eap: Option<EapDetail>,
}

/// The EAP side of an 802.1X login's audit event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EapDetail {
    /// `tls` or `ttls` (or the refused method, `peap`...).
    pub method: &'static str,
    /// The EAP-Response/Identity (may be anonymous; the principal is the inner or
    /// certificate identity).
    pub outer_identity: String,
    /// The TLS session was resumed (no inner password asked).
    pub resumed: bool,
    /// Round trips the conversation took.
    pub rounds: u32,
}

/// The verdict of a proof the front end checks itself ([`crate::Verifier::verify_proof`]):
/// a signature or a certificate, microseconds of work, so it runs inline after the
/// throttle admitted the attempt and never on the hash pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProofCheck {
    /// The proof holds for this principal.
    Valid,
    /// It does not (bad signature, unknown principal, replay...): a failure, charged to
    /// the budgets like a wrong secret. The reason goes to the audit event.
    Invalid(&'static str),
    /// It could not be checked now (a store or Redis failure): answered "overloaded",
    /// nothing charged.
    Unavailable(&'static str),
}

/// The verdict. An unknown principal is indistinguishable from [`Outcome::Rejected`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The secret matched. `needs_rehash`: the stored hash is weaker than policy (the core
    /// upgrades it itself; front ends may log it).
    Accepted {
        /// Stored hash is below the current policy.
        needs_rehash: bool,
    },
    /// Wrong secret, unknown or disabled principal.
    Rejected,
    /// Too many recent failures from this source or for this principal: no hash was spent.
    Throttled {
        /// When to try again (jittered).
        retry_after: Duration,
    },
    /// The server is saturated: answered at once rather than queued into a timeout.
    Overloaded {
        /// When to try again (jittered).
        retry_after: Duration,
    },
}

/// Priority class of an attempt (see the crate docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// A source with a recent success for this principal, or in the trusted CIDRs.
    Trusted,
    /// Anyone else.
    Unknown,
    /// A source prefix with many recent failures.
    Suspect,
}

impl Class {
    /// Stable label for metrics.
    pub const fn label(self) -> &'static str {
        match self {
            Class::Trusted => "trusted",
            Class::Unknown => "unknown",
            Class::Suspect => "suspect",
        }
    }
}
