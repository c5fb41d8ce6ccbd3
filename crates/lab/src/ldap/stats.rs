//! What the LDAP driver records beyond an attempt's outcome and latency: per attempt the
//! result codes of its operations and the time of the user's bind alone ([`LdapAttempt`]);
//! per group binds per second, every operation's outcomes by LDAP result code, the bind's
//! p50/p99, and which honest users were locked out ([`LdapStats`], [`LdapSummary`]).
//!
//! A lockout is what a user sees, whatever the server calls it: the right password refused
//! with invalidCredentials (49) after the same password was accepted earlier in the run.
//! OpenLDAP's ppolicy, 389-ds and Active Directory all answer a locked account that way
//! (ppolicy tells why only to a client that asks with its control, and by default not even
//! then), so the lab judges by the honest users' answers, which works against any server.
//! A leaf below the driver, the run record and the report: it imports only the outcome.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::outcome::{hist, pct_ms};

/// invalidCredentials (RFC 4511 §4.1.9).
pub const INVALID_CREDENTIALS: u16 = 49;

/// The result codes of one attempt's operations (`None`: the operation was not made or got
/// no answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LdapAttempt {
    /// StartTLS (extended operation).
    pub starttls: Option<u16>,
    /// The service account's bind (search-then-bind).
    pub service_bind: Option<u16>,
    /// The search for the user's entry, and how many entries it returned.
    pub lookup: Option<(u16, u32)>,
    /// The user's bind.
    pub bind: Option<u16>,
    /// The user's bind alone: request written to response read.
    pub bind_time: Duration,
    /// The searches after the bind (the entry, the groups): the first code that was not
    /// success, else success.
    pub search: Option<u16>,
}

/// What happened to one honest user's right password.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    accepted: u64,
    refused: u64,
    refused_after_accepted: u64,
}

#[derive(Debug, Default)]
struct Counts {
    starttls: BTreeMap<u16, u64>,
    service_bind: BTreeMap<u16, u64>,
    lookup: BTreeMap<u16, u64>,
    no_entry: u64,
    bind: BTreeMap<u16, u64>,
    search: BTreeMap<u16, u64>,
    /// Honest groups: per user name.
    users: HashMap<usize, Tally>,
}

/// A group's LDAP counters (shared by its tasks).
#[derive(Debug)]
pub struct LdapStats {
    counts: Mutex<Counts>,
    bind_us: Mutex<Histogram<u64>>,
    /// The user name of each client (for naming locked-out users); set before the run.
    names: Vec<String>,
    /// Per client, the first client with the same user name (clients sharing a user share
    /// its tally).
    first: Vec<usize>,
}

impl Default for LdapStats {
    fn default() -> Self {
        LdapStats {
            counts: Mutex::new(Counts::default()),
            bind_us: Mutex::new(hist(3)),
            names: Vec::new(),
            first: Vec::new(),
        }
    }
}

fn bump(m: &mut BTreeMap<u16, u64>, code: Option<u16>) {
    if let Some(c) = code {
        *m.entry(c).or_insert(0) += 1;
    }
}

impl LdapStats {
    /// Counters for a group whose client i binds as `names[i]`.
    pub fn with_names(names: Vec<String>) -> LdapStats {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let first = names
            .iter()
            .enumerate()
            .map(|(i, n)| *seen.entry(n.as_str()).or_insert(i))
            .collect();
        LdapStats {
            first,
            names,
            ..LdapStats::default()
        }
    }

    /// Record client `client`'s attempt; `honest`: it presented its right password.
    pub fn record(&self, client: usize, a: &LdapAttempt, honest: bool) {
        if let Some(code) = a.bind {
            self.bind_us
                .lock()
                .saturating_record((a.bind_time.as_micros() as u64).max(1));
            if honest {
                self.tally(client, code);
            }
        }
        let mut c = self.counts.lock();
        bump(&mut c.starttls, a.starttls);
        bump(&mut c.service_bind, a.service_bind);
        if let Some((code, entries)) = a.lookup {
            bump(&mut c.lookup, Some(code));
            if code == 0 && entries == 0 {
                c.no_entry += 1;
            }
        }
        bump(&mut c.bind, a.bind);
        bump(&mut c.search, a.search);
    }

    fn tally(&self, client: usize, code: u16) {
        let key = self.first.get(client).copied().unwrap_or(client);
        let mut c = self.counts.lock();
        let t = c.users.entry(key).or_default();
        if code == 0 {
            t.accepted += 1;
        } else if code == INVALID_CREDENTIALS {
            if t.accepted > 0 {
                t.refused_after_accepted += 1;
            }
            t.refused += 1;
        }
    }

    /// The summary over the group's active time (`None`: no LDAP attempt was recorded).
    pub fn summary(&self, active: Duration) -> Option<LdapSummary> {
        let c = self.counts.lock();
        let binds: u64 = c.bind.values().sum();
        let attempted = binds + c.no_entry + c.service_bind.values().sum::<u64>();
        if attempted == 0 && c.starttls.is_empty() {
            return None;
        }
        let secs = active.as_secs_f64().max(1e-9);
        let name = |k: usize| {
            self.names
                .get(k)
                .cloned()
                .unwrap_or_else(|| format!("client {k}"))
        };
        let mut locked_out: Vec<String> = c
            .users
            .iter()
            .filter(|(_, t)| t.refused_after_accepted > 0)
            .map(|(k, _)| name(*k))
            .collect();
        locked_out.sort();
        let mut never_accepted: Vec<String> = c
            .users
            .iter()
            .filter(|(_, t)| t.accepted == 0 && t.refused > 0)
            .map(|(k, _)| name(*k))
            .collect();
        never_accepted.sort();
        let h = self.bind_us.lock();
        Some(LdapSummary {
            binds,
            binds_per_s: binds as f64 / secs,
            accepted_per_s: c.bind.get(&0).copied().unwrap_or(0) as f64 / secs,
            bind_p50_ms: pct_ms(&h, 50.0),
            bind_p99_ms: pct_ms(&h, 99.0),
            bind_codes: c.bind.clone(),
            service_bind_codes: c.service_bind.clone(),
            lookup_codes: c.lookup.clone(),
            no_entry: c.no_entry,
            search_codes: c.search.clone(),
            starttls_codes: c.starttls.clone(),
            right_password_refused: c.users.values().map(|t| t.refused).sum(),
            locked_out,
            never_accepted,
        })
    }
}

/// A group's LDAP figures (in `summary.json` beside the attempt figures). Result codes are
/// RFC 4511's numbers ([`code_name`] names them).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LdapSummary {
    /// User binds answered (any result code).
    pub binds: u64,
    /// Answered user binds per second of the group's active time.
    pub binds_per_s: f64,
    /// Successful user binds per second.
    pub accepted_per_s: f64,
    /// Median of the user's bind alone (ms).
    pub bind_p50_ms: f64,
    /// 99th percentile of the user's bind alone (ms).
    pub bind_p99_ms: f64,
    /// User binds by result code.
    pub bind_codes: BTreeMap<u16, u64>,
    /// Service-account binds by result code (search-then-bind).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub service_bind_codes: BTreeMap<u16, u64>,
    /// User searches by result code (search-then-bind).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lookup_codes: BTreeMap<u16, u64>,
    /// User searches that found no entry (an unknown user: no bind is made).
    #[serde(default)]
    pub no_entry: u64,
    /// Searches after the bind by result code.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub search_codes: BTreeMap<u16, u64>,
    /// StartTLS by result code.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub starttls_codes: BTreeMap<u16, u64>,
    /// Honest groups: binds with the right password refused with invalidCredentials.
    pub right_password_refused: u64,
    /// Honest users locked out: their right password refused with invalidCredentials after
    /// it had been accepted in this run.
    pub locked_out: Vec<String>,
    /// Honest users whose right password was refused and never accepted (not provisioned,
    /// or locked before the run).
    pub never_accepted: Vec<String>,
}

/// RFC 4511's name of a result code (Appendix A), for reports.
pub fn code_name(code: u16) -> &'static str {
    match code {
        0 => "success",
        1 => "operationsError",
        2 => "protocolError",
        3 => "timeLimitExceeded",
        4 => "sizeLimitExceeded",
        7 => "authMethodNotSupported",
        8 => "strongerAuthRequired",
        10 => "referral",
        11 => "adminLimitExceeded",
        13 => "confidentialityRequired",
        19 => "constraintViolation",
        32 => "noSuchObject",
        34 => "invalidDNSyntax",
        48 => "inappropriateAuthentication",
        49 => "invalidCredentials",
        50 => "insufficientAccessRights",
        51 => "busy",
        52 => "unavailable",
        53 => "unwillingToPerform",
        80 => "other",
        _ => "",
    }
}
