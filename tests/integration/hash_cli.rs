//! Issue #2: `portcullis hash create | verify | bench` as a user runs them. Hashes are
//! checked against Python's `hashlib.pbkdf2_hmac` (an independent implementation), and
//! malformed input must give exit status 2 with one line on stderr, never a panic.

// Test helpers: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn portcullis(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_portcullis"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run portcullis");
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // The command may exit before reading (e.g. on a malformed hash): ignore EPIPE.
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait for portcullis");
    writer.join().unwrap();
    out
}

fn python() -> String {
    std::env::var("PORTCULLIS_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// Python's verdict on a `$pbkdf2-*$i=..,l=..$salt$hash` string and a password.
fn hashlib_verifies(stored: &str, password: &[u8]) -> bool {
    let script = "import sys, base64, hashlib\n\
        s, pw = sys.argv[1], bytes.fromhex(sys.argv[2])\n\
        _, ident, params, salt, dk = s.split('$')\n\
        p = dict(kv.split('=') for kv in params.split(','))\n\
        b = lambda x: base64.b64decode(x + '=' * (-len(x) % 4), validate=True)\n\
        dk = b(dk)\n\
        assert int(p.get('l', len(dk))) == len(dk)\n\
        out = hashlib.pbkdf2_hmac(ident.split('-')[1], pw, b(salt), int(p['i']), len(dk))\n\
        print('match' if out == dk else 'mismatch')\n";
    let hex: String = password.iter().map(|b| format!("{b:02x}")).collect();
    let out = Command::new(python())
        .args(["-c", script, stored, &hex])
        .output()
        .expect("run python (set PORTCULLIS_PYTHON)");
    assert!(out.status.success(), "python failed: {out:?}");
    match String::from_utf8_lossy(&out.stdout).trim() {
        "match" => true,
        "mismatch" => false,
        other => panic!("unexpected python output {other:?}"),
    }
}

fn assert_clean_error(out: &Output, code: i32) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "not one line: {stderr:?}"
    );
}

#[test]
fn issue_2_create_then_verify_round_trip_matches_hashlib() {
    for (alg, iterations) in [
        ("pbkdf2-sha256", "2000"),
        ("pbkdf2-sha1", "3000"),
        ("pbkdf2-sha512", "1000"),
    ] {
        // Trailing spaces are part of the password; only the line ending is stripped.
        let out = portcullis(
            &[
                "hash",
                "create",
                "--algorithm",
                alg,
                "--iterations",
                iterations,
                "--password-stdin",
            ],
            b"s3cret pass \r\n",
        );
        assert!(out.status.success(), "{out:?}");
        let stored = String::from_utf8(out.stdout).unwrap().trim_end().to_owned();
        assert!(
            stored.starts_with(&format!("${alg}$i={iterations},l=")),
            "{stored}"
        );
        assert!(hashlib_verifies(&stored, b"s3cret pass "));
        assert!(!hashlib_verifies(&stored, b"s3cret pass"));

        let ok = portcullis(
            &["hash", "verify", "--hash", &stored, "--password-stdin"],
            b"s3cret pass \n",
        );
        assert_eq!(ok.status.code(), Some(0), "{ok:?}");
        let wrong = portcullis(
            &["hash", "verify", "--hash", &stored, "--password-stdin"],
            b"s3cret pass\n",
        );
        assert_clean_error(&wrong, 1);
    }
}

#[test]
fn issue_2_default_create_is_pbkdf2_sha256_600000() {
    let out = portcullis(&["hash", "create", "--password-stdin"], b"pw\n");
    assert!(out.status.success(), "{out:?}");
    let stored = String::from_utf8(out.stdout).unwrap();
    assert!(
        stored.starts_with("$pbkdf2-sha256$i=600000,l=32$"),
        "{stored}"
    );
}

#[test]
fn issue_2_verify_accepts_hashes_made_by_hashlib() {
    // RFC 7914 section 11 vector, encoded independently (Python's base64).
    let stored = "$pbkdf2-sha256$i=1,l=64$c2FsdA$VawEblbjCJ/sFpHCJUS2BflBhSFt3gRl5oudV8INrLxJypzM8Xm2RZkWZLOdd+8xfHG4RbHjC9UJESBB06GXgw";
    assert_eq!(
        portcullis(
            &["hash", "verify", "--hash", stored, "--password-stdin"],
            b"passwd"
        )
        .status
        .code(),
        Some(0)
    );
    assert_clean_error(
        &portcullis(
            &["hash", "verify", "--hash", stored, "--password-stdin"],
            b"passwd2\n",
        ),
        1,
    );
}

#[test]
fn issue_2_verify_rejects_malformed_hashes_with_exit_2() {
    let good = "$pbkdf2-sha256$i=1000,l=32$c2FsdHNhbHRzYWx0c2FsdA$Zm9vZm9vZm9vZm9vZm9vZm9vZm9vZm9vZm9vZm9vZm8";
    let mut cases: Vec<String> = vec![
        String::new(),
        "garbage".into(),
        "$pbkdf2-sha256$".into(),
        "$pbkdf2-sha256$i=0$c2FsdA$Zm9v".into(),
        "$pbkdf2-sha256$i=999999999999$c2FsdA$Zm9v".into(),
        "$pbkdf2-sha256$i=abc$c2FsdA$Zm9v".into(),
        "$pbkdf2-sha256$i=1000$c2FsdA$".into(),
        "$pbkdf2-sha256$i=1000$c2F!dA$Zm9v".into(),
        "$pbkdf2-whirlpool$i=1000$c2FsdA$Zm9v".into(),
        "$pbkdf2-sha256$i=1000,l=99$c2FsdA$Zm9v".into(),
    ];
    // Every truncation of a valid string.
    cases.extend((0..good.len()).map(|n| good[..n].to_owned()));
    for stored in &cases {
        let out = portcullis(
            &["hash", "verify", "--hash", stored, "--password-stdin"],
            b"pw\n",
        );
        assert_clean_error(&out, 2);
    }
}

#[test]
fn issue_2_create_without_password_fails_cleanly() {
    assert_clean_error(&portcullis(&["hash", "create", "--password-stdin"], b""), 2);
}

#[test]
fn issue_2_bench_json_reports_fraction_of_bound() {
    let out = portcullis(
        &[
            "hash",
            "bench",
            "--algorithm",
            "pbkdf2-sha256",
            "--iterations",
            "20000",
            "--runs",
            "5",
            "--batch",
            "2",
            "--json",
        ],
        b"",
    );
    assert!(out.status.success(), "{out:?}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "algorithm",
        "iterations",
        "ms_per_derivation",
        "bound_ms",
        "fraction_of_bound",
        "backend",
        "runs",
        "cpu",
        "derivations_per_second",
        "batch_ratio",
    ] {
        assert!(j.get(key).is_some(), "missing {key} in {j}");
    }
    assert_eq!(j["algorithm"], "pbkdf2-sha256");
    assert_eq!(j["iterations"], 20000);
    // No speed assertions here (they live in the bench); only that the figures are real.
    let ms = j["ms_per_derivation"].as_f64().unwrap();
    let bound = j["bound_ms"].as_f64().unwrap();
    let fraction = j["fraction_of_bound"].as_f64().unwrap();
    assert!(
        ms > 0.0 && bound > 0.0 && (fraction - bound / ms).abs() < 1e-9,
        "{j}"
    );
    // Fewer than five runs is refused (clap's usage error, exit status 2).
    let few = portcullis(&["hash", "bench", "--runs", "3"], b"");
    assert_eq!(few.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&few.stderr).contains("panicked"));
}

#[test]
fn issue_26_argon2id_bench_json_reports_kernel_floor_faults_and_pool() {
    // Loads every core for a while: never beside the timing-sensitive tests.
    let _exclusive = crate::server_support::exclusive();
    let out = portcullis(
        &[
            "hash",
            "bench",
            "--algorithm",
            "argon2id",
            "--memory",
            "1024",
            "--time",
            "1",
            "--runs",
            "5",
            "--pool-seconds",
            "0.2",
            "--json",
        ],
        b"",
    );
    assert!(out.status.success(), "{out:?}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "kernel",
        "kernels",
        "ms_per_verification",
        "compute_floor_ms",
        "page_faults_first",
        "page_faults_per_verification_warm",
        "pool_verifications_per_s",
        "single_verifications_per_s",
        "pool_verifications_per_cpu_s",
        "single_verifications_per_cpu_s",
        "pool_speedup_cpu",
        "load_1min",
        "cpu",
    ] {
        assert!(j.get(key).is_some(), "missing {key} in {j}");
    }
    assert_eq!(
        (j["m_kib"].as_u64(), j["t"].as_u64()),
        (Some(1024), Some(1))
    );
    // The chosen kernel is one of those measured on this CPU.
    let kernel = j["kernel"].as_str().unwrap();
    let measured: Vec<&str> = j["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k["backend"].as_str())
        .collect();
    assert!(
        ["portable", "avx2", "avx512"].contains(&kernel) && measured.contains(&kernel),
        "{j}"
    );
    // No speed assertions (they live in the bench); the figures are real, and the
    // thread's arena is reused: a fresh buffer per verification faults at least once.
    assert!(j["ms_per_verification"].as_f64().unwrap() > 0.0, "{j}");
    assert!(j["compute_floor_ms"].as_f64().unwrap() > 0.0, "{j}");
    assert!(j["pool_verifications_per_s"].as_f64().unwrap() > 0.0, "{j}");
    if cfg!(target_os = "linux") {
        // One thread and all threads both verified in their CPU-time windows.
        assert!(
            j["single_verifications_per_cpu_s"].as_f64().unwrap() > 0.0,
            "{j}"
        );
        assert!(
            j["pool_verifications_per_cpu_s"].as_f64().unwrap() > 0.0,
            "{j}"
        );
        let warm = j["page_faults_per_verification_warm"].as_f64().unwrap();
        assert!(warm < 0.5, "{warm} page faults per warm verification: {j}");
    }
    // --memory belongs to argon2id only.
    let wrong = portcullis(&["hash", "bench", "--memory", "1024"], b"");
    assert_eq!(wrong.status.code(), Some(2));
}

/// Issue 26: `hash bench --start-on K` starts the pool on K as if start-up had ranked it
/// first (how scripts/kernel-choice shows the in-service contest correcting such a
/// choice); a kernel that is not a multi-chain one is refused.
#[test]
fn issue_26_bench_start_on_makes_the_named_kernel_the_start_up_choice() {
    let _exclusive = crate::server_support::exclusive();
    let menu = portcullis(
        &[
            "hash",
            "bench",
            "--iterations",
            "1000",
            "--runs",
            "5",
            "--json",
        ],
        b"",
    );
    assert!(menu.status.success(), "{menu:?}");
    let j: serde_json::Value = serde_json::from_slice(&menu.stdout).unwrap();
    let best = j["kernels"]["chosen"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let other: Option<String> = j["kernels"]["measured"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["width"].as_u64().unwrap_or(1) >= 2)
        .filter_map(|k| k["backend"].as_str())
        .find(|b| *b != best)
        .map(str::to_owned);
    let Some(other) = other else {
        eprintln!("issue 26: this CPU offers one multi-chain kernel: --start-on not exercised");
        return;
    };
    let out = portcullis(
        &[
            "hash",
            "bench",
            "--iterations",
            "1000",
            "--threads",
            "1",
            "--pool-seconds",
            "0.2",
            "--start-on",
            &other,
            "--json",
        ],
        b"",
    );
    assert!(out.status.success(), "{out:?}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["kernel_at_start"].as_str(), Some(other.as_str()), "{j}");
    let single = portcullis(
        &[
            "hash",
            "bench",
            "--pool-seconds",
            "0.2",
            "--start-on",
            "single",
        ],
        b"",
    );
    assert!(!single.status.success(), "{single:?}");
}

/// `hash bench --pool-seconds S --in-flight N`: each thread derives its even share of N
/// jobs, the yardstick for a server with N closed-loop clients (issue 41); N of 0 or a
/// forced kernel beside it are refused.
#[test]
fn issue_41_pool_bench_with_jobs_in_flight() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "hash",
            "bench",
            "--iterations",
            "1000",
            "--threads",
            "2",
            "--pool-seconds",
            "0.2",
            "--json",
        ];
        args.extend_from_slice(extra);
        portcullis(&args, b"")
    };
    let out = run(&["--in-flight", "16"]);
    assert!(out.status.success(), "{out:?}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["in_flight"], 16, "{j}");
    // Eight a thread, and every count is a whole number of such batches.
    assert_eq!(j["batch"], 8, "{j}");
    let derived = j["derivations"].as_u64().unwrap();
    assert!(derived > 0 && derived.is_multiple_of(8), "{j}");
    let saturated = run(&[]);
    let s: serde_json::Value = serde_json::from_slice(&saturated.stdout).unwrap();
    assert!(s["in_flight"].is_null(), "{s}");
    assert!(!run(&["--in-flight", "0"]).status.success());
    assert!(
        !run(&["--in-flight", "16", "--kernel", "single"])
            .status
            .success()
    );
}
