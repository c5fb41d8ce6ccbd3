//! The [`Store`] trait: everything the server and the CLI read and write, independent of
//! the backend. It is dyn-compatible (`Arc<dyn Store>`) so the backend is chosen at run
//! time; SQLite ([`crate::SqliteStore`]) is the embedded default and a PostgreSQL backend
//! will implement the same trait and pass the same [`conformance`](crate) suite.
//!
//! Rules every backend follows:
//! - Times are unix seconds supplied by the caller; a backend never reads a clock.
//! - Records are validated (`validate()`) before any write; bad input is
//!   [`StoreError::Invalid`] and nothing is written.
//! - "Not there" is `Ok(None)` / `Ok(false)` for reads and removals, and
//!   [`StoreError::NotFound`] for updates of something that must exist.
//! - Stored hash replacement is compare-and-set (see
//!   [`CredentialSource::replace_hash`]), so rehash-on-login upgrades exactly once.

use std::sync::Arc;

use async_trait::async_trait;
use portcullis_core::CredentialSource;

use crate::accounting::{AcctRecord, AcctSession, SessionQuery};
use crate::error::StoreError;
use crate::nas::NasRecord;
use crate::record::{ClientAuth, ClientRecord, Grant, SigningKeyRecord, UserRecord};
use crate::registration::{ClientRegistration, InitialAccessToken};
use crate::versioned::{IdempotencyRecord, Resource, Versioned};

/// The identity store. Also a [`CredentialSource`] for the verification core: clients
/// answer with their one or two secret hashes (never disabled), users with their password
/// hash and disabled flag.
#[async_trait]
pub trait Store: CredentialSource {
    /// Check that the backend answers (readiness probes).
    async fn ping(&self) -> Result<(), StoreError>;

    // ---- clients ----

    /// The client `id`, if it exists.
    async fn get_client(&self, id: &str) -> Result<Option<ClientRecord>, StoreError>;
    /// Insert a new client; [`StoreError::AlreadyExists`] if the id is taken.
    async fn put_client(&self, client: &ClientRecord) -> Result<(), StoreError>;
    /// Replace a client's secret hashes (1 or 2, current first), e.g. for rotation;
    /// [`StoreError::NotFound`] if there is no such client with a secret.
    async fn update_client_secrets(&self, id: &str, hashes: Vec<String>) -> Result<(), StoreError>;
    /// Start a secret rotation atomically: `new_hash` becomes the current secret, the
    /// current one becomes the previous one, and an older previous one is dropped.
    /// [`StoreError::NotFound`] if there is no such client with a secret.
    async fn rotate_client_secret(&self, id: &str, new_hash: &str) -> Result<(), StoreError>;
    /// End a rotation: drop the previous secret. Returns whether there was one;
    /// [`StoreError::NotFound`] if there is no such client.
    async fn finish_client_rotation(&self, id: &str) -> Result<bool, StoreError>;
    /// Replace a client's grants, scopes and token lifetime (its secrets are untouched);
    /// [`StoreError::NotFound`] if there is no such client.
    async fn update_client_settings(
        &self,
        id: &str,
        grants: &[Grant],
        scopes: &[String],
        token_lifetime: u32,
    ) -> Result<(), StoreError>;
    /// Replace the public key material of a client that authenticates without a secret
    /// (a new JWKS, certificate or subject DN of the same method, e.g. a key rotation);
    /// [`StoreError::NotFound`] if there is no such client with that method.
    async fn set_client_auth(&self, id: &str, auth: &ClientAuth) -> Result<(), StoreError>;
    /// Remove a client; returns whether it existed.
    async fn remove_client(&self, id: &str) -> Result<bool, StoreError>;
    /// Every client, ordered by id.
    async fn list_clients(&self) -> Result<Vec<ClientRecord>, StoreError>;

    // ---- users ----

    /// The user `username`, if it exists.
    async fn get_user(&self, username: &str) -> Result<Option<UserRecord>, StoreError>;
    /// Insert a new user; [`StoreError::AlreadyExists`] if the name is taken.
    async fn put_user(&self, user: &UserRecord) -> Result<(), StoreError>;
    /// Insert many users in one transaction (imports). Users whose name is taken are left
    /// unchanged; the answer says, per input user, whether it was inserted. Any invalid
    /// record fails the whole call before anything is written.
    async fn put_users(&self, users: &[UserRecord]) -> Result<Vec<bool>, StoreError>;
    /// Set a user's password hash (administrative reset, not rehash-on-login: that is
    /// [`CredentialSource::replace_hash`]); [`StoreError::NotFound`] if no such user.
    async fn set_user_password(&self, username: &str, hash: &str) -> Result<(), StoreError>;
    /// Enable or disable a user; [`StoreError::NotFound`] if no such user.
    async fn set_user_disabled(&self, username: &str, disabled: bool) -> Result<(), StoreError>;
    /// Remove a user; returns whether it existed.
    async fn remove_user(&self, username: &str) -> Result<bool, StoreError>;
    /// Every user, ordered by username.
    async fn list_users(&self) -> Result<Vec<UserRecord>, StoreError>;

    // ---- token signing keys ----

    /// Insert a signing key; [`StoreError::AlreadyExists`] if the kid is taken.
    async fn insert_signing_key(&self, key: &SigningKeyRecord) -> Result<(), StoreError>;
    /// Insert `key` unless a key that can sign at `now` already exists (EdDSA, not
    /// retired, `created_at <= now < created_at + rotation`, `now + max_lifetime <
    /// not_after`), atomically against every other instance sharing the store. Instances
    /// starting together on an empty store must agree on one first key: if each signed
    /// with its own, the others' JWKS would lack it until their next maintenance.
    /// Returns whether `key` was inserted.
    async fn insert_first_signing_key(
        &self,
        key: &SigningKeyRecord,
        now: i64,
        rotation: i64,
        max_lifetime: i64,
    ) -> Result<bool, StoreError>;
    /// Every signing key, oldest first (by `created_at`, then kid).
    async fn list_signing_keys(&self) -> Result<Vec<SigningKeyRecord>, StoreError>;
    /// Mark a key retired at `at` (no new tokens are signed with it). Returns whether this
    /// call retired it: `false` if it was already retired (the first time is kept) or
    /// does not exist.
    async fn retire_signing_key(&self, kid: &str, at: i64) -> Result<bool, StoreError>;
    /// Delete a key (once no unexpired token can carry its kid); returns whether it existed.
    async fn remove_signing_key(&self, kid: &str) -> Result<bool, StoreError>;

    // ---- token revocation ----

    /// Record that the token `jti` is revoked until it expires at `expires_at` (unix
    /// seconds). Idempotent; revoking again keeps the later expiry.
    async fn revoke_token(&self, jti: &str, expires_at: i64) -> Result<(), StoreError>;
    /// Whether `jti` was revoked (and not yet purged).
    async fn is_revoked(&self, jti: &str) -> Result<bool, StoreError>;
    /// Forget revocations of tokens that expired at or before `now` (they are rejected
    /// for being expired anyway); returns how many were removed.
    async fn purge_revocations(&self, now: i64) -> Result<u64, StoreError>;

    // ---- RADIUS clients (NAS) ----

    /// Insert a NAS; [`StoreError::AlreadyExists`] if the name or the CIDR is taken.
    async fn put_nas(&self, nas: &NasRecord) -> Result<(), StoreError>;
    /// The NAS `name`, if it exists.
    async fn get_nas(&self, name: &str) -> Result<Option<NasRecord>, StoreError>;
    /// Every NAS, ordered by name.
    async fn list_nas(&self) -> Result<Vec<NasRecord>, StoreError>;
    /// Remove a NAS; returns whether it existed.
    async fn remove_nas(&self, name: &str) -> Result<bool, StoreError>;
    /// Replace a NAS's sealed shared secret (rotation); [`StoreError::NotFound`] if there
    /// is no such NAS.
    async fn set_nas_secret(&self, name: &str, secret_sealed: &[u8]) -> Result<(), StoreError>;
    /// Require (or stop requiring) a valid Message-Authenticator on its Access-Requests;
    /// [`StoreError::NotFound`] if there is no such NAS.
    async fn set_nas_require_message_authenticator(
        &self,
        name: &str,
        require: bool,
    ) -> Result<(), StoreError>;
    /// Name the NAS by this RadSec client certificate (`None`: no longer);
    /// [`StoreError::NotFound`] if there is no such NAS, [`StoreError::AlreadyExists`] if
    /// another NAS has it.
    async fn set_nas_certificate(
        &self,
        name: &str,
        certificate: Option<&crate::nas::NasCertificate>,
    ) -> Result<(), StoreError>;

    // ---- RADIUS accounting (issue 28) ----

    /// Store a batch of accounting records in one transaction and return after its
    /// commit (durable: the server acknowledges them then); per record, whether it was
    /// new (`false`: a duplicate, stored before). New records fold into their session;
    /// a new Accounting-On/Off closes its NAS's open sessions.
    async fn append_accounting(&self, records: &[AcctRecord]) -> Result<Vec<bool>, StoreError>;
    /// Another handle on the same database over one connection of its own, opened now,
    /// from the calling thread, and kept (never idled out or recycled), for a writer that
    /// must not share the pool: the accounting writer, which runs below authentication's
    /// CPU priority. SQLite runs each connection on a worker thread that the connect
    /// spawns, and on Linux a new thread inherits its creator's nice value, so the
    /// connection's statements run at the caller's priority too.
    async fn dedicated(&self) -> Result<std::sync::Arc<dyn Store>, StoreError>;
    /// Sessions matching `query`, oldest start first.
    async fn acct_sessions(&self, query: &SessionQuery) -> Result<Vec<AcctSession>, StoreError>;
    /// Records received at or after `since` (unix seconds), oldest first, at most `limit`.
    async fn acct_records_since(
        &self,
        since: i64,
        limit: u32,
    ) -> Result<Vec<AcctRecord>, StoreError>;
    /// Forget records received before `before`, and sessions not updated since then;
    /// returns how many records went.
    async fn prune_accounting(&self, before: i64) -> Result<u64, StoreError>;
    /// How many sessions are open.
    async fn acct_sessions_online(&self) -> Result<u64, StoreError>;

    // ---- dynamic client registration (issue 27, `registration.rs`) ----

    /// Insert an initial access token; [`StoreError::AlreadyExists`] if the id is taken.
    async fn put_initial_access_token(&self, token: &InitialAccessToken) -> Result<(), StoreError>;
    /// The initial access token `id`, if it exists (used up or expired ones too).
    async fn get_initial_access_token(
        &self,
        id: &str,
    ) -> Result<Option<InitialAccessToken>, StoreError>;
    /// Every initial access token, oldest first.
    async fn list_initial_access_tokens(&self) -> Result<Vec<InitialAccessToken>, StoreError>;
    /// Remove an initial access token (clients it registered stay); whether it existed.
    async fn remove_initial_access_token(&self, id: &str) -> Result<bool, StoreError>;
    /// Register a client in one transaction: consume one use of `reg.initial_token` (if
    /// any; [`StoreError::NotFound`] naming [`crate::registration::TOKEN_SPENT`] when it is
    /// used up, expired at `now` or gone), insert the client and its registration.
    async fn register_client(
        &self,
        client: &ClientRecord,
        reg: &ClientRegistration,
        now: i64,
    ) -> Result<(), StoreError>;
    /// The registration of a dynamically registered client, if it is one.
    async fn get_client_registration(
        &self,
        client_id: &str,
    ) -> Result<Option<ClientRegistration>, StoreError>;
    /// RFC 7592 update of a registered client: its grants, scopes, lifetime, public key
    /// material (same auth method; secrets untouched), metadata and registration access
    /// token (`rotation`), at `now`, in one transaction; [`StoreError::NotFound`] if it is
    /// not a registered client or its token hash is no longer `rotation.old_hash`.
    async fn update_registered_client(
        &self,
        client: &ClientRecord,
        metadata: &str,
        rotation: &crate::registration::TokenRotation<'_>,
        now: i64,
    ) -> Result<(), StoreError>;
    /// Replace a registered client's registration access token if its hash is still
    /// `rotation.old_hash` (RFC 7592 3, on a read); whether it was replaced.
    async fn rotate_registration_token(
        &self,
        client_id: &str,
        rotation: &crate::registration::TokenRotation<'_>,
    ) -> Result<bool, StoreError>;

    // ---- versions, pages and compare-and-set (issue 27, the admin API) ----

    /// The client `id` and its version.
    async fn client_versioned(
        &self,
        id: &str,
    ) -> Result<Option<Versioned<ClientRecord>>, StoreError>;
    /// At most `limit` (1-[`MAX_PAGE`](crate::versioned::MAX_PAGE)) clients whose id sorts
    /// after `after` (from the start when `None`), ordered by id: keyset pagination.
    async fn clients_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Versioned<ClientRecord>>, StoreError>;
    /// Replace everything but the id and creation time of a client whose version is still
    /// `version`; returns the new version. [`StoreError::Conflict`] if the version moved
    /// on, [`StoreError::NotFound`] if there is no such client.
    async fn replace_client(&self, client: &ClientRecord, version: i64) -> Result<i64, StoreError>;
    /// The user `username` and its version.
    async fn user_versioned(
        &self,
        username: &str,
    ) -> Result<Option<Versioned<UserRecord>>, StoreError>;
    /// Keyset page of users ordered by username (see [`Store::clients_after`]).
    async fn users_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Versioned<UserRecord>>, StoreError>;
    /// Replace a user's hash and disabled flag if its version is still `version` (see
    /// [`Store::replace_client`]).
    async fn replace_user(&self, user: &UserRecord, version: i64) -> Result<i64, StoreError>;
    /// The NAS `name` and its version.
    async fn nas_versioned(&self, name: &str) -> Result<Option<Versioned<NasRecord>>, StoreError>;
    /// Keyset page of NASes ordered by name (see [`Store::clients_after`]).
    async fn nas_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Versioned<NasRecord>>, StoreError>;
    /// Replace a NAS's CIDR, sealed secret and Message-Authenticator rule if its version
    /// is still `version` (see [`Store::replace_client`]; a CIDR taken by another NAS is
    /// [`StoreError::AlreadyExists`]).
    async fn replace_nas(&self, nas: &NasRecord, version: i64) -> Result<i64, StoreError>;
    /// Remove a client, user or NAS if its version is still `version`
    /// ([`StoreError::Conflict`] / [`StoreError::NotFound`] otherwise).
    async fn remove_versioned(
        &self,
        resource: Resource,
        key: &str,
        version: i64,
    ) -> Result<(), StoreError>;
    /// Keyset page of revocations (jti, expires_at) ordered by jti.
    async fn revocations_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<(String, i64)>, StoreError>;

    // ---- Idempotency-Key (issue 27) ----

    /// Claim `(principal, key)` for a request (its `response_sealed` is ignored): `None`
    /// if this call claimed it, else the record already there (answered, or still
    /// running when its response is `None`).
    async fn claim_idempotency_key(
        &self,
        record: &IdempotencyRecord,
    ) -> Result<Option<IdempotencyRecord>, StoreError>;
    /// Store the sealed answer of a claimed key; [`StoreError::NotFound`] if the key is
    /// not claimed or already answered.
    async fn complete_idempotency_key(
        &self,
        principal: &str,
        key: &str,
        response_sealed: &[u8],
    ) -> Result<(), StoreError>;
    /// Give up a claimed key that has no answer (its request failed), so it may be used
    /// again; an answered key is kept.
    async fn release_idempotency_key(&self, principal: &str, key: &str) -> Result<(), StoreError>;
    /// Forget keys claimed before `before` (unix seconds); returns how many.
    async fn purge_idempotency_keys(&self, before: i64) -> Result<u64, StoreError>;

    /// Changes made by other processes sharing this store, as they happen (PostgreSQL:
    /// LISTEN/NOTIFY), so caches can drop stale records at once. `None`: the backend has
    /// no such feed (SQLite serves one process; caches rely on their TTL).
    async fn changes(&self) -> Result<Option<ChangeFeed>, StoreError> {
        Ok(None)
    }

    /// This store as the verification core's credential source.
    fn as_credential_source(self: Arc<Self>) -> Arc<dyn CredentialSource>;
}

/// A stream of [`Change`]s; an error means the feed ended and must be opened again.
pub type ChangeFeed = futures::stream::BoxStream<'static, Result<Change, StoreError>>;

/// One change announced by the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The client with this id was added, changed or removed.
    Client(String),
    /// The user with this name was added, changed or removed.
    User(String),
    /// The NAS with this name was added, changed or removed.
    Nas(String),
    /// The feed lost its connection and reconnected: changes may have been missed, so
    /// anything cached may be stale.
    Resync,
}

impl Change {
    /// From a notification payload `<table>:<key>`; `None` for tables nobody caches.
    pub fn parse(payload: &str) -> Option<Change> {
        let (table, key) = payload.split_once(':')?;
        let key = key.to_owned();
        match table {
            "clients" => Some(Change::Client(key)),
            "users" => Some(Change::User(key)),
            "nas" => Some(Change::Nas(key)),
            _ => None,
        }
    }
}
