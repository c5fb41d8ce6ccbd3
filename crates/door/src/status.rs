//! A door's live counters on the status page: the HTTP door serves `/status.json` and
//! shows each registered panel under its key, without knowing the door behind it.

/// One door's section of `/status.json`.
pub trait StatusPanel: Send + Sync {
    /// Its key in `/status.json` (`"radius"`).
    fn key(&self) -> &'static str;
    /// Its counters now.
    fn json(&self) -> serde_json::Value;
    /// Lines `/readyz` adds below its verdict (a dependency's up/down), none by default.
    /// They never turn the answer to 503: the server serves whatever is up.
    fn readiness(&self) -> Vec<String> {
        Vec::new()
    }
}
