//! [`ClientStore`]: OAuth clients (their secret hashes or public key material, grants,
//! scopes and token lifetime), without versions.
//!
//! Used by the OAuth door (the client cache, dynamic registration's reads and removals),
//! the CLI's `client` commands and `apply`. Version-checked admin writes are
//! [`VersionedStore`](crate::store::VersionedStore); the credential check reads clients
//! through the core's [`CredentialSource`](portcullis_core::CredentialSource).

use async_trait::async_trait;

use crate::error::StoreError;
use crate::record::{ClientAuth, ClientRecord, Grant};

/// OAuth clients.
#[async_trait]
pub trait ClientStore: Send + Sync {
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
}
