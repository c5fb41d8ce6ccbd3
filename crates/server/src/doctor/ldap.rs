//! The LDAP door's section (issue 39): whether its listeners can be bound, its own
//! certificate fits, and whether `[ldap]` would refuse every bind or accept passwords in
//! clear. Which service accounts exist as clients is the store's business (`portcullis
//! client list`); this reads only the configuration.

use super::{Finding, Level};
use crate::config::Config;

pub(super) fn check(config: &Config, out: &mut Vec<Finding>) {
    const S: &str = "ldap";
    let l = &config.ldap;
    if !l.enabled() {
        return;
    }
    let start = out.len();
    if let Some(a) = l.listen {
        super::host::listen_tcp("ldap", a, out);
    }
    if let Some(a) = l.listen_tls {
        super::host::listen_tcp("ldaps", a, out);
    }
    if let Some(t) = &l.tls {
        super::host::certificate("ldap.tls", t, out);
    }
    let certificate = l.tls.is_some() || config.tls.is_some();
    if l.listen.is_some() && !certificate && !l.allow_plain_binds {
        out.push(Finding::new(
            Level::Fail,
            S,
            "ldap.listen has no StartTLS (no [ldap.tls] or [tls] certificate) and plain binds \
             are refused, so every bind there is answered confidentialityRequired (13); fix: \
             configure [ldap.tls] (or [tls]) so clients can use StartTLS, or use listen_tls",
        ));
    }
    if l.listen.is_some() && l.allow_plain_binds {
        out.push(Finding::new(
            Level::Warn,
            S,
            "ldap.allow_plain_binds = true: passwords may cross the network in clear on \
             ldap.listen; fix: set it to false and have clients use StartTLS or ldaps://",
        ));
    }
    if l.allow_anonymous_search {
        out.push(Finding::new(
            Level::Warn,
            S,
            "ldap.allow_anonymous_search = true: anyone who reaches the door can list every \
             user and group; fix: give each application a service account \
             ([ldap.service_accounts.ID]) and set it to false",
        ));
    }
    if l.service_accounts.is_empty() {
        out.push(Finding::new(
            Level::Note,
            S,
            "no [ldap.service_accounts.ID]: applications can only search as a bound user \
             (with allow_user_search); register one with `portcullis client add ID` and grant it \
             a section",
        ));
    }
    if l.password_modify && l.allow_plain_binds {
        out.push(Finding::new(
            Level::Warn,
            S,
            "ldap.password_modify with allow_plain_binds: new passwords may cross the network \
             in clear",
        ));
    }
    let problems = out
        .get(start..)
        .unwrap_or_default()
        .iter()
        .any(|f| f.subject == S && f.level >= Level::Warn);
    if !problems {
        out.push(Finding::new(
            Level::Ok,
            S,
            format!(
                "base {}, {} service account(s), binds need TLS: {}",
                l.base,
                l.service_accounts.len(),
                !l.allow_plain_binds
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(text: &str) -> Vec<Finding> {
        let config = Config::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let mut out = Vec::new();
        check(&config, &mut out);
        out
    }

    #[test]
    fn a_plain_listener_without_starttls_or_with_plain_binds_is_named() {
        let base = "[ldap]\nbase_dn = \"dc=x\"\nlisten = \"127.0.0.1:0\"\n";
        let f = findings(base);
        assert!(
            f.iter()
                .any(|f| f.level == Level::Fail && f.text.contains("StartTLS")),
            "{f:?}"
        );
        let f = findings(&format!("{base}allow_plain_binds = true\n"));
        assert!(
            f.iter()
                .any(|f| f.level == Level::Warn && f.text.contains("in clear")),
            "{f:?}"
        );
        assert!(!f.iter().any(|f| f.level == Level::Fail), "{f:?}");
        assert!(
            findings("").is_empty(),
            "no [ldap] listener: nothing to say"
        );
    }
}
