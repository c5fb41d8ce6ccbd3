//! Password checks against real OpenLDAP slapd instances (Debian's, started by
//! scripts/slapd): both modes, right/wrong/unknown, LDAPS and StartTLS, escaping, pooling,
//! failover, breakers, the lockout policy probe.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Slapd, dn_template, search};
use portcullis_upstream::{
    BreakerState, Directory, ManualClock, Outcome, PolicyKind, UnavailableKind,
};

fn outcome_of(answer: &portcullis_upstream::Answer) -> &Outcome {
    &answer.outcome
}

fn kind(answer: &portcullis_upstream::Answer) -> UnavailableKind {
    match &answer.outcome {
        Outcome::Unavailable(u) => u.kind,
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dn_template_over_starttls_accepts_the_right_password_only() {
    let slapd = Slapd::start(&[]);
    let url = slapd.get("ldap_url").to_owned();
    let dir = Directory::new(&dn_template(&slapd, std::slice::from_ref(&url))).unwrap();

    let ok = dir.check("10.0.0.1", "user2", b"password2").await;
    assert_eq!(ok.outcome, Outcome::Accepted);
    assert_eq!(ok.server.as_deref(), Some(url.as_str()));
    assert_eq!(&*ok.directory, "corp");
    assert_eq!(
        dir.check("10.0.0.1", "user2", b"password3").await.outcome,
        Outcome::Rejected
    );
    // slapd answers a bind to a DN it does not hold with invalidCredentials: in this mode
    // an unknown name looks like a wrong password (which the caller treats alike anyway).
    assert_eq!(
        dir.check("10.0.0.1", "nobody", b"password2").await.outcome,
        Outcome::Rejected
    );
    // An empty password would be an unauthenticated bind, which slapd answers "success".
    let empty = dir.check("10.0.0.1", "user2", b"").await;
    assert_eq!((empty.outcome, empty.server), (Outcome::Rejected, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_then_bind_over_ldaps_tells_unknown_from_wrong() {
    let slapd = Slapd::start(&[]);
    let dir = Directory::new(&search(&slapd, &[slapd.get("ldaps_url").to_owned()])).unwrap();
    assert_eq!(
        dir.check("s", "user7", b"password7").await.outcome,
        Outcome::Accepted
    );
    assert_eq!(
        dir.check("s", "user7", b"password1").await.outcome,
        Outcome::Rejected
    );
    assert_eq!(
        dir.check("s", "nobody", b"password7").await.outcome,
        Outcome::Unknown
    );
    // Filter syntax in a name is data: it matches no entry instead of every entry.
    for name in ["*", "user7)(uid=*", "user*"] {
        assert_eq!(
            dir.check("s", name, b"password7").await.outcome,
            Outcome::Unknown,
            "{name}"
        );
    }

    // A filter that matches several entries for one name binds to none of them.
    let mut cfg = search(&slapd, &[slapd.get("ldaps_url").to_owned()]);
    if let Some(s) = cfg.search.as_mut() {
        s.filter = "(|(uid={user})(objectClass=inetOrgPerson))".into();
    }
    let loose = Directory::new(&cfg).unwrap();
    assert_eq!(
        loose.check("s", "user7", b"password7").await.outcome,
        Outcome::Rejected
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_with_dn_and_filter_syntax_reach_their_own_entry() {
    let slapd = Slapd::start(&[]);
    // The entry is written by hand in RFC 4514 form and added with ldapadd (OpenLDAP's DN
    // parser is the reference); a second entry is the one a broken escaping would hit.
    let people = slapd.people();
    slapd.ldap_tool(
        "ldapadd",
        &[],
        &format!(
            "dn: uid=we\\,ird\\+na#me (x)*,{people}\nobjectClass: inetOrgPerson\nuid: we,ird+na#me (x)*\n\
             cn: weird\nsn: weird\nuserPassword: weird-secret\n\n\
             dn: uid=we,{people}\nobjectClass: inetOrgPerson\nuid: we\ncn: we\nsn: we\n\
             userPassword: weird-secret\n"
        ),
    );
    let name = "we,ird+na#me (x)*";
    let url = slapd.get("ldap_url").to_owned();
    let by_dn = Directory::new(&dn_template(&slapd, std::slice::from_ref(&url))).unwrap();
    let by_search = Directory::new(&search(&slapd, &[url])).unwrap();
    for dir in [&by_dn, &by_search] {
        assert_eq!(
            dir.check("s", name, b"weird-secret").await.outcome,
            Outcome::Accepted
        );
        assert_eq!(
            dir.check("s", name, b"wrong").await.outcome,
            Outcome::Rejected
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_from_another_ca_is_refused() {
    let slapd = Slapd::start(&[]);
    let other = Slapd::start(&["--users", "0"]);
    for url in [slapd.get("ldap_url"), slapd.get("ldaps_url")] {
        // Trust the other instance's CA only.
        let dir = Directory::new(&dn_template(&other, &[url.to_owned()])).unwrap();
        let answer = dir.check("s", "user1", b"password1").await;
        assert_eq!(kind(&answer), UnavailableKind::Tls, "{url}: {answer:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_ldap_works_only_when_allowed() {
    let slapd = Slapd::start(&[]);
    let mut cfg = dn_template(&slapd, &[slapd.get("ldap_url").to_owned()]);
    cfg.starttls = false;
    assert!(Directory::new(&cfg).is_err());
    cfg.allow_plaintext = true;
    let dir = Directory::new(&cfg).unwrap();
    assert_eq!(
        dir.check("s", "user3", b"password3").await.outcome,
        Outcome::Accepted
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_pooled_and_stale_ones_replaced() {
    let slapd = Slapd::start(&[]);
    let dir = Directory::new(&search(&slapd, &[slapd.get("ldap_url").to_owned()])).unwrap();
    for n in 1..=10 {
        let password = format!("password{n}");
        let answer = dir
            .check("s", &format!("user{n}"), password.as_bytes())
            .await;
        assert_eq!(answer.outcome, Outcome::Accepted);
    }
    // One connection bound as the service account for searches, one for user binds.
    let s = &dir.status().servers[0];
    assert_eq!((s.connects, s.idle_connections), (2, 2), "{s:?}");

    // slapd restarted: the pooled connections are dead; the next check replaces them
    // without counting a server error.
    slapd.stop();
    slapd.restart();
    assert_eq!(
        dir.check("s", "user4", b"password4").await.outcome,
        Outcome::Accepted
    );
    let s = &dir.status().servers[0];
    assert_eq!((s.errors, s.state), (0, BreakerState::Closed), "{s:?}");
    assert_eq!(s.connects, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_to_the_second_server_then_fast_refusal_when_both_are_down() {
    let first = Slapd::start(&[]);
    let second = Slapd::start(&[]);
    let urls = vec![
        first.get("ldaps_url").to_owned(),
        second.get("ldap_url").to_owned(),
    ];
    // Both instances' CAs in one file.
    let cas = tempfile::NamedTempFile::new().unwrap();
    let pem = [first.get("ca_file"), second.get("ca_file")]
        .map(|f| std::fs::read_to_string(f).unwrap())
        .concat();
    std::fs::write(cas.path(), pem).unwrap();
    let mut cfg = dn_template(&first, &urls);
    cfg.ca_file = Some(cas.path().to_owned());
    cfg.breaker.failures_to_open = 2;
    let dir = Directory::new(&cfg).unwrap();

    let a = dir.check("s", "user5", b"password5").await;
    assert_eq!(
        (outcome_of(&a), a.server.as_deref()),
        (&Outcome::Accepted, Some(urls[0].as_str()))
    );

    first.stop();
    for _ in 0..2 {
        let a = dir.check("s", "user5", b"password5").await;
        assert_eq!(
            (outcome_of(&a), a.server.as_deref()),
            (&Outcome::Accepted, Some(urls[1].as_str()))
        );
        assert_eq!(
            dir.check("s", "user5", b"nope").await.outcome,
            Outcome::Rejected
        );
    }
    let status = dir.status();
    assert_eq!(status.servers[0].state, BreakerState::Open, "{status:?}");
    assert!(status.up);

    second.stop();
    let a = dir.check("s", "user5", b"password5").await;
    assert_eq!(kind(&a), UnavailableKind::Connect, "{a:?}");
    let a = dir.check("s", "user5", b"password5").await;
    assert_eq!(kind(&a), UnavailableKind::Connect, "{a:?}");
    // Both breakers open: refused without trying any server.
    let connects: u64 = dir.status().servers.iter().map(|s| s.connects).sum();
    let a = dir.check("s", "user5", b"password5").await;
    assert_eq!(kind(&a), UnavailableKind::AllServersDown, "{a:?}");
    let status = dir.status();
    assert_eq!(
        status.servers.iter().map(|s| s.connects).sum::<u64>(),
        connects
    );
    assert!(!status.up);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_breaker_recovers_through_a_half_open_probe() {
    let slapd = Slapd::start(&[]);
    let mut cfg = dn_template(&slapd, &[slapd.get("ldap_url").to_owned()]);
    cfg.breaker.failures_to_open = 1;
    cfg.breaker.open_ms = 60_000;
    let clock = ManualClock::new();
    let dir = Directory::with_clock(&cfg, Arc::new(clock.clone())).unwrap();
    assert_eq!(
        dir.check("s", "user1", b"password1").await.outcome,
        Outcome::Accepted
    );

    slapd.stop();
    assert_eq!(
        kind(&dir.check("s", "user1", b"password1").await),
        UnavailableKind::Connect
    );
    assert_eq!(dir.status().servers[0].state, BreakerState::Open);

    // Back up, but the breaker is open: the server is not tried until the period passes.
    slapd.restart();
    let connects = dir.status().servers[0].connects;
    assert_eq!(
        kind(&dir.check("s", "user1", b"password1").await),
        UnavailableKind::AllServersDown
    );
    assert_eq!(dir.status().servers[0].connects, connects);

    clock.advance(Duration::from_secs(60));
    assert_eq!(dir.status().servers[0].state, BreakerState::HalfOpen);
    assert_eq!(
        dir.check("s", "user1", b"password1").await.outcome,
        Outcome::Accepted
    );
    assert_eq!(dir.status().servers[0].state, BreakerState::Closed);

    // A failed probe opens it again for a whole period.
    slapd.stop();
    assert_eq!(
        kind(&dir.check("s", "user1", b"password1").await),
        UnavailableKind::Connect
    );
    clock.advance(Duration::from_secs(60));
    assert_eq!(
        kind(&dir.check("s", "user1", b"password1").await),
        UnavailableKind::Connect
    );
    assert_eq!(dir.status().servers[0].state, BreakerState::Open);
    assert_eq!(
        kind(&dir.check("s", "user1", b"password1").await),
        UnavailableKind::AllServersDown
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ppolicy_lockout_threshold_is_read_for_doctor() {
    let slapd = Slapd::start(&["--ppolicy", "5"]);
    let url = slapd.get("ldap_url").to_owned();
    let dir = Directory::new(&search(&slapd, std::slice::from_ref(&url))).unwrap();
    let policy = dir.directory_policy().await.unwrap();
    assert_eq!(policy.kind, PolicyKind::OpenLdapPpolicy);
    assert_eq!(policy.lockout_threshold, Some(5));
    assert_eq!(policy.dn.as_deref(), Some(slapd.get("policy_dn")));

    // Anonymous (DN-template mode) cannot read it here: reported as not found, not as safe.
    let anonymous = Directory::new(&dn_template(&slapd, &[url])).unwrap();
    let policy = anonymous.directory_policy().await.unwrap();
    assert_eq!(
        (policy.kind, policy.lockout_threshold),
        (PolicyKind::NotFound, None)
    );

    let plain = Slapd::start(&["--users", "1"]);
    let dir = Directory::new(&search(&plain, &[plain.get("ldap_url").to_owned()])).unwrap();
    let policy = dir.directory_policy().await.unwrap();
    assert_eq!(
        (policy.kind, policy.lockout_threshold),
        (PolicyKind::NotFound, None)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_service_account_or_a_missing_base_is_the_directory_s_fault() {
    let slapd = Slapd::start(&["--users", "2"]);
    let url = slapd.get("ldap_url").to_owned();

    let mut cfg = search(&slapd, std::slice::from_ref(&url));
    if let Some(s) = cfg.search.as_mut() {
        s.service_password = Some("not-the-password".into());
    }
    let dir = Directory::new(&cfg).unwrap();
    let answer = dir.check("s", "user1", b"password1").await;
    assert_eq!(kind(&answer), UnavailableKind::ServiceAccount, "{answer:?}");
    assert_eq!(dir.status().servers[0].errors, 1);

    let mut cfg = search(&slapd, std::slice::from_ref(&url));
    if let Some(s) = cfg.search.as_mut() {
        s.base = format!("ou=nowhere,{}", slapd.get("base"));
    }
    let dir = Directory::new(&cfg).unwrap();
    let answer = dir.check("s", "user1", b"password1").await;
    assert_eq!(kind(&answer), UnavailableKind::DirectoryError, "{answer:?}");
}
