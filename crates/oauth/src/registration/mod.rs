//! Dynamic client registration (RFC 7591/7592, issue 27) without HTTP: the
//! `[registration]` configuration, software statements, and the client metadata rules,
//! i.e. what a registration request may ask for and what client it becomes. The HTTP
//! endpoints are `http::register`; the records and their SQL are in the store
//! (`portcullis_store::registration`).
//!
//! A request's metadata is a JSON object; a verified software statement's claims
//! overwrite the same members. The result must fit the policy: the intersection of
//! `[registration]` and the initial access token (grant types, auth methods, scopes).
//! What we cannot serve is refused, never silently dropped: redirect URIs and response
//! types (no flow here redirects), `jwks_uri` (never fetched: a registration must not
//! make the server fetch a URL of the requester's choosing), unknown grant types and
//! methods, and RFC 8705's SAN-matching members (`tls_client_auth_san_*`: certificates
//! are matched by subject DN here).
//!
//! RFC 8705 clients: `tls_client_auth` registers `tls_client_auth_subject_dn` (a CA-issued
//! certificate with that subject); `self_signed_tls_client_auth` registers its
//! certificates inline in `jwks`, each key's `x5c` leaf (RFC 8705 2.2; never a URL). Members RFC 7591 defines for display (`client_name`, `client_uri`, ...) are
//! checked for shape and kept; members nobody defines are ignored (RFC 7591 2).

pub mod config;
pub mod statement;

use portcullis_store::{ClientAuth, Grant};
use serde_json::{Map, Value};
use subtle::ConstantTimeEq;

use config::StatementIssuer;

/// Why a registration (or an RFC 7592 update) is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegError {
    /// `invalid_client_metadata`
    InvalidMetadata(String),
    /// `invalid_redirect_uri`
    InvalidRedirectUri(String),
    /// `invalid_software_statement`
    InvalidStatement(String),
    /// `unapproved_software_statement`
    UnapprovedStatement(String),
}

impl RegError {
    /// The RFC 7591 error code.
    pub fn code(&self) -> &'static str {
        match self {
            RegError::InvalidMetadata(_) => "invalid_client_metadata",
            RegError::InvalidRedirectUri(_) => "invalid_redirect_uri",
            RegError::InvalidStatement(_) => "invalid_software_statement",
            RegError::UnapprovedStatement(_) => "unapproved_software_statement",
        }
    }

    /// The description (never a secret).
    pub fn description(&self) -> &str {
        match self {
            RegError::InvalidMetadata(d)
            | RegError::InvalidRedirectUri(d)
            | RegError::InvalidStatement(d)
            | RegError::UnapprovedStatement(d) => d,
        }
    }
}

fn bad(msg: impl Into<String>) -> RegError {
    RegError::InvalidMetadata(msg.into())
}

/// What a registration may ask for: `[registration]` narrowed by the initial access
/// token (or, for an RFC 7592 update, by what the client was registered with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowance {
    /// Grant types.
    pub grants: Vec<Grant>,
    /// `token_endpoint_auth_method` values.
    pub auth_methods: Vec<String>,
    /// Scopes.
    pub scopes: Vec<String>,
}

/// The outcome of the metadata rules: what the client is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// `client_secret_basic`, `client_secret_post`, `private_key_jwt`,
    /// `tls_client_auth` or `self_signed_tls_client_auth`.
    pub auth_method: String,
    /// How it authenticates when not by a secret: its keys, certificates or subject DN,
    /// as the store keeps them (`None`: a secret client).
    pub auth: Option<ClientAuth>,
    /// Grant types.
    pub grants: Vec<Grant>,
    /// Scopes.
    pub scopes: Vec<String>,
    /// The metadata as registered, returned to the client and stored (no secret).
    pub metadata: Map<String, Value>,
}

/// Longest string member accepted (names, URIs, software id and version), in bytes.
pub const MAX_STRING: usize = 2048;
/// Most contacts.
pub const MAX_CONTACTS: usize = 16;
/// Most certificates a `self_signed_tls_client_auth` client registers (one per key).
pub const MAX_SELF_SIGNED_CERTS: usize = 8;

/// RFC 8705 2.1.2's certificate-matching members of a `tls_client_auth` client.
const TLS_SAN_MEMBERS: [&str; 4] = [
    "tls_client_auth_san_dns",
    "tls_client_auth_san_uri",
    "tls_client_auth_san_ip",
    "tls_client_auth_san_email",
];

/// Display members RFC 7591 2 defines that are kept as strings (URIs checked as such).
const STRINGS: [(&str, bool); 7] = [
    ("client_name", false),
    ("client_uri", true),
    ("logo_uri", true),
    ("tos_uri", true),
    ("policy_uri", true),
    ("software_id", false),
    ("software_version", false),
];

/// Parse a request body: it must be one JSON object.
pub fn parse_body(body: &[u8]) -> Result<Map<String, Value>, RegError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(bad("the request body must be a JSON object")),
        Err(_) => Err(bad("the request body is not JSON")),
    }
}

/// Apply a software statement, if the request has one: verify it and let its claims
/// overwrite the request's members. Returns the merged metadata and whether a trusted
/// statement was applied.
pub fn apply_statement(
    mut request: Map<String, Value>,
    issuers: &[StatementIssuer],
    now: i64,
    skew: i64,
) -> Result<(Map<String, Value>, bool), RegError> {
    let Some(jws) = request.get("software_statement") else {
        return Ok((request, false));
    };
    let jws = jws
        .as_str()
        .ok_or_else(|| RegError::InvalidStatement("software_statement must be a string".into()))?
        .to_owned();
    let claims = statement::verify(&jws, issuers, now, skew)?;
    for (k, v) in claims {
        if !statement::JWT_CLAIMS.contains(&k.as_str()) && k != "software_statement" {
            request.insert(k, v);
        }
    }
    Ok((request, true))
}

fn string_list(m: &Map<String, Value>, name: &str) -> Result<Option<Vec<String>>, RegError> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .filter(|s| !s.is_empty() && s.len() <= MAX_STRING)
                    .map(str::to_owned)
                    .ok_or_else(|| bad(format!("{name} must be an array of non-empty strings")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(bad(format!("{name} must be an array of strings"))),
    }
}

fn uri_ok(s: &str) -> bool {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"));
    rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/'))
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Check `merged` metadata against `allow` and decide what client it describes.
pub fn decide(merged: &Map<String, Value>, allow: &Allowance) -> Result<Accepted, RegError> {
    if string_list(merged, "redirect_uris")?.is_some_and(|v| !v.is_empty()) {
        return Err(RegError::InvalidRedirectUri(
            "redirect_uris are not accepted: this server has no redirect-based flow".into(),
        ));
    }
    if string_list(merged, "response_types")?.is_some_and(|v| !v.is_empty()) {
        return Err(bad(
            "response_types must be empty: this server has no authorization endpoint",
        ));
    }
    if merged.get("jwks_uri").is_some_and(|v| !v.is_null()) {
        return Err(bad(
            "jwks_uri is not fetched by this server; send the public keys inline as jwks",
        ));
    }
    // RFC 7591 2: the default method is client_secret_basic; the default grant
    // (authorization_code) does not exist here, so the first allowed grant stands in.
    let auth_method = match merged.get("token_endpoint_auth_method") {
        None | Some(Value::Null) => "client_secret_basic".to_owned(),
        Some(Value::String(m)) => m.clone(),
        Some(_) => return Err(bad("token_endpoint_auth_method must be a string")),
    };
    if !allow.auth_methods.contains(&auth_method) {
        return Err(bad(format!(
            "token_endpoint_auth_method {auth_method:?} is not allowed (allowed: {})",
            allow.auth_methods.join(", ")
        )));
    }
    let grants = match string_list(merged, "grant_types")? {
        None => allow.grants.iter().take(1).copied().collect(),
        Some(v) if v.is_empty() => return Err(bad("grant_types must not be empty")),
        Some(v) => {
            let mut out: Vec<Grant> = Vec::new();
            for g in &v {
                let grant = g
                    .parse::<Grant>()
                    .ok()
                    .filter(|g| allow.grants.contains(g))
                    .ok_or_else(|| {
                        bad(format!(
                            "grant type {g:?} is not allowed (allowed: {})",
                            allow
                                .grants
                                .iter()
                                .map(|g| g.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })?;
                if !out.contains(&grant) {
                    out.push(grant);
                }
            }
            out
        }
    };
    let scopes = match merged.get("scope") {
        None | Some(Value::Null) => allow.scopes.clone(),
        Some(Value::String(s)) => {
            let mut out: Vec<String> = Vec::new();
            for w in s.split(' ').filter(|w| !w.is_empty()) {
                if !allow.scopes.iter().any(|a| a == w) {
                    return Err(bad(format!("scope {w:?} is not allowed")));
                }
                if !out.iter().any(|o| o == w) {
                    out.push(w.to_owned());
                }
            }
            out
        }
        Some(_) => return Err(bad("scope must be a space-separated string")),
    };
    let (auth, kept) = method_material(&auth_method, merged)?;
    let mut metadata = Map::new();
    for (name, is_uri) in STRINGS {
        match merged.get(name) {
            None | Some(Value::Null) => {}
            Some(Value::String(s))
                if !s.is_empty()
                    && s.len() <= MAX_STRING
                    && !s.chars().any(char::is_control)
                    && (!is_uri || uri_ok(s)) =>
            {
                metadata.insert(name.to_owned(), Value::String(s.clone()));
            }
            Some(_) if is_uri => return Err(bad(format!("{name} must be an http(s) URI"))),
            Some(_) => {
                return Err(bad(format!(
                    "{name} must be a string of 1-{MAX_STRING} bytes"
                )));
            }
        }
    }
    if let Some(contacts) = string_list(merged, "contacts")? {
        if contacts.len() > MAX_CONTACTS || contacts.iter().any(|c| c.chars().any(char::is_control))
        {
            return Err(bad(format!(
                "contacts: at most {MAX_CONTACTS} plain strings"
            )));
        }
        metadata.insert("contacts".into(), contacts.into());
    }
    if let Some(Value::String(s)) = merged.get("software_statement") {
        metadata.insert("software_statement".into(), Value::String(s.clone()));
    }
    metadata.insert(
        "token_endpoint_auth_method".into(),
        Value::String(auth_method.clone()),
    );
    metadata.insert(
        "grant_types".into(),
        grants.iter().map(|g| g.as_str()).collect::<Vec<_>>().into(),
    );
    metadata.insert("response_types".into(), Value::Array(Vec::new()));
    metadata.insert("scope".into(), Value::String(scopes.join(" ")));
    for (name, value) in kept {
        metadata.insert(name.to_owned(), value);
    }
    Ok(Accepted {
        auth_method,
        auth,
        grants,
        scopes,
        metadata,
    })
}

/// What a client authenticates with (`None`: a secret) and the metadata members that
/// describe it.
type Material = (Option<ClientAuth>, Vec<(&'static str, Value)>);

/// The key material `method` needs, as the store keeps it, and the metadata members
/// that describe it (returned and stored as registered): `jwks` for `private_key_jwt`
/// (normalised) and `self_signed_tls_client_auth` (as sent), the subject DN for
/// `tls_client_auth`. A member that belongs to another method is refused.
fn method_material(method: &str, merged: &Map<String, Value>) -> Result<Material, RegError> {
    let present = |name: &str| merged.get(name).is_some_and(|v| !v.is_null());
    let jwks = merged.get("jwks").filter(|v| !v.is_null());
    if jwks.is_some() && !matches!(method, "private_key_jwt" | "self_signed_tls_client_auth") {
        return Err(bad(
            "jwks is only for private_key_jwt and self_signed_tls_client_auth clients",
        ));
    }
    let dn_given = present("tls_client_auth_subject_dn");
    let sans: Vec<&str> = TLS_SAN_MEMBERS.into_iter().filter(|m| present(m)).collect();
    if method != "tls_client_auth" && (dn_given || !sans.is_empty()) {
        return Err(bad(
            "tls_client_auth_* members are only for tls_client_auth clients",
        ));
    }
    let keyed = |material: &str| {
        crate::client_auth::registration(method, material)
            .map_err(|e| bad(format!("{method}: {e}")))
    };
    match method {
        "private_key_jwt" => {
            let Some(Value::Object(doc)) = jwks else {
                return Err(bad("private_key_jwt needs the public keys inline as jwks"));
            };
            let auth = keyed(&Value::Object(doc.clone()).to_string())?;
            let ClientAuth::PrivateKeyJwt { jwks: normal } = &auth else {
                return Err(bad("jwks"));
            };
            let shown: Value = serde_json::from_str(normal).map_err(|_| bad("jwks"))?;
            Ok((Some(auth), vec![("jwks", shown)]))
        }
        "self_signed_tls_client_auth" => {
            let Some(Value::Object(doc)) = jwks else {
                return Err(bad(
                    "self_signed_tls_client_auth needs its certificates inline: jwks whose \
                     keys carry x5c (RFC 8705 2.2)",
                ));
            };
            let auth = keyed(&certificates_of(doc)?)?;
            Ok((Some(auth), vec![("jwks", Value::Object(doc.clone()))]))
        }
        "tls_client_auth" => {
            if !sans.is_empty() {
                return Err(bad(format!(
                    "{} is not supported here: register tls_client_auth_subject_dn",
                    sans.join(", ")
                )));
            }
            let dn = match merged.get("tls_client_auth_subject_dn") {
                Some(Value::String(dn)) if !dn.trim().is_empty() && dn.len() <= MAX_STRING => dn,
                _ => {
                    return Err(bad(
                        "tls_client_auth needs tls_client_auth_subject_dn (RFC 4514 string)",
                    ));
                }
            };
            let auth = keyed(dn)?;
            let ClientAuth::TlsClientAuth { subject_dn } = &auth else {
                return Err(bad("tls_client_auth_subject_dn"));
            };
            let shown = Value::String(subject_dn.clone());
            Ok((Some(auth), vec![("tls_client_auth_subject_dn", shown)]))
        }
        _ => Ok((None, Vec::new())),
    }
}

/// The PEM certificates of a `self_signed_tls_client_auth` client's `jwks`: each key's
/// `x5c` leaf (base64 DER, RFC 7517 4.7), at most [`MAX_SELF_SIGNED_CERTS`].
fn certificates_of(doc: &Map<String, Value>) -> Result<String, RegError> {
    use base64::Engine as _;
    let keys = match doc.get("keys") {
        Some(Value::Array(k)) if !k.is_empty() && k.len() <= MAX_SELF_SIGNED_CERTS => k,
        _ => {
            return Err(bad(format!(
                "jwks.keys must hold 1-{MAX_SELF_SIGNED_CERTS} keys"
            )));
        }
    };
    let mut pem = String::new();
    for (i, key) in keys.iter().enumerate() {
        let leaf = key
            .get("x5c")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("jwks.keys[{i}] has no x5c certificate")))?;
        let der = base64::engine::general_purpose::STANDARD
            .decode(leaf)
            .map_err(|_| bad(format!("jwks.keys[{i}].x5c[0] is not base64")))?;
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in b64.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(line).map_err(|_| bad("x5c"))?);
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    Ok(pem)
}

/// The intersection of two allowances (order of `a` kept).
pub fn narrow(a: &Allowance, b: &Allowance) -> Allowance {
    Allowance {
        grants: a
            .grants
            .iter()
            .filter(|g| b.grants.contains(g))
            .copied()
            .collect(),
        auth_methods: a
            .auth_methods
            .iter()
            .filter(|m| b.auth_methods.contains(m))
            .cloned()
            .collect(),
        scopes: a
            .scopes
            .iter()
            .filter(|s| b.scopes.contains(s))
            .cloned()
            .collect(),
    }
}

/// Split a presented initial access token `<id>.<secret>`; `None` if it has no such shape.
pub fn split_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 255
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    (ok(id) && ok(secret)).then_some((id, secret))
}

/// Whether `presented` hashes to `stored` ([`portcullis_store::registration::hash_token`]),
/// compared in constant time.
pub fn token_matches(presented: &str, stored: &str) -> bool {
    let h = portcullis_store::registration::hash_token(presented);
    h.as_bytes().ct_eq(stored.as_bytes()).into()
}

#[cfg(test)]
mod tests;
