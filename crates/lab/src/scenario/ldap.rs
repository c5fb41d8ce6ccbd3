//! The LDAP part of a scenario: `[driver.ldap]` ([`RawLdap`], defined with the rest of the
//! format in `raw`) validated into an [`LdapSpec`], and the `ldap://` / `ldaps://` target.
//!
//! An application checks a password over LDAP in one of two ways, and the driver makes
//! both: it binds with a DN made from the user name (`user_dn`), or it binds as its service
//! account, searches for the user's entry (`filter`) and binds with the DN it found. After
//! the bind it reads what applications read (the user's entry, optionally its groups).

use std::path::PathBuf;

use super::raw::{RawDriver, RawLdap};
use crate::LabError;
use crate::safety;

/// The placeholder for the user name in `user_dn`, `filter` and `group_filter`.
pub const USER: &str = "{user}";
/// The placeholder for the bound user's DN in `group_filter`.
pub const DN: &str = "{dn}";

/// How a user's DN is found.
#[derive(Clone, PartialEq, Eq)]
pub enum UserBind {
    /// The DN is the template with the user name in it.
    Dn(String),
    /// Bind as the service account, search, bind as the entry found.
    Search {
        /// The service account's DN.
        service_dn: String,
        /// Its password.
        service_password: ServicePassword,
        /// The filter template.
        filter: String,
    },
}

impl std::fmt::Debug for UserBind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UserBind::Dn(t) => f.debug_tuple("Dn").field(t).finish(),
            UserBind::Search {
                service_dn, filter, ..
            } => f
                .debug_struct("Search")
                .field("service_dn", service_dn)
                .field("service_password", &"<redacted>")
                .field("filter", filter)
                .finish(),
        }
    }
}

/// Where the service account's password comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum ServicePassword {
    /// Written in the scenario.
    Given(String),
    /// This environment variable, read when the run starts (so a scenario that names one
    /// can be listed and checked without it).
    Env(String),
}

impl ServicePassword {
    /// The password (an environment variable must be set and not empty).
    pub fn resolve(&self) -> Result<String, LabError> {
        let p = match self {
            ServicePassword::Given(p) => p.clone(),
            ServicePassword::Env(var) => std::env::var(var).map_err(|_| {
                bad(format!(
                    "driver.ldap.service_password_env: ${var} is not set"
                ))
            })?,
        };
        if p.is_empty() {
            // An empty password makes a simple bind anonymous (RFC 4513 §5.1.2).
            return Err(bad("driver.ldap: the service password must not be empty"));
        }
        Ok(p)
    }
}

/// The LDAP driver's validated settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdapSpec {
    /// `ldaps://`: TLS from the first octet.
    pub ldaps: bool,
    /// StartTLS before the first operation.
    pub starttls: bool,
    /// Base DN.
    pub base_dn: String,
    /// How the user's DN is found.
    pub bind: UserBind,
    /// Read the user's entry after the bind.
    pub read_entry: bool,
    /// Attributes asked for.
    pub attributes: Vec<String>,
    /// The group search's filter template, if any.
    pub group_filter: Option<String>,
}

impl LdapSpec {
    /// Whether connections use TLS (LDAPS or StartTLS).
    pub fn tls(&self) -> bool {
        self.ldaps || self.starttls
    }

    /// A one-line summary for reports.
    pub fn summary(&self) -> String {
        let how = match &self.bind {
            UserBind::Dn(_) => "bind by DN",
            UserBind::Search { .. } => "search-then-bind",
        };
        let over = match (self.ldaps, self.starttls) {
            (true, _) => " over ldaps",
            (false, true) => " with StartTLS",
            _ => "",
        };
        let after = match (self.read_entry, self.group_filter.is_some()) {
            (true, true) => ", then entry and groups",
            (true, false) => ", then entry",
            (false, true) => ", then groups",
            (false, false) => "",
        };
        format!("ldap {how}{after}{over}")
    }
}

fn bad(msg: impl Into<String>) -> LabError {
    LabError::Scenario(msg.into())
}

/// Split `ldap://host[:port]` (default 389) or `ldaps://host[:port]` (default 636): whether
/// it is LDAPS, host and port.
pub fn parse_url(url: &str) -> Result<(bool, String, u16), LabError> {
    if url.starts_with("ldaps://") {
        safety::parse_url(url, "ldaps", 636).map(|(h, p)| (true, h, p))
    } else if url.starts_with("ldap://") {
        safety::parse_url(url, "ldap", 389).map(|(h, p)| (false, h, p))
    } else {
        Err(bad(format!(
            "with kind = \"ldap\", target url {url:?} must start with ldap:// or ldaps://"
        )))
    }
}

/// A DN or filter template: non-empty, at most 1,024 octets.
fn template(key: &str, v: &str, needs_user: bool) -> Result<String, LabError> {
    if v.is_empty() || v.len() > 1024 {
        return Err(bad(format!("driver.ldap.{key} must be 1-1024 octets")));
    }
    if needs_user && !v.contains(USER) {
        return Err(bad(format!(
            "driver.ldap.{key} must contain {USER} (where the user name goes)"
        )));
    }
    Ok(v.to_owned())
}

/// Validate `[driver.ldap]` for an `ldap://` (`ldaps` false) or `ldaps://` target.
pub fn spec(raw: Option<&RawLdap>, ldaps: bool) -> Result<LdapSpec, LabError> {
    let raw = raw.ok_or_else(|| bad("kind = \"ldap\" needs a [driver.ldap] table"))?;
    let base_dn = template("base_dn", &raw.base_dn, false)?;
    let starttls = raw.starttls.unwrap_or(false);
    if starttls && ldaps {
        return Err(bad(
            "driver.ldap.starttls is for ldap:// targets (ldaps:// is TLS already)",
        ));
    }
    let search = raw.service_dn.is_some()
        || raw.service_password.is_some()
        || raw.service_password_env.is_some()
        || raw.filter.is_some();
    let bind = match (&raw.user_dn, search) {
        (Some(t), false) => UserBind::Dn(template("user_dn", t, true)?),
        (None, true) => {
            let service_dn = raw
                .service_dn
                .as_deref()
                .ok_or_else(|| bad("driver.ldap: search-then-bind needs service_dn"))?;
            let service_password = match (&raw.service_password, &raw.service_password_env) {
                (Some(p), None) if p.is_empty() => {
                    // An empty password makes a simple bind anonymous (RFC 4513 §5.1.2).
                    return Err(bad("driver.ldap: the service password must not be empty"));
                }
                (Some(p), None) => ServicePassword::Given(p.clone()),
                (None, Some(var)) => ServicePassword::Env(var.clone()),
                (None, None) => {
                    return Err(bad(
                        "driver.ldap: search-then-bind needs service_password or \
                         service_password_env",
                    ));
                }
                (Some(_), Some(_)) => {
                    return Err(bad(
                        "driver.ldap: give service_password or service_password_env, not both",
                    ));
                }
            };
            UserBind::Search {
                service_dn: template("service_dn", service_dn, false)?,
                service_password,
                filter: template(
                    "filter",
                    raw.filter.as_deref().unwrap_or("(uid={user})"),
                    true,
                )?,
            }
        }
        (Some(_), true) => {
            return Err(bad(
                "driver.ldap: give user_dn (bind by DN) or service_dn/filter (search-then-bind), \
                 not both",
            ));
        }
        (None, false) => {
            return Err(bad(
                "driver.ldap needs user_dn (bind by DN) or service_dn, service_password and \
                 filter (search-then-bind)",
            ));
        }
    };
    let attributes = raw
        .attributes
        .clone()
        .unwrap_or_else(|| vec!["cn".into(), "mail".into(), "memberOf".into()]);
    if attributes.iter().any(|a| a.is_empty() || a.len() > 256) || attributes.len() > 64 {
        return Err(bad(
            "driver.ldap.attributes: at most 64 names of 1-256 octets",
        ));
    }
    let group_filter = match &raw.group_filter {
        Some(f) => {
            let f = template("group_filter", f, false)?;
            if !f.contains(USER) && !f.contains(DN) {
                return Err(bad(format!(
                    "driver.ldap.group_filter must contain {DN} or {USER}"
                )));
            }
            Some(f)
        }
        None => None,
    };
    Ok(LdapSpec {
        ldaps,
        starttls,
        base_dn,
        bind,
        read_entry: raw.read_entry.unwrap_or(true),
        attributes,
        group_filter,
    })
}

/// Refuse the other drivers' keys with `kind = "ldap"`.
pub fn refuse_other_keys(d: &RawDriver) -> Result<(), LabError> {
    if d.grant.is_some()
        || d.client_auth.is_some()
        || d.private_key.is_some()
        || d.scope.is_some()
        || d.client_id.is_some()
        || d.client_secret.is_some()
        || d.path.is_some()
        || d.radsec.is_some()
        || d.radius_1_1.is_some()
        || d.accounting_on.is_some()
    {
        return Err(bad(
            "driver.grant, client_auth, private_key, scope, client_id, client_secret, path, \
             radsec, radius_1_1 and accounting_on are not LDAP settings",
        ));
    }
    Ok(())
}

/// The `[target] tls` of an LDAP target that uses TLS (LDAPS or StartTLS); `None` without.
pub fn target_tls(
    raw: Option<&crate::tls::RawTls>,
    spec: &LdapSpec,
    host: &str,
    resolve: &dyn Fn(&str) -> PathBuf,
) -> Result<Option<crate::tls::TlsSpec>, LabError> {
    match (raw, spec.tls()) {
        (Some(t), true) => crate::tls::TlsSpec::from_raw(t, host, resolve).map(Some),
        (None, true) => {
            crate::tls::TlsSpec::from_raw(&crate::tls::RawTls::default(), host, resolve).map(Some)
        }
        (Some(_), false) => Err(bad(
            "target.tls needs an ldaps:// target or driver.ldap.starttls = true",
        )),
        (None, false) => Ok(None),
    }
}
