//! The log stream (issue 18): `[log] format = "text" | "json"` and the level, on stderr.
//!
//! Colour codes only when stderr is a terminal, never into a file or a journal. `RUST_LOG`,
//! when set, overrides `level` (same syntax: `info`, `warn,portcullis::audit=off`, ...).
//! Audit events are log events with target `portcullis::audit` when `[audit]
//! destination = "log"`, so a JSON log carries them as structured fields.

use serde::Deserialize;

use crate::config::ConfigError;

/// The documented `[log]` section of `portcullis config example`.
pub(crate) const EXAMPLE: &str = r#"
# The log stream, on stderr. Colour codes only when stderr is a terminal.
[log]
# "text" (one readable line per event) or "json" (one JSON object per line).
format = "text"
# Level filter in RUST_LOG syntax, e.g. "info" or "warn,portcullis::audit=info";
# the RUST_LOG environment variable overrides it.
level = "info"
"#;

/// `[log]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileLog {
    /// "text" (default): one human-readable line per event; "json": one JSON object per
    /// line (`timestamp`, `level`, `target`, `fields`), for log shippers.
    pub format: String,
    /// Level filter in `RUST_LOG` syntax. Default "info". `RUST_LOG` overrides it.
    pub level: String,
}

impl Default for FileLog {
    fn default() -> Self {
        FileLog {
            format: "text".into(),
            level: "info".into(),
        }
    }
}

/// Line format of the log stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The validated `[log]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// Line format.
    pub format: LogFormat,
    /// Level filter (`RUST_LOG` syntax), checked at validation.
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            format: LogFormat::Text,
            level: "info".into(),
        }
    }
}

impl LogConfig {
    /// Validate `[log]`.
    pub fn from_file(f: FileLog) -> Result<LogConfig, ConfigError> {
        let format = match f.format.as_str() {
            "text" => LogFormat::Text,
            "json" => LogFormat::Json,
            other => {
                return Err(ConfigError::Invalid(format!(
                    "log.format must be \"text\" or \"json\", not {other:?}"
                )));
            }
        };
        tracing_subscriber::EnvFilter::try_new(&f.level)
            .map_err(|e| ConfigError::Invalid(format!("log.level {:?}: {e}", f.level)))?;
        Ok(LogConfig {
            format,
            level: f.level,
        })
    }
}

/// Changes the level filter of the installed subscriber (set by [`init`]).
type SetLevel = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

static SET_LEVEL: std::sync::OnceLock<SetLevel> = std::sync::OnceLock::new();

/// Install the process's log subscriber (once; later calls do nothing).
pub fn init(config: &LogConfig) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(&config.level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    // The level can be changed later (SIGHUP): keep a way to do it.
    fn setter<L, S>(h: tracing_subscriber::reload::Handle<L, S>) -> SetLevel
    where
        L: From<tracing_subscriber::EnvFilter> + Send + Sync + 'static,
        S: Send + Sync + 'static,
    {
        Box::new(move |level: &str| {
            let f = tracing_subscriber::EnvFilter::try_new(level).map_err(|e| e.to_string())?;
            h.reload(f).map_err(|e| e.to_string())
        })
    }
    let installed = match config.format {
        LogFormat::Text => {
            let b = builder.with_filter_reloading();
            let set = setter(b.reload_handle());
            b.try_init().map(|()| set)
        }
        LogFormat::Json => {
            let b = builder.json().with_filter_reloading();
            let set = setter(b.reload_handle());
            b.try_init().map(|()| set)
        }
    };
    if let Ok(set) = installed {
        let _ = SET_LEVEL.set(set);
    }
}

/// Change the level filter of the running process (`RUST_LOG`, when set, still wins:
/// then this does nothing). An invalid filter is an error and the old one stays.
pub fn set_level(level: &str) -> Result<(), String> {
    if std::env::var_os("RUST_LOG").is_some() {
        return Ok(());
    }
    match SET_LEVEL.get() {
        Some(set) => set(level),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_18_log_section_validates() {
        assert_eq!(
            LogConfig::from_file(FileLog::default()).unwrap(),
            LogConfig::default()
        );
        let json = LogConfig::from_file(FileLog {
            format: "json".into(),
            level: "warn,portcullis::audit=info".into(),
        })
        .unwrap();
        assert_eq!(json.format, LogFormat::Json);
        let bad = LogConfig::from_file(FileLog {
            format: "xml".into(),
            level: "info".into(),
        });
        assert!(bad.unwrap_err().to_string().contains("log.format"));
        let bad = LogConfig::from_file(FileLog {
            format: "text".into(),
            level: "info,=[".into(),
        });
        assert!(bad.unwrap_err().to_string().contains("log.level"));
    }
}
