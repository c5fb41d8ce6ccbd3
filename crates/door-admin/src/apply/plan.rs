//! The plan of `portcullis apply`: what the store holds compared with what the file
//! declares, one [`Step`] per client, user, NAS and group (create, update with the fields that
//! differ, unchanged, remove), and carrying it out.
//!
//! Every update and removal is a compare-and-set on the version read while planning
//! (`Store::replace_*`, `Store::remove_versioned`): a record someone else changed in the
//! meantime is not overwritten; apply stops with an error and a second run re-plans.
//! Dynamically registered clients (RFC 7591) belong to whoever registered them and are
//! never pruned.

mod groups;

use std::fmt::Write as _;
use std::sync::Arc;

use portcullis_hash::{Credential, Peppers, Policy};
use portcullis_store::versioned::Resource;
use portcullis_store::{
    ClientAuth, ClientRecord, GroupRecord, MasterKey, NasRecord, Store, UserRecord,
};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use utoipa::ToSchema;

use super::{ApplyError, Desired, DesiredAuth, err};

/// What happens to one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// It is not in the store: it is added.
    Create,
    /// It differs in these fields (names only, never values).
    Update(Vec<&'static str>),
    /// It is as declared.
    Unchanged,
    /// Not declared and `--prune`: it is removed.
    Remove,
    /// Not declared, kept: without `--prune`, or a dynamically registered client.
    Kept(&'static str),
}

/// What is written for a step.
#[derive(Clone)]
enum Write {
    Client(ClientRecord),
    User(UserRecord),
    Nas(NasRecord),
    Group(GroupRecord),
    Nothing,
}

/// One record's step.
#[derive(Clone)]
pub struct Step {
    /// `client`, `user`, `nas` or `group`.
    pub kind: Resource,
    /// Its id, username or name.
    pub key: String,
    /// What happens.
    pub action: Action,
    version: i64,
    write: Write,
}

/// The whole plan.
#[derive(Clone, Default)]
pub struct Plan {
    /// Steps: clients, then users, then NAS, each in file order, then undeclared ones.
    pub steps: Vec<Step>,
}

fn kind_name(r: Resource) -> &'static str {
    match r {
        Resource::Client => "client",
        Resource::User => "user",
        Resource::Nas => "nas",
        Resource::Group => "group",
    }
}

fn store_err(e: portcullis_store::StoreError) -> ApplyError {
    err(e.to_string())
}

pub(super) fn store_error(e: portcullis_store::StoreError) -> ApplyError {
    store_err(e)
}

/// What the plan needs besides the file: the store and its secrets.
pub struct Context<'a> {
    /// The store.
    pub store: Arc<dyn Store>,
    /// Pepper keys (stored client secrets may be peppered HMACs).
    pub peppers: &'a Peppers,
    /// Seals NAS secrets.
    pub master_key: &'a MasterKey,
    /// How chosen client secrets are hashed.
    pub policy: &'a Policy,
    /// Unix seconds, for new records.
    pub now: i64,
}

fn secret_verifies(secret: &[u8], hash: &str, peppers: &Peppers) -> bool {
    Credential::parse(hash)
        .ok()
        .and_then(|c| c.verify(secret, peppers).ok())
        .unwrap_or(false)
}

impl Plan {
    /// Compare `desired` with the store; `prune`: undeclared records are to be removed.
    pub async fn make(
        desired: &Desired,
        cx: &Context<'_>,
        prune: bool,
    ) -> Result<Plan, ApplyError> {
        let mut steps = Vec::new();
        for d in &desired.clients {
            let current = cx.store.client_versioned(&d.id).await.map_err(store_err)?;
            let (stored, version) = match current {
                Some(v) => (Some(v.record), v.version),
                None => (None, 0),
            };
            let mut changed = Vec::new();
            let (auth, hashes) = match (&d.auth, &stored) {
                (DesiredAuth::Secret(s), Some(c))
                    if c.auth == ClientAuth::Secret
                        && c.secret_hashes.len() == 1
                        && secret_verifies(s, &c.secret_hashes[0], cx.peppers) =>
                {
                    (ClientAuth::Secret, c.secret_hashes.clone())
                }
                (DesiredAuth::Secret(s), _) => {
                    changed.push("secret");
                    let h = cx
                        .policy
                        .hash(s)
                        .map_err(|e| err(format!("client {:?}: hashing its secret: {e}", d.id)))?;
                    (ClientAuth::Secret, vec![h])
                }
                (DesiredAuth::SecretHash(h), c) => {
                    if c.as_ref().is_none_or(|c| c.secret_hashes != [h.clone()]) {
                        changed.push("secret");
                    }
                    (ClientAuth::Secret, vec![h.clone()])
                }
                (DesiredAuth::Keyed(a), c) => {
                    if c.as_ref().is_none_or(|c| c.auth != *a) {
                        changed.push("auth");
                    }
                    (a.clone(), Vec::new())
                }
            };
            let record = ClientRecord {
                id: d.id.clone(),
                auth,
                secret_hashes: hashes,
                grants: d.grants.clone(),
                scopes: d.scopes.clone(),
                token_lifetime: d.token_lifetime,
                created_at: stored.as_ref().map_or(cx.now, |c| c.created_at),
            };
            let action = match &stored {
                None => Action::Create,
                Some(c) => {
                    if c.grants != record.grants {
                        changed.push("grants");
                    }
                    if c.scopes != record.scopes {
                        changed.push("scopes");
                    }
                    if c.token_lifetime != record.token_lifetime {
                        changed.push("token_lifetime");
                    }
                    if changed.is_empty() {
                        Action::Unchanged
                    } else {
                        Action::Update(changed)
                    }
                }
            };
            steps.push(step(
                Resource::Client,
                &d.id,
                action,
                version,
                Write::Client(record),
            ));
        }
        for d in &desired.users {
            let current = cx
                .store
                .user_versioned(&d.username)
                .await
                .map_err(store_err)?;
            let (action, version, created_at) = match current {
                None => (Action::Create, 0, cx.now),
                Some(v) => {
                    let mut changed = Vec::new();
                    if v.record.password_hash != d.password_hash {
                        changed.push("password_hash");
                    }
                    if v.record.disabled != d.disabled {
                        changed.push("disabled");
                    }
                    if v.record.attributes != d.attributes {
                        changed.push("attributes");
                    }
                    let a = if changed.is_empty() {
                        Action::Unchanged
                    } else {
                        Action::Update(changed)
                    };
                    (a, v.version, v.record.created_at)
                }
            };
            let record = UserRecord {
                created_at,
                ..d.clone()
            };
            steps.push(step(
                Resource::User,
                &d.username,
                action,
                version,
                Write::User(record),
            ));
        }
        for d in &desired.nas {
            let current = cx.store.nas_versioned(&d.name).await.map_err(store_err)?;
            // The file does not declare RadSec certificates (`portcullis nas certificate`
            // sets them): an update keeps the one in force.
            let certificate = current.as_ref().and_then(|v| v.record.certificate.clone());
            let (action, version, sealed, created_at) = match current {
                None => (Action::Create, 0, None, cx.now),
                Some(v) => {
                    let mut changed = Vec::new();
                    if v.record.cidr != d.cidr {
                        changed.push("cidr");
                    }
                    let same_secret = v
                        .record
                        .open_secret(cx.master_key)
                        .is_ok_and(|s| bool::from(s.as_slice().ct_eq(d.secret.as_slice())));
                    if !same_secret {
                        changed.push("secret");
                    }
                    if v.record.require_message_authenticator != d.require_message_authenticator {
                        changed.push("require_message_authenticator");
                    }
                    let keep = same_secret.then(|| v.record.secret_sealed.clone());
                    let a = if changed.is_empty() {
                        Action::Unchanged
                    } else {
                        Action::Update(changed)
                    };
                    (a, v.version, keep, v.record.created_at)
                }
            };
            let secret_sealed = match sealed {
                Some(s) => s,
                None if action == Action::Unchanged => Vec::new(),
                None => NasRecord::seal_secret(cx.master_key, &d.name, &d.secret)
                    .map_err(|e| err(format!("NAS {:?}: {e}", d.name)))?,
            };
            let record = NasRecord {
                name: d.name.clone(),
                cidr: d.cidr,
                secret_sealed,
                require_message_authenticator: d.require_message_authenticator,
                created_at,
                certificate,
            };
            steps.push(step(
                Resource::Nas,
                &d.name,
                action,
                version,
                Write::Nas(record),
            ));
        }
        let mut plan = Plan { steps };
        plan.undeclared(desired, cx, prune).await?;
        groups::plan(&mut plan, desired, cx, prune).await?;
        Ok(plan)
    }

    async fn undeclared(
        &mut self,
        d: &Desired,
        cx: &Context<'_>,
        prune: bool,
    ) -> Result<(), ApplyError> {
        let unmanaged = if prune {
            ""
        } else {
            "not declared; --prune removes it"
        };
        for c in cx.store.list_clients().await.map_err(store_err)? {
            if d.clients.iter().any(|x| x.id == c.id) {
                continue;
            }
            let registered = cx
                .store
                .get_client_registration(&c.id)
                .await
                .map_err(store_err)?
                .is_some();
            let action = if registered {
                Action::Kept("dynamically registered (RFC 7591); managed by its owner")
            } else if prune {
                Action::Remove
            } else {
                Action::Kept(unmanaged)
            };
            self.push_undeclared(cx, Resource::Client, c.id, action)
                .await?;
        }
        for u in cx.store.list_users().await.map_err(store_err)? {
            if !d.users.iter().any(|x| x.username == u.username) {
                let action = if prune {
                    Action::Remove
                } else {
                    Action::Kept(unmanaged)
                };
                self.push_undeclared(cx, Resource::User, u.username, action)
                    .await?;
            }
        }
        for n in cx.store.list_nas().await.map_err(store_err)? {
            if !d.nas.iter().any(|x| x.name == n.name) {
                let action = if prune {
                    Action::Remove
                } else {
                    Action::Kept(unmanaged)
                };
                self.push_undeclared(cx, Resource::Nas, n.name, action)
                    .await?;
            }
        }
        Ok(())
    }

    async fn push_undeclared(
        &mut self,
        cx: &Context<'_>,
        kind: Resource,
        key: String,
        action: Action,
    ) -> Result<(), ApplyError> {
        let version = if action == Action::Remove {
            let v = match kind {
                Resource::Client => cx
                    .store
                    .client_versioned(&key)
                    .await
                    .map(|v| v.map(|v| v.version)),
                Resource::User => cx
                    .store
                    .user_versioned(&key)
                    .await
                    .map(|v| v.map(|v| v.version)),
                Resource::Nas => cx
                    .store
                    .nas_versioned(&key)
                    .await
                    .map(|v| v.map(|v| v.version)),
                Resource::Group => cx
                    .store
                    .group_versioned(&key)
                    .await
                    .map(|v| v.map(|v| v.version)),
            };
            match v.map_err(store_err)? {
                Some(v) => v,
                // Removed by someone else meanwhile: nothing to do.
                None => return Ok(()),
            }
        } else {
            0
        };
        self.steps
            .push(step(kind, &key, action, version, Write::Nothing));
        Ok(())
    }

    /// The plan as items, as `POST /admin/v1/apply` answers it (no secret, no hash).
    pub fn items(&self) -> Vec<PlanItem> {
        self.steps
            .iter()
            .map(|s| {
                let (action, fields, reason) = match &s.action {
                    Action::Create => (ItemAction::Create, Vec::new(), None),
                    Action::Update(f) => (
                        ItemAction::Update,
                        f.iter().map(|f| (*f).to_owned()).collect(),
                        None,
                    ),
                    Action::Unchanged => (ItemAction::Unchanged, Vec::new(), None),
                    Action::Remove => (ItemAction::Remove, Vec::new(), None),
                    Action::Kept(why) => (ItemAction::Kept, Vec::new(), Some((*why).to_owned())),
                };
                PlanItem {
                    kind: kind_name(s.kind).to_owned(),
                    name: s.key.clone(),
                    action,
                    fields,
                    reason,
                }
            })
            .collect()
    }

    /// Whether applying would change anything.
    pub fn changes(&self) -> bool {
        changes(&self.items())
    }

    /// The plan as text, one line per record and a summary (no secret, no hash).
    pub fn render(&self) -> String {
        render(&self.items())
    }

    /// Carry the plan out: removals first (a NAS address or name may be reused by a
    /// declared one), then updates, then creations. Stops at the first failure.
    /// `done` is told of every step carried out (caches to forget, audit events).
    pub async fn execute(
        &self,
        store: &dyn Store,
        done: &mut (dyn FnMut(&Step) + Send),
    ) -> Result<(), ApplyError> {
        let fail = |s: &Step, e: portcullis_store::StoreError| {
            let hint = if matches!(e, portcullis_store::StoreError::Conflict(_)) {
                " (changed by someone else while applying; run apply again)"
            } else {
                ""
            };
            err(format!("{} {:?}: {e}{hint}", kind_name(s.kind), s.key))
        };
        // Groups are removed after the users (whose removal moves their groups'
        // versions: the plan counted it) and written after them (members must exist).
        let removals = self
            .steps
            .iter()
            .filter(|s| s.action == Action::Remove && s.kind != Resource::Group);
        let group_removals = self
            .steps
            .iter()
            .filter(|s| s.action == Action::Remove && s.kind == Resource::Group);
        for s in removals.chain(group_removals) {
            store
                .remove_versioned(s.kind, &s.key, s.version)
                .await
                .map_err(|e| fail(s, e))?;
            done(s);
        }
        for s in &self.steps {
            let r = match (&s.action, &s.write) {
                (Action::Update(_), Write::Client(c)) => {
                    store.replace_client(c, s.version).await.map(drop)
                }
                (Action::Update(_), Write::User(u)) => {
                    store.replace_user(u, s.version).await.map(drop)
                }
                (Action::Update(_), Write::Nas(n)) => {
                    store.replace_nas(n, s.version).await.map(drop)
                }
                _ => continue,
            };
            r.map_err(|e| fail(s, e))?;
            done(s);
        }
        for s in &self.steps {
            let r = match (&s.action, &s.write) {
                (Action::Create, Write::Client(c)) => store.put_client(c).await,
                (Action::Create, Write::User(u)) => store.put_user(u).await,
                (Action::Create, Write::Nas(n)) => store.put_nas(n).await,
                _ => continue,
            };
            r.map_err(|e| fail(s, e))?;
            done(s);
        }
        for s in &self.steps {
            let r = match (&s.action, &s.write) {
                (Action::Update(_), Write::Group(g)) => {
                    store.replace_group(g, s.version).await.map(drop)
                }
                (Action::Create, Write::Group(g)) => store.put_group(g).await,
                _ => continue,
            };
            r.map_err(|e| fail(s, e))?;
            done(s);
        }
        Ok(())
    }
}

/// A group's step: what [`super::groups`] planned.
pub(super) fn group_step(key: &str, action: Action, version: i64, g: Option<GroupRecord>) -> Step {
    step(
        Resource::Group,
        key,
        action,
        version,
        g.map_or(Write::Nothing, Write::Group),
    )
}

fn step(kind: Resource, key: &str, action: Action, version: i64, write: Write) -> Step {
    Step {
        kind,
        key: key.to_owned(),
        action,
        version,
        write,
    }
}

/// What an item of the plan does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemAction {
    /// Added.
    Create,
    /// Changed in `fields`.
    Update,
    /// As declared.
    Unchanged,
    /// Not declared and pruned.
    Remove,
    /// Not declared and kept (`reason` says why).
    Kept,
}

/// One record of the plan.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PlanItem {
    /// `client`, `user` or `nas`.
    pub kind: String,
    /// Its id, username or name.
    pub name: String,
    /// What happens to it.
    pub action: ItemAction,
    /// With `update`: the fields that differ (names only, never values).
    #[serde(default)]
    pub fields: Vec<String>,
    /// With `kept`: why it is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn count(items: &[PlanItem], what: ItemAction) -> usize {
    items.iter().filter(|i| i.action == what).count()
}

/// Whether the items change anything.
pub fn changes(items: &[PlanItem]) -> bool {
    items.iter().any(|i| {
        matches!(
            i.action,
            ItemAction::Create | ItemAction::Update | ItemAction::Remove
        )
    })
}

/// Items as text, one line per record and a summary: the one format of a local plan
/// and of a server's answer.
pub fn render(items: &[PlanItem]) -> String {
    let mut out = String::new();
    for i in items {
        let what = match i.action {
            ItemAction::Create => "create".to_owned(),
            ItemAction::Update => format!("update ({})", i.fields.join(", ")),
            ItemAction::Unchanged => "unchanged".to_owned(),
            ItemAction::Remove => "remove".to_owned(),
            ItemAction::Kept => format!("kept ({})", i.reason.as_deref().unwrap_or("")),
        };
        let _ = writeln!(out, "{} {:?}: {what}", i.kind, i.name);
    }
    let _ = writeln!(
        out,
        "plan: {} to create, {} to update, {} unchanged, {} to remove",
        count(items, ItemAction::Create),
        count(items, ItemAction::Update),
        count(items, ItemAction::Unchanged),
        count(items, ItemAction::Remove)
    );
    out
}

/// The answer of `POST /admin/v1/apply`: the plan, and whether it was carried out.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ApplyResult {
    /// One item per declared record, then the undeclared ones.
    pub items: Vec<PlanItem>,
    /// True when the plan was carried out (false on a dry run or with nothing to change).
    pub applied: bool,
    /// Echoes the `dry_run` flag.
    pub dry_run: bool,
}
