//! Users' directory attributes on the command line (issue 39): the flags of `user add`
//! and `user set`, and the optional extra data `user import` reads beside each hash
//! (`key=value` columns after the hash in text files; names, mail and POSIX attributes
//! of a Keycloak realm export). Every value is checked by the store's rules before
//! anything is written.

use std::collections::HashMap;

use portcullis_store::{Posix, UserAttributes};
use serde::Deserialize;

/// The attribute flags of `user add` and `user set`.
#[derive(Debug, Default, clap::Args)]
pub struct AttrArgs {
    /// `cn` (shown as the username when not set).
    #[arg(long)]
    cn: Option<String>,
    /// `sn` (shown as the cn when not set).
    #[arg(long)]
    sn: Option<String>,
    /// `givenName`.
    #[arg(long)]
    given_name: Option<String>,
    /// `displayName`.
    #[arg(long)]
    display_name: Option<String>,
    /// `mail`.
    #[arg(long)]
    mail: Option<String>,
    /// POSIX `uidNumber` (1-2147483647, unique; with --gid-number and --home-directory).
    #[arg(long)]
    uid_number: Option<u32>,
    /// POSIX `gidNumber` of the primary group.
    #[arg(long)]
    gid_number: Option<u32>,
    /// POSIX `homeDirectory` (absolute path).
    #[arg(long)]
    home_directory: Option<String>,
    /// POSIX `loginShell` (absolute path).
    #[arg(long)]
    login_shell: Option<String>,
}

/// An attribute `user set --unset` clears.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Unset {
    /// `cn`.
    Cn,
    /// `sn`.
    Sn,
    /// `givenName`.
    GivenName,
    /// `displayName`.
    DisplayName,
    /// `mail`.
    Mail,
    /// `loginShell`.
    LoginShell,
    /// The whole POSIX account.
    Posix,
}

impl AttrArgs {
    /// Whether no flag was given.
    pub fn is_empty(&self) -> bool {
        self.cn.is_none()
            && self.sn.is_none()
            && self.given_name.is_none()
            && self.display_name.is_none()
            && self.mail.is_none()
            && self.uid_number.is_none()
            && self.gid_number.is_none()
            && self.home_directory.is_none()
            && self.login_shell.is_none()
    }

    /// Set the given attributes on `a`, then clear `unset`; checked by the store's rules.
    pub fn apply(self, a: &mut UserAttributes, unset: &[Unset]) -> Result<(), String> {
        for (slot, v) in [
            (&mut a.cn, self.cn),
            (&mut a.sn, self.sn),
            (&mut a.given_name, self.given_name),
            (&mut a.display_name, self.display_name),
            (&mut a.mail, self.mail),
        ] {
            if v.is_some() {
                *slot = v;
            }
        }
        set_posix(
            a,
            self.uid_number,
            self.gid_number,
            self.home_directory,
            self.login_shell,
        )?;
        for u in unset {
            match u {
                Unset::Cn => a.cn = None,
                Unset::Sn => a.sn = None,
                Unset::GivenName => a.given_name = None,
                Unset::DisplayName => a.display_name = None,
                Unset::Mail => a.mail = None,
                Unset::LoginShell => {
                    if let Some(p) = a.posix.as_mut() {
                        p.login_shell = None;
                    }
                }
                Unset::Posix => a.posix = None,
            }
        }
        a.validate().map_err(|e| e.to_string())
    }
}

/// Merge POSIX values into `a`'s account; a new account needs the three required ones.
fn set_posix(
    a: &mut UserAttributes,
    uid: Option<u32>,
    gid: Option<u32>,
    home: Option<String>,
    shell: Option<String>,
) -> Result<(), String> {
    if uid.is_none() && gid.is_none() && home.is_none() && shell.is_none() {
        return Ok(());
    }
    let p = match (a.posix.take(), uid, gid, home) {
        (Some(mut p), uid, gid, home) => {
            p.uid_number = uid.unwrap_or(p.uid_number);
            p.gid_number = gid.unwrap_or(p.gid_number);
            p.home_directory = home.unwrap_or(p.home_directory);
            p
        }
        (None, Some(uid_number), Some(gid_number), Some(home_directory)) => Posix {
            uid_number,
            gid_number,
            home_directory,
            login_shell: None,
        },
        (None, ..) => {
            return Err(
                "a POSIX account needs uid_number, gid_number and home_directory \
                 (--uid-number, --gid-number, --home-directory)"
                    .into(),
            );
        }
    };
    a.posix = Some(Posix {
        login_shell: shell.or(p.login_shell.clone()),
        ..p
    });
    Ok(())
}

/// Attributes from the `key=value` columns after a text line's hash.
pub fn from_columns<'a>(columns: impl Iterator<Item = &'a str>) -> Result<UserAttributes, String> {
    let mut args = AttrArgs::default();
    for col in columns {
        let (k, v) = col.split_once('=').ok_or_else(|| {
            "expected key=value after the hash, got a column without =".to_owned()
        })?;
        let v = v.to_owned();
        let number = |v: &str| {
            v.parse::<u32>()
                .map_err(|_| format!("{k} must be a number 1-2147483647"))
        };
        match k {
            "cn" => args.cn = Some(v),
            "sn" => args.sn = Some(v),
            "given_name" | "givenName" => args.given_name = Some(v),
            "display_name" | "displayName" => args.display_name = Some(v),
            "mail" => args.mail = Some(v),
            "uid_number" | "uidNumber" => args.uid_number = Some(number(&v)?),
            "gid_number" | "gidNumber" => args.gid_number = Some(number(&v)?),
            "home_directory" | "homeDirectory" => args.home_directory = Some(v),
            "login_shell" | "loginShell" => args.login_shell = Some(v),
            other => {
                let other: String = other.chars().take(40).collect();
                return Err(format!(
                    "unknown column {other:?} (expected cn, sn, given_name, display_name, \
                     mail, uid_number, gid_number, home_directory, login_shell)"
                ));
            }
        }
    }
    let mut a = UserAttributes::default();
    args.apply(&mut a, &[])?;
    Ok(a)
}

/// A text import split in two: the `username<TAB>hash` lines the hash reader takes (same
/// line numbers; a line whose columns are refused is blanked), and per line number the
/// attributes of its extra columns or why they were refused.
pub fn split_text(input: &[u8]) -> (Vec<u8>, HashMap<usize, Result<UserAttributes, String>>) {
    let mut lines = Vec::with_capacity(input.len());
    let mut extra = HashMap::new();
    for (i, raw) in input.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            lines.push(b'\n');
        }
        let line = std::str::from_utf8(raw).ok();
        let mut cols = line.map(|l| l.trim_end_matches('\r').split('\t'));
        let head = cols.as_mut().and_then(|c| Some((c.next()?, c.next()?)));
        let rest: Vec<&str> = cols.map(|c| c.collect()).unwrap_or_default();
        match head {
            Some((user, hash)) if !rest.is_empty() && !user.trim_start().starts_with('#') => {
                let attrs = from_columns(rest.into_iter());
                if attrs.is_ok() {
                    lines.extend_from_slice(format!("{user}\t{hash}").as_bytes());
                }
                extra.insert(i + 1, attrs);
            }
            _ => lines.extend_from_slice(raw),
        }
    }
    (lines, extra)
}

#[derive(Deserialize)]
struct Realm {
    #[serde(default)]
    users: Vec<RealmUser>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RealmUser {
    username: Option<String>,
    first_name: Option<String>,
    last_name: Option<String>,
    email: Option<String>,
    #[serde(default)]
    attributes: HashMap<String, Vec<String>>,
}

/// Per username, the attributes of a Keycloak realm export's users: `firstName` as
/// givenName, `lastName` as sn, both as cn and displayName, `email` as mail, and the
/// user attributes `uidNumber`, `gidNumber`, `homeDirectory`, `loginShell` as the POSIX
/// account. An export that does not parse gives none (the hash reader reports it).
pub fn from_keycloak(input: &[u8]) -> HashMap<String, Result<UserAttributes, String>> {
    let Ok(realm) = serde_json::from_slice::<Realm>(input) else {
        return HashMap::new();
    };
    realm
        .users
        .into_iter()
        .filter_map(|u| {
            let name = u.username.clone()?;
            Some((name, keycloak_attributes(u)))
        })
        .collect()
}

fn keycloak_attributes(u: RealmUser) -> Result<UserAttributes, String> {
    let full = match (&u.first_name, &u.last_name) {
        (Some(f), Some(l)) => Some(format!("{f} {l}")),
        _ => None,
    };
    let first = |k: &str| u.attributes.get(k).and_then(|v| v.first()).cloned();
    let number = |k: &str| {
        first(k)
            .map(|v| {
                v.parse::<u32>()
                    .map_err(|_| format!("attribute {k} must be a number 1-2147483647"))
            })
            .transpose()
    };
    let args = AttrArgs {
        cn: full.clone(),
        sn: u.last_name.clone(),
        given_name: u.first_name.clone(),
        display_name: full,
        mail: u.email.clone(),
        uid_number: number("uidNumber")?,
        gid_number: number("gidNumber")?,
        home_directory: first("homeDirectory"),
        login_shell: first("loginShell"),
    };
    let mut a = UserAttributes::default();
    args.apply(&mut a, &[])?;
    Ok(a)
}
