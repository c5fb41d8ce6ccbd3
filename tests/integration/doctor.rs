//! Issue 29: `portcullis doctor` on purpose-built setups. A good shared setup (PostgreSQL,
//! Redis, TLS, issuer) passes with exit 0; each broken variant of it fails with exit
//! non-zero and a line naming the problem and its fix. A shared store without
//! `server.issuer` is refused by `config check`, `doctor` and `serve`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use portcullis_lab::certs::TestCa;
use portcullis_store::testing::{PgSchema, free_port, shared_redis_url};

use crate::process_support::BIN;

/// Exit code, stdout, stderr of `portcullis ARGS` (no PORTCULLIS_* from the environment).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("PORTCULLIS_CONFIG")
        .env_remove("PORTCULLIS_DATA_DIR")
        .env_remove("PORTCULLIS_HTTP")
        .env_remove("PORTCULLIS_RADIUS")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The line of `out` that starts with `prefix` (e.g. "FAIL  store"), or a failure
/// showing the whole report.
fn line<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{out}"))
}

/// A shared setup: a PostgreSQL schema, the shared Redis, a CA-issued server certificate,
/// an issuer, and the secrets file the first `client add` creates.
struct Setup {
    schema: PgSchema,
    dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
}

impl Setup {
    async fn new() -> Setup {
        let schema = PgSchema::new().await;
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new(dir.path(), "ca").unwrap();
        let server = ca.server("server", &["127.0.0.1", "localhost"]).unwrap();
        chmod(&server.key, 0o600);
        let s = Setup {
            schema,
            dir,
            cert: server.cert,
            key: server.key,
        };
        s.write(&s.config_text());
        let (code, _, err) = run(&["client", "add", "svc", "--config", &s.file()]);
        assert_eq!(code, 0, "{err}");
        assert!(s.secrets().exists());
        s
    }

    fn secrets(&self) -> PathBuf {
        self.dir.path().join("secrets.toml")
    }

    fn file(&self) -> String {
        self.dir
            .path()
            .join("portcullis.toml")
            .to_str()
            .unwrap()
            .to_owned()
    }

    fn config_text(&self) -> String {
        format!(
            "[server]\nhttp = \"127.0.0.1:0\"\nissuer = \"https://auth.doctor.test\"\n\
             [tls]\ncert = \"{}\"\nkey = \"{}\"\n\
             [store]\nurl = \"{}\"\ndata_dir = \"{}\"\nsecrets_file = \"{}\"\n\
             [throttle]\nredis = \"{}\"\n",
            self.cert.display(),
            self.key.display(),
            self.schema.url(),
            self.dir.path().join("data").display(),
            self.secrets().display(),
            shared_redis_url()
        )
    }

    fn write(&self, text: &str) {
        std::fs::write(self.dir.path().join("portcullis.toml"), text).unwrap();
    }

    fn doctor(&self) -> (i32, String) {
        let (code, out, err) = run(&["doctor", "--config", &self.file()]);
        (code, format!("{out}{err}"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_29_doctor_passes_a_good_shared_setup() {
    let s = Setup::new().await;
    let (code, out) = s.doctor();
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    line(&out, "ok    secrets file");
    line(&out, "ok    store: PostgreSQL at");
    line(&out, "ok    throttle: Redis at");
    line(&out, "ok    tls:");
    line(&out, "ok    issuer: https://auth.doctor.test");
    assert!(
        line(&out, "ok    clock").contains("PostgreSQL"),
        "the clock is compared with the store's: {out}"
    );
    line(&out, "ok    hash kernels: pbkdf2-sha256");
    assert!(out.contains("ready for production"), "{out}");
    s.schema.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_29_doctor_names_a_world_readable_secrets_file() {
    let s = Setup::new().await;
    chmod(&s.secrets(), 0o644);
    let (code, out) = s.doctor();
    assert_eq!(code, 1, "{out}");
    let l = line(&out, "FAIL  secrets file");
    assert!(l.contains("mode 644"), "{l}");
    assert!(l.contains("fix: chmod 600"), "{l}");
    assert!(out.contains("would break production"), "{out}");
    s.schema.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_29_doctor_names_an_unreachable_store_and_redis() {
    let s = Setup::new().await;
    let dead = format!("postgres://postgres@127.0.0.1:{}/test", free_port());
    let dead_redis = format!("redis://127.0.0.1:{}", free_port());
    s.write(
        &s.config_text()
            .replace(&s.schema.url(), &dead)
            .replace(&shared_redis_url(), &dead_redis),
    );
    let (code, out) = s.doctor();
    assert_eq!(code, 1, "{out}");
    let l = line(&out, "FAIL  store: PostgreSQL at");
    assert!(
        l.contains("unreachable") && l.contains("fix: start PostgreSQL or correct store.url"),
        "{l}"
    );
    let l = line(&out, "FAIL  throttle: Redis at");
    assert!(l.contains("fix: start Redis"), "{l}");
    // Everything else still checked.
    line(&out, "ok    secrets file");
    s.schema.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_29_doctor_names_a_certificate_unfit_for_the_suites() {
    let s = Setup::new().await;
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/door/tests/fixtures/tls");
    // KeyUsage keyEncipherment only: no enabled suite can sign the handshake.
    let cert = fixtures.join("rsa_keyencipherment_only.crt");
    let key = s.dir.path().join("unfit.key");
    std::fs::copy(fixtures.join("rsa_keyencipherment_only.key"), &key).unwrap();
    chmod(&key, 0o600);
    s.write(
        &s.config_text()
            .replace(&s.cert.display().to_string(), &cert.display().to_string())
            .replace(&s.key.display().to_string(), &key.display().to_string()),
    );
    let (code, out) = s.doctor();
    assert_eq!(code, 1, "{out}");
    let l = line(&out, "FAIL  tls:");
    assert!(l.contains("digitalSignature"), "{l}");
    assert!(
        l.contains("fix:") && l.contains("portcullis tls check"),
        "{l}"
    );
    // The same certificate stops `serve` (the doctor runs serve's own check).
    let (code, _, err) = run(&["serve", "--config", &s.file()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("digitalSignature"), "{err}");
    s.schema.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_29_a_shared_store_without_issuer_is_refused_everywhere() {
    let s = Setup::new().await;
    s.write(
        &s.config_text()
            .replace("issuer = \"https://auth.doctor.test\"\n", ""),
    );
    let (code, out) = s.doctor();
    assert_ne!(code, 0, "{out}");
    assert!(
        line(&out, "FAIL  config").contains("needs server.issuer"),
        "{out}"
    );
    let f = s.file();
    for args in [
        &["config", "check", &f][..],
        &["config", "check", "--offline", &f][..],
        &["serve", "--config", &f][..],
    ] {
        let (code, out, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(
            err.contains("needs server.issuer") && err.contains("load balancer's URL"),
            "{args:?}: {err}"
        );
    }
    s.schema.drop_now().await;
}

#[test]
fn issue_29_doctor_on_sqlite_names_a_group_writable_data_dir_and_passes_once_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    let (code, _, err) = run(&["client", "add", "svc", "--data-dir", d]);
    assert_eq!(code, 0, "{err}");
    let doctor = || {
        let (code, out, err) = run(&["doctor", "--data-dir", d, "--http", "127.0.0.1:0"]);
        (code, format!("{out}{err}"))
    };
    let (code, out) = doctor();
    assert_eq!(code, 0, "{out}");
    line(&out, "ok    data directory");
    line(&out, "ok    database");
    chmod(&data, 0o777);
    let (code, out) = doctor();
    assert_eq!(code, 1, "{out}");
    let l = line(&out, "FAIL  data directory");
    assert!(l.contains("fix: chmod 700"), "{l}");
    chmod(&data, 0o700);
    chmod(&data.join("portcullis.db"), 0o640);
    let (code, out) = doctor();
    assert_eq!(code, 1, "{out}");
    assert!(
        line(&out, "FAIL  database").contains("fix: chmod 600"),
        "{out}"
    );
}
