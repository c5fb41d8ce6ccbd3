//! What the LDAP door is given by the assembly: its configuration section, the verifier
//! (every bind is checked through it), the users and groups it shows, where its audit
//! events go and its TLS configuration. Nothing else of the server.

use std::sync::Arc;

use portcullis_core::{AuditSink, CredentialSource, Verifier};
use portcullis_store::{GroupStore, UserStore};

use crate::config::LdapConfig;

/// Everything the LDAP door uses. One per server, behind an `Arc`.
pub struct LdapContext {
    /// `[ldap]`.
    pub config: LdapConfig,
    /// The verification core: user and service-account binds, and Password Modify's
    /// old password and new hash.
    pub verifier: Verifier,
    /// Users as the directory shows them (searches).
    pub users: Arc<dyn UserStore>,
    /// User records as the core reads them (the server's credential cache): Password
    /// Modify replaces the hash through it, compare-and-set, so the cache forgets the old
    /// one at once.
    pub credentials: Arc<dyn CredentialSource>,
    /// Groups and memberships (`groupOfNames`, `posixGroup`, `memberOf`).
    pub groups: Arc<dyn GroupStore>,
    /// Where the door's own events go (searches and other operations; binds are the
    /// core's events).
    pub audit: Arc<dyn AuditSink>,
    /// LDAPS and StartTLS (`[ldap.tls]`, else `[tls]`, without ALPN); `None`: neither.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Where the door registers `[ldap.tls]` for SIGHUP.
    pub reloads: Arc<portcullis_door::reload::Reloads>,
}

impl std::fmt::Debug for LdapContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LdapContext")
            .field("config", &self.config)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}
