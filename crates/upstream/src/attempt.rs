//! One attempt of a check on one server: find the user's DN (template or search as the
//! service account), bind as the user, and read the result.
//!
//! This module owns what a result code means: success is Accepted; invalidCredentials is
//! Rejected (or Unknown where Active Directory says "no such user", sub-code 525); no such
//! entry is Unknown; anything that is the server's fault (busy, unavailable, a broken
//! connection, a timeout, a refused service account) is an error the breaker counts.

use ldap3_proto::proto::{LdapResultCode, LdapSearchScope};

use crate::config::Mode;
use crate::conn::{ConnError, Found, Reply};
use crate::directory::Directory;
use crate::outcome::{Outcome, Unavailable, UnavailableKind};
use crate::server::{BoundAs, Lease, Server};

/// Why an attempt failed: the connection, or an answer that makes the server unusable.
enum Fail {
    Conn(ConnError),
    Directory(UnavailableKind, String),
}

impl From<ConnError> for Fail {
    fn from(e: ConnError) -> Self {
        Self::Conn(e)
    }
}

impl From<Fail> for Unavailable {
    fn from(f: Fail) -> Self {
        match f {
            Fail::Directory(kind, detail) => Unavailable::new(kind, detail),
            Fail::Conn(e) => {
                let kind = match &e {
                    ConnError::Connect(_) | ConnError::Closed | ConnError::Io(_) => {
                        UnavailableKind::Connect
                    }
                    ConnError::Tls(_) => UnavailableKind::Tls,
                    ConnError::Timeout(_) => UnavailableKind::Timeout,
                    ConnError::Protocol(_) => UnavailableKind::Protocol,
                };
                Unavailable::new(kind, e.to_string())
            }
        }
    }
}

/// The entries a search found for a name.
enum Matches {
    None,
    One(String),
    Several,
}

impl Directory {
    /// Asks `server`; `Err` is the server's fault (counted by its breaker).
    pub(crate) async fn attempt(
        &self,
        server: &Server,
        user: &str,
        password: &str,
    ) -> Result<Outcome, Unavailable> {
        let dn = match &self.cfg.mode {
            Mode::DnTemplate(t) => t.render(user),
            Mode::Search { .. } => match self.find(server, user).await? {
                Matches::None => return Ok(Outcome::Unknown),
                // Several entries for one name: binding to one of them would be a guess.
                Matches::Several => {
                    tracing::warn!(directory = %self.name, "the search filter matches several entries for one name");
                    return Ok(Outcome::Rejected);
                }
                Matches::One(dn) => dn,
            },
        };
        let reply = self.bind(server, &dn, password).await?;
        classify(reply)
    }

    /// A bind as the user on a pooled connection (one that is not the service account's,
    /// if there is one), replaced once if the pool's one had gone stale.
    async fn bind(&self, server: &Server, dn: &str, password: &str) -> Result<Reply, Fail> {
        let mut lease = server.lease(BoundAs::Other).await?;
        let limit = self.cfg.bind_timeout;
        let reply = match lease.conn.bind(dn, password, limit).await {
            Err(e) if lease.reused && e.is_stale() => {
                lease = server.connect().await?;
                lease.conn.bind(dn, password, limit).await?
            }
            other => other?,
        };
        server.give_back(lease.conn, BoundAs::Other);
        Ok(reply)
    }

    /// The search for the user's entry as the service account.
    async fn find(&self, server: &Server, user: &str) -> Result<Matches, Fail> {
        let mut lease = server.lease(BoundAs::Service).await?;
        let found = match self.search(&mut lease, user).await {
            Err(Fail::Conn(e)) if lease.reused && e.is_stale() => {
                lease = server.connect().await?;
                self.search(&mut lease, user).await?
            }
            other => other?,
        };
        server.give_back(lease.conn, BoundAs::Service);
        match found.reply.code {
            LdapResultCode::Success | LdapResultCode::SizeLimitExceeded => {}
            LdapResultCode::NoSuchObject => {
                return Err(Fail::Directory(
                    UnavailableKind::DirectoryError,
                    "the search base does not exist (noSuchObject)".into(),
                ));
            }
            code => {
                return Err(Fail::Directory(
                    UnavailableKind::DirectoryError,
                    format!("search: {code:?} {}", found.reply.message),
                ));
            }
        }
        let mut entries = found.entries.into_iter();
        Ok(match (entries.next(), entries.next()) {
            (None, _) => Matches::None,
            (Some((dn, _)), None) => Matches::One(dn),
            (Some(_), Some(_)) => Matches::Several,
        })
    }

    async fn search(&self, lease: &mut Lease, user: &str) -> Result<Found, Fail> {
        let Mode::Search {
            base,
            filter,
            service_dn,
            service_password,
        } = &self.cfg.mode
        else {
            return Err(Fail::Directory(
                UnavailableKind::Protocol,
                "search without a search configuration".into(),
            ));
        };
        if lease.bound != BoundAs::Service {
            lease.bound = BoundAs::Other;
            let reply = lease
                .conn
                .bind(service_dn, service_password, self.cfg.bind_timeout)
                .await?;
            if reply.code != LdapResultCode::Success {
                return Err(Fail::Directory(
                    UnavailableKind::ServiceAccount,
                    format!(
                        "the service account's bind failed: {:?} {}",
                        reply.code, reply.message
                    ),
                ));
            }
            lease.bound = BoundAs::Service;
        }
        // Two entries are enough to tell "exactly one" from "several"; no attributes.
        let found = lease
            .conn
            .search(
                base,
                LdapSearchScope::Subtree,
                filter.render(user),
                &["1.1"],
                2,
                self.cfg.search_timeout,
            )
            .await?;
        Ok(found)
    }
}

/// What the user's bind result means.
fn classify(reply: Reply) -> Result<Outcome, Unavailable> {
    match reply.code {
        LdapResultCode::Success => Ok(Outcome::Accepted),
        LdapResultCode::InvalidCredentials => Ok(if ad_subcode(&reply.message) == Some("525") {
            // Active Directory: "user not found".
            Outcome::Unknown
        } else {
            // Wrong password, or (ppolicy, Active Directory 775, 533) locked or disabled.
            Outcome::Rejected
        }),
        // No such entry, or a name that is not a DN: no such user.
        LdapResultCode::NoSuchObject | LdapResultCode::InvalidDNSyntax => Ok(Outcome::Unknown),
        // The entry cannot bind with a password (no userPassword), or 389-ds's lockout
        // (constraintViolation, "exceed password retry limit").
        LdapResultCode::InappropriateAuthentication | LdapResultCode::ConstraintViolation => {
            Ok(Outcome::Rejected)
        }
        code => Err(Unavailable::new(
            UnavailableKind::DirectoryError,
            format!("bind: {code:?} {}", reply.message),
        )),
    }
}

/// Active Directory's sub-code in a bind error's message: `…, data 52e, v4563`.
fn ad_subcode(message: &str) -> Option<&str> {
    let rest = message.get(message.find("data ")? + 5..)?;
    let end = rest
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(rest.len());
    rest.get(..end).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(code: LdapResultCode, message: &str) -> Reply {
        Reply {
            code,
            message: message.into(),
        }
    }

    // Messages as Active Directory sends them (Microsoft's "LDAP bind errors" table).
    #[test]
    fn active_directory_sub_codes() {
        let ad = |data: &str| {
            format!(
                "80090308: LdapErr: DSID-0C09044E, comment: AcceptSecurityContext error, data {data}, v4563"
            )
        };
        assert_eq!(
            classify(reply(LdapResultCode::InvalidCredentials, &ad("525"))),
            Ok(Outcome::Unknown)
        );
        for data in ["52e", "775", "533", "701"] {
            assert_eq!(
                classify(reply(LdapResultCode::InvalidCredentials, &ad(data))),
                Ok(Outcome::Rejected)
            );
        }
        assert_eq!(ad_subcode("no sub-code here"), None);
    }

    #[test]
    fn server_faults_are_unavailable_not_rejections() {
        for code in [
            LdapResultCode::Busy,
            LdapResultCode::Unavailable,
            LdapResultCode::UnwillingToPerform,
            LdapResultCode::OperationsError,
            LdapResultCode::ConfidentialityRequired,
        ] {
            let out = classify(reply(code, "x")).unwrap_err();
            assert_eq!(out.kind, UnavailableKind::DirectoryError);
        }
        assert_eq!(
            classify(reply(LdapResultCode::Success, "")),
            Ok(Outcome::Accepted)
        );
        assert_eq!(
            classify(reply(LdapResultCode::NoSuchObject, "")),
            Ok(Outcome::Unknown)
        );
    }
}
