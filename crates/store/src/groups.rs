//! The SQL of groups and memberships (issue 39), behind [`GroupStore`]: written once,
//! expanded for each backend's pool by `group_queries!` as [`crate::nas`] does, and
//! wired up by `crate::delegated`.
//!
//! A group is read in one statement (the group joined with its members), so its version
//! and its members always come from the same snapshot: an ETag names exactly what was
//! shown. Membership rows change the group's version through triggers (`0020_directory`
//! migrations), whoever changes them, the cascade of a user's removal included.
//!
//! [`GroupStore`]: crate::store::GroupStore

use crate::directory::GroupRecord;
use crate::error::StoreError;
use crate::rows::corrupt;
use crate::versioned::Versioned;

/// One row of a group joined with one of its members (`None` for a group without).
pub(crate) type GroupMemberRow = (
    String,
    Option<i64>,
    Option<String>,
    i64,
    i64,
    Option<String>,
);

/// `SELECT` of the groups matching `filter` (a `WHERE` condition on `g`, whose
/// parameters the caller binds) joined with their members, ordered by group then
/// member.
pub(crate) fn group_select(filter: &str) -> String {
    format!(
        "SELECT g.name, g.gid_number, g.description, g.created_at, g.version, m.username \
         FROM groups g LEFT JOIN group_members m ON m.group_name = g.name \
         WHERE {filter} ORDER BY g.name, m.username"
    )
}

/// Fold joined rows (ordered by group) into groups with their versions.
pub(crate) fn fold_groups(
    rows: Vec<GroupMemberRow>,
) -> Result<Vec<Versioned<GroupRecord>>, StoreError> {
    let mut out: Vec<Versioned<GroupRecord>> = Vec::new();
    for (name, gid, description, created_at, version, member) in rows {
        let same = out.last().is_some_and(|g| g.record.name == name);
        if !same {
            let gid_number = gid
                .map(u32::try_from)
                .transpose()
                .map_err(|_| corrupt("group gidNumber"))?;
            out.push(Versioned {
                record: GroupRecord {
                    name,
                    gid_number,
                    description,
                    members: Vec::new(),
                    created_at,
                },
                version,
            });
        }
        if let (Some(m), Some(g)) = (member, out.last_mut()) {
            g.record.members.push(m);
        }
    }
    // Byte order, whatever the database's collation (PostgreSQL's may be a locale's):
    // members compare equal to a sorted declaration on every backend.
    for g in &mut out {
        g.record.members.sort_unstable();
    }
    Ok(out)
}

/// Map a failed group insert or update: a unique violation is the name or the gidNumber
/// taken.
pub(crate) fn group_write_error(e: sqlx::Error, group: &str, gid: Option<u32>) -> StoreError {
    match &e {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            let msg = db.message().to_owned() + db.constraint().unwrap_or("");
            match gid {
                Some(gid) if msg.contains("gid_number") => {
                    StoreError::AlreadyExists(format!("a group with gidNumber {gid}"))
                }
                _ => StoreError::AlreadyExists(crate::rows::group_label(group)),
            }
        }
        _ => crate::rows::backend(e),
    }
}

/// Map a failed membership insert: a foreign key violation is an unknown user (the
/// caller has checked the group).
pub(crate) fn member_error(e: sqlx::Error, username: &str) -> StoreError {
    match &e {
        sqlx::Error::Database(db) if db.is_foreign_key_violation() => {
            StoreError::NotFound(crate::rows::user_label(username))
        }
        _ => crate::rows::backend(e),
    }
}

/// The group statements for one backend's pool type, as free functions.
macro_rules! group_queries {
    ($pool:ty) => {
        use $crate::directory::GroupRecord;
        use $crate::error::StoreError;
        use $crate::groups::{
            GroupMemberRow, fold_groups, group_select, group_write_error, member_error,
        };
        use $crate::rows::backend;
        use $crate::versioned::{Resource, Versioned, check_page, missed};

        pub(crate) async fn get(
            pool: &$pool,
            name: &str,
        ) -> Result<Option<Versioned<GroupRecord>>, StoreError> {
            let rows: Vec<GroupMemberRow> = sqlx::query_as(&group_select("g.name = $1"))
                .bind(name)
                .fetch_all(pool)
                .await
                .map_err(backend)?;
            Ok(fold_groups(rows)?.into_iter().next())
        }

        pub(crate) async fn after(
            pool: &$pool,
            after: Option<&str>,
            limit: Option<u32>,
        ) -> Result<Vec<Versioned<GroupRecord>>, StoreError> {
            let limit = match limit {
                Some(l) => check_page(l)?,
                None => i64::MAX,
            };
            let rows: Vec<GroupMemberRow> = sqlx::query_as(&group_select(
                "g.name IN (SELECT name FROM groups WHERE name > $1 ORDER BY name LIMIT $2)",
            ))
            .bind(after.unwrap_or(""))
            .bind(limit)
            .fetch_all(pool)
            .await
            .map_err(backend)?;
            fold_groups(rows)
        }

        pub(crate) async fn put(pool: &$pool, group: &GroupRecord) -> Result<(), StoreError> {
            group.validate()?;
            let mut tx = pool.begin().await.map_err(backend)?;
            sqlx::query(
                "INSERT INTO groups (name, gid_number, description, created_at) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(&group.name)
            .bind(group.gid_number.map(i64::from))
            .bind(group.description.as_deref())
            .bind(group.created_at)
            .execute(&mut *tx)
            .await
            .map_err(|e| group_write_error(e, &group.name, group.gid_number))?;
            for m in &group.members {
                insert_member(&mut *tx, &group.name, m).await?;
            }
            tx.commit().await.map_err(backend)
        }

        async fn insert_member(
            conn: &mut <<$pool as PoolDb>::Db as sqlx::Database>::Connection,
            group: &str,
            username: &str,
        ) -> Result<bool, StoreError> {
            let done = sqlx::query(
                "INSERT INTO group_members (group_name, username) VALUES ($1, $2) \
                 ON CONFLICT (group_name, username) DO NOTHING",
            )
            .bind(group)
            .bind(username)
            .execute(&mut *conn)
            .await
            .map_err(|e| member_error(e, username))?;
            Ok(done.rows_affected() > 0)
        }

        pub(crate) async fn set_details(
            pool: &$pool,
            name: &str,
            gid_number: Option<u32>,
            description: Option<&str>,
        ) -> Result<(), StoreError> {
            let mut probe = GroupRecord::new(name, 0);
            probe.gid_number = gid_number;
            probe.description = description.map(str::to_owned);
            probe.validate()?;
            let done =
                sqlx::query("UPDATE groups SET gid_number = $2, description = $3 WHERE name = $1")
                    .bind(name)
                    .bind(gid_number.map(i64::from))
                    .bind(description)
                    .execute(pool)
                    .await
                    .map_err(|e| group_write_error(e, name, gid_number))?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(crate::rows::group_label(name)));
            }
            Ok(())
        }

        pub(crate) async fn remove(pool: &$pool, name: &str) -> Result<bool, StoreError> {
            let done = sqlx::query("DELETE FROM groups WHERE name = $1")
                .bind(name)
                .execute(pool)
                .await
                .map_err(backend)?;
            Ok(done.rows_affected() > 0)
        }

        pub(crate) async fn add_member(
            pool: &$pool,
            group: &str,
            username: &str,
        ) -> Result<bool, StoreError> {
            // No transaction: a failed statement aborts one on PostgreSQL, and the check
            // only names what was missing.
            let mut conn = pool.acquire().await.map_err(backend)?;
            match insert_member(&mut *conn, group, username).await {
                Err(StoreError::NotFound(_)) if !group_exists(&mut *conn, group).await? => {
                    Err(StoreError::NotFound(crate::rows::group_label(group)))
                }
                other => other,
            }
        }

        async fn group_exists(
            conn: &mut <<$pool as PoolDb>::Db as sqlx::Database>::Connection,
            group: &str,
        ) -> Result<bool, StoreError> {
            let row: Option<(i64,)> =
                sqlx::query_as("SELECT CAST(1 AS BIGINT) FROM groups WHERE name = $1")
                    .bind(group)
                    .fetch_optional(&mut *conn)
                    .await
                    .map_err(backend)?;
            Ok(row.is_some())
        }

        pub(crate) async fn remove_member(
            pool: &$pool,
            group: &str,
            username: &str,
        ) -> Result<bool, StoreError> {
            let done =
                sqlx::query("DELETE FROM group_members WHERE group_name = $1 AND username = $2")
                    .bind(group)
                    .bind(username)
                    .execute(pool)
                    .await
                    .map_err(backend)?;
            Ok(done.rows_affected() > 0)
        }

        pub(crate) async fn of_user(
            pool: &$pool,
            username: &str,
        ) -> Result<Vec<String>, StoreError> {
            let rows: Vec<(String,)> = sqlx::query_as(
                "SELECT group_name FROM group_members WHERE username = $1 ORDER BY group_name",
            )
            .bind(username)
            .fetch_all(pool)
            .await
            .map_err(backend)?;
            let mut groups: Vec<String> = rows.into_iter().map(|(g,)| g).collect();
            groups.sort_unstable();
            Ok(groups)
        }

        pub(crate) async fn replace(
            pool: &$pool,
            group: &GroupRecord,
            version: i64,
        ) -> Result<i64, StoreError> {
            group.validate()?;
            let mut tx = pool.begin().await.map_err(backend)?;
            let row: Option<(i64,)> = sqlx::query_as(
                "UPDATE groups SET gid_number = $2, description = $3, version = version + 1 \
                 WHERE name = $1 AND version = $4 RETURNING version",
            )
            .bind(&group.name)
            .bind(group.gid_number.map(i64::from))
            .bind(group.description.as_deref())
            .bind(version)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| group_write_error(e, &group.name, group.gid_number))?;
            if row.is_none() {
                let exists = group_exists(&mut *tx, &group.name).await?;
                return Err(missed(Resource::Group, &group.name, exists));
            }
            let current: Vec<(String,)> =
                sqlx::query_as("SELECT username FROM group_members WHERE group_name = $1")
                    .bind(&group.name)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(backend)?;
            // Only the differences are written: each is one bump of the version.
            for (old,) in current.iter().filter(|(u,)| !group.members.contains(u)) {
                sqlx::query("DELETE FROM group_members WHERE group_name = $1 AND username = $2")
                    .bind(&group.name)
                    .bind(old)
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
            }
            for new in group
                .members
                .iter()
                .filter(|m| !current.iter().any(|(u,)| u == *m))
            {
                insert_member(&mut *tx, &group.name, new).await?;
            }
            let (v,): (i64,) = sqlx::query_as("SELECT version FROM groups WHERE name = $1")
                .bind(&group.name)
                .fetch_one(&mut *tx)
                .await
                .map_err(backend)?;
            tx.commit().await.map_err(backend)?;
            Ok(v)
        }
    };
}

/// The database type of a pool, so the statements can name its transactions.
pub(crate) trait PoolDb {
    type Db: sqlx::Database;
}

impl PoolDb for sqlx::SqlitePool {
    type Db = sqlx::Sqlite;
}

impl PoolDb for sqlx::PgPool {
    type Db = sqlx::Postgres;
}

/// The statements on SQLite.
pub(crate) mod sqlite {
    use super::PoolDb;
    group_queries!(sqlx::SqlitePool);
}

/// The statements on PostgreSQL.
pub(crate) mod postgres {
    use super::PoolDb;
    group_queries!(sqlx::PgPool);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Rows as a locale-collated PostgreSQL returns them ("alice" before "Bob") fold into
    /// groups whose members are in byte order, as a sorted declaration is.
    #[test]
    fn folded_members_are_in_byte_order_whatever_the_collation() {
        let row =
            |g: &str, m: Option<&str>| (g.to_owned(), Some(10), None, 0, 3, m.map(str::to_owned));
        let groups = fold_groups(vec![
            row("a", Some("alice")),
            row("a", Some("Bob")),
            row("b", None),
        ])
        .unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].record.members, ["Bob", "alice"]);
        assert_eq!(groups[0].version, 3);
        assert!(groups[1].record.members.is_empty());
        let bad = fold_groups(vec![(String::from("c"), Some(-1), None, 0, 1, None)]);
        assert!(bad.is_err());
    }
}
