//! The records the store keeps (clients, users, signing keys) and the validation every
//! backend applies before writing them. Validation lives here, not in the backends, so
//! SQLite and PostgreSQL accept exactly the same inputs.
//!
//! `Debug` output of records never shows stored hashes or sealed keys: records end up in
//! logs and test failure messages.

use std::fmt;
use std::str::FromStr;

use crate::directory::{EntryUuid, UserAttributes};
use crate::error::StoreError;

pub use crate::names::{MAX_NAME_CHARS, validate_name};
/// Shortest token lifetime a client may be given, in seconds.
pub const MIN_TOKEN_LIFETIME: u32 = 60;
/// Longest token lifetime a client may be given, in seconds (one day).
pub const MAX_TOKEN_LIFETIME: u32 = 86_400;
/// Default token lifetime for new clients, in seconds.
pub const DEFAULT_TOKEN_LIFETIME: u32 = 3_600;
/// Most secret hashes a client holds at once (current plus previous during rotation).
pub const MAX_CLIENT_SECRETS: usize = 2;
/// Most scopes a client may be granted; a bound keeps rows and tokens small.
pub const MAX_SCOPES: usize = 64;
/// Longest single scope token, in bytes.
pub const MAX_SCOPE_LEN: usize = 128;
/// Longest stored hash string, in bytes (the longest supported formats are ~200).
pub const MAX_HASH_LEN: usize = 1024;

/// An OAuth 2.0 grant type a client may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Grant {
    /// `client_credentials` (RFC 6749 section 4.4).
    ClientCredentials,
    /// `password`: resource-owner password credentials (RFC 6749 section 4.3).
    Password,
}

impl Grant {
    /// Every grant, in a stable order.
    pub const ALL: [Grant; 2] = [Grant::ClientCredentials, Grant::Password];

    /// The `grant_type` value of this grant.
    pub const fn as_str(self) -> &'static str {
        match self {
            Grant::ClientCredentials => "client_credentials",
            Grant::Password => "password",
        }
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Grant {
    type Err = StoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Grant::ALL
            .into_iter()
            .find(|g| g.as_str() == s)
            .ok_or_else(|| {
                StoreError::invalid(format!(
                    "unknown grant {:?} (expected client_credentials or password)",
                    truncate(s)
                ))
            })
    }
}

/// Longest public key material a client may register (a JWKS document of a few keys, a
/// couple of PEM certificates or a subject DN), in bytes.
pub const MAX_AUTH_KEY_LEN: usize = 64 * 1024;

/// How a client proves who it is at the token endpoint: the families of RFC 7591's
/// `token_endpoint_auth_method`. Only [`ClientAuth::Secret`] clients hold secret hashes
/// (and cost a hash to check); the others hold public material only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientAuth {
    /// A shared secret, sent as `client_secret_basic` or `client_secret_post`.
    Secret,
    /// `private_key_jwt` (RFC 7523): assertions signed by a key of this JWKS document.
    PrivateKeyJwt {
        /// The JWKS document (`{"keys": [...]}`), public keys only.
        jwks: String,
    },
    /// `self_signed_tls_client_auth` (RFC 8705 2.2): one of these PEM certificates.
    SelfSignedTlsClientAuth {
        /// PEM certificates.
        certs: String,
    },
    /// `tls_client_auth` (RFC 8705 2.1): a certificate from the trusted client CAs with
    /// this subject distinguished name.
    TlsClientAuth {
        /// RFC 4514 subject DN.
        subject_dn: String,
    },
}

impl ClientAuth {
    /// The stored method name (also the metadata's auth method, except that a secret
    /// client may use either `client_secret_basic` or `client_secret_post`).
    pub const fn method(&self) -> &'static str {
        match self {
            ClientAuth::Secret => "client_secret",
            ClientAuth::PrivateKeyJwt { .. } => "private_key_jwt",
            ClientAuth::SelfSignedTlsClientAuth { .. } => "self_signed_tls_client_auth",
            ClientAuth::TlsClientAuth { .. } => "tls_client_auth",
        }
    }

    /// The stored public material (`None` for a secret client).
    pub fn key(&self) -> Option<&str> {
        match self {
            ClientAuth::Secret => None,
            ClientAuth::PrivateKeyJwt { jwks: k }
            | ClientAuth::SelfSignedTlsClientAuth { certs: k }
            | ClientAuth::TlsClientAuth { subject_dn: k } => Some(k),
        }
    }

    /// Rebuild from the stored method name and key.
    pub fn from_stored(method: &str, key: Option<String>) -> Result<ClientAuth, StoreError> {
        let need = |k: Option<String>| {
            k.ok_or_else(|| StoreError::invalid(format!("auth method {method} needs a key")))
        };
        Ok(match method {
            "client_secret" => ClientAuth::Secret,
            "private_key_jwt" => ClientAuth::PrivateKeyJwt { jwks: need(key)? },
            "self_signed_tls_client_auth" => {
                ClientAuth::SelfSignedTlsClientAuth { certs: need(key)? }
            }
            "tls_client_auth" => ClientAuth::TlsClientAuth {
                subject_dn: need(key)?,
            },
            other => {
                return Err(StoreError::invalid(format!(
                    "unknown client auth method {:?}",
                    truncate(other)
                )));
            }
        })
    }

    fn validate(&self) -> Result<(), StoreError> {
        match self.key() {
            None => Ok(()),
            Some(k) if k.trim().is_empty() || k.len() > MAX_AUTH_KEY_LEN => {
                Err(StoreError::invalid(format!(
                    "{} key material must be 1-{MAX_AUTH_KEY_LEN} bytes",
                    self.method()
                )))
            }
            Some(k) if k.contains('\0') => Err(StoreError::invalid(format!(
                "{} key material contains a NUL byte",
                self.method()
            ))),
            Some(_) => Ok(()),
        }
    }
}

/// An OAuth client.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientRecord {
    /// The `client_id`.
    pub id: String,
    /// How it authenticates.
    pub auth: ClientAuth,
    /// For [`ClientAuth::Secret`], one or two stored secret hashes; the first is the
    /// current secret, a second one is the previous secret still accepted during a
    /// rotation. Empty for every other method.
    pub secret_hashes: Vec<String>,
    /// Grant types this client may use (at least one).
    pub grants: Vec<Grant>,
    /// Scopes this client may be issued (possibly none).
    pub scopes: Vec<String>,
    /// Lifetime of the access tokens issued to it, in seconds.
    pub token_lifetime: u32,
    /// When it was created (unix seconds, supplied by the caller).
    pub created_at: i64,
}

impl fmt::Debug for ClientRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRecord")
            .field("id", &self.id)
            .field("auth", &self.auth.method())
            .field(
                "secret_hashes",
                &format_args!("<{} redacted>", self.secret_hashes.len()),
            )
            .field("grants", &self.grants)
            .field("scopes", &self.scopes)
            .field("token_lifetime", &self.token_lifetime)
            .field("created_at", &self.created_at)
            .finish()
    }
}

impl ClientRecord {
    /// Check every field; backends call this before writing.
    pub fn validate(&self) -> Result<(), StoreError> {
        validate_name("client id", &self.id)?;
        self.auth.validate()?;
        match self.auth {
            ClientAuth::Secret => validate_secret_hashes(&self.secret_hashes)?,
            _ if !self.secret_hashes.is_empty() => {
                return Err(StoreError::invalid(format!(
                    "a {} client holds no secret hashes",
                    self.auth.method()
                )));
            }
            _ => {}
        }
        validate_settings(&self.grants, &self.scopes, self.token_lifetime)
    }

    /// Whether this client may use `grant`.
    pub fn allows(&self, grant: Grant) -> bool {
        self.grants.contains(&grant)
    }
}

/// A human user (resource owner).
#[derive(Clone, PartialEq, Eq)]
pub struct UserRecord {
    /// The username.
    pub username: String,
    /// The stored password hash (any format `portcullis_hash::Credential` parses).
    pub password_hash: String,
    /// A disabled user is rejected like an unknown one.
    pub disabled: bool,
    /// When it was created (unix seconds, supplied by the caller).
    pub created_at: i64,
    /// Its `entryUUID`, generated at creation and never changed (issue 39).
    pub entry_uuid: EntryUuid,
    /// Its directory attributes (names, mail, POSIX account), all optional.
    pub attributes: UserAttributes,
}

impl fmt::Debug for UserRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserRecord")
            .field("username", &self.username)
            .field("password_hash", &"<redacted>")
            .field("disabled", &self.disabled)
            .field("created_at", &self.created_at)
            .field("entry_uuid", &self.entry_uuid)
            .field("attributes", &self.attributes)
            .finish()
    }
}

impl UserRecord {
    /// A new enabled user with a fresh `entryUUID` and no directory attributes.
    pub fn new(
        username: impl Into<String>,
        password_hash: impl Into<String>,
        created_at: i64,
    ) -> Result<UserRecord, StoreError> {
        Ok(UserRecord {
            username: username.into(),
            password_hash: password_hash.into(),
            disabled: false,
            created_at,
            entry_uuid: EntryUuid::generate()?,
            attributes: UserAttributes::default(),
        })
    }

    /// Check every field; backends call this before writing.
    pub fn validate(&self) -> Result<(), StoreError> {
        validate_name("username", &self.username)?;
        validate_hash(&self.password_hash)?;
        self.attributes.validate()
    }
}

/// A token signing key. The private half is sealed (AEAD) by the caller before it reaches
/// the store, so a database dump alone cannot sign tokens.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKeyRecord {
    /// Key id (`kid` in JWT headers and the JWKS).
    pub kid: String,
    /// JOSE algorithm name, e.g. `EdDSA`.
    pub alg: String,
    /// Public key bytes (published in the JWKS).
    pub public_key: Vec<u8>,
    /// Sealed private key bytes (see `DataDir::master_key`).
    pub private_key_sealed: Vec<u8>,
    /// When it was created (unix seconds).
    pub created_at: i64,
    /// Tokens signed by this key expire before this instant (unix seconds); after it the
    /// key only needs to stay published until it can be removed.
    pub not_after: i64,
    /// When it stopped being used for new tokens, if it has.
    pub retired_at: Option<i64>,
}

impl fmt::Debug for SigningKeyRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKeyRecord")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("public_key_len", &self.public_key.len())
            .field("private_key_sealed", &"<redacted>")
            .field("created_at", &self.created_at)
            .field("not_after", &self.not_after)
            .field("retired_at", &self.retired_at)
            .finish()
    }
}

impl SigningKeyRecord {
    /// Check every field; backends call this before writing.
    pub fn validate(&self) -> Result<(), StoreError> {
        validate_name("key id", &self.kid)?;
        if self.alg.is_empty() || self.alg.len() > 32 || !self.alg.is_ascii() {
            return Err(StoreError::invalid(
                "signing key algorithm must be 1-32 ASCII characters",
            ));
        }
        if self.public_key.is_empty() || self.private_key_sealed.is_empty() {
            return Err(StoreError::invalid(
                "signing key needs a public key and a sealed private key",
            ));
        }
        if self.not_after <= self.created_at {
            return Err(StoreError::invalid(
                "signing key not_after must be later than created_at",
            ));
        }
        Ok(())
    }
}

/// Check one scope token against RFC 6749 section 3.3:
/// `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`.
pub fn validate_scope(scope: &str) -> Result<(), StoreError> {
    let ok = !scope.is_empty()
        && scope.len() <= MAX_SCOPE_LEN
        && scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
    if ok {
        Ok(())
    } else {
        Err(StoreError::invalid(format!(
            "scope {:?} is not an RFC 6749 scope token (1-{MAX_SCOPE_LEN} printable ASCII characters, no space, '\"' or '\\')",
            truncate(scope)
        )))
    }
}

/// Check a list of scopes: each valid, no repeats, at most [`MAX_SCOPES`].
pub fn validate_scopes(scopes: &[String]) -> Result<(), StoreError> {
    if scopes.len() > MAX_SCOPES {
        return Err(StoreError::invalid(format!(
            "a client may have at most {MAX_SCOPES} scopes"
        )));
    }
    for s in scopes {
        validate_scope(s)?;
    }
    if has_duplicates(scopes) {
        return Err(StoreError::invalid("scopes must not repeat"));
    }
    Ok(())
}

/// Check a client's settings: at least one grant, none repeated; valid scopes; lifetime
/// in range.
pub fn validate_settings(
    grants: &[Grant],
    scopes: &[String],
    token_lifetime: u32,
) -> Result<(), StoreError> {
    if grants.is_empty() {
        return Err(StoreError::invalid("a client needs at least one grant"));
    }
    if has_duplicates(grants) {
        return Err(StoreError::invalid("grants must not repeat"));
    }
    validate_scopes(scopes)?;
    validate_token_lifetime(token_lifetime)
}

/// Check a token lifetime in seconds.
pub fn validate_token_lifetime(secs: u32) -> Result<(), StoreError> {
    if (MIN_TOKEN_LIFETIME..=MAX_TOKEN_LIFETIME).contains(&secs) {
        Ok(())
    } else {
        Err(StoreError::invalid(format!(
            "token lifetime must be {MIN_TOKEN_LIFETIME}-{MAX_TOKEN_LIFETIME} seconds, got {secs}"
        )))
    }
}

/// Check a client's secret hash list: one or two valid hashes, not equal.
pub fn validate_secret_hashes(hashes: &[String]) -> Result<(), StoreError> {
    if hashes.is_empty() || hashes.len() > MAX_CLIENT_SECRETS {
        return Err(StoreError::invalid(format!(
            "a client holds 1-{MAX_CLIENT_SECRETS} secret hashes, got {}",
            hashes.len()
        )));
    }
    for h in hashes {
        validate_hash(h)?;
    }
    if has_duplicates(hashes) {
        return Err(StoreError::invalid("a client's secret hashes must differ"));
    }
    Ok(())
}

/// Check a stored hash string: a format `portcullis_hash::Credential` recognises. This
/// also keeps a plaintext secret passed by mistake out of the database. The message never
/// echoes the string, which might be exactly such a secret.
pub fn validate_hash(hash: &str) -> Result<(), StoreError> {
    if hash.is_empty() || hash.len() > MAX_HASH_LEN {
        return Err(StoreError::invalid(format!(
            "stored hash must be 1-{MAX_HASH_LEN} bytes"
        )));
    }
    if hash.trim() != hash {
        return Err(StoreError::invalid(
            "stored hash must not have surrounding whitespace",
        ));
    }
    use portcullis_hash::FormatError;
    // The hash crate's messages may quote the start of the string; here it might be a
    // plaintext secret, so only the format name and the parameter complaint are kept.
    portcullis_hash::Credential::parse(hash)
        .map(|_| ())
        .map_err(|e| match e {
            FormatError::Unrecognised(_) => {
                StoreError::invalid("stored hash is not in a recognised hash format")
            }
            FormatError::Malformed { format, .. } => {
                StoreError::invalid(format!("stored hash is a malformed {format} hash"))
            }
            FormatError::Unsupported { format, reason } => StoreError::invalid(format!(
                "stored {format} hash has unsupported parameters: {reason}"
            )),
        })
}

fn has_duplicates<T: PartialEq>(items: &[T]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, a)| items[..i].contains(a))
}

/// Cut untrusted input down to something fit for a one-line error message.
fn truncate(s: &str) -> String {
    s.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_charset_follows_rfc6749() {
        for ok in ["read", "a:b/c", "!", "#[]", "~", "https://x.example/scope"] {
            assert!(validate_scope(ok).is_ok(), "{ok:?}");
        }
        for bad in ["", "a b", "\"", "\\", "é", "a\tb", "\u{7f}"] {
            assert!(validate_scope(bad).is_err(), "{bad:?}");
        }
        assert!(validate_scope(&"x".repeat(MAX_SCOPE_LEN)).is_ok());
        assert!(validate_scope(&"x".repeat(MAX_SCOPE_LEN + 1)).is_err());
    }

    #[test]
    fn names_are_bounded_and_printable() {
        assert!(validate_name("id", "a").is_ok());
        assert!(validate_name("id", &"é".repeat(255)).is_ok());
        assert!(validate_name("id", &"a".repeat(256)).is_err());
        assert!(validate_name("id", "").is_err());
        assert!(validate_name("id", "a\nb").is_err());
        assert!(validate_name("id", "a\u{0}").is_err());
        assert!(validate_name("id", " a").is_err());
    }

    #[test]
    fn lifetimes_are_bounded() {
        assert!(validate_token_lifetime(59).is_err());
        assert!(validate_token_lifetime(60).is_ok());
        assert!(validate_token_lifetime(86_400).is_ok());
        assert!(validate_token_lifetime(86_401).is_err());
    }

    #[test]
    fn grants_parse_only_known_names() {
        assert_eq!(
            "client_credentials".parse::<Grant>().unwrap(),
            Grant::ClientCredentials
        );
        assert_eq!("password".parse::<Grant>().unwrap(), Grant::Password);
        assert!("implicit".parse::<Grant>().is_err());
        assert!("Password".parse::<Grant>().is_err());
    }

    #[test]
    fn plaintext_is_not_accepted_as_a_hash_and_is_not_echoed() {
        let err = validate_hash("hunter2-plaintext").unwrap_err().to_string();
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn debug_redacts_hashes() {
        let u = UserRecord::new("alice", "$pbkdf2-sha256$i=1,l=32$c2FsdA$aGFzaA", 0).unwrap();
        assert!(!format!("{u:?}").contains("pbkdf2"));
    }
}
