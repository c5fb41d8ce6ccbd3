//! The conventions every admin resource follows, in one place: JSON bodies within the
//! size limit with the failing field named, strong ETags and the If-Match rule (a change
//! without it is 428, with a stale one 412), keyset pages with `Link` headers, and
//! Idempotency-Key on creation (the first answer is kept, sealed, and replayed).

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http_body_util::BodyExt;
use portcullis_store::{IdempotencyRecord, StoreError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::AdminContext;
use crate::problem::Problem;

/// A successful answer, in a form that can be sealed and replayed (Idempotency-Key).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// `ETag` of the resource in the body.
    pub etag: Option<String>,
    /// `Location` of a created resource.
    pub location: Option<String>,
    /// `Link` (pagination).
    pub link: Option<String>,
    /// JSON body (empty for 204).
    #[serde(with = "b64")]
    pub body: Vec<u8>,
}

mod b64 {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        STANDARD.decode(s).map_err(serde::de::Error::custom)
    }
}

impl Reply {
    /// 200 with `value` as JSON.
    pub fn ok(value: &impl Serialize) -> Result<Reply, Problem> {
        Reply::json(StatusCode::OK, value)
    }

    /// `status` with `value` as JSON.
    pub fn json(status: StatusCode, value: &impl Serialize) -> Result<Reply, Problem> {
        let body = serde_json::to_vec(value)
            .map_err(|e| Problem::store("encoding an admin answer", &e))?;
        Ok(Reply {
            status: status.as_u16(),
            etag: None,
            location: None,
            link: None,
            body,
        })
    }

    /// 204.
    pub fn no_content() -> Reply {
        Reply {
            status: 204,
            etag: None,
            location: None,
            link: None,
            body: Vec::new(),
        }
    }

    /// With an ETag.
    pub fn etag(mut self, etag: String) -> Reply {
        self.etag = Some(etag);
        self
    }

    /// With a Location.
    pub fn location(mut self, location: String) -> Reply {
        self.location = Some(location);
        self
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK);
        let empty = self.body.is_empty();
        let mut r = (status, Body::from(self.body)).into_response();
        let h = r.headers_mut();
        if !empty {
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        for (name, v) in [
            (header::ETAG, self.etag),
            (header::LOCATION, self.location),
            (header::LINK, self.link),
        ] {
            if let Some(v) = v.and_then(|v| HeaderValue::from_str(&v).ok()) {
                h.insert(name, v);
            }
        }
        r
    }
}

/// Read a JSON body of type `T` within the limit: 415 unless `application/json`, 413
/// beyond the limit, 400 naming the field (a JSON Pointer) that does not deserialize.
pub async fn json_body<T: DeserializeOwned>(
    ctx: &AdminContext,
    headers: &HeaderMap,
    body: Body,
) -> Result<(T, Vec<u8>), Problem> {
    let bytes = read_body(ctx, headers, body).await?;
    let value = parse_json(&bytes)?;
    Ok((value, bytes))
}

/// Deserialize `bytes`, naming the failing field.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Problem> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        use serde_path_to_error::Segment;
        let mut pointer = String::new();
        for seg in e.path().iter() {
            pointer.push('/');
            match seg {
                Segment::Seq { index } => pointer.push_str(&index.to_string()),
                // RFC 6901 escaping of a key.
                Segment::Map { key } => {
                    pointer.push_str(&key.replace('~', "~0").replace('/', "~1"))
                }
                Segment::Enum { variant } => pointer.push_str(variant),
                Segment::Unknown => pointer.push('?'),
            }
        }
        let inner = e.into_inner();
        Problem::field(pointer, describe(&inner))
    })
}

/// What is wrong, in serde's words but without the value that was sent (it may be a
/// secret put in the wrong field): "invalid type: string \"x\", expected u32" becomes
/// "invalid type, expected u32".
fn describe(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    let msg = msg.split(" at line ").next().unwrap_or("malformed JSON");
    for kind in [
        "invalid type",
        "invalid value",
        "invalid length",
        "unknown variant",
    ] {
        if msg.starts_with(kind) {
            return match msg.rsplit_once(", expected ") {
                Some((_, want)) => format!("{kind}, expected {want}"),
                None => kind.to_owned(),
            };
        }
    }
    msg.to_owned()
}

/// The raw body within `admin.body_limit` (and of type JSON).
pub async fn read_body(
    ctx: &AdminContext,
    headers: &HeaderMap,
    body: Body,
) -> Result<Vec<u8>, Problem> {
    let limit = ctx.config.admin.body_limit;
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .is_some_and(|t| t == "application/json" || t.ends_with("+json"));
    if !json {
        let mut p = Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            crate::problem::kind::MEDIA_TYPE,
            "Unsupported media type",
            "the body must be application/json",
        );
        p.errors.push(crate::problem::FieldError {
            pointer: "header:Content-Type".into(),
            detail: "expected application/json".into(),
        });
        return Err(p);
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|l| l > limit as u64) {
        return Err(Problem::too_large(limit));
    }
    let mut buf = Vec::with_capacity(declared.map_or(512, |l| l as usize));
    let mut body = body;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| Problem::field("", "could not read the request body"))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                return Err(Problem::too_large(limit));
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf)
}

/// A strong ETag for a record at `version`: the version, and a digest of everything the
/// record holds (hashes included, so a record removed and made again with the same
/// version does not match an old tag).
pub fn etag(version: i64, fingerprint: &[u8]) -> String {
    let mut input = version.to_be_bytes().to_vec();
    input.extend_from_slice(fingerprint);
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &input);
    format!("\"{version}-{}\"", hex::encode(&d.as_ref()[..8]))
}

/// A digest of a record for the audit stream (the same fingerprint as the ETag's, so a
/// secret is never in it, only its hash's hash).
pub fn digest(fingerprint: &[u8]) -> String {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, fingerprint);
    format!("sha256:{}", hex::encode(&d.as_ref()[..16]))
}

/// The If-Match rule for a change of a resource whose current ETag is `current`:
/// missing 428, `*` 428 (it would overwrite blindly), a list without it 412.
pub fn check_if_match(headers: &HeaderMap, current: &str, what: &str) -> Result<(), Problem> {
    let Some(v) = headers.get(header::IF_MATCH) else {
        return Err(Problem::if_match_required());
    };
    let v = v
        .to_str()
        .map_err(|_| Problem::field("header:If-Match", "not an entity tag list"))?;
    if v.trim() == "*" {
        let mut p = Problem::if_match_required();
        p.detail = "If-Match: * would overwrite blindly; send the ETag you read".into();
        p.errors[0].detail = "* is not accepted".into();
        return Err(p);
    }
    // Strong comparison (RFC 9110 13.1.1): weak tags never match.
    if v.split(',').map(str::trim).any(|t| t == current) {
        Ok(())
    } else {
        Err(Problem::stale(what))
    }
}

/// `?limit=&after=` of a list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items per page (1-999; default `admin.page_size`).
    #[param(minimum = 1, maximum = 999)]
    pub limit: Option<u32>,
    /// Start after this key (the `next` of the previous page).
    pub after: Option<String>,
}

impl PageQuery {
    /// The page size to ask the store for, checked.
    pub fn size(&self, ctx: &AdminContext) -> Result<u32, Problem> {
        match self.limit {
            None => Ok(ctx.config.admin.page_size),
            Some(l) if (1..=MAX_PAGE).contains(&l) => Ok(l),
            Some(_) => Err(Problem::field(
                "query:limit",
                format!("must be 1-{MAX_PAGE}"),
            )),
        }
    }

    /// `after`, checked like any key.
    pub fn after(&self) -> Result<Option<&str>, Problem> {
        match self.after.as_deref() {
            None => Ok(None),
            Some(a) if a.len() <= 1024 && !a.chars().any(char::is_control) => Ok(Some(a)),
            Some(_) => Err(Problem::field("query:after", "not a key")),
        }
    }
}

/// A page: the items, the key to continue after (also as a `Link: rel="next"`).
pub fn page_reply<T: Serialize>(
    path: &str,
    size: u32,
    items: Vec<T>,
    next: Option<String>,
) -> Result<Reply, Problem> {
    #[derive(Serialize)]
    struct Page<T> {
        items: Vec<T>,
        next: Option<String>,
    }
    let link = next.as_ref().map(|n| {
        let after: String = form_encode(n);
        format!("<{path}?limit={size}&after={after}>; rel=\"next\"")
    });
    let mut r = Reply::ok(&Page { items, next })?;
    r.link = link;
    Ok(r)
}

/// Percent-encode a path segment (unreserved characters kept).
pub fn path_encode(v: &str) -> String {
    form_encode(v)
}

/// Percent-encode a query value (unreserved characters kept).
fn form_encode(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Most items per admin page (one more is read to know whether another page follows).
pub const MAX_PAGE: u32 = portcullis_store::versioned::MAX_PAGE - 1;

/// Cut a page read with one extra item (`size + 1`) to `size`; the next-page key is the
/// last kept item's key when there was more, so the last page never links to an empty
/// one.
pub fn next_key<T>(items: &mut Vec<T>, size: u32, key: impl Fn(&T) -> String) -> Option<String> {
    if items.len() > size as usize {
        items.truncate(size as usize);
        items.last().map(key)
    } else {
        None
    }
}

/// Run a creation under the request's Idempotency-Key, if it has one: the first request
/// with a key runs and its successful answer is kept (sealed under the master key: it
/// may hold a secret shown once); a retry with the same key and request gets that
/// answer again; the same key with another request is 422; while the first still runs,
/// 409. A failed request releases the key.
pub async fn idempotent<F>(
    ctx: &AdminContext,
    caller: &str,
    headers: &HeaderMap,
    (method, path, body): (&Method, &str, &[u8]),
    run: F,
) -> Result<Reply, Problem>
where
    F: Future<Output = Result<Reply, Problem>>,
{
    let Some(key) = headers.get("idempotency-key") else {
        return run.await;
    };
    let key = key
        .to_str()
        .ok()
        .filter(|k| portcullis_store::versioned::validate_idempotency_key(k).is_ok())
        .ok_or_else(|| {
            Problem::field(
                "header:Idempotency-Key",
                "must be 1-255 printable ASCII characters",
            )
        })?
        .to_owned();
    let mut input = Vec::with_capacity(body.len() + path.len() + 8);
    input.extend_from_slice(method.as_str().as_bytes());
    input.push(0);
    input.extend_from_slice(path.as_bytes());
    input.push(0);
    input.extend_from_slice(body);
    let request_digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &input)
        .as_ref()
        .to_vec();
    let now = portcullis_door::unix_now();
    let claim = IdempotencyRecord {
        principal: caller.to_owned(),
        key: key.clone(),
        request_digest: request_digest.clone(),
        response_sealed: None,
        created_at: now,
    };
    let ttl = i64::try_from(ctx.config.admin.idempotency_ttl.as_secs()).unwrap_or(86_400);
    match ctx.store.claim_idempotency_key(&claim).await {
        Ok(None) => {}
        Ok(Some(prev)) if prev.created_at + ttl <= now => {
            // Expired but not yet purged: forget it and claim afresh.
            if let Err(e) = ctx.store.purge_idempotency_keys(now - ttl + 1).await {
                return Err(Problem::store("purging idempotency keys", &e));
            }
            return Box::pin(idempotent(ctx, caller, headers, (method, path, body), run)).await;
        }
        Ok(Some(prev)) if prev.request_digest != request_digest => {
            let mut p = Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                crate::problem::kind::KEY_REUSED,
                "Idempotency-Key reused",
                "this Idempotency-Key was used for a different request",
            );
            p.errors.push(crate::problem::FieldError {
                pointer: "header:Idempotency-Key".into(),
                detail: "used before with another method, path or body".into(),
            });
            return Err(p);
        }
        Ok(Some(prev)) => {
            return match prev.response_sealed {
                None => Err(Problem::conflict(
                    "a request with this Idempotency-Key is still being processed",
                )),
                Some(sealed) => replay(ctx, caller, &key, &sealed),
            };
        }
        Err(StoreError::Conflict(_)) => {
            return Err(Problem::conflict(
                "a request with this Idempotency-Key is still being processed",
            ));
        }
        Err(e) => {
            return Err(Problem::from_store(
                e,
                "header:Idempotency-Key",
                "claiming an idempotency key",
            ));
        }
    }
    let result = run.await;
    match &result {
        Ok(reply) => {
            let plain = zeroize::Zeroizing::new(
                serde_json::to_vec(reply).map_err(|e| Problem::store("encoding a reply", &e))?,
            );
            let sealed = ctx
                .master_key
                .seal(&plain, &aad(caller, &key))
                .map_err(|e| Problem::store("sealing an idempotent reply", &e))?;
            if let Err(e) = ctx
                .store
                .complete_idempotency_key(caller, &key, &sealed)
                .await
            {
                // The change is made; a retry would find the key running (409), not
                // repeat it. Say so in the log; the caller has its answer.
                tracing::warn!("storing the answer of an Idempotency-Key failed: {e}");
            }
        }
        Err(_) => {
            if let Err(e) = ctx.store.release_idempotency_key(caller, &key).await {
                tracing::warn!("releasing an Idempotency-Key failed: {e}");
            }
        }
    }
    result
}

fn aad(caller: &str, key: &str) -> Vec<u8> {
    [
        b"portcullis-idempotency:".as_slice(),
        caller.as_bytes(),
        b"\0",
        key.as_bytes(),
    ]
    .concat()
}

fn replay(ctx: &AdminContext, caller: &str, key: &str, sealed: &[u8]) -> Result<Reply, Problem> {
    let plain = ctx
        .master_key
        .open(sealed, &aad(caller, key))
        .map_err(|e| Problem::store("opening an idempotent reply", &e))?;
    serde_json::from_slice(&plain).map_err(|e| Problem::store("decoding an idempotent reply", &e))
}

/// Encode bytes as standard base64 (for fingerprints of binary fields).
pub fn b64(v: &[u8]) -> String {
    STANDARD.encode(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_match_is_required_strong_and_not_a_wildcard() {
        let tag = etag(3, b"x");
        let mut h = HeaderMap::new();
        assert_eq!(check_if_match(&h, &tag, "client").unwrap_err().status, 428);
        h.insert(header::IF_MATCH, HeaderValue::from_static("*"));
        assert_eq!(check_if_match(&h, &tag, "client").unwrap_err().status, 428);
        h.insert(
            header::IF_MATCH,
            HeaderValue::from_str(&format!("W/{tag}")).unwrap_or(HeaderValue::from_static("")),
        );
        assert_eq!(check_if_match(&h, &tag, "client").unwrap_err().status, 412);
        h.insert(
            header::IF_MATCH,
            HeaderValue::from_str(&format!("\"other\", {tag}"))
                .unwrap_or(HeaderValue::from_static("")),
        );
        assert!(check_if_match(&h, &tag, "client").is_ok());
        assert_ne!(etag(3, b"x"), etag(3, b"y"));
        assert_ne!(etag(3, b"x"), etag(4, b"x"));
    }

    #[test]
    fn json_errors_name_the_field() {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct T {
            a: Vec<u32>,
        }
        let e = parse_json::<T>(br#"{"a":[1,"x"]}"#).unwrap_err();
        assert_eq!(e.errors[0].pointer, "/a/1");
        let e = parse_json::<T>(br#"{"b":1}"#).unwrap_err();
        assert!(e.errors[0].detail.contains("unknown field"), "{e:?}");
        let e = parse_json::<T>(br#"{"a":"hunter2"}"#).unwrap_err();
        assert_eq!(e.errors[0].pointer, "/a");
        assert!(!e.detail.contains("hunter2"), "{e:?}");
        assert!(
            e.errors[0].detail.starts_with("invalid type, expected"),
            "{e:?}"
        );
    }

    #[test]
    fn next_page_links_escape_the_key() {
        let r = page_reply("/admin/v1/clients", 2, vec![1, 2], Some("a b&c".into())).ok();
        let link = r.and_then(|r| r.link).unwrap_or_default();
        assert_eq!(
            link,
            "</admin/v1/clients?limit=2&after=a%20b%26c>; rel=\"next\""
        );
    }
}
