//! What the admin door is given by the assembly: the verifier (its bearer tokens go
//! through the core's failure budgets; users and clients it writes are hashed under the
//! policy), the store, the token issuer's state, the master key that seals NAS secrets,
//! the audit trail, and its settings. Nothing else of the server.

use std::sync::Arc;
use std::time::Duration;

use portcullis_core::Verifier;
use portcullis_door::audit::Audit;
use portcullis_door::tls::TlsServer;
use portcullis_door::tls::client_certs::ClientCa;
use portcullis_hash::Policy;
use portcullis_oauth::OAuth;
use portcullis_store::{MasterKey, Store};

use crate::config::AdminConfig;

/// The admin door's settings: `[admin]` and the `[server]` keys it shares with the HTTP
/// door.
#[derive(Debug, Clone)]
pub struct AdminDoorConfig {
    /// `[admin]`.
    pub admin: AdminConfig,
    /// Time allowed for one request.
    pub request_timeout: Duration,
    /// Time allowed for the request head (and the TLS handshake before it).
    pub header_timeout: Duration,
    /// Largest request head, in bytes.
    pub max_header_bytes: usize,
    /// `[policy]`: how new passwords and secrets are hashed.
    pub policy: Policy,
}

/// Everything the admin door uses. One per server, behind an `Arc`.
pub struct AdminContext {
    /// Its settings.
    pub config: AdminDoorConfig,
    /// The token issuer's state: admin bearer tokens are access tokens of ours.
    pub oauth: Arc<OAuth>,
    /// The verification core.
    pub verifier: Verifier,
    /// Every record the API reads and writes: the admin door manages every kind the
    /// store keeps but accounting (clients, users, NAS, signing keys, revocations,
    /// registrations, versions and pages, Idempotency-Keys), so it holds the whole
    /// [`Store`] rather than eight capability handles.
    pub store: Arc<dyn Store>,
    /// Seals NAS shared secrets.
    pub master_key: MasterKey,
    /// Where each admin action is recorded.
    pub audit: Arc<Audit>,
    /// CAs of admin client certificates (`[admin] client_ca`).
    pub admin_ca: Option<Arc<ClientCa>>,
    /// With `[tls]`, the admin listener speaks TLS too.
    pub tls: Option<TlsServer>,
}

impl std::fmt::Debug for AdminContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminContext")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
