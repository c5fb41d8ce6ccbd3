//! Issue 39 in configuration as code: `portcullis apply FILE` (the real binary) with
//! users' directory attributes and `[[groups]]`: created, unchanged on a second run,
//! updated and pruned in one run where a pruned user was a member (its removal moves
//! the group's version; the plan allows for exactly that), and refused when a member is
//! no user or a field is unknown. Checked in the store.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_store::{DataDir, GroupStore, Posix, UserStore};

use crate::apply::{apply, apply_ok};
use crate::server_support::test_policy;

fn user(name: &str, hash: &str, attrs: &str) -> String {
    format!("[[users]]\nusername = \"{name}\"\npassword_hash = \"{hash}\"\n{attrs}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_39_apply_declares_attributes_and_groups() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let dir = DataDir::open(&data).await.unwrap();
    let store = dir.store();
    let d = data.to_str().unwrap();
    let file = tmp.path().join("decl.toml");
    let f = file.to_str().unwrap();
    let hash = test_policy().hash(b"pw").unwrap();
    let alice = user(
        "alice",
        &hash,
        "[users.attributes]\ncn = \"Alice Liddell\"\nmail = \"alice@example.com\"\n\
         [users.attributes.posix]\nuid_number = 10001\ngid_number = 10000\n\
         home_directory = \"/home/alice\"\n",
    );
    let bob = user("bob", &hash, "");
    let staff =
        "[[groups]]\nname = \"staff\"\ngid_number = 10000\nmembers = [\"bob\", \"alice\"]\n";
    std::fs::write(&file, format!("{alice}{bob}{staff}")).unwrap();
    let out = apply_ok(&[f, "--data-dir", d]);
    assert!(out.contains("group \"staff\": create"), "{out}");
    let a = store.get_user("alice").await.unwrap().unwrap();
    assert_eq!(a.attributes.cn.as_deref(), Some("Alice Liddell"));
    assert_eq!(
        a.attributes.posix,
        Some(Posix {
            uid_number: 10001,
            gid_number: 10000,
            home_directory: "/home/alice".into(),
            login_shell: None,
        })
    );
    let g = store.get_group("staff").await.unwrap().unwrap();
    assert_eq!(g.members, ["alice", "bob"]);
    assert_eq!(g.gid_number, Some(10000));
    let uuid = a.entry_uuid;

    // Again: nothing changes, not even a version.
    let before = store
        .group_versioned("staff")
        .await
        .unwrap()
        .unwrap()
        .version;
    let out = apply_ok(&[f, "--data-dir", d]);
    assert!(
        out.contains("plan: 0 to create, 0 to update, 3 unchanged, 0 to remove"),
        "{out}"
    );
    assert_eq!(
        store
            .group_versioned("staff")
            .await
            .unwrap()
            .unwrap()
            .version,
        before
    );

    // bob is pruned while staff changes and a new group names a new user: one run.
    let carol = user("carol", &hash, "");
    let groups = "[[groups]]\nname = \"staff\"\nmembers = [\"alice\"]\ndescription = \"All\"\n\
                  [[groups]]\nname = \"ops\"\nmembers = [\"carol\"]\n";
    std::fs::write(&file, format!("{alice}{carol}{groups}")).unwrap();
    let out = apply_ok(&[f, "--data-dir", d, "--prune"]);
    assert!(out.contains("user \"bob\": remove"), "{out}");
    assert!(
        out.contains("group \"staff\": update (gid_number, description, members)"),
        "{out}"
    );
    assert!(out.contains("group \"ops\": create"), "{out}");
    assert_eq!(store.get_user("bob").await.unwrap(), None);
    let g = store.get_group("staff").await.unwrap().unwrap();
    assert_eq!(
        (g.members, g.gid_number, g.description.as_deref()),
        (vec!["alice".to_owned()], None, Some("All"))
    );
    assert_eq!(store.group_members("ops").await.unwrap(), ["carol"]);
    assert_eq!(
        store.get_user("alice").await.unwrap().unwrap().entry_uuid,
        uuid
    );

    // Undeclared groups are pruned too; attributes left out are cleared.
    std::fs::write(&file, format!("{}{carol}", user("alice", &hash, ""))).unwrap();
    let out = apply_ok(&[f, "--data-dir", d, "--prune"]);
    assert!(out.contains("group \"ops\": remove"), "{out}");
    assert!(out.contains("user \"alice\": update (attributes)"), "{out}");
    assert!(store.list_groups().await.unwrap().is_empty());
    assert_eq!(
        store.get_user("alice").await.unwrap().unwrap().attributes,
        Default::default()
    );

    // Refusals, before anything is written (the file's new user is not created): a
    // member that is no user, one that --prune removes, an unknown field, repeated
    // members, a bad attribute.
    let newbie = user("newbie", &hash, "");
    for (bad, flags, expect) in [
        (
            "[[groups]]\nname = \"g\"\nmembers = [\"nobody\"]\n",
            &[][..],
            "member \"nobody\" is not a user",
        ),
        (
            "[[groups]]\nname = \"g\"\nmembers = [\"alice\"]\n",
            &["--prune"][..],
            "member \"alice\" is not a user",
        ),
        (
            "[[groups]]\nname = \"g\"\nowner = \"alice\"\n",
            &[][..],
            "unknown field `owner`",
        ),
        (
            "[[groups]]\nname = \"g\"\nmembers = [\"carol\", \"carol\"]\n",
            &[][..],
            "must not repeat",
        ),
        (
            "[[users]]\nusername = \"dan\"\npassword_hash = \"HASH\"\n\
             [users.attributes.posix]\nuid_number = 1\ngid_number = 1\nhome_directory = \"x\"\n",
            &[][..],
            "homeDirectory must be an absolute path",
        ),
    ] {
        let text = format!("{carol}{newbie}{}", bad.replace("HASH", &hash));
        std::fs::write(&file, text).unwrap();
        let mut args = vec![f, "--data-dir", d];
        args.extend_from_slice(flags);
        let out = apply(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad}");
        assert!(stderr.contains(expect), "{bad}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(store.get_user("newbie").await.unwrap(), None, "{bad}");
        assert!(store.get_user("alice").await.unwrap().is_some(), "{bad}");
    }
    dir.close().await;
}
