use super::*;
use portcullis_store::{Posix, UserAttributes};

fn base() -> Dn {
    Dn::parse("dc=example,dc=com").unwrap_or_default()
}

fn user(name: &str, disabled: bool, uid: Option<u32>) -> UserRecord {
    let mut u = UserRecord::new(name, "$unused$", 0).unwrap_or_else(|e| panic!("{e}"));
    u.disabled = disabled;
    u.attributes = UserAttributes {
        mail: Some(format!("{name}@example.com")),
        posix: uid.map(|n| Posix {
            uid_number: n,
            gid_number: 100,
            home_directory: format!("/home/{name}"),
            login_shell: None,
        }),
        ..UserAttributes::default()
    };
    u
}

fn group(name: &str, gid: Option<u32>, members: &[&str]) -> GroupRecord {
    let mut g = GroupRecord::new(name, 0);
    g.gid_number = gid;
    g.members = members.iter().map(|m| m.to_string()).collect();
    g
}

pub(crate) fn sample() -> (Layout, Directory) {
    let layout = Layout::new(&base());
    let users = [
        user("alice", false, Some(1000)),
        user("bob", true, Some(1001)),
        user("carol", false, None),
    ];
    let groups = [
        group("staff", Some(100), &["alice", "bob", "carol"]),
        group("wiki", None, &["carol"]),
    ];
    let dir = Directory::build(&layout, &users, &groups);
    (layout, dir)
}

fn dn(s: &str) -> Dn {
    Dn::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn users_show_inet_org_person_and_posix_account_with_member_of() {
    let (layout, dir) = sample();
    let alice = dir
        .get(&layout.user("alice"))
        .unwrap_or_else(|| panic!("alice"));
    assert!(alice.has_object_class("inetOrgPerson"));
    assert!(alice.has_object_class("posixAccount"));
    assert_eq!(alice.values("uidNumber"), ["1000"]);
    assert_eq!(alice.values("cn"), ["alice"], "cn defaults to the username");
    assert_eq!(alice.values("sn"), ["alice"], "sn defaults to the cn");
    assert_eq!(
        alice.values("memberOf"),
        ["cn=staff,ou=groups,dc=example,dc=com"]
    );
    let carol = dir
        .get(&layout.user("carol"))
        .unwrap_or_else(|| panic!("carol"));
    assert!(!carol.has_object_class("posixAccount"));
    assert!(carol.get("uidNumber").is_none());
    assert_eq!(carol.values("memberOf").len(), 2);
}

#[test]
fn disabled_users_are_hidden_everywhere() {
    let (layout, dir) = sample();
    assert!(dir.get(&layout.user("bob")).is_none());
    let staff = dir
        .get(&layout.group("staff"))
        .unwrap_or_else(|| panic!("staff"));
    assert_eq!(
        staff.values("member"),
        [
            "uid=alice,ou=people,dc=example,dc=com",
            "uid=carol,ou=people,dc=example,dc=com"
        ]
    );
    assert_eq!(staff.values("memberUid"), ["alice", "carol"]);
}

#[test]
fn groups_are_posix_groups_only_with_a_gid_number() {
    let (layout, dir) = sample();
    let staff = dir
        .get(&layout.group("staff"))
        .unwrap_or_else(|| panic!("staff"));
    assert!(staff.has_object_class("posixGroup"));
    assert_eq!(staff.values("gidNumber"), ["100"]);
    let wiki = dir
        .get(&layout.group("wiki"))
        .unwrap_or_else(|| panic!("wiki"));
    assert!(wiki.has_object_class("groupOfNames"));
    assert!(!wiki.has_object_class("posixGroup"));
    assert!(wiki.get("memberUid").is_none());
}

#[test]
fn entries_come_parents_first_and_lookups_ignore_case() {
    let (_, dir) = sample();
    let order: Vec<String> = dir.from(None).map(|(_, e)| e.dn.to_string()).collect();
    assert_eq!(order.first().map(String::as_str), Some("dc=example,dc=com"));
    for (i, name) in order.iter().enumerate() {
        let parent = dn(name).parent();
        if !parent.is_root() && parent != base().parent() {
            let p = order.iter().position(|o| dn(o) == parent);
            assert!(p.is_some_and(|p| p < i), "{name} before its parent");
        }
    }
    assert_eq!(
        dir.len(),
        4 + 2 + 2,
        "base, three ou, two users, two groups"
    );
    assert!(
        dir.get(&dn("UID=Alice,OU=People,DC=Example,DC=COM"))
            .is_some()
    );
    let after: Vec<_> = dir.from(dir.from(None).nth(2).map(|(k, _)| k)).collect();
    assert_eq!(after.len(), dir.len() - 3);
}

#[test]
fn layout_reads_user_and_service_names_only_where_they_live() {
    let layout = Layout::new(&base());
    let name = |s: &str| layout.user_name(&dn(s));
    assert_eq!(
        name("uid=alice,ou=people,dc=example,dc=com").as_deref(),
        Some("alice")
    );
    assert_eq!(
        name("UID=alice,ou=People,dc=EXAMPLE,dc=com").as_deref(),
        Some("alice")
    );
    assert_eq!(name("cn=alice,ou=people,dc=example,dc=com"), None);
    assert_eq!(name("uid=alice+cn=x,ou=people,dc=example,dc=com"), None);
    assert_eq!(name("uid=alice,ou=groups,dc=example,dc=com"), None);
    assert_eq!(name("uid=alice,ou=x,ou=people,dc=example,dc=com"), None);
    let id = |s: &str| layout.service_id(&dn(s));
    assert_eq!(
        id("cn=gitlab,ou=services,dc=example,dc=com").as_deref(),
        Some("gitlab")
    );
    assert_eq!(id("cn=gitlab,ou=people,dc=example,dc=com"), None);
    assert_eq!(
        layout.user("a,b").to_string(),
        "uid=a\\,b,ou=people,dc=example,dc=com"
    );
}
