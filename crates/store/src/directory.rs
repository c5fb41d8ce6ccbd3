//! The directory data of users and groups (issue 39, what an LDAP door shows): a user's
//! `entryUUID`, its inetOrgPerson names and mail ([`UserAttributes`]) and optional
//! posixAccount data ([`Posix`]); groups ([`GroupRecord`]: name, optional `gidNumber`,
//! description, members by username). Validation lives here, not in the backends, so
//! SQLite and PostgreSQL accept exactly the same inputs.
//!
//! Defaults are applied when the data is shown, never stored: a user without a `cn` shows
//! its username ([`UserAttributes::common_name`]), one without an `sn` its `cn`
//! ([`UserAttributes::surname`]), as inetOrgPerson requires both. Storing "not given"
//! keeps `apply` from planning changes nobody declared.

use std::fmt;

use crate::error::StoreError;
use crate::names::validate_name;

/// Smallest `uidNumber` / `gidNumber`: 0 (root) is refused, so a directory entry can
/// never map to the superuser or its group on the hosts that trust it.
pub const MIN_POSIX_ID: u32 = 1;
/// Largest `uidNumber` / `gidNumber`: 2^31 - 1, the largest every client (SSSD, nslcd,
/// 32-bit `id_t` handled as signed) takes as a positive number.
pub const MAX_POSIX_ID: u32 = 2_147_483_647;
/// Longest path (`homeDirectory`, `loginShell`), in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_LEN: usize = 4096;
/// Longest `mail`, in bytes (RFC 5321's path limit).
pub const MAX_MAIL_LEN: usize = 254;
/// Longest group description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Most members a group may have: a bound keeps one LDAP entry and one admin document
/// a reasonable size.
pub const MAX_MEMBERS: usize = 10_000;

/// A user's inetOrgPerson attributes beyond `uid` (the username) and `entryUUID`; every
/// one optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserAttributes {
    /// `cn`; shown as the username when absent.
    pub cn: Option<String>,
    /// `sn`; shown as the `cn` when absent.
    pub sn: Option<String>,
    /// `givenName`.
    pub given_name: Option<String>,
    /// `displayName`.
    pub display_name: Option<String>,
    /// `mail`.
    pub mail: Option<String>,
    /// posixAccount data, if the user has an account on hosts (SSSD, nslcd).
    pub posix: Option<Posix>,
}

/// posixAccount data: what `getent passwd` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posix {
    /// `uidNumber`, unique among users.
    pub uid_number: u32,
    /// `gidNumber`, the primary group.
    pub gid_number: u32,
    /// `homeDirectory`, an absolute path.
    pub home_directory: String,
    /// `loginShell`, an absolute path, if set.
    pub login_shell: Option<String>,
}

impl UserAttributes {
    /// Check every field; backends call this before writing.
    pub fn validate(&self) -> Result<(), StoreError> {
        for (what, value) in [
            ("cn", &self.cn),
            ("sn", &self.sn),
            ("givenName", &self.given_name),
            ("displayName", &self.display_name),
        ] {
            if let Some(v) = value {
                validate_name(what, v)?;
            }
        }
        if let Some(mail) = &self.mail {
            validate_mail(mail)?;
        }
        if let Some(posix) = &self.posix {
            posix.validate()?;
        }
        Ok(())
    }

    /// The `cn` shown for `username`: the stored one, else the username.
    pub fn common_name<'a>(&'a self, username: &'a str) -> &'a str {
        self.cn.as_deref().unwrap_or(username)
    }

    /// The `sn` shown for `username`: the stored one, else the `cn` shown.
    pub fn surname<'a>(&'a self, username: &'a str) -> &'a str {
        self.sn
            .as_deref()
            .unwrap_or_else(|| self.common_name(username))
    }
}

impl Posix {
    /// Check every field.
    pub fn validate(&self) -> Result<(), StoreError> {
        validate_posix_id("uidNumber", self.uid_number)?;
        validate_posix_id("gidNumber", self.gid_number)?;
        validate_absolute_path("homeDirectory", &self.home_directory)?;
        if let Some(shell) = &self.login_shell {
            validate_absolute_path("loginShell", shell)?;
        }
        Ok(())
    }
}

/// A group: `cn=NAME,ou=groups,BASE` (groupOfNames, and posixGroup when it has a
/// `gidNumber`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRecord {
    /// The group name (`cn`).
    pub name: String,
    /// `gidNumber`, unique among groups.
    pub gid_number: Option<u32>,
    /// `description`.
    pub description: Option<String>,
    /// Members by username, sorted, no repeats (each must be an existing user).
    pub members: Vec<String>,
    /// When it was created (unix seconds, supplied by the caller).
    pub created_at: i64,
}

impl GroupRecord {
    /// A group without members, `gidNumber` or description.
    pub fn new(name: impl Into<String>, created_at: i64) -> GroupRecord {
        GroupRecord {
            name: name.into(),
            gid_number: None,
            description: None,
            members: Vec::new(),
            created_at,
        }
    }

    /// Check every field (members' existence is the backend's: a foreign key).
    pub fn validate(&self) -> Result<(), StoreError> {
        validate_name("group name", &self.name)?;
        if let Some(gid) = self.gid_number {
            validate_posix_id("gidNumber", gid)?;
        }
        if let Some(d) = &self.description {
            validate_description(d)?;
        }
        if self.members.len() > MAX_MEMBERS {
            return Err(StoreError::invalid(format!(
                "a group has at most {MAX_MEMBERS} members"
            )));
        }
        for m in &self.members {
            validate_name("member username", m)?;
        }
        let mut sorted: Vec<&String> = self.members.iter().collect();
        sorted.sort();
        if sorted.windows(2).any(|w| w.first() == w.get(1)) {
            return Err(StoreError::invalid("group members must not repeat"));
        }
        Ok(())
    }
}

/// Check a `uidNumber` / `gidNumber`.
pub fn validate_posix_id(what: &str, id: u32) -> Result<(), StoreError> {
    if (MIN_POSIX_ID..=MAX_POSIX_ID).contains(&id) {
        Ok(())
    } else {
        Err(StoreError::invalid(format!(
            "{what} must be {MIN_POSIX_ID}-{MAX_POSIX_ID}, got {id}"
        )))
    }
}

/// Check a `homeDirectory` / `loginShell`: absolute, no control characters, no `.` or
/// `..` component, bounded.
pub fn validate_absolute_path(what: &str, path: &str) -> Result<(), StoreError> {
    if !path.starts_with('/') || path.len() > MAX_PATH_LEN {
        return Err(StoreError::invalid(format!(
            "{what} must be an absolute path (starting with /) of at most {MAX_PATH_LEN} bytes"
        )));
    }
    if path.chars().any(char::is_control) {
        return Err(StoreError::invalid(format!(
            "{what} must not contain control characters"
        )));
    }
    if path.split('/').any(|c| c == "." || c == "..") {
        return Err(StoreError::invalid(format!(
            "{what} must not contain . or .. components"
        )));
    }
    Ok(())
}

/// Check a `mail`: `local@domain`, both parts non-empty, no whitespace or control
/// characters, at most [`MAX_MAIL_LEN`] bytes. Deliverability is not ours to judge.
pub fn validate_mail(mail: &str) -> Result<(), StoreError> {
    let ok = mail.len() <= MAX_MAIL_LEN
        && !mail.chars().any(|c| c.is_whitespace() || c.is_control())
        && mail
            .rsplit_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && !domain.is_empty());
    if ok {
        Ok(())
    } else {
        Err(StoreError::invalid(format!(
            "mail must look like name@domain (no spaces, at most {MAX_MAIL_LEN} bytes)"
        )))
    }
}

/// Check a group description: 1-1024 characters, no control characters but newlines and
/// tabs.
pub fn validate_description(d: &str) -> Result<(), StoreError> {
    let chars = d.chars().count();
    if chars == 0 || chars > MAX_DESCRIPTION_CHARS {
        return Err(StoreError::invalid(format!(
            "description must be 1-{MAX_DESCRIPTION_CHARS} characters"
        )));
    }
    if d.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(StoreError::invalid(
            "description must not contain control characters",
        ));
    }
    Ok(())
}

/// An `entryUUID` (RFC 4530): a UUID in its lowercase hyphenated form.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryUuid([u8; 16]);

impl EntryUuid {
    /// A fresh random (version 4, RFC 9562) UUID.
    pub fn generate() -> Result<EntryUuid, StoreError> {
        let mut b = [0u8; 16];
        getrandom::fill(&mut b)
            .map_err(|e| StoreError::Backend(format!("no randomness for an entryUUID: {e}")))?;
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        Ok(EntryUuid(b))
    }

    /// Parse the hyphenated form (either case).
    pub fn parse(s: &str) -> Result<EntryUuid, StoreError> {
        let bad = || {
            StoreError::invalid(
                "entryUUID must be a UUID like 01234567-89ab-cdef-0123-456789abcdef",
            )
        };
        let groups: Vec<&str> = s.split('-').collect();
        let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
        if lens != [8, 4, 4, 4, 12] {
            return Err(bad());
        }
        let bytes = hex::decode(groups.concat()).map_err(|_| bad())?;
        let arr: [u8; 16] = bytes.try_into().map_err(|_| bad())?;
        Ok(EntryUuid(arr))
    }
}

impl fmt::Display for EntryUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = hex::encode(self.0);
        let part = |r: std::ops::Range<usize>| h.get(r).unwrap_or("");
        write!(
            f,
            "{}-{}-{}-{}-{}",
            part(0..8),
            part(8..12),
            part(12..16),
            part(16..20),
            part(20..32)
        )
    }
}

impl fmt::Debug for EntryUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests;
