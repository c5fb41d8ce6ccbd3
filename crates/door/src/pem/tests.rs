//! The PEM reader against the OpenSSL-made fixtures (their DER decoded here by hand from
//! the base64 between the markers) and against broken files.

use std::path::Path;

use base64::Engine;

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    std::fs::read(dir.join(name)).unwrap()
}

/// The DER of every block labelled `label`, decoded independently of the parser.
fn by_hand(text: &[u8], label: &str) -> Vec<Vec<u8>> {
    let text = String::from_utf8(text.to_vec()).unwrap();
    let (begin, end) = (
        format!("-----BEGIN {label}-----"),
        format!("-----END {label}-----"),
    );
    let mut out = Vec::new();
    let mut body: Option<String> = None;
    for line in text.lines() {
        if line == begin {
            body = Some(String::new());
        } else if line == end {
            let b64 = body.take().unwrap();
            out.push(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .unwrap(),
            );
        } else if let Some(b) = &mut body {
            b.push_str(line.trim());
        }
    }
    out
}

#[test]
fn certificates_and_keys_decode_to_the_der_between_the_markers() {
    let crt = fixture("ec_server.crt");
    let got: Vec<Vec<u8>> = certs(&crt).unwrap().iter().map(|c| c.to_vec()).collect();
    assert_eq!(got, by_hand(&crt, "CERTIFICATE"));
    assert_eq!(got.len(), 1);
    let key = fixture("rsa_server.key");
    let Some(PrivateKeyDer::Pkcs8(k)) = private_key(&key).unwrap() else {
        panic!("no PKCS#8 key read")
    };
    assert_eq!(
        vec![k.secret_pkcs8_der().to_vec()],
        by_hand(&key, "PRIVATE KEY")
    );
}

#[test]
fn a_file_without_a_key_has_none_and_other_blocks_are_skipped() {
    assert_eq!(private_key(&fixture("ec_server.crt")).unwrap(), None);
    assert!(certs(&fixture("ec_server.key")).unwrap().is_empty());
    assert!(certs(b"not PEM at all\n").unwrap().is_empty());
    let mixed = [fixture("ec_server.key"), fixture("rsa_server.crt")].concat();
    assert_eq!(certs(&mixed).unwrap().len(), 1);
    assert!(private_key(&mixed).unwrap().is_some());
}

#[test]
fn a_garbled_block_is_an_error_quoting_what_is_wrong() {
    let bad = b"-----BEGIN CERTIFICATE-----\nnot*base64!\n-----END CERTIFICATE-----\n";
    let e = certs(bad).unwrap_err().to_string();
    assert!(e.contains("base64"), "{e}");
    let mut cut = fixture("ec_server.crt");
    cut.truncate(cut.len() / 2);
    let e = certs(&cut).unwrap_err().to_string();
    assert!(e.contains("\"-----END CERTIFICATE-----\" missing"), "{e}");
    let e = private_key(b"-----BEGIN PRIVATE KEY-----\nAAAA\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"-----END PRIVATE KEY-----\" missing"), "{e}");
    let e = crls(b"-----BEGIN X509 CRL-----\n%%%\n-----END X509 CRL-----\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("base64"), "{e}");
}
