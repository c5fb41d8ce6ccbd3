//! What the RADIUS doors (PAP, 802.1X, accounting, RadSec) are given by the assembly:
//! the verifier, the store (NAS and accounting), the master key that opens shared
//! secrets, where 802.1X session identities live, their configuration sections, and
//! where to register what re-reads its files on SIGHUP. Nothing else of the server.

use std::sync::Arc;

use portcullis_core::{CredentialSource, Verifier};
use portcullis_door::reload::Reloads;
use portcullis_store::{AccountingStore, MasterKey, NasStore, SessionStore};

use crate::acct::config::AcctConfig;
use crate::config::RadiusConfig;

/// The RADIUS doors' configuration sections.
#[derive(Debug, Clone, Default)]
pub struct RadiusDoorConfig {
    /// `[radius]` (with `[radius.eap]` and `[radius.radsec]`).
    pub radius: RadiusConfig,
    /// `[accounting]`.
    pub accounting: AcctConfig,
}

/// Everything the RADIUS doors use. One per server, behind an `Arc`.
pub struct RadiusContext {
    /// Their configuration sections.
    pub config: RadiusDoorConfig,
    /// The verification core: every password is checked through it.
    pub verifier: Verifier,
    /// User records as the core reads them (the server's credential cache: an 802.1X
    /// certificate login checks its user without a database round trip).
    pub credentials: Arc<dyn CredentialSource>,
    /// RADIUS clients (NAS), read into the NAS table.
    pub nas: Arc<dyn NasStore>,
    /// Where accounting records are stored (the writer opens its own connection).
    pub accounting: Arc<dyn AccountingStore>,
    /// Opens the NAS shared secrets the store keeps sealed.
    pub master_key: MasterKey,
    /// 802.1X: identities proven in TTLS sessions, for resumed logins (Redis when the
    /// budgets are there, so a device roaming to another instance resumes; else memory).
    pub sessions: Arc<dyn SessionStore>,
    /// Where the 802.1X and RadSec certificates register for SIGHUP.
    pub reloads: Arc<Reloads>,
}

impl std::fmt::Debug for RadiusContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RadiusContext")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
