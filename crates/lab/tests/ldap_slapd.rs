//! The LDAP driver against a real OpenLDAP slapd (started by `scripts/slapd`, which installs
//! Debian's slapd when it is missing): honest binds succeed with 0 and wrong passwords get
//! 49 over plain LDAP, StartTLS and LDAPS, by DN and by search-then-bind; and with
//! ppolicy (pwdMaxFailure 5) a guessing station locks its victim out, which the lab reports
//! as a lockout of that user, while `ldapwhoami` (ldap-utils) confirms the victim's right
//! password is refused and the other users' still work.
//!
//! `PORTCULLIS_SLAPD` names another `scripts/slapd` (default: the repository's).

// Test helpers outside #[test] functions: a failed set-up is the test's failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use portcullis_lab::runner::ScenarioResult;
use portcullis_lab::{RunOptions, Scenario, run_scenario};

/// A running slapd instance, stopped on drop.
struct Slapd {
    script: PathBuf,
    dir: tempfile::TempDir,
    env: HashMap<String, String>,
}

impl Slapd {
    fn start(args: &[&str]) -> Slapd {
        let script = std::env::var_os("PORTCULLIS_SLAPD").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slapd"),
            PathBuf::from,
        );
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(&script)
            .arg("start")
            .arg(dir.path())
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
        assert!(
            out.status.success(),
            "scripts/slapd start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let env = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Slapd { script, dir, env }
    }

    fn get(&self, key: &str) -> &str {
        self.env
            .get(key)
            .unwrap_or_else(|| panic!("scripts/slapd printed no {key}"))
    }

    /// `ldapwhoami`'s exit status for `user`'s simple bind (0: bound, 49: refused).
    fn whoami(&self, user: &str, password: &str) -> i32 {
        let dn = self.get("user_dn_template").replace("{user}", user);
        Command::new("ldapwhoami")
            .args(["-x", "-H", self.get("ldap_url"), "-D", &dn, "-w", password])
            .output()
            .unwrap()
            .status
            .code()
            .unwrap_or(-1)
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        let _ = Command::new(&self.script)
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}

async fn run(toml: &str) -> ScenarioResult {
    let scn = Scenario::parse(toml, None).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    let opts = RunOptions {
        label: "slapd".into(),
        ..RunOptions::default()
    };
    run_scenario(&scn, &opts).await.unwrap()
}

/// A scenario against `url`: `driver` is the `[driver.ldap]` body; honest users user1..
/// user`honest` and `guessers` stations guessing user1..user`guessers`'s passwords.
fn scenario(url: &str, tls: &str, driver: &str, honest: usize, guessers: &str) -> String {
    format!(
        r#"
name = "ldap-test"
[target]
url = "{url}"
{tls}
[driver]
kind = "ldap"
[driver.ldap]
{driver}
[principals]
prefix = "user"
secret_prefix = "password"
count = 20
[run]
duration = "2s"
timeout = "5s"
[[group]]
name = "honest"
size = {honest}
principal_offset = 1
think = "20ms"
sources = "127.0.0.2-127.0.0.9"
{guessers}
"#
    )
}

const GUESSERS: &str = r#"
[[group]]
name = "guessers"
credentials = "wrong_secret"
size = 2
principal_offset = 10
think = "20ms"
sources = "127.0.1.1-127.0.1.2"
"#;

fn codes(r: &ScenarioResult, group: &str) -> Vec<(u16, u64)> {
    let g = r.repeats[0]
        .groups
        .iter()
        .find(|g| g.name == group)
        .unwrap();
    let l = g.ldap.as_ref().expect("LDAP figures");
    l.bind_codes.iter().map(|(k, v)| (*k, *v)).collect()
}

fn assert_honest_0_guessers_49(r: &ScenarioResult, what: &str) {
    let honest = codes(r, "honest");
    assert!(
        honest.len() == 1 && honest[0].0 == 0 && honest[0].1 > 0,
        "{what}: honest binds {honest:?}"
    );
    let guessers = codes(r, "guessers");
    assert!(
        guessers.len() == 1 && guessers[0].0 == 49 && guessers[0].1 > 0,
        "{what}: guessing binds {guessers:?}"
    );
    let g = &r.repeats[0].groups[0];
    assert_eq!(g.success_rate, 1.0, "{what}: {:?} {:?}", g.outcomes, g.ldap);
    assert!(r.passed, "{what}: {:?}", r.failures);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honest_binds_get_0_and_wrong_passwords_49_over_ldap_starttls_and_ldaps() {
    let s = Slapd::start(&["--users", "12", "--pbkdf2-iterations", "1000"]);
    let ca = format!("tls = {{ ca = \"{}\" }}", s.get("ca_file"));
    let by_dn = format!(
        "base_dn = \"{}\"\nuser_dn = \"{}\"",
        s.get("base"),
        s.get("user_dn_template")
    );
    let search = format!(
        "base_dn = \"{}\"\nservice_dn = \"{}\"\nservice_password = \"{}\"\n\
         filter = \"(&(objectClass=inetOrgPerson)(uid={{user}}))\"\n\
         group_filter = \"(member={{dn}})\"",
        s.get("base"),
        s.get("service_dn"),
        s.get("service_password")
    );
    let plain = run(&scenario(s.get("ldap_url"), "", &search, 4, GUESSERS)).await;
    assert_honest_0_guessers_49(&plain, "ldap:// search-then-bind");
    let l = plain.repeats[0].groups[0].ldap.clone().unwrap();
    assert!(l.service_bind_codes.keys().all(|c| *c == 0), "{l:?}");
    assert!(l.search_codes.keys().all(|c| *c == 0), "{l:?}");
    assert!(l.bind_p99_ms > 0.0 && l.binds_per_s > 0.0, "{l:?}");

    let starttls = format!("{by_dn}\nstarttls = true");
    let r = run(&scenario(s.get("ldap_url"), &ca, &starttls, 4, GUESSERS)).await;
    assert_honest_0_guessers_49(&r, "StartTLS by DN");
    let g = &r.repeats[0].groups[0];
    assert_eq!(g.ldap.as_ref().unwrap().starttls_codes.get(&0), Some(&4));
    assert_eq!(g.connections.as_ref().unwrap().tls_handshakes, 4);

    // LDAPS with a new connection (and handshake) per login.
    let per_request = GUESSERS.replace("think", "connection = \"per-request\"\nthink");
    let r = run(&scenario(s.get("ldaps_url"), &ca, &search, 2, &per_request)).await;
    assert_honest_0_guessers_49(&r, "ldaps:// search-then-bind");
    let c = r.repeats[0].groups[1].connections.clone().unwrap();
    assert!(c.tls_handshakes > 2, "a handshake per guess: {c:?}");
    // The independent reference: ldap-utils against the same server.
    assert_eq!(s.whoami("user1", "password1"), 0);
    assert_eq!(s.whoami("user1", "not-the-password"), 49);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guessing_station_locks_its_victim_out_of_slapd_ppolicy_and_the_lab_says_so() {
    let s = Slapd::start(&[
        "--users",
        "3",
        "--ppolicy",
        "5",
        "--pbkdf2-iterations",
        "1000",
    ]);
    let by_dn = format!(
        "base_dn = \"{}\"\nuser_dn = \"{}\"",
        s.get("base"),
        s.get("user_dn_template")
    );
    // Ten guessing stations, each from its own address, all against user1, from 1 s on
    // (after user1's right password has been accepted): 50 guesses/s, about ten between two
    // of user1's own logins, so pwdMaxFailure (5) is reached although each success clears
    // ppolicy's failure count.
    let guessers = r#"
[[group]]
name = "guessers"
credentials = "wrong_secret"
size = 10
principal_offset = 1
principal_count = 1
model = "open"
rate = 50.0
start = "1s"
sources = "127.0.1.1-127.0.1.10"
honour_retry_after = false
"#;
    let toml = scenario(s.get("ldap_url"), "", &by_dn, 3, guessers)
        .replace("2s", "3s")
        // Slower honest logins than guesses: a success clears ppolicy's failure count.
        .replace("think = \"20ms\"", "think = \"200ms\"");
    let r = run(&toml).await;
    let honest = r.repeats[0].groups[0].ldap.clone().unwrap();
    assert_eq!(honest.locked_out, vec!["user1".to_string()], "{honest:?}");
    assert!(honest.never_accepted.is_empty(), "{honest:?}");
    assert!(honest.right_password_refused > 0);
    assert!(!r.passed);
    assert!(
        r.failures
            .iter()
            .any(|f| f.contains("locked out") && f.contains("user1")),
        "{:?}",
        r.failures
    );
    // slapd itself: the victim's right password is refused, the others' still work.
    assert_eq!(s.whoami("user1", "password1"), 49);
    assert_eq!(s.whoami("user2", "password2"), 0);
    assert_eq!(s.whoami("user3", "password3"), 0);
}

/// The delaying relay in front of a real slapd (issue 40, report 000's back office): a
/// right password binds through it, a wrong one is answered with slapd's 49 no sooner than
/// the hold; five wrong binds through it lock the user under ppolicy (the relay holds the
/// answers, not the binds), which the lab's probe (`simple_bind`, straight to slapd) and
/// `ldapwhoami` agree on, while another user still binds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_holds_slapds_failed_binds_and_the_probe_agrees_with_ldapwhoami() {
    use portcullis_lab::relay::{Relay, RelayConfig, simple_bind};
    use std::time::{Duration, Instant};

    let slapd = Slapd::start(&[
        "--users",
        "3",
        "--ppolicy",
        "5",
        "--pbkdf2-iterations",
        "1000",
    ]);
    let port: u16 = slapd.get("port").parse().unwrap();
    let direct = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let hold = Duration::from_millis(300);
    let relay = Relay::start(
        "127.0.0.1:0".parse().unwrap(),
        RelayConfig {
            upstream: direct,
            failed_bind_delay: hold,
        },
    )
    .await
    .unwrap();
    let dn = |u: &str| slapd.get("user_dn_template").replace("{user}", u);
    let t = Duration::from_secs(20);
    assert_eq!(
        simple_bind(relay.addr(), &dn("user2"), "password2", t).await,
        Ok(0)
    );
    for _ in 0..5 {
        let started = Instant::now();
        let code = simple_bind(relay.addr(), &dn("user1"), "guess", t).await;
        assert_eq!(code, Ok(49));
        assert!(
            started.elapsed() >= hold,
            "answered after {:?}",
            started.elapsed()
        );
    }
    let c = relay.counts();
    assert_eq!((c.binds_succeeded, c.binds_failed, c.undecoded), (1, 5, 0));
    // Locked: the right password is refused, by the probe and by ldapwhoami alike.
    assert_eq!(
        simple_bind(direct, &dn("user1"), "password1", t).await,
        Ok(49)
    );
    assert_eq!(slapd.whoami("user1", "password1"), 49);
    assert_eq!(
        simple_bind(direct, &dn("user2"), "password2", t).await,
        Ok(0)
    );
    assert_eq!(slapd.whoami("user2", "password2"), 0);
}
