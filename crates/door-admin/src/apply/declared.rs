//! The declared document with its secrets resolved: what `portcullis apply FILE` reads
//! out of the file and its secret files or variables, and what `portcullis apply FILE
//! --server URL` sends as the body of `POST /admin/v1/apply`. [`Declared::check`] turns
//! it into a checked [`Desired`], the one validation both paths share; its errors name
//! the field as a JSON pointer and never quote a secret.

use portcullis_store::Grant;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use zeroize::{Zeroize, Zeroizing};

use super::{Desired, DesiredAuth, DesiredClient, DesiredNas};
use crate::directory::Attributes;
use portcullis_store::{GroupRecord, UserRecord};

/// A declared document that fails validation: which field, and why.
#[derive(Debug)]
pub struct DeclaredError {
    /// RFC 6901 pointer into the document (e.g. `/clients/0/grants`).
    pub pointer: String,
    /// What is wrong, naming the record (never a secret).
    pub message: String,
}

/// Clients, users and NAS to hold, secrets included (they travel only over the admin
/// listener, like a create's secret).
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Declared {
    /// Clients.
    pub clients: Vec<DeclaredClient>,
    /// Users.
    pub users: Vec<DeclaredUser>,
    /// NAS.
    pub nas: Vec<DeclaredNas>,
    /// Groups of users (issue 39).
    pub groups: Vec<DeclaredGroup>,
}

/// A declared group: its members are declared or existing users.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeclaredGroup {
    /// The group name.
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    /// `gidNumber` (1-2147483647, unique among groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gid_number: Option<u32>,
    /// `description`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Members by username (default none).
    #[serde(default)]
    pub members: Vec<String>,
}

/// A declared client with exactly one way to authenticate.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeclaredClient {
    /// The client id.
    #[schema(min_length = 1, max_length = 255)]
    pub id: String,
    /// Grant types (default `["client_credentials"]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grants: Option<Vec<String>>,
    /// Scopes (default none).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Token lifetime in seconds (default 3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_lifetime: Option<u32>,
    /// The secret, stored hashed under the server's policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 4096)]
    pub secret: Option<String>,
    /// A stored hash of the secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_hash: Option<String>,
    /// `private_key_jwt`: its public keys (PEM or JWKS text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_jwt: Option<String>,
    /// `tls_client_auth`: the certificate's subject DN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_client_auth: Option<String>,
    /// `self_signed_tls_client_auth`: its PEM certificates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_signed_tls_client_auth: Option<String>,
}

impl Drop for DeclaredClient {
    fn drop(&mut self) {
        self.secret.zeroize();
    }
}

/// A declared user (a password hash only, never a password).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeclaredUser {
    /// The username.
    #[schema(min_length = 1, max_length = 255)]
    pub username: String,
    /// The password hash.
    pub password_hash: String,
    /// Disabled users are refused like unknown ones (default false).
    #[serde(default)]
    pub disabled: bool,
    /// Directory attributes (default none: attributes set elsewhere are cleared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Attributes>,
}

/// A declared NAS.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeclaredNas {
    /// Its name.
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
    /// The addresses it sends from (CIDR or one address).
    pub cidr: String,
    /// The shared secret (stored sealed).
    #[schema(min_length = 1, max_length = 128)]
    pub secret: String,
    /// Discard its Access-Requests without a valid Message-Authenticator (default true).
    #[serde(default = "super::yes")]
    pub require_message_authenticator: bool,
}

impl Drop for DeclaredNas {
    fn drop(&mut self) {
        self.secret.zeroize();
    }
}

fn fail(pointer: String, message: String) -> DeclaredError {
    DeclaredError { pointer, message }
}

impl Declared {
    /// Check every record and that no key is declared twice.
    pub fn check(mut self) -> Result<Desired, DeclaredError> {
        let mut clients = Vec::with_capacity(self.clients.len());
        for (i, c) in self.clients.iter_mut().enumerate() {
            clients.push(client(i, c)?);
        }
        let mut users = Vec::with_capacity(self.users.len());
        for (i, u) in self.users.iter_mut().enumerate() {
            let at = format!("/users/{i}");
            let what = format!("user {:?}", u.username);
            let mut user = UserRecord::new(
                std::mem::take(&mut u.username),
                std::mem::take(&mut u.password_hash),
                0,
            )
            .map_err(|e| fail(at.clone(), format!("{what}: {e}")))?;
            user.disabled = u.disabled;
            if let Some(a) = &u.attributes {
                user.attributes = a
                    .to_store()
                    .map_err(|e| fail(format!("{at}/attributes"), format!("{what}: {e}")))?;
            }
            user.validate()
                .map_err(|e| fail(at, format!("{what}: {e}")))?;
            users.push(user);
        }
        let mut nas = Vec::with_capacity(self.nas.len());
        for (i, n) in self.nas.iter_mut().enumerate() {
            let what = format!("NAS {:?}", n.name);
            let at = |f: &str| format!("/nas/{i}/{f}");
            portcullis_store::nas::validate_nas_name(&n.name)
                .map_err(|e| fail(at("name"), format!("{what}: {e}")))?;
            let cidr = portcullis_store::nas::parse_nas_cidr(&n.cidr)
                .map_err(|e| fail(at("cidr"), format!("{what}: {e}")))?;
            let secret = Zeroizing::new(std::mem::take(&mut n.secret).into_bytes());
            portcullis_store::nas::validate_nas_secret(&secret)
                .map_err(|e| fail(at("secret"), format!("{what}: {e}")))?;
            nas.push(DesiredNas {
                name: std::mem::take(&mut n.name),
                cidr,
                secret,
                require_message_authenticator: n.require_message_authenticator,
            });
        }
        let mut groups = Vec::with_capacity(self.groups.len());
        for (i, g) in self.groups.iter_mut().enumerate() {
            let mut group = GroupRecord {
                name: std::mem::take(&mut g.name),
                gid_number: g.gid_number,
                description: g.description.take(),
                members: std::mem::take(&mut g.members),
                created_at: 0,
            };
            group.validate().map_err(|e| {
                fail(
                    format!("/groups/{i}"),
                    format!("group {:?}: {e}", group.name),
                )
            })?;
            group.members.sort();
            groups.push(group);
        }
        let d = Desired {
            clients,
            users,
            nas,
            groups,
        };
        d.check_unique()
            .map_err(|(pointer, e)| fail(pointer, e.0))?;
        Ok(d)
    }
}

fn client(i: usize, c: &mut DeclaredClient) -> Result<DesiredClient, DeclaredError> {
    let what = format!("client {:?}", c.id);
    let at = |f: &str| format!("/clients/{i}/{f}");
    portcullis_store::record::validate_name("client id", &c.id)
        .map_err(|e| fail(at("id"), format!("{what}: {e}")))?;
    let grants = match &c.grants {
        None => vec![Grant::ClientCredentials],
        Some(g) => g
            .iter()
            .map(|s| s.parse::<Grant>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| fail(at("grants"), format!("{what}: {e}")))?,
    };
    let token_lifetime = c
        .token_lifetime
        .unwrap_or(portcullis_store::DEFAULT_TOKEN_LIFETIME);
    portcullis_store::record::validate_settings(&grants, &c.scopes, token_lifetime)
        .map_err(|e| fail(format!("/clients/{i}"), format!("{what}: {e}")))?;
    let keyed = |method: &str, material: &str| {
        portcullis_oauth::client_auth::registration(method, material)
            .map(DesiredAuth::Keyed)
            .map_err(|e| fail(at(method), format!("{what}: {e}")))
    };
    let mut ways = Vec::new();
    if let Some(s) = c.secret.take() {
        let s = Zeroizing::new(s.into_bytes());
        if s.is_empty() || s.len() > super::MAX_SECRET_BYTES || s.contains(&b'\n') {
            return Err(fail(
                at("secret"),
                format!(
                    "{what}: expected one non-empty line of at most {} bytes",
                    super::MAX_SECRET_BYTES
                ),
            ));
        }
        ways.push(DesiredAuth::Secret(s));
    }
    if let Some(h) = &c.secret_hash {
        portcullis_store::record::validate_hash(h)
            .map_err(|e| fail(at("secret_hash"), format!("{what}: {e}")))?;
        ways.push(DesiredAuth::SecretHash(h.clone()));
    }
    if let Some(m) = &c.private_key_jwt {
        ways.push(keyed("private_key_jwt", m)?);
    }
    if let Some(dn) = &c.tls_client_auth {
        ways.push(keyed("tls_client_auth", dn)?);
    }
    if let Some(m) = &c.self_signed_tls_client_auth {
        ways.push(keyed("self_signed_tls_client_auth", m)?);
    }
    if ways.len() != 1 {
        return Err(fail(
            at("secret"),
            format!(
                "{what}: give exactly one of secret_file, secret_env, secret_hash, \
                 private_key_jwt, tls_client_auth, self_signed_tls_client_auth"
            ),
        ));
    }
    Ok(DesiredClient {
        id: std::mem::take(&mut c.id),
        auth: ways.remove(0),
        grants,
        scopes: std::mem::take(&mut c.scopes),
        token_lifetime,
    })
}
