//! Parsing of OAuth request bodies and client credentials, written out rather than
//! delegated to an extractor because the RFCs demand behaviour extractors do not give:
//!
//! - RFC 6749 3.2: a parameter MUST NOT appear more than once (`invalid_request`);
//! - RFC 6749 3.1: a parameter sent without a value is treated as omitted;
//! - percent-decoded names and values must be UTF-8 (no lossy replacement: a mangled
//!   secret must not silently become a different secret);
//! - RFC 6749 2.3.1: `client_secret_basic` credentials are form-urlencoded before base64;
//!   using Basic and `client_secret` in the body at once is `invalid_request`.
//!
//! Every failure is an [`OAuthError`]; nothing here panics on any input.

use axum::http::{HeaderMap, header};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use zeroize::Zeroizing;

use crate::error::OAuthError;

/// Upper bound on parameters in one body: real requests have fewer than ten.
const MAX_PARAMS: usize = 32;

/// Longest client id or username we accept (longer ones cannot exist in the store).
pub const MAX_PRINCIPAL_LEN: usize = 256;

/// Longest secret we accept; bounds the work a single attempt can ask of a KDF.
pub const MAX_SECRET_LEN: usize = 1024;

/// A decoded `application/x-www-form-urlencoded` body. Values are wiped on drop because
/// some of them (`client_secret`, `password`) are secrets.
#[derive(Default)]
pub struct Form {
    pairs: Vec<(String, Zeroizing<String>)>,
}

impl std::fmt::Debug for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.pairs.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Form").field("names", &names).finish()
    }
}

impl Form {
    /// Check the content type and decode `body`.
    pub fn from_request(headers: &HeaderMap, body: &[u8]) -> Result<Form, OAuthError> {
        check_content_type(headers)?;
        Form::parse(body)
    }

    /// Decode a form body (no content-type check).
    pub fn parse(body: &[u8]) -> Result<Form, OAuthError> {
        let mut form = Form::default();
        for piece in body.split(|&b| b == b'&') {
            if piece.is_empty() {
                continue;
            }
            let (name, value) = match piece.iter().position(|&b| b == b'=') {
                Some(i) => (&piece[..i], &piece[i + 1..]),
                None => (piece, &b""[..]),
            };
            let name = decode_component(name)
                .ok_or_else(|| OAuthError::invalid_request("malformed form encoding"))?;
            let value = Zeroizing::new(
                decode_component(value)
                    .ok_or_else(|| OAuthError::invalid_request("malformed form encoding"))?,
            );
            if form.pairs.iter().any(|(k, _)| *k == name) {
                return Err(OAuthError::invalid_request(format!(
                    "parameter '{}' is repeated",
                    printable(&name)
                )));
            }
            if form.pairs.len() == MAX_PARAMS {
                return Err(OAuthError::invalid_request("too many parameters"));
            }
            form.pairs.push((name, value));
        }
        Ok(form)
    }

    /// The value of `name`, or `None` if absent or empty (RFC 6749 3.1).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// Like [`Form::get`] but absence is `invalid_request`.
    pub fn require(&self, name: &'static str) -> Result<&str, OAuthError> {
        self.get(name).ok_or_else(|| {
            OAuthError::invalid_request(format!("missing required parameter '{name}'"))
        })
    }
}

/// A parameter name quoted in an error: bounded and stripped of control characters so an
/// attacker cannot forge log lines or bloat answers.
fn printable(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(64).collect()
}

/// The request must be `application/x-www-form-urlencoded` (parameters such as
/// `charset=UTF-8` are allowed; the media type is case-insensitive).
pub fn check_content_type(headers: &HeaderMap) -> Result<(), OAuthError> {
    let ok = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(OAuthError::invalid_request(
            "content type must be application/x-www-form-urlencoded",
        ))
    }
}

/// Percent-decode one name or value (`+` is a space); `None` on a bad escape or if the
/// result is not UTF-8.
fn decode_component(raw: &[u8]) -> Option<String> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hi = hex_val(*raw.get(i + 1)?)?;
                let lo = hex_val(*raw.get(i + 2)?)?;
                out.push(hi << 4 | lo);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Which client authentication method a request used (for the discovery metadata and logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// HTTP Basic (RFC 6749 2.3.1, preferred).
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the body.
    ClientSecretPost,
}

/// Client credentials presented with a request.
pub struct ClientCredentials {
    /// The client id (not yet trusted).
    pub client_id: String,
    /// The presented secret; wiped on drop.
    pub secret: Zeroizing<Vec<u8>>,
    /// How they were presented.
    pub method: AuthMethod,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("secret", &"<redacted>")
            .field("method", &self.method)
            .finish()
    }
}

/// RFC 7523 2.2: the one `client_assertion_type` we accept.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How a request's client proves who it is.
#[derive(Debug)]
pub enum Presented {
    /// A shared secret (Basic or body).
    Secret(ClientCredentials),
    /// A `private_key_jwt` assertion (RFC 7523 2.2), with the optional `client_id`.
    Assertion {
        /// `client_id` parameter, if sent (must then match the assertion).
        client_id: Option<String>,
        /// The compact JWS.
        assertion: String,
    },
    /// Only a `client_id`: the connection's TLS client certificate is the proof (RFC 8705
    /// 2: "the client_id parameter ... is REQUIRED").
    Certificate {
        /// The claimed client.
        client_id: String,
    },
}

/// Which method the request used, with one method at most (RFC 6749 2.3: a client MUST NOT
/// use more than one authentication method in each request).
pub fn presented(headers: &HeaderMap, form: &Form) -> Result<Presented, OAuthError> {
    let assertion_type = form.get("client_assertion_type");
    let assertion = form.get("client_assertion");
    if assertion_type.is_none() && assertion.is_none() {
        let has_secret =
            headers.contains_key(header::AUTHORIZATION) || form.get("client_secret").is_some();
        if has_secret {
            return client_credentials(headers, form).map(Presented::Secret);
        }
        let id = form
            .get("client_id")
            .ok_or_else(|| OAuthError::invalid_client("client authentication required"))?;
        check_principal(id).map_err(OAuthError::invalid_client)?;
        return Ok(Presented::Certificate {
            client_id: id.to_owned(),
        });
    }
    if headers.contains_key(header::AUTHORIZATION) || form.get("client_secret").is_some() {
        return Err(OAuthError::invalid_request(
            "more than one client authentication method (an assertion and a secret)",
        ));
    }
    let (Some(kind), Some(assertion)) = (assertion_type, assertion) else {
        return Err(OAuthError::invalid_request(
            "client_assertion and client_assertion_type go together",
        ));
    };
    if kind != JWT_BEARER {
        return Err(OAuthError::invalid_client(format!(
            "unsupported client_assertion_type; use {JWT_BEARER}"
        )));
    }
    let client_id = match form.get("client_id") {
        Some(id) => {
            check_principal(id).map_err(OAuthError::invalid_client)?;
            Some(id.to_owned())
        }
        None => None,
    };
    Ok(Presented::Assertion {
        client_id,
        assertion: assertion.to_owned(),
    })
}

/// Extract client credentials from the Authorization header or the body.
pub fn client_credentials(
    headers: &HeaderMap,
    form: &Form,
) -> Result<ClientCredentials, OAuthError> {
    let mut auth_headers = headers.get_all(header::AUTHORIZATION).iter();
    let basic = match (auth_headers.next(), auth_headers.next()) {
        (None, _) => None,
        (Some(_), Some(_)) => {
            return Err(OAuthError::invalid_request(
                "more than one Authorization header",
            ));
        }
        (Some(v), None) => Some(parse_basic(v.as_bytes())?),
    };
    let body_secret = form.get("client_secret");
    let body_id = form.get("client_id");
    let creds = match (basic, body_secret) {
        (Some(_), Some(_)) => {
            return Err(OAuthError::invalid_request(
                "client authenticated with both HTTP Basic and client_secret; use one method",
            ));
        }
        (Some((id, secret)), None) => {
            // RFC 6749 permits client_id in the body alongside Basic only if it agrees.
            if body_id.is_some_and(|b| b != id) {
                return Err(OAuthError::invalid_request(
                    "client_id in the body differs from the authenticated client",
                ));
            }
            ClientCredentials {
                client_id: id,
                secret,
                method: AuthMethod::ClientSecretBasic,
            }
        }
        (None, Some(secret)) => {
            let id = body_id.ok_or_else(|| {
                OAuthError::invalid_request("client_secret given without client_id")
            })?;
            ClientCredentials {
                client_id: id.to_owned(),
                secret: Zeroizing::new(secret.as_bytes().to_vec()),
                method: AuthMethod::ClientSecretPost,
            }
        }
        (None, None) => {
            return Err(OAuthError::invalid_client("client authentication required"));
        }
    };
    check_principal(&creds.client_id).map_err(OAuthError::invalid_client)?;
    if creds.secret.len() > MAX_SECRET_LEN {
        return Err(OAuthError::invalid_client("client authentication failed"));
    }
    Ok(creds)
}

/// Reject empty, oversized or control-character principals before they reach the core.
pub fn check_principal(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        Err("empty identifier")
    } else if name.len() > MAX_PRINCIPAL_LEN {
        Err("identifier too long")
    } else if name.chars().any(char::is_control) {
        Err("identifier contains control characters")
    } else {
        Ok(())
    }
}

type Basic = (String, Zeroizing<Vec<u8>>);

/// Parse `Basic base64(urlencode(id) ":" urlencode(secret))`.
fn parse_basic(value: &[u8]) -> Result<Basic, OAuthError> {
    let malformed = || OAuthError::invalid_request("malformed Authorization header");
    let value = std::str::from_utf8(value).map_err(|_| malformed())?.trim();
    let (scheme, rest) = value.split_once(' ').ok_or_else(malformed)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(OAuthError::invalid_client(
            "unsupported authentication scheme; use Basic",
        ));
    }
    let decoded = Zeroizing::new(STANDARD.decode(rest.trim()).map_err(|_| malformed())?);
    let colon = decoded
        .iter()
        .position(|&b| b == b':')
        .ok_or_else(malformed)?;
    let id = decode_component(&decoded[..colon]).ok_or_else(malformed)?;
    let secret = Zeroizing::new(
        decode_component(&decoded[colon + 1..])
            .ok_or_else(malformed)?
            .into_bytes(),
    );
    Ok((id, secret))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use axum::http::HeaderValue;

    fn encode(pairs: &[(&str, &str)]) -> String {
        // Independent encoder: the url crate's form_urlencoded serializer.
        let mut s = form_urlencoded::Serializer::new(String::new());
        for (k, v) in pairs {
            s.append_pair(k, v);
        }
        s.finish()
    }

    #[test]
    fn decodes_what_an_independent_encoder_produces() {
        let pairs = [
            ("grant_type", "password"),
            ("username", "ann é+&=%"),
            ("password", "p@ss word/?#"),
        ];
        let f = Form::parse(encode(&pairs).as_bytes()).unwrap();
        for (k, v) in pairs {
            assert_eq!(f.get(k), Some(v));
        }
    }

    #[test]
    fn repeated_parameters_are_invalid_request() {
        let e = Form::parse(b"scope=a&grant_type=x&scope=b").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        assert!(e.description.contains("scope"));
        // Even when one of them is empty.
        assert!(Form::parse(b"scope=&scope=b").is_err());
    }

    #[test]
    fn empty_values_count_as_absent() {
        let f = Form::parse(b"scope=&grant_type=client_credentials").unwrap();
        assert_eq!(f.get("scope"), None);
        assert!(f.require("scope").is_err());
    }

    #[test]
    fn bad_escapes_and_non_utf8_are_rejected() {
        for body in [
            &b"a=%"[..],
            b"a=%4",
            b"a=%zz",
            b"a=%ff%fe",
            b"a=\xff",
            b"%c3=1",
        ] {
            assert!(Form::parse(body).is_err(), "{body:?}");
        }
    }

    #[test]
    fn too_many_parameters() {
        let body: String = (0..40).map(|i| format!("p{i}=1&")).collect();
        assert!(Form::parse(body.as_bytes()).is_err());
    }

    #[test]
    fn content_type_must_be_form() {
        let mut h = HeaderMap::new();
        assert!(check_content_type(&h).is_err());
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        assert!(check_content_type(&h).is_err());
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("Application/X-WWW-Form-Urlencoded; charset=UTF-8"),
        );
        assert!(check_content_type(&h).is_ok());
    }

    fn basic(id: &str, secret: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        let raw = format!(
            "{}:{}",
            encode(&[("x", id)])[2..].to_owned(),
            &encode(&[("x", secret)])[2..]
        );
        let v = format!("Basic {}", STANDARD.encode(raw));
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(&v).unwrap());
        h
    }

    #[test]
    fn basic_credentials_are_urldecoded() {
        let h = basic("my client", "s:e%cret");
        let c = client_credentials(&h, &Form::default()).unwrap();
        assert_eq!(c.client_id, "my client");
        assert_eq!(&c.secret[..], b"s:e%cret");
        assert_eq!(c.method, AuthMethod::ClientSecretBasic);
    }

    #[test]
    fn basic_and_post_at_once_is_invalid_request() {
        let h = basic("c", "s");
        let f = Form::parse(b"client_secret=s&client_id=c").unwrap();
        let e = client_credentials(&h, &f).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRequest);
    }

    #[test]
    fn post_credentials() {
        let f = Form::parse(b"client_secret=s&client_id=c").unwrap();
        let c = client_credentials(&HeaderMap::new(), &f).unwrap();
        assert_eq!(c.method, AuthMethod::ClientSecretPost);
        assert_eq!(c.client_id, "c");
    }

    #[test]
    fn no_credentials_is_invalid_client() {
        let e = client_credentials(&HeaderMap::new(), &Form::default()).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidClient);
    }

    #[test]
    fn malformed_authorization_headers() {
        for v in [
            &b"Basic"[..],
            b"Basic !!!!",
            b"Basic Zm9v", // "foo": no colon
            b"Basic /w==", // 0xff: not UTF-8 after decoding
            b"\xff\xfe",
        ] {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, HeaderValue::from_bytes(v).unwrap());
            let e = client_credentials(&h, &Form::default()).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidRequest, "{v:?}");
        }
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc"),
        );
        let e = client_credentials(&h, &Form::default()).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidClient);
    }

    #[test]
    fn empty_and_huge_client_ids_are_rejected() {
        let e = client_credentials(&basic("", "s"), &Form::default()).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidClient);
        let huge = "a".repeat(MAX_PRINCIPAL_LEN + 1);
        let e = client_credentials(&basic(&huge, "s"), &Form::default()).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidClient);
    }
}
