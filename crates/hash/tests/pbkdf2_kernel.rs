//! Issue #2: the PBKDF2 kernel against published vectors (RFC 6070, RFC 7914 section 11,
//! the widely used PBKDF2-HMAC-SHA512 vectors), RustCrypto's `pbkdf2` crate and Python's
//! `hashlib.pbkdf2_hmac`, on the auto-selected backend (SHA-NI here) and the forced
//! portable one.

use std::io::Write;
use std::process::{Command, Stdio};

use portcullis_hash::pbkdf2::{Backend, Prf, backend_name, pbkdf2_hmac, pbkdf2_hmac_on};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

const BACKENDS: [Backend; 2] = [Backend::Auto, Backend::Portable];

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn check(prf: Prf, password: &[u8], salt: &[u8], iterations: u32, expected_hex: &str) {
    for backend in BACKENDS {
        let mut out = vec![0u8; expected_hex.len() / 2];
        pbkdf2_hmac_on(backend, prf, password, salt, iterations, &mut out);
        assert_eq!(
            hex(&out),
            expected_hex,
            "{prf:?} c={iterations} on {}",
            backend_name(prf, backend)
        );
    }
}

#[test]
fn issue_2_rfc6070_sha1_vectors() {
    let p = b"password";
    let s = b"salt";
    check(
        Prf::Sha1,
        p,
        s,
        1,
        "0c60c80f961f0e71f3a9b524af6012062fe037a6",
    );
    check(
        Prf::Sha1,
        p,
        s,
        2,
        "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957",
    );
    check(
        Prf::Sha1,
        p,
        s,
        4096,
        "4b007901b765489abead49d926f721d065a429c1",
    );
    check(
        Prf::Sha1,
        b"passwordPASSWORDpassword",
        b"saltSALTsaltSALTsaltSALTsaltSALTsalt",
        4096,
        "3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038",
    );
    check(
        Prf::Sha1,
        b"pass\0word",
        b"sa\0lt",
        4096,
        "56fa6aa75548099dcc37d7f03425e0c3",
    );
}

#[test]
fn issue_2_rfc6070_sha1_16777216_iterations() {
    // The long RFC 6070 vector, on the production backend only (the portable one is
    // covered by the other vectors and the differential tests).
    let mut out = [0u8; 20];
    pbkdf2_hmac(Prf::Sha1, b"password", b"salt", 16_777_216, &mut out);
    assert_eq!(hex(&out), "eefe3d61cd4da4e4e9945b3d6ba2158c2634e984");
}

#[test]
fn issue_2_rfc7914_sha256_vectors() {
    check(
        Prf::Sha256,
        b"passwd",
        b"salt",
        1,
        "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc\
         49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783",
    );
    check(
        Prf::Sha256,
        b"Password",
        b"NaCl",
        80000,
        "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56\
         a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d",
    );
}

#[test]
fn issue_2_published_sha512_vectors() {
    // The PBKDF2-HMAC-SHA512 vectors in the style of RFC 6070 that most libraries test
    // against (e.g. the Anti-weakpasswords set).
    let p = b"password";
    let s = b"salt";
    check(
        Prf::Sha512,
        p,
        s,
        1,
        "867f70cf1ade02cff3752599a3a53dc4af34c7a669815ae5d513554e1c8cf252\
         c02d470a285a0501bad999bfe943c08f050235d7d68b1da55e63f73b60a57fce",
    );
    check(
        Prf::Sha512,
        p,
        s,
        2,
        "e1d9c16aa681708a45f5c7c4e215ceb66e011a2e9f0040713f18aefdb866d53c\
         f76cab2868a39b9f7840edce4fef5a82be67335c77a6068e04112754f27ccf4e",
    );
    check(
        Prf::Sha512,
        p,
        s,
        4096,
        "d197b1b33db0143e018b12f3d1d1479e6cdebdcc97c5c0f87f6902e072f457b5\
         143f30602641b3d55cd335988cb36b84376060ecd532e039b742a239434af2d5",
    );
    check(
        Prf::Sha512,
        b"passwordPASSWORDpassword",
        b"saltSALTsaltSALTsaltSALTsaltSALTsalt",
        4096,
        "8c0511f4c6e597c6ac6315d8f0362e225f3c501495ba23b868c005174dc4ee71\
         115b59f9e60cd9532fa33e0f75aefe30225c583a186cd82bd4daea9724a3d3b8",
    );
}

#[test]
fn issue_2_auto_backend_is_the_fast_one_on_this_cpu() {
    // The differential tests below only cover SHA-NI if Auto resolves to it.
    if std::arch::is_x86_feature_detected!("sha") {
        assert_eq!(backend_name(Prf::Sha1, Backend::Auto), "sha-ni");
        assert_eq!(backend_name(Prf::Sha256, Backend::Auto), "sha-ni");
    }
    assert_eq!(backend_name(Prf::Sha256, Backend::Portable), "portable");
}

/// One random case: password 0-300 bytes (beyond a block, so the key is hashed), salt
/// 0-100 bytes, 1-5000 iterations (biased to small counts and block boundaries),
/// 1-200 output bytes.
struct Case {
    prf: Prf,
    password: Vec<u8>,
    salt: Vec<u8>,
    iterations: u32,
    len: usize,
}

fn random_case(rng: &mut StdRng) -> Case {
    let prf = [Prf::Sha1, Prf::Sha256, Prf::Sha512][rng.random_range(0..3)];
    let block = prf.block_len();
    let pick_len = |rng: &mut StdRng, max: usize| -> usize {
        if rng.random_bool(0.3) {
            // Around the lengths where padding and key hashing change.
            let edges = [0, 1, block - 9, block - 8, block - 1, block, block + 1];
            edges[rng.random_range(0..edges.len())].min(max)
        } else {
            rng.random_range(0..=max)
        }
    };
    let mut password = vec![0u8; pick_len(rng, 300)];
    rng.fill_bytes(&mut password);
    let mut salt = vec![0u8; pick_len(rng, 100)];
    rng.fill_bytes(&mut salt);
    let iterations = if rng.random_bool(0.5) {
        rng.random_range(1..=20)
    } else {
        rng.random_range(1..=5000)
    };
    Case {
        prf,
        password,
        salt,
        iterations,
        len: rng.random_range(1..=200),
    }
}

fn rustcrypto(c: &Case) -> Vec<u8> {
    let mut out = vec![0u8; c.len];
    match c.prf {
        Prf::Sha1 => {
            pbkdf2::pbkdf2_hmac::<sha1::Sha1>(&c.password, &c.salt, c.iterations, &mut out)
        }
        Prf::Sha256 => {
            pbkdf2::pbkdf2_hmac::<sha2::Sha256>(&c.password, &c.salt, c.iterations, &mut out)
        }
        Prf::Sha512 => {
            pbkdf2::pbkdf2_hmac::<sha2::Sha512>(&c.password, &c.salt, c.iterations, &mut out)
        }
    }
    out
}

fn seeded() -> (u64, StdRng) {
    let seed = StdRng::from_os_rng().next_u64();
    (seed, StdRng::seed_from_u64(seed))
}

#[test]
fn issue_2_differential_against_rustcrypto_on_both_backends() {
    let (seed, mut rng) = seeded();
    for n in 0..300 {
        let c = random_case(&mut rng);
        let expected = rustcrypto(&c);
        for backend in BACKENDS {
            let mut out = vec![0u8; c.len];
            pbkdf2_hmac_on(backend, c.prf, &c.password, &c.salt, c.iterations, &mut out);
            assert!(
                out == expected,
                "case {n} (seed {seed}): {:?} password {} B salt {} B c={} len={} on {}",
                c.prf,
                c.password.len(),
                c.salt.len(),
                c.iterations,
                c.len,
                backend_name(c.prf, backend)
            );
        }
    }
}

#[test]
fn issue_2_differential_against_python_hashlib() {
    let python = std::env::var("PORTCULLIS_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let (seed, mut rng) = seeded();
    let cases: Vec<Case> = (0..150).map(|_| random_case(&mut rng)).collect();
    let mut input = String::new();
    for c in &cases {
        input.push_str(&format!(
            "{}:{}:{}:{}:{}\n",
            c.prf.name(),
            hex(&c.password),
            hex(&c.salt),
            c.iterations,
            c.len
        ));
    }
    let script = "import sys, hashlib\n\
        for line in sys.stdin:\n\
        \x20   h, p, s, c, l = line.strip().split(':')\n\
        \x20   print(hashlib.pbkdf2_hmac(h, bytes.fromhex(p), bytes.fromhex(s), int(c), int(l)).hex())\n";
    let mut child = Command::new(&python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {python} (set PORTCULLIS_PYTHON): {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success(), "{python} failed: {output:?}");
    let lines: Vec<&str> = std::str::from_utf8(&output.stdout)
        .unwrap()
        .lines()
        .collect();
    assert_eq!(lines.len(), cases.len());
    for (n, (c, want)) in cases.iter().zip(lines).enumerate() {
        for backend in BACKENDS {
            let mut out = vec![0u8; c.len];
            pbkdf2_hmac_on(backend, c.prf, &c.password, &c.salt, c.iterations, &mut out);
            assert_eq!(
                hex(&out),
                want,
                "case {n} (seed {seed}): {:?} password {} B salt {} B c={} len={} on {}",
                c.prf,
                c.password.len(),
                c.salt.len(),
                c.iterations,
                c.len,
                backend_name(c.prf, backend)
            );
        }
    }
}
