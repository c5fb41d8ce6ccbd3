use super::*;

fn parse(text: &str) -> Result<DirectoryConfig, toml::de::Error> {
    toml::from_str(text)
}

#[test]
fn plain_ldap_without_allow_plaintext_is_an_error() {
    let cfg = parse(
        r#"
        name = "corp"
        servers = ["ldap://127.0.0.1:389"]
        starttls = false
        bind_dn_template = "uid={user},ou=people,dc=example,dc=org"
        "#,
    )
    .unwrap();
    let err = cfg.validate().unwrap_err().to_string();
    assert!(
        err.contains("servers[0]") && err.contains("allow_plaintext"),
        "{err}"
    );
    let ok = DirectoryConfig {
        allow_plaintext: true,
        ..cfg
    };
    let v = ok.validate().unwrap();
    assert_eq!(v.servers[0].security, Security::Plain);
    assert!(v.ca_pem.is_none());
}

#[test]
fn unknown_fields_are_refused() {
    let err = parse(
        r#"
        name = "corp"
        servers = ["ldaps://dc1"]
        bind_dn_template = "uid={user}"
        allow_plain = true
        "#,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("allow_plain"), "{err}");
}

#[test]
fn tls_needs_a_ca_and_modes_are_exclusive() {
    let cfg = parse(
        r#"
        name = "corp"
        servers = ["ldaps://dc1.example.com", "ldap://[::1]:3389"]
        bind_dn_template = "uid={user},dc=example,dc=org"
        "#,
    )
    .unwrap();
    let err = cfg.validate().unwrap_err().to_string();
    assert!(err.contains("ca_file"), "{err}");

    let cfg = parse(
        r#"
        name = "corp"
        servers = ["ldap://127.0.0.1"]
        starttls = false
        allow_plaintext = true
        bind_dn_template = "uid={user},dc=example,dc=org"
        [search]
        base = "dc=example,dc=org"
        filter = "(uid={user})"
        service_dn = "cn=svc"
        service_password = "x"
        "#,
    )
    .unwrap();
    assert!(cfg.validate().unwrap_err().to_string().contains("not both"));
}

#[test]
fn urls_parse_with_default_ports_and_brackets() {
    let u = parse_url("ldaps://dc1.example.com", true, false).unwrap();
    assert_eq!(
        (u.host.as_str(), u.port, u.security),
        ("dc1.example.com", 636, Security::Ldaps)
    );
    let u = parse_url("ldap://[::1]:3389/", true, false).unwrap();
    assert_eq!(
        (u.host.as_str(), u.port, u.security),
        ("::1", 3389, Security::StartTls)
    );
    assert!(parse_url("http://x", true, true).is_err());
    assert!(parse_url("ldap://x:0", true, true).is_err());
    assert!(parse_url("ldap://x:99999", true, true).is_err());
    assert!(parse_url("ldaps://x/dc=example", true, true).is_err());
    assert!(parse_url("ldaps://", true, true).is_err());
}

#[test]
fn limits_are_checked() {
    let base = r#"
        name = "corp"
        servers = ["ldap://127.0.0.1"]
        starttls = false
        allow_plaintext = true
        bind_dn_template = "uid={user},dc=example,dc=org"
    "#;
    for (extra, field) in [
        (
            "[admission]\nmax_in_flight = 4\nmax_in_flight_per_source = 5",
            "max_in_flight_per_source",
        ),
        ("[timeouts]\nbind_ms = 0", "timeouts.bind_ms"),
        ("[breaker]\nfailures_to_open = 0", "failures_to_open"),
    ] {
        let err = parse(&format!("{base}\n{extra}"))
            .unwrap()
            .validate()
            .unwrap_err()
            .to_string();
        assert!(err.contains(field), "{extra}: {err}");
    }
}

#[test]
fn empty_service_password_is_refused() {
    let cfg = parse(
        r#"
        name = "corp"
        servers = ["ldap://127.0.0.1"]
        starttls = false
        allow_plaintext = true
        [search]
        base = "dc=example,dc=org"
        filter = "(uid={user})"
        service_dn = "cn=svc"
        service_password = ""
        "#,
    )
    .unwrap();
    let err = cfg.validate().unwrap_err().to_string();
    assert!(err.contains("service_password"), "{err}");
}

#[test]
fn the_service_password_is_never_printed() {
    let cfg = parse(
        r#"
        name = "corp"
        servers = ["ldap://127.0.0.1"]
        starttls = false
        allow_plaintext = true
        [search]
        base = "dc=example,dc=org"
        filter = "(uid={user})"
        service_dn = "cn=svc"
        service_password = "hunter2-secret"
        "#,
    )
    .unwrap();
    let valid = cfg.validate().unwrap();
    for text in [format!("{cfg:?}"), format!("{valid:?}")] {
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("cn=svc"), "{text}");
    }
}
