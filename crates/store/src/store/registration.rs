//! [`RegistrationStore`]: dynamic client registration (issue 27, RFC 7591/7592): initial
//! access tokens (hashed, with their uses left) and each registered client's
//! registration (its registration access token hash and metadata).
//!
//! Used by the OAuth door's `/oauth2/register` endpoints, the admin API's
//! registration-token resources, the CLI's `registration` commands and `apply` (which
//! leaves registered clients alone). The SQL is [`crate::registration`]'s.

use async_trait::async_trait;

use crate::error::StoreError;
use crate::record::ClientRecord;
use crate::registration::{ClientRegistration, InitialAccessToken, TokenRotation};

/// Dynamic client registration.
#[async_trait]
pub trait RegistrationStore: Send + Sync {
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
        rotation: &TokenRotation<'_>,
        now: i64,
    ) -> Result<(), StoreError>;
    /// Replace a registered client's registration access token if its hash is still
    /// `rotation.old_hash` (RFC 7592 3, on a read); whether it was replaced.
    async fn rotate_registration_token(
        &self,
        client_id: &str,
        rotation: &TokenRotation<'_>,
    ) -> Result<bool, StoreError>;
}
