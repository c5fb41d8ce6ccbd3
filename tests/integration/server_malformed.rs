//! Issue #5: a corpus of malformed requests sent as raw bytes over TCP. Every one must be
//! answered without a 5xx (and the server must keep serving); where the request reaches
//! the OAuth layer the answer carries the RFC 6749 error code.

use crate::server_support::{basic_header, form, start};

/// A request to the token endpoint with the given extra header lines and body.
fn token_req(headers: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

const FORM: &str = "Content-Type: application/x-www-form-urlencoded\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_5_malformed_requests_never_get_a_5xx() {
    let s = start().await;
    let secret = s
        .add_client(
            "svc",
            &[portcullis_store::Grant::ClientCredentials],
            &["read"],
        )
        .await;
    let auth = format!("Authorization: {}\r\n", basic_header("svc", &secret));
    let auth_form = format!("{auth}{FORM}");
    let cc = form(&[("grant_type", "client_credentials")]);
    let huge = vec![b'a'; 64 * 1024];
    let mut huge_form = b"grant_type=client_credentials&scope=".to_vec();
    huge_form.extend(std::iter::repeat_n(b'x', 20_000));

    // (name, raw request, expected status, expected OAuth error code or "" for none)
    let corpus: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "duplicate grant_type",
            token_req(&auth_form, b"grant_type=client_credentials&grant_type=password"),
            400,
            "invalid_request",
        ),
        (
            "duplicate scope",
            token_req(&auth_form, b"grant_type=client_credentials&scope=read&scope=read"),
            400,
            "invalid_request",
        ),
        (
            "duplicate client_id in body",
            token_req(FORM, b"grant_type=client_credentials&client_id=svc&client_id=svc&client_secret=x"),
            400,
            "invalid_request",
        ),
        (
            "json content type",
            token_req(&format!("{auth}Content-Type: application/json\r\n"), br#"{"grant_type":"client_credentials"}"#),
            400,
            "invalid_request",
        ),
        ("no content type", token_req(&auth, cc.as_bytes()), 400, "invalid_request"),
        (
            "multipart content type",
            token_req(&format!("{auth}Content-Type: multipart/form-data; boundary=x\r\n"), b"--x--"),
            400,
            "invalid_request",
        ),
        ("empty body", token_req(&auth_form, b""), 400, "invalid_request"),
        ("bad percent escape", token_req(&auth_form, b"grant_type=client%2_credentials"), 400, "invalid_request"),
        ("truncated escape", token_req(&auth_form, b"grant_type=%"), 400, "invalid_request"),
        ("non-UTF-8 raw body", token_req(&auth_form, b"grant_type=\xff\xfe"), 400, "invalid_request"),
        ("non-UTF-8 escaped body", token_req(&auth_form, b"grant_type=client_credentials&scope=%c3%28"), 400, "invalid_request"),
        ("NUL in body", token_req(&auth_form, b"grant_type=client_credentials\0"), 400, "unsupported_grant_type"),
        ("unknown grant type", token_req(&auth_form, b"grant_type=implicit"), 400, "unsupported_grant_type"),
        ("missing grant type", token_req(&auth_form, b"scope=read"), 400, "invalid_request"),
        ("grant type without value", token_req(&auth_form, b"grant_type="), 400, "invalid_request"),
        ("only separators", token_req(&auth_form, b"&&&==&"), 400, "invalid_request"),
        (
            "body over the limit (Content-Length)",
            token_req(&auth_form, &huge),
            413,
            "invalid_request",
        ),
        ("large form over the limit", token_req(&auth_form, &huge_form), 413, "invalid_request"),
        (
            "body over the limit (chunked)",
            {
                let mut r = format!(
                    "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth_form}Transfer-Encoding: chunked\r\n\r\n"
                )
                .into_bytes();
                for _ in 0..20 {
                    r.extend_from_slice(b"400\r\n");
                    r.extend(std::iter::repeat_n(b'a', 0x400));
                    r.extend_from_slice(b"\r\n");
                }
                r.extend_from_slice(b"0\r\n\r\n");
                r
            },
            413,
            "invalid_request",
        ),
        (
            "Authorization not UTF-8",
            {
                let mut r = b"POST /oauth2/token HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Basic \xff\xfe\r\n".to_vec();
                r.extend_from_slice(format!("{FORM}Content-Length: {}\r\n\r\n{cc}", cc.len()).as_bytes());
                r
            },
            400,
            "invalid_request",
        ),
        (
            "Authorization bad base64",
            token_req(&format!("Authorization: Basic %%%%\r\n{FORM}"), cc.as_bytes()),
            400,
            "invalid_request",
        ),
        (
            "Authorization without colon",
            token_req(&format!("Authorization: Basic c3Zj\r\n{FORM}"), cc.as_bytes()),
            400,
            "invalid_request",
        ),
        (
            "Authorization scheme only",
            token_req(&format!("Authorization: Basic\r\n{FORM}"), cc.as_bytes()),
            400,
            "invalid_request",
        ),
        (
            "Authorization decodes to non-UTF-8",
            token_req(&format!("Authorization: Basic /w==\r\n{FORM}"), cc.as_bytes()),
            400,
            "invalid_request",
        ),
        (
            "Authorization Bearer",
            token_req(&format!("Authorization: Bearer abc\r\n{FORM}"), cc.as_bytes()),
            401,
            "invalid_client",
        ),
        (
            "two Authorization headers",
            token_req(&format!("{auth}{auth}{FORM}"), cc.as_bytes()),
            400,
            "invalid_request",
        ),
        (
            "empty client id",
            token_req(&format!("Authorization: {}\r\n{FORM}", basic_header("", "x")), cc.as_bytes()),
            401,
            "invalid_client",
        ),
        (
            "huge client id",
            token_req(
                &format!("Authorization: {}\r\n{FORM}", basic_header(&"c".repeat(4000), "x")),
                cc.as_bytes(),
            ),
            401,
            "invalid_client",
        ),
        (
            "client id with control characters",
            token_req(&format!("Authorization: {}\r\n{FORM}", basic_header("a\nb", "x")), cc.as_bytes()),
            401,
            "invalid_client",
        ),
        (
            "basic and client_secret",
            token_req(&auth_form, b"grant_type=client_credentials&client_secret=x"),
            400,
            "invalid_request",
        ),
        (
            "client_secret without client_id",
            token_req(FORM, b"grant_type=client_credentials&client_secret=x"),
            400,
            "invalid_request",
        ),
        (
            "mismatched client_id with basic",
            token_req(&auth_form, b"grant_type=client_credentials&client_id=other"),
            400,
            "invalid_request",
        ),
        (
            "password grant, empty username",
            token_req(&auth_form, b"grant_type=password&username=&password=x"),
            400,
            "invalid_request",
        ),
        (
            "password grant, username with NUL",
            token_req(&auth_form, b"grant_type=password&username=a%00b&password=x"),
            400,
            "invalid_request",
        ),
        (
            "malformed scope",
            token_req(&auth_form, b"grant_type=client_credentials&scope=read%20%20write"),
            400,
            "invalid_scope",
        ),
        (
            "too many parameters",
            token_req(&auth_form, "a=1&".repeat(100).as_bytes()),
            400,
            "invalid_request",
        ),
        (
            "GET on the token endpoint",
            b"GET /oauth2/token HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec(),
            405,
            "invalid_request",
        ),
        (
            "introspect without token",
            {
                let b = b"";
                let mut r = format!(
                    "POST /oauth2/introspect HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth_form}Content-Length: 0\r\n\r\n"
                )
                .into_bytes();
                r.extend_from_slice(b);
                r
            },
            400,
            "invalid_request",
        ),
        (
            "revoke with duplicate token",
            {
                let b = b"token=a&token=b";
                let mut r = format!(
                    "POST /oauth2/revoke HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth_form}Content-Length: {}\r\n\r\n",
                    b.len()
                )
                .into_bytes();
                r.extend_from_slice(b);
                r
            },
            400,
            "invalid_request",
        ),
        // Below the OAuth layer: hyper answers with the HTTP status.
        ("garbage request line", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n".to_vec(), 400, ""),
        ("bad header line", b"POST /oauth2/token HTTP/1.1\r\nHost x\r\n\r\n".to_vec(), 400, ""),
        (
            "non-UTF-8 path",
            b"GET /oauth2/\xff\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec(),
            400,
            "",
        ),
        (
            "conflicting Content-Length",
            format!("POST /oauth2/token HTTP/1.1\r\nHost: x\r\n{FORM}Content-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef").into_bytes(),
            400,
            "",
        ),
        (
            "huge header",
            format!(
                "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
                "a".repeat(1 << 20)
            )
            .into_bytes(),
            431,
            "",
        ),
        (
            "unknown path",
            b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec(),
            404,
            "",
        ),
    ];

    let mut failures = Vec::new();
    for (name, req, status, code) in &corpus {
        let a = s.raw(req).await;
        // A connection closed without an answer is a failure (status 0): that is also what
        // a panicking handler looks like from outside. A 5xx never is acceptable.
        if a.status == 0 {
            failures.push(format!("{name}: connection closed without an answer"));
            continue;
        }
        if a.status >= 500 {
            failures.push(format!(
                "{name}: got {} {:?}",
                a.status,
                String::from_utf8_lossy(&a.body)
            ));
            continue;
        }
        if code.is_empty() {
            if a.status != *status {
                failures.push(format!("{name}: status {} (expected {status})", a.status));
            }
            continue;
        }
        if a.status != *status {
            failures.push(format!(
                "{name}: status {} (expected {status}) {:?}",
                a.status,
                String::from_utf8_lossy(&a.body)
            ));
            continue;
        }
        if a.error() != *code {
            failures.push(format!("{name}: error {:?} (expected {code})", a.error()));
        }
        if a.header("cache-control") != Some("no-store") {
            failures.push(format!("{name}: missing Cache-Control: no-store"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Still serving, and the client is not locked out by all that noise.
    let a = s.post("/oauth2/token", Some(("svc", &secret)), &cc).await;
    assert_eq!(a.status, 200);
    s.server.shutdown().await.unwrap();
}
