//! Conformance of users' directory attributes and of [`GroupStore`] (issue 39): every
//! backend must pass it (run by `conformance::run_all`, on SQLite and PostgreSQL).
//! Each check uses its own names, so checks may run in any order on a shared store.

// Test code: a failed expectation is a panic by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::conformance::test_user;
use crate::directory::{GroupRecord, Posix, UserAttributes};
use crate::error::StoreError;
use crate::store::{GroupStore, Store, UserStore, VersionedStore};
use crate::versioned::Resource;

/// Run every check of this suite.
pub async fn run_all(store: &dyn Store) {
    user_attributes(store).await;
    uid_numbers_are_unique(store).await;
    groups_round_trip(store).await;
    memberships(store).await;
    removing_a_user_ends_its_memberships(store).await;
    versioned_groups(store).await;
}

fn posix(uid: u32) -> Posix {
    Posix {
        uid_number: uid,
        gid_number: 5000,
        home_directory: format!("/home/u{uid}"),
        login_shell: Some("/bin/bash".into()),
    }
}

/// A user with every attribute set, a different entryUUID per name.
pub fn directory_user(name: &str, uid: u32) -> crate::record::UserRecord {
    let mut u = test_user(name);
    u.attributes = UserAttributes {
        cn: Some(format!("{name} Example")),
        sn: Some("Example".into()),
        given_name: Some(name.into()),
        display_name: Some(format!("{name} (display)")),
        mail: Some(format!("{name}@example.com")),
        posix: Some(posix(uid)),
    };
    u
}

/// Attributes are stored and read back whole; the entryUUID never changes when they
/// do; bad attributes write nothing.
pub async fn user_attributes<S: UserStore + VersionedStore + ?Sized>(store: &S) {
    let u = directory_user("dir-attrs", 71_001);
    store.put_user(&u).await.unwrap();
    assert_eq!(store.get_user(&u.username).await.unwrap(), Some(u.clone()));
    let plain = test_user("dir-attrs-plain");
    store.put_user(&plain).await.unwrap();
    let back = store.get_user(&plain.username).await.unwrap().unwrap();
    assert_eq!(back.attributes, UserAttributes::default());
    assert_ne!(back.entry_uuid, u.entry_uuid);

    let mut changed = u.attributes.clone();
    changed.mail = None;
    changed.posix.as_mut().unwrap().login_shell = None;
    store
        .set_user_attributes(&u.username, &changed)
        .await
        .unwrap();
    let back = store.get_user(&u.username).await.unwrap().unwrap();
    assert_eq!(back.attributes, changed);
    assert_eq!(back.entry_uuid, u.entry_uuid);
    assert_eq!(back.password_hash, u.password_hash);

    let mut bad = changed.clone();
    bad.posix.as_mut().unwrap().home_directory = "home/x".into();
    let r = store.set_user_attributes(&u.username, &bad).await;
    assert!(matches!(r, Err(StoreError::Invalid(_))), "{r:?}");
    let r = store.set_user_attributes("dir-none", &changed).await;
    assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
    let mut bad_user = directory_user("dir-attrs-bad", 71_002);
    bad_user.attributes.mail = Some("not mail".into());
    let r = store.put_user(&bad_user).await;
    assert!(matches!(r, Err(StoreError::Invalid(_))), "{r:?}");
    assert_eq!(store.get_user("dir-attrs-bad").await.unwrap(), None);

    // A versioned replacement changes attributes but keeps the entryUUID.
    let v = store.user_versioned(&u.username).await.unwrap().unwrap();
    let mut next = v.record.clone();
    next.attributes.cn = Some("Renamed".into());
    next.entry_uuid = crate::directory::EntryUuid::generate().unwrap();
    store.replace_user(&next, v.version).await.unwrap();
    let back = store.get_user(&u.username).await.unwrap().unwrap();
    assert_eq!(back.attributes.cn.as_deref(), Some("Renamed"));
    assert_eq!(back.entry_uuid, u.entry_uuid);
}

/// A uidNumber belongs to one user: insert, import, attribute change and replacement
/// taking another's are refused as `AlreadyExists`.
pub async fn uid_numbers_are_unique<S: UserStore + VersionedStore + ?Sized>(store: &S) {
    store
        .put_user(&directory_user("dir-uid-a", 72_001))
        .await
        .unwrap();
    let r = store.put_user(&directory_user("dir-uid-b", 72_001)).await;
    assert!(
        matches!(r, Err(StoreError::AlreadyExists(ref m)) if m.contains("uidNumber")),
        "{r:?}"
    );
    let r = store
        .put_users(&[directory_user("dir-uid-c", 72_001)])
        .await;
    assert!(matches!(r, Err(StoreError::AlreadyExists(_))), "{r:?}");
    assert_eq!(store.get_user("dir-uid-c").await.unwrap(), None);
    store
        .put_user(&directory_user("dir-uid-d", 72_002))
        .await
        .unwrap();
    let mut attrs = directory_user("dir-uid-d", 72_001).attributes;
    let r = store.set_user_attributes("dir-uid-d", &attrs).await;
    assert!(matches!(r, Err(StoreError::AlreadyExists(_))), "{r:?}");
    let v = store.user_versioned("dir-uid-d").await.unwrap().unwrap();
    let mut rec = v.record.clone();
    rec.attributes = attrs.clone();
    let r = store.replace_user(&rec, v.version).await;
    assert!(matches!(r, Err(StoreError::AlreadyExists(_))), "{r:?}");
    // Users without POSIX data do not clash.
    attrs.posix = None;
    store
        .set_user_attributes("dir-uid-d", &attrs)
        .await
        .unwrap();
    store.put_user(&test_user("dir-uid-e")).await.unwrap();
}

/// Groups are stored with their members; names and gidNumbers are unique; unknown
/// members are refused and nothing is written.
pub async fn groups_round_trip<S: UserStore + GroupStore + ?Sized>(store: &S) {
    for n in ["dir-g-alice", "dir-g-bob"] {
        store.put_user(&test_user(n)).await.unwrap();
    }
    let mut g = GroupRecord::new("dir-g-staff", 1_700_000_200);
    g.gid_number = Some(73_001);
    g.description = Some("Staff".into());
    g.members = vec!["dir-g-alice".into(), "dir-g-bob".into()];
    store.put_group(&g).await.unwrap();
    assert_eq!(store.get_group(&g.name).await.unwrap(), Some(g.clone()));
    assert_eq!(store.get_group("dir-g-none").await.unwrap(), None);
    assert!(store.list_groups().await.unwrap().contains(&g));

    let r = store.put_group(&GroupRecord::new("dir-g-staff", 0)).await;
    assert!(matches!(r, Err(StoreError::AlreadyExists(_))), "{r:?}");
    let mut same_gid = GroupRecord::new("dir-g-other", 0);
    same_gid.gid_number = Some(73_001);
    let r = store.put_group(&same_gid).await;
    assert!(
        matches!(r, Err(StoreError::AlreadyExists(ref m)) if m.contains("gidNumber")),
        "{r:?}"
    );
    let mut ghost = GroupRecord::new("dir-g-ghosts", 0);
    ghost.members = vec!["dir-g-alice".into(), "dir-g-nobody".into()];
    let r = store.put_group(&ghost).await;
    assert!(
        matches!(r, Err(StoreError::NotFound(ref m)) if m.contains("dir-g-nobody")),
        "{r:?}"
    );
    assert_eq!(store.get_group("dir-g-ghosts").await.unwrap(), None);
    assert_eq!(
        store.groups_of_user("dir-g-alice").await.unwrap(),
        vec!["dir-g-staff"]
    );

    store.set_group_details(&g.name, None, None).await.unwrap();
    let back = store.get_group(&g.name).await.unwrap().unwrap();
    assert_eq!((back.gid_number, back.description), (None, None));
    assert_eq!(back.members, g.members);
    let r = store
        .set_group_details("dir-g-none", Some(73_002), None)
        .await;
    assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
    let r = store.set_group_details(&g.name, Some(0), None).await;
    assert!(matches!(r, Err(StoreError::Invalid(_))), "{r:?}");

    assert!(store.remove_group(&g.name).await.unwrap());
    assert!(!store.remove_group(&g.name).await.unwrap());
    assert!(
        store
            .groups_of_user("dir-g-alice")
            .await
            .unwrap()
            .is_empty()
    );
}

/// Members are added and removed one at a time; unknown groups and users are named.
pub async fn memberships<S: UserStore + GroupStore + ?Sized>(store: &S) {
    for n in ["dir-m-carol", "dir-m-dave"] {
        store.put_user(&test_user(n)).await.unwrap();
    }
    for g in ["dir-m-ops", "dir-m-dev"] {
        store.put_group(&GroupRecord::new(g, 0)).await.unwrap();
    }
    assert!(
        store
            .add_group_member("dir-m-ops", "dir-m-dave")
            .await
            .unwrap()
    );
    assert!(
        store
            .add_group_member("dir-m-ops", "dir-m-carol")
            .await
            .unwrap()
    );
    assert!(
        !store
            .add_group_member("dir-m-ops", "dir-m-carol")
            .await
            .unwrap()
    );
    assert!(
        store
            .add_group_member("dir-m-dev", "dir-m-carol")
            .await
            .unwrap()
    );
    assert_eq!(
        store.group_members("dir-m-ops").await.unwrap(),
        vec!["dir-m-carol", "dir-m-dave"]
    );
    assert_eq!(
        store.groups_of_user("dir-m-carol").await.unwrap(),
        vec!["dir-m-dev", "dir-m-ops"]
    );
    let r = store.add_group_member("dir-m-none", "dir-m-carol").await;
    assert!(
        matches!(r, Err(StoreError::NotFound(ref m)) if m.contains("group")),
        "{r:?}"
    );
    let r = store.add_group_member("dir-m-ops", "dir-m-nobody").await;
    assert!(
        matches!(r, Err(StoreError::NotFound(ref m)) if m.contains("user")),
        "{r:?}"
    );
    let r = store.group_members("dir-m-none").await;
    assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
    assert!(
        store
            .remove_group_member("dir-m-ops", "dir-m-carol")
            .await
            .unwrap()
    );
    assert!(
        !store
            .remove_group_member("dir-m-ops", "dir-m-carol")
            .await
            .unwrap()
    );
    assert_eq!(
        store.group_members("dir-m-ops").await.unwrap(),
        vec!["dir-m-dave"]
    );
    assert!(
        store
            .groups_of_user("dir-m-nobody")
            .await
            .unwrap()
            .is_empty()
    );

    // Members and groups come in byte order (a locale's collation would put "lower"
    // before "Upper"; the suites' databases may collate by bytes anyway, so `groups.rs`'s
    // unit test feeds a locale's order too).
    for n in ["dir-m-lower", "dir-m-Upper"] {
        store.put_user(&test_user(n)).await.unwrap();
    }
    let mut g = GroupRecord::new("dir-m-case", 0);
    g.members = vec!["dir-m-Upper".into(), "dir-m-lower".into()];
    store.put_group(&g).await.unwrap();
    assert_eq!(store.get_group("dir-m-case").await.unwrap(), Some(g));
    store
        .put_group(&GroupRecord::new("dir-m-Case", 0))
        .await
        .unwrap();
    store
        .add_group_member("dir-m-Case", "dir-m-lower")
        .await
        .unwrap();
    assert_eq!(
        store.groups_of_user("dir-m-lower").await.unwrap(),
        vec!["dir-m-Case", "dir-m-case"]
    );
}

/// Removing a user, by either path, removes its memberships and changes its groups'
/// versions (so an ETag of the group no longer matches).
pub async fn removing_a_user_ends_its_memberships<
    S: UserStore + GroupStore + VersionedStore + ?Sized,
>(
    store: &S,
) {
    for n in ["dir-r-erin", "dir-r-frank"] {
        store.put_user(&test_user(n)).await.unwrap();
    }
    let mut g = GroupRecord::new("dir-r-team", 0);
    g.members = vec!["dir-r-erin".into(), "dir-r-frank".into()];
    store.put_group(&g).await.unwrap();
    let before = store.group_versioned(&g.name).await.unwrap().unwrap();
    assert!(store.remove_user("dir-r-erin").await.unwrap());
    let after = store.group_versioned(&g.name).await.unwrap().unwrap();
    assert_eq!(after.record.members, vec!["dir-r-frank"]);
    assert!(after.version > before.version);
    let u = store.user_versioned("dir-r-frank").await.unwrap().unwrap();
    store
        .remove_versioned(Resource::User, "dir-r-frank", u.version)
        .await
        .unwrap();
    assert!(store.group_members(&g.name).await.unwrap().is_empty());
    assert!(
        store
            .groups_of_user("dir-r-frank")
            .await
            .unwrap()
            .is_empty()
    );
    // A user of the same name created later is not a member.
    store.put_user(&test_user("dir-r-erin")).await.unwrap();
    assert!(store.groups_of_user("dir-r-erin").await.unwrap().is_empty());
}

/// Versioned reads, pages and compare-and-set of groups, as for the other resources.
pub async fn versioned_groups<S: UserStore + GroupStore + VersionedStore + ?Sized>(store: &S) {
    for n in ["dir-v-gina", "dir-v-hank", "dir-v-ivan"] {
        store.put_user(&test_user(n)).await.unwrap();
    }
    for name in ["dir-v-a", "dir-v-b", "dir-v-c"] {
        let mut g = GroupRecord::new(name, 0);
        g.members = vec!["dir-v-gina".into()];
        store.put_group(&g).await.unwrap();
    }
    let v1 = store.group_versioned("dir-v-a").await.unwrap().unwrap();
    let mut next = v1.record.clone();
    next.members = vec!["dir-v-hank".into(), "dir-v-ivan".into()];
    next.description = Some("renamed".into());
    let v2 = store.replace_group(&next, v1.version).await.unwrap();
    assert!(v2 > v1.version);
    let seen = store.group_versioned("dir-v-a").await.unwrap().unwrap();
    assert_eq!(seen.version, v2);
    assert_eq!(seen.record.members, next.members);
    assert_eq!(seen.record.description, next.description);
    let r = store.replace_group(&next, v1.version).await;
    assert!(matches!(r, Err(StoreError::Conflict(_))), "{r:?}");
    let r = store
        .replace_group(&GroupRecord::new("dir-v-none", 0), 1)
        .await;
    assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
    let mut ghost = next.clone();
    ghost.members.push("dir-v-nobody".into());
    let r = store.replace_group(&ghost, v2).await;
    assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
    assert_eq!(
        store.group_versioned("dir-v-a").await.unwrap().unwrap(),
        seen
    );

    // A membership change made elsewhere moves the version: the old one is stale.
    store
        .add_group_member("dir-v-a", "dir-v-gina")
        .await
        .unwrap();
    let r = store.replace_group(&next, v2).await;
    assert!(matches!(r, Err(StoreError::Conflict(_))), "{r:?}");

    let page = store.groups_after(Some("dir-v-"), 2).await.unwrap();
    let names: Vec<&str> = page.iter().map(|g| g.record.name.as_str()).collect();
    assert_eq!(names, ["dir-v-a", "dir-v-b"]);
    assert_eq!(page[1].record.members, vec!["dir-v-gina"]);
    let rest = store.groups_after(Some("dir-v-b"), 1).await.unwrap();
    assert_eq!(rest[0].record.name, "dir-v-c");
    assert!(matches!(
        store.groups_after(None, 0).await,
        Err(StoreError::Invalid(_))
    ));

    let c = store.group_versioned("dir-v-c").await.unwrap().unwrap();
    let r = store
        .remove_versioned(Resource::Group, "dir-v-c", c.version + 1)
        .await;
    assert!(matches!(r, Err(StoreError::Conflict(_))), "{r:?}");
    store
        .remove_versioned(Resource::Group, "dir-v-c", c.version)
        .await
        .unwrap();
    assert_eq!(store.group_versioned("dir-v-c").await.unwrap(), None);
    assert_eq!(
        store.groups_of_user("dir-v-gina").await.unwrap(),
        vec!["dir-v-a", "dir-v-b"]
    );
}
