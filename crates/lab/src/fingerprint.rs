//! What machine and code a result came from: CPU model, cores, git commit, seed. Printed
//! in every report so numbers are never compared across unlike runs by accident.

use serde::{Deserialize, Serialize};

/// The run's fingerprint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Fingerprint {
    /// CPU model name (`/proc/cpuinfo`), or "unknown".
    pub cpu: String,
    /// Logical cores available to this process.
    pub cores: usize,
    /// `git rev-parse HEAD` of the working directory, or "unknown".
    pub git_commit: String,
    /// Operating system and architecture.
    pub os: String,
    /// Version of this binary.
    pub version: String,
    /// Report creation time, Unix seconds.
    pub created_unix: i64,
}

impl Fingerprint {
    /// Collect the fingerprint of this machine now.
    pub fn collect() -> Fingerprint {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let git_commit = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown".into());
        Fingerprint {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            git_commit,
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            version: env!("CARGO_PKG_VERSION").to_string(),
            created_unix: crate::clock::unix_now(),
        }
    }
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) of a Unix time, without a date library.
pub fn utc(ts: i64) -> String {
    let days = ts.div_euclid(86_400);
    let secs = ts.rem_euclid(86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting_matches_known_dates() {
        // `date -u -d @...` values.
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20");
    }
}
