//! Where audit events go (issue 18): the log stream, a JSON-lines file with rotation, or
//! nowhere; and how many per source are written while a flood lasts.
//!
//! The core and the RADIUS door produce one [`AuditEvent`] per authentication outcome
//! (`portcullis_core::audit`); [`Audit`] is the [`AuditSink`] the server installs. It
//! counts every event in `portcullis_audit_events_total{outcome}` (exact, always), then
//! writes every success and at most `per_source_limit` other events per source prefix
//! (IPv4 /24, IPv6 /64, the core's throttling prefixes) per `interval_secs`; the rest of
//! that prefix's interval is
//! summarised in one `audit_summary` event when the interval ends, with the suppressed
//! counts per outcome. A flood therefore costs a bounded number of lines per prefix and
//! interval, the prefix table is bounded ([`MAX_PREFIXES`]; beyond it, new prefixes share
//! one overflow entry), and the file itself is bounded by rotation
//! (`max_file_bytes` x (`keep_files` + 1)).
//!
//! Writing never blocks a request: file lines go through a bounded channel to a writer
//! thread of their own; when that channel is full the line is dropped and counted in
//! `portcullis_audit_dropped_total`. No event has a field for a secret, a token or a hash.
//!
//! Admin API actions (issue 27) are events of their own (`event: "admin"`, `admin.rs`),
//! in the same stream, never rate-limited: every one comes from an authenticated caller.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use portcullis_core::{AuditEvent, AuditOutcome, AuditSink, IpPrefix};
use serde::Deserialize;

use crate::config_error::ConfigError;

/// The documented `[audit]` section of `portcullis config example`.
pub const EXAMPLE: &str = r#"
# Audit events: one per authentication outcome (accepted, rejected, unknown_principal,
# throttled, overloaded; RADIUS also dropped and duplicate), from every front end, with
# time, request id (also the X-Request-Id response header), protocol, principal as given,
# client id, real source address, outcome, reason, latency and class. Never a secret,
# password, token or hash.
[audit]
# "log": on the log stream (target portcullis::audit, in [log] format); "file": JSON
# lines in `file`; "off". portcullis_audit_events_total{outcome} counts them either way.
destination = "log"
# For "file": the JSON-lines file (relative: in the data directory), created 0600, and
# its rotation: at max_file_bytes it becomes FILE.1 (older ones move up), keep_files kept.
# file = "audit.jsonl"
max_file_bytes = 104857600
keep_files = 10
# Under a flood: every success is written, other events at most per_source_limit per
# source prefix (IPv4 /24, IPv6 /64) per interval_secs; the rest become one audit_summary
# event per prefix and interval with the suppressed counts per outcome.
per_source_limit = 20
interval_secs = 60
"#;

/// Source prefixes with their own rate-limit window; beyond this, new prefixes share one.
pub const MAX_PREFIXES: usize = 65_536;
/// File lines waiting for the writer thread; beyond this they are dropped and counted.
const QUEUE_LINES: usize = 65_536;

/// Prometheus: every audit event by outcome, written or not.
pub const EVENTS: &str = "portcullis_audit_events_total";
/// Prometheus: events folded into a per-prefix summary instead of written.
pub const SUPPRESSED: &str = "portcullis_audit_suppressed_total";
/// Prometheus: lines lost because the file writer fell behind.
pub const DROPPED: &str = "portcullis_audit_dropped_total";

/// `[audit]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileAudit {
    /// "log" (default): one line per event on the log stream, target `portcullis::audit`,
    /// in the log's format; "file": JSON lines in `file`; "off".
    pub destination: String,
    /// The JSON-lines file for destination "file". Default `audit.jsonl` in the data
    /// directory. Created 0600.
    pub file: Option<PathBuf>,
    /// Rotate the file when it reaches this size: it becomes `<file>.1`, the older ones
    /// move up, the oldest beyond `keep_files` is deleted. Default 104857600 (100 MiB).
    pub max_file_bytes: u64,
    /// Rotated files kept. Default 10.
    pub keep_files: u32,
    /// Events written per source prefix per interval before the rest are summarised.
    /// Default 20.
    pub per_source_limit: u32,
    /// The rate-limit interval in seconds. Default 60.
    pub interval_secs: u64,
}

impl Default for FileAudit {
    fn default() -> Self {
        FileAudit {
            destination: "log".into(),
            file: None,
            max_file_bytes: 100 << 20,
            keep_files: 10,
            per_source_limit: 20,
            interval_secs: 60,
        }
    }
}

/// Where events are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Nowhere (the counters in `/metrics` stay exact).
    Off,
    /// The log stream.
    Log,
    /// A JSON-lines file with rotation.
    File {
        /// The file.
        path: PathBuf,
        /// Rotate at this size.
        max_bytes: u64,
        /// Rotated files kept.
        keep: u32,
    },
}

/// The validated `[audit]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditConfig {
    /// Where events go.
    pub destination: Destination,
    /// Events written per prefix per interval.
    pub per_source_limit: u32,
    /// The rate-limit interval.
    pub interval: Duration,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            destination: Destination::Log,
            per_source_limit: 20,
            interval: Duration::from_secs(60),
        }
    }
}

impl AuditConfig {
    /// Validate `[audit]` (a relative `file` is resolved against the data directory when
    /// the server starts, after `--data-dir` has had its say).
    pub fn from_file(f: FileAudit) -> Result<AuditConfig, ConfigError> {
        let invalid = |m: &str| ConfigError::Invalid(m.to_owned());
        let destination = match f.destination.as_str() {
            "off" => Destination::Off,
            "log" => Destination::Log,
            "file" => {
                if f.max_file_bytes < 4096 {
                    return Err(invalid("audit.max_file_bytes must be at least 4096"));
                }
                if f.keep_files > 1000 {
                    return Err(invalid("audit.keep_files must be at most 1000"));
                }
                let path = f.file.unwrap_or_else(|| PathBuf::from("audit.jsonl"));
                Destination::File {
                    path,
                    max_bytes: f.max_file_bytes,
                    keep: f.keep_files,
                }
            }
            other => {
                return Err(ConfigError::Invalid(format!(
                    "audit.destination must be \"log\", \"file\" or \"off\", not {other:?}"
                )));
            }
        };
        if f.per_source_limit == 0 {
            return Err(invalid("audit.per_source_limit must be at least 1"));
        }
        if !(1..=3600).contains(&f.interval_secs) {
            return Err(invalid("audit.interval_secs must be between 1 and 3600"));
        }
        Ok(AuditConfig {
            destination,
            per_source_limit: f.per_source_limit,
            interval: Duration::from_secs(f.interval_secs),
        })
    }
}

/// One prefix's current interval.
struct Window {
    start: Instant,
    written: u32,
    suppressed: [u64; AuditOutcome::ALL.len()],
}

/// What the file writer thread receives.
enum Msg {
    /// One JSON line (without the newline).
    Line(String),
    /// Flush, then acknowledge.
    Flush(std::sync::mpsc::Sender<()>),
}

/// Where lines go once the limiter let them through.
enum Writer {
    Off,
    Log,
    File(SyncSender<Msg>),
}

/// The server's audit sink (module doc).
pub struct Audit {
    writer: Writer,
    /// Events written per prefix per interval (reloadable).
    per_source_limit: std::sync::atomic::AtomicU32,
    /// The interval in milliseconds (reloadable).
    interval_ms: std::sync::atomic::AtomicU64,
    /// Rate-limit windows by source prefix; the overflow entry is [`overflow_prefix`].
    windows: Mutex<HashMap<IpPrefix, Window>>,
    /// The status page's top failing sources, fed with every event (written or not).
    pub board: crate::history::FailureBoard,
}

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Audit")
            .field("per_source_limit", &self.limit())
            .field("interval", &self.interval())
            .finish_non_exhaustive()
    }
}

/// The prefix all sources share once [`MAX_PREFIXES`] have a window.
fn overflow_prefix() -> IpPrefix {
    IpPrefix::of(IpAddr::from([0, 0, 0, 0]), 0, 0)
}

impl Audit {
    /// Start the sink (and for a file destination its writer thread, after opening the
    /// file so that a bad path fails the start, not the first event). A relative file
    /// name is taken in `data_dir`.
    pub fn start(config: &AuditConfig, data_dir: &Path) -> std::io::Result<Arc<Audit>> {
        let writer = match &config.destination {
            Destination::Off => Writer::Off,
            Destination::Log => Writer::Log,
            Destination::File {
                path,
                max_bytes,
                keep,
            } => {
                let file = RotatingFile::open(data_dir.join(path), *max_bytes, *keep)?;
                let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE_LINES);
                // Detached: it ends when the last sender (this `Audit`) is dropped.
                std::thread::Builder::new()
                    .name("portcullis-audit".into())
                    .spawn(move || write_lines(file, rx))?;
                Writer::File(tx)
            }
        };
        Ok(Arc::new(Audit {
            writer,
            per_source_limit: std::sync::atomic::AtomicU32::new(config.per_source_limit),
            interval_ms: std::sync::atomic::AtomicU64::new(
                u64::try_from(config.interval.as_millis()).unwrap_or(u64::MAX),
            ),
            windows: Mutex::new(HashMap::new()),
            board: crate::history::FailureBoard::default(),
        }))
    }

    fn limit(&self) -> u32 {
        self.per_source_limit
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn interval(&self) -> Duration {
        Duration::from_millis(self.interval_ms.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Apply a reloaded `[audit]` rate limit (the destination needs a restart).
    pub fn set_limits(&self, config: &AuditConfig) {
        use std::sync::atomic::Ordering::Relaxed;
        self.per_source_limit
            .store(config.per_source_limit, Relaxed);
        self.interval_ms.store(
            u64::try_from(config.interval.as_millis()).unwrap_or(u64::MAX),
            Relaxed,
        );
    }

    /// Write the summaries of every interval that has ended (the server calls this every
    /// second, so a flood's summary appears even when the flood stops).
    pub fn sweep(&self, now: Instant) {
        let interval = self.interval();
        let mut done = Vec::new();
        self.windows.lock().retain(|prefix, w| {
            let over = now.saturating_duration_since(w.start) >= interval;
            if over && w.suppressed.iter().any(|n| *n > 0) {
                done.push((*prefix, w.suppressed));
            }
            !over
        });
        for (prefix, suppressed) in done {
            self.summary(prefix, &suppressed);
        }
    }

    /// Write every pending summary and wait (up to 5 s) until the file writer has
    /// flushed everything queued before this call: the server calls it after its last
    /// request, so no accepted event is lost to the exit. Blocks: call it off the
    /// runtime's workers.
    pub fn close(&self) {
        self.sweep(Instant::now() + self.interval());
        if let Writer::File(tx) = &self.writer {
            let (ack, done) = std::sync::mpsc::channel();
            if tx.send(Msg::Flush(ack)).is_ok() {
                let _ = done.recv_timeout(Duration::from_secs(5));
            }
        }
    }

    fn summary(&self, prefix: IpPrefix, suppressed: &[u64; AuditOutcome::ALL.len()]) {
        let counts: serde_json::Map<String, serde_json::Value> = AuditOutcome::ALL
            .iter()
            .zip(suppressed)
            .filter(|(_, n)| **n > 0)
            .map(|(o, n)| (o.label().to_owned(), (*n).into()))
            .collect();
        let source = if prefix == overflow_prefix() {
            "other".to_owned()
        } else {
            prefix.to_string()
        };
        let line = serde_json::json!({
            "time": rfc3339(SystemTime::now()),
            "event": "audit_summary",
            "source_prefix": source,
            "interval_secs": self.interval().as_secs(),
            "suppressed": counts,
        });
        match &self.writer {
            Writer::Off => {}
            Writer::Log => tracing::info!(
                target: "portcullis::audit",
                event = "audit_summary",
                source_prefix = %source,
                suppressed = %line["suppressed"],
                "audit events from {source} beyond the per-source limit were summarised"
            ),
            Writer::File(tx) => push(tx, line.to_string()),
        }
    }

    /// Whether this event may be written now, counting it in its prefix's window.
    fn admit(&self, source: IpAddr, outcome: AuditOutcome, now: Instant) -> bool {
        let prefix = IpPrefix::of(source, 24, 64);
        let mut windows = self.windows.lock();
        let key = if windows.contains_key(&prefix) || windows.len() < MAX_PREFIXES {
            prefix
        } else {
            overflow_prefix()
        };
        let w = windows.entry(key).or_insert(Window {
            start: now,
            written: 0,
            suppressed: [0; AuditOutcome::ALL.len()],
        });
        // Successes are always written: they are what a SIEM must see (who got in), and
        // an attacker does not get many; the limit is for the failures of a flood.
        if w.written < self.limit() || outcome == AuditOutcome::Accepted {
            w.written += 1;
            true
        } else {
            w.suppressed[outcome.index()] += 1;
            false
        }
    }
}

impl Audit {
    /// A dynamic client registration action (issue 27): `registered`, `read`, `updated`
    /// or `deleted`, of `client_id`, by the holder of `initial_token` (registration) or
    /// of the client's registration access token (the others). The token checks
    /// themselves are authentication events (protocol `oauth_registration`). Written
    /// whole, never rate-limited: each one follows a valid token, whose uses are bounded.
    pub fn registration(
        &self,
        action: &'static str,
        client_id: &str,
        initial_token: Option<&str>,
        source: IpAddr,
        request_id: &str,
    ) {
        metrics::counter!(REGISTRATION_EVENTS, "action" => action).increment(1);
        match &self.writer {
            Writer::Off => {}
            Writer::Log => tracing::info!(
                target: "portcullis::audit",
                event = "registration",
                action,
                client_id = ?client_id,
                initial_token = ?initial_token,
                source = %source,
                request_id = %request_id,
                "client registration {action}"
            ),
            Writer::File(tx) => push(
                tx,
                serde_json::json!({
                    "time": rfc3339(SystemTime::now()),
                    "event": "registration",
                    "action": action,
                    "client_id": client_id,
                    "initial_token": initial_token,
                    "source": source.to_string(),
                    "request_id": request_id,
                })
                .to_string(),
            ),
        }
    }
}

/// Prometheus: dynamic client registration actions, by action.
pub const REGISTRATION_EVENTS: &str = "portcullis_registration_events_total";

impl AuditSink for Audit {
    fn record(&self, event: AuditEvent) {
        metrics::counter!(EVENTS, "outcome" => event.outcome.label()).increment(1);
        self.board.record(&event, Instant::now());
        if matches!(self.writer, Writer::Off) {
            return;
        }
        if !self.admit(event.source, event.outcome, Instant::now()) {
            metrics::counter!(SUPPRESSED).increment(1);
            return;
        }
        match &self.writer {
            Writer::Off => {}
            Writer::Log => log_event(&event),
            Writer::File(tx) => push(tx, event_json(&event).to_string()),
        }
    }
}

fn push(tx: &SyncSender<Msg>, line: String) {
    match tx.try_send(Msg::Line(line)) {
        Ok(()) => {}
        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
            metrics::counter!(DROPPED).increment(1);
        }
    }
}

/// One event as a JSON object (the file format; README "Audit events" lists the fields).
pub fn event_json(e: &AuditEvent) -> serde_json::Value {
    serde_json::json!({
        "time": rfc3339(e.time),
        "event": "authentication",
        "request_id": e.context.request_id,
        "protocol": e.protocol.label(),
        "principal_kind": match e.kind {
            portcullis_core::PrincipalKind::Client => "client",
            portcullis_core::PrincipalKind::User => "user",
        },
        "principal": e.principal,
        "client_id": e.context.client_id,
        "source": e.source.to_string(),
        "station": e.station,
        "outcome": e.outcome.label(),
        "reason": e.reason,
        "latency_ms": (e.latency.as_secs_f64() * 1e6).round() / 1e3,
        "class": e.class.map(|c| c.label()),
        "directory": e.directory.as_deref(),
        "eap": e.context.eap.as_ref().map(|d| serde_json::json!({
            "method": d.method,
            "outer_identity": d.outer_identity,
            "resumed": d.resumed,
            "round_trips": d.rounds,
        })),
    })
}

/// One event on the log stream: structured fields, strings in `Debug` form so that a
/// principal full of control characters or quotes cannot forge log lines.
fn log_event(e: &AuditEvent) {
    tracing::info!(
        target: "portcullis::audit",
        request_id = %e.context.request_id,
        protocol = e.protocol.label(),
        principal = ?e.principal,
        client_id = ?e.context.client_id,
        source = %e.source,
        station = ?e.station,
        outcome = e.outcome.label(),
        reason = e.reason,
        latency_ms = (e.latency.as_secs_f64() * 1e6).round() / 1e3,
        class = e.class.map_or("none", |c| c.label()),
        directory = e.directory.as_deref().unwrap_or("none"),
        eap_method = e.context.eap.as_ref().map_or("none", |d| d.method),
        eap_outer_identity = ?e.context.eap.as_ref().map(|d| &d.outer_identity),
        eap_resumed = e.context.eap.as_ref().is_some_and(|d| d.resumed),
        "authentication {}",
        e.outcome.label()
    );
}

/// RFC 3339 UTC with milliseconds.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// The JSON-lines file: appends, rotates by size.
struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
    out: BufWriter<File>,
    size: u64,
}

impl RotatingFile {
    fn open(path: PathBuf, max_bytes: u64, keep: u32) -> std::io::Result<RotatingFile> {
        let file = open_append(&path)?;
        let size = file.metadata()?.len();
        Ok(RotatingFile {
            path,
            max_bytes,
            keep,
            out: BufWriter::new(file),
            size,
        })
    }

    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        if self.size > 0 && self.size + line.len() as u64 + 1 > self.max_bytes {
            self.rotate()?;
        }
        self.out.write_all(line.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.size += line.len() as u64 + 1;
        Ok(())
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        self.out.flush()?;
        let numbered = |n: u32| {
            let mut p = self.path.clone().into_os_string();
            p.push(format!(".{n}"));
            PathBuf::from(p)
        };
        if self.keep == 0 {
            std::fs::remove_file(&self.path)?;
        } else {
            // .keep is deleted by being overwritten; .k moves to .k+1.
            for n in (1..self.keep).rev() {
                let from = numbered(n);
                if from.exists() {
                    std::fs::rename(&from, numbered(n + 1))?;
                }
            }
            std::fs::rename(&self.path, numbered(1))?;
        }
        self.out = BufWriter::new(open_append(&self.path)?);
        self.size = 0;
        Ok(())
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Principals and addresses are personal data: owner only.
        o.mode(0o600);
    }
    o.open(path)
}

/// The writer thread: lines until every sender is gone, flushing whenever it has caught
/// up (so a quiet server's last events reach the file at once).
fn write_lines(mut file: RotatingFile, rx: Receiver<Msg>) {
    let mut failed = false;
    while let Ok(first) = rx.recv() {
        let mut acks = Vec::new();
        for msg in std::iter::once(first).chain(rx.try_iter().take(1024)) {
            match msg {
                Msg::Line(line) => {
                    if let Err(e) = file.write_line(&line) {
                        if !failed {
                            tracing::error!("writing the audit file {}: {e}", file.path.display());
                        }
                        failed = true;
                        metrics::counter!(DROPPED).increment(1);
                    }
                }
                Msg::Flush(ack) => acks.push(ack),
            }
        }
        if let Err(e) = file.out.flush()
            && !failed
        {
            tracing::error!("flushing the audit file {}: {e}", file.path.display());
            failed = true;
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
}

mod admin;
pub use admin::AdminEvent;

#[cfg(test)]
mod tests;
