//! Parts that re-read their files on SIGHUP besides `[tls]` (the 802.1X door's
//! certificate and CRLs, RadSec's), registered by the door that owns them, so the
//! assembly's reload reaches them without knowing each door.

use std::sync::Arc;

use parking_lot::Mutex;

/// Something that re-reads its files on SIGHUP. On a failed check it keeps what it had
/// and says so in the returned error; the caller logs the outcome.
pub trait Reloadable: Send + Sync {
    /// What it is, for the log ("radius.eap").
    fn name(&self) -> &'static str;
    /// Re-read and check; `Ok` with a one-line description of what is now in force.
    fn reload(&self) -> Result<String, String>;
}

/// Every registered [`Reloadable`] of one server.
#[derive(Default)]
pub struct Reloads(Mutex<Vec<Arc<dyn Reloadable>>>);

impl std::fmt::Debug for Reloads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.0.lock().iter().map(|p| p.name()).collect();
        f.debug_tuple("Reloads").field(&names).finish()
    }
}

impl Reloads {
    /// Add a part (a door does it as it starts).
    pub fn register(&self, part: Arc<dyn Reloadable>) {
        self.0.lock().push(part);
    }

    /// Reload every registered part; returns (name, outcome) for the log.
    pub fn reload_all(&self) -> Vec<(&'static str, Result<String, String>)> {
        let parts: Vec<Arc<dyn Reloadable>> = self.0.lock().clone();
        parts.iter().map(|p| (p.name(), p.reload())).collect()
    }
}
