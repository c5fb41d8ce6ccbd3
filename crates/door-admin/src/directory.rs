//! Users' directory attributes as the admin API, `apply` and the CLI's JSON carry them
//! (issue 39): names, mail and an optional POSIX account, all optional, converted to and
//! from the store's [`UserAttributes`] and checked by its rules (refusals name the JSON
//! field). A user's `cn` is shown as its username when not given, and its `sn` as its
//! `cn`: the store keeps what was given, and `User::cn`/`sn` in the API show the
//! defaults ([`UserAttributes::common_name`]).

use portcullis_store::{Posix, UserAttributes};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A user's directory attributes (inetOrgPerson, posixAccount).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Attributes {
    /// `cn` (shown as the username when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 255)]
    pub cn: Option<String>,
    /// `sn` (shown as the `cn` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 255)]
    pub sn: Option<String>,
    /// `givenName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 255)]
    pub given_name: Option<String>,
    /// `displayName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 255)]
    pub display_name: Option<String>,
    /// `mail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 254)]
    pub mail: Option<String>,
    /// A POSIX account (posixAccount), for hosts that resolve users from the directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub posix: Option<PosixAccount>,
}

/// posixAccount data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PosixAccount {
    /// `uidNumber`, 1-2147483647, unique among users.
    #[schema(minimum = 1, maximum = 2147483647)]
    pub uid_number: u32,
    /// `gidNumber` of the primary group, 1-2147483647.
    #[schema(minimum = 1, maximum = 2147483647)]
    pub gid_number: u32,
    /// `homeDirectory`, an absolute path.
    pub home_directory: String,
    /// `loginShell`, an absolute path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login_shell: Option<String>,
}

impl Attributes {
    /// As the store keeps them, checked: the error is the store's message.
    pub fn to_store(&self) -> Result<UserAttributes, String> {
        let a = UserAttributes {
            cn: self.cn.clone(),
            sn: self.sn.clone(),
            given_name: self.given_name.clone(),
            display_name: self.display_name.clone(),
            mail: self.mail.clone(),
            posix: self.posix.as_ref().map(|p| Posix {
                uid_number: p.uid_number,
                gid_number: p.gid_number,
                home_directory: p.home_directory.clone(),
                login_shell: p.login_shell.clone(),
            }),
        };
        a.validate().map_err(|e| e.to_string())?;
        Ok(a)
    }

    /// From what the store keeps.
    pub fn from_store(a: &UserAttributes) -> Attributes {
        Attributes {
            cn: a.cn.clone(),
            sn: a.sn.clone(),
            given_name: a.given_name.clone(),
            display_name: a.display_name.clone(),
            mail: a.mail.clone(),
            posix: a.posix.as_ref().map(|p| PosixAccount {
                uid_number: p.uid_number,
                gid_number: p.gid_number,
                home_directory: p.home_directory.clone(),
                login_shell: p.login_shell.clone(),
            }),
        }
    }
}
