#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

#[test]
fn entry_uuid_round_trips_the_rfc_example() {
    // RFC 4122 / 9562's example UUID, in both cases.
    let u = EntryUuid::parse("F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6").unwrap();
    assert_eq!(u.to_string(), "f81d4fae-7dec-11d0-a765-00a0c91e6bf6");
    for bad in [
        "",
        "f81d4fae7dec11d0a76500a0c91e6bf6",
        "f81d4fae-7dec-11d0-a765-00a0c91e6bf",
        "g81d4fae-7dec-11d0-a765-00a0c91e6bf6",
        "f81d4fae-7dec-11d0-a765-00a0c91e6bf6-",
        "+81d4fae-7dec-11d0-a765-00a0c91e6bf6",
    ] {
        assert!(EntryUuid::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn generated_uuids_are_version_4_and_differ() {
    let a = EntryUuid::generate().unwrap().to_string();
    let b = EntryUuid::generate().unwrap().to_string();
    assert_ne!(a, b);
    for u in [&a, &b] {
        let c: Vec<char> = u.chars().collect();
        assert_eq!(c[14], '4', "{u}");
        assert!("89ab".contains(c[19]), "{u}");
    }
}

#[test]
fn posix_ids_paths_and_mail_are_checked() {
    assert!(validate_posix_id("uidNumber", 0).is_err());
    assert!(validate_posix_id("uidNumber", 1).is_ok());
    assert!(validate_posix_id("uidNumber", 2_147_483_647).is_ok());
    assert!(validate_posix_id("uidNumber", 2_147_483_648).is_err());
    assert!(validate_absolute_path("homeDirectory", "/home/alice").is_ok());
    for bad in ["home/alice", "", "/home/../root", "/home/./a", "/home/a\nb"] {
        assert!(
            validate_absolute_path("homeDirectory", bad).is_err(),
            "{bad:?}"
        );
    }
    assert!(validate_mail("alice@example.com").is_ok());
    for bad in ["alice", "@example.com", "alice@", "a b@example.com", ""] {
        assert!(validate_mail(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn defaults_are_shown_not_stored() {
    let mut a = UserAttributes::default();
    assert_eq!(a.common_name("alice"), "alice");
    assert_eq!(a.surname("alice"), "alice");
    a.cn = Some("Alice Liddell".into());
    assert_eq!(a.surname("alice"), "Alice Liddell");
    a.sn = Some("Liddell".into());
    assert_eq!(a.surname("alice"), "Liddell");
}

#[test]
fn groups_refuse_repeated_members() {
    let mut g = GroupRecord::new("staff", 0);
    g.members = vec!["bob".into(), "alice".into(), "bob".into()];
    assert!(g.validate().is_err());
    g.members.pop();
    assert!(g.validate().is_ok());
    g.gid_number = Some(0);
    assert!(g.validate().is_err());
}
