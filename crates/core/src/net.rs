//! Network prefixes: the unit of throttling and fairness ("flow key"), and the CIDR
//! allow list of trusted sources.
//!
//! A single host controls a whole IPv6 /64 and often an IPv4 /24 is one NAT or one
//! hosting customer, so both throttling and fair queuing key on the masked prefix, not
//! the full address: an attacker cannot multiply its share by rotating addresses inside
//! the network it controls.
//!
//! Loopback sources are the exception: each loopback address is its own flow. Every
//! 127.0.0.0/8 address is this machine, so masking models no address allocation there;
//! what connects from distinct loopback addresses is distinct local clients (a local
//! proxy per tenant, test rigs, the load lab's source pools), and grouping them would
//! let one local client's failures throttle the others.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::Deserialize;

/// An address masked to a prefix length (`10.1.2.0/24`, `2001:db8::/64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpPrefix {
    /// The network address (host bits zero).
    pub addr: IpAddr,
    /// Prefix length in bits.
    pub len: u8,
}

impl IpPrefix {
    /// Mask `addr` to `v4_len` or `v6_len` bits (loopback addresses are kept whole: see
    /// the module doc). IPv4-mapped IPv6 addresses
    /// (`::ffff:a.b.c.d`, as dual-stack sockets report IPv4 peers) count as IPv4.
    pub fn of(addr: IpAddr, v4_len: u8, v6_len: u8) -> Self {
        match canonical(addr) {
            IpAddr::V4(a) => {
                let len = if a.is_loopback() { 32 } else { v4_len.min(32) };
                IpPrefix {
                    addr: IpAddr::V4(mask_v4(a, len)),
                    len,
                }
            }
            IpAddr::V6(a) => {
                let len = if a.is_loopback() {
                    128
                } else {
                    v6_len.min(128)
                };
                IpPrefix {
                    addr: IpAddr::V6(mask_v6(a, len)),
                    len,
                }
            }
        }
    }

    /// Whether `addr` lies inside this prefix.
    pub fn contains(&self, addr: IpAddr) -> bool {
        match (self.addr, canonical(addr)) {
            (IpAddr::V4(net), IpAddr::V4(a)) => mask_v4(a, self.len) == net,
            (IpAddr::V6(net), IpAddr::V6(a)) => mask_v6(a, self.len) == net,
            _ => false,
        }
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// Where an attempt comes from, as throttling and fair queuing see it: the masked
/// source address and, when that source relays for many end users (a RADIUS NAS), the
/// end user's station behind it (Calling-Station-Id, else User-Name).
///
/// Without a station every user behind a NAS would share one failure budget and one
/// fair-queuing flow: one guessing user could throttle all of them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin {
    /// The masked source address.
    pub prefix: IpPrefix,
    /// The station behind a relaying source, as the relay names it (not trusted).
    pub station: Option<String>,
}

impl Origin {
    /// An origin without a station (the peer is the end user).
    pub fn of(prefix: IpPrefix) -> Self {
        Origin {
            prefix,
            station: None,
        }
    }
}

impl fmt::Display for Origin {
    /// `10.1.2.0/24`, or `10.1.2.0/24#17=02-00-00-00-00-01` with the station's length in
    /// bytes first, so that no station text can make two origins print alike.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.station {
            None => write!(f, "{}", self.prefix),
            Some(s) => write!(f, "{}#{}={s}", self.prefix, s.len()),
        }
    }
}

/// Error parsing a CIDR string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CIDR {input:?}: {reason}")]
pub struct CidrError {
    input: String,
    reason: &'static str,
}

impl FromStr for IpPrefix {
    type Err = CidrError;

    /// Parse `a.b.c.d/n`, `x:y::/n`, or a bare address (a /32 or /128). Host bits must be
    /// zero, so a typo such as `10.0.0.1/8` is reported instead of silently widened.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| CidrError {
            input: s.to_owned(),
            reason,
        };
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = addr.trim().parse().map_err(|_| err("not an IP address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            Some(l) => l
                .trim()
                .parse::<u8>()
                .map_err(|_| err("prefix length is not a number"))?,
            None => max,
        };
        if len > max {
            return Err(err("prefix length too long for the address family"));
        }
        let p = match addr {
            IpAddr::V4(a) => IpPrefix {
                addr: IpAddr::V4(mask_v4(a, len)),
                len,
            },
            IpAddr::V6(a) => IpPrefix {
                addr: IpAddr::V6(mask_v6(a, len)),
                len,
            },
        };
        if p.addr != addr {
            return Err(err("host bits are set (did you mean the network address?)"));
        }
        Ok(p)
    }
}

impl TryFrom<String> for IpPrefix {
    type Error = CidrError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl<'de> Deserialize<'de> for IpPrefix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(a),
        },
        v4 => v4,
    }
}

fn mask_v4(a: Ipv4Addr, len: u8) -> Ipv4Addr {
    let bits = u32::from(a);
    let mask = if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len))
    };
    Ipv4Addr::from(bits & mask)
}

fn mask_v6(a: Ipv6Addr, len: u8) -> Ipv6Addr {
    let bits = u128::from(a);
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    };
    Ipv6Addr::from(bits & mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_v4_and_v6_and_mapped() {
        let p = IpPrefix::of("10.1.2.3".parse().unwrap(), 24, 64);
        assert_eq!(p.to_string(), "10.1.2.0/24");
        let p = IpPrefix::of("2001:db8:1:2:3:4:5:6".parse().unwrap(), 24, 64);
        assert_eq!(p.to_string(), "2001:db8:1:2::/64");
        let p = IpPrefix::of("::ffff:192.0.2.77".parse().unwrap(), 24, 64);
        assert_eq!(p.to_string(), "192.0.2.0/24");
        let p = IpPrefix::of("10.1.2.3".parse().unwrap(), 0, 0);
        assert_eq!(p.to_string(), "0.0.0.0/0");
    }

    #[test]
    fn issue_4_loopback_sources_are_never_grouped() {
        let a = IpPrefix::of("127.0.0.7".parse().unwrap(), 24, 64);
        let b = IpPrefix::of("127.0.0.8".parse().unwrap(), 24, 64);
        assert_eq!(a.to_string(), "127.0.0.7/32");
        assert_ne!(a, b);
        let mapped = IpPrefix::of("::ffff:127.0.0.7".parse().unwrap(), 24, 64);
        assert_eq!(mapped, a);
        let v6 = IpPrefix::of("::1".parse().unwrap(), 24, 64);
        assert_eq!(v6.to_string(), "::1/128");
        // Other private ranges keep the configured grouping.
        let lan = IpPrefix::of("192.168.1.77".parse().unwrap(), 24, 64);
        assert_eq!(lan.to_string(), "192.168.1.0/24");
    }

    #[test]
    fn parses_cidrs_and_rejects_bad_ones() {
        let p: IpPrefix = "10.0.0.0/8".parse().unwrap();
        assert!(p.contains("10.200.1.1".parse().unwrap()));
        assert!(p.contains("::ffff:10.9.9.9".parse().unwrap()));
        assert!(!p.contains("11.0.0.1".parse().unwrap()));
        assert!(!p.contains("::1".parse().unwrap()));
        let host: IpPrefix = "192.0.2.7".parse().unwrap();
        assert_eq!(host.len, 32);
        for bad in [
            "10.0.0.1/8",
            "10.0.0.0/33",
            "nope/8",
            "10.0.0.0/x",
            "::/129",
            "",
        ] {
            assert!(bad.parse::<IpPrefix>().is_err(), "{bad} parsed");
        }
    }
}
