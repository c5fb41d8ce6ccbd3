//! Who a connection is bound as and what that lets it read: anonymous (the root DSE, or
//! everything when `allow_anonymous_search`), a user (everything when
//! `allow_user_search`), or a service account (its grant's subtree and attributes).

use std::net::IpAddr;

use portcullis_ldap::{Dn, Entry, ResultCode, schema};

use crate::config::{Grant, LdapConfig};

/// The identity a connection's last successful bind established.
#[derive(Debug, Clone, PartialEq)]
pub enum Identity {
    /// No bind, an anonymous bind, or a failed bind (RFC 4511 4.2.1).
    Anonymous,
    /// `uid=NAME,ou=people,BASE`, bound with the user's password.
    User {
        /// The username.
        name: String,
        /// Its DN as the directory writes it.
        dn: Dn,
    },
    /// `cn=ID,ou=services,BASE`, bound with the client's generated secret.
    Service {
        /// The client id.
        id: String,
        /// Its DN.
        dn: Dn,
    },
}

impl Identity {
    /// The bound DN (`None` when anonymous).
    pub fn dn(&self) -> Option<&Dn> {
        match self {
            Identity::Anonymous => None,
            Identity::User { dn, .. } | Identity::Service { dn, .. } => Some(dn),
        }
    }

    /// The principal for audit events ("" when anonymous).
    pub fn principal(&self) -> &str {
        match self {
            Identity::Anonymous => "",
            Identity::User { name, .. } => name,
            Identity::Service { id, .. } => id,
        }
    }

    /// User or client, for audit events.
    pub fn kind(&self) -> portcullis_core::PrincipalKind {
        match self {
            Identity::Service { .. } => portcullis_core::PrincipalKind::Client,
            _ => portcullis_core::PrincipalKind::User,
        }
    }
}

/// What one connection knows about itself.
#[derive(Debug, Clone)]
pub struct Session {
    /// Its number (for request ids in audit events).
    pub id: u64,
    /// The client's address (after a trusted proxy's PROXY header).
    pub source: IpAddr,
    /// TLS is on (LDAPS, or after StartTLS).
    pub secure: bool,
    /// Who it is bound as.
    pub identity: Identity,
}

impl Session {
    /// The request id of message `msgid` in audit events.
    pub fn request_id(&self, msgid: i32) -> String {
        format!("ldap-{}-{msgid}", self.id)
    }
}

/// What a search or compare may see.
#[derive(Debug, Clone)]
pub struct Scope<'a> {
    /// Entries outside this subtree do not exist for it.
    pub subtree: &'a Dn,
    /// The attributes it may read and filter on (`objectClass` always); `None`: all.
    pub attributes: Option<&'a [String]>,
}

impl Scope<'_> {
    /// `entry` as this scope sees it: restricted to its attributes (filters are evaluated
    /// on this view, so an attribute it may not read cannot be probed by a filter either).
    pub fn view(&self, entry: &Entry) -> Entry {
        let Some(allowed) = self.attributes else {
            return entry.clone();
        };
        let keys: Vec<String> = allowed.iter().map(|a| schema::canonical_key(a)).collect();
        let object_class = schema::canonical_key("objectClass");
        Entry {
            dn: entry.dn.clone(),
            attributes: entry
                .attributes
                .iter()
                .filter(|a| {
                    let k = schema::canonical_key(&a.name);
                    k == object_class || keys.contains(&k)
                })
                .cloned()
                .collect(),
        }
    }

    /// Whether `dn` is visible at all.
    pub fn sees(&self, dn: &Dn) -> bool {
        dn.is_descendant_or_self(self.subtree)
    }
}

/// What `identity` may read beyond the root DSE, or the result code refusing it.
pub fn scope<'a>(
    config: &'a LdapConfig,
    identity: &Identity,
) -> Result<Scope<'a>, (ResultCode, &'static str)> {
    match identity {
        Identity::Anonymous if config.allow_anonymous_search => Ok(everything(config)),
        Identity::Anonymous => Err((
            ResultCode::InsufficientAccessRights,
            "anonymous search is not allowed: bind first (the root DSE is readable)",
        )),
        Identity::User { .. } if config.allow_user_search => Ok(everything(config)),
        Identity::User { .. } => Err((
            ResultCode::InsufficientAccessRights,
            "users may not search this directory (ldap.allow_user_search)",
        )),
        Identity::Service { id, .. } => match config.service_accounts.get(id) {
            Some(Grant {
                search_base,
                attributes,
            }) => Ok(Scope {
                subtree: search_base,
                attributes: attributes.as_deref(),
            }),
            // Its grant was removed by a reload: it may read nothing now.
            None => Err((
                ResultCode::InsufficientAccessRights,
                "this service account has no grant",
            )),
        },
    }
}

fn everything(config: &LdapConfig) -> Scope<'_> {
    Scope {
        subtree: &config.base,
        attributes: None,
    }
}
