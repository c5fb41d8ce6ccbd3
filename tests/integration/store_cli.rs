//! Issue #5, storage half: `portcullis client ...` and `portcullis user ...` against a data
//! directory in a temp dir. What the commands wrote is checked independently with Python
//! (`sqlite3`, `hmac`, `hashlib`, `tomllib`), never by reading it back through our code.

// Test helpers: a failed step is a test failure, so panicking is the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

pub(crate) fn portcullis(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_portcullis"))
        .args(args)
        .env_remove("PORTCULLIS_DATA_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    if let Some(input) = stdin {
        pipe.write_all(input.as_bytes()).unwrap();
    }
    drop(pipe);
    child.wait_with_output().unwrap()
}

/// Run and require success; returns stdout.
pub(crate) fn ok(args: &[&str], stdin: Option<&str>) -> String {
    let out = portcullis(args, stdin);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Run and require exit 2 with exactly one error line on stderr and nothing on stdout;
/// returns that line.
pub(crate) fn fails(args: &[&str], stdin: Option<&str>) -> String {
    let out = portcullis(args, stdin);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr:?}");
    assert!(stderr.starts_with("portcullis: error: "), "{stderr}");
    assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
    stderr
}

/// Run a Python snippet (args in `sys.argv[1:]`); returns its stdout, trimmed.
pub(crate) fn python(script: &str, args: &[&str]) -> String {
    let py = std::env::var("PORTCULLIS_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Python: print the stored client hashes (current, previous) as JSON.
const PY_CLIENT_ROW: &str = r#"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
row = db.execute("SELECT secret_hash, previous_secret_hash, grants, scopes, token_lifetime FROM clients WHERE id = ?", (sys.argv[2],)).fetchone()
print(json.dumps(row))
"#;

/// Python: the `$hmac-sha256$` string for secret argv[2] under the current pepper of the
/// secrets file argv[1].
const PY_PEPPERED: &str = r#"
import base64, hashlib, hmac, sys, tomllib
s = tomllib.load(open(sys.argv[1], "rb"))
cur = s["current_pepper"]
key = base64.b64decode([p["key"] for p in s["pepper"] if p["id"] == cur][0])
tag = hmac.new(key, sys.argv[2].encode(), hashlib.sha256).digest()
print("$hmac-sha256$k=%s$%s" % (cur, base64.b64encode(tag).decode().rstrip("=")))
"#;

/// Python: check a `$pbkdf2-sha256$` PHC string argv[1] against password argv[2]; prints
/// the iteration count if it matches.
const PY_PBKDF2: &str = r#"
import base64, hashlib, sys
_, alg, params, salt, dk = sys.argv[1].split("$")
assert alg == "pbkdf2-sha256", alg
p = dict(kv.split("=") for kv in params.split(","))
b = lambda s: base64.b64decode(s + "=" * (-len(s) % 4))
got = hashlib.pbkdf2_hmac("sha256", sys.argv[2].encode(), b(salt), int(p["i"]), len(b(dk)))
assert got == b(dk), "mismatch"
print(p["i"])
"#;

fn client_row(dir: &Path, id: &str) -> serde_json::Value {
    let db = dir.join("portcullis.db");
    serde_json::from_str(&python(PY_CLIENT_ROW, &[db.to_str().unwrap(), id])).unwrap()
}

fn peppered(dir: &Path, secret: &str) -> String {
    let secrets = dir.join("secrets.toml");
    python(PY_PEPPERED, &[secrets.to_str().unwrap(), secret])
}

/// Every byte SQLite keeps (main file and WAL, if any).
fn db_bytes(dir: &Path) -> Vec<u8> {
    let mut all = std::fs::read(dir.join("portcullis.db")).unwrap();
    if let Ok(wal) = std::fs::read(dir.join("portcullis.db-wal")) {
        all.extend(wal);
    }
    all
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn is_secret(s: &str) -> bool {
    // 256 bits in base64url without padding: 43 characters of the URL-safe alphabet that
    // an independent decoder turns into 32 bytes.
    s.len() == 43
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && python(
            "import base64, sys; print(len(base64.urlsafe_b64decode(sys.argv[1] + '=')))",
            &[s],
        ) == "32"
}

#[test]
fn issue_5_client_add_shows_secret_once_and_stores_only_its_peppered_hmac() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let d = dir.to_str().unwrap();
    let out = ok(
        &[
            "client",
            "add",
            "billing-api",
            "--scope",
            "read",
            "--scope",
            "write:all",
            "--grant",
            "client_credentials",
            "--grant",
            "password",
            "--token-lifetime",
            "600",
            "--data-dir",
            d,
        ],
        None,
    );
    assert_eq!(out.lines().count(), 1, "{out:?}");
    let secret = out.trim_end();
    assert!(is_secret(secret), "{secret:?}");

    let row = client_row(&dir, "billing-api");
    assert_eq!(row[0], serde_json::Value::String(peppered(&dir, secret)));
    assert_eq!(row[1], serde_json::Value::Null);
    assert_eq!(row[2], "client_credentials password");
    assert_eq!(row[3], "read write:all");
    assert_eq!(row[4], 600);

    let bytes = db_bytes(&dir);
    assert!(
        contains(&bytes, b"billing-api"),
        "searching the wrong bytes"
    );
    assert!(
        !contains(&bytes, secret.as_bytes()),
        "secret stored in the DB"
    );

    let table = ok(&["client", "list", "--data-dir", d], None);
    assert!(table.contains("billing-api"), "{table}");
    assert!(table.contains("generated"), "{table}");
    assert!(!table.contains(secret));
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["client", "list", "--json", "--data-dir", d], None)).unwrap();
    assert_eq!(json[0]["client_id"], "billing-api");
    assert_eq!(
        json[0]["grants"],
        serde_json::json!(["client_credentials", "password"])
    );
    assert_eq!(json[0]["scopes"], serde_json::json!(["read", "write:all"]));
    assert_eq!(json[0]["token_lifetime"], 600);
    assert!(!json.to_string().contains(secret));

    // A second client gets a different secret; defaults: client_credentials, 3600 s.
    let other = ok(&["client", "add", "other", "--data-dir", d], None);
    assert_ne!(other.trim_end(), secret);
    let row = client_row(&dir, "other");
    assert_eq!(row[2], "client_credentials");
    assert_eq!(row[3], "");
    assert_eq!(row[4], 3600);
}

#[test]
fn issue_5_chosen_client_secret_is_stored_under_the_kdf_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let d = dir.to_str().unwrap();
    let out = ok(
        &["client", "add", "legacy", "--secret-stdin", "--data-dir", d],
        Some("chosen secret value\n"),
    );
    assert!(out.is_empty(), "a chosen secret is not echoed: {out:?}");
    let row = client_row(&dir, "legacy");
    let stored = row[0].as_str().unwrap();
    assert_eq!(
        python(PY_PBKDF2, &[stored, "chosen secret value"]),
        "600000"
    );
    assert!(!contains(&db_bytes(&dir), b"chosen secret value"));
}

#[test]
fn issue_5_rotate_secret_keeps_at_most_two_and_finish_drops_the_previous() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let d = dir.to_str().unwrap();
    let first = ok(&["client", "add", "svc", "--data-dir", d], None);
    let second = ok(&["client", "rotate-secret", "svc", "--data-dir", d], None);
    let (first, second) = (first.trim_end(), second.trim_end());
    assert!(is_secret(second));
    assert_ne!(first, second);
    let row = client_row(&dir, "svc");
    assert_eq!(row[0].as_str().unwrap(), peppered(&dir, second));
    assert_eq!(row[1].as_str().unwrap(), peppered(&dir, first));

    let third = ok(&["client", "rotate-secret", "svc", "--data-dir", d], None);
    let third = third.trim_end();
    let row = client_row(&dir, "svc");
    assert_eq!(row[0].as_str().unwrap(), peppered(&dir, third));
    assert_eq!(
        row[1].as_str().unwrap(),
        peppered(&dir, second),
        "oldest dropped"
    );

    assert!(
        ok(
            &[
                "client",
                "rotate-secret",
                "svc",
                "--finish",
                "--data-dir",
                d
            ],
            None
        )
        .is_empty()
    );
    let row = client_row(&dir, "svc");
    assert_eq!(row[0].as_str().unwrap(), peppered(&dir, third));
    assert_eq!(row[1], serde_json::Value::Null);
    fails(
        &["client", "rotate-secret", "nobody", "--data-dir", d],
        None,
    );
}

#[test]
fn issue_5_client_remove() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("data");
    let d = d.to_str().unwrap();
    ok(&["client", "add", "a", "--data-dir", d], None);
    ok(&["client", "add", "b", "--data-dir", d], None);
    ok(&["client", "remove", "a", "--data-dir", d], None);
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["client", "list", "--json", "--data-dir", d], None)).unwrap();
    let ids: Vec<&str> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["client_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["b"]);
    let err = fails(&["client", "remove", "a", "--data-dir", d], None);
    assert!(err.contains("not found"), "{err}");
}

#[test]
fn issue_5_user_add_list_disable_remove() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let d = dir.to_str().unwrap();
    ok(
        &["user", "add", "alice", "--password-stdin", "--data-dir", d],
        Some("correct horse battery\n"),
    );
    let db = dir.join("portcullis.db");
    let stored = python(
        "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(\
         'SELECT password_hash FROM users WHERE username = ?', ('alice',)).fetchone()[0])",
        &[db.to_str().unwrap()],
    );
    // The trailing newline is not part of the password.
    assert_eq!(
        python(PY_PBKDF2, &[&stored, "correct horse battery"]),
        "600000"
    );
    assert!(!contains(&db_bytes(&dir), b"correct horse battery"));

    let table = ok(&["user", "list", "--data-dir", d], None);
    assert!(
        table.contains("alice") && table.contains("enabled"),
        "{table}"
    );
    assert!(table.contains("pbkdf2-sha256"), "{table}");
    assert!(!table.contains(&stored));

    ok(&["user", "disable", "alice", "--data-dir", d], None);
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["user", "list", "--json", "--data-dir", d], None)).unwrap();
    assert_eq!(json[0]["username"], "alice");
    assert_eq!(json[0]["disabled"], true);

    let err = fails(
        &["user", "add", "alice", "--password-stdin", "--data-dir", d],
        Some("x\n"),
    );
    assert!(err.contains("already exists"), "{err}");
    ok(&["user", "remove", "alice", "--data-dir", d], None);
    assert_eq!(
        ok(&["user", "list", "--json", "--data-dir", d], None).trim(),
        "[]"
    );
    fails(&["user", "remove", "alice", "--data-dir", d], None);
}

#[test]
fn issue_5_bad_input_exits_2_with_one_line_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let d = dir.to_str().unwrap();
    for args in [
        &[
            "client",
            "add",
            "c",
            "--scope",
            "has space",
            "--data-dir",
            d,
        ][..],
        &["client", "add", "c", "--scope", "quote\"", "--data-dir", d],
        &["client", "add", "c", "--grant", "implicit", "--data-dir", d],
        &[
            "client",
            "add",
            "c",
            "--token-lifetime",
            "59",
            "--data-dir",
            d,
        ],
        &[
            "client",
            "add",
            "c",
            "--token-lifetime",
            "86401",
            "--data-dir",
            d,
        ],
        &["client", "add", "", "--data-dir", d],
        &["client", "add", "tab\tid", "--data-dir", d],
    ] {
        let err = fails(args, None);
        assert!(err.contains("invalid input"), "{args:?}: {err}");
    }
    assert!(
        !dir.exists(),
        "refused input must not even create the data directory"
    );
    // Commands that only read or change data do not create a data directory either.
    let err = fails(&["client", "list", "--data-dir", d], None);
    assert!(err.contains("not found"), "{err}");
    assert!(!dir.exists());

    let out = portcullis(&["client", "add", "dup", "--data-dir", d], None);
    assert!(out.status.success());
    let note = String::from_utf8(out.stderr).unwrap();
    assert!(note.contains("created data directory"), "{note}");
    let err = fails(&["client", "add", "dup", "--data-dir", d], None);
    assert!(err.contains("already exists"), "{err}");

    for stdin in ["", "\n", "two\nlines\n"] {
        fails(
            &["user", "add", "bob", "--password-stdin", "--data-dir", d],
            Some(stdin),
        );
    }
    fails(
        &["client", "add", "chosen", "--secret-stdin", "--data-dir", d],
        Some(""),
    );
    assert_eq!(
        ok(&["user", "list", "--json", "--data-dir", d], None).trim(),
        "[]"
    );

    // A secrets file others can read is refused rather than used.
    let secrets = dir.join("secrets.toml");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = fails(&["client", "list", "--data-dir", d], None);
    assert!(err.contains("chmod 600"), "{err}");
}

#[test]
fn issue_5_data_dir_is_created_private() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fresh");
    ok(
        &[
            "user",
            "add",
            "u",
            "--password-stdin",
            "--data-dir",
            dir.to_str().unwrap(),
        ],
        Some("pw\n"),
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("secrets.toml")), 0o600);
    assert_eq!(mode(&dir.join("portcullis.db")), 0o600);
}

#[test]
fn issue_5_rotate_pepper_keeps_old_secrets_verifiable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let d = dir.to_str().unwrap();
    let old = ok(&["client", "add", "before", "--data-dir", d], None);
    let old_hash = client_row(&dir, "before")[0].as_str().unwrap().to_owned();
    assert!(old_hash.starts_with("$hmac-sha256$k=p1$"), "{old_hash}");
    assert_eq!(old_hash, peppered(&dir, old.trim_end()));

    ok(&["client", "rotate-pepper", "--data-dir", d], None);
    let new = ok(&["client", "add", "after", "--data-dir", d], None);
    let new_hash = client_row(&dir, "after")[0].as_str().unwrap().to_owned();
    assert!(new_hash.starts_with("$hmac-sha256$k=p2$"), "{new_hash}");
    assert_eq!(new_hash, peppered(&dir, new.trim_end()));
    // The old key is still in the secrets file and still matches the old hash.
    let secrets = dir.join("secrets.toml");
    let p1 = python(
        r#"
import base64, hashlib, hmac, sys, tomllib
s = tomllib.load(open(sys.argv[1], "rb"))
key = base64.b64decode([p["key"] for p in s["pepper"] if p["id"] == "p1"][0])
tag = hmac.new(key, sys.argv[2].encode(), hashlib.sha256).digest()
print("$hmac-sha256$k=p1$%s" % base64.b64encode(tag).decode().rstrip("="))
"#,
        &[secrets.to_str().unwrap(), old.trim_end()],
    );
    assert_eq!(p1, old_hash);
    assert_eq!(client_row(&dir, "before")[0].as_str().unwrap(), old_hash);
}

#[test]
fn issue_5_user_import_stores_accepted_users_and_reports_refused_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let d = dir.to_str().unwrap();
    ok(
        &[
            "user",
            "add",
            "existing",
            "--password-stdin",
            "--data-dir",
            d,
        ],
        Some("pw\n"),
    );
    // A Django PBKDF2 hash made by Python's hashlib, and OpenWall's bcrypt test vector.
    let django = python(
        "import base64, hashlib; print('pbkdf2_sha256$1000$NaCl$' + base64.b64encode(\
         hashlib.pbkdf2_hmac('sha256', b'django pw', b'NaCl', 1000)).decode())",
        &[],
    );
    let bcrypt = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";
    let file = tmp.path().join("users.tsv");
    std::fs::write(
        &file,
        format!(
            "# exported users\n\
             dj\t{django}\n\
             bc\t{bcrypt}\n\
             broken\tnot-a-hash\n\
             existing\t{bcrypt}\n\
             dj\t{bcrypt}\n"
        ),
    )
    .unwrap();
    let out = portcullis(
        &["user", "import", file.to_str().unwrap(), "--data-dir", d],
        None,
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("imported 2 users"),
        "{stderr}"
    );
    let refused: Vec<&str> = stderr.lines().collect();
    assert_eq!(refused.len(), 3, "{stderr}");
    assert!(refused[0].contains(":4:"), "{stderr}");
    assert!(
        refused[1].contains(":5:") && refused[1].contains("already exists"),
        "{stderr}"
    );
    assert!(
        refused[2].contains(":6:") && refused[2].contains("duplicate"),
        "{stderr}"
    );
    assert!(!stderr.contains(bcrypt), "hashes are not echoed");

    let db = dir.join("portcullis.db");
    let rows = python(
        "import json, sqlite3, sys; print(json.dumps(sqlite3.connect(sys.argv[1]).execute(\
         'SELECT username, password_hash, disabled FROM users ORDER BY username').fetchall()))",
        &[db.to_str().unwrap()],
    );
    let rows: Vec<(String, String, i64)> = serde_json::from_str(&rows).unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(names, ["bc", "dj", "existing"]);
    assert_eq!(rows[0].1, bcrypt);
    assert_eq!(rows[1].1, django);
    assert_ne!(rows[2].1, bcrypt, "an existing user is not overwritten");
    assert!(rows.iter().all(|r| r.2 == 0));

    // A clean file imports completely and exits 0; an unreadable one exits 2.
    let clean = tmp.path().join("clean.tsv");
    std::fs::write(&clean, format!("carol\t{bcrypt}\n")).unwrap();
    let out = ok(
        &["user", "import", clean.to_str().unwrap(), "--data-dir", d],
        None,
    );
    assert!(out.contains("imported 1 user;"), "{out}");
    fails(
        &["user", "import", "/nonexistent/file", "--data-dir", d],
        None,
    );
    fails(
        &[
            "user",
            "import",
            "--format",
            "nope",
            clean.to_str().unwrap(),
            "--data-dir",
            d,
        ],
        None,
    );
}

#[test]
fn issue_5_client_update_changes_settings_but_not_the_secret() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let d = dir.to_str().unwrap();
    let secret = ok(
        &["client", "add", "app", "--scope", "read", "--data-dir", d],
        None,
    );
    ok(
        &[
            "client",
            "update",
            "app",
            "--scope",
            "admin",
            "--scope",
            "read",
            "--grant",
            "password",
            "--token-lifetime",
            "120",
            "--data-dir",
            d,
        ],
        None,
    );
    let row = client_row(&dir, "app");
    assert_eq!(row[0].as_str().unwrap(), peppered(&dir, secret.trim_end()));
    assert_eq!(row[2], "password");
    assert_eq!(row[3], "admin read");
    assert_eq!(row[4], 120);
    ok(
        &["client", "update", "app", "--clear-scopes", "--data-dir", d],
        None,
    );
    let row = client_row(&dir, "app");
    assert_eq!(
        (row[2].as_str(), row[3].as_str(), row[4].as_i64()),
        (Some("password"), Some(""), Some(120))
    );
    fails(&["client", "update", "app", "--data-dir", d], None);
    fails(
        &[
            "client",
            "update",
            "app",
            "--token-lifetime",
            "5",
            "--data-dir",
            d,
        ],
        None,
    );
    fails(
        &[
            "client",
            "update",
            "ghost",
            "--token-lifetime",
            "600",
            "--data-dir",
            d,
        ],
        None,
    );
    assert_eq!(client_row(&dir, "app")[4], 120);
}
