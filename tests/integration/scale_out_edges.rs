//! Issues #13 and #14, continued from `scale_out.rs`: the PROXY protocol from a trusted
//! balancer, `config check` against live PostgreSQL and Redis, and an assertion replayed
//! at another instance sharing Redis.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use portcullis_store::testing::{PgSchema, free_port, shared_redis_url};
use portcullis_store::{ClientRecord, Grant, RedisTarget};

use crate::scale_out::{cluster, unique};
use crate::server_support::{form, post_bytes, raw, start_with};
use crate::store_cli::{ok, portcullis};

const CC: &[Grant] = &[Grant::ClientCredentials];

/// A PROXY protocol v2 header (HAProxy `send-proxy-v2`) naming `client` as the source.
fn proxy_v2(client: [u8; 4]) -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.extend_from_slice(&[0x21, 0x11, 0, 12]);
    h.extend_from_slice(&client);
    h.extend_from_slice(&[127, 0, 0, 1, 0x9c, 0x40, 0x1f, 0x90]);
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_proxy_protocol_v2_names_the_client_and_is_required_from_the_proxy() {
    let s = start_with(|c| {
        c.trusted_proxies.ranges = vec!["127.0.0.1".parse().unwrap()];
        c.proxy_protocol = true;
    })
    .await;
    let secret = s.add_client("svc", CC, &[]).await;
    let body = form(&[("grant_type", "client_credentials")]);
    let via = |client: [u8; 4], secret: String| {
        let mut bytes = proxy_v2(client);
        bytes.extend(post_bytes("/oauth2/token", Some(("svc", &secret)), &body));
        let addr = s.server.local_addr();
        async move { raw(addr, &bytes).await.status }
    };
    // Client A guesses through the balancer until throttled.
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(via([198, 51, 100, 1], "wrong".into()).await);
    }
    assert_eq!(&statuses[..5], &[401; 5], "{statuses:?}");
    assert_eq!(statuses[7], 429, "{statuses:?}");
    // Client B behind the same balancer is its own source.
    assert_eq!(via([203, 0, 113, 1], secret.clone()).await, 200);
    assert_eq!(via([198, 51, 100, 1], secret.clone()).await, 429);
    // From the trusted balancer the header is required: plain HTTP is closed unanswered.
    let plain = s
        .raw(&post_bytes("/oauth2/token", Some(("svc", &secret)), &body))
        .await;
    assert_eq!(plain.status, 0);
    s.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_config_check_contacts_postgres_and_redis() {
    let schema = PgSchema::new().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    let write = |redis: &str| {
        std::fs::write(
            &file,
            format!(
                "[server]\ntrusted_proxies = [\"10.0.0.0/8\"]\nissuer = \"http://auth.cluster.test\"\n\
                 [store]\nurl = \"{}\"\n\
                 secrets_file = \"{}\"\n[throttle]\nredis = \"{redis}\"\n",
                schema.url(),
                dir.path().join("s.toml").display()
            ),
        )
        .unwrap();
    };
    write(&shared_redis_url());
    let f = file.to_str().unwrap();
    let out = ok(&["config", "check", f], None);
    assert!(
        out.contains("PostgreSQL at") && out.contains("answers"),
        "{out}"
    );
    assert!(out.contains("Redis at"), "{out}");
    assert!(out.contains("does not exist yet"), "{out}");
    // Nothing was created by the check.
    assert!(!dir.path().join("s.toml").exists());
    // Redis not answering: exit 2 with one line naming it; --offline only validates.
    write(&format!("redis://127.0.0.1:{}", free_port()));
    let err = portcullis(&["config", "check", f], None);
    assert_eq!(err.status.code(), Some(2));
    let msg = String::from_utf8_lossy(&err.stderr);
    assert!(msg.contains("throttle: Redis at"), "{msg}");
    ok(&["config", "check", f, "--offline"], None);
    // A bad proxy range is a configuration error naming the field.
    std::fs::write(&file, "[server]\ntrusted_proxies = [\"10.0.0.1/8\"]\n").unwrap();
    let err = portcullis(&["config", "check", f], None);
    assert_eq!(err.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&err.stderr).contains("server.trusted_proxies"));
    schema.drop_now().await;
}

/// Issue 14: a `private_key_jwt` assertion used at one instance is a replay at every other
/// one when the instances share Redis; without Redis each instance only remembers its own
/// (the contrast shows the shared store is what catches it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_14_a_replayed_assertion_is_refused_by_another_instance_through_redis() {
    use portcullis_lab::assertion::Signer;
    use portcullis_lab::scenario::AssertionSpec;
    let keys = tempfile::tempdir().unwrap();
    let pair = portcullis_lab::certs::signing_key(keys.path(), "k", "ES256").unwrap();
    let signer = Signer::load(
        &AssertionSpec {
            key: pair.key.clone(),
            alg: None,
            audience: Some("http://auth.cluster.test/oauth2/token".into()),
            lifetime_secs: 60,
        },
        "",
    )
    .unwrap();
    let auth = portcullis_server::client_auth::registration(
        "private_key_jwt",
        &std::fs::read_to_string(&pair.cert).unwrap(),
    )
    .unwrap();
    for shared in [true, false] {
        let c = cluster(
            2,
            shared.then(|| (RedisTarget::Node(shared_redis_url()), unique("jti"))),
        )
        .await;
        let id = unique("signer");
        c.servers[0]
            .parts()
            .store
            .put_client(&ClientRecord {
                id: id.clone(),
                auth: auth.clone(),
                secret_hashes: Vec::new(),
                grants: CC.to_vec(),
                scopes: Vec::new(),
                token_lifetime: 600,
                created_at: 0,
            })
            .await
            .unwrap();
        let assertion = signer.assertion(&id).unwrap();
        let body = form(&[
            ("grant_type", "client_credentials"),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ),
            ("client_assertion", &assertion),
        ]);
        let req = post_bytes("/oauth2/token", None, &body);
        let send = |i: usize| raw(c.servers[i].local_addr(), &req);
        assert_eq!(send(0).await.status, 200);
        assert_eq!(send(0).await.status, 401, "replay at the same instance");
        let other = send(1).await;
        if shared {
            assert_eq!(
                (other.status, other.error()),
                (401, "invalid_client".into())
            );
        } else {
            assert_eq!(
                other.status, 200,
                "without Redis the other instance cannot know"
            );
        }
        c.stop().await;
    }
}
