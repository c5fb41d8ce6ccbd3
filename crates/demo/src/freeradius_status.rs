//! FreeRADIUS's worker pool as its own status server reports it (RFC 5997 Status-Server
//! with `FreeRADIUS-Statistics-Type`, answered by the packaged `status` virtual server), so
//! the demo's "slow directory" section can say what the pool was doing, not guess from the
//! outside: requests waiting in its authentication queue, requests it dropped, requests it
//! received, and the threads of the process.

use std::net::UdpSocket;
use std::path::Path;
use std::time::Duration;

use portcullis_radius::Code;
use portcullis_radius::auth::{encode_request, verify_response};

use super::fr_files::write;
use portcullis_lab::LabError;

/// FreeRADIUS's vendor number (its dictionary).
const VENDOR: u32 = 11344;
/// `FreeRADIUS-Statistics-Type`, and the value asking for authentication and internal
/// (queue) figures.
const STATISTICS_TYPE: u8 = 127;
const AUTH_AND_INTERNAL: u32 = 0x01 | 0x10;
/// `FreeRADIUS-Total-Access-Requests`, `-Total-Auth-Dropped-Requests`, `-Queue-Len-Auth`.
const TOTAL_REQUESTS: u8 = 128;
const DROPPED: u8 = 136;
const QUEUE_LEN_AUTH: u8 = 164;

/// The status server's secret (loopback only, for the demo's own queries).
const SECRET: &str = "portcullis-demo-status";

/// One reading of the pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolSample {
    /// Access-Requests waiting for a worker now.
    pub queued: u64,
    /// Access-Requests it dropped since it started.
    pub dropped: u64,
    /// Access-Requests received since it started.
    pub requests: u64,
    /// Threads of the process now (its workers and a few of its own).
    pub threads: u64,
}

/// The `status` virtual server on `port` (in `dir`, a copy of the packaged configuration).
pub(super) fn configure(dir: &Path, port: u16) -> Result<(), LabError> {
    write(
        &dir.join("sites-enabled/status"),
        &format!(
            "server status {{\n  listen {{\n    type = status\n    ipaddr = 127.0.0.1\n    port = {port}\n  }}\n  client demo-status {{\n    ipaddr = 127.0.0.1\n    secret = {SECRET}\n  }}\n  authorize {{\n    ok\n    Autz-Type Status-Server {{\n      ok\n    }}\n  }}\n}}\n"
        ),
    )
}

/// Asks the status server on `port` and reads the threads of process `pid`.
pub(super) fn sample(port: u16, pid: u32) -> Result<PoolSample, String> {
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    socket
        .set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    let mut authenticator = [0u8; 16];
    portcullis_hash::os_random(&mut authenticator).map_err(|e| e.to_string())?;
    let mut vsa = VENDOR.to_be_bytes().to_vec();
    vsa.extend_from_slice(&[STATISTICS_TYPE, 6]);
    vsa.extend_from_slice(&AUTH_AND_INTERNAL.to_be_bytes());
    let request = encode_request(
        Code::StatusServer,
        1,
        authenticator,
        &[(portcullis_radius::attr::VENDOR_SPECIFIC, &vsa)],
        SECRET.as_bytes(),
    )
    .map_err(|e| e.to_string())?;
    socket
        .send_to(&request, ("127.0.0.1", port))
        .map_err(|e| e.to_string())?;
    let mut buf = [0u8; 4096];
    let n = socket
        .recv(&mut buf)
        .map_err(|e| format!("status server: {e}"))?;
    let reply = buf.get(..n).unwrap_or_default();
    let packet = verify_response(reply, &authenticator, SECRET.as_bytes(), false)
        .map_err(|e| e.to_string())?;
    let mut s = PoolSample {
        threads: threads(pid),
        ..PoolSample::default()
    };
    for (typ, value) in packet.attributes() {
        if typ != portcullis_radius::attr::VENDOR_SPECIFIC {
            continue;
        }
        if let Some((t, v)) = vendor_integer(value) {
            match t {
                QUEUE_LEN_AUTH => s.queued = v,
                DROPPED => s.dropped = v,
                TOTAL_REQUESTS => s.requests = v,
                _ => {}
            }
        }
    }
    Ok(s)
}

/// A FreeRADIUS vendor attribute holding one 32-bit integer: (its type, its value).
fn vendor_integer(value: &[u8]) -> Option<(u8, u64)> {
    let (vendor, rest) = value.split_first_chunk::<4>()?;
    if u32::from_be_bytes(*vendor) != VENDOR {
        return None;
    }
    match rest {
        [t, 6, a, b, c, d] => Some((*t, u64::from(u32::from_be_bytes([*a, *b, *c, *d])))),
        _ => None,
    }
}

/// The threads of process `pid` (0 when it cannot be read).
fn threads(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_freeradius_integer_attributes_are_read() {
        let mut v = VENDOR.to_be_bytes().to_vec();
        v.extend_from_slice(&[QUEUE_LEN_AUTH, 6, 0, 0, 1, 2]);
        assert_eq!(vendor_integer(&v), Some((QUEUE_LEN_AUTH, 258)));
        let mut other = 311u32.to_be_bytes().to_vec();
        other.extend_from_slice(&[QUEUE_LEN_AUTH, 6, 0, 0, 1, 2]);
        assert_eq!(vendor_integer(&other), None);
        assert_eq!(vendor_integer(&v[..7]), None);
    }
}
