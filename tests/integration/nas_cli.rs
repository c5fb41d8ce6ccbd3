//! Issue #12: `portcullis nas ...` against a data directory in a temp dir. What the
//! commands stored is read with Python's `sqlite3`, not through our store code.

// Test helpers: a failed step is a test failure, so panicking is the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use super::store_cli::{fails, ok, portcullis, python};

/// Python: print every file of the data dir's database (main file, WAL, shm) as hex, so a
/// test can look for a secret's bytes anywhere SQLite may have put them.
const PY_DB_BYTES_HEX: &str = r#"
import glob, sys
print("".join(open(f, "rb").read().hex() for f in sorted(glob.glob(sys.argv[1] + "/portcullis.db*"))))
"#;

/// Python: the NAS row (name, cidr, require_message_authenticator, sealed length) as JSON.
const PY_NAS_ROW: &str = r#"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1] + "/portcullis.db")
row = db.execute("SELECT name, cidr, require_message_authenticator, length(secret_sealed), hex(secret_sealed) FROM nas WHERE name = ?", (sys.argv[2],)).fetchone()
print(json.dumps(row))
"#;

fn dir_arg(dir: &Path) -> String {
    dir.to_str().unwrap().to_owned()
}

#[test]
fn issue_12_nas_add_prints_a_generated_secret_once_and_stores_it_sealed() {
    let tmp = tempfile::tempdir().unwrap();
    let d = dir_arg(&tmp.path().join("data"));
    let out = portcullis(
        &[
            "nas",
            "add",
            "wifi-1",
            "--address",
            "10.1.0.0/16",
            "--data-dir",
            &d,
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let secret = stdout.trim();
    assert_eq!(stdout.lines().count(), 1, "only the secret on stdout");
    assert_eq!(secret.len(), 32, "generated secrets are 32 characters");
    assert!(
        secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "printable, NAS-UI-safe characters: {secret:?}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains(secret), "the secret goes to stdout only");

    // Neither the database nor `list` shows it; the row holds a sealed blob instead.
    let hex_secret: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    let db = python(PY_DB_BYTES_HEX, &[&d]);
    assert!(!db.is_empty());
    assert!(
        !db.contains(&hex_secret),
        "plaintext secret found in the database"
    );
    let row: serde_json::Value =
        serde_json::from_str(&python(PY_NAS_ROW, &[&d, "wifi-1"])).unwrap();
    assert_eq!(row[0], "wifi-1");
    assert_eq!(row[1], "10.1.0.0/16");
    assert_eq!(row[2], 1, "Message-Authenticator required by default");
    assert!(
        row[3].as_u64().unwrap() > 32,
        "sealed: nonce + ciphertext + tag"
    );
    let listed = ok(&["nas", "list", "--json", "--data-dir", &d], None);
    assert!(!listed.contains(secret));
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["name"], "wifi-1");
    assert_eq!(listed[0]["address"], "10.1.0.0/16");
    assert_eq!(listed[0]["require_message_authenticator"], true);
    assert!(listed[0].get("secret").is_none());

    // A second run generates a different secret (not a constant or a derived value).
    let other = ok(
        &[
            "nas",
            "add",
            "wifi-2",
            "--address",
            "10.2.0.1",
            "--data-dir",
            &d,
        ],
        None,
    );
    assert_ne!(other.trim(), secret);
    let table = ok(&["nas", "list", "--data-dir", &d], None);
    assert!(
        table.contains("10.2.0.1/32"),
        "a bare address is one host: {table}"
    );
}

#[test]
fn issue_12_nas_chosen_secret_rotation_and_removal() {
    let tmp = tempfile::tempdir().unwrap();
    let d = dir_arg(&tmp.path().join("data"));
    let chosen = "a chosen secret that is long enough";
    let out = portcullis(
        &[
            "nas",
            "add",
            "vpn",
            "--address",
            "2001:db8::/64",
            "--secret-stdin",
            "--data-dir",
            &d,
        ],
        Some(&format!("{chosen}\n")),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "a chosen secret is never echoed");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    let before: serde_json::Value =
        serde_json::from_str(&python(PY_NAS_ROW, &[&d, "vpn"])).unwrap();
    let hex_chosen: String = chosen.bytes().map(|b| format!("{b:02x}")).collect();
    assert!(!python(PY_DB_BYTES_HEX, &[&d]).contains(&hex_chosen));

    let rotated = ok(&["nas", "rotate-secret", "vpn", "--data-dir", &d], None);
    let new_secret = rotated.trim();
    assert_eq!(new_secret.len(), 32);
    let after: serde_json::Value = serde_json::from_str(&python(PY_NAS_ROW, &[&d, "vpn"])).unwrap();
    assert_ne!(before[4], after[4], "rotation replaced the sealed secret");

    let set = portcullis(
        &[
            "nas",
            "set",
            "vpn",
            "--require-message-authenticator",
            "false",
            "--data-dir",
            &d,
        ],
        None,
    );
    assert!(set.status.success());
    let row: serde_json::Value = serde_json::from_str(&python(PY_NAS_ROW, &[&d, "vpn"])).unwrap();
    assert_eq!(row[2], 0);

    ok(&["nas", "remove", "vpn", "--data-dir", &d], None);
    assert_eq!(python(PY_NAS_ROW, &[&d, "vpn"]), "null");
    let err = fails(&["nas", "remove", "vpn", "--data-dir", &d], None);
    assert!(err.contains("not found"), "{err}");
}

#[test]
fn issue_12_nas_short_secret_is_accepted_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let d = dir_arg(&tmp.path().join("data"));
    let out = portcullis(
        &[
            "nas",
            "add",
            "old-switch",
            "--address",
            "192.0.2.7",
            "--secret-stdin",
            "--data-dir",
            &d,
        ],
        Some("testing123\n"),
    );
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("warning"), "{stderr}");
    assert!(!stderr.contains("testing123"), "never echo the secret");
    // 13 octets: no warning.
    let out = portcullis(
        &[
            "nas",
            "add",
            "newer",
            "--address",
            "192.0.2.8",
            "--secret-stdin",
            "--data-dir",
            &d,
        ],
        Some("testing123456\n"),
    );
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    // 128 octets accepted, 129 refused.
    let long = "x".repeat(128);
    ok(
        &[
            "nas",
            "add",
            "long",
            "--address",
            "192.0.2.9",
            "--secret-stdin",
            "--data-dir",
            &d,
        ],
        Some(&long),
    );
    let err = fails(
        &[
            "nas",
            "add",
            "longer",
            "--address",
            "192.0.2.10",
            "--secret-stdin",
            "--data-dir",
            &d,
        ],
        Some(&"x".repeat(129)),
    );
    assert!(err.contains("1-128 octets"), "{err}");
}

#[test]
fn issue_12_nas_bad_input_is_one_clear_error_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = dir_arg(&tmp.path().join("data"));
    for (args, stdin, expect) in [
        (
            vec!["nas", "add", "x", "--address", "10.0.0.1/8"],
            None,
            "host bits",
        ),
        (
            vec!["nas", "add", "x", "--address", "not-an-ip"],
            None,
            "not an IP address",
        ),
        (
            vec!["nas", "add", "x", "--address", "10.0.0.0/33"],
            None,
            "prefix length",
        ),
        (
            vec!["nas", "add", "bad name", "--address", "10.0.0.1"],
            None,
            "NAS name",
        ),
        (
            vec!["nas", "add", &"n".repeat(65), "--address", "10.0.0.1"],
            None,
            "NAS name",
        ),
        (
            vec!["nas", "add", "x", "--address", "10.0.0.1", "--secret-stdin"],
            Some("\n"),
            "empty",
        ),
        (
            vec!["nas", "add", "x", "--address", "10.0.0.1", "--secret-stdin"],
            Some("a\nb\n"),
            "one line",
        ),
    ] {
        let mut args = args;
        args.extend(["--data-dir", &d]);
        let err = fails(&args, stdin);
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    assert!(
        !tmp.path().join("data").exists(),
        "refused input created the data dir"
    );

    ok(
        &[
            "nas",
            "add",
            "a",
            "--address",
            "10.0.0.0/24",
            "--data-dir",
            &d,
        ],
        None,
    );
    let err = fails(
        &[
            "nas",
            "add",
            "a",
            "--address",
            "10.9.0.0/24",
            "--data-dir",
            &d,
        ],
        None,
    );
    assert!(err.contains("already exists"), "{err}");
    let err = fails(
        &[
            "nas",
            "add",
            "b",
            "--address",
            "10.0.0.0/24",
            "--data-dir",
            &d,
        ],
        None,
    );
    assert!(
        err.contains("10.0.0.0/24") && err.contains("already exists"),
        "{err}"
    );
    let err = fails(&["nas", "rotate-secret", "missing", "--data-dir", &d], None);
    assert!(err.contains("not found"), "{err}");
}
