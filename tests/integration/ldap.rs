//! Issue 39: the LDAP door against unmodified Debian ldap-utils (`ldapwhoami`,
//! `ldapsearch`, `ldapcompare`, `ldapmodify`, `ldappasswd`) over ldap:// with StartTLS
//! (`-ZZ`) and ldaps://, binding as a user and as a service account; and every refusal
//! with its RFC result code (ldap-utils exit with it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::ldap_support::{
    ALICE, ALICE_PASSWORD, BASE, code, reported, service, start_ldap, start_ldap_with, stdout, tool,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_ldapwhoami_binds_as_a_user_and_a_service_over_starttls_and_ldaps() {
    let l = start_ldap("").await;
    for url in [&l.url, &l.ldaps_url] {
        let tls: &[&str] = if url.starts_with("ldaps") {
            &[]
        } else {
            &["-ZZ"]
        };
        let mut args = vec!["-x", "-H", url];
        args.extend(tls);
        let user = [args.clone(), vec!["-D", ALICE, "-w", ALICE_PASSWORD]].concat();
        let out = tool(&l, "ldapwhoami", &user).await;
        assert_eq!(code(&out), 0, "{url}: {out:?}");
        assert_eq!(stdout(&out).trim(), format!("dn:{ALICE}"));
        let app = service("app");
        let svc = [args.clone(), vec!["-D", &app, "-w", &l.app_secret]].concat();
        let out = tool(&l, "ldapwhoami", &svc).await;
        assert_eq!(code(&out), 0, "{url}: {out:?}");
        assert_eq!(stdout(&out).trim(), format!("dn:{app}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_ldapsearch_finds_users_and_groups_as_sssd_and_applications_ask() {
    let l = start_ldap("").await;
    let app = service("app");
    let bind = [
        "-LLL",
        "-x",
        "-H",
        &l.url,
        "-ZZ",
        "-D",
        &app,
        "-w",
        &l.app_secret,
    ];
    let search = |filter: &'static str, attrs: &'static [&'static str]| {
        let mut a: Vec<&str> = bind.to_vec();
        a.extend(["-b", BASE, filter]);
        a.extend(attrs);
        a
    };
    let out = tool(
        &l,
        "ldapsearch",
        &search("(uid=alice)", &["mail", "memberOf"]),
    )
    .await;
    assert_eq!(code(&out), 0, "{out:?}");
    let text = stdout(&out);
    assert!(text.contains(&format!("dn: {ALICE}")), "{text}");
    assert!(text.contains("mail: alice@example.com"), "{text}");
    assert!(
        text.contains("memberOf: cn=staff,ou=groups,dc=example,dc=com"),
        "{text}"
    );
    let posix = "(&(objectClass=posixAccount)(uidNumber=1000))";
    let out = tool(&l, "ldapsearch", &search(posix, &["uid", "homeDirectory"])).await;
    let text = stdout(&out);
    assert!(text.contains("homeDirectory: /home/alice"), "{text}");
    assert_eq!(text.matches("dn: ").count(), 1, "{text}");
    let out = tool(
        &l,
        "ldapsearch",
        &search("(cn=staff)", &["memberUid", "member"]),
    )
    .await;
    let text = stdout(&out);
    assert!(
        text.contains("memberUid: alice") && text.contains("memberUid: carol"),
        "{text}"
    );
    assert!(
        !text.contains("bob"),
        "a disabled user is no member: {text}"
    );
    let out = tool(&l, "ldapsearch", &search("(uid=bob)", &["uid"])).await;
    assert_eq!(
        (code(&out), stdout(&out)),
        (0, String::new()),
        "bob is disabled"
    );
    // Paged results (RFC 2696) in pages of one: every entry once.
    let mut paged = bind.to_vec();
    paged.extend(["-E", "pr=1/noprompt", "-b", BASE, "(objectClass=*)", "1.1"]);
    let text = stdout(&tool(&l, "ldapsearch", &paged).await);
    // base, three ou, alice, carol, staff
    assert_eq!(text.matches("dn: ").count(), 7, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_a_grant_limits_a_service_account_to_its_subtree_and_attributes() {
    let l = start_ldap("").await;
    let narrow = service("narrow");
    let bind = [
        "-LLL",
        "-x",
        "-H",
        &l.url,
        "-ZZ",
        "-D",
        &narrow,
        "-w",
        &l.narrow_secret,
    ];
    let run = |base: &'static str, filter: &'static str| {
        let mut a = bind.to_vec();
        a.extend(["-b", base, filter, "*", "+"]);
        a
    };
    let text = stdout(&tool(&l, "ldapsearch", &run(BASE, "(uid=alice)")).await);
    assert!(
        text.contains("uid: alice") && text.contains("cn: alice"),
        "{text}"
    );
    assert!(
        !text.contains("mail") && !text.contains("memberOf"),
        "{text}"
    );
    let by_mail = tool(&l, "ldapsearch", &run(BASE, "(mail=alice@example.com)")).await;
    assert_eq!(
        stdout(&by_mail),
        "",
        "a filter cannot probe a hidden attribute"
    );
    let groups = tool(
        &l,
        "ldapsearch",
        &run("ou=groups,dc=example,dc=com", "(cn=*)"),
    )
    .await;
    assert_eq!(
        code(&groups),
        32,
        "noSuchObject outside the grant: {groups:?}"
    );
    // A client without an [ldap.service_accounts] section cannot bind, even with its secret.
    let unlisted = service("unlisted");
    let args = [
        "-x",
        "-H",
        &l.url,
        "-ZZ",
        "-D",
        &unlisted,
        "-w",
        &l.unlisted_secret,
    ];
    assert_eq!(code(&tool(&l, "ldapwhoami", &args).await), 49);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_refusals_carry_their_result_codes() {
    let l = start_ldap("").await;
    let whoami = |dn: &'static str, password: &'static str| {
        vec!["-x", "-H", l.url.as_str(), "-ZZ", "-D", dn, "-w", password]
    };
    let cases = [
        (whoami(ALICE, "wrong"), 49, "wrong password"),
        (
            whoami("uid=nobody,ou=people,dc=example,dc=com", "x"),
            49,
            "unknown user",
        ),
        (
            whoami("cn=nobody,dc=elsewhere", "x"),
            49,
            "a DN outside the directory",
        ),
        (
            whoami("uid=bob,ou=people,dc=example,dc=com", "bob-password"),
            49,
            "disabled user",
        ),
        (
            whoami("cn=nosuch,ou=services,dc=example,dc=com", "x"),
            49,
            "unknown service",
        ),
        (whoami("not a dn", "x"), 34, "invalid DN syntax"),
    ];
    for (args, want, what) in cases {
        let out = tool(&l, "ldapwhoami", &args).await;
        assert_eq!(code(&out), want, "{what}: {out:?}");
    }
    // A simple bind without TLS: confidentialityRequired, the password never checked.
    let plain = ["-x", "-H", &l.url, "-D", ALICE, "-w", ALICE_PASSWORD];
    assert_eq!(code(&tool(&l, "ldapwhoami", &plain).await), 13);
    // Anonymous: the root DSE is readable, nothing else.
    let dse = [
        "-LLL",
        "-x",
        "-H",
        &l.url,
        "-b",
        "",
        "-s",
        "base",
        "(objectClass=*)",
        "+",
    ];
    let out = tool(&l, "ldapsearch", &dse).await;
    assert_eq!(code(&out), 0, "{out:?}");
    let text = stdout(&out);
    assert!(text.contains(&format!("namingContexts: {BASE}")), "{text}");
    assert!(
        text.contains("supportedExtension: 1.3.6.1.4.1.1466.20037"),
        "{text}"
    );
    assert!(
        text.contains("supportedControl: 1.2.840.113556.1.4.319"),
        "{text}"
    );
    assert!(
        !text.contains("1.3.6.1.4.1.4203.1.11.1"),
        "Password Modify is off: {text}"
    );
    let anon = ["-LLL", "-x", "-H", &l.url, "-b", BASE, "(uid=alice)"];
    assert_eq!(code(&tool(&l, "ldapsearch", &anon).await), 50);
    // A critical control it does not serve fails the operation (RFC 4511 4.1.11);
    // ManageDsaIT (-MM, critical) is met by a directory without referrals.
    let app = service("app");
    let with = |control: &'static str| {
        let mut a = vec![
            "-LLL",
            "-x",
            "-H",
            l.url.as_str(),
            "-ZZ",
            "-D",
            app.as_str(),
        ];
        a.extend([
            "-w",
            l.app_secret.as_str(),
            control,
            "-b",
            BASE,
            "(uid=alice)",
            "1.1",
        ]);
        a
    };
    assert_eq!(code(&tool(&l, "ldapsearch", &with("-e!1.2.3.4")).await), 12);
    assert_eq!(code(&tool(&l, "ldapsearch", &with("-MM")).await), 0);
    // Writes: unwillingToPerform.
    let ldif = l.s.dir.path().join("change.ldif");
    std::fs::write(
        &ldif,
        format!("dn: {ALICE}\nchangetype: modify\nreplace: mail\nmail: x@y.z\n"),
    )
    .unwrap();
    let ldif = ldif.to_string_lossy().into_owned();
    let app = service("app");
    let modify = [
        "-x",
        "-H",
        &l.url,
        "-ZZ",
        "-D",
        &app,
        "-w",
        &l.app_secret,
        "-f",
        &ldif,
    ];
    assert_eq!(code(&tool(&l, "ldapmodify", &modify).await), 53);
    let delete = [
        "-x",
        "-H",
        &l.url,
        "-ZZ",
        "-D",
        &app,
        "-w",
        &l.app_secret,
        ALICE,
    ];
    assert_eq!(code(&tool(&l, "ldapdelete", &delete).await), 53);
    // Password Modify is off: an unknown extended operation.
    let passwd = [
        "-x",
        "-H",
        &l.url,
        "-ZZ",
        "-D",
        ALICE,
        "-w",
        ALICE_PASSWORD,
        "-s",
        "new",
    ];
    assert_eq!(reported(&tool(&l, "ldappasswd", &passwd).await), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_compare_answers_group_membership_as_apache_asks() {
    let l = start_ldap("").await;
    let app = service("app");
    let staff = "cn=staff,ou=groups,dc=example,dc=com";
    let member = format!("member:{ALICE}");
    let not_member = "member:uid=bob,ou=people,dc=example,dc=com";
    for (assertion, want) in [(member.as_str(), 6), (not_member, 5)] {
        let args = [
            "-x",
            "-H",
            &l.url,
            "-ZZ",
            "-D",
            &app,
            "-w",
            &l.app_secret,
            staff,
            assertion,
        ];
        let out = tool(&l, "ldapcompare", &args).await;
        assert_eq!(code(&out), want, "{assertion}: {out:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_password_modify_changes_the_bound_users_own_password() {
    let l = start_ldap("password_modify = true").await;
    let args = ["-x", "-H", &l.url, "-ZZ", "-D", ALICE, "-w", ALICE_PASSWORD];
    let wrong_old = [&args[..], &["-a", "not-it", "-s", "next-password"]].concat();
    assert_eq!(
        reported(&tool(&l, "ldappasswd", &wrong_old).await),
        Some(49)
    );
    let other = [
        &args[..],
        &[
            "-a",
            ALICE_PASSWORD,
            "-s",
            "x",
            "uid=carol,ou=people,dc=example,dc=com",
        ],
    ]
    .concat();
    assert_eq!(reported(&tool(&l, "ldappasswd", &other).await), Some(50));
    let change = [&args[..], &["-a", ALICE_PASSWORD, "-s", "next-password"]].concat();
    let out = tool(&l, "ldappasswd", &change).await;
    assert_eq!(code(&out), 0, "{out:?}");
    assert_eq!(
        code(&tool(&l, "ldapwhoami", &args).await),
        49,
        "the old password is gone"
    );
    let new = [
        "-x",
        "-H",
        &l.url,
        "-ZZ",
        "-D",
        ALICE,
        "-w",
        "next-password",
    ];
    assert_eq!(code(&tool(&l, "ldapwhoami", &new).await), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_binds_and_searches_are_audited_and_counted_on_the_status_page() {
    let audit = "[audit]\ndestination = \"file\"\nper_source_limit = 1000\n";
    let l = start_ldap_with("", audit).await;
    let app = service("app");
    let wrong = ["-x", "-H", &l.url, "-ZZ", "-D", ALICE, "-w", "wrong"];
    assert_eq!(code(&tool(&l, "ldapwhoami", &wrong).await), 49);
    let search = [
        "-x",
        "-H",
        &l.url,
        "-ZZ",
        "-D",
        &app,
        "-w",
        &l.app_secret,
        "-b",
        BASE,
    ];
    assert_eq!(
        code(&tool(&l, "ldapsearch", &[&search[..], &["(uid=alice)"]].concat()).await),
        0
    );
    let anonymous = ["-x", "-H", &l.url, "-b", BASE, "(uid=alice)"];
    assert_eq!(code(&tool(&l, "ldapsearch", &anonymous).await), 50);
    let status = l.s.get("/status.json").await.json();
    let ops = &status["ldap"]["operations"];
    assert_eq!(ops["bind"]["invalidCredentials"], 1, "{status}");
    // The service account's bind, and the anonymous bind ldapsearch -x sends.
    assert_eq!(ops["bind"]["success"], 2, "{status}");
    assert_eq!(ops["search"]["success"], 1, "{status}");
    assert_eq!(ops["search"]["insufficientAccessRights"], 1, "{status}");
    let crate::server_support::TestServer { server, dir, .. } = l.s;
    server.shutdown().await.unwrap();
    let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &serde_json::Value| e["protocol"] == "ldap")
        .collect();
    let has = |principal: &str, outcome: &str, reason: &str| {
        events.iter().any(|e| {
            e["principal"] == principal && e["outcome"] == outcome && e["reason"] == reason
        })
    };
    assert!(has("alice", "rejected", "wrong_secret"), "{events:?}");
    assert!(has("app", "accepted", "secret_matched"), "{events:?}");
    assert!(has("app", "accepted", "success"), "the search: {events:?}");
    assert!(
        has("", "rejected", "insufficientAccessRights"),
        "{events:?}"
    );
    assert!(
        events.iter().all(|e| e["source"] == "127.0.0.1"),
        "{events:?}"
    );
}

/// A simple BindRequest (messageID 1) as BER, for the tests that speak raw TCP.
fn raw_bind(dn: &str, password: &str) -> Vec<u8> {
    let tlv = |tag: u8, content: &[u8]| [&[tag, content.len() as u8][..], content].concat();
    let body = [
        tlv(0x02, &[3]),
        tlv(0x04, dn.as_bytes()),
        tlv(0x80, password.as_bytes()),
    ]
    .concat();
    tlv(0x30, &[tlv(0x02, &[1]), tlv(0x60, &body)].concat())
}

/// The resultCode of the first BindResponse read from `s` (`None` if it closed first).
async fn bind_result(s: &mut tokio::net::TcpStream) -> Option<u8> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        // ... 61 LL 0a 01 CODE
        if let Some(at) = buf
            .windows(3)
            .position(|w| w == [0x0a, 0x01, w[2]] && w[0] == 0x0a)
        {
            return buf.get(at + 2).copied();
        }
        let n = tokio::time::timeout(std::time::Duration::from_secs(20), s.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_connections_per_source_are_bounded() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = start_ldap("allow_plain_binds = true\nmax_connections_per_source = 2\n").await;
    let addr: std::net::SocketAddr = l.url.trim_start_matches("ldap://").parse().unwrap();
    let first = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut second = tokio::net::TcpStream::connect(addr).await.unwrap();
    second
        .write_all(&raw_bind(ALICE, ALICE_PASSWORD))
        .await
        .unwrap();
    assert_eq!(
        bind_result(&mut second).await,
        Some(0),
        "the second is served"
    );
    let mut third = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut byte = [0u8; 1];
    let closed = tokio::time::timeout(std::time::Duration::from_secs(20), third.read(&mut byte))
        .await
        .expect("the third connection is closed at once, not left waiting");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    drop(first);
    // Once one closes (the server sees it when it reads EOF), a new one is served.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let mut again = tokio::net::TcpStream::connect(addr).await.unwrap();
        let _ = again.write_all(&raw_bind(ALICE, ALICE_PASSWORD)).await;
        if bind_result(&mut again).await == Some(0) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no slot came free");
    }
    drop(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_a_trusted_proxys_proxy_v2_header_names_the_source() {
    use tokio::io::AsyncWriteExt;
    let audit = "[audit]\ndestination = \"file\"\nper_source_limit = 1000\n";
    let l = start_ldap_with(
        "allow_plain_binds = true\ntrusted_proxies = [\"127.0.0.1\"]\n",
        audit,
    )
    .await;
    let addr: std::net::SocketAddr = l.url.trim_start_matches("ldap://").parse().unwrap();
    // HAProxy's send-proxy-v2: PROXY, TCP over IPv4, 198.51.100.7:40000 -> 127.0.0.1:389.
    let header = proxy_header([198, 51, 100, 7]);
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(&[header, raw_bind(ALICE, "wrong")].concat())
        .await
        .unwrap();
    assert_eq!(bind_result(&mut s).await, Some(49));
    // From the trusted proxy, a connection without the header is refused.
    let mut bare = tokio::net::TcpStream::connect(addr).await.unwrap();
    bare.write_all(&raw_bind(ALICE, ALICE_PASSWORD))
        .await
        .unwrap();
    assert_eq!(bind_result(&mut bare).await, None);
    let crate::server_support::TestServer { server, dir, .. } = l.s;
    server.shutdown().await.unwrap();
    let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let rejected: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"protocol\":\"ldap\"") && l.contains("wrong_secret"))
        .collect();
    assert_eq!(rejected.len(), 1, "{text}");
    assert!(
        rejected[0].contains("\"source\":\"198.51.100.7\""),
        "{text}"
    );
}

/// The leaf certificate an LDAPS handshake with `url` presents, as `openssl` prints it.
async fn served_leaf(url: &str) -> String {
    let hostport = url.trim_start_matches("ldaps://").to_owned();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("openssl")
            .args(["s_client", "-connect", &hostport])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let begin = text
        .find("-----BEGIN CERTIFICATE-----")
        .expect("a certificate");
    let end = text.find("-----END CERTIFICATE-----").expect("its end");
    text[begin..end].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_a_reload_serves_the_new_ldap_certificate() {
    let l = start_ldap("").await;
    let pem = |path: &std::path::Path| {
        let text = std::fs::read_to_string(path).unwrap();
        let end = text.find("-----END CERTIFICATE-----").unwrap();
        text[..end].to_owned()
    };
    assert_eq!(
        served_leaf(&l.ldaps_url).await.trim(),
        pem(&l.pair.cert).trim()
    );
    // A new certificate in the same files, then what SIGHUP runs.
    let old = pem(&l.pair.cert);
    let fresh = l.pki.server("fresh", &["127.0.0.1"]).unwrap();
    std::fs::copy(&fresh.cert, &l.pair.cert).unwrap();
    std::fs::copy(&fresh.key, &l.pair.key).unwrap();
    let outcomes = l.s.server.parts().reloads.reload_all();
    assert!(
        outcomes
            .iter()
            .any(|(name, r)| *name == "ldap.tls" && r.is_ok()),
        "{outcomes:?}"
    );
    let served = served_leaf(&l.ldaps_url).await;
    assert_eq!(served.trim(), pem(&fresh.cert).trim());
    assert_ne!(served.trim(), old.trim());
    let args = ["-x", "-H", &l.ldaps_url, "-D", ALICE, "-w", ALICE_PASSWORD];
    assert_eq!(code(&tool(&l, "ldapwhoami", &args).await), 0);
}

/// A PROXY v2 header naming `source` (IPv4) as the client.
fn proxy_header(source: [u8; 4]) -> Vec<u8> {
    let mut header = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    header.extend([0x21, 0x11, 0, 12]);
    header.extend(source);
    header.extend([127, 0, 0, 1]);
    header.extend(40000u16.to_be_bytes());
    header.extend(389u16.to_be_bytes());
    header
}

/// One bind on its own connection from `source` (through the trusted proxy).
async fn bind_from(addr: std::net::SocketAddr, source: [u8; 4], password: &str) -> Option<u8> {
    use tokio::io::AsyncWriteExt;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let bytes = [proxy_header(source), raw_bind(ALICE, password)].concat();
    s.write_all(&bytes).await.unwrap();
    bind_result(&mut s).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_a_guessing_source_is_throttled_and_never_locks_the_user_out() {
    let l = start_ldap("allow_plain_binds = true\ntrusted_proxies = [\"127.0.0.1\"]\n").await;
    let addr: std::net::SocketAddr = l.url.trim_start_matches("ldap://").parse().unwrap();
    let (home, attacker) = ([10, 0, 0, 1], [203, 0, 113, 9]);
    assert_eq!(bind_from(addr, home, ALICE_PASSWORD).await, Some(0));
    for guess in 0..10 {
        let wrong = format!("guess-{guess}");
        assert_eq!(bind_from(addr, attacker, &wrong).await, Some(49));
    }
    // The attacker's budget for alice is spent: even the right password is refused there.
    assert_eq!(bind_from(addr, attacker, ALICE_PASSWORD).await, Some(49));
    // Where alice logs in from, it still works (ppolicy would have locked her out).
    assert_eq!(bind_from(addr, home, ALICE_PASSWORD).await, Some(0));
}

/// A bind refused because its budget is spent (no hash) is answered after
/// `failed_bind_delay_ms`, like a wrong password: a closed-loop guesser cannot spin on instant refusals
/// (thousands of connections a second: the CPU honest binds need). Timers never fire
/// early, so the bound below is not a race.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_a_refused_guess_waits_the_reject_delay_like_a_wrong_one() {
    let delay = std::time::Duration::from_millis(400);
    let l = start_ldap(
        "allow_plain_binds = true\ntrusted_proxies = [\"127.0.0.1\"]\nfailed_bind_delay_ms = 400\n",
    )
    .await;
    let addr: std::net::SocketAddr = l.url.trim_start_matches("ldap://").parse().unwrap();
    let attacker = [203, 0, 113, 9];
    for guess in 0..10 {
        let wrong = format!("guess-{guess}");
        let t = std::time::Instant::now();
        assert_eq!(bind_from(addr, attacker, &wrong).await, Some(49));
        assert!(t.elapsed() >= delay, "a wrong password answered early");
    }
    // Throttled now: the right password is refused there, and not sooner.
    let t = std::time::Instant::now();
    assert_eq!(bind_from(addr, attacker, ALICE_PASSWORD).await, Some(49));
    assert!(
        t.elapsed() >= delay,
        "a throttled bind answered after {:?}",
        t.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_idle_connections_close_and_shutdown_sends_a_notice_of_disconnection() {
    use tokio::io::AsyncReadExt;
    let l = start_ldap("idle_timeout_secs = 1\n").await;
    let addr: std::net::SocketAddr = l.url.trim_start_matches("ldap://").parse().unwrap();
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut sink = Vec::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        idle.read_to_end(&mut sink),
    )
    .await;
    assert!(read.is_ok(), "an idle connection stays open");
    assert!(sink.is_empty(), "closed without a word: {sink:?}");
    let mut open = tokio::net::TcpStream::connect(addr).await.unwrap();
    // The connection is served (a bind answered) before the shutdown begins.
    {
        use tokio::io::AsyncWriteExt;
        open.write_all(&raw_bind("", "")).await.unwrap();
        assert_eq!(bind_result(&mut open).await, Some(0));
    }
    let shutdown = tokio::spawn(l.s.server.shutdown());
    let mut notice = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        open.read_to_end(&mut notice),
    )
    .await;
    let oid = b"1.3.6.1.4.1.1466.20036";
    assert!(
        notice.windows(oid.len()).any(|w| w == oid),
        "no Notice of Disconnection: {notice:?}"
    );
    shutdown.await.unwrap().unwrap();
}
