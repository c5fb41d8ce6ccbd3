//! Issue #7 at the CLI: `portcullis hash verify` accepts hashes written by every supported
//! system (auto-detected and with `--format`), answers a wrong password with exit 1, and a
//! truncated or mangled string with exit 2 and a one-line message (never a panic).

// Test helpers outside #[test] fns: a failed unwrap is a test failure with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn verify(stored: &str, format: Option<&str>, password: &str) -> Output {
    let mut args = vec!["hash", "verify", "--password-stdin", "--hash", stored];
    if let Some(f) = format {
        args.extend(["--format", f]);
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_portcullis"))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn portcullis");
    let mut stdin = child.stdin.take().unwrap();
    // The process exits before reading stdin when the hash is refused: a broken pipe here
    // is expected then, and the exit status below is what is checked.
    let _ = stdin.write_all(format!("{password}\n").as_bytes());
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// The first matching (password, stored) row of a test-vector file whose stored string
/// contains `needle`.
fn vector(file: &str, needle: &str) -> (String, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("test-vectors")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|f| f.len() == 3 && f[2] == "true" && f[1].contains(needle))
        .map(|f| (f[0].to_owned(), f[1].to_owned()))
        .unwrap_or_else(|| panic!("no {needle:?} vector in {file}"))
}

fn samples() -> Vec<((String, String), &'static str)> {
    vec![
        (vector("django.tsv", "pbkdf2_sha256$1000$"), "django"),
        (vector("django.tsv", "argon2$argon2id$v=19$m=64,"), "django"),
        (vector("django.tsv", "bcrypt_sha256$"), "django"),
        (vector("passlib.tsv", "$pbkdf2-sha256$1000$"), "passlib"),
        (vector("passlib.tsv", "{SSHA512}"), "ldap"),
        (vector("argon2.tsv", "$argon2id$v=19$m=64,"), "phc"),
        (vector("bcrypt.tsv", "$2b$04$"), "bcrypt"),
        (vector("werkzeug.tsv", "scrypt:1024:8:1$"), "werkzeug"),
        (vector("aspnet.tsv", "AQAAAA"), "aspnet"),
        (
            vector("freeradius.tsv", "{X-PBKDF2}HMACSHA2+256:AAAD6A==:"),
            "freeradius",
        ),
        (vector("keycloak.tsv", "pbkdf2-sha512"), "keycloak"),
    ]
}

fn assert_exit_2_one_line(out: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
    assert!(
        stderr.starts_with("portcullis: error: "),
        "{what}: {stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{what}: {stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
}

#[test]
fn issue_7_verify_accepts_every_system_and_rejects_wrong_passwords() {
    for ((password, stored), format) in samples() {
        let ok = verify(&stored, None, &password);
        assert_eq!(
            ok.status.code(),
            Some(0),
            "{format}: {}",
            String::from_utf8_lossy(&ok.stderr)
        );
        let forced = verify(&stored, Some(format), &password);
        assert_eq!(
            forced.status.code(),
            Some(0),
            "{format} forced: {}",
            String::from_utf8_lossy(&forced.stderr)
        );
        let wrong = verify(&stored, None, &format!("{password}x"));
        assert_eq!(
            wrong.status.code(),
            Some(1),
            "{format}: wrong password accepted"
        );
    }
}

#[test]
fn issue_7_truncated_and_mangled_hashes_exit_2_with_a_message() {
    for ((password, stored), format) in samples() {
        // Cut in the middle of the parameters, and mid-way: neither can be a valid hash.
        for cut in [stored.len() / 3, stored.len() * 2 / 3] {
            let mut at = cut;
            while !stored.is_char_boundary(at) {
                at -= 1;
            }
            let out = verify(&stored[..at], None, &password);
            assert_exit_2_one_line(&out, &format!("{format} cut at {at}"));
        }
        // A separator replaced by a character no format allows there.
        let mangled = stored.replacen(['$', ':', '}'], "\u{1}", 1);
        if mangled != stored {
            assert_exit_2_one_line(
                &verify(&mangled, None, &password),
                &format!("{format} mangled"),
            );
        }
    }
    assert_exit_2_one_line(
        &verify(
            "$argon2id$v=19$m=99999999,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
            None,
            "x",
        ),
        "huge m",
    );
    assert_exit_2_one_line(
        &verify(
            "pbkdf2_sha256$0$salt$aZOLUDnbVq4qfmIhIFCkAqvDNHspRzj9l43SgVe7GOM=",
            None,
            "x",
        ),
        "0 iterations",
    );
    let (_, django) = vector("django.tsv", "pbkdf2_sha256$1000$");
    let out = verify(&django, Some("werkzeug"), "x");
    assert_exit_2_one_line(&out, "django hash as --format werkzeug");
    assert_exit_2_one_line(&verify(&django, Some("md5"), "x"), "unknown --format");
}
