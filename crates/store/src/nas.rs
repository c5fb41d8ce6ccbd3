//! RADIUS clients (NAS: the Wi-Fi controllers, VPN concentrators and switches that relay
//! their users' Access-Requests): the record, its validation, sealing of the shared
//! secret, and the SQL both backends run.
//!
//! The shared secret keys the packet authenticators (RFC 2865 §3, RFC 3579 §3.2), so it
//! must be recoverable and cannot be hashed. It is sealed under the data directory's master
//! key ([`MasterKey`]) with the NAS name as associated data, so a sealed secret copied onto
//! another NAS's row does not open, and a database dump alone reveals no secret.
//!
//! A request belongs to the most specific NAS whose CIDR contains its source address; two
//! NASes with the same CIDR are refused (the column is unique), overlapping ones are fine
//! (e.g. a /24 for a site and a /32 for one controller in it with its own secret).
//!
//! A NAS that speaks RadSec (RADIUS over TLS, RFC 6614) is also named by its TLS client
//! certificate ([`NasCertificate`]): pinned by SHA-256 fingerprint, or matched by name
//! (a subjectAltName dNSName, else the subject commonName) so a renewed certificate from
//! the same CA keeps working. One certificate names at most one NAS (the column is unique).
//!
//! The statements are written once, with `$n` parameters in ascending order of appearance
//! (SQLite numbers named parameters by first appearance, PostgreSQL by their digits, so
//! the two agree), and expanded for each backend's pool by `nas_queries!`.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use portcullis_core::IpPrefix;
use zeroize::Zeroizing;

use crate::error::StoreError;
use crate::record::validate_name;
use crate::seal::MasterKey;

/// Longest NAS name, in characters (names appear in metrics labels and logs).
pub const MAX_NAS_NAME_CHARS: usize = 64;
/// Longest shared secret accepted, in octets. RFC 2865 sets no limit; FreeRADIUS and most
/// NAS firmware stop well below this.
pub const MAX_NAS_SECRET_LEN: usize = 128;
/// Secrets this short or shorter are accepted with a warning: they can be brute-forced
/// offline from one captured Access-Request (draft-ietf-radext-deprecating-radius).
pub const WEAK_NAS_SECRET_LEN: usize = 12;
/// Length of a generated secret, in characters (all printable ASCII, so every NAS UI
/// accepts it).
pub const GENERATED_NAS_SECRET_LEN: usize = 32;

/// One RADIUS client.
#[derive(Clone, PartialEq, Eq)]
pub struct NasRecord {
    /// Operator's name for it (metrics label, logs, CLI). 1-64 of `[A-Za-z0-9._-]`.
    pub name: String,
    /// Source addresses it sends from.
    pub cidr: IpPrefix,
    /// The shared secret sealed under the master key (see [`NasRecord::seal_secret`]).
    pub secret_sealed: Vec<u8>,
    /// Discard Access-Requests without a valid Message-Authenticator (BlastRADIUS
    /// defence; on unless the NAS cannot send one).
    pub require_message_authenticator: bool,
    /// When it was added (unix seconds).
    pub created_at: i64,
    /// The TLS client certificate that names it on the RadSec door (none: UDP only).
    pub certificate: Option<NasCertificate>,
}

/// How a RadSec NAS's client certificate (already chained to the configured CA) is
/// recognised as this NAS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NasCertificate {
    /// SHA-256 of the leaf certificate's DER: exactly that certificate.
    Sha256([u8; 32]),
    /// A dNSName of the leaf's subjectAltName equal to this (ASCII case-insensitive);
    /// without a subjectAltName, the subject commonName.
    Name(String),
}

/// Longest certificate name accepted (a DNS name's limit).
pub const MAX_NAS_CERTIFICATE_NAME: usize = 253;

impl NasCertificate {
    /// The pin of a DER certificate.
    pub fn pin(der: &[u8]) -> NasCertificate {
        use sha2::Digest as _;
        NasCertificate::Sha256(sha2::Sha256::digest(der).into())
    }

    /// A name to match (1-253 printable ASCII characters, no spaces).
    pub fn name(name: &str) -> Result<NasCertificate, StoreError> {
        if name.is_empty()
            || name.len() > MAX_NAS_CERTIFICATE_NAME
            || !name.chars().all(|c| c.is_ascii_graphic())
        {
            return Err(StoreError::invalid(format!(
                "a NAS certificate name must be 1-{MAX_NAS_CERTIFICATE_NAME} printable ASCII \
                 characters without spaces"
            )));
        }
        Ok(NasCertificate::Name(name.to_ascii_lowercase()))
    }

    /// Whether a leaf certificate with this DER, SHA-256 and these names is this NAS's:
    /// `dns_names` are its subjectAltName dNSNames, `common_name` its subject CN (only
    /// consulted when it has no dNSName, as RFC 6125 §6.4.4 asks).
    pub fn matches(
        &self,
        sha256: &[u8; 32],
        dns_names: &[String],
        common_name: Option<&str>,
    ) -> bool {
        match self {
            NasCertificate::Sha256(pin) => {
                subtle::ConstantTimeEq::ct_eq(&pin[..], &sha256[..]).into()
            }
            NasCertificate::Name(want) => {
                if dns_names.is_empty() {
                    common_name.is_some_and(|cn| cn.eq_ignore_ascii_case(want))
                } else {
                    dns_names.iter().any(|d| d.eq_ignore_ascii_case(want))
                }
            }
        }
    }
}

impl fmt::Display for NasCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NasCertificate::Sha256(d) => write!(f, "sha256:{}", hex::encode(d)),
            NasCertificate::Name(n) => write!(f, "name:{n}"),
        }
    }
}

impl FromStr for NasCertificate {
    type Err = StoreError;

    /// `sha256:<64 hex digits>` or `name:<dns name or CN>` (the stored form).
    fn from_str(s: &str) -> Result<Self, StoreError> {
        if let Some(h) = s.strip_prefix("sha256:") {
            let mut d = [0u8; 32];
            hex::decode_to_slice(h, &mut d)
                .map_err(|_| StoreError::invalid("sha256: needs 64 hex digits"))?;
            return Ok(NasCertificate::Sha256(d));
        }
        if let Some(n) = s.strip_prefix("name:") {
            return NasCertificate::name(n);
        }
        Err(StoreError::invalid(
            "a NAS certificate is sha256:<64 hex digits> or name:<name>",
        ))
    }
}

impl fmt::Debug for NasRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NasRecord")
            .field("name", &self.name)
            .field("cidr", &self.cidr)
            .field("secret_sealed", &"<redacted>")
            .field(
                "require_message_authenticator",
                &self.require_message_authenticator,
            )
            .field("created_at", &self.created_at)
            .field("certificate", &self.certificate)
            .finish()
    }
}

impl NasRecord {
    /// Check every field; backends call this before writing.
    pub fn validate(&self) -> Result<(), StoreError> {
        validate_nas_name(&self.name)?;
        if self.secret_sealed.is_empty() {
            return Err(StoreError::invalid("NAS needs a sealed shared secret"));
        }
        Ok(())
    }

    /// Seal `secret` for the NAS called `name` (checks the secret's length first).
    pub fn seal_secret(
        master: &MasterKey,
        name: &str,
        secret: &[u8],
    ) -> Result<Vec<u8>, StoreError> {
        validate_nas_secret(secret)?;
        master.seal(secret, &aad(name))
    }

    /// The plaintext shared secret (wiped when dropped). Fails if the sealed bytes were
    /// tampered with, moved from another NAS, or sealed under another master key.
    pub fn open_secret(&self, master: &MasterKey) -> Result<Zeroizing<Vec<u8>>, StoreError> {
        master.open(&self.secret_sealed, &aad(&self.name))
    }
}

fn aad(name: &str) -> Vec<u8> {
    [b"portcullis-nas:".as_slice(), name.as_bytes()].concat()
}

/// Check a NAS name: 1-64 characters of `[A-Za-z0-9._-]` (safe as a metrics label).
pub fn validate_nas_name(name: &str) -> Result<(), StoreError> {
    validate_name("NAS name", name)?;
    if name.chars().count() > MAX_NAS_NAME_CHARS
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(StoreError::invalid(format!(
            "NAS name must be 1-{MAX_NAS_NAME_CHARS} characters of A-Z a-z 0-9 . _ -"
        )));
    }
    Ok(())
}

/// Check a shared secret's length: 1-128 octets. (Whether it is weak is
/// [`is_weak_nas_secret`]'s question: weak secrets are allowed, with a warning.)
pub fn validate_nas_secret(secret: &[u8]) -> Result<(), StoreError> {
    if secret.is_empty() || secret.len() > MAX_NAS_SECRET_LEN {
        return Err(StoreError::invalid(format!(
            "NAS shared secret must be 1-{MAX_NAS_SECRET_LEN} octets"
        )));
    }
    Ok(())
}

/// Whether a secret is short enough to be brute-forced from one captured packet.
pub fn is_weak_nas_secret(secret: &[u8]) -> bool {
    secret.len() <= WEAK_NAS_SECRET_LEN
}

/// Parse a NAS address: a CIDR or a bare address (one host). Host bits must be zero.
pub fn parse_nas_cidr(s: &str) -> Result<IpPrefix, StoreError> {
    IpPrefix::from_str(s).map_err(|e| StoreError::invalid(e.to_string()))
}

/// A new shared secret from the OS CSPRNG: 32 characters of base64url (192 bits), which
/// every NAS configuration screen accepts. Shown once to the operator.
pub fn generate_nas_secret() -> Result<Zeroizing<String>, StoreError> {
    let mut raw = Zeroizing::new([0u8; GENERATED_NAS_SECRET_LEN * 3 / 4]);
    portcullis_hash::os_random(&mut raw[..]).map_err(|e| StoreError::Backend(e.to_string()))?;
    Ok(Zeroizing::new(
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw[..]),
    ))
}

/// Row shape shared by both backends.
pub(crate) type NasRow = (String, String, Vec<u8>, bool, i64, Option<String>);

pub(crate) const NAS_COLUMNS: &str =
    "name, cidr, secret_sealed, require_message_authenticator, created_at, certificate";

pub(crate) fn nas_from_row(row: NasRow) -> Result<NasRecord, StoreError> {
    let (name, cidr, secret_sealed, require_message_authenticator, created_at, certificate) = row;
    let certificate = certificate
        .map(|c| NasCertificate::from_str(&c))
        .transpose()
        .map_err(|_| crate::rows::corrupt(&format!("NAS \"{name}\" certificate")))?;
    Ok(NasRecord {
        certificate,
        cidr: IpPrefix::from_str(&cidr)
            .map_err(|_| crate::rows::corrupt(&format!("NAS \"{name}\" CIDR")))?,
        name,
        secret_sealed,
        require_message_authenticator,
        created_at,
    })
}

pub(crate) fn nas_label(name: &str) -> String {
    format!("NAS \"{name}\"")
}

/// A unique violation on insert is either the name or the CIDR.
pub(crate) fn nas_insert_error(e: sqlx::Error, nas: &NasRecord) -> StoreError {
    let cidr_taken = matches!(&e, sqlx::Error::Database(db)
        if db.is_unique_violation() && db.message().contains("cidr"));
    if cidr_taken {
        return StoreError::AlreadyExists(format!("a NAS for {}", nas.cidr));
    }
    if is_certificate_taken(&e) {
        return certificate_taken();
    }
    crate::rows::insert_error(e, || nas_label(&nas.name))
}

fn is_certificate_taken(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db)
        if db.is_unique_violation() && db.message().contains("certificate"))
}

fn certificate_taken() -> StoreError {
    StoreError::AlreadyExists("a NAS with that certificate".into())
}

/// An update of the certificate column failed.
pub(crate) fn nas_certificate_error(e: sqlx::Error) -> StoreError {
    if is_certificate_taken(&e) {
        return certificate_taken();
    }
    crate::rows::backend(e)
}

/// The NAS statements for one backend's pool type, as free functions that the backend's
/// `Store` impl delegates to (one copy of the SQL and its checks for both backends).
macro_rules! nas_queries {
    ($pool:ty) => {
        use $crate::error::StoreError;
        use $crate::nas::{
            NAS_COLUMNS, NasCertificate, NasRecord, NasRow, nas_certificate_error, nas_from_row,
            nas_insert_error, nas_label,
        };
        use $crate::rows::backend;

        pub(crate) async fn put(pool: &$pool, nas: &NasRecord) -> Result<(), StoreError> {
            nas.validate()?;
            sqlx::query(&format!(
                "INSERT INTO nas ({NAS_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"
            ))
            .bind(&nas.name)
            .bind(nas.cidr.to_string())
            .bind(&nas.secret_sealed)
            .bind(nas.require_message_authenticator)
            .bind(nas.created_at)
            .bind(nas.certificate.as_ref().map(ToString::to_string))
            .execute(pool)
            .await
            .map_err(|e| nas_insert_error(e, nas))?;
            Ok(())
        }

        pub(crate) async fn get(pool: &$pool, name: &str) -> Result<Option<NasRecord>, StoreError> {
            let row: Option<NasRow> =
                sqlx::query_as(&format!("SELECT {NAS_COLUMNS} FROM nas WHERE name = $1"))
                    .bind(name)
                    .fetch_optional(pool)
                    .await
                    .map_err(backend)?;
            row.map(nas_from_row).transpose()
        }

        pub(crate) async fn list(pool: &$pool) -> Result<Vec<NasRecord>, StoreError> {
            let rows: Vec<NasRow> =
                sqlx::query_as(&format!("SELECT {NAS_COLUMNS} FROM nas ORDER BY name"))
                    .fetch_all(pool)
                    .await
                    .map_err(backend)?;
            rows.into_iter().map(nas_from_row).collect()
        }

        pub(crate) async fn remove(pool: &$pool, name: &str) -> Result<bool, StoreError> {
            let done = sqlx::query("DELETE FROM nas WHERE name = $1")
                .bind(name)
                .execute(pool)
                .await
                .map_err(backend)?;
            Ok(done.rows_affected() > 0)
        }

        pub(crate) async fn set_secret(
            pool: &$pool,
            name: &str,
            sealed: &[u8],
        ) -> Result<(), StoreError> {
            if sealed.is_empty() {
                return Err(StoreError::invalid("NAS needs a sealed shared secret"));
            }
            let done = sqlx::query("UPDATE nas SET secret_sealed = $1 WHERE name = $2")
                .bind(sealed)
                .bind(name)
                .execute(pool)
                .await
                .map_err(backend)?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(nas_label(name)));
            }
            Ok(())
        }

        pub(crate) async fn set_require_message_authenticator(
            pool: &$pool,
            name: &str,
            require: bool,
        ) -> Result<(), StoreError> {
            let done =
                sqlx::query("UPDATE nas SET require_message_authenticator = $1 WHERE name = $2")
                    .bind(require)
                    .bind(name)
                    .execute(pool)
                    .await
                    .map_err(backend)?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(nas_label(name)));
            }
            Ok(())
        }

        pub(crate) async fn set_certificate(
            pool: &$pool,
            name: &str,
            certificate: Option<&NasCertificate>,
        ) -> Result<(), StoreError> {
            let done = sqlx::query("UPDATE nas SET certificate = $1 WHERE name = $2")
                .bind(certificate.map(ToString::to_string))
                .bind(name)
                .execute(pool)
                .await
                .map_err(nas_certificate_error)?;
            if done.rows_affected() == 0 {
                return Err(StoreError::NotFound(nas_label(name)));
            }
            Ok(())
        }
    };
}

/// The statements on SQLite.
pub(crate) mod sqlite {
    nas_queries!(sqlx::SqlitePool);
}

/// The statements on PostgreSQL.
pub(crate) mod postgres {
    nas_queries!(sqlx::PgPool);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_28_certificate_forms_round_trip_and_match() {
        let pin = NasCertificate::pin(b"der");
        let text = pin.to_string();
        assert!(text.starts_with("sha256:") && text.len() == 7 + 64);
        assert_eq!(NasCertificate::from_str(&text).unwrap(), pin);
        let NasCertificate::Sha256(d) = pin else {
            panic!("a pin")
        };
        assert!(pin.matches(&d, &[], None));
        assert!(!pin.matches(&[0; 32], &[], None));

        let name = NasCertificate::from_str("name:AP1.example.org").unwrap();
        assert_eq!(name.to_string(), "name:ap1.example.org");
        let dns = vec!["other.example.org".to_owned(), "ap1.EXAMPLE.org".to_owned()];
        assert!(name.matches(&[0; 32], &dns, None));
        assert!(name.matches(&[0; 32], &[], Some("AP1.example.org")));
        assert!(
            !name.matches(&[0; 32], &dns[..1], Some("ap1.example.org")),
            "the CN counts only without dNSNames"
        );
        for bad in ["", "sha256:12", "name:", "name:a b", "md5:00"] {
            assert!(NasCertificate::from_str(bad).is_err(), "{bad}");
        }
    }
}
