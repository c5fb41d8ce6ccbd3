//! Fuzz what the HTTP front door parses before any credential is checked: the token
//! request (form body with its Content-Type and Authorization headers), the client
//! address from forwarding headers (`X-Forwarded-For`, RFC 7239 `Forwarded`) and the
//! PROXY protocol v2 header (issue 13). The first byte picks the parser; the rest is
//! the input. Every outcome must be a value or an error, never a panic.
#![no_main]

use std::net::{IpAddr, SocketAddr};

use hyper::HeaderMap;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use portcullis_server::door::forwarded::{ForwardedHeader, TrustedProxies};
use portcullis_server::http::form::{Form, client_credentials};
use portcullis_server::door::proxy_protocol;

/// Header lines of `data`: `\n`-separated values, skipping what HTTP could not carry.
fn headers(name: HeaderName, data: &[u8]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for line in data.split(|&b| b == b'\n') {
        if let Ok(v) = HeaderValue::from_bytes(line) {
            h.append(name.clone(), v);
        }
    }
    h
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 4 {
        0 => {
            // A token request: Authorization header lines, then a blank line, the body.
            let (auth, body) = match rest.windows(2).position(|w| w == b"\n\n") {
                Some(i) => (&rest[..i], &rest[i + 2..]),
                None => (&b""[..], rest),
            };
            let mut h = headers(AUTHORIZATION, auth);
            h.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            );
            if let Ok(form) = Form::from_request(&h, body) {
                let _ = client_credentials(&h, &form);
            }
        }
        1 | 2 => {
            let header = if which % 4 == 1 {
                ForwardedHeader::XForwardedFor
            } else {
                ForwardedHeader::Forwarded
            };
            let name = if which % 4 == 1 {
                HeaderName::from_static("x-forwarded-for")
            } else {
                HeaderName::from_static("forwarded")
            };
            let proxies = TrustedProxies {
                ranges: vec!["10.0.0.0/8".parse().unwrap(), "::1".parse().unwrap()],
                header,
            };
            let peer: IpAddr = "10.0.0.1".parse().unwrap();
            let _ = proxies.client_addr(peer, &headers(name, rest));
        }
        _ => {
            let Some(head) = rest.get(..16) else {
                return;
            };
            let head: [u8; 16] = head.try_into().unwrap();
            if let Ok((command, family, len)) = proxy_protocol::parse_prefix(&head) {
                let block = &rest[16..];
                let block = &block[..len.min(block.len())];
                let peer = SocketAddr::from(([127, 0, 0, 1], 1));
                let _ = proxy_protocol::source(command, family, block).map(|s| s.unwrap_or(peer));
            }
        }
    }
});
