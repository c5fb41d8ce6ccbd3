//! The NAS table: which source addresses may talk RADIUS to us, with which shared secret,
//! under which Message-Authenticator policy; and each NAS's counters.
//!
//! The table is an immutable snapshot loaded from the store and swapped whole every
//! `nas_refresh` (so `portcullis nas add/remove/rotate-secret` reaches a running server
//! without a restart, and a lookup never waits on the store). Secrets are opened with the
//! master key once per load, kept only in memory (wiped when the snapshot is dropped) and
//! never logged. A source maps to the most specific NAS whose CIDR contains it; the table
//! is small (one entry per NAS or NAS network), so a scan in prefix-length order is enough.
//!
//! Counters live outside the snapshots, keyed by NAS name, so a refresh does not reset
//! them; the number of label values is the number of NASes the operator registered
//! (sources that match no NAS are counted under the one label `unknown`, never by address).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use metrics::Counter;
use parking_lot::Mutex;
use portcullis_core::IpPrefix;
use portcullis_radius::{Code, EncodeError, Packet, Secret, v11};
use portcullis_store::{MasterKey, NasCertificate, NasStore, StoreError};

use super::dedup::RequestKey;

/// Label used for sources that match no NAS.
pub const UNKNOWN_NAS: &str = "unknown";

/// Why a datagram was dropped without an answer (a metrics label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The source matches no NAS.
    UnknownNas,
    /// Message-Authenticator missing (where required) or wrong.
    BadAuthenticator,
    /// Not a well-formed request (lengths, attributes, missing User-Name/User-Password,
    /// a code we do not serve).
    Malformed,
    /// The receive queue was full, or the core said "overloaded", or the answer timed out.
    Overload,
    /// A retransmission of a request still being worked on.
    InProgress,
    /// The user's external directory could not answer (issue 40).
    Unavailable,
}

impl DropReason {
    /// Every reason, for registering counters up front.
    pub const ALL: [DropReason; 6] = [
        DropReason::UnknownNas,
        DropReason::BadAuthenticator,
        DropReason::Malformed,
        DropReason::Overload,
        DropReason::InProgress,
        DropReason::Unavailable,
    ];

    /// Stable label.
    pub const fn label(self) -> &'static str {
        match self {
            DropReason::UnknownNas => "unknown_nas",
            DropReason::BadAuthenticator => "bad_authenticator",
            DropReason::Malformed => "malformed",
            DropReason::Overload => "overload",
            DropReason::InProgress => "in_progress",
            DropReason::Unavailable => "directory_unavailable",
        }
    }
}

/// One NAS's counters: exported to Prometheus and read by the status page.
#[derive(Debug)]
pub struct NasStats {
    /// Datagrams received from it.
    pub requests: AtomicU64,
    /// Access-Accepts sent (Status-Server answers excluded).
    pub accepts: AtomicU64,
    /// Access-Rejects sent.
    pub rejects: AtomicU64,
    /// Retransmissions answered from the duplicate cache.
    pub duplicates: AtomicU64,
    /// Dropped datagrams, by [`Drop`] in `DropReason::ALL` order.
    pub dropped: [AtomicU64; DropReason::ALL.len()],
    counters: [Counter; 4],
    dropped_counters: [Counter; DropReason::ALL.len()],
}

impl NasStats {
    fn new(nas: &str) -> NasStats {
        let name = nas.to_owned();
        NasStats {
            requests: AtomicU64::new(0),
            accepts: AtomicU64::new(0),
            rejects: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            dropped: Default::default(),
            counters: [
                metrics::counter!(REQUESTS, "nas" => name.clone()),
                metrics::counter!(ACCEPTS, "nas" => name.clone()),
                metrics::counter!(REJECTS, "nas" => name.clone()),
                metrics::counter!(DUPLICATES, "nas" => name.clone()),
            ],
            dropped_counters: DropReason::ALL
                .map(|d| metrics::counter!(DROPPED, "nas" => name.clone(), "reason" => d.label())),
        }
    }

    fn bump(counter: &AtomicU64, exported: &Counter) {
        counter.fetch_add(1, Ordering::Relaxed);
        exported.increment(1);
    }

    /// A datagram arrived.
    pub fn request(&self) {
        Self::bump(&self.requests, &self.counters[0]);
    }
    /// An Access-Accept went out.
    pub fn accept(&self) {
        Self::bump(&self.accepts, &self.counters[1]);
    }
    /// An Access-Reject went out.
    pub fn reject(&self) {
        Self::bump(&self.rejects, &self.counters[2]);
    }
    /// A retransmission was answered from the cache.
    pub fn duplicate(&self) {
        Self::bump(&self.duplicates, &self.counters[3]);
    }
    /// A datagram was dropped.
    pub fn dropped(&self, why: DropReason) {
        let i = DropReason::ALL.iter().position(|d| *d == why).unwrap_or(0);
        Self::bump(&self.dropped[i], &self.dropped_counters[i]);
    }
}

/// Prometheus names of the per-NAS counters.
pub const REQUESTS: &str = "portcullis_radius_requests_total";
/// See [`REQUESTS`].
pub const ACCEPTS: &str = "portcullis_radius_accepts_total";
/// See [`REQUESTS`].
pub const REJECTS: &str = "portcullis_radius_rejects_total";
/// See [`REQUESTS`].
pub const DUPLICATES: &str = "portcullis_radius_duplicates_total";
/// See [`REQUESTS`].
pub const DROPPED: &str = "portcullis_radius_dropped_total";

/// One NAS as the front end uses it.
pub struct Nas {
    /// Operator's name (metrics label, logs).
    pub name: String,
    /// Addresses it sends from.
    pub cidr: IpPrefix,
    /// The shared secret, opened, with its HMAC-MD5 key schedule (every
    /// Message-Authenticator starts from it); wiped on drop.
    secret: Secret,
    /// Discard Access-Requests without a valid Message-Authenticator.
    pub require_message_authenticator: bool,
    /// Its counters (shared with earlier and later snapshots).
    pub stats: Arc<NasStats>,
    /// The RadSec client certificate that names it (none: UDP only).
    pub certificate: Option<NasCertificate>,
    /// This view is of a RadSec connection that negotiated RADIUS/1.1 (RFC 9765): every
    /// path reads and writes its packets without MD5 (Token, no authenticators, no
    /// Message-Authenticator, attributes in the clear); its secret is empty.
    pub radius_1_1: bool,
}

impl fmt::Debug for Nas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nas")
            .field("name", &self.name)
            .field("cidr", &self.cidr)
            .field("secret", &"<redacted>")
            .field(
                "require_message_authenticator",
                &self.require_message_authenticator,
            )
            .field("radius_1_1", &self.radius_1_1)
            .finish()
    }
}

impl Nas {
    /// The shared secret (keys every authenticator of this NAS's packets).
    pub fn secret(&self) -> &[u8] {
        self.secret.raw()
    }

    /// The shared secret with its key schedule, for Message-Authenticators.
    pub fn keyed_secret(&self) -> &Secret {
        &self.secret
    }

    /// This NAS as its RadSec connections see it (RFC 6614 §2.3): the shared secret is
    /// the fixed "radsec" (TLS, not the secret, protects the packets), and an
    /// Access-Request without Message-Authenticator is fine (BlastRADIUS forges UDP
    /// replies, not replies inside TLS); name, counters and certificate are the NAS's.
    /// With `radius_1_1` (the connection negotiated it by ALPN) there is no secret at all.
    pub fn over_radsec(&self, radius_1_1: bool) -> Nas {
        let secret = if radius_1_1 { &[][..] } else { RADSEC_SECRET };
        Nas {
            name: self.name.clone(),
            cidr: self.cidr,
            secret: Secret::new(secret),
            require_message_authenticator: false,
            stats: Arc::clone(&self.stats),
            certificate: self.certificate.clone(),
            radius_1_1,
        }
    }

    /// The reply to `request` as this NAS's transport writes it: RFC 2865 with
    /// Message-Authenticator first and the Response Authenticator, or RADIUS/1.1 (its
    /// Token, no MD5).
    pub fn encode_response(
        &self,
        code: Code,
        request: &Packet<'_>,
        attrs: &[(u8, &[u8])],
    ) -> Result<Vec<u8>, EncodeError> {
        if self.radius_1_1 {
            v11::encode_response(code, request, attrs)
        } else {
            portcullis_radius::encode_response_keyed(code, request, attrs, &self.secret)
        }
    }

    /// What identifies `packet` among this NAS's requests from `from` for duplicate
    /// detection: identifier and Request Authenticator, or over RADIUS/1.1 the Token
    /// alone (RFC 9765 §4.2.2; the reserved octets are ignored).
    pub fn request_key(&self, from: SocketAddr, packet: &Packet<'_>) -> RequestKey {
        if self.radius_1_1 {
            let mut authenticator = [0u8; 16];
            authenticator[..4].copy_from_slice(&v11::token(packet));
            RequestKey {
                peer: from,
                identifier: 0,
                authenticator,
            }
        } else {
            RequestKey {
                peer: from,
                identifier: packet.identifier,
                authenticator: packet.authenticator,
            }
        }
    }

    /// RADIUS/1.1's answer to a request this server cannot process now (RFC 9765 §6.1:
    /// Protocol-Error with Error-Cause 506 Resources Unavailable, so the NAS tries
    /// another server at once); `None` for RADIUS/1.0, where the request is dropped
    /// unanswered and the NAS retransmits.
    pub fn overloaded_answer(&self, request: &Packet<'_>) -> Option<std::sync::Arc<[u8]>> {
        self.radius_1_1.then(|| {
            v11::encode_protocol_error(
                v11::token(request),
                v11::RESOURCES_UNAVAILABLE,
                "overloaded: try another server",
            )
            .into()
        })
    }
}

/// The shared secret of RADIUS over TLS (RFC 6614 §2.3).
pub const RADSEC_SECRET: &[u8] = b"radsec";

/// Counters by NAS name, surviving table reloads.
#[derive(Debug, Default)]
pub struct StatsRegistry {
    by_name: Mutex<BTreeMap<String, Arc<NasStats>>>,
    /// The 802.1X door's counters, when it is configured.
    pub eap: std::sync::OnceLock<Arc<super::eap::stats::EapStats>>,
    /// The accounting door's counters, when `accounting_listen` is set.
    pub acct: std::sync::OnceLock<Arc<super::acct::stats::AcctStats>>,
}

impl StatsRegistry {
    /// The counters of `name`, created on first use.
    pub fn get(&self, name: &str) -> Arc<NasStats> {
        let mut map = self.by_name.lock();
        Arc::clone(
            map.entry(name.to_owned())
                .or_insert_with(|| Arc::new(NasStats::new(name))),
        )
    }

    /// Every NAS's counters, by name (status page).
    pub fn all(&self) -> Vec<(String, Arc<NasStats>)> {
        self.by_name
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect()
    }
}

/// An immutable snapshot of the NAS table.
#[derive(Debug, Default)]
pub struct NasTable {
    /// Most specific prefix first.
    entries: Vec<Arc<Nas>>,
    /// Names whose secret could not be opened (logged once per change, not per refresh).
    unreadable: BTreeSet<String>,
}

impl NasTable {
    /// Load every NAS from the store and open its secret. A NAS whose secret does not open
    /// (the secrets file was replaced, or the row was tampered with) is left out and
    /// logged: its packets are dropped as from an unknown source, rather than answered
    /// with a wrong key.
    /// Replace `current` with a fresh read of the store; on a store error the table in
    /// force stays (and the failure is counted). Both RADIUS doors refresh this way.
    pub async fn refresh(
        current: &parking_lot::RwLock<Arc<NasTable>>,
        store: &dyn NasStore,
        master: &MasterKey,
        stats: &StatsRegistry,
    ) {
        let previous = Arc::clone(&current.read());
        match NasTable::load(store, master, stats, Some(&previous)).await {
            Ok(t) => *current.write() = Arc::new(t),
            Err(e) => portcullis_door::metrics::store_failure("reloading the NAS table", &e),
        }
    }

    pub async fn load(
        store: &dyn NasStore,
        master: &MasterKey,
        stats: &StatsRegistry,
        previous: Option<&NasTable>,
    ) -> Result<NasTable, StoreError> {
        let records = store.list_nas().await?;
        let mut entries = Vec::with_capacity(records.len());
        let mut unreadable = BTreeSet::new();
        for r in records {
            match r.open_secret(master) {
                Ok(secret) => entries.push(Arc::new(Nas {
                    stats: stats.get(&r.name),
                    name: r.name,
                    cidr: r.cidr,
                    secret: Secret::new(&secret),
                    require_message_authenticator: r.require_message_authenticator,
                    certificate: r.certificate,
                    radius_1_1: false,
                })),
                Err(e) => {
                    if !previous.is_some_and(|p| p.unreadable.contains(&r.name)) {
                        tracing::error!(
                            nas = %r.name,
                            "cannot open the shared secret of NAS {:?} ({e}); its requests are dropped",
                            r.name
                        );
                    }
                    unreadable.insert(r.name);
                }
            }
        }
        entries.sort_by_key(|e| std::cmp::Reverse(e.cidr.len));
        Ok(NasTable {
            entries,
            unreadable,
        })
    }

    /// The NAS a datagram from `source` belongs to: the most specific match.
    pub fn lookup(&self, source: IpAddr) -> Option<&Arc<Nas>> {
        self.entries.iter().find(|n| n.cidr.contains(source))
    }

    /// The NASes a RadSec client certificate names (its chain already verified): those
    /// whose registered certificate matches the leaf's SHA-256 or names, most specific
    /// CIDR first. Certificates are unique in the store, so one pin names one NAS; a name
    /// and a pin may both match the same certificate.
    pub fn by_certificate<'a>(
        &'a self,
        leaf: &'a portcullis_door::tls::pin::LeafNames,
    ) -> impl Iterator<Item = &'a Arc<Nas>> + 'a {
        self.entries.iter().filter(move |n| {
            n.certificate.as_ref().is_some_and(|c| {
                c.matches(&leaf.sha256, &leaf.dns_names, leaf.common_name.as_deref())
            })
        })
    }

    /// How many NASes are usable.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no NAS is usable.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
