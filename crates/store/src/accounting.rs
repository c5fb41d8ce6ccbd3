//! RADIUS accounting (issue 28): the stored record, the sessions folded from records, the
//! queries behind `portcullis acct sessions` / `acct export`, retention, and the one copy
//! of their SQL that both backends run (expanded per pool by `acct_queries!`, as
//! [`crate::nas`] does).
//!
//! Durability is the caller's contract with its NASes: `append` writes a
//! whole batch in one transaction and returns only after the commit (SQLite in WAL mode
//! with `synchronous = FULL`, so the commit is fsynced; PostgreSQL's commit), so the
//! server may acknowledge every record of the batch once it returns. A retransmission is
//! stored once and reported as not new, and only a new record changes its session (or, for
//! Accounting-On/Off, closes the NAS's open sessions). What makes two records the same
//! (issue 41) is [`AcctRecord::fingerprint`] and [`RETRANSMIT_SLACK_SECS`]: see there.
//!
//! Sessions: a Start opens one, an Interim-Update refreshes its counters, a Stop closes
//! it. Records can arrive out of order (a Stop retransmitted past a later Interim), so the
//! fold keeps the earliest start, the latest update's counters and the first stop. The
//! start of a session first seen through an Interim or Stop is estimated as its event time
//! minus Acct-Session-Time.

use crate::error::StoreError;

/// Acct-Status-Type values the store gives meaning to (RFC 2866 §5.1).
pub mod status {
    /// A session began.
    pub const START: i64 = 1;
    /// A session ended.
    pub const STOP: i64 = 2;
    /// A session's counters so far.
    pub const INTERIM_UPDATE: i64 = 3;
    /// The NAS started: its open sessions are over.
    pub const ACCOUNTING_ON: i64 = 7;
    /// The NAS is stopping: its open sessions are over.
    pub const ACCOUNTING_OFF: i64 = 8;

    /// The name of a status value, for people (CLI output, export).
    pub fn name(v: i64) -> &'static str {
        match v {
            START => "Start",
            STOP => "Stop",
            INTERIM_UPDATE => "Interim-Update",
            ACCOUNTING_ON => "Accounting-On",
            ACCOUNTING_OFF => "Accounting-Off",
            _ => "Other",
        }
    }
}

/// Acct-Terminate-Cause written into the sessions an Accounting-On/Off closes
/// (RFC 2866 §5.10: NAS-Reboot).
pub const TERMINATE_NAS_REBOOT: i64 = 11;

/// How far apart (seconds) the event times of two records with the same NAS, session,
/// status type and [fingerprint](AcctRecord::fingerprint) may be and still be one record
/// sent twice.
///
/// Without Event-Timestamp the event time is the arrival time minus Acct-Delay-Time, both
/// whole seconds: two copies of one record disagree by the rounding of each (up to 2 s)
/// plus the difference of their transit times, and a copy with the same Identifier and
/// authenticator (RFC 5080 §2.2.1: Acct-Delay-Time not updated) that the duplicate cache no
/// longer holds disagrees by its whole retransmission delay. 30 s covers RFC 5080 §2.2.1's
/// retransmission duration (MRD 30 s) and is half the shortest interim interval RFC 2869
/// §5.16 allows (60 s), so two Interim-Updates of one session are never taken for one
/// (they differ in Acct-Session-Time and counters anyway). With Event-Timestamp the
/// fingerprint holds the stamp, so only a copy of the same stamped event matches.
pub const RETRANSMIT_SLACK_SECS: i64 = 30;

/// Attributes a NAS or a proxy may change between two copies of one record: Acct-Delay-Time
/// (41; RFC 2866 §5.2: the copy is then a new packet, new Identifier and authenticator),
/// Message-Authenticator (80; it covers the Identifier and authenticator) and Proxy-State
/// (33; a proxy's own).
const VOLATILE_ATTRIBUTES: [u8; 3] = [41, 80, 33];

/// Longest text field accepted (a RADIUS attribute value is at most 253 octets).
const MAX_TEXT: usize = 253;
/// Largest raw attribute block (a RADIUS packet is at most 4096 octets).
const MAX_ATTRIBUTES: usize = 4096 - 20;

/// One Accounting-Request as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcctRecord {
    /// The NAS it came from (its registered name, not an address a NAS can choose).
    pub nas: String,
    /// Acct-Session-Id (empty for an Accounting-On/Off without one).
    pub session_id: String,
    /// Acct-Status-Type ([`status`]).
    pub status: i64,
    /// When the event happened, unix seconds: Event-Timestamp, else arrival minus
    /// Acct-Delay-Time (part of the duplicate rule, [`AcctRecord::fingerprint`]).
    pub event_time: i64,
    /// When we received it (retention counts from here).
    pub received_at: i64,
    /// Acct-Delay-Time, kept for the record.
    pub delay: i64,
    /// User-Name.
    pub username: Option<String>,
    /// Calling-Station-Id (the user's MAC address or number).
    pub station: Option<String>,
    /// Called-Station-Id (access point and SSID, VPN address).
    pub called_station: Option<String>,
    /// Framed-IP-Address or Framed-IPv6-Address, as text ("who had 10.1.2.3").
    pub framed_ip: Option<String>,
    /// Octets from the user, Gigawords folded in (clamped to `i64::MAX`).
    pub input_octets: Option<i64>,
    /// Octets to the user, Gigawords folded in (clamped to `i64::MAX`).
    pub output_octets: Option<i64>,
    /// Acct-Input-Packets.
    pub input_packets: Option<i64>,
    /// Acct-Output-Packets.
    pub output_packets: Option<i64>,
    /// Acct-Session-Time, seconds.
    pub session_time: Option<i64>,
    /// Acct-Terminate-Cause.
    pub terminate_cause: Option<i64>,
    /// Every attribute as received (the packet after its 20-octet header), so nothing a
    /// NAS sent is lost to the typed columns.
    pub attributes: Vec<u8>,
}

impl AcctRecord {
    /// Check lengths; backends call this before writing (the server before queueing).
    pub fn validate(&self) -> Result<(), StoreError> {
        crate::nas::validate_nas_name(&self.nas)?;
        let texts = [
            Some(&self.session_id),
            self.username.as_ref(),
            self.station.as_ref(),
            self.called_station.as_ref(),
            self.framed_ip.as_ref(),
        ];
        if texts.iter().flatten().any(|t| t.len() > MAX_TEXT) {
            return Err(StoreError::invalid(
                "accounting text fields are at most 253 octets",
            ));
        }
        if self.attributes.len() > MAX_ATTRIBUTES {
            return Err(StoreError::invalid(
                "accounting attributes exceed one RADIUS packet",
            ));
        }
        Ok(())
    }

    /// What every copy of this record repeats, hashed (SHA-256): its typed fields except
    /// the times and delay, and its attributes in order except [`VOLATILE_ATTRIBUTES`]
    /// (so Event-Timestamp, when present, is part of it). Two records of one NAS, session
    /// and status type with the same fingerprint and event times at most
    /// [`RETRANSMIT_SLACK_SECS`] apart are one record sent twice (RFC 2866 §5.2, RFC 5080
    /// §2.2.2: the Identifier and authenticator identify a copy only while Acct-Delay-Time
    /// is unchanged, and only to a cache that still holds them).
    pub fn fingerprint(&self) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"portcullis acct record v1\0");
        let texts = [
            &self.username,
            &self.station,
            &self.called_station,
            &self.framed_ip,
        ];
        for t in texts {
            match t {
                Some(v) => {
                    h.update([1]);
                    h.update((v.len() as u64).to_be_bytes());
                    h.update(v.as_bytes());
                }
                None => h.update([0]),
            }
        }
        let numbers = [
            self.input_octets,
            self.output_octets,
            self.input_packets,
            self.output_packets,
            self.session_time,
            self.terminate_cause,
        ];
        for n in numbers {
            match n {
                Some(v) => {
                    h.update([1]);
                    h.update(v.to_be_bytes());
                }
                None => h.update([0]),
            }
        }
        let mut rest = self.attributes.as_slice();
        while let &[kind, len, ..] = rest {
            let len = usize::from(len);
            let Some(attribute) = rest.get(..len).filter(|_| len >= 2) else {
                break;
            };
            if !VOLATILE_ATTRIBUTES.contains(&kind) {
                h.update(attribute);
            }
            rest = rest.get(len..).unwrap_or_default();
        }
        // Whatever does not parse as attributes is kept whole (never dropped).
        h.update(rest);
        h.finalize().into()
    }

    /// When the session began, as far as this record tells.
    fn started_at(&self) -> i64 {
        self.event_time - self.session_time.unwrap_or(0)
    }
}

/// One session as folded from its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcctSession {
    /// The NAS.
    pub nas: String,
    /// Acct-Session-Id.
    pub session_id: String,
    /// User-Name.
    pub username: Option<String>,
    /// Calling-Station-Id.
    pub station: Option<String>,
    /// The address the user had.
    pub framed_ip: Option<String>,
    /// When it began (earliest known), unix seconds.
    pub started_at: i64,
    /// The latest event folded in.
    pub updated_at: i64,
    /// When it ended; `None`: online.
    pub stopped_at: Option<i64>,
    /// Latest known octets from the user.
    pub input_octets: Option<i64>,
    /// Latest known octets to the user.
    pub output_octets: Option<i64>,
    /// Latest known Acct-Session-Time.
    pub session_time: Option<i64>,
    /// Why it ended.
    pub terminate_cause: Option<i64>,
}

/// What `portcullis acct sessions` asks for; every filter is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionQuery {
    /// Only this User-Name.
    pub username: Option<String>,
    /// Only this NAS.
    pub nas: Option<String>,
    /// Only this address.
    pub framed_ip: Option<String>,
    /// Only sessions still open.
    pub active: bool,
    /// Only sessions open at this time (started at or before it, not stopped before it).
    pub at: Option<i64>,
    /// At most this many, oldest start first.
    pub limit: u32,
}

pub(crate) const RECORD_COLUMNS: &str = "nas, session_id, status, event_time, received_at, \
     delay, username, station, called_station, framed_ip, input_octets, output_octets, \
     input_packets, output_packets, session_time, terminate_cause, attributes";
pub(crate) const SESSION_COLUMNS: &str = "nas, session_id, username, station, framed_ip, \
     started_at, updated_at, stopped_at, input_octets, output_octets, session_time, \
     terminate_cause";

/// The fold of one record into its session (see the module docs for the rules).
pub(crate) const UPSERT_SESSION: &str = "INSERT INTO acct_sessions (nas, session_id, username, \
     station, framed_ip, started_at, updated_at, stopped_at, input_octets, output_octets, \
     session_time, terminate_cause) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
     ON CONFLICT (nas, session_id) DO UPDATE SET \
     username = COALESCE(excluded.username, acct_sessions.username), \
     station = COALESCE(excluded.station, acct_sessions.station), \
     framed_ip = COALESCE(excluded.framed_ip, acct_sessions.framed_ip), \
     started_at = CASE WHEN excluded.started_at < acct_sessions.started_at \
         THEN excluded.started_at ELSE acct_sessions.started_at END, \
     stopped_at = COALESCE(acct_sessions.stopped_at, excluded.stopped_at), \
     terminate_cause = COALESCE(acct_sessions.terminate_cause, excluded.terminate_cause), \
     input_octets = CASE WHEN excluded.updated_at >= acct_sessions.updated_at \
         THEN COALESCE(excluded.input_octets, acct_sessions.input_octets) \
         ELSE acct_sessions.input_octets END, \
     output_octets = CASE WHEN excluded.updated_at >= acct_sessions.updated_at \
         THEN COALESCE(excluded.output_octets, acct_sessions.output_octets) \
         ELSE acct_sessions.output_octets END, \
     session_time = CASE WHEN excluded.updated_at >= acct_sessions.updated_at \
         THEN COALESCE(excluded.session_time, acct_sessions.session_time) \
         ELSE acct_sessions.session_time END, \
     updated_at = CASE WHEN excluded.updated_at > acct_sessions.updated_at \
         THEN excluded.updated_at ELSE acct_sessions.updated_at END";

/// A row of `acct_records` (17 columns: more than sqlx's tuples take).
#[derive(sqlx::FromRow)]
pub(crate) struct RecordRow {
    /// Column `nas` (see [`AcctRecord`]).
    nas: String,
    /// Column `session_id` (see [`AcctRecord`]).
    session_id: String,
    /// Column `status` (see [`AcctRecord`]).
    status: i64,
    /// Column `event_time` (see [`AcctRecord`]).
    event_time: i64,
    /// Column `received_at` (see [`AcctRecord`]).
    received_at: i64,
    /// Column `delay` (see [`AcctRecord`]).
    delay: i64,
    /// Column `username` (see [`AcctRecord`]).
    username: Option<String>,
    /// Column `station` (see [`AcctRecord`]).
    station: Option<String>,
    /// Column `called_station` (see [`AcctRecord`]).
    called_station: Option<String>,
    /// Column `framed_ip` (see [`AcctRecord`]).
    framed_ip: Option<String>,
    /// Column `input_octets` (see [`AcctRecord`]).
    input_octets: Option<i64>,
    /// Column `output_octets` (see [`AcctRecord`]).
    output_octets: Option<i64>,
    /// Column `input_packets` (see [`AcctRecord`]).
    input_packets: Option<i64>,
    /// Column `output_packets` (see [`AcctRecord`]).
    output_packets: Option<i64>,
    /// Column `session_time` (see [`AcctRecord`]).
    session_time: Option<i64>,
    /// Column `terminate_cause` (see [`AcctRecord`]).
    terminate_cause: Option<i64>,
    /// Column `attributes` (see [`AcctRecord`]).
    attributes: Vec<u8>,
}

pub(crate) type SessionRow = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    i64,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

pub(crate) fn record_from_row(r: RecordRow) -> AcctRecord {
    AcctRecord {
        nas: r.nas,
        session_id: r.session_id,
        status: r.status,
        event_time: r.event_time,
        received_at: r.received_at,
        delay: r.delay,
        username: r.username,
        station: r.station,
        called_station: r.called_station,
        framed_ip: r.framed_ip,
        input_octets: r.input_octets,
        output_octets: r.output_octets,
        input_packets: r.input_packets,
        output_packets: r.output_packets,
        session_time: r.session_time,
        terminate_cause: r.terminate_cause,
        attributes: r.attributes,
    }
}

pub(crate) fn session_from_row(r: SessionRow) -> AcctSession {
    AcctSession {
        nas: r.0,
        session_id: r.1,
        username: r.2,
        station: r.3,
        framed_ip: r.4,
        started_at: r.5,
        updated_at: r.6,
        stopped_at: r.7,
        input_octets: r.8,
        output_octets: r.9,
        session_time: r.10,
        terminate_cause: r.11,
    }
}

/// The `WHERE` clause and its text parameters (in order) for a [`SessionQuery`]; integer
/// parameters follow the text ones.
pub(crate) fn session_filter(q: &SessionQuery) -> (String, Vec<String>, Vec<i64>) {
    let mut clauses = Vec::new();
    let mut texts = Vec::new();
    let mut n = 0;
    for (column, value) in [
        ("username", &q.username),
        ("nas", &q.nas),
        ("framed_ip", &q.framed_ip),
    ] {
        if let Some(v) = value {
            n += 1;
            clauses.push(format!("{column} = ${n}"));
            texts.push(v.clone());
        }
    }
    if q.active {
        clauses.push("stopped_at IS NULL".to_owned());
    }
    let mut ints = Vec::new();
    if let Some(at) = q.at {
        n += 1;
        let a = n;
        n += 1;
        clauses.push(format!(
            "started_at <= ${a} AND (stopped_at IS NULL OR stopped_at >= ${n})"
        ));
        ints.push(at);
        ints.push(at);
    }
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    n += 1;
    ints.push(i64::from(q.limit.max(1)));
    (
        format!("{filter} ORDER BY started_at, nas, session_id LIMIT ${n}"),
        texts,
        ints,
    )
}

/// The accounting statements for one backend's pool type, as free functions the
/// backend's `Store` impl delegates to.
macro_rules! acct_queries {
    ($pool:ty) => {
        use $crate::accounting::{
            AcctRecord, AcctSession, RECORD_COLUMNS, RecordRow, SESSION_COLUMNS, SessionQuery,
            RETRANSMIT_SLACK_SECS, SessionRow, TERMINATE_NAS_REBOOT, UPSERT_SESSION,
            record_from_row, session_filter, session_from_row, status,
        };
        use $crate::error::StoreError;
        use $crate::rows::backend;

        /// Store a batch in one transaction; per record, whether it was new (false: a
        /// duplicate of a stored one). Returns after the commit.
        pub(crate) async fn append(
            pool: &$pool,
            records: &[AcctRecord],
        ) -> Result<Vec<bool>, StoreError> {
            for r in records {
                r.validate()?;
            }
            let mut tx = pool.begin().await.map_err(backend)?;
            let mut fresh = Vec::with_capacity(records.len());
            for r in records {
                // A copy of a stored record (same fingerprint, event time within the
                // slack) is not inserted; the primary key still refuses an exact repeat,
                // and a concurrent writer's (another instance on PostgreSQL).
                let done = sqlx::query(&format!(
                    "INSERT INTO acct_records ({RECORD_COLUMNS}, fingerprint) SELECT $1, $2, \
                     $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18 \
                     WHERE NOT EXISTS (SELECT 1 FROM acct_records WHERE nas = $1 \
                     AND session_id = $2 AND status = $3 AND event_time BETWEEN $19 AND $20 \
                     AND fingerprint = $18) \
                     ON CONFLICT (nas, session_id, status, event_time) DO NOTHING"
                ))
                .bind(&r.nas)
                .bind(&r.session_id)
                .bind(r.status)
                .bind(r.event_time)
                .bind(r.received_at)
                .bind(r.delay)
                .bind(&r.username)
                .bind(&r.station)
                .bind(&r.called_station)
                .bind(&r.framed_ip)
                .bind(r.input_octets)
                .bind(r.output_octets)
                .bind(r.input_packets)
                .bind(r.output_packets)
                .bind(r.session_time)
                .bind(r.terminate_cause)
                .bind(&r.attributes)
                .bind(r.fingerprint().to_vec())
                .bind(r.event_time.saturating_sub(RETRANSMIT_SLACK_SECS))
                .bind(r.event_time.saturating_add(RETRANSMIT_SLACK_SECS))
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
                let new = done.rows_affected() > 0;
                fresh.push(new);
                if !new {
                    continue;
                }
                match r.status {
                    status::ACCOUNTING_ON | status::ACCOUNTING_OFF => {
                        sqlx::query(
                            "UPDATE acct_sessions SET stopped_at = $1, \
                             terminate_cause = COALESCE(terminate_cause, $2) \
                             WHERE nas = $3 AND stopped_at IS NULL AND started_at <= $4",
                        )
                        .bind(r.event_time)
                        .bind(TERMINATE_NAS_REBOOT)
                        .bind(&r.nas)
                        .bind(r.event_time)
                        .execute(&mut *tx)
                        .await
                        .map_err(backend)?;
                    }
                    status::START | status::STOP | status::INTERIM_UPDATE => {
                        let stopped = (r.status == status::STOP).then_some(r.event_time);
                        sqlx::query(UPSERT_SESSION)
                            .bind(&r.nas)
                            .bind(&r.session_id)
                            .bind(&r.username)
                            .bind(&r.station)
                            .bind(&r.framed_ip)
                            .bind(r.started_at())
                            .bind(r.event_time)
                            .bind(stopped)
                            .bind(r.input_octets)
                            .bind(r.output_octets)
                            .bind(r.session_time)
                            .bind(r.terminate_cause)
                            .execute(&mut *tx)
                            .await
                            .map_err(backend)?;
                    }
                    // Other types (tunnel accounting, Failed) are kept as records only.
                    _ => {}
                }
            }
            tx.commit().await.map_err(backend)?;
            Ok(fresh)
        }

        pub(crate) async fn sessions(
            pool: &$pool,
            q: &SessionQuery,
        ) -> Result<Vec<AcctSession>, StoreError> {
            let (filter, texts, ints) = session_filter(q);
            let sql = format!("SELECT {SESSION_COLUMNS} FROM acct_sessions {filter}");
            let mut query = sqlx::query_as::<_, SessionRow>(&sql);
            for t in texts {
                query = query.bind(t);
            }
            for i in ints {
                query = query.bind(i);
            }
            let rows = query.fetch_all(pool).await.map_err(backend)?;
            Ok(rows.into_iter().map(session_from_row).collect())
        }

        pub(crate) async fn records_since(
            pool: &$pool,
            since: i64,
            limit: u32,
        ) -> Result<Vec<AcctRecord>, StoreError> {
            let rows: Vec<RecordRow> = sqlx::query_as(&format!(
                "SELECT {RECORD_COLUMNS} FROM acct_records WHERE received_at >= $1 \
                 ORDER BY received_at, nas, session_id, status, event_time LIMIT $2"
            ))
            .bind(since)
            .bind(i64::from(limit.max(1)))
            .fetch_all(pool)
            .await
            .map_err(backend)?;
            Ok(rows.into_iter().map(record_from_row).collect())
        }

        pub(crate) async fn prune(pool: &$pool, before: i64) -> Result<u64, StoreError> {
            let mut tx = pool.begin().await.map_err(backend)?;
            let records = sqlx::query("DELETE FROM acct_records WHERE received_at < $1")
                .bind(before)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
            // Sessions go when nothing was heard of them within the retention period
            // (closed ones, and open ones whose Stop was lost).
            sqlx::query("DELETE FROM acct_sessions WHERE updated_at < $1")
                .bind(before)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
            tx.commit().await.map_err(backend)?;
            Ok(records.rows_affected())
        }

        pub(crate) async fn online(pool: &$pool) -> Result<u64, StoreError> {
            let (n,): (i64,) =
                sqlx::query_as("SELECT COUNT(*) FROM acct_sessions WHERE stopped_at IS NULL")
                    .fetch_one(pool)
                    .await
                    .map_err(backend)?;
            Ok(u64::try_from(n).unwrap_or(0))
        }
    };
}

/// The statements on SQLite.
pub(crate) mod sqlite {
    acct_queries!(sqlx::SqlitePool);
}

/// The statements on PostgreSQL.
pub(crate) mod postgres {
    acct_queries!(sqlx::PgPool);
}
