//! Issue 27: configuration as code. `portcullis apply FILE` (the real binary) against a
//! data directory's SQLite and a shared PostgreSQL; what it did is checked in the store
//! (records and their versions, which every write bumps), not in its output alone.
// Test code: a failed step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use portcullis_hash::{Credential, Peppers};
use portcullis_store::registration::{ClientRegistration, hash_token};
use portcullis_store::testing::PgSchema;
use portcullis_store::{ClientAuth, ClientRecord, DataDir, Grant, NasRecord, Store, UserRecord};

use crate::server_support::test_policy;

const NAS_SECRET: &str = "nas-shared-secret-from-env-0123";
const BILLING_SECRET: &str = "billing-chosen-secret-value-456";

pub(crate) fn apply(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_portcullis"))
        .arg("apply")
        .args(args)
        .env_remove("PORTCULLIS_DATA_DIR")
        .env("APPLY_TEST_NAS_SECRET", NAS_SECRET)
        .output()
        .unwrap()
}

/// Run apply; require success and no secret in anything it printed; return stdout.
pub(crate) fn apply_ok(args: &[&str]) -> String {
    let out = apply(args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{args:?}: {stderr}\n{stdout}");
    for secret in [NAS_SECRET, BILLING_SECRET] {
        assert!(!stdout.contains(secret) && !stderr.contains(secret));
    }
    stdout
}

/// The declared state: three clients (chosen secret from a file, a stored hash, a
/// private_key_jwt key file), two users, one NAS whose secret is in the environment.
/// `extra` is appended (records a caller needs kept, e.g. the admin client of a
/// `--server` run).
pub(crate) fn write_files(
    dir: &Path,
    billing_scopes: &str,
    bob_disabled: bool,
    with_hashed: bool,
    extra: &str,
) -> String {
    std::fs::create_dir_all(dir.join("secrets")).unwrap();
    std::fs::write(dir.join("secrets/billing"), format!("{BILLING_SECRET}\n")).unwrap();
    if !dir.join("reports.pub").exists() {
        portcullis_lab::certs::signing_key(dir, "reports", "EdDSA").unwrap();
    }
    let policy = test_policy();
    let hashes_file = dir.join("hashes.txt");
    let (alice, hashed) = match std::fs::read_to_string(&hashes_file) {
        Ok(t) => {
            let (a, b) = t.split_once('\n').unwrap();
            (a.to_owned(), b.trim().to_owned())
        }
        Err(_) => {
            let a = policy.hash(b"alice-password").unwrap();
            let b = policy.hash(b"hashed-client-secret").unwrap();
            std::fs::write(&hashes_file, format!("{a}\n{b}\n")).unwrap();
            let bob = policy.hash(b"bob-password").unwrap();
            std::fs::write(dir.join("bob.hash"), format!("{bob}\n")).unwrap();
            (a, b)
        }
    };
    let hashed_client = if with_hashed {
        format!(
            "[[clients]]\nid = \"hashed\"\nsecret_hash = \"{hashed}\"\ngrants = [\"client_credentials\", \"password\"]\n"
        )
    } else {
        String::new()
    };
    let text = format!(
        r#"[[clients]]
id = "billing"
scopes = [{billing_scopes}]
token_lifetime = 900
secret_file = "secrets/billing"

[[clients]]
id = "reports"
private_key_jwt = "reports.pub"

{hashed_client}
[[users]]
username = "alice"
password_hash = "{alice}"

[[users]]
username = "bob"
password_hash_file = "bob.hash"
disabled = {bob_disabled}

[[nas]]
name = "office"
cidr = "10.1.0.0/24"
secret_env = "APPLY_TEST_NAS_SECRET"

{extra}"#
    );
    let file = dir.join("portcullis.apply.toml");
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_owned()
}

/// Everything the store holds, with versions (which every write bumps).
pub(crate) async fn snapshot(store: &dyn Store) -> Vec<String> {
    let mut out = Vec::new();
    for c in store.list_clients().await.unwrap() {
        let v = store.client_versioned(&c.id).await.unwrap().unwrap();
        out.push(format!(
            "{:?} {:?} v{}",
            v.record, v.record.secret_hashes, v.version
        ));
    }
    for u in store.list_users().await.unwrap() {
        let v = store.user_versioned(&u.username).await.unwrap().unwrap();
        out.push(format!(
            "{:?} {} v{}",
            v.record, v.record.password_hash, v.version
        ));
    }
    for n in store.list_nas().await.unwrap() {
        let v = store.nas_versioned(&n.name).await.unwrap().unwrap();
        out.push(format!(
            "{:?} {:?} v{}",
            v.record, v.record.secret_sealed, v.version
        ));
    }
    out
}

/// Records that were there before and are not declared: an operator's client, user and
/// NAS, and a dynamically registered client.
pub(crate) async fn seed_undeclared(store: &dyn Store, master: &portcullis_store::MasterKey) {
    let client = |id: &str| ClientRecord {
        id: id.into(),
        auth: ClientAuth::Secret,
        secret_hashes: vec![test_policy().hash(id.as_bytes()).unwrap()],
        grants: vec![Grant::ClientCredentials],
        scopes: vec![],
        token_lifetime: 3600,
        created_at: 1,
    };
    store.put_client(&client("legacy")).await.unwrap();
    store
        .register_client(
            &client("dcr-partner"),
            &ClientRegistration {
                client_id: "dcr-partner".into(),
                access_token_hash: hash_token("rat"),
                metadata: "{}".into(),
                initial_token: None,
                created_at: 1,
                updated_at: 1,
            },
            1,
        )
        .await
        .unwrap();
    store
        .put_user(&UserRecord::new("mallory", test_policy().hash(b"x").unwrap(), 1).unwrap())
        .await
        .unwrap();
    store
        .put_nas(&NasRecord {
            name: "old-switch".into(),
            cidr: "192.0.2.0/24".parse().unwrap(),
            secret_sealed: NasRecord::seal_secret(master, "old-switch", b"old-secret").unwrap(),
            require_message_authenticator: true,
            created_at: 1,
            certificate: None,
        })
        .await
        .unwrap();
}

/// The whole scenario on one store; `target` are the arguments naming it.
/// `extra`: TOML appended to the file, declaring `kept` records the store already holds
/// (they count as unchanged).
pub(crate) async fn scenario(
    store: Arc<dyn Store>,
    peppers: &Peppers,
    master: &portcullis_store::MasterKey,
    files: &Path,
    target: &[&str],
    (extra, kept_ids): (&str, &[&str]),
) {
    let kept = kept_ids.len();
    seed_undeclared(store.as_ref(), master).await;
    let file = write_files(files, "\"read\"", true, true, extra);
    let with = |extra: &[&str]| -> Vec<String> {
        let mut v = vec![file.clone()];
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v.extend(target.iter().map(|s| (*s).to_owned()));
        v
    };
    let run =
        |extra: &[&str]| apply_ok(&with(extra).iter().map(String::as_str).collect::<Vec<_>>());
    // --dry-run: the plan, and nothing changes.
    let before = snapshot(store.as_ref()).await;
    let out = run(&["--dry-run"]);
    assert!(out.contains("client \"billing\": create"), "{out}");
    assert!(out.contains("nas \"office\": create"), "{out}");
    assert!(out.contains("client \"legacy\": kept"), "{out}");
    assert!(
        out.contains(&format!(
            "plan: 6 to create, 0 to update, {kept} unchanged, 0 to remove"
        )),
        "{out}"
    );
    assert_eq!(snapshot(store.as_ref()).await, before);
    // Apply: created as declared.
    let out = run(&[]);
    assert!(out.ends_with("applied\n"), "{out}");
    let billing = store.get_client("billing").await.unwrap().unwrap();
    assert_eq!(billing.scopes, vec!["read".to_owned()]);
    assert_eq!(billing.token_lifetime, 900);
    let h = Credential::parse(&billing.secret_hashes[0]).unwrap();
    assert!(h.verify(BILLING_SECRET.as_bytes(), peppers).unwrap());
    assert!(matches!(
        store.get_client("reports").await.unwrap().unwrap().auth,
        ClientAuth::PrivateKeyJwt { .. }
    ));
    assert!(store.get_user("bob").await.unwrap().unwrap().disabled);
    let nas = store.get_nas("office").await.unwrap().unwrap();
    assert_eq!(&nas.open_secret(master).unwrap()[..], NAS_SECRET.as_bytes());
    // Again: nothing to change, and nothing written (every version as it was).
    let after_first = snapshot(store.as_ref()).await;
    let out = run(&[]);
    assert!(
        out.contains(&format!(
            "plan: 0 to create, 0 to update, {} unchanged, 0 to remove",
            6 + kept
        )),
        "{out}"
    );
    assert!(out.ends_with("nothing to change\n"), "{out}");
    assert_eq!(snapshot(store.as_ref()).await, after_first);
    // A changed file: only what changed is updated.
    write_files(files, "\"read\", \"write\"", false, true, extra);
    let out = run(&[]);
    assert!(out.contains("client \"billing\": update (scopes)"), "{out}");
    assert!(out.contains("user \"bob\": update (disabled)"), "{out}");
    assert!(
        out.contains(&format!(
            "plan: 0 to create, 2 to update, {} unchanged, 0 to remove",
            4 + kept
        )),
        "{out}"
    );
    let v = store.client_versioned("billing").await.unwrap().unwrap();
    assert_eq!(v.record.scopes, vec!["read".to_owned(), "write".to_owned()]);
    // The secret was not re-hashed: same stored hash.
    assert_eq!(v.record.secret_hashes, billing.secret_hashes);
    assert!(!store.get_user("bob").await.unwrap().unwrap().disabled);
    // --prune removes only what the file does not declare (and never a registered
    // client); the dry run first changes nothing.
    write_files(files, "\"read\", \"write\"", false, false, extra);
    let before = snapshot(store.as_ref()).await;
    let out = run(&["--prune", "--dry-run"]);
    for line in [
        "client \"hashed\": remove",
        "client \"legacy\": remove",
        "user \"mallory\": remove",
        "nas \"old-switch\": remove",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    assert!(
        out.contains("client \"dcr-partner\": kept (dynamically registered"),
        "{out}"
    );
    assert_eq!(snapshot(store.as_ref()).await, before);
    let unchanged: Vec<String> = {
        let mut v = Vec::new();
        for id in ["billing", "reports"] {
            v.push(format!(
                "{:?}",
                store.client_versioned(id).await.unwrap().unwrap().version
            ));
        }
        v
    };
    run(&["--prune"]);
    let mut ids: Vec<String> = store
        .list_clients()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    ids.sort();
    let mut want = vec!["billing", "dcr-partner", "reports"];
    want.extend_from_slice(kept_ids);
    want.sort_unstable();
    assert_eq!(ids, want);
    let users: Vec<String> = store
        .list_users()
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.username)
        .collect();
    assert_eq!(users, ["alice", "bob"]);
    let nas: Vec<String> = store
        .list_nas()
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(nas, ["office"]);
    let mut still = Vec::new();
    for id in ["billing", "reports"] {
        still.push(format!(
            "{:?}",
            store.client_versioned(id).await.unwrap().unwrap().version
        ));
    }
    assert_eq!(
        still, unchanged,
        "declared records were rewritten by --prune"
    );
    // And converged: another run with --prune changes nothing.
    let out = run(&["--prune"]);
    assert!(
        out.contains(&format!(
            "0 to create, 0 to update, {} unchanged, 0 to remove",
            5 + kept
        )),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_apply_is_idempotent_dry_runs_change_nothing_and_prune_removes_only_the_undeclared()
 {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let dir = DataDir::open(&data).await.unwrap();
    let files = tmp.path().join("decl");
    std::fs::create_dir_all(&files).unwrap();
    let target = ["--data-dir", data.to_str().unwrap()];
    scenario(
        dir.store(),
        &dir.peppers(),
        dir.master_key(),
        &files,
        &target,
        ("", &[]),
    )
    .await;
    // No secret in plaintext anywhere in the data directory.
    for entry in std::fs::read_dir(&data).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for s in [NAS_SECRET, BILLING_SECRET] {
            assert!(!bytes.windows(s.len()).any(|w| w == s.as_bytes()));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_apply_works_on_a_shared_postgres_store() {
    let schema = PgSchema::new().await;
    let tmp = tempfile::tempdir().unwrap();
    let secrets = tmp.path().join("secrets.toml");
    let secrets_loaded = portcullis_store::Secrets::load_or_create(&secrets).unwrap();
    let config = tmp.path().join("portcullis.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nissuer = \"https://auth.example\"\n[store]\nurl = \"{}\"\nsecrets_file = \"{}\"\n",
            schema.url(),
            secrets.display()
        ),
    )
    .unwrap();
    let store: Arc<dyn Store> = Arc::new(
        portcullis_store::PgStore::connect_with(schema.options(), 2)
            .await
            .unwrap(),
    );
    let files = tmp.path().join("decl");
    std::fs::create_dir_all(&files).unwrap();
    let target = ["--config", config.to_str().unwrap()];
    scenario(
        Arc::clone(&store),
        &secrets_loaded.peppers,
        &secrets_loaded.master_key,
        &files,
        &target,
        ("", &[]),
    )
    .await;
    schema.drop_now().await;
}

#[test]
fn issue_27_a_bad_file_changes_nothing_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let cases = [
        (
            "[[users]]\nusername = \"a\"\npassword = \"plain\"\n",
            "unknown field `password`",
        ),
        (
            "[[users]]\nusername = \"a\"\n",
            "plain passwords are not accepted",
        ),
        (
            "[[nas]]\nname = \"n\"\ncidr = \"10.0.0.0/8\"\nsecret_env = \"APPLY_TEST_UNSET_VAR\"\n",
            "environment variable is not set",
        ),
        (
            "[[clients]]\nid = \"c\"\nsecret_file = \"pasted-secret-value\"\n",
            "secret file cannot be read",
        ),
        (
            "[[clients]]\nid = \"c\"\nsecret_hash = \"HASH\"\nsecret_env = \"APPLY_TEST_NAS_SECRET\"\n",
            "exactly one",
        ),
        (
            "[[clients]]\nid = \"c\"\nsecret_hash = \"hunter2\"\n",
            "client \"c\"",
        ),
        (
            "[[clients]]\nid = \"c\"\nsecret_hash = \"HASH\"\n[[clients]]\nid = \"c\"\nsecret_hash = \"HASH\"\n",
            "declared twice",
        ),
    ];
    let hash = test_policy().hash(b"x").unwrap();
    for (text, why) in cases {
        let text = text.replace("HASH", &hash);
        let file = tmp.path().join("bad.toml");
        std::fs::write(&file, &text).unwrap();
        let out = apply(&[file.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
        assert!(stderr.contains(why), "{text}: {stderr}");
        assert!(out.stdout.is_empty(), "{text}");
        for pasted in ["plain\"", "pasted-secret-value", "APPLY_TEST_UNSET_VAR"] {
            assert!(!stderr.contains(pasted), "{stderr}");
        }
    }
    // Nothing was even created.
    assert!(!data.exists());
}
