//! `portcullis acct sessions | export`: read the RADIUS accounting the server stored
//! (issue 28), from the data directory's SQLite or the configured PostgreSQL.
//!
//! `sessions` answers "who is online" (`--active`) and "who had 10.1.2.3 at 14:02"
//! (`--address 10.1.2.3 --at 2026-11-26T14:02:00Z`); `export` writes the raw records
//! (every typed column and the attributes as received, hex) as JSON lines or CSV for
//! billing and archives. Times are given and shown as RFC 3339 UTC (unix seconds are
//! accepted too).

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, UNIX_EPOCH};

use portcullis_store::accounting::status;
use portcullis_store::{AcctRecord, AcctSession, SessionQuery};

use super::common::{DataDirArg, block_on, open, print_table};

/// `portcullis acct` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AcctCommand {
    /// List sessions (newest information folded from Start, Interim-Update and Stop).
    Sessions(SessionsArgs),
    /// Write accounting records received since a time, as JSON lines or CSV.
    Export(ExportArgs),
}

/// Arguments of `acct sessions`.
#[derive(Debug, clap::Args)]
pub struct SessionsArgs {
    /// Only this User-Name.
    #[arg(long, value_name = "USER")]
    user: Option<String>,
    /// Only this NAS (its registered name).
    #[arg(long, value_name = "NAS")]
    nas: Option<String>,
    /// Only sessions that had this address (Framed-IP-Address or Framed-IPv6-Address).
    #[arg(long, value_name = "IP")]
    address: Option<String>,
    /// Only sessions still open.
    #[arg(long)]
    active: bool,
    /// Only sessions open at this time (RFC 3339, e.g. 2026-11-26T14:02:00Z, or unix
    /// seconds).
    #[arg(long, value_name = "TIME")]
    at: Option<String>,
    /// At most this many sessions, oldest start first.
    #[arg(long, default_value_t = 1000)]
    limit: u32,
    /// Print JSON (one array of objects) instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Export formats.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// One JSON object per line.
    Jsonl,
    /// Comma-separated values with a header line.
    Csv,
}

/// Arguments of `acct export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Records received at or after this time (RFC 3339 or unix seconds).
    #[arg(long, value_name = "TIME", default_value = "0")]
    since: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    format: Format,
    /// At most this many records, oldest first.
    #[arg(long, default_value_t = 1_000_000)]
    limit: u32,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Run `portcullis acct ...`.
pub fn run(cmd: AcctCommand) -> ExitCode {
    match cmd {
        AcctCommand::Sessions(a) => block_on(sessions(a)),
        AcctCommand::Export(a) => block_on(export(a)),
    }
}

/// A time argument: unix seconds or RFC 3339.
fn parse_time(s: &str) -> Result<i64, String> {
    if let Ok(n) = s.parse::<i64>() {
        return Ok(n);
    }
    let t = humantime::parse_rfc3339_weak(s)
        .map_err(|e| format!("'{s}' is not a time like 2026-11-26T14:02:00Z ({e})"))?;
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map_err(|_| format!("'{s}' is before 1970"))?
        .as_secs();
    i64::try_from(secs).map_err(|_| format!("'{s}' is too far in the future"))
}

/// Unix seconds as RFC 3339 UTC.
fn show(t: i64) -> String {
    let at = u64::try_from(t)
        .map(|s| UNIX_EPOCH + Duration::from_secs(s))
        .unwrap_or(UNIX_EPOCH);
    humantime::format_rfc3339_seconds(at).to_string()
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}

async fn sessions(args: SessionsArgs) -> Result<ExitCode, String> {
    let query = SessionQuery {
        username: args.user,
        nas: args.nas,
        framed_ip: args.address,
        active: args.active,
        at: args.at.as_deref().map(parse_time).transpose()?,
        limit: args.limit,
    };
    let dir = open(&args.dir).await?;
    let found = dir.store().acct_sessions(&query).await;
    dir.close().await;
    let found = found.map_err(|e| e.to_string())?;
    if args.json {
        let rows: Vec<serde_json::Value> = found.iter().map(session_json).collect();
        println!("{}", serde_json::Value::Array(rows));
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 8]> = found
        .iter()
        .map(|s| {
            [
                s.nas.clone(),
                s.session_id.clone(),
                opt(&s.username),
                opt(&s.station),
                opt(&s.framed_ip),
                show(s.started_at),
                s.stopped_at.map_or_else(|| "online".to_owned(), show),
                format!(
                    "{}/{}",
                    s.input_octets.unwrap_or(0),
                    s.output_octets.unwrap_or(0)
                ),
            ]
        })
        .collect();
    print_table(
        &[
            "NAS", "SESSION", "USER", "STATION", "ADDRESS", "STARTED", "STOPPED", "IN/OUT",
        ],
        &rows,
    );
    Ok(ExitCode::SUCCESS)
}

fn session_json(s: &AcctSession) -> serde_json::Value {
    serde_json::json!({
        "nas": s.nas,
        "session_id": s.session_id,
        "user": s.username,
        "station": s.station,
        "address": s.framed_ip,
        "started_at": show(s.started_at),
        "updated_at": show(s.updated_at),
        "stopped_at": s.stopped_at.map(show),
        "online": s.stopped_at.is_none(),
        "input_octets": s.input_octets,
        "output_octets": s.output_octets,
        "session_time": s.session_time,
        "terminate_cause": s.terminate_cause,
    })
}

/// Column order of the CSV export (and keys of the JSON lines).
const COLUMNS: [&str; 17] = [
    "received_at",
    "nas",
    "session_id",
    "status",
    "event_time",
    "delay",
    "user",
    "station",
    "called_station",
    "address",
    "input_octets",
    "output_octets",
    "input_packets",
    "output_packets",
    "session_time",
    "terminate_cause",
    "attributes",
];

fn record_fields(r: &AcctRecord) -> [String; 17] {
    [
        show(r.received_at),
        r.nas.clone(),
        r.session_id.clone(),
        status::name(r.status).to_owned(),
        show(r.event_time),
        r.delay.to_string(),
        opt(&r.username),
        opt(&r.station),
        opt(&r.called_station),
        opt(&r.framed_ip),
        opt(&r.input_octets),
        opt(&r.output_octets),
        opt(&r.input_packets),
        opt(&r.output_packets),
        opt(&r.session_time),
        opt(&r.terminate_cause),
        hex::encode(&r.attributes),
    ]
}

/// RFC 4180 quoting: fields with a comma, quote or line break are quoted, quotes doubled.
fn csv_field(f: &str) -> String {
    if f.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_owned()
    }
}

async fn export(args: ExportArgs) -> Result<ExitCode, String> {
    let since = parse_time(&args.since)?;
    let dir = open(&args.dir).await?;
    let records = dir.store().acct_records_since(since, args.limit).await;
    dir.close().await;
    let records = records.map_err(|e| e.to_string())?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let io = |e: std::io::Error| format!("writing the export: {e}");
    if matches!(args.format, Format::Csv) {
        writeln!(out, "{}", COLUMNS.join(",")).map_err(io)?;
    }
    for r in &records {
        let fields = record_fields(r);
        match args.format {
            Format::Csv => {
                let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
                writeln!(out, "{}", line.join(",")).map_err(io)?;
            }
            Format::Jsonl => {
                let obj: serde_json::Map<String, serde_json::Value> = COLUMNS
                    .iter()
                    .zip(fields)
                    .map(|(k, v)| ((*k).to_owned(), v.into()))
                    .collect();
                writeln!(out, "{}", serde_json::Value::Object(obj)).map_err(io)?;
            }
        }
    }
    out.flush().map_err(io)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_28_times_parse_both_ways_and_csv_quotes() {
        assert_eq!(parse_time("1700000000"), Ok(1_700_000_000));
        assert_eq!(parse_time("2023-11-14T22:13:20Z"), Ok(1_700_000_000));
        assert!(parse_time("yesterday").is_err());
        assert_eq!(show(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }
}
