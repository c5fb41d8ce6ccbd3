//! Issue #2: PHC strings `$pbkdf2-<prf>$i=..[,l=..]$<salt>$<hash>`. Expected strings are
//! built from the RFC vectors with base64 computed outside this crate (Python's
//! `base64.b64encode`), and every malformed string must give a clear error, never a panic.

use portcullis_hash::pbkdf2::{Prf, hash_password, parse_phc};
use portcullis_hash::{Credential, FormatError, Peppers};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

/// RFC 7914 section 11, first vector: P="passwd", S="salt", c=1, 64 bytes.
const RFC7914: &str = "$pbkdf2-sha256$i=1,l=64$c2FsdA$VawEblbjCJ/sFpHCJUS2BflBhSFt3gRl5oudV8INrLxJypzM8Xm2RZkWZLOdd+8xfHG4RbHjC9UJESBB06GXgw";
/// RFC 6070, c=4096 (no `l=`, which is optional).
const RFC6070: &str = "$pbkdf2-sha1$i=4096$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE";
/// The published SHA-512 vector for c=4096.
const SHA512: &str = "$pbkdf2-sha512$i=4096,l=64$c2FsdA$0Zexsz2wFD4BixLz0dFHnmzevcyXxcD4f2kC4HL0V7UUPzBgJkGz1VzTNZiMs2uEN2Bg7NUy4Dm3QqI5Q0ry1Q";

#[test]
fn issue_2_phc_vectors_parse_and_verify() {
    let p = parse_phc(RFC7914).unwrap();
    assert_eq!(
        (p.prf, p.iterations, &p.salt[..]),
        (Prf::Sha256, 1, &b"salt"[..])
    );
    assert_eq!(p.hash.len(), 64);
    assert!(p.verify(b"passwd"));
    assert!(!p.verify(b"passwe"));

    let p = parse_phc(RFC6070).unwrap();
    assert_eq!((p.prf, p.iterations, p.hash.len()), (Prf::Sha1, 4096, 20));
    assert!(p.verify(b"password"));
    assert!(!p.verify(b"Password"));

    let p = parse_phc(SHA512).unwrap();
    assert_eq!((p.prf, p.iterations), (Prf::Sha512, 4096));
    assert!(p.verify(b"password"));
    assert!(!p.verify(b""));
}

#[test]
fn issue_2_phc_through_credential_parse() {
    let c = Credential::parse(RFC7914).unwrap();
    assert_eq!(c.algorithm(), "pbkdf2-sha256");
    assert_eq!(c.verify(b"passwd", &Peppers::new()), Ok(true));
    assert_eq!(c.verify(b"password", &Peppers::new()), Ok(false));
}

#[test]
fn issue_2_phc_display_is_the_canonical_string() {
    // Re-encoding a parsed canonical string must give it back byte for byte.
    assert_eq!(parse_phc(RFC7914).unwrap().to_string(), RFC7914);
    assert_eq!(parse_phc(SHA512).unwrap().to_string(), SHA512);
}

#[test]
fn issue_2_created_hashes_verify_against_rustcrypto() {
    for prf in [Prf::Sha1, Prf::Sha256, Prf::Sha512] {
        let s = hash_password(prf, 1000, b"correct horse").unwrap();
        assert!(s.starts_with(&format!(
            "$pbkdf2-{}$i=1000,l={}$",
            prf.name(),
            prf.output_len()
        )));
        let p = parse_phc(&s).unwrap();
        assert_eq!(p.salt.len(), 16);
        let mut expected = vec![0u8; prf.output_len()];
        match prf {
            Prf::Sha1 => {
                pbkdf2::pbkdf2_hmac::<sha1::Sha1>(b"correct horse", &p.salt, 1000, &mut expected)
            }
            Prf::Sha256 => {
                pbkdf2::pbkdf2_hmac::<sha2::Sha256>(b"correct horse", &p.salt, 1000, &mut expected)
            }
            Prf::Sha512 => {
                pbkdf2::pbkdf2_hmac::<sha2::Sha512>(b"correct horse", &p.salt, 1000, &mut expected)
            }
        }
        assert_eq!(p.hash, expected);
        // Fresh salt every time.
        assert_ne!(
            parse_phc(&hash_password(prf, 1000, b"correct horse").unwrap())
                .unwrap()
                .salt,
            p.salt
        );
    }
}

fn err(s: &str) -> String {
    match parse_phc(s) {
        Ok(p) => panic!("{s:?} parsed as {p:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn issue_2_phc_rejects_garbage_with_clear_errors() {
    let cases: &[(&str, &str)] = &[
        ("", "does not start with $pbkdf2-"),
        ("$pbkdf2-sha256$", "expected"),
        ("$pbkdf2-sha256$i=1000$c2FsdA", "expected"),
        ("$pbkdf2-sha256$29000$c2FsdA$SwB5AbdlSJq", "passlib"),
        (
            "$pbkdf2-md5$i=1000$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "unknown PRF",
        ),
        (
            "$pbkdf2-sha256$i=0$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "i=0",
        ),
        (
            "$pbkdf2-sha256$i=-5$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "not a decimal",
        ),
        (
            "$pbkdf2-sha256$i=1e6$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "not a decimal",
        ),
        (
            "$pbkdf2-sha256$i=$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "no value",
        ),
        (
            "$pbkdf2-sha256$i=0100$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "leading zero",
        ),
        (
            "$pbkdf2-sha256$i=100000001$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "above the limit",
        ),
        (
            "$pbkdf2-sha256$i=4294967296$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "above the limit",
        ),
        (
            "$pbkdf2-sha256$i=99999999999999999999999$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "too large",
        ),
        (
            "$pbkdf2-sha256$l=20$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "missing i=",
        ),
        (
            "$pbkdf2-sha256$i=1,i=2$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "twice",
        ),
        (
            "$pbkdf2-sha256$i=1,x=2$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "unknown parameter",
        ),
        (
            "$pbkdf2-sha256$i=1,l=32$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "l=32 but the hash decodes to 20",
        ),
        (
            "$pbkdf2-sha256$i=1$c2Fsd!$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "salt is not valid base64",
        ),
        (
            "$pbkdf2-sha256$i=1$c2FsdA==$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "padding",
        ),
        (
            "$pbkdf2-sha256$i=1$c2FsdA$SwB5AbdlSJq.rUnZJvch0GWkKcE",
            "ab64",
        ),
        ("$pbkdf2-sha256$i=1$c2FsdA$", "empty hash"),
        ("$pbkdf2-sha256$i=1$c2FsdA$S", "hash is not valid base64"),
        (
            "$pbkdf2-sha256$i=1$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcF",
            "hash is not valid base64",
        ),
        ("$pbkdf2-sha256$i=1$c2FsdA$SwB5 AbdlSJq", "whitespace"),
        (
            "$pbkdf2-sha256$i=1$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE$extra",
            "expected 4",
        ),
        (
            "$pbkdf2-sha256$$c2FsdA$SwB5AbdlSJq+rUnZJvch0GWkKcE",
            "empty parameter",
        ),
    ];
    for (s, want) in cases {
        let e = err(s);
        assert!(
            e.contains(want),
            "{s:?}: error {e:?} does not mention {want:?}"
        );
        assert!(!e.contains('\n'), "{s:?}: multi-line error {e:?}");
    }
    assert!(matches!(
        parse_phc(&format!("$pbkdf2-sha256$i=1$c2FsdA${}", "A".repeat(5000))),
        Err(FormatError::Malformed { .. })
    ));
}

#[test]
fn issue_2_phc_random_mutations_never_panic() {
    let seed = StdRng::from_os_rng().next_u64();
    let mut rng = StdRng::seed_from_u64(seed);
    let alphabet = b"$=,.+/0123456789ilsha-pbkdf2AZaz \x00\xff";
    for _ in 0..20_000 {
        let mut s = [RFC7914, RFC6070, SHA512][rng.random_range(0..3)]
            .as_bytes()
            .to_vec();
        for _ in 0..rng.random_range(1..4) {
            let at = rng.random_range(0..s.len());
            match rng.random_range(0..3) {
                0 => s[at] = alphabet[rng.random_range(0..alphabet.len())],
                1 => {
                    s.remove(at);
                }
                _ => s.truncate(at),
            }
            if s.is_empty() {
                break;
            }
        }
        let s = String::from_utf8_lossy(&s);
        // Must return, never panic; a result, if Ok, must re-verify consistently.
        if let Ok(p) = parse_phc(&s) {
            assert!(
                p.iterations >= 1 && !p.hash.is_empty(),
                "seed {seed}: {s:?}"
            );
        }
    }
}
