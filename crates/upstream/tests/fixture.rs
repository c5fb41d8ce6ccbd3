//! scripts/slapd, the fixture every LDAP test, benchmark and demo uses: checked with
//! OpenLDAP's own tools (ldap-utils), not with this crate.

// The helpers fail the test with the reason when a tool cannot run.
#![allow(clippy::expect_used)]

mod common;

use std::process::Command;

use base64::Engine as _;

use common::Slapd;

/// `ldapwhoami` as `dn` with `password` against `url`; its exit code (0, 49, 255...).
fn whoami(slapd: &Slapd, url: &str, dn: &str, password: &str) -> i32 {
    let mut cmd = Command::new("ldapwhoami");
    cmd.args(["-x", "-H", url, "-D", dn, "-w", password])
        .env("LDAPTLS_CACERT", slapd.get("ca_file"));
    if url.starts_with("ldap://") {
        cmd.arg("-ZZ");
    }
    let out = cmd.output().expect("ldapwhoami");
    out.status.code().unwrap_or(-1)
}

fn user(slapd: &Slapd, n: u32) -> String {
    format!("uid=user{n},{}", slapd.people())
}

#[test]
fn users_are_pbkdf2_sha256_and_ppolicy_locks_after_max_failures() {
    let slapd = Slapd::start(&["--users", "3", "--ppolicy", "3"]);
    let (ldap, ldaps) = (slapd.get("ldap_url"), slapd.get("ldaps_url"));
    assert_eq!(whoami(&slapd, ldap, &user(&slapd, 1), "password1"), 0);
    assert_eq!(whoami(&slapd, ldaps, &user(&slapd, 1), "password1"), 0);
    assert_eq!(whoami(&slapd, ldaps, &user(&slapd, 1), "password2"), 49);

    // The stored value is pw-pbkdf2's, with the iterations asked for.
    let out = Command::new("ldapsearch")
        .args([
            "-LLL",
            "-x",
            "-ZZ",
            "-o",
            "ldif-wrap=no",
            "-H",
            ldap,
            "-D",
            slapd.get("admin_dn"),
            "-w",
        ])
        .arg(slapd.get("admin_password"))
        .args(["-b", &user(&slapd, 1), "-s", "base", "userPassword"])
        .env("LDAPTLS_CACERT", slapd.get("ca_file"))
        .output()
        .expect("ldapsearch");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let value = text
        .lines()
        .find_map(|l| l.strip_prefix("userPassword:: "))
        .expect("userPassword (base64)");
    let value = base64::engine::general_purpose::STANDARD
        .decode(value)
        .expect("base64");
    let value = String::from_utf8_lossy(&value);
    assert!(value.starts_with("{PBKDF2-SHA256}2000$"), "{value}");

    // The service account reads entries (not passwords).
    assert_eq!(
        whoami(
            &slapd,
            ldap,
            slapd.get("service_dn"),
            slapd.get("service_password")
        ),
        0
    );

    // Three wrong binds lock user2: its right password is then refused; user3 is untouched.
    for _ in 0..3 {
        assert_eq!(whoami(&slapd, ldaps, &user(&slapd, 2), "guess"), 49);
    }
    assert_eq!(whoami(&slapd, ldaps, &user(&slapd, 2), "password2"), 49);
    assert_eq!(whoami(&slapd, ldaps, &user(&slapd, 3), "password3"), 0);

    // Stopped, it answers nothing; restarted, the lock and the users are still there.
    slapd.stop();
    assert_ne!(whoami(&slapd, ldaps, &user(&slapd, 3), "password3"), 0);
    slapd.restart();
    assert_eq!(whoami(&slapd, ldaps, &user(&slapd, 3), "password3"), 0);
    assert_eq!(whoami(&slapd, ldaps, &user(&slapd, 2), "password2"), 49);
}
