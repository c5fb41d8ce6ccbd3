//! The baseline's blocking HTTP/1.1: read one request from a socket, write one answer.
//! Strict and small: Content-Length bodies only (no chunked requests), bounded sizes, and
//! every malformed input is an error the caller answers with 400 and a close.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// Largest request head (request line + headers).
const MAX_HEAD: usize = 16 * 1024;
/// Largest request body.
const MAX_BODY: usize = 64 * 1024;

/// One parsed request.
#[derive(Debug, Default)]
pub struct Request {
    /// Method.
    pub method: String,
    /// Path (query string removed).
    pub path: String,
    /// `Authorization` header.
    pub authorization: Option<String>,
    /// `Content-Type` header.
    pub content_type: Option<String>,
    /// Whether the client asked to close after this request (or spoke HTTP/1.0).
    pub close: bool,
    /// Body bytes.
    pub body: Vec<u8>,
}

/// Why reading a request stopped.
#[derive(Debug)]
pub enum ReadError {
    /// Clean end of stream between requests.
    Closed,
    /// Socket error (or read timeout on an idle connection).
    Io,
    /// Not a request we accept; answer 400 and close.
    Bad(&'static str),
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        ReadError::Io
    }
}

/// Read one request.
pub fn read_request(r: &mut BufReader<TcpStream>) -> Result<Request, ReadError> {
    let mut head_len = 0usize;
    let mut line = String::new();
    let n = r.read_line(&mut line)?;
    if n == 0 {
        return Err(ReadError::Closed);
    }
    head_len += n;
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Bad("malformed request line"));
    };
    let mut req = Request {
        method: method.to_string(),
        path: target.split('?').next().unwrap_or(target).to_string(),
        close: version == "HTTP/1.0",
        ..Request::default()
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Bad("unsupported HTTP version"));
    }
    let mut content_length = 0usize;
    loop {
        line.clear();
        let n = r.read_line(&mut line)?;
        head_len += n;
        if n == 0 {
            return Err(ReadError::Bad("truncated head"));
        }
        if head_len > MAX_HEAD {
            return Err(ReadError::Bad("head too large"));
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let Some((name, value)) = l.split_once(':') else {
            return Err(ReadError::Bad("malformed header"));
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => {
                content_length = value
                    .parse()
                    .map_err(|_| ReadError::Bad("bad content-length"))?;
                if content_length > MAX_BODY {
                    return Err(ReadError::Bad("body too large"));
                }
            }
            "transfer-encoding" => return Err(ReadError::Bad("chunked requests not supported")),
            "authorization" => req.authorization = Some(value.to_string()),
            "content-type" => req.content_type = Some(value.to_string()),
            "connection" if value.eq_ignore_ascii_case("close") => req.close = true,
            _ => {}
        }
    }
    req.body = vec![0u8; content_length];
    r.read_exact(&mut req.body)?;
    Ok(req)
}

/// Write one response.
pub fn write_response(
    w: &mut TcpStream,
    status: u16,
    content_type: &str,
    extra_headers: &[(&str, &str)],
    body: &[u8],
    close: bool,
) -> io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Error",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\ncache-control: no-store\r\n",
        body.len()
    );
    for (k, v) in extra_headers {
        head.push_str(k);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    if close {
        head.push_str("connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut buf = head.into_bytes();
    buf.extend_from_slice(body);
    w.write_all(&buf)?;
    w.flush()
}

/// Decode `application/x-www-form-urlencoded` into pairs (None on bad escapes or UTF-8).
pub fn parse_form(body: &[u8]) -> Option<Vec<(String, String)>> {
    let s = std::str::from_utf8(body).ok()?;
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            Some((url_decode(k)?, url_decode(v)?))
        })
        .collect()
}

/// Percent-decoding with `+` as space.
pub fn url_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(h, 16).ok()?);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_decoding_handles_escapes_and_rejects_bad_ones() {
        assert_eq!(
            parse_form(b"grant_type=client_credentials&scope=a+b%2Fc").unwrap(),
            vec![
                ("grant_type".to_string(), "client_credentials".to_string()),
                ("scope".to_string(), "a b/c".to_string())
            ]
        );
        assert!(parse_form(b"a=%zz").is_none());
        assert!(parse_form(b"a=%4").is_none());
        assert!(parse_form(b"a=%C3").is_none());
    }
}
