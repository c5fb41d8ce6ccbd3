//! [`NasStore`]: RADIUS clients (NAS): name, CIDR, sealed shared secret,
//! Message-Authenticator rule and RadSec certificate.
//!
//! Used by the RADIUS doors (the NAS table they answer from), the CLI's `nas` commands,
//! `apply` and the admin API's NAS creation; version-checked admin writes are
//! [`VersionedStore`](crate::store::VersionedStore).

use async_trait::async_trait;

use crate::error::StoreError;
use crate::nas::{NasCertificate, NasRecord};

/// RADIUS clients.
#[async_trait]
pub trait NasStore: Send + Sync {
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
        certificate: Option<&NasCertificate>,
    ) -> Result<(), StoreError>;
}
