//! The directory the door shows, built from the store's users and groups: the base
//! entry, `ou=people` (users as inetOrgPerson, posixAccount when they have a `uidNumber`,
//! `memberOf`), `ou=groups` (groupOfNames `member`, posixGroup `memberUid` when the group
//! has a `gidNumber`) and `ou=services` (the service accounts' parent, without entries).
//! Disabled users are left out everywhere, memberships included.
//!
//! A [`Directory`] is a snapshot in tree order (parents first, then by normalised RDN),
//! so that paged searches can resume after the last entry sent (a stateless cookie: its
//! key). The door keeps one for
//! `directory_cache_ms` ([`View`]) and searches scan it: a search by `uidNumber` (SSSD's
//! `(&(objectClass=posixAccount)(uidNumber=1000))`) is a filter over every entry, which
//! costs microseconds per entry and no store round trip.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use portcullis_ldap::dn::{Ava, Rdn};
use portcullis_ldap::{Dn, Entry};
use portcullis_store::{GroupRecord, GroupStore, StoreError, UserRecord, UserStore};

/// The names under the base DN.
pub const PEOPLE: &str = "people";
/// The groups' parent `ou`.
pub const GROUPS: &str = "groups";
/// The service accounts' parent `ou`.
pub const SERVICES: &str = "services";

/// Where the directory's entries are, under one base DN.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The base DN.
    pub base: Dn,
    /// `ou=people,BASE`.
    pub people: Dn,
    /// `ou=groups,BASE`.
    pub groups: Dn,
    /// `ou=services,BASE`.
    pub services: Dn,
}

impl Layout {
    /// The layout under `base`.
    pub fn new(base: &Dn) -> Layout {
        let ou = |name: &str| base.child(rdn("ou", name));
        Layout {
            base: base.clone(),
            people: ou(PEOPLE),
            groups: ou(GROUPS),
            services: ou(SERVICES),
        }
    }

    /// `uid=NAME,ou=people,BASE`.
    pub fn user(&self, name: &str) -> Dn {
        self.people.child(rdn("uid", name))
    }

    /// `cn=NAME,ou=groups,BASE`.
    pub fn group(&self, name: &str) -> Dn {
        self.groups.child(rdn("cn", name))
    }

    /// `cn=ID,ou=services,BASE`.
    pub fn service(&self, id: &str) -> Dn {
        self.services.child(rdn("cn", id))
    }

    /// The username a DN names if it is `uid=NAME,ou=people,BASE` (one AVA), else `None`.
    pub fn user_name(&self, dn: &Dn) -> Option<String> {
        single_value(dn, &self.people, "uid")
    }

    /// The client id a DN names if it is `cn=ID,ou=services,BASE`, else `None`.
    pub fn service_id(&self, dn: &Dn) -> Option<String> {
        single_value(dn, &self.services, "cn")
    }
}

/// An RDN of one AVA.
fn rdn(attribute: &str, value: &str) -> Rdn {
    Rdn {
        avas: vec![Ava::new(attribute, value)],
    }
}

/// The value of `dn`'s only AVA when `dn` is a child of `parent` named by `attribute`.
fn single_value(dn: &Dn, parent: &Dn, attribute: &str) -> Option<String> {
    if dn.parent() != *parent || dn.rdns.len() != parent.rdns.len() + 1 {
        return None;
    }
    match dn.rdn().map(|r| r.avas.as_slice()) {
        Some([ava]) if ava.attribute.eq_ignore_ascii_case(attribute) => Some(ava.value.clone()),
        _ => None,
    }
}

/// One snapshot of the directory.
#[derive(Debug, Default)]
pub struct Directory {
    /// Every entry, parents before children (sorted by [`tree_key`]).
    entries: Vec<Entry>,
    /// The [`tree_key`] of each entry, in the same order: a paged search's cookie.
    keys: Vec<String>,
    /// Normalised DN to position.
    index: HashMap<String, usize>,
}

impl Directory {
    /// The directory of `users` and `groups` under `layout`.
    pub fn build(layout: &Layout, users: &[UserRecord], groups: &[GroupRecord]) -> Directory {
        let enabled: HashMap<&str, &UserRecord> = users
            .iter()
            .filter(|u| !u.disabled)
            .map(|u| (u.username.as_str(), u))
            .collect();
        let mut member_of: HashMap<&str, Vec<String>> = HashMap::new();
        let mut entries = vec![
            base_entry(&layout.base),
            ou_entry(&layout.people, PEOPLE),
            ou_entry(&layout.groups, GROUPS),
            ou_entry(&layout.services, SERVICES),
        ];
        for g in groups {
            let members: Vec<&str> = g
                .members
                .iter()
                .map(String::as_str)
                .filter(|m| enabled.contains_key(m))
                .collect();
            let dn = layout.group(&g.name);
            for m in &members {
                member_of.entry(m).or_default().push(dn.to_string());
            }
            entries.push(group_entry(layout, dn, g, &members));
        }
        for u in users.iter().filter(|u| !u.disabled) {
            let groups = member_of.remove(u.username.as_str()).unwrap_or_default();
            entries.push(user_entry(layout, u, groups));
        }
        let mut keyed: Vec<(String, Entry)> =
            entries.into_iter().map(|e| (tree_key(&e.dn), e)).collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        let (keys, entries): (Vec<String>, Vec<Entry>) = keyed.into_iter().unzip();
        let index = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.dn.normalized(), i))
            .collect();
        Directory {
            entries,
            keys,
            index,
        }
    }

    /// The entry named `dn`.
    pub fn get(&self, dn: &Dn) -> Option<&Entry> {
        self.index
            .get(&dn.normalized())
            .and_then(|i| self.entries.get(*i))
    }

    /// Every entry after the one whose key is `after` (all when `None`), in order, with
    /// its key.
    pub fn from(&self, after: Option<&str>) -> impl Iterator<Item = (&str, &Entry)> {
        let start = after.map_or(0, |k| self.keys.partition_point(|x| x.as_str() <= k));
        self.keys
            .iter()
            .skip(start)
            .map(String::as_str)
            .zip(self.entries.iter().skip(start))
    }

    /// How many entries it has.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it has none (never: the base and its three `ou`s are always there).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// An entry's place in the snapshot's order: its normalised RDNs from the root down, so
/// a parent comes before its children (the order clients expect of a directory).
fn tree_key(dn: &Dn) -> String {
    let rdns: Vec<String> = dn
        .rdns
        .iter()
        .rev()
        .map(|r| {
            Dn {
                rdns: vec![r.clone()],
            }
            .normalized()
        })
        .collect();
    rdns.join(",")
}

fn base_entry(base: &Dn) -> Entry {
    let mut e = Entry::new(base.clone());
    let Some([ava]) = base.rdn().map(|r| r.avas.as_slice()) else {
        return e.with("objectClass", ["top"]);
    };
    let class = match ava.attribute.to_ascii_lowercase().as_str() {
        "dc" | "domaincomponent" | "0.9.2342.19200300.100.1.25" => "domain",
        "o" | "organizationname" | "2.5.4.10" => "organization",
        _ => "organizationalUnit",
    };
    e.add("objectClass", ["top", class]);
    e.add(&ava.attribute, [ava.value.clone()]);
    e
}

fn ou_entry(dn: &Dn, name: &str) -> Entry {
    Entry::new(dn.clone())
        .with("objectClass", ["top", "organizationalUnit"])
        .with("ou", [name])
}

fn user_entry(layout: &Layout, u: &UserRecord, groups: Vec<String>) -> Entry {
    let a = &u.attributes;
    let mut classes = vec!["top", "person", "organizationalPerson", "inetOrgPerson"];
    if a.posix.is_some() {
        classes.push("posixAccount");
    }
    let mut e = Entry::new(layout.user(&u.username));
    e.add("objectClass", classes)
        .add("uid", [u.username.as_str()])
        .add("cn", [a.common_name(&u.username)])
        .add("sn", [a.surname(&u.username)])
        .add("givenName", a.given_name.iter().cloned())
        .add("displayName", a.display_name.iter().cloned())
        .add("mail", a.mail.iter().cloned())
        .add("entryUUID", [u.entry_uuid.to_string()]);
    if let Some(p) = &a.posix {
        e.add("uidNumber", [p.uid_number.to_string()])
            .add("gidNumber", [p.gid_number.to_string()])
            .add("homeDirectory", [p.home_directory.as_str()])
            .add("loginShell", p.login_shell.iter().cloned());
    }
    e.add("memberOf", groups);
    e
}

fn group_entry(layout: &Layout, dn: Dn, g: &GroupRecord, members: &[&str]) -> Entry {
    let mut classes = vec!["top", "groupOfNames"];
    if g.gid_number.is_some() {
        classes.push("posixGroup");
    }
    let mut e = Entry::new(dn);
    e.add("objectClass", classes)
        .add("cn", [g.name.as_str()])
        .add("description", g.description.iter().cloned())
        .add("member", members.iter().map(|m| layout.user(m).to_string()));
    if let Some(gid) = g.gid_number {
        e.add("gidNumber", [gid.to_string()])
            .add("memberUid", members.iter().map(|m| m.to_string()));
    }
    e
}

/// The snapshot in use and when it was read; refreshed by one search at a time when
/// older than `ttl` (the others keep reading the old one meanwhile).
pub struct View {
    ttl: Duration,
    current: parking_lot::RwLock<Option<(Instant, Arc<Directory>)>>,
    refresh: tokio::sync::Mutex<()>,
}

impl View {
    /// A view that rereads the store when its snapshot is older than `ttl`.
    pub fn new(ttl: Duration) -> View {
        View {
            ttl,
            current: parking_lot::RwLock::new(None),
            refresh: tokio::sync::Mutex::new(()),
        }
    }

    fn fresh(&self) -> Option<Arc<Directory>> {
        match &*self.current.read() {
            Some((at, d)) if at.elapsed() < self.ttl => Some(Arc::clone(d)),
            _ => None,
        }
    }

    /// The directory now: the cached snapshot, or a new one read from the store.
    pub async fn get(
        &self,
        layout: &Layout,
        users: &dyn UserStore,
        groups: &dyn GroupStore,
    ) -> Result<Arc<Directory>, StoreError> {
        if let Some(d) = self.fresh() {
            return Ok(d);
        }
        let _one = self.refresh.lock().await;
        if let Some(d) = self.fresh() {
            return Ok(d);
        }
        let (u, g) = tokio::join!(users.list_users(), groups.list_groups());
        let d = Arc::new(Directory::build(layout, &u?, &g?));
        *self.current.write() = Some((Instant::now(), Arc::clone(&d)));
        Ok(d)
    }
}

#[cfg(test)]
pub(crate) mod tests;
