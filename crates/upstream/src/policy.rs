//! The directory's own lockout policy, read for `doctor`: OpenLDAP ppolicy's
//! `pwdMaxFailure`/`pwdLockout`, or Active Directory's domain `lockoutThreshold`.
//!
//! This module owns that probe. It reads what the configured identity may read (the
//! service account in search mode, anonymous otherwise); a policy it cannot read is
//! reported as not found, so `doctor` can say "could not check" rather than "safe".

use ldap3_proto::proto::{LdapFilter, LdapResultCode, LdapSearchScope};

use crate::config::Mode;
use crate::conn::{Connection, Found};
use crate::directory::Directory;
use crate::outcome::{Unavailable, UnavailableKind};

/// Where the policy was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyKind {
    /// An OpenLDAP ppolicy entry (objectClass pwdPolicy).
    OpenLdapPpolicy,
    /// Active Directory's domain object.
    ActiveDirectory,
    /// Nothing readable.
    NotFound,
}

/// The lockout policy the directory applies to failed binds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DirectoryPolicy {
    /// The server that answered.
    pub server: String,
    /// Where the policy came from.
    pub kind: PolicyKind,
    /// Failed binds that lock an account, when the directory locks at all (the lowest of
    /// several ppolicy entries).
    pub lockout_threshold: Option<u32>,
    /// The entry it was read from.
    pub dn: Option<String>,
}

impl DirectoryPolicy {
    /// What `doctor` should say when the per-user failure budget for this directory's
    /// users is `budget` failed guesses: a warning when guesses let through could reach the
    /// directory's lockout threshold (then guesses through Portcullis could lock the user
    /// out of the directory), or when the policy could not be read.
    pub fn budget_warning(&self, budget: u32) -> Option<String> {
        match (self.kind, self.lockout_threshold) {
            (PolicyKind::NotFound, _) => Some(format!(
                "the lockout policy of the directory at {} could not be read: check that the \
                 per-user failure budget ({budget}) stays below its lockout threshold",
                self.server
            )),
            (_, Some(threshold)) if budget >= threshold => Some(format!(
                "the per-user failure budget ({budget}) reaches the directory's lockout \
                 threshold ({threshold}, {}): guesses through Portcullis could lock users out \
                 of the directory; set the budget below {threshold}",
                self.dn.as_deref().unwrap_or("?")
            )),
            _ => None,
        }
    }
}

impl Directory {
    /// Reads the directory's lockout policy from the first server that answers.
    pub async fn directory_policy(&self) -> Result<DirectoryPolicy, Unavailable> {
        let mut last = Unavailable::new(UnavailableKind::AllServersDown, "no server configured");
        for (server, label) in &self.servers {
            match self.policy_on(server, label).await {
                Ok(policy) => return Ok(policy),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    async fn policy_on(
        &self,
        server: &crate::server::Server,
        label: &str,
    ) -> Result<DirectoryPolicy, Unavailable> {
        let conn_err =
            |e: crate::conn::ConnError| Unavailable::new(UnavailableKind::Connect, e.to_string());
        let mut conn = server.connect().await.map_err(conn_err)?.conn;
        let mut bases = Vec::new();
        if let Mode::Search {
            base,
            service_dn,
            service_password,
            ..
        } = &self.cfg.mode
        {
            let reply = conn
                .bind(service_dn, service_password, self.cfg.bind_timeout)
                .await
                .map_err(conn_err)?;
            if reply.code != LdapResultCode::Success {
                return Err(Unavailable::new(
                    UnavailableKind::ServiceAccount,
                    format!("the service account's bind failed: {:?}", reply.code),
                ));
            }
            bases.push(base.clone());
        }
        let root = self
            .read(
                &mut conn,
                "",
                LdapSearchScope::Base,
                present("objectClass"),
                &["namingContexts", "defaultNamingContext"],
            )
            .await?;
        let root_attrs = root
            .entries
            .into_iter()
            .next()
            .map(|(_, a)| a)
            .unwrap_or_default();
        if let Some(domain) = first_value(&root_attrs, "defaultNamingContext") {
            let found = self
                .read(
                    &mut conn,
                    &domain,
                    LdapSearchScope::Base,
                    present("objectClass"),
                    &["lockoutThreshold"],
                )
                .await?;
            let attrs = found
                .entries
                .into_iter()
                .next()
                .map(|(_, a)| a)
                .unwrap_or_default();
            let threshold =
                first_value(&attrs, "lockoutThreshold").and_then(|v| v.parse::<u32>().ok());
            return Ok(DirectoryPolicy {
                server: label.to_owned(),
                kind: if threshold.is_some() {
                    PolicyKind::ActiveDirectory
                } else {
                    PolicyKind::NotFound
                },
                // AD: 0 means accounts are never locked.
                lockout_threshold: threshold.filter(|t| *t > 0),
                dn: Some(domain),
            });
        }
        bases.extend(values(&root_attrs, "namingContexts"));
        self.ppolicy(&mut conn, label, &bases).await
    }

    async fn ppolicy(
        &self,
        conn: &mut Connection,
        label: &str,
        bases: &[String],
    ) -> Result<DirectoryPolicy, Unavailable> {
        let mut best: Option<(u32, String)> = None;
        let mut seen: Option<String> = None;
        for base in bases {
            let found = self
                .read(
                    conn,
                    base,
                    LdapSearchScope::Subtree,
                    LdapFilter::Equality("objectClass".into(), "pwdPolicy".into()),
                    &["pwdMaxFailure", "pwdLockout"],
                )
                .await?;
            for (dn, attrs) in found.entries {
                seen.get_or_insert_with(|| dn.clone());
                let locks = first_value(&attrs, "pwdLockout")
                    .is_some_and(|v| v.eq_ignore_ascii_case("TRUE"));
                let max = first_value(&attrs, "pwdMaxFailure").and_then(|v| v.parse::<u32>().ok());
                if let (true, Some(max)) = (locks, max.filter(|m| *m > 0))
                    && best.as_ref().is_none_or(|(b, _)| max < *b)
                {
                    best = Some((max, dn));
                }
            }
        }
        let found_any = seen.is_some();
        Ok(DirectoryPolicy {
            server: label.to_owned(),
            kind: if found_any {
                PolicyKind::OpenLdapPpolicy
            } else {
                PolicyKind::NotFound
            },
            lockout_threshold: best.as_ref().map(|(m, _)| *m),
            dn: best.map(|(_, dn)| dn).or(seen),
        })
    }

    async fn read(
        &self,
        conn: &mut Connection,
        base: &str,
        scope: LdapSearchScope,
        filter: LdapFilter,
        attrs: &[&str],
    ) -> Result<Found, Unavailable> {
        conn.search(base, scope, filter, attrs, 20, self.cfg.search_timeout)
            .await
            .map_err(|e| Unavailable::new(UnavailableKind::Connect, e.to_string()))
    }
}

fn present(attr: &str) -> LdapFilter {
    LdapFilter::Present(attr.to_owned())
}

fn values(attrs: &[(String, Vec<Vec<u8>>)], name: &str) -> Vec<String> {
    attrs
        .iter()
        .filter(|(a, _)| a.eq_ignore_ascii_case(name))
        .flat_map(|(_, v)| v.iter().map(|b| String::from_utf8_lossy(b).into_owned()))
        .collect()
}

fn first_value(attrs: &[(String, Vec<Vec<u8>>)], name: &str) -> Option<String> {
    values(attrs, name).into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(kind: PolicyKind, threshold: Option<u32>) -> DirectoryPolicy {
        DirectoryPolicy {
            server: "ldaps://dc1".into(),
            kind,
            lockout_threshold: threshold,
            dn: Some("cn=default,ou=policies,dc=example,dc=org".into()),
        }
    }

    #[test]
    fn the_budget_must_stay_below_the_lockout_threshold() {
        let p = policy(PolicyKind::OpenLdapPpolicy, Some(5));
        assert_eq!(p.budget_warning(4), None);
        let w = p.budget_warning(5).unwrap();
        assert!(w.contains("(5)") && w.contains("below 5"), "{w}");
        // A directory that never locks needs no warning; one we could not read does.
        assert_eq!(
            policy(PolicyKind::ActiveDirectory, None).budget_warning(100),
            None
        );
        assert!(
            policy(PolicyKind::NotFound, None)
                .budget_warning(3)
                .is_some()
        );
    }
}
