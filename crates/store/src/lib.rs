//! Storage: the identity store (clients, users, signing keys, revoked tokens) behind the
//! [`Store`] trait, with the embedded SQLite backend by default.
//!
//! Module map:
//! - [`store`]: the backend-independent [`Store`] trait (dyn-compatible, async).
//! - [`record`]: the records and the input validation every backend applies.
//! - [`sqlite`]: [`SqliteStore`], SQLite through sqlx (WAL, embedded migrations); also
//!   the verification core's [`CredentialSource`](portcullis_core::CredentialSource).
//! - [`postgres`]: [`PgStore`], the shared PostgreSQL backend (same schema and rules).
//! - `queries`: the one set of identity SQL both backends expand (`identity_store!`).
//! - [`backend`]: [`Backend`], either store opened with its secrets (serve and the CLI).
//! - [`datadir`]: [`DataDir`], the on-disk layout: database plus the 0600 secrets file
//!   holding pepper keys and the master key, which never enter the database.
//! - [`nas`]: [`NasRecord`], RADIUS clients: validation, sealed shared secrets, and the
//!   one copy of their SQL that both backends run.
//! - [`accounting`]: RADIUS accounting records and sessions (issue 28): group-committed
//!   batches with duplicates stored once, session folding, retention, and their SQL.
//! - [`registration`]: dynamic client registration (RFC 7591/7592): initial access
//!   tokens (hashed) and each registered client's registration access token and metadata.
//! - [`throttle_redis`]: [`RedisThrottleStore`], the core's failure budgets and trust
//!   marks in Redis, shared by every instance: keys spread over a Cluster's slots, one
//!   Lua script per slot an attempt touches (`redis_scripts`).
//! - [`redis_target`]: [`RedisTarget`] (one node, Sentinel, Cluster), its validation,
//!   the connection to it and the placement of keys in slots.
//! - [`refusals`]: refusals remembered per instance until they end or are invalidated.
//! - [`seal`]: [`MasterKey`] AEAD sealing for secrets kept in the database (signing keys).
//! - [`versioned`]: what the admin API needs (issue 27): records with their version,
//!   keyset pages, compare-and-set writes and removals, revocation pages, and the
//!   Idempotency-Key table; the SQL once for both backends.
//! - [`error`]: the one error type, [`StoreError`].
//! - `conformance` (tests / feature `conformance`): the suite every backend must pass;
//!   `testing`: PostgreSQL schemas and Redis processes for tests.

#![forbid(unsafe_code)]

pub mod accounting;
#[cfg(any(test, feature = "conformance"))]
pub mod acct_conformance;
pub mod backend;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
pub mod datadir;
mod delegated;
pub mod error;
#[cfg(any(test, feature = "conformance"))]
pub mod keys_conformance;
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
pub use error::StoreError;
pub use nas::{NasCertificate, NasRecord};
pub use nonce::{MemoryNonceStore, NonceStore};
pub use postgres::PgStore;
pub use record::{
    ClientAuth, ClientRecord, DEFAULT_TOKEN_LIFETIME, Grant, SigningKeyRecord, UserRecord,
};
pub use registration::{ClientRegistration, InitialAccessToken};
pub use seal::MasterKey;
pub use sessions::{MemorySessionStore, SessionStore};
pub use sqlite::SqliteStore;
pub use store::{
    AccountingStore, Change, ChangeFeed, ClientStore, Health, IdempotencyStore, NasStore,
    RegistrationStore, RevocationStore, SigningKeyStore, Store, UserStore, VersionedStore,
};
pub use throttle_redis::{RedisTarget, RedisThrottleConfig, RedisThrottleStore};
pub use versioned::{IdempotencyRecord, Resource, Versioned};
