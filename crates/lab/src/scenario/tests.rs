//! Scenario parsing and validation, and the safety caps.

use super::*;

const MINIMAL: &str = r#"
name = "t"
[target]
url = "http://127.0.0.1:9"
[driver]
kind = "oauth2"
[principals]
count = 4
[[group]]
name = "g"
size = 2
"#;

fn err(text: &str) -> String {
    Scenario::parse(text, None).unwrap_err().to_string()
}

#[test]
fn every_builtin_scenario_parses() {
    for (name, text) in BUILTIN {
        let s = Scenario::parse(text, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&s.raw.name, name);
        assert!(!s.raw.description.is_empty());
    }
}

#[test]
fn minimal_scenario_gets_documented_defaults() {
    let s = Scenario::parse(MINIMAL, None).unwrap();
    assert_eq!(s.target.port, 9);
    assert_eq!(s.target.token_path, "/oauth2/token");
    assert_eq!(s.target.jwks, JwksSource::Discover);
    assert_eq!(s.target.metrics.as_deref(), Some("/metrics"));
    assert_eq!(s.run.duration, Duration::from_secs(10));
    assert_eq!(s.run.repeats, 1);
    let g = &s.groups[0];
    assert_eq!(
        g.model,
        Model::Closed {
            think: Duration::ZERO
        }
    );
    assert_eq!(g.connection, ConnectionMode::KeepAlive);
    assert!(g.honour_retry_after);
    assert_eq!(g.duration, Duration::from_secs(10));
    assert!(g.expects_success());
    assert_eq!(
        s.principals.get(1),
        Some(("lab-client-1".into(), "lab-secret-1".into()))
    );
}

#[test]
fn unknown_keys_are_rejected_with_the_key_named() {
    let e = err(&format!("{MINIMAL}\nfrobnicate = 1\n"));
    assert!(e.contains("frobnicate"), "{e}");
    let e = err(&MINIMAL.replace("size = 2", "size = 2\nthinktime = \"1s\""));
    assert!(e.contains("thinktime"), "{e}");
    let e = err(&MINIMAL.replace("[principals]", "[run]\nrepeat = 2\n[principals]"));
    assert!(e.contains("repeat"), "{e}");
    let e = err(&MINIMAL.replace(
        "kind = \"oauth2\"",
        "kind = \"oauth2\"\ngrnat = \"password\"",
    ));
    assert!(e.contains("grnat"), "{e}");
}

#[test]
fn open_loop_groups_need_a_rate_and_reject_closed_loop_keys() {
    let open = MINIMAL.replace(
        "size = 2",
        "size = 2\nmodel = \"open\"\nrate = 50.0\nrate_end = 100.0\narrival = \"poisson\"",
    );
    let s = Scenario::parse(&open, None).unwrap();
    assert_eq!(
        s.groups[0].model,
        Model::Open {
            rate: 50.0,
            rate_end: 100.0,
            poisson: true,
            max_outstanding: 4096
        }
    );
    assert!(err(&MINIMAL.replace("size = 2", "size = 2\nmodel = \"open\"")).contains("needs rate"));
    assert!(
        err(&open.replace("rate = 50.0", "rate = 50.0\nthink = \"1s\"")).contains("think is for")
    );
    assert!(err(&MINIMAL.replace("size = 2", "size = 2\nrate = 5.0")).contains("are for model"));
}

#[test]
fn group_timing_and_principals_are_checked() {
    let e = err(&MINIMAL.replace("size = 2", "size = 5"));
    assert!(e.contains("principals 0..5") && e.contains("has 4"), "{e}");
    let e = err(&MINIMAL.replace("size = 2", "size = 2\nstart = \"9s\"\nduration = \"2s\""));
    assert!(e.contains("fit in run.duration"), "{e}");
    let e = err(&MINIMAL.replace("size = 2", "size = 2\nstart = \"2 s\""));
    assert!(e.contains("unit"), "{e}");
    let two = format!("{MINIMAL}\n[[group]]\nname = \"h\"\nsize = 2\n");
    let s = Scenario::parse(&two, None).unwrap();
    assert_eq!(
        s.groups[1].principal_offset, 2,
        "groups get consecutive principals"
    );
    assert!(err(&two.replace("name = \"h\"", "name = \"g\"")).contains("unique"));
}

#[test]
fn durations_and_source_ranges_parse() {
    assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
    assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
    assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
    assert!(parse_duration("5").is_err());
    assert!(parse_duration("5h").is_err());
    assert!(
        parse_duration("61m").is_err(),
        "beyond the hard ceiling of one hour"
    );
    let s = parse_sources("127.0.0.2-127.0.0.250").unwrap();
    assert_eq!(s.len(), 249);
    assert_eq!(s[0], "127.0.0.2".parse::<IpAddr>().unwrap());
    assert_eq!(s[248], "127.0.0.250".parse::<IpAddr>().unwrap());
    assert_eq!(parse_sources("127.0.0.7, ::1").unwrap().len(), 2);
    assert!(parse_sources("127.0.0.9-127.0.0.2").is_err());
    assert!(parse_sources("localhost").is_err());
}

#[test]
fn issue_16_sources_can_take_one_address_per_network() {
    let s = parse_sources("127.1.1.1-127.1.100.1 step 256").unwrap();
    assert_eq!(s.len(), 100);
    assert_eq!(s[1], "127.1.2.1".parse::<IpAddr>().unwrap());
    assert_eq!(s[99], "127.1.100.1".parse::<IpAddr>().unwrap());
    assert!(parse_sources("127.1.1.1 step 256").is_err());
    assert!(parse_sources("127.1.1.1-127.1.2.1 step 0").is_err());
    assert!(parse_sources("127.1.1.1-127.1.2.1 step x").is_err());
}

#[test]
fn credentials_from_a_file_are_read_relative_to_the_scenario() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("creds.csv"),
        "# id,secret\nalice,s3cret,with,commas\nbob,pw\n",
    )
    .unwrap();
    let text = MINIMAL.replace(
        "size = 2",
        "size = 2\ncredentials = \"file\"\ncredentials_file = \"creds.csv\"\nexpect = \"failure\"",
    );
    let s = Scenario::parse(&text, Some(dir.path())).unwrap();
    match &s.groups[0].credentials {
        Credentials::File {
            pairs,
            expect_success,
        } => {
            assert_eq!(
                pairs[0],
                ("alice".to_string(), "s3cret,with,commas".to_string())
            );
            assert_eq!(pairs.len(), 2);
            assert!(!expect_success);
        }
        c => panic!("{c:?}"),
    }
    assert!(!s.groups[0].expects_success());
    assert!(
        err(&MINIMAL.replace("size = 2", "size = 2\ncredentials_file = \"x\""))
            .contains("only for")
    );
}

#[test]
fn thresholds_name_known_groups_and_metrics() {
    let t = format!("{MINIMAL}\n[[threshold]]\nmetric = \"p99_ms\"\nmax = 200.0\n");
    assert_eq!(
        Scenario::parse(&t, None).unwrap().thresholds[0].metric,
        Metric::P99Ms
    );
    assert!(
        err(&t.replace(
            "metric = \"p99_ms\"",
            "group = \"nope\"\nmetric = \"p99_ms\""
        ))
        .contains("nope")
    );
    assert!(err(&t.replace("p99_ms", "p98_ms")).contains("p98_ms"));
    assert!(err(&t.replace("max = 200.0", "")).contains("min and/or max"));
}

#[test]
fn caps_cannot_be_raised_past_the_hard_ceilings() {
    let e = err(&MINIMAL.replace(
        "[principals]",
        "[run]\nmax_requests = 50000000\n[principals]",
    ));
    assert!(e.contains("max_requests"), "{e}");
    let e = err(&MINIMAL.replace("[principals]", "[run]\nrepeats = 0\n[principals]"));
    assert!(e.contains("repeats"), "{e}");
    let e = err(&MINIMAL.replace("[principals]", "[run]\nduration = \"2h\"\n[principals]"));
    assert!(e.contains("unit") || e.contains("range"), "{e}");
    let big = MINIMAL
        .replace("count = 4", "count = 30000")
        .replace("size = 2", "size = 25000");
    assert!(err(&big).contains("ceiling"));
    let fast = MINIMAL.replace("size = 2", "size = 2\nmodel = \"open\"\nrate = 1e9");
    assert!(err(&fast).contains("rate must be"));
}

#[test]
fn only_loopback_targets_unless_explicitly_allowed() {
    assert!(safety::check_target("127.0.0.1", 80, &[]).is_ok());
    assert!(safety::check_target("127.0.0.9", 80, &[]).is_ok());
    assert!(safety::check_target("localhost", 80, &[]).is_ok());
    let e = safety::check_target("192.0.2.1", 80, &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("--allow-target 192.0.2.1"), "{e}");
    assert!(safety::check_target("192.0.2.1", 80, &["192.0.2.1".into()]).is_ok());
    assert!(safety::check_target("192.0.2.1", 80, &["192.0.2.2".into()]).is_err());
    let lo: std::net::SocketAddr = "127.0.0.1:80".parse().unwrap();
    assert!(safety::check_sources(&["10.0.0.1".parse().unwrap()], lo).is_err());
    assert!(safety::parse_http_url("https://127.0.0.1").is_err());
    assert!(safety::parse_http_url("http://127.0.0.1:8080/x").is_err());
    assert_eq!(
        safety::parse_http_url("http://[::1]:81").unwrap(),
        ("::1".into(), 81)
    );
}

/// Issue 14: HTTPS targets, connection modes and per-group client authentication.
#[test]
fn issue_14_https_targets_tls_settings_and_group_auth() {
    let dir = tempfile::tempdir().unwrap();
    let ca = crate::certs::TestCa::new(dir.path(), "ca").unwrap();
    let client = ca.client("c", "lab").unwrap();
    let key = crate::certs::signing_key(dir.path(), "k", "ES256").unwrap();
    let text = format!(
        r#"
name = "t"
[target]
url = "https://localhost:8443"
tls = {{ ca = "ca.crt", versions = ["1.3"] }}
[driver]
kind = "oauth2"
[principals]
count = 8
[[group]]
name = "resume"
size = 2
connection = "per-request-resume"
[[group]]
name = "mtls"
size = 2
connection = "per-request"
client_auth = "tls_client_auth"
tls = {{ ca = "ca.crt", server_name = "127.0.0.1", cert = "c.crt", key = "c.key" }}
[[group]]
name = "jwt"
size = 2
client_auth = "private_key_jwt"
private_key = "{}"
"#,
        key.key.display()
    );
    let s = Scenario::parse(&text, Some(dir.path())).unwrap();
    assert_eq!(s.target.base_url(), "https://localhost:8443");
    let t = s.target.tls.as_ref().unwrap();
    assert_eq!((t.versions.as_str(), t.client_cert), ("1.3", false));
    assert_eq!(s.groups[0].connection, ConnectionMode::PerRequestResume);
    assert_eq!(
        s.groups[0].tls.as_ref().unwrap().versions,
        "1.3",
        "inherits the target's"
    );
    let m = s.groups[1].tls.as_ref().unwrap();
    assert!(m.client_cert);
    assert_eq!(
        format!("{:?}", m.server_name),
        format!(
            "{:?}",
            rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap()
        )
    );
    assert_eq!(
        s.groups[1].auth.as_ref().unwrap().0,
        ClientAuth::TlsClientAuth
    );
    let (a, spec) = s.groups[2].auth.clone().unwrap();
    assert_eq!(a, ClientAuth::PrivateKeyJwt);
    assert_eq!(spec.unwrap().lifetime_secs, 60);
    // --target to another host re-derives the server name; http drops TLS.
    let moved = s.clone().with_target_url("https://127.0.0.1:9443").unwrap();
    assert_eq!(
        format!("{:?}", moved.target.tls.unwrap().server_name),
        format!(
            "{:?}",
            rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap()
        )
    );
    let plain = s.with_target_url("http://127.0.0.1:9").unwrap();
    assert!(plain.target.tls.is_none() && plain.groups.iter().all(|g| g.tls.is_none()));
    let _ = client;

    let bad = |t: &str| {
        Scenario::parse(t, Some(dir.path()))
            .unwrap_err()
            .to_string()
    };
    let e = bad(&MINIMAL.replace(
        "url = \"http://127.0.0.1:9\"",
        "url = \"http://127.0.0.1:9\"\ntls = { ca = \"ca.crt\" }",
    ));
    assert!(e.contains("https://"), "{e}");
    let e = bad(&MINIMAL.replace("size = 2", "size = 2\nconnection = \"sometimes\""));
    assert!(e.contains("per-request-resume"), "{e}");
    let https = MINIMAL.replace(
        "http://127.0.0.1:9",
        "https://127.0.0.1:9\"\ntls = { ca = \"ca.crt\" }\nx = \"",
    );
    let https = https.replace("\nx = \"\"", "");
    let e = bad(&https.replace("size = 2", "size = 2\nclient_auth = \"tls_client_auth\""));
    assert!(e.contains("tls.cert"), "{e}");
    let e = bad(&https.replace("size = 2", "size = 2\nclient_auth = \"private_key_jwt\""));
    assert!(e.contains("private_key"), "{e}");
    let e = bad(&https.replace("ca.crt", "/dev/zero"));
    assert!(e.contains("not a regular file"), "{e}");
    let e = bad(&https.replace("ca.crt", "c.key"));
    assert!(e.contains("no CERTIFICATE"), "{e}");
}

/// An EAP scenario over `dir`'s certificates with `driver_eap` and one group's `group_eap`.
fn eap_text(driver_eap: &str, group: &str) -> String {
    format!(
        r#"
name = "eap"
[target]
url = "radius://127.0.0.1:1812"
[driver]
kind = "radius"
secret = "s"
{driver_eap}
[principals]
count = 8
[run]
timeout = "10s"
[[group]]
name = "g"
size = 2
{group}
"#
    )
}

#[test]
fn issue_25_eap_groups_merge_the_drivers_settings_and_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let ca = crate::certs::TestCa::new(dir.path(), "ca").unwrap();
    let client = ca.client("station", "lab-client-0").unwrap();
    let (ca, cert, key) = (
        ca.cert.display().to_string(),
        client.cert.display().to_string(),
        client.key.display().to_string(),
    );
    // The driver's eap is every group's; a group overrides it key by key.
    let text = eap_text(
        &format!(r#"eap = {{ method = "ttls", ca = "{ca}", versions = ["1.2"] }}"#),
        &format!(r#"eap = {{ method = "tls", resume = true, cert = "{cert}", key = "{key}" }}"#),
    );
    let s = Scenario::parse(&text, None).unwrap();
    let e = s.groups[0].eap.as_ref().unwrap();
    assert_eq!((e.method, e.resume), (EapMethod::Tls, true));
    let tls = e.tls.as_ref().unwrap();
    assert!(tls.client_cert);
    assert_eq!(tls.versions, "1.2");
    assert!(s.uses_eap());
    // Inherited as is: TTLS, no resumption by default, an anonymous outer identity.
    let text = eap_text(
        &format!(r#"eap = {{ method = "ttls", ca = "{ca}", anonymous_identity = "anonymous" }}"#),
        r#"credentials = "wrong_secret""#,
    );
    let e = Scenario::parse(&text, None).unwrap().groups[0]
        .eap
        .clone()
        .unwrap();
    assert_eq!((e.method, e.resume), (EapMethod::Ttls, false));
    assert_eq!(e.anonymous_identity.as_deref(), Some("anonymous"));

    let cases = [
        (
            String::new(),
            r#"eap = { ca = "x" }"#.to_string(),
            "method is required",
        ),
        (
            String::new(),
            format!(r#"eap = {{ method = "peap", ca = "{ca}" }}"#),
            "\"tls\" or \"ttls\"",
        ),
        (
            String::new(),
            r#"eap = { method = "ttls" }"#.into(),
            "ca is required",
        ),
        (
            String::new(),
            format!(r#"eap = {{ method = "tls", ca = "{ca}" }}"#),
            "needs cert and key",
        ),
        (
            String::new(),
            format!(r#"eap = {{ method = "ttls", ca = "{ca}", cert = "{cert}", key = "{key}" }}"#),
            "cert and key are for method = \"tls\"",
        ),
        (
            String::new(),
            format!(
                "credentials = \"wrong_secret\"\neap = {{ method = \"tls\", ca = \"{ca}\", cert = \"{cert}\", key = \"{key}\" }}"
            ),
            "guessing stations use method = \"ttls\"",
        ),
        (
            String::new(),
            format!(r#"eap = {{ method = "ttls", ca = "{ca}", anonymous_identity = "" }}"#),
            "1-253 octets",
        ),
        (
            String::new(),
            format!(r#"eap = {{ method = "ttls", ca = "{ca}", cipher = "x" }}"#),
            "cipher",
        ),
        (
            String::new(),
            r#"eap = { method = "ttls", ca = "/nonexistent/ca.pem" }"#.into(),
            "/nonexistent/ca.pem",
        ),
    ];
    for (driver, group, want) in cases {
        let e = err(&eap_text(&driver, &group));
        assert!(e.contains(want), "{group}: {e}");
    }
    // eap is a RADIUS setting.
    let http = MINIMAL.replace("size = 2", "size = 2\neap = { method = \"ttls\" }");
    assert!(
        err(&http).contains("only for kind = \"radius\""),
        "{}",
        err(&http)
    );
}

#[test]
fn issue_25_the_demo_fills_in_the_eap_certificates() {
    let text = eap_text(
        r#"eap = { method = "ttls" }"#,
        "eap = { method = \"tls\", resume = true }\n[demo]\neap_pki = true",
    );
    let s = Scenario::parse(&text, None).unwrap();
    assert!(s.groups[0].eap.as_ref().unwrap().tls.is_none());
    let dir = tempfile::tempdir().unwrap();
    let ca = crate::certs::TestCa::new(dir.path(), "ca").unwrap();
    let client = ca.client("station", "lab-client-0").unwrap();
    let s = s.with_eap_pki(&ca.cert, &client).unwrap();
    let e = s.groups[0].eap.as_ref().unwrap();
    assert!(e.tls.as_ref().unwrap().client_cert);
    let s = s.with_target_url("radius://127.0.0.1:1999").unwrap();
    assert!(s.groups[0].eap.as_ref().unwrap().tls.is_some());
}

const LDAP: &str = r#"
name = "l"
[target]
url = "ldap://127.0.0.1:3389"
[driver]
kind = "ldap"
[driver.ldap]
base_dn = "dc=example,dc=org"
user_dn = "uid={user},ou=people,dc=example,dc=org"
[principals]
prefix = "user"
secret_prefix = "password"
count = 4
[[group]]
name = "g"
size = 3
principal_offset = 1
"#;

#[test]
fn an_ldap_scenario_parses_with_its_defaults() {
    let s = Scenario::parse(LDAP, None).unwrap();
    assert_eq!((s.target.host.as_str(), s.target.port), ("127.0.0.1", 3389));
    assert!(s.target.tls.is_none());
    assert_eq!(
        s.target.metrics, None,
        "an ldap:// target is scraped only from a URL"
    );
    let DriverSpec::Ldap(l) = &s.driver else {
        panic!("{:?}", s.driver)
    };
    assert!(!l.ldaps && !l.starttls && l.read_entry);
    assert_eq!(l.attributes, ["cn", "mail", "memberOf"]);
    assert_eq!(s.groups[0].principal_count, 3);
    let s = Scenario::parse(
        &LDAP.replace("ldap://127.0.0.1:3389", "ldaps://127.0.0.1"),
        None,
    );
    let s = s.unwrap();
    assert_eq!(s.target.port, 636);
    assert!(s.target.tls.is_some(), "ldaps:// is TLS");
}

#[test]
fn search_then_bind_reads_its_service_password_from_the_environment_at_run_time() {
    let text = LDAP.replace(
        "user_dn = \"uid={user},ou=people,dc=example,dc=org\"",
        "service_dn = \"cn=s,dc=example,dc=org\"\nservice_password_env = \"LAB_TEST_UNSET_VAR_39\"",
    );
    let s = Scenario::parse(&text, None).unwrap();
    let DriverSpec::Ldap(l) = s.driver else {
        panic!()
    };
    let UserBind::Search { filter, .. } = &l.bind else {
        panic!("{:?}", l.bind)
    };
    assert_eq!(filter, "(uid={user})");
    let e = crate::ldap::LdapDriver::new("127.0.0.1:389".parse().unwrap(), l).unwrap_err();
    assert!(e.to_string().contains("LAB_TEST_UNSET_VAR_39"), "{e}");
}

#[test]
fn ldap_settings_are_checked_with_the_key_named() {
    let dn = "user_dn = \"uid={user},ou=people,dc=example,dc=org\"";
    for (from, to, want) in [
        (
            &*format!("[driver.ldap]\nbase_dn = \"dc=example,dc=org\"\n{dn}"),
            "",
            "needs a [driver.ldap]",
        ),
        ("uid={user},ou", "uid=x,ou", "must contain {user}"),
        (dn, "", "needs user_dn"),
        (dn, &format!("{dn}\nservice_dn = \"cn=s\""), "not both"),
        ("ldap://127.0.0.1:3389", "ldaps://127.0.0.1", "ldaps"),
        ("ldap://127.0.0.1:3389", "http://127.0.0.1", "ldap://"),
        (
            "size = 3",
            "size = 3\nprincipal_count = 4",
            "principal_count",
        ),
        (
            "principal_offset = 1",
            "principal_offset = 2",
            "needs principals 2..5",
        ),
    ] {
        let mut text = LDAP.replacen(from, to, 1);
        if from.starts_with("ldap://") && to.starts_with("ldaps") {
            text = text.replace(dn, &format!("{dn}\nstarttls = true"));
        }
        let e = err(&text);
        assert!(e.contains(want), "{from} -> {to}: {e}");
    }
    let e = err(&LDAP.replace("[principals]", "[target.tls]\nca = \"x\"\n[principals]"));
    assert!(e.contains("target.tls needs an ldaps://"), "{e}");
    let e = err(&MINIMAL.replace("[target]", "[driver.ldap]\nbase_dn = \"x\"\n[target]"));
    assert!(e.contains("driver.ldap"), "{e}");
}

#[test]
fn a_group_sharing_one_principal_gives_every_client_that_user() {
    let text = LDAP.replace(
        "principal_offset = 1",
        "principal_offset = 2\nprincipal_count = 1\ncredentials = \"wrong_secret\"",
    );
    let s = Scenario::parse(&text, None).unwrap();
    let who = crate::runner::identities(&s, 0, &s.groups[0]).unwrap();
    assert!(who.iter().all(|w| w.id == "user2"), "{who:?}");
    assert!(who.iter().all(|w| w.secret != "password2"));
}
