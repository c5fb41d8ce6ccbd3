//! The wall clock in Unix seconds, read where the lab stamps reports, fingerprints and
//! signed assertions. A leaf, so the modules that stamp never import each other for it.

/// Seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
