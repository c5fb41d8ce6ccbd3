//! The RADIUS doors' section of the status page (`/status.json` key `radius`): per-NAS
//! counters, the 802.1X door's and accounting's.

use std::sync::atomic::Ordering;

use portcullis_door::status::StatusPanel;

use crate::nas::{DropReason, StatsRegistry};

impl StatusPanel for StatsRegistry {
    fn key(&self) -> &'static str {
        "radius"
    }

    fn json(&self) -> serde_json::Value {
        let stats = self;
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let mut nas = serde_json::Map::new();
        for (name, s) in stats.all() {
            let dropped: serde_json::Map<String, serde_json::Value> = DropReason::ALL
                .iter()
                .zip(&s.dropped)
                .map(|(d, n)| (d.label().to_owned(), load(n).into()))
                .collect();
            nas.insert(
                name,
                serde_json::json!({
                    "requests": load(&s.requests),
                    "accepts": load(&s.accepts),
                    "rejects": load(&s.rejects),
                    "duplicates": load(&s.duplicates),
                    "dropped": dropped,
                }),
            );
        }
        let eap = stats.eap.get().map(|e| {
            serde_json::json!({
                "conversations": load(&e.conversations),
                "started": load(&e.started),
                "tls_full": load(&e.tls_full),
                "tls_resumed": load(&e.tls_resumed),
                "ttls_full": load(&e.ttls_full),
                "ttls_resumed": load(&e.ttls_resumed),
                "failures": load(&e.failures),
                "round_trips": load(&e.round_trips),
                "refused_new": load(&e.refused_new),
                "unknown_state": load(&e.unknown_state),
                "other_nas": load(&e.other_nas),
                "expired": load(&e.expired),
                "full_handshakes": load(&e.full_handshakes),
                "held": load(&e.held),
            })
        });
        let accounting = stats.acct.get().map(|a| a.json());
        serde_json::json!({ "nas": nas, "eap": eap, "accounting": accounting })
    }
}
