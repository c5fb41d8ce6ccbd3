//! Dynamic client registration (RFC 7591/7592, issue 27): initial access tokens and the
//! registration record of each dynamically registered client, their validation, and the
//! one copy of their SQL both backends run (expanded per pool by `registration_queries!`,
//! as [`crate::nas`] does).
//!
//! Tokens are bearer secrets of 256 random bits: only their SHA-256 is stored
//! ([`hash_token`]); a slow KDF buys nothing against a secret that cannot be guessed, and
//! a database dump gives no usable token. Comparing is the caller's job, in constant time.
//!
//! A registration consumes one use of its initial access token in the same transaction
//! that inserts the client, with the check (`uses < max_uses`, not expired) in the
//! `UPDATE` itself, so concurrent registrations on one PostgreSQL or SQLite never exceed
//! the token's uses.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::error::StoreError;
use crate::record::{ClientRecord, Grant, validate_name, validate_scopes};

/// `token_endpoint_auth_method` values a registration may ask for (RFC 7591 2): secret
/// clients (Basic or POST), `private_key_jwt` with an inline JWKS, and the RFC 8705
/// methods: `tls_client_auth` (a subject DN) and `self_signed_tls_client_auth` (its
/// certificates inline in `jwks`, RFC 8705 2.2).
pub const REGISTRABLE_AUTH_METHODS: [&str; 5] = [
    "client_secret_basic",
    "client_secret_post",
    "private_key_jwt",
    "tls_client_auth",
    "self_signed_tls_client_auth",
];

/// What `[registration] auth_methods` and a new initial access token allow unless told
/// otherwise: the methods that need no client certificate set-up on the server. The
/// RFC 8705 methods are opted into (they need `[tls]` asking for client certificates).
pub const DEFAULT_REGISTRATION_AUTH_METHODS: [&str; 3] = [
    "client_secret_basic",
    "client_secret_post",
    "private_key_jwt",
];

/// Longest registered metadata document, in bytes (a JWKS of a few keys plus names).
pub const MAX_METADATA_LEN: usize = 64 * 1024;
/// Longest description of an initial access token.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// Most registrations one initial access token may allow.
pub const MAX_USES: u32 = 1_000_000;

/// The stored form of a token secret: `sha256:` and the base64url digest.
pub fn hash_token(secret: &str) -> String {
    format!(
        "sha256:{}",
        URL_SAFE_NO_PAD.encode(Sha256::digest(secret.as_bytes()))
    )
}

/// A new random token secret (256 bits, base64url), shown once.
pub fn generate_token_secret() -> Result<Zeroizing<String>, StoreError> {
    let mut raw = Zeroizing::new([0u8; 32]);
    portcullis_hash::os_random(&mut raw[..]).map_err(|e| StoreError::Backend(e.to_string()))?;
    Ok(Zeroizing::new(URL_SAFE_NO_PAD.encode(&raw[..])))
}

/// A new public id (96 random bits, base64url, prefixed `iat-`) for an initial access
/// token: the part of the token that appears in audit events and throttle keys.
pub fn generate_token_id() -> Result<String, StoreError> {
    let mut raw = [0u8; 12];
    portcullis_hash::os_random(&mut raw[..]).map_err(|e| StoreError::Backend(e.to_string()))?;
    Ok(format!("iat-{}", URL_SAFE_NO_PAD.encode(raw)))
}

/// An initial access token (RFC 7591 3): who may register, how often, until when, and
/// what the clients it registers may be given.
#[derive(Clone, PartialEq, Eq)]
pub struct InitialAccessToken {
    /// Public id: the token is `<id>.<secret>`.
    pub id: String,
    /// [`hash_token`] of the secret part.
    pub secret_hash: String,
    /// The operator's note (who it was made for).
    pub description: String,
    /// Unix seconds.
    pub created_at: i64,
    /// No registration at or after this instant (unix seconds).
    pub expires_at: i64,
    /// Registrations it allows in all.
    pub max_uses: u32,
    /// Registrations made with it so far.
    pub uses: u32,
    /// Scopes a client it registers may be given (a registration asking for others is
    /// refused).
    pub scopes: Vec<String>,
    /// Grant types a client it registers may use.
    pub grants: Vec<Grant>,
    /// `token_endpoint_auth_method`s it allows (of [`REGISTRABLE_AUTH_METHODS`]).
    pub auth_methods: Vec<String>,
}

impl fmt::Debug for InitialAccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InitialAccessToken")
            .field("id", &self.id)
            .field("secret_hash", &"<redacted>")
            .field("description", &self.description)
            .field("created_at", &self.created_at)
            .field("expires_at", &self.expires_at)
            .field("max_uses", &self.max_uses)
            .field("uses", &self.uses)
            .field("scopes", &self.scopes)
            .field("grants", &self.grants)
            .field("auth_methods", &self.auth_methods)
            .finish()
    }
}

impl InitialAccessToken {
    /// Check every field; backends call this before writing.
    pub fn validate(&self) -> Result<(), StoreError> {
        validate_name("initial access token id", &self.id)?;
        if self.id.contains('.') {
            return Err(StoreError::invalid(
                "initial access token id must not contain '.'",
            ));
        }
        validate_token_hash(&self.secret_hash)?;
        if self.description.chars().count() > MAX_DESCRIPTION_CHARS
            || self.description.chars().any(char::is_control)
        {
            return Err(StoreError::invalid(format!(
                "description must be at most {MAX_DESCRIPTION_CHARS} characters, no control characters"
            )));
        }
        if self.expires_at <= self.created_at {
            return Err(StoreError::invalid(
                "an initial access token must expire after it is made",
            ));
        }
        if !(1..=MAX_USES).contains(&self.max_uses) || self.uses > self.max_uses {
            return Err(StoreError::invalid(format!(
                "an initial access token allows 1-{MAX_USES} registrations"
            )));
        }
        validate_scopes(&self.scopes)?;
        if self.grants.is_empty() {
            return Err(StoreError::invalid(
                "an initial access token must allow at least one grant",
            ));
        }
        validate_auth_methods(&self.auth_methods)
    }

    /// Whether a registration may still be made with it at `now`.
    pub fn usable(&self, now: i64) -> bool {
        now < self.expires_at && self.uses < self.max_uses
    }
}

/// Check a list of registrable auth methods: at least one, known, no repeats.
pub fn validate_auth_methods(methods: &[String]) -> Result<(), StoreError> {
    if methods.is_empty() {
        return Err(StoreError::invalid(
            "at least one auth method must be allowed",
        ));
    }
    for (i, m) in methods.iter().enumerate() {
        if !REGISTRABLE_AUTH_METHODS.contains(&m.as_str()) {
            return Err(StoreError::invalid(format!(
                "auth method {m:?} cannot be registered (expected one of {})",
                REGISTRABLE_AUTH_METHODS.join(", ")
            )));
        }
        if methods[..i].contains(m) {
            return Err(StoreError::invalid("auth methods must not repeat"));
        }
    }
    Ok(())
}

pub(crate) fn validate_token_hash(h: &str) -> Result<(), StoreError> {
    let ok = h
        .strip_prefix("sha256:")
        .is_some_and(|d| URL_SAFE_NO_PAD.decode(d).is_ok_and(|b| b.len() == 32));
    if ok {
        Ok(())
    } else {
        Err(StoreError::invalid(
            "token hash must be sha256:<base64url digest>",
        ))
    }
}

/// The RFC 7592 side of a dynamically registered client.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientRegistration {
    /// The client it belongs to.
    pub client_id: String,
    /// [`hash_token`] of its registration access token.
    pub access_token_hash: String,
    /// Its client metadata as registered (a JSON object; never a secret).
    pub metadata: String,
    /// The initial access token it was registered with.
    pub initial_token: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds of the last RFC 7592 update.
    pub updated_at: i64,
}

impl fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("client_id", &self.client_id)
            .field("access_token_hash", &"<redacted>")
            .field("metadata_len", &self.metadata.len())
            .field("initial_token", &self.initial_token)
            .field("created_at", &self.created_at)
            .field("updated_at", &self.updated_at)
            .finish()
    }
}

impl ClientRegistration {
    /// Check every field; backends call this before writing.
    pub fn validate(&self) -> Result<(), StoreError> {
        validate_name("client id", &self.client_id)?;
        validate_token_hash(&self.access_token_hash)?;
        validate_metadata(&self.metadata)
    }
}

/// A registration access token being replaced: RFC 7592 3 answers every read and
/// update with the token to use next, and only a hash is stored, so each of them makes a
/// new one. The swap happens only while the stored hash is still `old_hash`, so of two
/// concurrent uses of one token exactly one succeeds.
#[derive(Debug, Clone, Copy)]
pub struct TokenRotation<'a> {
    /// [`hash_token`] of the token presented (the one being retired).
    pub old_hash: &'a str,
    /// [`hash_token`] of its successor.
    pub new_hash: &'a str,
}

fn validate_metadata(m: &str) -> Result<(), StoreError> {
    if m.is_empty() || m.len() > MAX_METADATA_LEN || m.contains('\0') {
        return Err(StoreError::invalid(format!(
            "client metadata must be 1-{MAX_METADATA_LEN} bytes"
        )));
    }
    Ok(())
}

/// Why a registration could not consume its initial access token.
pub const TOKEN_SPENT: &str = "initial access token (used up, expired or removed)";

/// Row shapes shared by both backends.
pub(crate) type TokenRow = (
    String,
    String,
    String,
    i64,
    i64,
    i64,
    i64,
    String,
    String,
    String,
);
pub(crate) type RegistrationRow = (String, String, String, Option<String>, i64, i64);

pub(crate) const TOKEN_COLUMNS: &str = "id, secret_hash, description, created_at, expires_at, \
     max_uses, uses, scopes, grants, auth_methods";
pub(crate) const REGISTRATION_COLUMNS: &str =
    "client_id, access_token_hash, metadata, initial_token, created_at, updated_at";

pub(crate) fn token_from_row(row: TokenRow) -> Result<InitialAccessToken, StoreError> {
    use std::str::FromStr;
    let (id, secret_hash, description, created_at, expires_at, max_uses, uses, s, g, m) = row;
    let words = |t: &str| -> Vec<String> {
        t.split(' ')
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let corrupt = || crate::rows::corrupt("initial access token");
    Ok(InitialAccessToken {
        grants: words(&g)
            .iter()
            .map(|w| Grant::from_str(w))
            .collect::<Result<_, _>>()
            .map_err(|_| corrupt())?,
        scopes: words(&s),
        auth_methods: words(&m),
        max_uses: u32::try_from(max_uses).map_err(|_| corrupt())?,
        uses: u32::try_from(uses).map_err(|_| corrupt())?,
        id,
        secret_hash,
        description,
        created_at,
        expires_at,
    })
}

pub(crate) fn registration_from_row(row: RegistrationRow) -> ClientRegistration {
    let (client_id, access_token_hash, metadata, initial_token, created_at, updated_at) = row;
    ClientRegistration {
        client_id,
        access_token_hash,
        metadata,
        initial_token,
        created_at,
        updated_at,
    }
}

/// A registered client's new settings must keep its auth method (a secret client stays
/// one: its secret is not changed by an update).
pub(crate) fn check_update(old_method: &str, client: &ClientRecord) -> Result<(), StoreError> {
    client.validate()?;
    if old_method != client.auth.method() {
        return Err(StoreError::invalid(
            "a registered client's auth method cannot change",
        ));
    }
    Ok(())
}

/// The registration statements for one backend's pool type.
macro_rules! registration_queries {
    ($pool:ty) => {
        use $crate::error::StoreError;
        use $crate::record::ClientRecord;
        use $crate::registration::{
            ClientRegistration, InitialAccessToken, REGISTRATION_COLUMNS, RegistrationRow,
            TOKEN_COLUMNS, TOKEN_SPENT, TokenRotation, TokenRow, check_update,
            registration_from_row, token_from_row,
        };
        use $crate::rows::{CLIENT_COLUMNS, backend, client_label, insert_error, join};

        pub(crate) async fn put_token(
            pool: &$pool,
            t: &InitialAccessToken,
        ) -> Result<(), StoreError> {
            t.validate()?;
            sqlx::query(&format!(
                "INSERT INTO initial_access_tokens ({TOKEN_COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
            ))
            .bind(&t.id)
            .bind(&t.secret_hash)
            .bind(&t.description)
            .bind(t.created_at)
            .bind(t.expires_at)
            .bind(i64::from(t.max_uses))
            .bind(i64::from(t.uses))
            .bind(join(&t.scopes))
            .bind(join(t.grants.iter().map(|g| g.as_str())))
            .bind(join(&t.auth_methods))
            .execute(pool)
            .await
            .map_err(|e| insert_error(e, || format!("initial access token {:?}", t.id)))?;
            Ok(())
        }

        pub(crate) async fn get_token(
            pool: &$pool,
            id: &str,
        ) -> Result<Option<InitialAccessToken>, StoreError> {
            let row: Option<TokenRow> = sqlx::query_as(&format!(
                "SELECT {TOKEN_COLUMNS} FROM initial_access_tokens WHERE id = $1"
            ))
            .bind(id)
            .fetch_optional(pool)
            .await
            .map_err(backend)?;
            row.map(token_from_row).transpose()
        }

        pub(crate) async fn list_tokens(
            pool: &$pool,
        ) -> Result<Vec<InitialAccessToken>, StoreError> {
            let rows: Vec<TokenRow> = sqlx::query_as(&format!(
                "SELECT {TOKEN_COLUMNS} FROM initial_access_tokens ORDER BY created_at, id"
            ))
            .fetch_all(pool)
            .await
            .map_err(backend)?;
            rows.into_iter().map(token_from_row).collect()
        }

        pub(crate) async fn remove_token(pool: &$pool, id: &str) -> Result<bool, StoreError> {
            let done = sqlx::query("DELETE FROM initial_access_tokens WHERE id = $1")
                .bind(id)
                .execute(pool)
                .await
                .map_err(backend)?;
            Ok(done.rows_affected() > 0)
        }

        pub(crate) async fn register(
            pool: &$pool,
            client: &ClientRecord,
            reg: &ClientRegistration,
            now: i64,
        ) -> Result<(), StoreError> {
            client.validate()?;
            reg.validate()?;
            if reg.client_id != client.id {
                return Err(StoreError::invalid("registration is for another client"));
            }
            let mut tx = pool.begin().await.map_err(backend)?;
            if let Some(token) = &reg.initial_token {
                let done = sqlx::query(
                    "UPDATE initial_access_tokens SET uses = uses + 1 \
                     WHERE id = $1 AND uses < max_uses AND expires_at > $2",
                )
                .bind(token)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
                if done.rows_affected() == 0 {
                    return Err(StoreError::NotFound(TOKEN_SPENT.into()));
                }
            }
            sqlx::query(&format!(
                "INSERT INTO clients ({CLIENT_COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            ))
            .bind(&client.id)
            .bind(client.auth.method())
            .bind(client.secret_hashes.first())
            .bind(client.secret_hashes.get(1))
            .bind(client.auth.key())
            .bind(join(client.grants.iter().map(|g| g.as_str())))
            .bind(join(&client.scopes))
            .bind(i64::from(client.token_lifetime))
            .bind(client.created_at)
            .execute(&mut *tx)
            .await
            .map_err(|e| insert_error(e, || client_label(&client.id)))?;
            sqlx::query(&format!(
                "INSERT INTO client_registrations ({REGISTRATION_COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6)"
            ))
            .bind(&reg.client_id)
            .bind(&reg.access_token_hash)
            .bind(&reg.metadata)
            .bind(&reg.initial_token)
            .bind(reg.created_at)
            .bind(reg.updated_at)
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
            tx.commit().await.map_err(backend)
        }

        pub(crate) async fn get_registration(
            pool: &$pool,
            client_id: &str,
        ) -> Result<Option<ClientRegistration>, StoreError> {
            let row: Option<RegistrationRow> = sqlx::query_as(&format!(
                "SELECT {REGISTRATION_COLUMNS} FROM client_registrations WHERE client_id = $1"
            ))
            .bind(client_id)
            .fetch_optional(pool)
            .await
            .map_err(backend)?;
            Ok(row.map(registration_from_row))
        }

        pub(crate) async fn rotate_token(
            pool: &$pool,
            client_id: &str,
            rotation: &TokenRotation<'_>,
        ) -> Result<bool, StoreError> {
            $crate::registration::validate_token_hash(rotation.new_hash)?;
            let done = sqlx::query(
                "UPDATE client_registrations SET access_token_hash = $3 \
                 WHERE client_id = $1 AND access_token_hash = $2",
            )
            .bind(client_id)
            .bind(rotation.old_hash)
            .bind(rotation.new_hash)
            .execute(pool)
            .await
            .map_err(backend)?;
            Ok(done.rows_affected() > 0)
        }

        pub(crate) async fn update_registered(
            pool: &$pool,
            client: &ClientRecord,
            metadata: &str,
            rotation: &TokenRotation<'_>,
            now: i64,
        ) -> Result<(), StoreError> {
            $crate::registration::validate_token_hash(rotation.new_hash)?;
            let mut tx = pool.begin().await.map_err(backend)?;
            let method: Option<(String,)> = sqlx::query_as(
                "SELECT c.auth_method FROM clients c \
                 JOIN client_registrations r ON r.client_id = c.id WHERE c.id = $1",
            )
            .bind(&client.id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(backend)?;
            let Some((method,)) = method else {
                return Err(StoreError::NotFound(format!(
                    "registered {}",
                    client_label(&client.id)
                )));
            };
            check_update(&method, client)?;
            let probe = ClientRegistration {
                client_id: client.id.clone(),
                access_token_hash: $crate::registration::hash_token(""),
                metadata: metadata.to_owned(),
                initial_token: None,
                created_at: now,
                updated_at: now,
            };
            probe.validate()?;
            sqlx::query(
                "UPDATE clients SET grants = $2, scopes = $3, token_lifetime = $4, \
                 auth_key = $5 WHERE id = $1",
            )
            .bind(&client.id)
            .bind(join(client.grants.iter().map(|g| g.as_str())))
            .bind(join(&client.scopes))
            .bind(i64::from(client.token_lifetime))
            .bind(client.auth.key())
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
            // The token check is in the statement: a concurrent read or update that
            // rotated it first wins, and this whole update is rolled back.
            let done = sqlx::query(
                "UPDATE client_registrations SET metadata = $2, updated_at = $3, \
                 access_token_hash = $5 WHERE client_id = $1 AND access_token_hash = $4",
            )
            .bind(&client.id)
            .bind(metadata)
            .bind(now)
            .bind(rotation.old_hash)
            .bind(rotation.new_hash)
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(format!(
                    "the registration access token of {} (rotated meanwhile)",
                    client_label(&client.id)
                )));
            }
            tx.commit().await.map_err(backend)
        }
    };
}

/// The statements on SQLite.
pub(crate) mod sqlite {
    registration_queries!(sqlx::SqlitePool);
}

/// The statements on PostgreSQL.
pub(crate) mod postgres {
    registration_queries!(sqlx::PgPool);
}
