//! The real client address behind a load balancer (issue 13).
//!
//! Behind a proxy every connection comes from the proxy, so per-source fairness and
//! throttling would see one source; trusting a forwarding header from anyone would let
//! every client pick its own source. The rule here: only when the connection's peer lies
//! in `[server] trusted_proxies` is the configured header read, and then from its right
//! end (the hop the trusted proxy itself appended) leftwards, skipping hops that are
//! trusted proxies too; the first untrusted hop is the client. Everything left of it was
//! written by the client and is ignored. A hop that cannot be read (`unknown`, an
//! obfuscated name, garbage) ends the walk at the last trusted hop, so all such
//! requests share that proxy's budget rather than choosing their own.
//!
//! The header is one the operator names (`forwarded_header`), never "whichever is
//! present": a proxy that appends `X-Forwarded-For` passes a client's own `Forwarded`
//! through untouched, and reading that would hand the choice to the client.

use std::net::IpAddr;

use hyper::HeaderMap;
use portcullis_core::net::IpPrefix;
use serde::Deserialize;

/// Which header the trusted proxies write the client address into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1` (HAProxy `option forwardfor`, nginx
    /// `$proxy_add_x_forwarded_for`).
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client;proto=https, for="[2001:db8::1]:4711"`.
    Forwarded,
}

/// The proxies whose forwarding headers are believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies {
    /// Peers in these ranges are proxies; empty (the default) trusts none, loopback
    /// included.
    pub ranges: Vec<IpPrefix>,
    /// The header they write.
    pub header: ForwardedHeader,
}

impl TrustedProxies {
    /// Whether `addr` is one of the trusted proxies.
    pub fn trusts(&self, addr: IpAddr) -> bool {
        self.ranges.iter().any(|r| r.contains(addr))
    }

    /// The client address of a request that arrived from `peer` with `headers`.
    pub fn client_addr(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let name = match self.header {
            ForwardedHeader::XForwardedFor => "x-forwarded-for",
            ForwardedHeader::Forwarded => "forwarded",
        };
        // Several header lines are one list, in order (RFC 9110 §5.3).
        let mut hops: Vec<Option<IpAddr>> = Vec::new();
        for value in headers.get_all(name) {
            let Ok(text) = value.to_str() else {
                // Not visible ASCII: unreadable from here leftwards.
                hops.push(None);
                continue;
            };
            for element in text.split(',') {
                hops.push(match self.header {
                    ForwardedHeader::XForwardedFor => parse_node(element.trim()),
                    ForwardedHeader::Forwarded => forwarded_for(element),
                });
            }
        }
        self.walk(peer, &hops)
    }

    /// From the right: skip trusted hops; the first untrusted one is the client; an
    /// unreadable one stops at the last trusted address seen.
    fn walk(&self, peer: IpAddr, hops: &[Option<IpAddr>]) -> IpAddr {
        let mut last_trusted = peer;
        for hop in hops.iter().rev() {
            match hop {
                Some(a) if self.trusts(*a) => last_trusted = *a,
                Some(a) => return *a,
                None => return last_trusted,
            }
        }
        last_trusted
    }
}

/// The `for=` node of one RFC 7239 forwarded-element (`for=...;proto=...`).
fn forwarded_for(element: &str) -> Option<IpAddr> {
    element.split(';').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        if !k.trim().eq_ignore_ascii_case("for") {
            return None;
        }
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(v);
        parse_node(v)
    })
}

/// A node: `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]`, `[2001:db8::1]:4711`, or a
/// bare IPv6 address (as X-Forwarded-For writes it). `unknown` and obfuscated
/// identifiers (`_hidden`) are not addresses.
fn parse_node(node: &str) -> Option<IpAddr> {
    if let Ok(a) = node.parse::<IpAddr>() {
        return Some(a);
    }
    if let Some(rest) = node.strip_prefix('[') {
        let (addr, tail) = rest.split_once(']')?;
        if !(tail.is_empty() || valid_port(tail.strip_prefix(':')?)) {
            return None;
        }
        return addr.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6);
    }
    let (addr, port) = node.rsplit_once(':')?;
    if !valid_port(port) {
        return None;
    }
    addr.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

/// A port number (RFC 7239 also allows an obfuscated `_port`, which says nothing here).
fn valid_port(p: &str) -> bool {
    p.parse::<u16>().is_ok() || (p.starts_with('_') && p.len() > 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn proxies(ranges: &[&str], header: ForwardedHeader) -> TrustedProxies {
        TrustedProxies {
            ranges: ranges.iter().map(|r| r.parse().unwrap()).collect(),
            header,
        }
    }

    fn headers(name: &'static str, values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(name, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_says() {
        let p = proxies(&[], ForwardedHeader::XForwardedFor);
        let h = headers("x-forwarded-for", &["203.0.113.9"]);
        assert_eq!(p.client_addr(ip("127.0.0.1"), &h), ip("127.0.0.1"));
        let p = proxies(&["10.0.0.0/8"], ForwardedHeader::XForwardedFor);
        assert_eq!(p.client_addr(ip("192.0.2.7"), &h), ip("192.0.2.7"));
    }

    #[test]
    fn the_right_most_untrusted_hop_is_the_client_and_spoofed_hops_are_ignored() {
        let p = proxies(&["10.0.0.0/8"], ForwardedHeader::XForwardedFor);
        // The client wrote "1.2.3.4" itself; the trusted proxy appended its real address.
        let h = headers("x-forwarded-for", &["1.2.3.4, 198.51.100.20"]);
        assert_eq!(p.client_addr(ip("10.0.0.5"), &h), ip("198.51.100.20"));
        // Two trusted proxies in a row, and the list spread over two header lines.
        let h = headers("x-forwarded-for", &["1.2.3.4, 198.51.100.20", "10.1.1.1"]);
        assert_eq!(p.client_addr(ip("10.0.0.5"), &h), ip("198.51.100.20"));
        // IPv6 hop.
        let h = headers("x-forwarded-for", &["2001:db8::7"]);
        assert_eq!(p.client_addr(ip("10.0.0.5"), &h), ip("2001:db8::7"));
    }

    #[test]
    fn an_unreadable_hop_stops_at_the_last_trusted_address() {
        let p = proxies(&["10.0.0.0/8"], ForwardedHeader::XForwardedFor);
        for bad in ["unknown", "not an address", "1.2.3.4, garbage", ""] {
            let h = headers("x-forwarded-for", &[bad]);
            assert_eq!(p.client_addr(ip("10.0.0.5"), &h), ip("10.0.0.5"), "{bad}");
        }
        let h = headers("x-forwarded-for", &["198.51.100.1, unknown, 10.9.9.9"]);
        assert_eq!(p.client_addr(ip("10.0.0.5"), &h), ip("10.9.9.9"));
        // No header at all: the proxy itself.
        assert_eq!(
            p.client_addr(ip("10.0.0.5"), &HeaderMap::new()),
            ip("10.0.0.5")
        );
    }

    #[test]
    fn rfc_7239_forwarded_elements() {
        let p = proxies(&["10.0.0.0/8"], ForwardedHeader::Forwarded);
        let h = headers(
            "forwarded",
            &[r#"for=1.2.3.4, for="[2001:db8:cafe::17]:4711";proto=https;by=10.0.0.5"#],
        );
        assert_eq!(p.client_addr(ip("10.0.0.5"), &h), ip("2001:db8:cafe::17"));
        let h = headers("forwarded", &["proto=http;For=\"192.0.2.60:8080\""]);
        assert_eq!(p.client_addr(ip("10.0.0.5"), &h), ip("192.0.2.60"));
        let h = headers("forwarded", &["for=_hidden, for=10.2.2.2"]);
        assert_eq!(p.client_addr(ip("10.0.0.5"), &h), ip("10.2.2.2"));
        // Configured for Forwarded: an X-Forwarded-For is not read.
        let h = headers("x-forwarded-for", &["198.51.100.20"]);
        assert_eq!(p.client_addr(ip("10.0.0.5"), &h), ip("10.0.0.5"));
    }

    #[test]
    fn nodes() {
        assert_eq!(parse_node("192.0.2.1:80"), Some(ip("192.0.2.1")));
        assert_eq!(parse_node("[::1]"), Some(ip("::1")));
        assert_eq!(parse_node("[::1]:_p"), Some(ip("::1")));
        assert_eq!(parse_node("[::1]x"), None);
        assert_eq!(parse_node("192.0.2.1:99999"), None);
        assert_eq!(parse_node("[192.0.2.1]"), None);
    }
}
