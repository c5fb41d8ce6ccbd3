//! Safety rails: the lab generates real load, so it only aims at loopback unless a person
//! names another host with `--allow-target`, and every run is bounded by hard ceilings that
//! no scenario or flag can raise.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use crate::LabError;

/// Longest a repeat (or any duration in a scenario) may last.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);
/// Most requests one repeat may send.
pub const MAX_REQUESTS: u64 = 20_000_000;
/// Most repeats.
pub const MAX_REPEATS: u32 = 100;
/// Most clients (closed-loop connections, open-loop outstanding) across all groups.
pub const MAX_CLIENTS: usize = 20_000;
/// Highest open-loop arrival rate per group (per second).
pub const MAX_RATE: f64 = 500_000.0;

/// Split `http://host:port[/]` into host and port.
pub fn parse_http_url(url: &str) -> Result<(String, u16), LabError> {
    parse_url(url, "http", 80)
}

/// Split `http://` or `https://host:port[/]`: whether it is HTTPS, host and port.
pub fn parse_web_url(url: &str) -> Result<(bool, String, u16), LabError> {
    if url.starts_with("https://") {
        parse_url(url, "https", 443).map(|(h, p)| (true, h, p))
    } else if url.starts_with("http://") {
        parse_url(url, "http", 80).map(|(h, p)| (false, h, p))
    } else {
        Err(LabError::Scenario(format!(
            "target url {url:?} must start with http:// or https://"
        )))
    }
}

/// Split `scheme://host[:port]` (no path) into host and port (`default_port` if absent).
pub fn parse_url(url: &str, scheme: &str, default_port: u16) -> Result<(String, u16), LabError> {
    let rest = url
        .strip_prefix(scheme)
        .and_then(|r| r.strip_prefix("://"))
        .ok_or_else(|| {
            LabError::Scenario(format!("target url {url:?} must start with {scheme}://"))
        })?;
    let rest = rest.trim_end_matches('/');
    if rest.contains('/') || rest.contains('@') || rest.is_empty() {
        return Err(LabError::Scenario(format!(
            "target url {url:?} must be {scheme}://host[:port] with no path"
        )));
    }
    let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
        let (h, p) = inner
            .split_once(']')
            .ok_or_else(|| LabError::Scenario(format!("target url {url:?}: bad IPv6 literal")))?;
        (h.to_string(), p.strip_prefix(':').unwrap_or(""))
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p),
            None => (rest.to_string(), ""),
        }
    };
    let port = if port.is_empty() {
        default_port
    } else {
        port.parse()
            .map_err(|_| LabError::Scenario(format!("target url {url:?}: bad port {port:?}")))?
    };
    Ok((host, port))
}

/// Resolve the target and refuse anything that is not loopback unless `allowed` names the
/// host exactly. Returns the address to connect to.
pub fn check_target(host: &str, port: u16, allowed: &[String]) -> Result<SocketAddr, LabError> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| LabError::Target(format!("cannot resolve {host}: {e}")))?
        .collect();
    let first = *addrs
        .first()
        .ok_or_else(|| LabError::Target(format!("{host} resolves to no address")))?;
    let all_loopback = addrs.iter().all(|a| a.ip().is_loopback());
    if all_loopback || allowed.iter().any(|a| a == host) {
        Ok(first)
    } else {
        Err(LabError::Target(format!(
            "{host} ({}) is not a loopback address; the lab only loads loopback targets \
             unless you pass --allow-target {host}",
            first.ip()
        )))
    }
}

/// Refuse source addresses that cannot reach a loopback target (non-loopback sources are
/// allowed only with an allowed remote target).
pub fn check_sources(sources: &[IpAddr], target: SocketAddr) -> Result<(), LabError> {
    if target.ip().is_loopback()
        && let Some(s) = sources.iter().find(|s| !s.is_loopback())
    {
        return Err(LabError::Scenario(format!(
            "source address {s} is not loopback but the target is"
        )));
    }
    Ok(())
}

/// Read a file a scenario names, refusing anything but a regular file of at most `limit`
/// bytes (a scenario naming `/dev/zero` or a huge file gets an error, not a hang).
pub fn read_file(path: &std::path::Path, limit: u64) -> Result<Vec<u8>, LabError> {
    use std::io::Read;
    let bad = |e: &dyn std::fmt::Display| {
        LabError::Scenario(format!("cannot read {}: {e}", path.display()))
    };
    let f = std::fs::File::open(path).map_err(|e| bad(&e))?;
    let meta = f.metadata().map_err(|e| bad(&e))?;
    if !meta.is_file() {
        return Err(bad(&"not a regular file"));
    }
    if meta.len() > limit {
        return Err(bad(&format!("larger than {limit} bytes")));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    f.take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| bad(&e))?;
    if out.len() as u64 > limit {
        return Err(bad(&format!("larger than {limit} bytes")));
    }
    Ok(out)
}
