//! Issue #7: hashes written by the real systems (test-vectors/*.tsv, produced by
//! test-vectors/generate.py; see test-vectors/README.md) verify with the right password and
//! fail with a wrong one, through auto-detection and through `--format`.

// Test helpers outside #[test] fns: a failed unwrap is a test failure with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use portcullis_hash::{Cost, Credential, Format, Peppers, Policy};

struct Row {
    line: usize,
    password: String,
    stored: String,
    expected: bool,
}

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../test-vectors")
}

fn rows(file: &str) -> Vec<Row> {
    let text = std::fs::read_to_string(vectors_dir().join(file))
        .unwrap_or_else(|e| panic!("reading {file}: {e}"));
    let rows: Vec<Row> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 3, "{file}:{}: expected 3 fields", i + 1);
            Row {
                line: i + 1,
                password: f[0].to_owned(),
                stored: f[1].to_owned(),
                expected: match f[2] {
                    "true" => true,
                    "false" => false,
                    other => panic!("{file}:{}: expected {other:?}", i + 1),
                },
            }
        })
        .collect();
    assert!(rows.len() >= 10, "{file}: only {} rows", rows.len());
    assert!(rows.iter().any(|r| r.expected) && rows.iter().any(|r| !r.expected));
    rows
}

fn check_file(file: &str, format: Format) -> Vec<Credential> {
    let peppers = Peppers::new();
    let mut creds = Vec::new();
    for r in rows(file) {
        let at = format!("{file}:{}", r.line);
        let auto = Credential::parse(&r.stored).unwrap_or_else(|e| panic!("{at}: parse: {e}"));
        let forced = Credential::parse_as(&r.stored, format)
            .unwrap_or_else(|e| panic!("{at}: parse_as: {e}"));
        // The forced parse is verified too unless it is the very same credential.
        let both = [("auto", &auto), ("forced", &forced)];
        let checks = if forced == auto {
            &both[..1]
        } else {
            &both[..]
        };
        for (how, c) in checks {
            let ok = c
                .verify(r.password.as_bytes(), &peppers)
                .unwrap_or_else(|e| panic!("{at}: {how}: verify: {e}"));
            assert_eq!(ok, r.expected, "{at}: {how}: {} verify", c.algorithm());
        }
        if r.expected && auto.cost() < Cost::Work(1_000_000) {
            // And the obvious wrong passwords fail too (skipped for the realistic-cost rows
            // to keep the test fast; their `false` rows still cover them).
            for wrong in [
                String::new(),
                r.password.to_uppercase() + "x",
                r.password[1..].to_owned(),
            ] {
                assert!(
                    !auto.verify(wrong.as_bytes(), &peppers).unwrap(),
                    "{at}: {wrong:?} accepted"
                );
            }
        }
        // Imported formats are always upgraded to the server's policy after a login.
        assert!(Policy::default().needs_rehash(&auto), "{at}: not rehashed");
        creds.push(auto);
    }
    creds
}

#[test]
fn issue_7_django_vectors() {
    let creds = check_file("django.tsv", Format::Django);
    assert!(creds.iter().all(|c| c.format() == "django"));
    for alg in [
        "pbkdf2-sha256",
        "pbkdf2-sha1",
        "argon2id",
        "bcrypt-sha256",
        "bcrypt",
        "scrypt",
    ] {
        assert!(
            creds.iter().any(|c| c.algorithm() == alg),
            "no {alg} vector"
        );
    }
}

#[test]
fn issue_7_passlib_vectors() {
    let creds = check_file("passlib.tsv", Format::Passlib);
    for alg in [
        "pbkdf2-sha1",
        "pbkdf2-sha256",
        "pbkdf2-sha512",
        "scrypt",
        "argon2id",
        "argon2i",
        "ssha",
        "ssha256",
        "ssha512",
        "sha1",
        "bcrypt-sha256",
    ] {
        assert!(
            creds.iter().any(|c| c.algorithm() == alg),
            "no {alg} vector"
        );
    }
}

#[test]
fn issue_7_argon2_reference_vectors() {
    let creds = check_file("argon2.tsv", Format::Phc);
    for alg in ["argon2id", "argon2i", "argon2d"] {
        assert!(
            creds.iter().any(|c| c.algorithm() == alg),
            "no {alg} vector"
        );
    }
    assert!(creds.iter().all(|c| c.batch_key().is_none()));
}

#[test]
fn issue_7_bcrypt_vectors() {
    let creds = check_file("bcrypt.tsv", Format::Bcrypt);
    assert!(
        creds
            .iter()
            .all(|c| c.algorithm() == "bcrypt" && c.batch_key().is_none())
    );
}

#[test]
fn issue_7_werkzeug_vectors() {
    let creds = check_file("werkzeug.tsv", Format::Werkzeug);
    assert!(creds.iter().any(|c| c.algorithm() == "scrypt"));
    assert!(creds.iter().any(|c| c.batch_key().is_some()));
}

#[test]
fn issue_7_aspnet_identity_vectors() {
    let creds = check_file("aspnet.tsv", Format::AspNet);
    assert!(creds.iter().all(|c| c.format() == "aspnet"));
}

#[test]
fn issue_7_freeradius_vectors() {
    check_file("freeradius.tsv", Format::FreeRadius);
}

#[test]
fn issue_7_keycloak_vectors() {
    let creds = check_file("keycloak.tsv", Format::Keycloak);
    assert!(creds.iter().any(|c| c.algorithm() == "argon2id"));
    assert!(creds.iter().any(|c| c.algorithm() == "pbkdf2-sha512"));
}

#[test]
fn issue_7_forced_format_refuses_other_systems_hashes() {
    let django = &rows("django.tsv")[0].stored;
    let werkzeug = &rows("werkzeug.tsv")[0].stored;
    assert!(Credential::parse_as(django, Format::Werkzeug).is_err());
    assert!(Credential::parse_as(werkzeug, Format::Django).is_err());
    assert!(Credential::parse_as(werkzeug, Format::Phc).is_err());
    assert!(Credential::parse_as(django, Format::AspNet).is_err());
}

#[test]
fn issue_7_cost_is_monotonic_in_parameters_and_cheap_for_salted_sha() {
    let cost = |s: &str| Credential::parse(s).unwrap().cost();
    let argon = |m: u32, t: u32| {
        cost(&format!(
            "$argon2id$v=19$m={m},t={t},p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
        ))
    };
    assert!(argon(65536, 2) > argon(19456, 2));
    assert!(argon(19456, 3) > argon(19456, 2));
    let bc = |c: u32| {
        cost(&format!(
            "$2b${c:02}$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"
        ))
    };
    assert!(bc(11) > bc(10));
    let ssha = rows("passlib.tsv")
        .into_iter()
        .find(|r| r.stored.starts_with("{SSHA}"))
        .unwrap();
    assert_eq!(cost(&ssha.stored), Cost::Cheap);
}

#[test]
fn issue_7_keycloak_realm_export_imports_and_verifies() {
    let json = std::fs::read(vectors_dir().join("keycloak-realm.json")).unwrap();
    let passwords = std::fs::read_to_string(vectors_dir().join("keycloak-realm.txt")).unwrap();
    let report = portcullis_hash::import::import(&json, None);
    let users: Vec<&str> = report.accepted.iter().map(|(_, u, _)| u.as_str()).collect();
    assert_eq!(users, ["user0", "user1", "user2"], "{:?}", report.rejected);
    assert_eq!(report.rejected.len(), 2, "{:?}", report.rejected);
    assert!(
        report
            .rejected
            .iter()
            .all(|(line, reason)| *line > 1 && reason.contains("no password"))
    );
    for line in passwords.lines().filter(|l| !l.starts_with('#')) {
        let (user, password) = line.split_once('\t').unwrap();
        let (_, _, stored) = report.accepted.iter().find(|(_, u, _)| u == user).unwrap();
        let c = Credential::parse(stored).unwrap();
        assert_eq!(c.format(), "keycloak");
        assert!(
            c.verify(password.as_bytes(), &Peppers::new()).unwrap(),
            "{user}"
        );
        assert!(!c.verify(b"wrong", &Peppers::new()).unwrap(), "{user}");
    }
}

#[test]
fn issue_7_tsv_import_of_every_system() {
    // One user per vector row of every file, as `username<TAB>stored`, with --format off.
    let mut input = String::from("# exported from several systems\n\n");
    let mut expected = 0;
    for file in [
        "django.tsv",
        "passlib.tsv",
        "argon2.tsv",
        "bcrypt.tsv",
        "werkzeug.tsv",
        "aspnet.tsv",
        "freeradius.tsv",
        "keycloak.tsv",
    ] {
        for (i, r) in rows(file).into_iter().filter(|r| r.expected).enumerate() {
            input.push_str(&format!("{file}-{i}\t{}\n", r.stored));
            expected += 1;
        }
    }
    input.push_str("broken\t$argon2id$v=19$m=65536\n");
    let report = portcullis_hash::import::import(input.as_bytes(), None);
    assert_eq!(report.accepted.len(), expected, "{:?}", report.rejected);
    assert_eq!(report.rejected.len(), 1);
    assert!(
        report.rejected[0].1.contains("argon2"),
        "{:?}",
        report.rejected
    );
}
