//! `[demo.directory]` ([`RawDirectory`], defined with the rest of the format in `raw`):
//! the scenario's users live in an existing directory (issue 40).
//!
//! `portcullis demo` starts an OpenLDAP slapd with the users (as `scripts/slapd` makes
//! them: `user<n>` with password `password<n>`), the lab's delaying relay in front of it
//! (`crate::relay`: failed binds answered late, report 000's back office), and each server
//! checking passwords there through the relay: Portcullis through its upstream directory,
//! FreeRADIUS through `rlm_ldap`. `lab run` ignores the table (its target is already
//! configured against a directory of its own), like the rest of `[demo]`.

use std::time::Duration;

pub use super::raw::RawDirectory;
use super::raw::{RawScenario, parse_duration};
use super::{DriverSpec, Grant, GroupSpec, Principals, Scenario};
use crate::LabError;

/// `[demo.directory]` validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectorySpec {
    /// Users `user1` .. `user<users>`.
    pub users: usize,
    /// The relay's hold on failed binds.
    pub failed_bind_delay: Duration,
    /// ppolicy's pwdMaxFailure, when the directory locks accounts.
    pub ppolicy_max_failure: Option<u32>,
    /// The users' PBKDF2 iterations.
    pub pbkdf2_iterations: u32,
    /// The victim's number (`user<n>`), when its lock state is checked.
    pub victim: Option<usize>,
    /// Run the legitimate groups alone first.
    pub compare_alone: bool,
}

/// The directory's user names and passwords (`scripts/slapd`'s).
pub const USER_PREFIX: &str = "user";
/// See [`USER_PREFIX`].
pub const PASSWORD_PREFIX: &str = "password";
/// Most users the demo's directory is built with (their hashes are computed at start).
pub const MAX_USERS: usize = 10_000;

fn bad(msg: impl Into<String>) -> LabError {
    LabError::Scenario(format!("[demo.directory]: {}", msg.into()))
}

/// Validates `[demo.directory]` against the rest of the scenario; `None` without one.
pub fn spec(
    raw: &RawScenario,
    driver: &DriverSpec,
    principals: &Principals,
    groups: &[GroupSpec],
) -> Result<Option<DirectorySpec>, LabError> {
    let Some(d) = &raw.demo.directory else {
        return Ok(None);
    };
    match driver {
        DriverSpec::Radius(r) if !r.accounting && r.radsec.is_none() => {}
        DriverSpec::OAuth2 {
            grant: Grant::Password,
            ..
        } => {}
        _ => {
            return Err(bad(
                "needs the radius driver (PAP) or the oauth2 password grant",
            ));
        }
    }
    if groups.iter().any(|g| g.eap.is_some()) {
        return Err(bad("the groups log in with PAP, not 802.1X"));
    }
    match principals {
        Principals::Generated {
            prefix,
            secret_prefix,
            ..
        } if prefix == USER_PREFIX && secret_prefix == PASSWORD_PREFIX => {}
        _ => {
            return Err(bad(format!(
                "[principals] must be prefix = \"{USER_PREFIX}\", secret_prefix = \"{PASSWORD_PREFIX}\" (the directory's users)"
            )));
        }
    }
    let users = d.users.unwrap_or(principals.len());
    if !(1..=MAX_USERS).contains(&users) {
        return Err(bad(format!("users must be 1..={MAX_USERS}")));
    }
    for g in groups {
        let last = g.principal_offset + g.principal_count - 1;
        if g.principal_offset == 0 || last > users {
            return Err(bad(format!(
                "group {:?} uses user{}..user{last}; the directory has user1..user{users} (principal_offset starts at 1)",
                g.name, g.principal_offset
            )));
        }
    }
    let failed_bind_delay = parse_duration(d.failed_bind_delay.as_deref().unwrap_or("5s"))?;
    if failed_bind_delay > Duration::from_secs(60) {
        return Err(bad("failed_bind_delay must be at most 60s"));
    }
    let pbkdf2_iterations = d.pbkdf2_iterations.unwrap_or(1000);
    if !(1..=10_000_000).contains(&pbkdf2_iterations) {
        return Err(bad("pbkdf2_iterations must be 1..=10000000"));
    }
    if d.ppolicy_max_failure == Some(0) {
        return Err(bad(
            "ppolicy_max_failure must be at least 1 (leave it out for none)",
        ));
    }
    let victim = match &d.victim {
        None => None,
        Some(v) => Some(
            v.strip_prefix(USER_PREFIX)
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| (1..=users).contains(n))
                .ok_or_else(|| bad(format!("victim {v:?} is not one of user1..user{users}")))?,
        ),
    };
    Ok(Some(DirectorySpec {
        users,
        failed_bind_delay,
        ppolicy_max_failure: d.ppolicy_max_failure,
        pbkdf2_iterations,
        victim,
        compare_alone: d.compare_alone.unwrap_or(true),
    }))
}

impl Scenario {
    /// The same scenario with only the groups expected to succeed: the run without
    /// attackers that retention is measured against. `None` when no group would be left.
    pub fn legitimate_only(&self) -> Option<Scenario> {
        let keep: Vec<bool> = self.groups.iter().map(GroupSpec::expects_success).collect();
        if !keep.iter().any(|k| *k) {
            return None;
        }
        let mut s = self.clone();
        let mut flags = keep.iter();
        s.groups.retain(|_| flags.next().copied().unwrap_or(false));
        let mut flags = keep.iter();
        s.raw
            .groups
            .retain(|_| flags.next().copied().unwrap_or(false));
        s.raw.name = format!("{} (no attackers)", self.raw.name);
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(directory: &str, principals: &str) -> Result<Scenario, LabError> {
        Scenario::parse(
            &format!(
                r#"
name = "d"
[target]
url = "radius://127.0.0.1:1812"
metrics = "off"
[driver]
kind = "radius"
secret = "s"
[principals]
{principals}
[[group]]
name = "honest"
size = 2
principal_offset = 1
[[group]]
name = "guessers"
credentials = "wrong_secret"
size = 3
principal_offset = 3
[demo.directory]
{directory}
"#
            ),
            None,
        )
    }

    const USERS: &str = "prefix = \"user\"\nsecret_prefix = \"password\"\ncount = 10";

    #[test]
    fn a_directory_table_is_validated_with_its_defaults() {
        let s = scenario("victim = \"user3\"\nppolicy_max_failure = 5", USERS).unwrap();
        let d = s.demo.directory.clone().unwrap();
        assert_eq!(d.users, 10);
        assert_eq!(d.failed_bind_delay, Duration::from_secs(5));
        assert_eq!(d.ppolicy_max_failure, Some(5));
        assert_eq!(
            (d.pbkdf2_iterations, d.victim, d.compare_alone),
            (1000, Some(3), true)
        );
        let alone = s.legitimate_only().unwrap();
        let names: Vec<&str> = alone.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["honest"]);
        assert_eq!(alone.raw.groups.len(), 1);
    }

    #[test]
    fn what_the_directory_cannot_serve_is_refused() {
        let cases = [
            ("users = 4", USERS, "user3..user5"),
            ("victim = \"user11\"", USERS, "victim"),
            ("victim = \"bob\"", USERS, "victim"),
            ("failed_bind_delay = \"2m\"", USERS, "at most 60s"),
            ("ppolicy_max_failure = 0", USERS, "at least 1"),
            (
                "",
                "prefix = \"u\"\nsecret_prefix = \"password\"\ncount = 10",
                "[principals]",
            ),
            ("surprise = 1", USERS, "unknown field"),
        ];
        for (directory, principals, want) in cases {
            let e = scenario(directory, principals).unwrap_err().to_string();
            assert!(e.contains(want), "{directory}: {e}");
        }
    }
}
