//! Storage: everything Portcullis keeps beyond one request, behind backend-independent
//! traits.
//!
//! What it holds:
//! - In the database (embedded SQLite by default, or PostgreSQL shared by several
//!   instances; one schema, one copy of the SQL): OAuth clients, users, token signing
//!   keys (private keys sealed), revoked tokens, RADIUS clients (NAS: sealed shared
//!   secrets, RadSec certificates), RADIUS accounting records and sessions, dynamic client
//!   registrations and their initial access tokens, the admin API's record versions and
//!   Idempotency-Keys.
//! - Beside the database, never in it: the secrets file (pepper keys, master key).
//! - In Redis, shared by every instance: the verification core's throttle state (failure
//!   budgets, trust marks), one-time values (`jti`s of client assertions) and 802.1X
//!   session bindings; per instance, in memory: the same nonces and sessions without
//!   Redis, and the refusals Redis answered.
//!
//! The database is reached through one trait per capability ([`store`]: [`Health`],
//! [`ClientStore`], [`UserStore`], [`GroupStore`], [`SigningKeyStore`], [`RevocationStore`],
//! [`NasStore`], [`AccountingStore`], [`RegistrationStore`], [`VersionedStore`],
//! [`IdempotencyStore`]); [`Store`] is all of them plus the core's
//! [`CredentialSource`](portcullis_core::CredentialSource). A door names only the
//! capabilities it uses and gets them from an `Arc<dyn Store>` by upcasting.
//!
//! Module map:
//! - [`store`]: the capability traits and the [`Store`] umbrella (dyn-compatible, async),
//!   and the change feed ([`Change`]).
//! - [`record`]: the client, user and signing key records and the input validation every
//!   backend applies.
//! - [`sqlite`]: [`SqliteStore`], SQLite through sqlx (WAL, embedded migrations).
//! - [`postgres`]: [`PgStore`], the shared PostgreSQL backend (same schema and rules, and
//!   a change feed over LISTEN/NOTIFY).
//! - `queries`: the identity SQL both backends expand (`identity_store!`): clients, users,
//!   signing keys, revocations, health, and the core's credential view.
//! - `delegated`: the other capabilities' impls for both backends (`delegated_capabilities!`),
//!   delegating to the SQL of their concern's module below.
//! - [`directory`]: what an LDAP door shows of users and groups (issue 39): users'
//!   `entryUUID` ([`EntryUuid`]), names, mail and POSIX account ([`UserAttributes`],
//!   [`Posix`]), groups ([`GroupRecord`]), their validation and shown defaults.
//! - [`groups`]: the SQL of groups and memberships ([`GroupStore`]).
//! - [`nas`]: [`NasRecord`], RADIUS clients: validation, sealed shared secrets, RadSec
//!   certificates, and their SQL.
//! - [`accounting`]: RADIUS accounting records and sessions (issue 28): group-committed
//!   batches with duplicates stored once, session folding, retention, and their SQL.
//! - [`registration`]: dynamic client registration (RFC 7591/7592): initial access
//!   tokens (hashed) and each registered client's registration access token and metadata.
//! - [`versioned`]: what the admin API needs (issue 27): records with their version,
//!   keyset pages, compare-and-set writes and removals, revocation pages, and the
//!   Idempotency-Key table; the SQL once for both backends.
//! - `rows`: row types and error mapping shared by the SQL.
//! - [`backend`]: [`Backend`], either store opened with its secrets (serve and the CLI).
//! - [`datadir`]: [`DataDir`], the on-disk layout: database plus the 0600 secrets file
//!   holding pepper keys and the master key, which never enter the database.
//! - [`seal`]: [`MasterKey`] AEAD sealing for secrets kept in the database (signing keys,
//!   NAS secrets, idempotent answers).
//! - [`throttle_redis`]: [`RedisThrottleStore`], the core's failure budgets and trust
//!   marks in Redis, shared by every instance: keys spread over a Cluster's slots, one
//!   Lua script per slot an attempt touches (`redis_scripts`); also the Redis
//!   [`NonceStore`] and [`SessionStore`].
//! - [`redis_target`]: [`RedisTarget`] (one node, Sentinel, Cluster), its validation,
//!   the connection to it and the placement of keys in slots.
//! - [`refusals`]: refusals remembered per instance until they end or are invalidated.
//! - [`nonce`]: [`NonceStore`], one-time values (issue 14), and its in-memory form.
//! - [`sessions`]: [`SessionStore`], identities proven in 802.1X sessions for resumption
//!   (issue 25), and its in-memory form.
//! - [`error`]: the one error type, [`StoreError`].
//! - Tests and feature `conformance`: the conformance suites every backend must pass, one
//!   per capability (`conformance`: clients and users, and `run_all`; `keys_`, `nas_`,
//!   `acct_`, `reg_`, `group_`, `versioned_conformance`), and `testing`: PostgreSQL schemas and
//!   Redis processes for tests. Unit tests are each module's `tests` submodule; `tests.rs`
//!   tests the backends and the data directory on a real file system.

#![forbid(unsafe_code)]

pub mod accounting;
#[cfg(any(test, feature = "conformance"))]
pub mod acct_conformance;
pub mod backend;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
pub mod datadir;
mod delegated;
pub mod directory;
pub mod error;
#[cfg(any(test, feature = "conformance"))]
pub mod group_conformance;
pub mod groups;
#[cfg(any(test, feature = "conformance"))]
pub mod keys_conformance;
pub mod names;
pub mod nas;
#[cfg(any(test, feature = "conformance"))]
pub mod nas_conformance;
pub mod nonce;
pub mod postgres;
mod queries;
pub mod record;
mod redis_scripts;
pub mod redis_target;
pub mod refusals;
#[cfg(any(test, feature = "conformance"))]
pub mod reg_conformance;
pub mod registration;
mod rows;
pub mod seal;
pub mod sessions;
pub mod sqlite;
pub mod store;
#[cfg(any(test, feature = "conformance"))]
pub mod testing;
pub mod throttle_redis;
pub mod versioned;
#[cfg(any(test, feature = "conformance"))]
pub mod versioned_conformance;

#[cfg(test)]
mod tests;

pub use accounting::{AcctRecord, AcctSession, SessionQuery};
pub use backend::Backend;
pub use datadir::{DEFAULT_DATA_DIR, DataDir, Secrets, generate_client_secret};
pub use directory::{EntryUuid, GroupRecord, Posix, UserAttributes};
pub use error::StoreError;
pub use nas::{NasCertificate, NasRecord};
pub use nonce::{MemoryNonceStore, NonceStore};
pub use postgres::PgStore;
pub use record::{
    ClientAuth, ClientRecord, DEFAULT_TOKEN_LIFETIME, Grant, SigningKeyRecord, UserRecord,
};
pub use redis_target::RedisAuth;
pub use registration::{ClientRegistration, InitialAccessToken};
pub use seal::MasterKey;
pub use sessions::{MemorySessionStore, SessionStore};
pub use sqlite::SqliteStore;
pub use store::{
    AccountingStore, Change, ChangeFeed, ClientStore, GroupStore, Health, IdempotencyStore,
    NasStore, RegistrationStore, RevocationStore, SigningKeyStore, Store, UserStore,
    VersionedStore,
};
pub use throttle_redis::{RedisTarget, RedisThrottleConfig, RedisThrottleStore};
pub use versioned::{IdempotencyRecord, Resource, Versioned};
