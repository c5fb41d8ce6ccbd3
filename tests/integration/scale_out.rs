//! Issue #13: several instances behind a load balancer. The real client address: a
//! forwarding header counts only from a configured trusted proxy, and then throttling
//! keys on the client it names.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use portcullis_hash::pepper::PepperedHmac;
use portcullis_server::Server;
use portcullis_server::config::StoreBackend;
use portcullis_store::testing::{OwnRedis, PgSchema, free_port, shared_redis_url};
use portcullis_store::{ClientRecord, Grant, RedisTarget, RedisThrottleConfig, Secrets};

use sqlx::Connection;

use crate::server_support::{
    Answer, TestServer, form, jwt_part, post_bytes, raw, start, start_with, test_config,
};
use crate::store_cli::{ok, portcullis};

const CC: &[Grant] = &[Grant::ClientCredentials];

/// A client_credentials request carrying `X-Forwarded-For: xff`.
async fn post_via(s: &TestServer, xff: &str, id: &str, secret: &str) -> Answer {
    let req = post_bytes(
        "/oauth2/token",
        Some((id, secret)),
        &form(&[("grant_type", "client_credentials")]),
    );
    let text = String::from_utf8(req).unwrap();
    let req = text.replacen("\r\n", &format!("\r\nX-Forwarded-For: {xff}\r\n"), 1);
    s.raw(req.as_bytes()).await
}

/// The default budget per (principal, source) is 5 failures at once: 8 wrong attempts
/// from one source end in 429s.
async fn exhaust(s: &TestServer, xff: impl Fn(usize) -> String) -> Vec<u16> {
    let mut statuses = Vec::new();
    for i in 0..8 {
        statuses.push(post_via(s, &xff(i), "svc", "wrong").await.status);
    }
    statuses
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_spoofed_forwarded_for_from_an_untrusted_peer_changes_nothing() {
    // Default: no trusted proxies, loopback included.
    let s = start().await;
    let secret = s.add_client("svc", CC, &[]).await;
    // Each attempt claims another network; they are all the loopback peer's.
    let statuses = exhaust(&s, |i| format!("198.51.{i}.7")).await;
    assert_eq!(&statuses[..5], &[401; 5], "{statuses:?}");
    assert_eq!(statuses[7], 429, "{statuses:?}");
    let a = post_via(&s, "203.0.113.99", "svc", &secret).await;
    assert_eq!(
        a.status, 429,
        "a fresh claimed address must not buy a budget"
    );
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_through_a_trusted_proxy_clients_are_throttled_separately() {
    let s = start_with(|c| {
        c.trusted_proxies.ranges = vec!["127.0.0.1".parse().unwrap()];
    })
    .await;
    let secret = s.add_client("svc", CC, &[]).await;
    // Client A (198.51.100.1) guesses; it also writes addresses of its own to the left,
    // which the proxy's appended hop overrides.
    let statuses = exhaust(&s, |i| format!("10.{i}.0.1, 198.51.100.1")).await;
    assert_eq!(&statuses[..5], &[401; 5], "{statuses:?}");
    assert_eq!(statuses[7], 429, "{statuses:?}");
    let a = post_via(&s, "198.51.100.1", "svc", &secret).await;
    assert_eq!(a.status, 429, "A stays throttled");
    // Client B (203.0.113.1) behind the same proxy is not A.
    let b = post_via(&s, "203.0.113.1", "svc", &secret).await;
    assert_eq!(b.status, 200, "{:?}", String::from_utf8_lossy(&b.body));
    let metrics = s.get("/metrics").await;
    let text = String::from_utf8_lossy(&metrics.body);
    let forwarded: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("portcullis_forwarded_requests_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0);
    assert!(forwarded >= 10.0, "{forwarded}");
    // The status page says how client addresses are taken.
    let status = s.get("/status.json").await.json();
    let how = status["deployment"]["client_address"].as_str().unwrap();
    assert!(how.contains("X-Forwarded-For from 127.0.0.1/32"), "{how}");
    assert_eq!(status["deployment"]["throttle"], "in this process");
    s.server.shutdown().await.unwrap();
}

/// Instances over one PostgreSQL schema and one secrets file, through `[store] url`, and
/// (when `redis` is given) one Redis key namespace, through `[throttle] redis`.
pub(crate) struct Cluster {
    pub(crate) servers: Vec<Server>,
    pub(crate) secrets: Secrets,
    schema: PgSchema,
    _dir: tempfile::TempDir,
}

pub(crate) async fn cluster(n: usize, redis: Option<(RedisTarget, String)>) -> Cluster {
    cluster_with(n, redis, |_| {}).await
}

pub(crate) async fn cluster_with(
    n: usize,
    redis: Option<(RedisTarget, String)>,
    tweak: impl Fn(&mut portcullis_server::Config),
) -> Cluster {
    let schema = PgSchema::new().await;
    let dir = tempfile::tempdir().unwrap();
    let secrets_file = dir.path().join("shared-secrets.toml");
    let mut servers = Vec::new();
    for i in 0..n {
        let mut config = test_config(&dir.path().join(format!("instance-{i}")));
        // Behind one balancer every instance is one issuer (tokens name it in `iss`).
        config.issuer = Some("http://auth.cluster.test".into());
        config.store = StoreBackend::Postgres {
            url: schema.url(),
            secrets_file: secrets_file.clone(),
            max_connections: 4,
        };
        config.throttle_redis = redis
            .clone()
            .map(|(target, key_prefix)| RedisThrottleConfig {
                target,
                key_prefix,
                timeout: Duration::from_millis(500),
                retry: Duration::from_millis(100),
            });
        tweak(&mut config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        servers.push(Server::start(config, Some(listener)).await.unwrap());
    }
    let secrets = Secrets::load(&secrets_file).unwrap();
    Cluster {
        servers,
        secrets,
        schema,
        _dir: dir,
    }
}

impl Cluster {
    /// A client with a generated (peppered) secret, written once to the shared store.
    pub(crate) async fn add_client(&self, id: &str) -> String {
        let secret = portcullis_store::generate_client_secret().unwrap();
        let hash = PepperedHmac::create(self.secrets.peppers.current().unwrap(), secret.as_bytes());
        self.servers[0]
            .parts()
            .store
            .put_client(&ClientRecord {
                id: id.into(),
                auth: portcullis_store::ClientAuth::Secret,
                secret_hashes: vec![hash],
                grants: CC.to_vec(),
                scopes: Vec::new(),
                token_lifetime: 3600,
                created_at: 0,
            })
            .await
            .unwrap();
        secret.to_string()
    }

    pub(crate) async fn token(&self, i: usize, id: &str, secret: &str) -> Answer {
        raw(
            self.servers[i].local_addr(),
            &post_bytes(
                "/oauth2/token",
                Some((id, secret)),
                &form(&[("grant_type", "client_credentials")]),
            ),
        )
        .await
    }

    /// Wrong secrets for `id`, round-robin over the instances, from one source: the
    /// number answered 401 before the first 429, and every status.
    pub(crate) async fn spread_attack(&self, id: &str, attempts: usize) -> (usize, Vec<u16>) {
        let mut statuses = Vec::new();
        for k in 0..attempts {
            statuses.push(self.token(k % self.servers.len(), id, "wrong").await.status);
        }
        let before = statuses.iter().take_while(|s| **s == 401).count();
        (before, statuses)
    }

    pub(crate) async fn stop(self) {
        for s in self.servers {
            s.shutdown().await.unwrap();
        }
        self.schema.drop_now().await;
    }
}

pub(crate) fn unique(tag: &str) -> String {
    let mut r = [0u8; 6];
    portcullis_hash::os_random(&mut r).unwrap();
    format!(
        "it-{tag}-{}",
        r.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_a_guesser_spread_over_three_instances_gets_one_budget() {
    // Against one instance: the default 5 failures, then 429.
    let one = cluster(
        1,
        Some((RedisTarget::Node(shared_redis_url()), unique("one"))),
    )
    .await;
    one.add_client("svc").await;
    let (alone, statuses) = one.spread_attack("svc", 10).await;
    assert_eq!(alone, 5, "{statuses:?}");
    one.stop().await;

    // Three instances sharing Redis: the same number, within one per instance.
    let three = cluster(
        3,
        Some((RedisTarget::Node(shared_redis_url()), unique("three"))),
    )
    .await;
    let secret = three.add_client("svc").await;
    let (shared, statuses) = three.spread_attack("svc", 15).await;
    assert!(
        shared.abs_diff(alone) <= 3,
        "{shared} vs {alone}: {statuses:?}"
    );
    assert!(statuses[shared..].iter().all(|s| *s == 429), "{statuses:?}");
    // Every instance refuses the source now, even with the right secret.
    for i in 0..3 {
        assert_eq!(three.token(i, "svc", &secret).await.status, 429);
    }
    three.stop().await;

    // Control: the same three instances with per-process budgets give three budgets.
    let apart = cluster(3, None).await;
    apart.add_client("svc").await;
    let (separate, statuses) = apart.spread_attack("svc", 20).await;
    assert!(separate >= 3 * alone - 1, "{separate}: {statuses:?}");
    apart.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_redis_stopped_mid_run_no_5xx_and_budgets_still_enforced() {
    let redis = OwnRedis::start(free_port());
    let c = cluster(2, Some((RedisTarget::Node(redis.url()), "outage".into()))).await;
    let secret = c.add_client("svc").await;
    // Shared while Redis is up: 3 failures over both instances.
    let (_, statuses) = c.spread_attack("svc", 3).await;
    assert_eq!(statuses, [401, 401, 401]);
    redis.kill();
    // Down: every answer is 401 or 429, never 5xx, and each instance still throttles
    // on its own budget (5 failures each, counted afresh), never "unlimited".
    let (_, statuses) = c.spread_attack("svc", 24).await;
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 429),
        "{statuses:?}"
    );
    let failures = statuses.iter().filter(|s| **s == 401).count();
    assert!(failures <= 2 * 5, "{statuses:?}");
    assert_eq!(statuses[statuses.len() - 2..], [429, 429], "{statuses:?}");
    // Throttled before any check: the right secret from this source is refused too.
    assert_eq!(c.token(0, "svc", &secret).await.status, 429);
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_cli_commands_work_on_the_configured_postgres_store() {
    let schema = PgSchema::new().await;
    let dir = tempfile::tempdir().unwrap();
    let secrets = dir.path().join("etc/secrets.toml");
    let config = dir.path().join("portcullis.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nissuer = \"http://auth.cluster.test\"\n\
             [store]\nurl = \"{}\"\nsecrets_file = \"{}\"\n",
            schema.url(),
            secrets.display()
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    // `client add` through the file: the secret is shown once, the secrets file made.
    let out = portcullis(&["client", "add", "svc", "--config", cfg], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let secret = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(String::from_utf8_lossy(&out.stderr).contains("created secrets file"));
    assert!(secrets.exists());
    ok(
        &["user", "add", "alice", "--password-stdin", "--config", cfg],
        Some("correct horse\n"),
    );
    ok(
        &[
            "nas",
            "add",
            "ap1",
            "--address",
            "10.1.0.0/16",
            "--config",
            cfg,
        ],
        None,
    );
    let list: serde_json::Value =
        serde_json::from_str(&ok(&["client", "list", "--json", "--config", cfg], None)).unwrap();
    assert_eq!(list[0]["client_id"], "svc");
    // The rows are in PostgreSQL.
    let mut c = sqlx::PgConnection::connect_with(&schema.options())
        .await
        .unwrap();
    let (clients, users, nas): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM clients), (SELECT count(*) FROM users), \
         (SELECT count(*) FROM nas)",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!((clients, users, nas), (1, 1, 1));
    // An instance over the same file authenticates the client the CLI made.
    let server_config = portcullis_server::Config::load(&config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Server::start(server_config, Some(listener)).await.unwrap();
    let a = raw(
        server.local_addr(),
        &post_bytes(
            "/oauth2/token",
            Some(("svc", &secret)),
            &form(&[("grant_type", "client_credentials")]),
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    // --config and --data-dir together are refused.
    let both = portcullis(
        &["client", "list", "--config", cfg, "--data-dir", "/tmp/x"],
        None,
    );
    assert_eq!(both.status.code(), Some(2));
    server.shutdown().await.unwrap();
    schema.drop_now().await;
}

impl Cluster {
    async fn post(
        &self,
        i: usize,
        path: &str,
        auth: (&str, &str),
        pairs: &[(&str, &str)],
    ) -> Answer {
        raw(
            self.servers[i].local_addr(),
            &post_bytes(path, Some(auth), &form(pairs)),
        )
        .await
    }

    async fn jwks_kids(&self, i: usize) -> Vec<String> {
        let req = "GET /oauth2/jwks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        let a = raw(self.servers[i].local_addr(), req.as_bytes()).await;
        a.json()["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap().to_owned())
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_revocation_and_key_rotation_hold_across_instances() {
    let c = cluster(
        3,
        Some((RedisTarget::Node(shared_redis_url()), unique("keys"))),
    )
    .await;
    let secret = c.add_client("svc").await;
    let auth = ("svc", secret.as_str());
    let cc = [("grant_type", "client_credentials")];
    let mut tokens = Vec::new();
    for i in 0..3 {
        let a = c.post(i, "/oauth2/token", auth, &cc).await;
        assert_eq!(a.status, 200);
        tokens.push(a.json()["access_token"].as_str().unwrap().to_owned());
    }
    let active = |i: usize, t: String| {
        let c = &c;
        async move {
            let a = c
                .post(i, "/oauth2/introspect", auth, &[("token", &t)])
                .await;
            assert_eq!(a.status, 200);
            a.json()["active"].as_bool().unwrap()
        }
    };
    // Every instance accepts every instance's token.
    for i in 0..3 {
        for t in &tokens {
            assert!(active(i, t.clone()).await);
        }
    }
    // Revoked through A: inactive on B and C at once (the revocation is in the shared
    // store, read at each introspection).
    let r = c
        .post(0, "/oauth2/revoke", auth, &[("token", &tokens[1])])
        .await;
    assert_eq!(r.status, 200);
    assert!(!active(1, tokens[1].clone()).await);
    assert!(!active(2, tokens[1].clone()).await);
    assert!(active(2, tokens[2].clone()).await);

    // Key rotation on A (its maintenance at the successor's lead), the others' regular
    // maintenance one interval later, then the handover on A: A signs with the new key,
    // and every instance's JWKS holds it, so its tokens verify everywhere.
    let now = portcullis_server::keys::unix_now();
    let rotation = 30 * 24 * 3600;
    let old_kid = jwt_part(&tokens[0], 0)["kid"].as_str().unwrap().to_owned();
    c.servers[0]
        .parts()
        .oauth
        .keys
        .maintain(now + rotation - 120)
        .await
        .unwrap();
    for s in &c.servers[1..] {
        s.parts()
            .oauth
            .keys
            .maintain(now + rotation - 60)
            .await
            .unwrap();
    }
    c.servers[0]
        .parts()
        .oauth
        .keys
        .maintain(now + rotation)
        .await
        .unwrap();
    let a = c.post(0, "/oauth2/token", auth, &cc).await;
    let fresh = a.json()["access_token"].as_str().unwrap().to_owned();
    let new_kid = jwt_part(&fresh, 0)["kid"].as_str().unwrap().to_owned();
    assert_ne!(new_kid, old_kid);
    for i in 0..3 {
        let kids = c.jwks_kids(i).await;
        assert!(
            kids.contains(&new_kid) && kids.contains(&old_kid),
            "{i}: {kids:?}"
        );
        assert!(active(i, fresh.clone()).await, "instance {i}");
        assert!(active(i, tokens[2].clone()).await, "instance {i}, old key");
    }
    c.stop().await;
}

/// Poll `f` every 20 ms for up to 5 s (a change travels through PostgreSQL to another
/// instance: there is nothing in this process to wait on); the time it took, or `None`.
pub(crate) async fn within_5s<F, Fut>(mut f: F) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if f().await {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_a_change_on_one_instance_reaches_the_others_caches_at_once() {
    // A one-minute cache TTL: only the change feed can make B notice within seconds.
    let c = cluster_with(2, None, |cfg| {
        cfg.client_cache_ttl = Duration::from_secs(60);
    })
    .await;
    let gone = c.add_client("gone").await;
    let rotated = c.add_client("rotated").await;
    let cc = [("grant_type", "client_credentials")];
    // B reads both records into its cache.
    assert_eq!(
        c.post(1, "/oauth2/token", ("gone", &gone), &cc)
            .await
            .status,
        200
    );
    assert_eq!(
        c.post(1, "/oauth2/token", ("rotated", &rotated), &cc)
            .await
            .status,
        200
    );
    // Through A: remove one client, replace the other's secret.
    let a = c.servers[0].parts();
    assert!(a.store.remove_client("gone").await.unwrap());
    let fresh = portcullis_store::generate_client_secret().unwrap();
    let hash = PepperedHmac::create(c.secrets.peppers.current().unwrap(), fresh.as_bytes());
    a.store
        .update_client_secrets("rotated", vec![hash])
        .await
        .unwrap();
    let took = within_5s(|| async {
        c.post(1, "/oauth2/token", ("gone", &gone), &cc)
            .await
            .status
            == 401
    })
    .await;
    assert!(took.is_some(), "B still accepts a removed client");
    let took = within_5s(|| async {
        c.post(1, "/oauth2/token", ("rotated", &rotated), &cc)
            .await
            .status
            == 401
    })
    .await;
    assert!(took.is_some(), "B still accepts a replaced secret");
    assert_eq!(
        c.post(1, "/oauth2/token", ("rotated", &fresh), &cc)
            .await
            .status,
        200
    );
    // A user disabled through A stops logging in on B (whose cache holds the user).
    let store = &c.servers[0].parts().store;
    store
        .update_client_settings("rotated", &[Grant::Password], &[], 3600)
        .await
        .unwrap();
    store
        .put_user(
            &portcullis_store::UserRecord::new(
                "alice",
                crate::server_support::test_policy().hash(b"pw").unwrap(),
                0,
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let login = [
        ("grant_type", "password"),
        ("username", "alice"),
        ("password", "pw"),
    ];
    let status = || async {
        c.post(1, "/oauth2/token", ("rotated", &fresh), &login)
            .await
            .status
    };
    assert!(
        within_5s(|| async { status().await == 200 })
            .await
            .is_some()
    );
    store.set_user_disabled("alice", true).await.unwrap();
    let took = within_5s(|| async { status().await != 200 }).await;
    assert!(took.is_some(), "B still logs in a disabled user");
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_postgres_restarted_mid_run_503s_then_full_service() {
    let pg = portcullis_store::testing::OwnPostgres::start();
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&dir.path().join("data"));
    config.store = StoreBackend::Postgres {
        url: pg.url(),
        secrets_file: dir.path().join("secrets.toml"),
        max_connections: 4,
    };
    // Every request reads the store, so the outage is seen by every request.
    config.client_cache_ttl = Duration::ZERO;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Server::start(config, Some(listener)).await.unwrap();
    let secrets = Secrets::load(dir.path().join("secrets.toml")).unwrap();
    // Written before the crash: a client and a user.
    let secret = portcullis_store::generate_client_secret().unwrap();
    let hash = PepperedHmac::create(secrets.peppers.current().unwrap(), secret.as_bytes());
    let store = &server.parts().store;
    store
        .put_client(&ClientRecord {
            id: "svc".into(),
            auth: portcullis_store::ClientAuth::Secret,
            secret_hashes: vec![hash],
            grants: CC.to_vec(),
            scopes: Vec::new(),
            token_lifetime: 3600,
            created_at: 0,
        })
        .await
        .unwrap();
    store
        .put_user(
            &portcullis_store::UserRecord::new(
                "alice",
                crate::server_support::test_policy().hash(b"pw").unwrap(),
                0,
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let addr = server.local_addr();
    let token = || async {
        raw(
            addr,
            &post_bytes(
                "/oauth2/token",
                Some(("svc", secret.as_str())),
                &form(&[("grant_type", "client_credentials")]),
            ),
        )
        .await
    };
    let get = |path: &'static str| async move {
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        raw(addr, req.as_bytes()).await
    };
    assert_eq!(token().await.status, 200);
    assert_eq!(get("/readyz").await.status, 200);

    pg.crash();
    // Down: 503 with Retry-After, never a 500 and never a hang past the request timeout.
    for _ in 0..3 {
        let a = token().await;
        assert_eq!(a.status, 503, "{}", String::from_utf8_lossy(&a.body));
        assert!(a.header("retry-after").is_some());
    }
    assert_eq!(get("/readyz").await.status, 503);

    pg.start_again();
    let back = within_5s(|| async { token().await.status == 200 }).await;
    assert!(
        back.is_some(),
        "no full service within 5 s of PostgreSQL's return"
    );
    assert_eq!(get("/readyz").await.status, 200);
    let store = &server.parts().store;
    assert!(store.get_client("svc").await.unwrap().is_some());
    assert!(store.get_user("alice").await.unwrap().is_some());
    server.shutdown().await.unwrap();
}
