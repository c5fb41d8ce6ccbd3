//! `portcullis apply FILE --server URL`: the resolved document ([`Declared`]) is sent to
//! a running server's `POST /admin/v1/apply`, which plans and carries it out against its
//! own store (the plan compares secrets with stored hashes, which the API never shows).
//!
//! Authentication is a bearer token: given, or obtained by `client_credentials` at the
//! token endpoint (`--token-url`: the OAuth listener is not the admin listener). HTTPS
//! trusts only the CA file given (`--ca`); `--cert`/`--key` present a client certificate
//! for admin mTLS. Answers are read within a bound; problem details are shown by their
//! `detail` and the field they name.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use thiserror::Error;
use zeroize::Zeroizing;

use super::declared::Declared;
use super::plan::ApplyResult;

/// Largest answer read, in bytes (a plan of many thousand records fits).
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;
/// Connect, send and read one exchange within this.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(300);

/// A remote apply that did not complete.
#[derive(Debug, Error)]
pub enum RemoteError {
    /// Bad arguments or files (nothing was sent).
    #[error("{0}")]
    Setup(String),
    /// The exchange failed (nothing may have been changed, or some steps may have been).
    #[error("{0}")]
    Exchange(String),
    /// The server refused or failed: its status and detail.
    #[error("the server answered {status}: {detail}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// The problem's detail (and field), or the body's first line.
        detail: String,
    },
}

/// How to reach and trust the server.
pub struct Endpoint {
    /// `http(s)://host:port` of the admin listener.
    pub server: String,
    /// PEM CA certificates trusted for HTTPS.
    pub ca: Option<PathBuf>,
    /// PEM client certificate chain and key for admin mTLS.
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

/// How to authenticate.
pub enum Credentials {
    /// A bearer token with scope `portcullis:admin:write`.
    Token(Zeroizing<String>),
    /// A client's id and secret, exchanged at `token_url` (client_credentials).
    Client {
        /// The token endpoint (`https://host:port/oauth2/token`).
        token_url: String,
        /// The client id.
        id: String,
        /// The client secret.
        secret: Zeroizing<String>,
    },
    /// None besides the client certificate (admin mTLS).
    None,
}

struct Target {
    https: bool,
    host: String,
    addr: SocketAddr,
    path_prefix: String,
}

async fn target(url: &str) -> Result<Target, RemoteError> {
    let bad = |why: &str| RemoteError::Setup(format!("{url}: {why}"));
    let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(bad("give an http:// or https:// URL")),
    };
    let host = uri.host().ok_or_else(|| bad("no host"))?.to_owned();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let bare = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let addr = tokio::net::lookup_host((bare.as_str(), port))
        .await
        .map_err(|e| bad(&format!("resolving the host: {e}")))?
        .next()
        .ok_or_else(|| bad("the host has no address"))?;
    Ok(Target {
        https,
        host: bare,
        addr,
        path_prefix: uri.path().trim_end_matches('/').to_owned(),
    })
}

fn connector(ep: &Endpoint) -> Result<tokio_rustls::TlsConnector, RemoteError> {
    use portcullis_door::pem;
    let setup = |e: String| RemoteError::Setup(e);
    let Some(ca) = &ep.ca else {
        return Err(setup(
            "an https:// server needs --ca FILE (the CA that signed its certificate)".into(),
        ));
    };
    let pem = std::fs::read(ca).map_err(|e| setup(format!("{}: {e}", ca.display())))?;
    let mut roots = rustls::RootCertStore::empty();
    let certs = pem::certs(&pem).map_err(|e| setup(format!("{}: {e}", ca.display())))?;
    for c in certs {
        roots
            .add(c)
            .map_err(|e| setup(format!("{}: {e}", ca.display())))?;
    }
    if roots.is_empty() {
        return Err(setup(format!("{}: no certificate", ca.display())));
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| setup(e.to_string()))?
        .with_root_certificates(roots);
    let config = match &ep.client_cert {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let pem = std::fs::read(cert).map_err(|e| setup(format!("{}: {e}", cert.display())))?;
            let chain = pem::certs(&pem).map_err(|e| setup(format!("{}: {e}", cert.display())))?;
            let pem = Zeroizing::new(
                std::fs::read(key).map_err(|e| setup(format!("{}: {e}", key.display())))?,
            );
            let key_der = pem::private_key(&pem)
                .map_err(|e| setup(format!("{}: {e}", key.display())))?
                .ok_or_else(|| setup(format!("{}: no private key", key.display())))?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| setup(format!("{}: {e}", cert.display())))?
        }
    };
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// One request; the status and the body (bounded).
async fn exchange(
    ep: &Endpoint,
    url: &str,
    path: &str,
    req: hyper::http::request::Builder,
    body: Vec<u8>,
) -> Result<(u16, Vec<u8>), RemoteError> {
    let t = target(url).await?;
    let xerr = |e: String| RemoteError::Exchange(format!("{url}: {e}"));
    let req = req
        .uri(format!("{}{path}", t.path_prefix))
        .header(hyper::header::HOST, format!("{}:{}", t.host, t.addr.port()))
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| RemoteError::Setup(e.to_string()))?;
    let tcp = tokio::net::TcpStream::connect(t.addr)
        .await
        .map_err(|e| xerr(format!("connecting: {e}")))?;
    let run = async {
        let resp = if t.https {
            let tls = connector(ep)?;
            let name = ServerName::try_from(t.host.clone())
                .map_err(|e| RemoteError::Setup(format!("{url}: {e}")))?;
            let stream = tls
                .connect(name, tcp)
                .await
                .map_err(|e| xerr(format!("TLS: {e}")))?;
            send(TokioIo::new(stream), req).await
        } else {
            send(TokioIo::new(tcp), req).await
        }
        .map_err(xerr)?;
        let status = resp.status().as_u16();
        let body = Limited::new(resp.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| xerr(format!("reading the answer: {e}")))?
            .to_bytes()
            .to_vec();
        Ok((status, body))
    };
    tokio::time::timeout(EXCHANGE_TIMEOUT, run)
        .await
        .map_err(|_| xerr("no answer in time".into()))?
}

async fn send<I>(
    io: I,
    req: Request<Full<Bytes>>,
) -> Result<hyper::Response<hyper::body::Incoming>, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    sender.send_request(req).await.map_err(|e| e.to_string())
}

/// The detail of an error answer: a problem's `detail` and the fields it names.
fn detail(body: &[u8]) -> String {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(v) => {
            let mut d = v["detail"]
                .as_str()
                .or_else(|| v["error_description"].as_str())
                .or_else(|| v["error"].as_str())
                .unwrap_or("no detail")
                .to_owned();
            for e in v["errors"].as_array().into_iter().flatten() {
                if let (Some(p), Some(m)) = (e["pointer"].as_str(), e["detail"].as_str()) {
                    d.push_str(&format!("; {p}: {m}"));
                }
            }
            d
        }
        Err(_) => String::from_utf8_lossy(body)
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect(),
    }
}

async fn token(
    ep: &Endpoint,
    creds: &Credentials,
) -> Result<Option<Zeroizing<String>>, RemoteError> {
    let (token_url, id, secret) = match creds {
        Credentials::None => return Ok(None),
        Credentials::Token(t) => return Ok(Some(t.clone())),
        Credentials::Client {
            token_url,
            id,
            secret,
        } => (token_url, id, secret),
    };
    let form = Zeroizing::new(
        form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "client_credentials")
            .append_pair("scope", "portcullis:admin:write")
            .append_pair("client_id", id)
            .append_pair("client_secret", secret)
            .finish(),
    );
    let req = Request::post("/").header(
        hyper::header::CONTENT_TYPE,
        "application/x-www-form-urlencoded",
    );
    // The token URL's own path is the endpoint: `exchange` joins it with "".
    let (status, body) = exchange(ep, token_url, "", req, form.as_bytes().to_vec()).await?;
    if status != 200 {
        return Err(RemoteError::Refused {
            status,
            detail: format!("at the token endpoint: {}", detail(&body)),
        });
    }
    let v: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|_| RemoteError::Exchange("the token endpoint answered no JSON".into()))?;
    v["access_token"]
        .as_str()
        .map(|t| Some(Zeroizing::new(t.to_owned())))
        .ok_or_else(|| RemoteError::Exchange("the token endpoint answered no access_token".into()))
}

/// Send `declared` to the server's `POST /admin/v1/apply`; its plan and whether it was
/// carried out.
pub async fn apply(
    ep: &Endpoint,
    creds: &Credentials,
    declared: &Declared,
    dry_run: bool,
    prune: bool,
) -> Result<ApplyResult, RemoteError> {
    let body = Zeroizing::new(
        serde_json::to_vec(declared).map_err(|e| RemoteError::Setup(e.to_string()))?,
    );
    let token = token(ep, creds).await?;
    let mut req = Request::post("/").header(hyper::header::CONTENT_TYPE, "application/json");
    if let Some(t) = &token {
        req = req.header(
            hyper::header::AUTHORIZATION,
            format!("Bearer {}", t.as_str()),
        );
    }
    let path = format!("/admin/v1/apply?dry_run={dry_run}&prune={prune}");
    let (status, answer) = exchange(ep, &ep.server, &path, req, body.to_vec()).await?;
    if status != 200 {
        return Err(RemoteError::Refused {
            status,
            detail: detail(&answer),
        });
    }
    serde_json::from_slice(&answer)
        .map_err(|e| RemoteError::Exchange(format!("{}: unexpected answer: {e}", ep.server)))
}
