//! `portcullis doctor`: the first-run check of a configuration on the machine that will run
//! it. Each check yields [`Finding`]s, one line each; a problem names its fix. A
//! [`Level::Fail`] is something that would break production (the server refuses to start,
//! or starts and fails requests); the command exits non-zero on any.
//!
//! Module map:
//! - this file: the report types and [`run`], which calls every check in order;
//! - [`files`]: permissions and ownership of the data directory, the secrets file, the
//!   SQLite database and TLS keys;
//! - [`services`]: the store and Redis answering, the clock against this binary's file
//!   time and PostgreSQL's clock, the issuer of a shared store;
//! - [`host`]: listener addresses (privileged ports), certificate/suite fit (the same
//!   check as `tls check` and `serve`), and the hash kernels this CPU runs;
//! - [`ldap`]: the LDAP door's listeners and certificate, and an `[ldap]` that would refuse
//!   every bind (no StartTLS) or accept passwords in clear.
//!
//! The checks only read: nothing is created, migrated or written (a listener address is
//! bound and released at once to see whether `serve` could bind it).

pub mod files;
pub mod host;
pub mod ldap;
pub mod services;

use std::fmt;

use crate::config::Config;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Checked and fine.
    Ok,
    /// Worth knowing, not a problem (e.g. a file the first start creates).
    Note,
    /// Works, but not how production should run.
    Warn,
    /// Would break production: `serve` refuses to start, or fails requests.
    Fail,
}

impl Level {
    fn tag(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Note => "note",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Severity.
    pub level: Level,
    /// What was checked ("secrets file", "store", ...).
    pub subject: &'static str,
    /// What was found; for a problem, ends with the fix.
    pub text: String,
}

impl Finding {
    pub(crate) fn new(level: Level, subject: &'static str, text: impl Into<String>) -> Self {
        Finding {
            level,
            subject,
            text: text.into(),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:<4}  {}: {}",
            self.level.tag(),
            self.subject,
            self.text
        )
    }
}

/// Every finding, in the order the checks ran.
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// The findings.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Whether anything would break production.
    pub fn failed(&self) -> bool {
        self.findings.iter().any(|f| f.level == Level::Fail)
    }

    /// How many findings have `level`.
    pub fn count(&self, level: Level) -> usize {
        self.findings.iter().filter(|f| f.level == level).count()
    }

    /// The closing line.
    pub fn summary(&self) -> String {
        let (fails, warns) = (self.count(Level::Fail), self.count(Level::Warn));
        if fails > 0 {
            format!("doctor: {fails} problem(s) would break production, {warns} warning(s)")
        } else {
            format!("doctor: ready for production ({warns} warning(s))")
        }
    }
}

/// Run every check on `config`.
pub async fn run(config: &Config) -> Report {
    let mut out = Vec::new();
    files::check(config, &mut out);
    services::check(config, &mut out).await;
    host::check(config, &mut out);
    ldap::check(config, &mut out);
    Report { findings: out }
}
