//! The LDAP driver: password checks as applications make them over LDAP, against any LDAP
//! server (OpenLDAP's slapd, 389-ds, Portcullis' LDAP door).
//!
//! One attempt is one login: bind as the user with the password typed, found either from a
//! DN template (`user_dn`) or, as GitLab, Grafana, SSSD or Keycloak do, by binding as the
//! service account, searching `base_dn` for the user's entry and binding with the DN found;
//! then the searches an application makes once the user is in (the user's entry as the
//! user, optionally its groups: as the service account, re-bound, when there is one). Unknown users end at the search, with no bind, as in those applications.
//!
//! Each client binds its own source address, so a server that keys budgets or blocks on
//! the address sees distinct stations. With `connection = "keep-alive"` a client keeps its
//! connection (and re-binds on it, as a pooled application does); with `per-request` it
//! connects (and with LDAPS or StartTLS handshakes) for every login and unbinds after.
//!
//! Outcomes: the user's bind answered success and every search after it succeeded:
//! success; invalidCredentials (49), or no entry for the user: an authentication failure;
//! busy/unavailable (51/52) or a Notice of Disconnection with them: shed;
//! unwillingToPerform (53): throttled; any other code, or a response that does not decode
//! or does not answer the request: a wrong response. Every code is also counted by
//! operation ([`stats`]), and honest users whose right password stops working are reported
//! as locked out.

pub mod stats;
pub mod wire;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use ldap3_proto::proto::{
    LdapDerefAliases, LdapFilter, LdapMatchingRuleAssertion, LdapSearchRequest, LdapSearchScope,
    LdapSubstringFilter,
};

use crate::LabError;
use crate::conn::Phases;
use crate::driver::{AttemptResult, Driver, Identity};
use crate::outcome::Outcome;
use crate::scenario::{ConnectionMode, LdapSpec, UserBind, ldap::DN, ldap::USER};
use crate::tls::Tls;
use stats::LdapAttempt;
use wire::{Conn, WireError};

/// Stand-ins for `{user}` and `{dn}` while a filter template is parsed: the value is put in
/// the parsed filter as it is (an assertion value is an octet string on the wire), so user
/// names need no RFC 4515 escaping and cannot change the filter's structure.
const USER_MARK: &str = "\u{1}user\u{1}";
const DN_MARK: &str = "\u{1}dn\u{1}";

/// Parse a filter template (`{user}`, `{dn}` placeholders) once.
pub fn parse_filter(template: &str) -> Result<LdapFilter, LabError> {
    let marked = template.replace(USER, USER_MARK).replace(DN, DN_MARK);
    ldap3_proto::parse_ldap_filter_str(&marked)
        .map_err(|e| LabError::Scenario(format!("LDAP filter {template:?}: {e}")))
}

/// `f` with the placeholders replaced by `user` and `dn`.
pub fn fill_filter(f: &LdapFilter, user: &str, dn: &str) -> LdapFilter {
    let s = |v: &String| v.replace(USER_MARK, user).replace(DN_MARK, dn);
    let o = |v: &Option<String>| v.as_ref().map(s);
    let all = |v: &[LdapFilter]| v.iter().map(|x| fill_filter(x, user, dn)).collect();
    match f {
        LdapFilter::And(v) => LdapFilter::And(all(v)),
        LdapFilter::Or(v) => LdapFilter::Or(all(v)),
        LdapFilter::Not(x) => LdapFilter::Not(Box::new(fill_filter(x, user, dn))),
        LdapFilter::Equality(a, v) => LdapFilter::Equality(a.clone(), s(v)),
        LdapFilter::Substring(a, sub) => LdapFilter::Substring(
            a.clone(),
            LdapSubstringFilter {
                initial: o(&sub.initial),
                any: sub.any.iter().map(s).collect(),
                final_: o(&sub.final_),
            },
        ),
        LdapFilter::GreaterOrEqual(a, v) => LdapFilter::GreaterOrEqual(a.clone(), s(v)),
        LdapFilter::LessOrEqual(a, v) => LdapFilter::LessOrEqual(a.clone(), s(v)),
        LdapFilter::Present(a) => LdapFilter::Present(a.clone()),
        LdapFilter::Approx(a, v) => LdapFilter::Approx(a.clone(), s(v)),
        LdapFilter::Extensible(m) => LdapFilter::Extensible(LdapMatchingRuleAssertion {
            match_value: s(&m.match_value),
            ..m.clone()
        }),
    }
}

/// `value` escaped for an RDN value (RFC 4514 §2.4).
pub fn escape_dn_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 4);
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        match c {
            '"' | '+' | ',' | ';' | '<' | '>' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '#' if i == 0 => out.push_str("\\#"),
            ' ' if i == 0 || i == last => out.push_str("\\ "),
            '\0' => out.push_str("\\00"),
            c => out.push(c),
        }
    }
    out
}

/// Makes LDAP logins against one server.
pub struct LdapDriver {
    target: SocketAddr,
    spec: LdapSpec,
    /// Search-then-bind: the parsed user filter.
    lookup: Option<LdapFilter>,
    /// Search-then-bind: the service account (DN, password).
    service: Option<(String, String)>,
    /// The parsed group filter.
    groups: Option<LdapFilter>,
}

impl LdapDriver {
    /// A driver for `target`; refuses filters that do not parse and a service password
    /// that cannot be had.
    pub fn new(target: SocketAddr, spec: LdapSpec) -> Result<LdapDriver, LabError> {
        let (lookup, service) = match &spec.bind {
            UserBind::Search {
                filter,
                service_dn,
                service_password,
            } => (
                Some(parse_filter(filter)?),
                Some((service_dn.clone(), service_password.resolve()?)),
            ),
            UserBind::Dn(_) => (None, None),
        };
        let groups = spec.group_filter.as_deref().map(parse_filter).transpose()?;
        Ok(LdapDriver {
            target,
            spec,
            lookup,
            service,
            groups,
        })
    }
}

impl std::fmt::Debug for LdapDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LdapDriver")
            .field("target", &self.target)
            .field("spec", &self.spec)
            .field("service", &self.service.as_ref().map(|(dn, _)| dn))
            .finish_non_exhaustive()
    }
}

/// A prepared LDAP client: who it is and how it connects.
pub struct LdapClient {
    source: Option<IpAddr>,
    user: String,
    password: String,
    /// Bind by DN: the user's DN.
    dn: Option<String>,
    /// Search-then-bind: the user's filter, filled in.
    lookup: Option<LdapFilter>,
    /// LDAPS or StartTLS: this client's TLS (its own session cache), without ALPN.
    tls: Option<Tls>,
    keep: bool,
}

impl std::fmt::Debug for LdapClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LdapClient")
            .field("source", &self.source)
            .field("user", &self.user)
            .field("dn", &self.dn)
            .field("keep", &self.keep)
            .finish_non_exhaustive()
    }
}

/// A client's connection between attempts (keep-alive).
#[derive(Debug, Default)]
pub struct LdapSession {
    conn: Option<Conn>,
}

impl Driver for LdapDriver {
    type Client = LdapClient;
    type Session = LdapSession;

    fn client(&self, who: &Identity) -> Result<LdapClient, LabError> {
        if who.secret.is_empty() {
            // RFC 4513 §5.1.2: a simple bind with a DN and no password is unauthenticated.
            return Err(LabError::Scenario(format!(
                "LDAP: {:?} has an empty password (an unauthenticated bind, not a login)",
                who.id
            )));
        }
        let tls = match (&who.tls, self.spec.tls()) {
            (Some(t), true) => {
                let mut config = (*t.config).clone();
                config.alpn_protocols.clear();
                Some(Tls {
                    config: Arc::new(config),
                    name: t.name.clone(),
                })
            }
            (None, true) => {
                return Err(LabError::Scenario(
                    "LDAP: LDAPS or StartTLS without TLS settings".into(),
                ));
            }
            (_, false) => None,
        };
        Ok(LdapClient {
            source: who.source,
            user: who.id.clone(),
            password: who.secret.clone(),
            dn: match &self.spec.bind {
                UserBind::Dn(t) => Some(t.replace(USER, &escape_dn_value(&who.id))),
                UserBind::Search { .. } => None,
            },
            lookup: self.lookup.as_ref().map(|f| fill_filter(f, &who.id, "")),
            tls,
            keep: who.connection == ConnectionMode::KeepAlive,
        })
    }

    fn session(&self) -> LdapSession {
        LdapSession::default()
    }

    async fn attempt<'a>(&'a self, c: &'a LdapClient, s: &'a mut LdapSession) -> AttemptResult {
        let mut a = LdapAttempt::default();
        let mut phases = None;
        let outcome = match self.login(c, s, &mut a, &mut phases).await {
            Ok(o) => o,
            Err(e) => failed(&e),
        };
        AttemptResult {
            conn: phases,
            ldap: Some(a),
            ..AttemptResult::of(outcome)
        }
    }
}

/// The outcome of a result code that ends an operation.
pub fn classify(code: u16) -> Outcome {
    match code {
        0 => Outcome::Success,
        stats::INVALID_CREDENTIALS => Outcome::AuthFailure,
        51 | 52 => Outcome::Shed,
        53 => Outcome::Throttled,
        _ => Outcome::WrongResponse,
    }
}

/// The outcome of a wire failure.
pub fn failed(e: &WireError) -> Outcome {
    match e {
        WireError::Io(_) | WireError::Closed => Outcome::ConnectionError,
        WireError::Disconnected(51 | 52) => Outcome::Shed,
        WireError::Disconnected(_) => Outcome::ConnectionError,
        WireError::Malformed(_) | WireError::OtherMessage { .. } | WireError::Unexpected { .. } => {
            Outcome::WrongResponse
        }
    }
}

/// A search request (`sizelimit` 0: the server's limit).
fn search(
    base: &str,
    scope: LdapSearchScope,
    filter: LdapFilter,
    (attrs, sizelimit): (Vec<String>, i32),
) -> LdapSearchRequest {
    LdapSearchRequest {
        base: base.to_owned(),
        scope,
        aliases: LdapDerefAliases::Never,
        sizelimit,
        timelimit: 0,
        typesonly: false,
        filter,
        attrs,
    }
}

impl LdapDriver {
    /// One login on the session's connection (or a new one); the connection is kept for
    /// the next attempt only with keep-alive and after a complete exchange.
    async fn login(
        &self,
        c: &LdapClient,
        s: &mut LdapSession,
        a: &mut LdapAttempt,
        phases: &mut Option<Phases>,
    ) -> Result<Outcome, WireError> {
        let mut conn = match s.conn.take() {
            Some(conn) => conn,
            None => match self.connect(c, a, phases).await? {
                Ok(conn) => conn,
                Err(outcome) => return Ok(outcome),
            },
        };
        let outcome = self.operations(c, &mut conn, a).await?;
        if c.keep {
            s.conn = Some(conn);
        } else {
            conn.unbind().await;
        }
        Ok(outcome)
    }

    /// A new connection, through TLS when the target asks for it; `Ok(Err(outcome))`:
    /// the server refused StartTLS.
    async fn connect(
        &self,
        c: &LdapClient,
        a: &mut LdapAttempt,
        phases: &mut Option<Phases>,
    ) -> Result<Result<Conn, Outcome>, WireError> {
        let ldaps = if self.spec.ldaps {
            c.tls.as_ref()
        } else {
            None
        };
        let (conn, mut p) = Conn::open(self.target, c.source, ldaps).await?;
        let conn = match (&c.tls, self.spec.starttls) {
            (Some(tls), true) => match conn.starttls(tls, &mut p).await? {
                Ok(conn) => {
                    a.starttls = Some(0);
                    Ok(conn)
                }
                Err(code) => {
                    a.starttls = Some(code);
                    // A refused StartTLS is no login at all.
                    Err(match classify(code) {
                        Outcome::Success | Outcome::AuthFailure => Outcome::WrongResponse,
                        o => o,
                    })
                }
            },
            _ => Ok(conn),
        };
        *phases = Some(p);
        Ok(conn)
    }

    /// The operations of one login on an open connection.
    async fn operations(
        &self,
        c: &LdapClient,
        conn: &mut Conn,
        a: &mut LdapAttempt,
    ) -> Result<Outcome, WireError> {
        let dn = match (&self.service, &c.dn, &c.lookup) {
            (_, Some(dn), _) => dn.clone(),
            (Some((service_dn, service_password)), None, Some(filter)) => {
                let code = conn.bind(service_dn, service_password).await?;
                a.service_bind = Some(code);
                if code != 0 {
                    // The lab's own account refused: the application cannot log anyone in.
                    return Ok(match classify(code) {
                        Outcome::AuthFailure => Outcome::WrongResponse,
                        o => o,
                    });
                }
                let req = search(
                    &self.spec.base_dn,
                    LdapSearchScope::Subtree,
                    filter.clone(),
                    // RFC 4511 §4.5.1.8: "1.1", no attributes; two entries are enough to
                    // tell "one" from "ambiguous".
                    (vec!["1.1".into()], 2),
                );
                let found = conn.search(req).await?;
                a.lookup = Some((found.code, found.entries));
                match (found.code, found.entries, found.first_dn) {
                    (0, 0, _) => return Ok(Outcome::AuthFailure),
                    (0, 1, Some(dn)) => dn,
                    (0, _, _) => return Ok(Outcome::WrongResponse),
                    (code, _, _) => return Ok(not_success(code)),
                }
            }
            _ => return Ok(Outcome::WrongResponse),
        };
        let t = Instant::now();
        let code = conn.bind(&dn, &c.password).await?;
        a.bind_time = t.elapsed();
        a.bind = Some(code);
        if code != 0 {
            return Ok(classify(code));
        }
        self.after_bind(c, conn, a, &dn).await
    }

    /// The searches an application makes once the user is in.
    async fn after_bind(
        &self,
        c: &LdapClient,
        conn: &mut Conn,
        a: &mut LdapAttempt,
        dn: &str,
    ) -> Result<Outcome, WireError> {
        if self.spec.read_entry {
            let req = search(
                dn,
                LdapSearchScope::Base,
                LdapFilter::Present("objectClass".into()),
                (self.spec.attributes.clone(), 0),
            );
            let got = conn.search(req).await?;
            a.search = Some(got.code);
            if got.code != 0 {
                return Ok(not_success(got.code));
            }
            if got.entries != 1 {
                return Ok(Outcome::WrongResponse);
            }
        }
        if let Some(f) = &self.groups {
            if let Some((service_dn, service_password)) = &self.service {
                // Applications with a service account look up groups with it (a user may
                // not read the groups), re-binding on the same connection.
                let code = conn.bind(service_dn, service_password).await?;
                if code != 0 {
                    a.search = Some(code);
                    return Ok(not_success(code));
                }
            }
            let req = search(
                &self.spec.base_dn,
                LdapSearchScope::Subtree,
                fill_filter(f, &c.user, dn),
                (vec!["cn".into()], 0),
            );
            let got = conn.search(req).await?;
            a.search = Some(got.code);
            if got.code != 0 {
                return Ok(not_success(got.code));
            }
        }
        Ok(Outcome::Success)
    }
}

/// The outcome of a search that did not succeed (never a success, nor a wrong password).
fn not_success(code: u16) -> Outcome {
    match classify(code) {
        Outcome::Success | Outcome::AuthFailure => Outcome::WrongResponse,
        o => o,
    }
}

#[cfg(test)]
mod tests;
