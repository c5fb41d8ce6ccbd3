//! Row mapping shared by the SQL backends: both store the same columns (grants and
//! scopes space-separated, two secret-hash columns, the auth method and its key), so converting rows to records
//! and sqlx errors to [`StoreError`] is written once.

use std::str::FromStr;

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
pub(crate) type UserRow = (String, String, bool, i64);
pub(crate) type KeyRow = (String, String, Vec<u8>, Vec<u8>, i64, i64, Option<i64>);

pub(crate) const CLIENT_COLUMNS: &str = "id, auth_method, secret_hash, previous_secret_hash, \
     auth_key, grants, scopes, token_lifetime, created_at";
pub(crate) const USER_COLUMNS: &str = "username, password_hash, disabled, created_at";
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

pub(crate) fn user_from_row(
    (username, password_hash, disabled, created_at): UserRow,
) -> UserRecord {
    UserRecord {
        username,
        password_hash,
        disabled,
        created_at,
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

pub(crate) fn client_label(id: &str) -> String {
    format!("client {id:?}")
}

pub(crate) fn user_label(name: &str) -> String {
    format!("user {name:?}")
}
