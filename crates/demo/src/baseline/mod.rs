//! The deliberately naive baseline token server, built the way the field reports' systems
//! were: a thread per connection reads requests and hands each to a FIXED pool of worker
//! threads (16 by default, WCF's default MaxConcurrentCalls) through an unbounded FIFO
//! queue; the worker verifies the secret with real PBKDF2 (`portcullis_hash`) and, on a
//! failure, sleeps the reject delay (`std::thread::sleep`) INSIDE the worker before
//! answering. Everything, even `/healthz` and the JWKS, goes through that pool.
//!
//! It speaks the same protocol as Portcullis (RFC 6749 token endpoint with
//! client_secret_basic/post, client_credentials and password grants; RFC 9068 JWT access
//! tokens signed with Ed25519; JWKS; RFC 8414 metadata), so the lab checks it the same way.
//! For observation only it exposes `/metrics` on a separate listener with the same metric
//! names, so the report can show its queue growing while its own port stops answering.
//!
//! [`radius`] is its RADIUS counterpart: one receive loop that hashes and sleeps inline.

mod http;
pub mod radius;

use std::collections::HashMap;
use std::io::BufReader;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signer, SigningKey};
use parking_lot::Mutex;
use portcullis_hash::Prf;
use portcullis_hash::pbkdf2::pbkdf2_hmac;

use portcullis_lab::LabError;

/// What the baseline serves and how it behaves.
#[derive(Debug, Clone)]
pub struct BaselineConfig {
    /// Fixed number of worker threads.
    pub workers: usize,
    /// Sleep inside the worker before answering a failed attempt.
    pub reject_delay: Duration,
    /// PBKDF2-HMAC-SHA256 iterations of the stored secrets.
    pub iterations: u32,
    /// OAuth clients (id, secret); secrets are hashed at start and the plaintext dropped.
    pub clients: Vec<(String, String)>,
    /// Password-grant users (name, password).
    pub users: Vec<(String, String)>,
    /// Access token lifetime.
    pub token_ttl: Duration,
}

impl Default for BaselineConfig {
    fn default() -> Self {
        BaselineConfig {
            workers: 16,
            reject_delay: Duration::from_secs(1),
            iterations: 10_000,
            clients: Vec::new(),
            users: Vec::new(),
            token_ttl: Duration::from_secs(300),
        }
    }
}

struct Stored {
    salt: [u8; 16],
    hash: [u8; 32],
}

const BUCKETS: [f64; 11] = [
    0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Shared state of the workers.
struct State {
    /// Hashed client secrets by id.
    clients: HashMap<String, Stored>,
    /// Hashed user passwords by name.
    users: HashMap<String, Stored>,
    /// Iterations (same for all).
    iterations: u32,
    /// Token signing key.
    key: SigningKey,
    /// Its JWKS `kid`.
    kid: String,
    /// `iss` of issued tokens.
    issuer: String,
    /// Token lifetime.
    ttl: Duration,
    /// The naive brute-force defence.
    reject_delay: Duration,
    /// Pre-rendered JWKS document.
    jwks: String,
    /// Pre-rendered RFC 8414 metadata.
    metadata: String,
    /// Workers busy now (metric).
    busy: AtomicUsize,
    /// Queue-wait histogram bucket counts (metric).
    wait_buckets: [AtomicU64; BUCKETS.len()],
    /// Sum of queue waits, microseconds.
    wait_sum_us: AtomicU64,
    /// Jobs started.
    wait_count: AtomicU64,
    /// Successful token requests.
    ok: AtomicU64,
    /// Failed token requests.
    failed: AtomicU64,
    /// Token ids.
    jti: AtomicU64,
    /// Set at shutdown: workers drop queued jobs.
    stop: AtomicBool,
}

struct Reply {
    status: u16,
    content_type: &'static str,
    headers: Vec<(&'static str, &'static str)>,
    body: Vec<u8>,
}

struct Job {
    req: http::Request,
    enqueued: Instant,
    reply: mpsc::SyncSender<Reply>,
}

/// A running baseline server.
pub struct Baseline {
    addr: SocketAddr,
    metrics_addr: SocketAddr,
    state: Arc<State>,
    conns: Arc<Mutex<HashMap<u64, TcpStream>>>,
    accept: Option<thread::JoinHandle<()>>,
    metrics: Option<thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Baseline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Baseline")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

fn hash_secret(secret: &str, iterations: u32) -> Result<Stored, LabError> {
    let mut salt = [0u8; 16];
    portcullis_hash::os_random(&mut salt).map_err(|e| LabError::Baseline(e.0))?;
    let mut hash = [0u8; 32];
    pbkdf2_hmac(Prf::Sha256, secret.as_bytes(), &salt, iterations, &mut hash);
    Ok(Stored { salt, hash })
}

impl Baseline {
    /// Start serving on `listener` (token endpoint) and `metrics_listener` (`/metrics`).
    pub fn start(
        listener: TcpListener,
        metrics_listener: TcpListener,
        cfg: BaselineConfig,
    ) -> Result<Baseline, LabError> {
        let io = |e: std::io::Error| LabError::Baseline(e.to_string());
        let addr = listener.local_addr().map_err(io)?;
        let metrics_addr = metrics_listener.local_addr().map_err(io)?;
        let issuer = format!("http://{addr}");
        let mut seed = [0u8; 32];
        portcullis_hash::os_random(&mut seed).map_err(|e| LabError::Baseline(e.0))?;
        let key = SigningKey::from_bytes(&seed);
        let kid = "baseline-1".to_string();
        let x = URL_SAFE_NO_PAD.encode(key.verifying_key().to_bytes());
        let mut clients = HashMap::new();
        for (id, s) in &cfg.clients {
            clients.insert(id.clone(), hash_secret(s, cfg.iterations)?);
        }
        let mut users = HashMap::new();
        for (id, s) in &cfg.users {
            users.insert(id.clone(), hash_secret(s, cfg.iterations)?);
        }
        let state = Arc::new(State {
            clients,
            users,
            iterations: cfg.iterations,
            jwks: serde_json::json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": "EdDSA", "use": "sig"}]}).to_string(),
            metadata: serde_json::json!({
                "issuer": issuer,
                "token_endpoint": format!("{issuer}/oauth2/token"),
                "jwks_uri": format!("{issuer}/oauth2/jwks"),
                "grant_types_supported": ["client_credentials", "password"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            })
            .to_string(),
            key,
            kid,
            issuer,
            ttl: cfg.token_ttl,
            reject_delay: cfg.reject_delay,
            busy: AtomicUsize::new(0),
            wait_buckets: Default::default(),
            wait_sum_us: AtomicU64::new(0),
            wait_count: AtomicU64::new(0),
            ok: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            jti: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..cfg.workers.max(1) {
            let (rx, st) = (rx.clone(), state.clone());
            thread::Builder::new()
                .name(format!("baseline-worker-{i}"))
                .spawn(move || worker(&rx, &st))
                .map_err(io)?;
        }
        let conns: Arc<Mutex<HashMap<u64, TcpStream>>> = Arc::default();
        let (st, cn) = (state.clone(), conns.clone());
        let accept = thread::Builder::new()
            .name("baseline-accept".into())
            .spawn(move || accept_loop(&listener, &tx, &st, &cn))
            .map_err(io)?;
        let st = state.clone();
        let metrics = thread::Builder::new()
            .name("baseline-metrics".into())
            .spawn(move || metrics_loop(&metrics_listener, &st))
            .map_err(io)?;
        Ok(Baseline {
            addr,
            metrics_addr,
            state,
            conns,
            accept: Some(accept),
            metrics: Some(metrics),
        })
    }

    /// Address of the token endpoint's listener.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Address of the `/metrics` listener.
    pub fn metrics_addr(&self) -> SocketAddr {
        self.metrics_addr
    }

    /// PBKDF2 iterations of the stored secrets.
    pub fn iterations(&self) -> u32 {
        self.state.iterations
    }

    /// Stop accepting, close every connection, drop queued work. Workers asleep in a reject
    /// delay finish it on their own (that is the design being demonstrated).
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accepts.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        let _ = TcpStream::connect_timeout(&self.metrics_addr, Duration::from_millis(200));
        for (_, c) in self.conns.lock().drain() {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        if let Some(h) = self.metrics.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Baseline {
    fn drop(&mut self) {
        if !self.state.stop.load(Ordering::SeqCst) {
            self.stop();
        }
    }
}

fn accept_loop(
    listener: &TcpListener,
    tx: &mpsc::Sender<Job>,
    st: &Arc<State>,
    conns: &Arc<Mutex<HashMap<u64, TcpStream>>>,
) {
    let mut next = 0u64;
    for stream in listener.incoming() {
        if st.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
        next += 1;
        let id = next;
        if let Ok(c) = stream.try_clone() {
            conns.lock().insert(id, c);
        }
        let (tx, registry) = (tx.clone(), conns.clone());
        // A thread per connection, as naive servers do; it only parses and waits.
        let spawned = thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(move || {
                connection(stream, &tx);
                registry.lock().remove(&id);
            });
        if spawned.is_err() {
            // Out of threads: drop the connection (closing it) rather than hold it open.
            if let Some(c) = conns.lock().remove(&id) {
                let _ = c.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

fn connection(stream: TcpStream, tx: &mpsc::Sender<Job>) {
    let Ok(mut w) = stream.try_clone() else {
        return;
    };
    let mut r = BufReader::new(stream);
    loop {
        let req = match http::read_request(&mut r) {
            Ok(req) => req,
            Err(http::ReadError::Bad(m)) => {
                let body = serde_json::json!({"error": "invalid_request", "error_description": m})
                    .to_string();
                let _ = http::write_response(
                    &mut w,
                    400,
                    "application/json",
                    &[],
                    body.as_bytes(),
                    true,
                );
                return;
            }
            Err(_) => return,
        };
        let close = req.close;
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        if tx
            .send(Job {
                req,
                enqueued: Instant::now(),
                reply: reply_tx,
            })
            .is_err()
        {
            return;
        }
        let Ok(rep) = reply_rx.recv() else { return };
        if http::write_response(
            &mut w,
            rep.status,
            rep.content_type,
            &rep.headers,
            &rep.body,
            close,
        )
        .is_err()
            || close
        {
            return;
        }
    }
}

fn worker(rx: &Mutex<mpsc::Receiver<Job>>, st: &State) {
    loop {
        let job = {
            let guard = rx.lock();
            guard.recv()
        };
        let Ok(job) = job else { return };
        if st.stop.load(Ordering::SeqCst) {
            continue;
        }
        let wait = job.enqueued.elapsed();
        st.wait_sum_us
            .fetch_add(wait.as_micros() as u64, Ordering::Relaxed);
        st.wait_count.fetch_add(1, Ordering::Relaxed);
        for (i, le) in BUCKETS.iter().enumerate() {
            if wait.as_secs_f64() <= *le {
                st.wait_buckets[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        st.busy.fetch_add(1, Ordering::Relaxed);
        let rep = handle(st, &job.req);
        st.busy.fetch_sub(1, Ordering::Relaxed);
        let _ = job.reply.send(rep);
    }
}

fn json(status: u16, body: String) -> Reply {
    Reply {
        status,
        content_type: "application/json",
        headers: Vec::new(),
        body: body.into_bytes(),
    }
}

fn oauth_error(status: u16, error: &str) -> Reply {
    let mut r = json(status, serde_json::json!({ "error": error }).to_string());
    if status == 401 {
        r.headers
            .push(("www-authenticate", "Basic realm=\"baseline\""));
    }
    r
}

fn handle(st: &State, req: &http::Request) -> Reply {
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/healthz") => Reply {
            status: 200,
            content_type: "text/plain",
            headers: Vec::new(),
            body: b"ok".to_vec(),
        },
        ("GET", "/oauth2/jwks") => json(200, st.jwks.clone()),
        ("GET", "/.well-known/oauth-authorization-server") => json(200, st.metadata.clone()),
        ("POST", "/oauth2/token") => token(st, req),
        (_, "/oauth2/token") => oauth_error(405, "invalid_request"),
        _ => json(404, "{}".into()),
    }
}

fn verify(map: &HashMap<String, Stored>, id: &str, secret: &str, iterations: u32) -> bool {
    let Some(s) = map.get(id) else { return false };
    let mut out = [0u8; 32];
    pbkdf2_hmac(
        Prf::Sha256,
        secret.as_bytes(),
        &s.salt,
        iterations,
        &mut out,
    );
    portcullis_hash::ct_eq(&out, &s.hash)
}

fn token(st: &State, req: &http::Request) -> Reply {
    let Some(form) = http::parse_form(&req.body) else {
        return oauth_error(400, "invalid_request");
    };
    let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let basic = req.authorization.as_deref().and_then(|a| {
        let b64 = a.strip_prefix("Basic ")?;
        let raw = String::from_utf8(STANDARD.decode(b64.trim()).ok()?).ok()?;
        let (id, secret) = raw.split_once(':')?;
        Some((http::url_decode(id)?, http::url_decode(secret)?))
    });
    let (client_id, client_secret) = match (basic, field("client_id"), field("client_secret")) {
        (Some(b), _, _) => b,
        (None, Some(id), Some(s)) => (id.to_string(), s.to_string()),
        _ => return oauth_error(401, "invalid_client"),
    };
    // The naive part: the expensive check and the brute-force delay run on this worker.
    if !verify(&st.clients, &client_id, &client_secret, st.iterations) {
        st.failed.fetch_add(1, Ordering::Relaxed);
        thread::sleep(st.reject_delay);
        return oauth_error(401, "invalid_client");
    }
    let sub = match field("grant_type") {
        Some("client_credentials") => client_id.clone(),
        Some("password") => {
            let (Some(u), Some(p)) = (field("username"), field("password")) else {
                return oauth_error(400, "invalid_request");
            };
            if !verify(&st.users, u, p, st.iterations) {
                st.failed.fetch_add(1, Ordering::Relaxed);
                thread::sleep(st.reject_delay);
                return oauth_error(400, "invalid_grant");
            }
            u.to_string()
        }
        _ => return oauth_error(400, "unsupported_grant_type"),
    };
    st.ok.fetch_add(1, Ordering::Relaxed);
    let now = portcullis_lab::clock::unix_now();
    let header = serde_json::json!({"alg": "EdDSA", "typ": "at+jwt", "kid": st.kid}).to_string();
    let mut claims = serde_json::json!({
        "iss": st.issuer,
        "sub": sub,
        "client_id": client_id,
        "aud": st.issuer,
        "iat": now,
        "exp": now + st.ttl.as_secs() as i64,
        "jti": format!("b-{}", st.jti.fetch_add(1, Ordering::Relaxed)),
    });
    if let (Some(scope), Some(obj)) = (field("scope"), claims.as_object_mut()) {
        obj.insert("scope".into(), scope.into());
    }
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let sig = URL_SAFE_NO_PAD.encode(st.key.sign(input.as_bytes()).to_bytes());
    json(
        200,
        serde_json::json!({
            "access_token": format!("{input}.{sig}"),
            "token_type": "Bearer",
            "expires_in": st.ttl.as_secs(),
        })
        .to_string(),
    )
}

fn metrics_loop(listener: &TcpListener, st: &State) {
    for stream in listener.incoming() {
        if st.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let Ok(mut w) = stream.try_clone() else {
            continue;
        };
        let mut r = BufReader::new(stream);
        if http::read_request(&mut r).is_ok() {
            let body = render_metrics(st);
            let _ = http::write_response(
                &mut w,
                200,
                "text/plain; version=0.0.4",
                &[],
                body.as_bytes(),
                true,
            );
        }
    }
}

fn render_metrics(st: &State) -> String {
    let mut s = String::new();
    s.push_str("# TYPE portcullis_pool_busy_threads gauge\n");
    s.push_str(&format!(
        "portcullis_pool_busy_threads {}\n",
        st.busy.load(Ordering::Relaxed)
    ));
    s.push_str("# TYPE portcullis_queue_wait_seconds histogram\n");
    for (i, le) in BUCKETS.iter().enumerate() {
        s.push_str(&format!(
            "portcullis_queue_wait_seconds_bucket{{le=\"{le}\"}} {}\n",
            st.wait_buckets[i].load(Ordering::Relaxed)
        ));
    }
    let count = st.wait_count.load(Ordering::Relaxed);
    s.push_str(&format!(
        "portcullis_queue_wait_seconds_bucket{{le=\"+Inf\"}} {count}\n"
    ));
    s.push_str(&format!(
        "portcullis_queue_wait_seconds_sum {}\n",
        st.wait_sum_us.load(Ordering::Relaxed) as f64 / 1e6
    ));
    s.push_str(&format!("portcullis_queue_wait_seconds_count {count}\n"));
    s.push_str("# TYPE portcullis_attempts_total counter\n");
    s.push_str(&format!(
        "portcullis_attempts_total{{outcome=\"success\",class=\"client\",protocol=\"oauth2\"}} {}\n",
        st.ok.load(Ordering::Relaxed)
    ));
    s.push_str(&format!(
        "portcullis_attempts_total{{outcome=\"failure\",class=\"client\",protocol=\"oauth2\"}} {}\n",
        st.failed.load(Ordering::Relaxed)
    ));
    s.push_str("# TYPE portcullis_shed_total counter\nportcullis_shed_total 0\n");
    s.push_str("# TYPE portcullis_throttled_total counter\nportcullis_throttled_total 0\n");
    s
}
