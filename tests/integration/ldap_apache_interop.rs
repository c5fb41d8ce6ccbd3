//! Issue 39: Apache httpd with `mod_authnz_ldap` (Debian's apache2, unmodified, installed by
//! scripts/ldap-clients) protecting URLs with an LDAP directory: Basic credentials checked
//! by a search as the service account then a bind as the user, over ldap:// with StartTLS
//! and over ldaps://, and `Require ldap-group` (mod_authnz_ldap's compare of the group's
//! `member` with the user's DN). The same checks run against OpenLDAP slapd (the reference:
//! what an application sees from a conforming directory) and against Portcullis' LDAP door.
//! A missing apache2 FAILS the test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::ldap_door_support::start_door;
use crate::ldap_interop_support::{Apache, Slapd};

/// One request: the page, the credentials typed, the status Apache must answer.
pub type Case = (&'static str, Option<(&'static str, &'static str)>, u16);

/// What every directory must give: user1 (password1) is in `admins`, user2 (password2) is
/// not; both are users. Wrong passwords and unknown users are 401, a non-member of the
/// required group too (mod_authz answers 401 to a Basic user it refuses), and a right
/// password after wrong ones is still accepted.
pub const CASES: &[Case] = &[
    ("starttls", Some(("user1", "password1")), 200),
    ("starttls", Some(("user1", "password2")), 401),
    ("starttls", Some(("nosuchuser", "password1")), 401),
    ("starttls", None, 401),
    ("starttls", Some(("user1", "password1")), 200),
    ("ldaps", Some(("user2", "password2")), 200),
    ("ldaps", Some(("user2", "wrong")), 401),
    ("admins", Some(("user1", "password1")), 200),
    ("admins", Some(("user2", "password2")), 401),
    ("admins", Some(("user1", "wrong")), 401),
    ("posix", Some(("user1", "password1")), 200),
    ("posix", Some(("user2", "password2")), 401),
];

/// Runs `cases` against `apache`; fails with every mismatch and Apache's log.
pub fn check(apache: &Apache, cases: &[Case]) {
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|&(page, cred, want)| {
            let got = apache.get(page, cred);
            (got != want).then(|| format!("/{page}/ as {cred:?}: {got}, want {want}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}\n{}", apache.log());
}

#[test]
fn issue_39_apache_mod_authnz_ldap_against_openldap_slapd() {
    let slapd = Slapd::start(&["--users", "3", "--pbkdf2-iterations", "1000", "--posix"]);
    check(&Apache::start(&slapd.directory()), CASES);
}

/// The door: the same answers, and a user disabled in Portcullis is refused from then on.
/// (Apache's calls are blocking; the server runs on the runtime's worker threads.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_apache_mod_authnz_ldap_against_the_ldap_door() {
    let door = start_door(3).await;
    let apache = Apache::start(&door.directory);
    check(&apache, CASES);
    let user3 = Some(("user3", "password3"));
    check(&apache, &[("starttls", user3, 200), ("ldaps", user3, 200)]);
    door.s
        .store()
        .set_user_disabled("user3", true)
        .await
        .unwrap();
    check(&apache, &[("starttls", user3, 401), ("ldaps", user3, 401)]);
    check(&apache, &[("starttls", Some(("user2", "password2")), 200)]);
    door.s.server.shutdown().await.unwrap();
}
