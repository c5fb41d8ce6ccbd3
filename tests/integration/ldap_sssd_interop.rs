//! Issue 39: SSSD (Debian's sssd with libnss-sss and libpam-sss, unmodified, installed by
//! scripts/ldap-clients) on this machine over an LDAP directory: users and groups resolved
//! by glibc's `getent -s sss` (RFC 2307: posixAccount, posixGroup with memberUid), and
//! passwords checked by `pamtester` through a PAM service using `pam_sss.so` (SSSD binds as
//! the user over StartTLS). The same checks run against OpenLDAP slapd (the reference) and
//! Portcullis' LDAP door. SSSD's sockets are machine-wide: `sssd_support` runs one at a
//! time and cleans up. Needs root; a missing sssd or pamtester FAILS the test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::ldap_door_support::start_door;
use crate::ldap_interop_support::Slapd;
use crate::sssd_support::{Sssd, Transport, getent, pamtester};

/// What every directory must give (users as `scripts/slapd --posix` makes them: user N has
/// uidNumber and gidNumber 10000+N, home /home/userN, shell /bin/sh; group users 20001
/// with everyone, admins 20002 with user1).
pub fn check(sssd: &Sssd, users: usize) {
    let log = || sssd.log();
    assert_eq!(
        getent("passwd", "user2"),
        (
            0,
            "user2:*:10002:10002:User 2:/home/user2:/bin/sh".to_owned()
        ),
        "{}",
        log()
    );
    assert_eq!(getent("passwd", "nosuchuser").0, 2, "{}", log());
    let (code, admins) = getent("group", "admins");
    assert_eq!(
        (code, admins.as_str()),
        (0, "admins:*:20002:user1"),
        "{}",
        log()
    );
    let (code, all) = getent("group", "users");
    let mut members: Vec<&str> = all.rsplit(':').next().unwrap().split(',').collect();
    members.sort_unstable();
    let mut want: Vec<String> = (1..=users).map(|n| format!("user{n}")).collect();
    want.sort_unstable();
    assert_eq!(
        (code, members),
        (0, want.iter().map(String::as_str).collect()),
        "{all}"
    );
    // initgroups: the groups a login gets (what `id user1` shows).
    let (code, groups) = getent("initgroups", "user1");
    assert_eq!(code, 0, "{}", log());
    for gid in ["20001", "20002"] {
        assert!(groups.split_whitespace().any(|g| g == gid), "{groups}");
    }
    let (code, groups) = getent("initgroups", "user2");
    assert_eq!(code, 0, "{}", log());
    let gids: Vec<&str> = groups.split_whitespace().skip(1).collect();
    assert!(
        gids.contains(&"20001") && !gids.contains(&"20002"),
        "{groups}"
    );
    let (ok, out) = pamtester("user1", "password1");
    assert!(
        ok && out.contains("successfully authenticated"),
        "{out}\n{}",
        log()
    );
    let (ok, out) = pamtester("user1", "password2");
    assert!(!ok && out.contains("Authentication failure"), "{out}");
    let (ok, out) = pamtester("nosuchuser", "password1");
    assert!(!ok, "{out}");
    // A right password after the wrong one is still accepted.
    let (ok, out) = pamtester("user1", "password1");
    assert!(ok, "{out}\n{}", log());
    let (ok, out) = pamtester("user2", "password2");
    assert!(ok, "{out}\n{}", log());
}

#[test]
fn issue_39_sssd_getent_and_pamtester_against_openldap_slapd() {
    let slapd = Slapd::start(&["--users", "3", "--pbkdf2-iterations", "1000", "--posix"]);
    check(
        &Sssd::start(&slapd.directory(), Transport::StartTls, "user1"),
        3,
    );
}

/// The door: the same answers over StartTLS and over LDAPS, and a user disabled in
/// Portcullis cannot log in from then on. (The blocking calls leave the server on the
/// runtime's worker threads.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_sssd_getent_and_pamtester_against_the_ldap_door() {
    let door = start_door(3).await;
    let sssd = Sssd::start(&door.directory, Transport::Ldaps, "user1");
    check(&sssd, 3);
    drop(sssd);
    let sssd = Sssd::start(&door.directory, Transport::StartTls, "user1");
    check(&sssd, 3);
    let (ok, out) = pamtester("user3", "password3");
    assert!(ok, "{out}\n{}", sssd.log());
    door.s
        .store()
        .set_user_disabled("user3", true)
        .await
        .unwrap();
    let (ok, out) = pamtester("user3", "password3");
    assert!(!ok && out.contains("Authentication failure"), "{out}");
    drop(sssd);
    door.s.server.shutdown().await.unwrap();
}
