//! Start-up checks of report 002 and the rustls configuration they build.

use super::*;

fn settings(name: &str, versions: &[TlsVersion], suites: &[&str]) -> TlsSettings {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    TlsSettings {
        versions: versions.to_vec(),
        cipher_suites: suites.iter().map(|s| (*s).to_owned()).collect(),
        ..TlsSettings::new(
            dir.join(format!("{name}.crt")),
            dir.join(format!("{name}.key")),
        )
    }
}

const BOTH: &[TlsVersion] = &[TlsVersion::Tls12, TlsVersion::Tls13];

fn err(s: &TlsSettings) -> String {
    match server_config(s, None) {
        Ok(_) => panic!("accepted {s:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn defaults_pick_the_suites_that_fit_the_key() {
    let cfg = server_config_of(&settings("rsa_server", BOTH, &[]))
        .unwrap()
        .config;
    let names: Vec<String> = cfg
        .crypto_provider()
        .cipher_suites
        .iter()
        .map(suite_name)
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n == "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
    );
    assert!(names.iter().all(|n| !n.contains("ECDSA")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("TLS13_")));
    let cfg = server_config_of(&settings("ec_server", BOTH, &[]))
        .unwrap()
        .config;
    assert!(
        cfg.crypto_provider()
            .cipher_suites
            .iter()
            .all(|s| !suite_name(s).contains("_RSA_"))
    );
}

#[test]
fn issue_5_suite_not_fit_for_the_key_is_a_startup_error() {
    let e = err(&settings(
        "rsa_server",
        &[TlsVersion::Tls12],
        &["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"],
    ));
    assert!(
        e.contains("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256") && e.contains("RSA"),
        "{e}"
    );
    let e = err(&settings(
        "ec_server",
        BOTH,
        &[
            "TLS13_AES_128_GCM_SHA256",
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        ],
    ));
    assert!(e.contains("ECDSA"), "{e}");
}

#[test]
fn issue_5_key_usage_without_digital_signature_is_a_startup_error() {
    let e = err(&settings("rsa_keyencipherment_only", BOTH, &[]));
    assert!(e.contains("digitalSignature"), "{e}");
}

#[test]
fn eku_without_server_auth_is_a_startup_error() {
    let e = err(&settings("ec_client_auth_only", BOTH, &[]));
    assert!(e.contains("serverAuth"), "{e}");
}

#[test]
fn version_without_suites_and_unknown_suites_are_errors() {
    let e = err(&settings("ec_server", BOTH, &["TLS13_AES_128_GCM_SHA256"]));
    assert!(e.contains("TLS 1.2"), "{e}");
    let e = err(&settings("ec_server", BOTH, &["TLS_RSA_WITH_RC4_128_MD5"]));
    assert!(e.contains("TLS_RSA_WITH_RC4_128_MD5"), "{e}");
    let e = err(&settings(
        "ec_server",
        &[TlsVersion::Tls13],
        &["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"],
    ));
    assert!(e.contains("not enabled"), "{e}");
}

#[test]
fn mismatched_key_and_missing_files() {
    let mut s = settings("rsa_server", BOTH, &[]);
    s.key = settings("rsa_keyencipherment_only", BOTH, &[]).key;
    assert!(err(&s).contains("does not match"));
    s.key = PathBuf::from("/nonexistent/key.pem");
    assert!(err(&s).contains("cannot read"));
}

fn server_config_of(s: &TlsSettings) -> Result<TlsServer, TlsError> {
    server_config(s, None)
}

#[test]
fn a_key_file_without_a_key_and_a_cut_certificate_are_named_errors() {
    let mut s = settings("ec_server", BOTH, &[]);
    s.key = s.cert.clone();
    let e = err(&s);
    assert!(e.contains("ec_server.crt: no PRIVATE KEY block"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.crt");
    let mut pem = std::fs::read(settings("ec_server", BOTH, &[]).cert).unwrap();
    pem.truncate(pem.len() / 2);
    std::fs::write(&cut, pem).unwrap();
    let s = TlsSettings {
        cert: cut,
        ..settings("ec_server", BOTH, &[])
    };
    let e = err(&s);
    assert!(
        e.contains("cut.crt: \"-----END CERTIFICATE-----\" missing"),
        "{e}"
    );
}
