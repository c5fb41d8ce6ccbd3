//! Configuration as code (issue 27): `portcullis apply FILE`. A TOML file declares
//! clients, users (password hashes only, directory attributes), groups (issue 39) and
//! NAS; [`Desired::load`] reads and checks it whole (every secret reference resolved, every record validated) before the store is
//! touched, and [`plan`] compares it with the store and carries out the difference.
//!
//! Secrets are never in the file: a client secret or a NAS shared secret comes from
//! `secret_file` (relative to the file) or `secret_env`; a user's password only ever as
//! a hash (`password_hash`, `password_hash_file`, `password_hash_env`). Secrets are
//! compared with what is stored without being printed: a client secret by verifying it
//! against the stored hash, a NAS secret by opening the sealed one, in constant time.

pub mod declared;
pub mod plan;
pub mod remote;

use std::path::{Path, PathBuf};

use portcullis_core::IpPrefix;
use portcullis_store::{ClientAuth, Grant, GroupRecord, UserRecord};

use declared::{Declared, DeclaredClient, DeclaredGroup, DeclaredNas, DeclaredUser};
use serde::Deserialize;
use thiserror::Error;
use zeroize::Zeroizing;

/// Largest file accepted, in bytes.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Largest secret or hash read from a file or the environment, in bytes.
pub const MAX_SECRET_BYTES: usize = 4096;

/// The file could not be used; nothing was changed.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct ApplyError(pub String);

fn err(msg: impl Into<String>) -> ApplyError {
    ApplyError(msg.into())
}

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileDesired {
    /// `[[clients]]`
    pub clients: Vec<FileClient>,
    /// `[[users]]`
    pub users: Vec<FileUser>,
    /// `[[nas]]`
    pub nas: Vec<FileNas>,
    /// `[[groups]]` (no secrets: as declared)
    pub groups: Vec<DeclaredGroup>,
}

/// One `[[clients]]`: its settings and exactly one way to authenticate.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileClient {
    /// The client id.
    pub id: String,
    /// Grant types (default `["client_credentials"]`).
    #[serde(default)]
    pub grants: Option<Vec<String>>,
    /// Scopes (default none).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Token lifetime in seconds (default 3600).
    #[serde(default)]
    pub token_lifetime: Option<u32>,
    /// The secret, read from this file (one line).
    pub secret_file: Option<PathBuf>,
    /// The secret, read from this environment variable.
    pub secret_env: Option<String>,
    /// A stored hash of the secret (any format the server verifies).
    pub secret_hash: Option<String>,
    /// `private_key_jwt`: a file with its public keys (PEM or JWKS).
    pub private_key_jwt: Option<PathBuf>,
    /// `tls_client_auth`: the certificate's subject DN.
    pub tls_client_auth: Option<String>,
    /// `self_signed_tls_client_auth`: a file with its PEM certificates.
    pub self_signed_tls_client_auth: Option<PathBuf>,
}

/// One `[[users]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileUser {
    /// The username.
    pub username: String,
    /// The password hash.
    pub password_hash: Option<String>,
    /// The password hash, read from this file.
    pub password_hash_file: Option<PathBuf>,
    /// The password hash, read from this environment variable.
    pub password_hash_env: Option<String>,
    /// Disabled users are refused like unknown ones.
    #[serde(default)]
    pub disabled: bool,
    /// Directory attributes (`[users.attributes]`, `[users.attributes.posix]`).
    pub attributes: Option<crate::directory::Attributes>,
}

/// One `[[nas]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileNas {
    /// Its name.
    pub name: String,
    /// The addresses it sends from (CIDR or one address).
    pub cidr: String,
    /// The shared secret, read from this file.
    pub secret_file: Option<PathBuf>,
    /// The shared secret, read from this environment variable.
    pub secret_env: Option<String>,
    /// Discard its Access-Requests without a valid Message-Authenticator (default true).
    #[serde(default = "yes")]
    pub require_message_authenticator: bool,
}

fn yes() -> bool {
    true
}

/// How a declared client authenticates.
pub enum DesiredAuth {
    /// A secret to be stored hashed (compared by verifying it against the stored hash).
    Secret(Zeroizing<Vec<u8>>),
    /// A stored hash, compared as text.
    SecretHash(String),
    /// Key or certificate material, normalised as the store keeps it.
    Keyed(ClientAuth),
}

/// A declared client.
pub struct DesiredClient {
    /// The client id.
    pub id: String,
    /// How it authenticates.
    pub auth: DesiredAuth,
    /// Grants.
    pub grants: Vec<Grant>,
    /// Scopes.
    pub scopes: Vec<String>,
    /// Token lifetime, seconds.
    pub token_lifetime: u32,
}

/// A declared NAS.
pub struct DesiredNas {
    /// Its name.
    pub name: String,
    /// Its addresses.
    pub cidr: IpPrefix,
    /// Its shared secret (sealed only when written).
    pub secret: Zeroizing<Vec<u8>>,
    /// Message-Authenticator required.
    pub require_message_authenticator: bool,
}

/// Everything the file declares, checked and with its secrets resolved.
pub struct Desired {
    /// Clients, in file order.
    pub clients: Vec<DesiredClient>,
    /// Users (records with `created_at` 0; the plan keeps stored creation times).
    pub users: Vec<UserRecord>,
    /// NAS.
    pub nas: Vec<DesiredNas>,
    /// Groups (members sorted; `created_at` 0, the plan keeps stored creation times).
    pub groups: Vec<GroupRecord>,
}

/// Where a secret comes from: one of a file (relative to the declaring file) or an
/// environment variable.
fn read_secret(
    what: &str,
    base: &Path,
    file: Option<&PathBuf>,
    env: Option<&String>,
) -> Result<Option<Zeroizing<Vec<u8>>>, ApplyError> {
    let raw = match (file, env) {
        (Some(_), Some(_)) => {
            return Err(err(format!(
                "{what}: give a file or an environment variable, not both"
            )));
        }
        // The reference itself is not repeated in errors: a secret pasted where its file
        // name or variable belongs must not reach a terminal or a CI log.
        (Some(f), None) => Zeroizing::new(std::fs::read(base.join(f)).map_err(|e| {
            err(format!(
                "{what}: its secret file cannot be read: {}",
                match e.kind() {
                    std::io::ErrorKind::NotFound => "no such file".to_owned(),
                    std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
                    k => k.to_string(),
                }
            ))
        })?),
        (None, Some(v)) => match std::env::var_os(v) {
            Some(val) => Zeroizing::new(std::os::unix::ffi::OsStringExt::into_vec(val)),
            None => {
                return Err(err(format!(
                    "{what}: its secret's environment variable is not set"
                )));
            }
        },
        (None, None) => return Ok(None),
    };
    let mut s = raw;
    while s.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        s.pop();
    }
    if s.is_empty() || s.len() > MAX_SECRET_BYTES || s.contains(&b'\n') {
        return Err(err(format!(
            "{what}: expected one non-empty line of at most {MAX_SECRET_BYTES} bytes"
        )));
    }
    Ok(Some(s))
}

fn read_text(what: &str, base: &Path, f: &Path) -> Result<String, ApplyError> {
    let path = base.join(f);
    std::fs::read_to_string(&path)
        .map_err(|e| err(format!("{what}: reading {}: {e}", path.display())))
}

impl Desired {
    /// Read and check the file at `path` (relative references are resolved against its
    /// directory).
    pub fn load(path: &Path) -> Result<Desired, ApplyError> {
        let meta =
            std::fs::metadata(path).map_err(|e| err(format!("reading {}: {e}", path.display())))?;
        if meta.len() > MAX_FILE_BYTES {
            return Err(err(format!(
                "{} is larger than {MAX_FILE_BYTES} bytes",
                path.display()
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| err(format!("reading {}: {e}", path.display())))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Desired::parse(&text, base)
    }

    /// Parse and check TOML `text`; files it names are relative to `base`.
    pub fn parse(text: &str, base: &Path) -> Result<Desired, ApplyError> {
        Declared::read(text, base)?
            .check()
            .map_err(|e| ApplyError(e.message))
    }

    fn check_unique(&self) -> Result<(), (String, ApplyError)> {
        fn dup<'a>(
            what: &str,
            at: &str,
            keys: impl Iterator<Item = &'a str>,
        ) -> Result<(), (String, ApplyError)> {
            let mut seen = std::collections::HashSet::new();
            for (i, k) in keys.enumerate() {
                if !seen.insert(k) {
                    return Err((
                        format!("{at}/{i}"),
                        err(format!("{what} {k:?} is declared twice")),
                    ));
                }
            }
            Ok(())
        }
        dup(
            "client",
            "/clients",
            self.clients.iter().map(|c| c.id.as_str()),
        )?;
        dup(
            "user",
            "/users",
            self.users.iter().map(|u| u.username.as_str()),
        )?;
        dup("NAS", "/nas", self.nas.iter().map(|n| n.name.as_str()))?;
        dup(
            "group",
            "/groups",
            self.groups.iter().map(|g| g.name.as_str()),
        )?;
        let cidrs: Vec<String> = self.nas.iter().map(|n| n.cidr.to_string()).collect();
        dup("NAS address", "/nas", cidrs.iter().map(String::as_str))
    }
}

impl Declared {
    /// Parse TOML `text` and resolve every secret reference (files relative to `base`,
    /// environment variables) and key file; the records are checked by [`Declared::check`].
    pub fn read(text: &str, base: &Path) -> Result<Declared, ApplyError> {
        // The message and position only: the parser's own rendering quotes the offending
        // line, which may hold a secret pasted where a reference belongs.
        let file: FileDesired = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(0, |s| {
                text[..s.start.min(text.len())].matches('\n').count() + 1
            });
            err(format!("line {line}: {}", e.message()))
        })?;
        let mut out = Declared::default();
        for c in file.clients {
            out.clients.push(client(c, base)?);
        }
        for u in file.users {
            let what = format!("user {:?}", u.username);
            let from_ref = read_secret(
                &what,
                base,
                u.password_hash_file.as_ref(),
                u.password_hash_env.as_ref(),
            )?;
            let hash = match (u.password_hash, from_ref) {
                (Some(h), None) => h,
                (None, Some(h)) => String::from_utf8(h.to_vec())
                    .map_err(|_| err(format!("{what}: the password hash is not UTF-8")))?,
                _ => {
                    return Err(err(format!(
                        "{what}: give exactly one of password_hash, password_hash_file, \
                         password_hash_env (plain passwords are not accepted)"
                    )));
                }
            };
            out.users.push(DeclaredUser {
                username: u.username,
                password_hash: hash,
                disabled: u.disabled,
                attributes: u.attributes,
            });
        }
        for n in file.nas {
            let what = format!("NAS {:?}", n.name);
            let secret = read_secret(&what, base, n.secret_file.as_ref(), n.secret_env.as_ref())?
                .ok_or_else(|| err(format!("{what}: give secret_file or secret_env")))?;
            out.nas.push(DeclaredNas {
                name: n.name,
                cidr: n.cidr,
                secret: utf8_secret(&what, secret)?,
                require_message_authenticator: n.require_message_authenticator,
            });
        }
        out.groups = file.groups;
        Ok(out)
    }
}

/// Secrets travel as JSON strings to a server: they must be UTF-8.
fn utf8_secret(what: &str, s: Zeroizing<Vec<u8>>) -> Result<String, ApplyError> {
    String::from_utf8(s.to_vec()).map_err(|e| {
        let mut bytes = e.into_bytes();
        zeroize::Zeroize::zeroize(&mut bytes);
        err(format!("{what}: the secret is not UTF-8"))
    })
}

fn client(c: FileClient, base: &Path) -> Result<DeclaredClient, ApplyError> {
    let what = format!("client {:?}", c.id);
    let secret = read_secret(&what, base, c.secret_file.as_ref(), c.secret_env.as_ref())?
        .map(|s| utf8_secret(&what, s))
        .transpose()?;
    let private_key_jwt = c
        .private_key_jwt
        .as_deref()
        .map(|f| read_text(&what, base, f))
        .transpose()?;
    let self_signed = c
        .self_signed_tls_client_auth
        .as_deref()
        .map(|f| read_text(&what, base, f))
        .transpose()?;
    Ok(DeclaredClient {
        id: c.id.clone(),
        grants: c.grants.clone(),
        scopes: c.scopes.clone(),
        token_lifetime: c.token_lifetime,
        secret,
        secret_hash: c.secret_hash.clone(),
        private_key_jwt,
        tls_client_auth: c.tls_client_auth.clone(),
        self_signed_tls_client_auth: self_signed,
    })
}

/// An example file (`portcullis apply --example`).
pub const EXAMPLE: &str = r#"# portcullis apply FILE: the clients, users, groups and NAS this file declares are created
# or updated to match; with --prune, those it does not declare are removed. Secrets are
# never written here: they come from files (relative to this file) or environment
# variables.

[[clients]]
id = "billing"
grants = ["client_credentials"]
scopes = ["invoices:read"]
token_lifetime = 3600
secret_file = "secrets/billing"          # or secret_env = "BILLING_SECRET", or secret_hash

[[clients]]
id = "reports"
private_key_jwt = "keys/reports.jwks"    # or tls_client_auth = "CN=reports,O=Example",
                                         # or self_signed_tls_client_auth = "certs/reports.pem"

[[users]]
username = "alice"
password_hash = "$argon2id$v=19$m=19456,t=2,p=1$..."  # or password_hash_file / _env
disabled = false
[users.attributes]                       # optional; cn defaults to the username
cn = "Alice Liddell"
sn = "Liddell"
mail = "alice@example.com"
[users.attributes.posix]                 # optional POSIX account
uid_number = 10001
gid_number = 10000
home_directory = "/home/alice"
login_shell = "/bin/bash"

[[groups]]
name = "staff"
gid_number = 10000                       # optional
description = "Everyone"                 # optional
members = ["alice"]

[[nas]]
name = "office-wifi"
cidr = "10.1.0.0/24"
secret_env = "OFFICE_WIFI_SECRET"        # or secret_file
require_message_authenticator = true
"#;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    /// `apply --example` stays a file apply reads (every field known), groups and
    /// directory attributes included.
    #[test]
    fn the_example_parses() {
        let f: super::FileDesired = toml::from_str(super::EXAMPLE).unwrap();
        assert_eq!(f.groups.len(), 1);
        assert_eq!(f.groups[0].members, ["alice"]);
        let a = f.users[0].attributes.as_ref().unwrap().to_store().unwrap();
        assert_eq!(a.posix.unwrap().uid_number, 10001);
    }
}
