//! Tests of the SQLite backend and the data directory on a real file system: the
//! conformance suite, file modes, migrations on reopen, and what the database must never
//! contain.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use portcullis_hash::pepper::PepperedHmac;
use sqlx::Connection;

use crate::conformance::{self, test_client};
use crate::datadir::{DB_FILE, SECRETS_FILE};
use crate::testing::PgSchema;
use crate::{
    ClientStore, DataDir, Health, SigningKeyRecord, SigningKeyStore, Store, StoreError, UserStore,
};

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Every byte SQLite wrote (main file and WAL), where a leak would show.
fn db_bytes(dir: &Path) -> Vec<u8> {
    let mut all = std::fs::read(dir.join(DB_FILE)).unwrap();
    if let Ok(wal) = std::fs::read(dir.join(format!("{DB_FILE}-wal"))) {
        all.extend(wal);
    }
    all
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_sqlite_passes_the_conformance_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = DataDir::open(tmp.path().join("data")).await.unwrap();
    conformance::run_all(dir.store().as_ref()).await;
    // Not from `conformance::run_all`: it uses that module's records, and modules import
    // one way (scripts/import-cycles).
    crate::versioned_conformance::run_all(dir.store().as_ref()).await;
    crate::group_conformance::run_all(dir.store().as_ref()).await;
    // And through the trait object the server will hold.
    let shared: std::sync::Arc<dyn Store> = dir.store();
    conformance::cas_race_exactly_one_wins(shared.as_ref()).await;
}

#[tokio::test]
async fn issue_5_fresh_data_dir_is_private() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("nested").join("data");
    let dir = DataDir::open(&path).await.unwrap();
    dir.store().put_client(&test_client("c")).await.unwrap();
    assert_eq!(mode(&path), 0o700);
    assert_eq!(mode(&path.join(SECRETS_FILE)), 0o600);
    assert_eq!(mode(&path.join(DB_FILE)), 0o600);
    // WAL mode is on (the -wal file exists while open) and inherits the 0600 mode.
    let wal = path.join(format!("{DB_FILE}-wal"));
    assert!(wal.exists(), "WAL journal expected");
    assert_eq!(mode(&wal), 0o600);
    assert!(dir.peppers().current().is_some());
}

#[tokio::test]
async fn issue_5_lax_permissions_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("data");
    DataDir::open(&path).await.unwrap().close().await;

    let secrets = path.join(SECRETS_FILE);
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = DataDir::open(&path).await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err}");
    assert!(err.to_string().contains("chmod 600"), "{err}");
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = DataDir::open(&path).await.unwrap_err();
    assert!(err.to_string().contains("chmod 700"), "{err}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();

    let db = path.join(DB_FILE);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).unwrap();
    assert!(DataDir::open(&path).await.is_err());
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    DataDir::open(&path).await.unwrap();
}

#[tokio::test]
async fn issue_5_reopen_keeps_data_secrets_and_applies_migrations_once() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("data");
    let first = DataDir::open(&path).await.unwrap();
    let pepper = first.peppers().current().unwrap().clone();
    let sealed = first.master_key().seal(b"ed25519 seed", b"k1").unwrap();
    first
        .store()
        .put_client(&test_client("kept"))
        .await
        .unwrap();
    first.close().await;

    for _ in 0..2 {
        let again = DataDir::open(&path).await.unwrap();
        let p = again.peppers();
        let cur = p.current().unwrap();
        assert_eq!(cur.id(), pepper.id());
        assert_eq!(cur.key_bytes(), pepper.key_bytes());
        assert_eq!(
            &again.master_key().open(&sealed, b"k1").unwrap()[..],
            b"ed25519 seed"
        );
        assert!(again.store().get_client("kept").await.unwrap().is_some());
        again.close().await;
    }

    // Independent look at the migration table: one successful row per migration file.
    let url = format!("sqlite://{}", path.join(DB_FILE).display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let rows: Vec<(i64, bool)> =
        sqlx::query_as("SELECT version, success FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/sqlite"))
        .unwrap()
        .count();
    assert_eq!(rows.len(), files);
    assert!(rows.iter().all(|(_, ok)| *ok));
    let (mode,): (String,) = sqlx::query_as("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
}

/// Issue 15: the first open raced for real. Four OS threads, each with its own runtime,
/// released together by a barrier, open the same fresh data directory, ten times over:
/// all must agree on the pepper and the master key.
#[test]
fn issue_5_concurrent_first_open_agrees_on_secrets() {
    for _ in 0..10 {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
        let opened: Vec<DataDir> = (0..4)
            .map(|_| {
                let (barrier, path) = (barrier.clone(), path.clone());
                std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    barrier.wait();
                    rt.block_on(DataDir::open(&path)).unwrap()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        let key = opened[0].peppers().current().unwrap().key_bytes().to_vec();
        let sealed = opened[0].master_key().seal(b"x", b"").unwrap();
        for d in &opened[1..] {
            assert_eq!(d.peppers().current().unwrap().key_bytes(), &key[..]);
            assert_eq!(&d.master_key().open(&sealed, b"").unwrap()[..], b"x");
        }
    }
}

/// Issue 15: the secrets file's create-or-load, raced on OS threads: exactly one racer
/// creates the file (the others take the "someone else was first" branch and read it),
/// every racer ends with the same keys, and no temporary file is left behind.
#[test]
fn issue_15_racing_secret_creation_has_one_winner_and_one_truth() {
    let mut readers = 0;
    for _ in 0..20 {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("secrets.toml");
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let results: Vec<_> = (0..8)
            .map(|_| {
                let (barrier, file) = (barrier.clone(), file.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    crate::datadir::load_or_create_secrets(&file).unwrap()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        assert_eq!(results.iter().filter(|r| r.2).count(), 1, "one creator");
        let key = results[0].0.current().unwrap().key_bytes().to_vec();
        for r in &results {
            assert_eq!(r.0.current().unwrap().key_bytes(), &key[..]);
        }
        readers += results.iter().filter(|r| !r.2).count();
        let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n != "secrets.toml")
            .collect();
        assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    }
    assert_eq!(readers, 20 * 7);
}

#[tokio::test]
async fn issue_5_database_holds_no_pepper_secret_or_private_key() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("data");
    let dir = DataDir::open(&path).await.unwrap();
    let secret = crate::generate_client_secret().unwrap();
    let peppers = dir.peppers();
    let pepper = peppers.current().unwrap();
    let mut c = test_client("leak-check");
    let stored = PepperedHmac::create(pepper, secret.as_bytes());
    c.secret_hashes = vec![stored.clone()];
    dir.store().put_client(&c).await.unwrap();
    let private = [0x5au8; 32];
    dir.store()
        .insert_signing_key(&SigningKeyRecord {
            kid: "k1".into(),
            alg: "EdDSA".into(),
            public_key: vec![1; 32],
            private_key_sealed: dir.master_key().seal(&private, b"k1").unwrap(),
            created_at: 1,
            not_after: 2,
            retired_at: None,
        })
        .await
        .unwrap();

    let bytes = db_bytes(&path);
    // The search is over the right bytes: the stored hash is there.
    assert!(contains(&bytes, stored.as_bytes()));
    assert!(!contains(&bytes, secret.as_bytes()));
    assert!(!contains(&bytes, pepper.key_bytes()));
    assert!(!contains(
        &bytes,
        STANDARD.encode(pepper.key_bytes()).as_bytes()
    ));
    assert!(!contains(&bytes, &private));
    // And the secrets file is where the pepper lives.
    let secrets = std::fs::read_to_string(path.join(SECRETS_FILE)).unwrap();
    assert!(secrets.contains(&STANDARD.encode(pepper.key_bytes())));
}

#[tokio::test]
async fn issue_5_rotated_pepper_is_current_and_old_one_still_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("data");
    let mut dir = DataDir::open(&path).await.unwrap();
    let old = PepperedHmac::create(dir.peppers().current().unwrap(), b"s");
    let new_id = dir.rotate_pepper().unwrap();
    assert_eq!(new_id, "p2");
    dir.close().await;
    let dir = DataDir::open(&path).await.unwrap();
    let peppers = dir.peppers();
    assert_eq!(peppers.current().unwrap().id(), "p2");
    let parsed = PepperedHmac::parse(&old).unwrap();
    assert_eq!(parsed.key_id, "p1");
    assert!(parsed.verify(b"s", &peppers).unwrap());
    assert_eq!(mode(&path.join(SECRETS_FILE)), 0o600);
}

#[tokio::test]
async fn issue_5_bad_secrets_file_is_a_clear_error_without_key_material() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("data");
    DataDir::open(&path).await.unwrap().close().await;
    let file = path.join(SECRETS_FILE);
    let good = std::fs::read_to_string(&file).unwrap();
    let key_line = good
        .lines()
        .find(|l| l.starts_with("master_key"))
        .unwrap()
        .to_owned();
    let cases = [
        good.replace("version = 1", "version = 9"),
        good.replace("current_pepper = \"p1\"", "current_pepper = \"p7\""),
        format!("{good}\nsurprise = 1\n"),
        good.replace(&key_line, "master_key = \"c2hvcnQ\""),
        // Broken syntax on the line holding the key: the message must not quote it.
        good.replace(&key_line, &format!("{key_line} !")),
    ];
    for text in cases {
        std::fs::write(&file, &text).unwrap();
        let err = DataDir::open(&path).await.unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, StoreError::Invalid(_)), "{msg}");
        assert!(msg.contains(SECRETS_FILE), "{msg}");
        assert!(
            !msg.contains(key_line.trim_start_matches("master_key = ")),
            "{msg}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_rehash_race_between_spawned_tasks_upgrades_once() {
    use portcullis_core::{CredentialSource, PrincipalKind};
    let tmp = tempfile::tempdir().unwrap();
    let dir = DataDir::open(tmp.path().join("data")).await.unwrap();
    let user = conformance::test_user("racer");
    dir.store().put_user(&user).await.unwrap();
    let source: std::sync::Arc<dyn CredentialSource> = dir.store().as_credential_source();
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(2));
    let tasks: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|tag| {
            let (source, barrier, old) =
                (source.clone(), barrier.clone(), user.password_hash.clone());
            let new = conformance::test_pbkdf2_hash(tag);
            tokio::spawn(async move {
                barrier.wait().await;
                let won = source
                    .replace_hash(PrincipalKind::User, "racer", &old, &new)
                    .await
                    .unwrap();
                (won, new)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for t in tasks {
        let (won, new) = t.await.unwrap();
        if won {
            winners.push(new);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one task may upgrade the hash");
    let stored = source
        .credentials(PrincipalKind::User, "racer")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.hashes, winners);
}

#[tokio::test]
async fn issue_5_open_existing_does_not_create() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("data");
    let err = DataDir::open_existing(&path).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err}");
    assert!(!path.exists());
    let first = DataDir::open(&path).await.unwrap();
    assert!(first.created());
    first.close().await;
    let again = DataDir::open_existing(&path).await.unwrap();
    assert!(!again.created());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_postgres_passes_the_conformance_suite() {
    let schema = PgSchema::new().await;
    // Two nodes starting together on an empty schema migrate once (advisory lock).
    let (a, b) = tokio::join!(
        crate::PgStore::connect_with(schema.options(), 8),
        crate::PgStore::connect_with(schema.options(), 8)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    b.close().await;
    conformance::run_all(&a).await;
    crate::versioned_conformance::run_all(&a).await;
    crate::group_conformance::run_all(&a).await;
    a.close().await;
    // Reconnecting finds the schema current.
    let again = crate::PgStore::connect_with(schema.options(), 2)
        .await
        .unwrap();
    again.ping().await.unwrap();
    again.close().await;
    schema.drop_now().await;
}

#[tokio::test]
async fn issue_5_secrets_file_alone_matches_the_data_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("data");
    let dir = DataDir::open(&path).await.unwrap();
    let alone = crate::Secrets::load(path.join(SECRETS_FILE)).unwrap();
    assert_eq!(
        alone.peppers.current().unwrap().key_bytes(),
        dir.peppers().current().unwrap().key_bytes()
    );
    let sealed = dir.master_key().seal(b"k", b"").unwrap();
    assert_eq!(&alone.master_key.open(&sealed, b"").unwrap()[..], b"k");
    assert!(crate::Secrets::load(tmp.path().join("missing.toml")).is_err());
    let fresh = tmp.path().join("node-secrets.toml");
    crate::Secrets::load_or_create(&fresh).unwrap();
    assert_eq!(mode(&fresh), 0o600);
}

#[tokio::test]
async fn issue_5_lost_secrets_file_is_not_silently_regenerated() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("data");
    let dir = DataDir::open(&path).await.unwrap();
    dir.store().put_client(&test_client("c")).await.unwrap();
    dir.close().await;
    std::fs::remove_file(path.join(SECRETS_FILE)).unwrap();
    let err = DataDir::open(&path).await.unwrap_err();
    assert!(
        err.to_string().contains("restore the secrets file"),
        "{err}"
    );
    assert!(!path.join(SECRETS_FILE).exists());
}

/// The migrations before issue 39's (`0020_directory`), to build a database as it was.
fn migrator_before_directory(full: sqlx::migrate::Migrator) -> sqlx::migrate::Migrator {
    let mut m = full;
    let before: Vec<_> = m
        .migrations
        .iter()
        .filter(|x| x.version < 20)
        .cloned()
        .collect();
    m.migrations = std::borrow::Cow::Owned(before);
    m
}

const OLD_USERS: &str = "INSERT INTO users (username, password_hash, disabled, created_at) \
     VALUES ('old-a', $1, FALSE, 1), ('old-b', $2, TRUE, 2)";

/// Users that existed before the migration each get a distinct version-4 entryUUID, and
/// keep their hash and disabled flag.
async fn check_migrated_users(store: &dyn Store) {
    let a = store.get_user("old-a").await.unwrap().unwrap();
    let b = store.get_user("old-b").await.unwrap().unwrap();
    assert_ne!(a.entry_uuid, b.entry_uuid);
    for u in [&a, &b] {
        let s = u.entry_uuid.to_string();
        assert_eq!(s.chars().nth(14), Some('4'), "{s}");
        assert!(s.chars().nth(19).is_some_and(|c| "89ab".contains(c)), "{s}");
        assert_eq!(u.attributes, crate::UserAttributes::default());
    }
    assert_eq!(a.password_hash, conformance::test_hash("old-a"));
    assert!(b.disabled && !a.disabled);
    // The new columns' rules hold for the migrated rows too.
    let mut attrs = crate::group_conformance::directory_user("old-a", 74_001).attributes;
    store.set_user_attributes("old-a", &attrs).await.unwrap();
    attrs.cn = None;
    let r = store.set_user_attributes("old-b", &attrs).await;
    assert!(matches!(r, Err(StoreError::AlreadyExists(_))), "{r:?}");
}

#[tokio::test]
async fn issue_39_sqlite_migration_gives_existing_users_an_entry_uuid() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("old.db");
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    migrator_before_directory(sqlx::migrate!("./migrations/sqlite"))
        .run(&pool)
        .await
        .unwrap();
    sqlx::query(OLD_USERS)
        .bind(conformance::test_hash("old-a"))
        .bind(conformance::test_hash("old-b"))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let store = crate::SqliteStore::open(&path).await.unwrap();
    check_migrated_users(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_postgres_migration_gives_existing_users_an_entry_uuid() {
    let schema = PgSchema::new().await;
    let pool = sqlx::PgPool::connect_with(schema.options()).await.unwrap();
    migrator_before_directory(sqlx::migrate!("./migrations/postgres"))
        .run(&pool)
        .await
        .unwrap();
    sqlx::query(OLD_USERS)
        .bind(conformance::test_hash("old-a"))
        .bind(conformance::test_hash("old-b"))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let store = crate::PgStore::connect_with(schema.options(), 2)
        .await
        .unwrap();
    check_migrated_users(&store).await;
    store.close().await;
    schema.drop_now().await;
}
