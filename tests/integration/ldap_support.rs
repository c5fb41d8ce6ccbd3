//! The LDAP door's tests' server (issue 39): an in-process server (`server_support`) with
//! `[ldap]` on free loopback ports (ldap:// with StartTLS, ldaps://) under a throwaway CA,
//! provisioned with users `alice` (posixAccount 1000), `carol` and the disabled `bob`,
//! the group `staff` (gidNumber 1000, all three), and the service accounts `app` (whole
//! directory) and `narrow` (ou=people, uid and cn only), each an OAuth client whose
//! generated secret is its bind password; `unlisted` is a client without a grant.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Output;

use portcullis_lab::certs::{Pair, TestCa};
use portcullis_server::Config;
use portcullis_store::{Grant, GroupRecord, Posix, UserAttributes, UserRecord};

use crate::server_support::{TestServer, start_with, test_policy};

/// The base DN.
pub const BASE: &str = "dc=example,dc=com";
/// alice's DN and password.
pub const ALICE: &str = "uid=alice,ou=people,dc=example,dc=com";
pub const ALICE_PASSWORD: &str = "alice-password";

/// A running LDAP door.
pub struct Ldap {
    /// The server.
    pub s: TestServer,
    /// `ldap://127.0.0.1:PORT`.
    pub url: String,
    /// `ldaps://127.0.0.1:PORT`.
    pub ldaps_url: String,
    /// The CA file clients trust.
    pub ca: PathBuf,
    /// The CA (to issue a new certificate for a reload).
    pub pki: TestCa,
    /// `[ldap.tls]`'s certificate and key files.
    pub pair: Pair,
    /// The secrets of the service accounts `app`, `narrow`, `unlisted`.
    pub app_secret: String,
    pub narrow_secret: String,
    pub unlisted_secret: String,
    _certs: tempfile::TempDir,
}

/// A service account's DN.
pub fn service(id: &str) -> String {
    format!("cn={id},ou=services,{BASE}")
}

/// Start the door; `extra` is TOML appended inside `[ldap]` (e.g. `allow_plain_binds =
/// true`).
pub async fn start_ldap(extra: &str) -> Ldap {
    start_ldap_with(extra, "").await
}

/// [`start_ldap`] with `sections` of TOML after `[ldap]` (only `[audit]` and
/// `[[directory]]` are taken). `failed_bind_delay_ms` is 0 unless `extra` sets it.
pub async fn start_ldap_with(extra: &str, sections: &str) -> Ldap {
    let certs = tempfile::tempdir().unwrap();
    let ca = TestCa::new(certs.path(), "ca").unwrap();
    let pair = ca.server("ldap", &["127.0.0.1", "localhost"]).unwrap();
    // Failed binds answered at once unless the test sets the delay itself.
    let delay = if extra.contains("failed_bind_delay_ms") {
        ""
    } else {
        "failed_bind_delay_ms = 0\n"
    };
    let section = format!(
        "[ldap]\nbase_dn = \"{BASE}\"\nlisten = \"127.0.0.1:0\"\nlisten_tls = \"127.0.0.1:0\"\n\
         directory_cache_ms = 0\n{delay}{extra}\n\
         [ldap.tls]\ncert = \"{}\"\nkey = \"{}\"\n\
         [ldap.service_accounts.app]\n\
         [ldap.service_accounts.narrow]\nsearch_base = \"ou=people,{BASE}\"\n\
         attributes = [\"uid\", \"cn\"]\n{sections}",
        pair.cert.display(),
        pair.key.display()
    );
    let parsed = Config::parse(&section).unwrap();
    let s = start_with(|c| {
        c.ldap = parsed.ldap;
        c.audit = parsed.audit;
        c.directories = parsed.directories;
    })
    .await;
    let grants = [Grant::ClientCredentials];
    let app_secret = s.add_client("app", &grants, &[]).await;
    let narrow_secret = s.add_client("narrow", &grants, &[]).await;
    let unlisted_secret = s.add_client("unlisted", &grants, &[]).await;
    let store = s.store();
    for (name, password, disabled, uid) in [
        ("alice", ALICE_PASSWORD, false, Some(1000)),
        ("bob", "bob-password", true, Some(1001)),
        ("carol", "carol-password", false, None),
    ] {
        let hash = test_policy().hash(password.as_bytes()).unwrap();
        let mut user = UserRecord::new(name, hash, 0).unwrap();
        user.disabled = disabled;
        user.attributes = UserAttributes {
            mail: Some(format!("{name}@example.com")),
            posix: uid.map(|n| Posix {
                uid_number: n,
                gid_number: 1000,
                home_directory: format!("/home/{name}"),
                login_shell: Some("/bin/sh".into()),
            }),
            ..UserAttributes::default()
        };
        store.put_user(&user).await.unwrap();
    }
    store
        .put_group(&GroupRecord {
            gid_number: Some(1000),
            members: vec!["alice".into(), "bob".into(), "carol".into()],
            ..GroupRecord::new("staff", 0)
        })
        .await
        .unwrap();
    let plain = s.server.ldap_addr().expect("[ldap] listen");
    let tls = s.server.ldaps_addr().expect("[ldap] listen_tls");
    Ldap {
        s,
        url: format!("ldap://{plain}"),
        ldaps_url: format!("ldaps://{tls}"),
        ca: ca.cert.clone(),
        pki: ca,
        pair,
        app_secret,
        narrow_secret,
        unlisted_secret,
        _certs: certs,
    }
}

/// Run an ldap-utils command (`ldapwhoami`, `ldapsearch`, ...) with `args`, trusting the
/// test CA, off the runtime's workers. Its exit code is the LDAP result code.
pub async fn tool(ldap: &Ldap, program: &str, args: &[&str]) -> Output {
    let ca = ldap.ca.clone();
    let program = program.to_owned();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(&program)
            .args(&args)
            .env("LDAPTLS_CACERT", &ca)
            .env("LDAPTLS_REQCERT", "demand")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program} (Debian ldap-utils): {e}"))
    })
    .await
    .unwrap()
}

/// The exit code of an ldap-utils run (the LDAP result code for a server's refusal).
pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// The result code `ldappasswd` reports (`Result: Invalid credentials (49)`); it exits
/// 1 on any failure.
pub fn reported(out: &Output) -> Option<i32> {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text.lines().find(|l| l.starts_with("Result: "))?;
    let inner = line.rsplit_once('(')?.1.strip_suffix(')')?;
    inner.parse().ok()
}

/// Its stdout.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}
