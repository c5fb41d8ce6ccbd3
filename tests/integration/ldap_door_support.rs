//! Portcullis' LDAP door as the directory of issue 39's third-party client tests: an
//! in-process server (`server_support`) with `[ldap]` on free loopback ports (ldap:// with
//! StartTLS, ldaps://) under a throwaway CA, provisioned with the same directory shape as
//! `scripts/slapd --posix`, so the same checks run against both: users user1..userN
//! (password passwordN, cn "User N", sn "N", posixAccount uidNumber/gidNumber 10000+N,
//! home /home/userN, shell /bin/sh), groups `users` (gidNumber 20001, everyone) and
//! `admins` (20002, user1), and the service account `cn=portcullis,ou=services,BASE`
//! (an OAuth client whose secret is its password).
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use portcullis_lab::certs::TestCa;
use portcullis_server::Config;
use portcullis_store::{Grant, GroupRecord, Posix, UserAttributes, UserRecord};

use crate::ldap_interop_support::Directory;
use crate::server_support::{TestServer, start_with, test_policy};

/// The base DN both directories use.
pub const BASE: &str = "dc=example,dc=org";
const SERVICE: &str = "portcullis";

/// A running door and what it was provisioned with.
pub struct Door {
    /// The server.
    pub s: TestServer,
    /// The directory as clients see it.
    pub directory: Directory,
    _certs: tempfile::TempDir,
}

/// Start the door with `users` users, the two groups and the service account.
pub async fn start_door(users: u32) -> Door {
    let certs = tempfile::tempdir().unwrap();
    let ca = TestCa::new(certs.path(), "ca").unwrap();
    let pair = ca.server("ldap", &["127.0.0.1", "localhost"]).unwrap();
    let section = format!(
        "[ldap]\nbase_dn = \"{BASE}\"\nlisten = \"127.0.0.1:0\"\nlisten_tls = \"127.0.0.1:0\"\ndirectory_cache_ms = 0\n\
         [ldap.tls]\ncert = \"{}\"\nkey = \"{}\"\n[ldap.service_accounts.{SERVICE}]\n",
        pair.cert.display(),
        pair.key.display()
    );
    let ldap = Config::parse(&section).unwrap().ldap;
    let s = start_with(|c| {
        c.ldap = ldap;
        // A change written to the store (a user disabled) is seen by the next bind, as
        // the admin API's invalidation makes it; by default within a second.
        c.client_cache_ttl = std::time::Duration::ZERO;
    })
    .await;
    let secret = s
        .add_client(SERVICE, &[Grant::ClientCredentials], &[])
        .await;
    for n in 1..=users {
        let mut user = UserRecord::new(
            format!("user{n}"),
            test_policy()
                .hash(format!("password{n}").as_bytes())
                .unwrap(),
            0,
        )
        .unwrap();
        user.attributes = UserAttributes {
            cn: Some(format!("User {n}")),
            sn: Some(n.to_string()),
            given_name: Some("User".into()),
            display_name: Some(format!("User {n}")),
            mail: Some(format!("user{n}@example.org")),
            posix: Some(Posix {
                uid_number: 10_000 + n,
                gid_number: 10_000 + n,
                home_directory: format!("/home/user{n}"),
                login_shell: Some("/bin/sh".into()),
            }),
        };
        s.store().put_user(&user).await.unwrap();
    }
    for (name, gid, members) in [
        (
            "users",
            20_001,
            (1..=users).map(|n| format!("user{n}")).collect(),
        ),
        ("admins", 20_002, vec!["user1".to_owned()]),
    ] {
        let mut members: Vec<String> = members;
        members.sort();
        s.store()
            .put_group(&GroupRecord {
                gid_number: Some(gid),
                members,
                ..GroupRecord::new(name, 0)
            })
            .await
            .unwrap();
    }
    let plain = s.server.ldap_addr().expect("[ldap] listen");
    let tls = s.server.ldaps_addr().expect("[ldap] listen_tls");
    let directory = Directory {
        ldap_url: format!("ldap://{plain}"),
        ldaps_url: format!("ldaps://{tls}"),
        ca_file: ca.cert.clone(),
        base: BASE.into(),
        service_dn: format!("cn={SERVICE},ou=services,{BASE}"),
        service_password: secret,
    };
    Door {
        s,
        directory,
        _certs: certs,
    }
}
