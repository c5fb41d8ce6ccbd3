//! The log stream (issue 18): `[log] format = "text" | "json"` and the level, on stderr.
//!
//! Colour codes only when stderr is a terminal, never into a file or a journal. `RUST_LOG`,
//! when set, overrides `level` (same syntax: `info`, `warn,portcullis::audit=off`, ...).
//! Audit events are log events with target `portcullis::audit` when `[audit]
//! destination = "log"`, so a JSON log carries them as structured fields.

use serde::Deserialize;

use portcullis_door::config_error::ConfigError;

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
        check_level(&f.level)
            .and_then(|()| {
                tracing_subscriber::EnvFilter::try_new(&f.level).map_err(|e| e.to_string())
            })
            .map_err(|e| ConfigError::Invalid(format!("log.level {:?}: {e}", f.level)))?;
        Ok(LogConfig {
            format,
            level: f.level,
        })
    }
}

/// Levels a directive may name.
const LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];

/// `log.level` is a comma-separated list of `LEVEL` or `TARGET=LEVEL` directives (targets
/// are module paths). The rest of `RUST_LOG`'s syntax (span and field filters) is refused:
/// a field filter is a regular expression compiled into a DFA, and the fuzzer found a
/// short one that takes minutes to compile, so a configuration file could hang the start
/// or a reload (issue 15). `RUST_LOG` itself still takes everything.
fn check_level(s: &str) -> Result<(), String> {
    if s.len() > 1024 {
        return Err("longer than 1024 characters".into());
    }
    for d in s.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let (target, level) = match d.split_once('=') {
            Some((t, l)) => (Some(t), l),
            None => (None, d),
        };
        if !LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "{d:?}: the level must be one of {}",
                LEVELS.join(", ")
            ));
        }
        if let Some(t) = target
            && (t.is_empty()
                || !t
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '-' | '.')))
        {
            return Err(format!(
                "{d:?}: a target is a module path such as portcullis::audit (span and field \
                 filters are for RUST_LOG)"
            ));
        }
    }
    Ok(())
}

/// Changes the level filter of the installed subscriber (set by [`init`]).
type SetLevel = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

static SET_LEVEL: std::sync::OnceLock<SetLevel> = std::sync::OnceLock::new();

/// `ldap3_proto` (the LDAP codec under `portcullis-ldap`) logs each message it cannot
/// decode at `error`: a peer's garbage would become the log's volume. The LDAP door counts
/// them (`portcullis_ldap_malformed_total`), so its target is off unless `text` (the
/// filter given) names it.
fn quiet_codec(filter: tracing_subscriber::EnvFilter, text: &str) -> tracing_subscriber::EnvFilter {
    if text.contains("ldap3_proto") {
        return filter;
    }
    match "ldap3_proto=off".parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    }
}

/// Install the process's log subscriber (once; later calls do nothing).
pub fn init(config: &LogConfig) {
    let env = std::env::var("RUST_LOG").unwrap_or_default();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .map(|f| quiet_codec(f, &env))
        .or_else(|_| {
            tracing_subscriber::EnvFilter::try_new(&config.level)
                .map(|f| quiet_codec(f, &config.level))
        })
        .unwrap_or_else(|_| quiet_codec(tracing_subscriber::EnvFilter::new("info"), ""));
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
            h.reload(quiet_codec(f, level)).map_err(|e| e.to_string())
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

    /// Issue 15, found by the `config_toml` fuzz target: a field filter's regular
    /// expression in `log.level` took minutes to compile (the configuration check and
    /// every SIGHUP would hang). Refused now, at once. The fuzzer's input is kept as is.
    #[test]
    fn issue_15_log_level_with_a_field_regex_is_refused_not_compiled() {
        let found = include_str!("../tests/fixtures/fuzz/config_toml-slow-log-level.toml");
        let started = std::time::Instant::now();
        let e = crate::Config::parse(found).unwrap_err().to_string();
        assert!(e.contains("log.level"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        for level in [
            "info,my_crate[span{field=/a{1000}{1000}/}]=debug",
            "x[y]=info",
        ] {
            let started = std::time::Instant::now();
            let e = LogConfig::from_file(FileLog {
                format: "text".into(),
                level: level.into(),
            })
            .unwrap_err()
            .to_string();
            assert!(e.contains("log.level"), "{e}");
            assert!(
                started.elapsed() < std::time::Duration::from_secs(5),
                "{level}"
            );
        }
        for ok in [
            "warn",
            "info,portcullis::audit=off",
            "DEBUG,hyper=warn,tokio=error",
        ] {
            assert!(
                LogConfig::from_file(FileLog {
                    format: "json".into(),
                    level: ok.into(),
                })
                .is_ok(),
                "{ok}"
            );
        }
    }
}
