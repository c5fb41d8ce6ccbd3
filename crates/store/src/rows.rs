//! Row mapping shared by the SQL backends: both store the same columns (grants and
//! scopes space-separated, two secret-hash columns, the auth method and its key), so converting rows to records
//! and sqlx errors to [`StoreError`] is written once.

use std::str::FromStr;

use crate::directory::{EntryUuid, Posix, UserAttributes};
use crate::error::StoreError;
use crate::record::{ClientAuth, ClientRecord, Grant, SigningKeyRecord, UserRecord};

pub(crate) type ClientRow = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
    String,
    i64,
    i64,
);
/// A `users` row, read by column name ([`USER_COLUMNS`]).
#[derive(sqlx::FromRow)]
pub(crate) struct UserRow {
    username: String,
    password_hash: String,
    disabled: bool,
    created_at: i64,
    entry_uuid: String,
    cn: Option<String>,
    sn: Option<String>,
    given_name: Option<String>,
    display_name: Option<String>,
    mail: Option<String>,
    uid_number: Option<i64>,
    gid_number: Option<i64>,
    home_directory: Option<String>,
    login_shell: Option<String>,
}

/// A `users` row and its version.
#[derive(sqlx::FromRow)]
pub(crate) struct VersionedUserRow {
    #[sqlx(flatten)]
    pub(crate) user: UserRow,
    pub(crate) version: i64,
}
pub(crate) type KeyRow = (String, String, Vec<u8>, Vec<u8>, i64, i64, Option<i64>);

pub(crate) const CLIENT_COLUMNS: &str = "id, auth_method, secret_hash, previous_secret_hash, \
     auth_key, grants, scopes, token_lifetime, created_at";
pub(crate) const USER_COLUMNS: &str = "username, password_hash, disabled, created_at, \
     entry_uuid, cn, sn, given_name, display_name, mail, uid_number, gid_number, \
     home_directory, login_shell";
pub(crate) const KEY_COLUMNS: &str =
    "kid, alg, public_key, private_key_sealed, created_at, not_after, retired_at";

pub(crate) fn backend(e: sqlx::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// Map a failed insert: a unique violation means `what` exists already.
pub(crate) fn insert_error(e: sqlx::Error, what: impl FnOnce() -> String) -> StoreError {
    match &e {
        sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::AlreadyExists(what()),
        _ => backend(e),
    }
}

pub(crate) fn corrupt(what: &str) -> StoreError {
    StoreError::Backend(format!("corrupt row in database: {what}"))
}

pub(crate) fn join<T: AsRef<str>>(items: impl IntoIterator<Item = T>) -> String {
    items
        .into_iter()
        .map(|s| s.as_ref().to_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn client_from_row(row: ClientRow) -> Result<ClientRecord, StoreError> {
    let (id, method, current, previous, key, grants, scopes, lifetime, created_at) = row;
    let auth = ClientAuth::from_stored(&method, key).map_err(|_| corrupt("client auth method"))?;
    let grants = grants
        .split(' ')
        .filter(|g| !g.is_empty())
        .map(Grant::from_str)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| corrupt("client grants"))?;
    let scopes = scopes
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    Ok(ClientRecord {
        id,
        auth,
        secret_hashes: current.into_iter().chain(previous).collect(),
        grants,
        scopes,
        token_lifetime: u32::try_from(lifetime).map_err(|_| corrupt("token lifetime"))?,
        created_at,
    })
}

pub(crate) fn user_from_row(r: UserRow) -> Result<UserRecord, StoreError> {
    let entry_uuid = EntryUuid::parse(&r.entry_uuid).map_err(|_| corrupt("user entryUUID"))?;
    let posix = match (r.uid_number, r.gid_number, r.home_directory) {
        (Some(uid), Some(gid), Some(home_directory)) => Some(Posix {
            uid_number: u32::try_from(uid).map_err(|_| corrupt("uidNumber"))?,
            gid_number: u32::try_from(gid).map_err(|_| corrupt("gidNumber"))?,
            home_directory,
            login_shell: r.login_shell,
        }),
        (None, None, None) => None,
        _ => return Err(corrupt("user POSIX attributes")),
    };
    Ok(UserRecord {
        username: r.username,
        password_hash: r.password_hash,
        disabled: r.disabled,
        created_at: r.created_at,
        entry_uuid,
        attributes: UserAttributes {
            cn: r.cn,
            sn: r.sn,
            given_name: r.given_name,
            display_name: r.display_name,
            mail: r.mail,
            posix,
        },
    })
}

/// The values of [`USER_COLUMNS`] after the username, password hash, disabled flag and
/// creation time, in order: what every insert and replacement binds.
pub(crate) struct UserBinds<'a> {
    pub(crate) entry_uuid: String,
    pub(crate) attrs: &'a UserAttributes,
}

impl<'a> UserBinds<'a> {
    pub(crate) fn of(user: &'a UserRecord) -> UserBinds<'a> {
        UserBinds {
            entry_uuid: user.entry_uuid.to_string(),
            attrs: &user.attributes,
        }
    }

    pub(crate) fn uid_number(&self) -> Option<i64> {
        self.attrs.posix.as_ref().map(|p| i64::from(p.uid_number))
    }

    pub(crate) fn gid_number(&self) -> Option<i64> {
        self.attrs.posix.as_ref().map(|p| i64::from(p.gid_number))
    }

    pub(crate) fn home_directory(&self) -> Option<&'a str> {
        self.attrs.posix.as_ref().map(|p| p.home_directory.as_str())
    }

    pub(crate) fn login_shell(&self) -> Option<&'a str> {
        self.attrs
            .posix
            .as_ref()
            .and_then(|p| p.login_shell.as_deref())
    }
}

/// Map a failed user insert or update: a unique violation names the key that clashed
/// (the username, the uidNumber or the entryUUID).
pub(crate) fn user_write_error(
    e: sqlx::Error,
    username: &str,
    attrs: &UserAttributes,
    entry_uuid: Option<EntryUuid>,
) -> StoreError {
    match &e {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            let msg = db.message().to_owned() + db.constraint().unwrap_or("");
            if msg.contains("uid_number") {
                let uid = attrs.posix.as_ref().map_or(0, |p| p.uid_number);
                StoreError::AlreadyExists(format!("a user with uidNumber {uid}"))
            } else if let (true, Some(u)) = (msg.contains("entry_uuid"), entry_uuid) {
                StoreError::AlreadyExists(format!("a user with entryUUID {u}"))
            } else {
                StoreError::AlreadyExists(user_label(username))
            }
        }
        _ => backend(e),
    }
}

pub(crate) fn key_from_row(row: KeyRow) -> SigningKeyRecord {
    let (kid, alg, public_key, private_key_sealed, created_at, not_after, retired_at) = row;
    SigningKeyRecord {
        kid,
        alg,
        public_key,
        private_key_sealed,
        created_at,
        not_after,
        retired_at,
    }
}

/// `group "NAME"`, for messages.
pub(crate) fn group_label(name: &str) -> String {
    format!("group {name:?}")
}

pub(crate) fn client_label(id: &str) -> String {
    format!("client {id:?}")
}

pub(crate) fn user_label(name: &str) -> String {
    format!("user {name:?}")
}

/// `SET` list of a user's directory attributes for an `UPDATE ... WHERE username = $1`:
/// parameters `$2`-`$10`, bound by [`bind_user_attributes!`].
pub(crate) const USER_ATTRIBUTES_SET: &str = "cn = $2, sn = $3, given_name = $4, \
     display_name = $5, mail = $6, uid_number = $7, gid_number = $8, home_directory = $9, \
     login_shell = $10";

/// Bind the nine directory attributes of a [`UserBinds`] in [`USER_ATTRIBUTES_SET`]'s
/// (and [`USER_COLUMNS`]'s) order.
macro_rules! bind_user_attributes {
    ($query:expr, $binds:expr) => {
        $query
            .bind($binds.attrs.cn.as_deref())
            .bind($binds.attrs.sn.as_deref())
            .bind($binds.attrs.given_name.as_deref())
            .bind($binds.attrs.display_name.as_deref())
            .bind($binds.attrs.mail.as_deref())
            .bind($binds.uid_number())
            .bind($binds.gid_number())
            .bind($binds.home_directory())
            .bind($binds.login_shell())
    };
}

/// Bind every column of [`USER_COLUMNS`] for an insert (`$1`-`$14`).
macro_rules! bind_user_insert {
    ($query:expr, $user:expr, $binds:expr) => {
        $crate::rows::bind_user_attributes!(
            $query
                .bind(&$user.username)
                .bind(&$user.password_hash)
                .bind($user.disabled)
                .bind($user.created_at)
                .bind(&$binds.entry_uuid),
            $binds
        )
    };
}

pub(crate) use {bind_user_attributes, bind_user_insert};

/// The insert of one user, all of [`USER_COLUMNS`].
pub(crate) const USER_INSERT: &str = "INSERT INTO users (username, password_hash, disabled, \
     created_at, entry_uuid, cn, sn, given_name, display_name, mail, uid_number, gid_number, \
     home_directory, login_shell) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";
