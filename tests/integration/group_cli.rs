//! Issue 39 on the command line: `portcullis user add/set/show/import` with directory
//! attributes and `portcullis group ...`, against a data directory in a temp dir. What
//! the commands wrote is read back with Python's `sqlite3`, not through our code.

// Test helpers: a failed step is a test failure, so panicking is the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::store_cli::{fails, ok, portcullis, python};

/// Rows of `sql` as JSON text, read with Python's sqlite3.
fn query(db: &std::path::Path, sql: &str) -> serde_json::Value {
    let out = python(
        "import json, sqlite3, sys\n\
         db = sqlite3.connect(sys.argv[1])\n\
         print(json.dumps(db.execute(sys.argv[2]).fetchall()))",
        &[db.to_str().unwrap(), sql],
    );
    serde_json::from_str(&out).unwrap()
}

#[test]
fn issue_39_users_with_attributes_and_groups_on_the_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("data");
    let d = d.to_str().unwrap();
    let db = tmp.path().join("data/portcullis.db");
    let dd = ["--data-dir", d];
    let with = |args: &[&'static str]| -> Vec<&str> {
        args.iter().copied().chain(dd.iter().copied()).collect()
    };

    ok(
        &with(&[
            "user",
            "add",
            "alice",
            "--password-stdin",
            "--cn",
            "Alice Liddell",
            "--mail",
            "alice@example.com",
            "--uid-number",
            "10001",
            "--gid-number",
            "10000",
            "--home-directory",
            "/home/alice",
        ]),
        Some("alice pw\n"),
    );
    ok(
        &with(&["user", "add", "bob", "--password-stdin"]),
        Some("bob pw\n"),
    );
    let rows = query(
        &db,
        "SELECT username, cn, mail, uid_number, gid_number, home_directory, login_shell, \
         entry_uuid FROM users ORDER BY username",
    );
    assert_eq!(
        rows[0].as_array().unwrap()[..7],
        serde_json::json!([
            "alice",
            "Alice Liddell",
            "alice@example.com",
            10001,
            10000,
            "/home/alice",
            null
        ])
        .as_array()
        .unwrap()[..]
    );
    assert_eq!(rows[1][1], serde_json::Value::Null);
    let uuids: Vec<&str> = [&rows[0][7], &rows[1][7]]
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_ne!(uuids[0], uuids[1]);
    assert!(
        uuids
            .iter()
            .all(|u| u.len() == 36 && u.chars().nth(14) == Some('4'))
    );

    // Bad values are refused with one clear line; a taken uidNumber too.
    let e = fails(
        &with(&[
            "user",
            "add",
            "carol",
            "--password-stdin",
            "--uid-number",
            "0",
            "--gid-number",
            "1",
            "--home-directory",
            "/h",
        ]),
        Some("pw\n"),
    );
    assert!(e.contains("uidNumber"), "{e}");
    let e = fails(
        &with(&["user", "set", "bob", "--login-shell", "/bin/sh"]),
        None,
    );
    assert!(e.contains("POSIX account needs"), "{e}");
    let e = fails(
        &with(&[
            "user",
            "set",
            "bob",
            "--uid-number",
            "10001",
            "--gid-number",
            "1",
            "--home-directory",
            "/home/bob",
        ]),
        None,
    );
    assert!(e.contains("uidNumber 10001 already exists"), "{e}");
    let e = fails(
        &with(&["user", "set", "bob", "--home-directory", "relative"]),
        None,
    );
    assert!(!e.is_empty());

    // set changes only what it names; --unset clears.
    ok(
        &with(&[
            "user",
            "set",
            "alice",
            "--login-shell",
            "/bin/zsh",
            "--unset",
            "mail",
        ]),
        None,
    );
    let rows = query(
        &db,
        "SELECT mail, login_shell, cn FROM users WHERE username = 'alice'",
    );
    assert_eq!(
        rows[0],
        serde_json::json!([null, "/bin/zsh", "Alice Liddell"])
    );

    // Groups: members must be users; membership shows on the user.
    let e = fails(
        &with(&["group", "add", "staff", "--member", "nobody"]),
        None,
    );
    assert!(e.contains("nobody"), "{e}");
    ok(
        &with(&[
            "group",
            "add",
            "staff",
            "--gid-number",
            "10000",
            "--member",
            "alice",
        ]),
        None,
    );
    ok(&with(&["group", "member", "add", "staff", "bob"]), None);
    let e = fails(
        &with(&["group", "add", "other", "--gid-number", "10000"]),
        None,
    );
    assert!(e.contains("gidNumber 10000"), "{e}");
    let rows = query(
        &db,
        "SELECT group_name, username FROM group_members ORDER BY username",
    );
    assert_eq!(
        rows,
        serde_json::json!([["staff", "alice"], ["staff", "bob"]])
    );
    let shown: serde_json::Value =
        serde_json::from_str(&ok(&with(&["user", "show", "alice", "--json"]), None)).unwrap();
    assert_eq!(shown["groups"], serde_json::json!(["staff"]));
    assert_eq!(shown["entry_uuid"], uuids[0]);
    let listed: serde_json::Value =
        serde_json::from_str(&ok(&with(&["group", "list", "--json"]), None)).unwrap();
    assert_eq!(listed[0]["members"], serde_json::json!(["alice", "bob"]));

    // Removing a user ends its memberships; removing a member, the group's record.
    ok(&with(&["user", "remove", "bob"]), None);
    let rows = query(&db, "SELECT username FROM group_members");
    assert_eq!(rows, serde_json::json!([["alice"]]));
    ok(
        &with(&["group", "member", "remove", "staff", "alice"]),
        None,
    );
    ok(
        &with(&[
            "group",
            "set",
            "staff",
            "--clear-gid-number",
            "--description",
            "All",
        ]),
        None,
    );
    let rows = query(&db, "SELECT gid_number, description FROM groups");
    assert_eq!(rows, serde_json::json!([[null, "All"]]));
    ok(&with(&["group", "remove", "staff"]), None);
    let e = fails(&with(&["group", "show", "staff"]), None);
    assert!(e.contains("not found"), "{e}");
}

/// The hash field of the first true line of a test-vector file whose hash contains
/// `needle`.
fn vector(file: &str, needle: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test-vectors")
        .join(file);
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|f| f.len() == 3 && f[2] == "true" && f[1].contains(needle))
        .map(|f| f[1].to_owned())
        .unwrap()
}

#[test]
fn issue_39_import_reads_attribute_columns_and_keycloak_profiles() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("data");
    let d = d.to_str().unwrap();
    let db = tmp.path().join("data/portcullis.db");
    // Third-party hashes of the test vectors (made by `test-vectors/generate.py`).
    let hash = vector("bcrypt.tsv", "$2b$04$");
    let file = tmp.path().join("users.txt");
    std::fs::write(
        &file,
        format!(
            "alice\t{hash}\tcn=Alice Liddell\tmail=alice@example.com\tuid_number=20001\t\
             gid_number=20000\thome_directory=/home/alice\n\
             bob\t{hash}\n\
             carol\t{hash}\tuid_number=zero\n\
             dave\t{hash}\tshoe_size=9\n\
             erin\t{hash}\tuid_number=20001\tgid_number=1\thome_directory=/home/erin\n"
        ),
    )
    .unwrap();
    let out = portcullis(
        &["user", "import", file.to_str().unwrap(), "--data-dir", d],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(":3: uid_number must be a number"),
        "{stderr}"
    );
    assert!(
        stderr.contains(":4: unknown column \"shoe_size\""),
        "{stderr}"
    );
    let rows = query(
        &db,
        "SELECT username, cn, mail, uid_number, home_directory FROM users ORDER BY username",
    );
    assert_eq!(
        rows,
        serde_json::json!([
            [
                "alice",
                "Alice Liddell",
                "alice@example.com",
                20001,
                "/home/alice"
            ],
            ["bob", null, null, null, null]
        ])
    );

    // A Keycloak realm export: names, email and POSIX user attributes are taken.
    let cred = vector("keycloak.tsv", "pbkdf2");
    let realm = format!(
        r#"{{"realm":"r","users":[{{"username":"erin","firstName":"Erin","lastName":"Example","email":"erin@example.com","attributes":{{"uidNumber":["20002"],"gidNumber":["20000"],"homeDirectory":["/home/erin"]}},"credentials":[{cred}]}}]}}"#
    );
    let file = tmp.path().join("realm.json");
    std::fs::write(&file, realm).unwrap();
    ok(
        &["user", "import", file.to_str().unwrap(), "--data-dir", d],
        None,
    );
    let rows = query(
        &db,
        "SELECT given_name, sn, cn, mail, uid_number, gid_number, home_directory FROM users \
         WHERE username = 'erin'",
    );
    assert_eq!(
        rows,
        serde_json::json!([[
            "Erin",
            "Example",
            "Erin Example",
            "erin@example.com",
            20002,
            20000,
            "/home/erin"
        ]])
    );
}
