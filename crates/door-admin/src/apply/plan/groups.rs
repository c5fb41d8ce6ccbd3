//! The groups of `apply`'s plan (issue 39): each declared group created, updated (the
//! fields that differ: `gid_number`, `description`, `members`) or unchanged, and the
//! undeclared ones removed with `--prune` or kept.
//!
//! Groups are planned after users and carried out after them (a declared member may be
//! a user this plan creates). Removing a user removes its memberships and so moves each
//! of its groups' version by one: a group step expects its read version plus the
//! memberships of users this plan removes, so the compare-and-set still catches a
//! change made by someone else, and only that.

use std::collections::HashSet;

use portcullis_store::versioned::Resource;

use super::{Action, Context, Plan, group_step, store_error};
use crate::apply::{ApplyError, Desired};

/// Every declared member is a user when the groups are written: declared, or stored and
/// not pruned. Checked before anything is written, so such a file changes nothing.
async fn check_members(
    desired: &Desired,
    cx: &Context<'_>,
    removed: &HashSet<String>,
) -> Result<(), ApplyError> {
    let declared: HashSet<&str> = desired.users.iter().map(|u| u.username.as_str()).collect();
    for g in &desired.groups {
        for m in &g.members {
            if declared.contains(m.as_str()) {
                continue;
            }
            let stored =
                !removed.contains(m) && cx.store.get_user(m).await.map_err(store_error)?.is_some();
            if !stored {
                return Err(super::err(format!(
                    "group {:?}: member {m:?} is not a user (declare it under [[users]]; \
                     with --prune an undeclared user is removed)",
                    g.name
                )));
            }
        }
    }
    Ok(())
}

/// Add the group steps to `plan` (whose user steps are already there).
pub(super) async fn plan(
    plan: &mut Plan,
    desired: &Desired,
    cx: &Context<'_>,
    prune: bool,
) -> Result<(), ApplyError> {
    let removed: HashSet<String> = plan
        .steps
        .iter()
        .filter(|s| s.kind == Resource::User && s.action == Action::Remove)
        .map(|s| s.key.clone())
        .collect();
    let cascaded = |members: &[String]| {
        i64::try_from(members.iter().filter(|m| removed.contains(*m)).count()).unwrap_or(0)
    };
    check_members(desired, cx, &removed).await?;
    for d in &desired.groups {
        let current = cx
            .store
            .group_versioned(&d.name)
            .await
            .map_err(store_error)?;
        let (action, version, created_at) = match current {
            None => (Action::Create, 0, cx.now),
            Some(v) => {
                let mut changed = Vec::new();
                if v.record.gid_number != d.gid_number {
                    changed.push("gid_number");
                }
                if v.record.description != d.description {
                    changed.push("description");
                }
                if v.record.members != d.members {
                    changed.push("members");
                }
                let a = if changed.is_empty() {
                    Action::Unchanged
                } else {
                    Action::Update(changed)
                };
                let version = v.version + cascaded(&v.record.members);
                (a, version, v.record.created_at)
            }
        };
        let mut record = d.clone();
        record.created_at = created_at;
        plan.steps
            .push(group_step(&d.name, action, version, Some(record)));
    }
    for g in cx.store.list_groups().await.map_err(store_error)? {
        if desired.groups.iter().any(|d| d.name == g.name) {
            continue;
        }
        let (action, version) = if prune {
            let Some(v) = cx
                .store
                .group_versioned(&g.name)
                .await
                .map_err(store_error)?
            else {
                // Removed by someone else meanwhile: nothing to do.
                continue;
            };
            (Action::Remove, v.version + cascaded(&v.record.members))
        } else {
            (Action::Kept("not declared; --prune removes it"), 0)
        };
        plan.steps.push(group_step(&g.name, action, version, None));
    }
    Ok(())
}
