//! FreeRADIUS's set-up for the demo's "slow directory" section (issue 40): the common way to
//! put RADIUS in front of a directory. `rlm_ldap` (Debian's `freeradius-ldap`) finds the
//! user's entry with the service account in `authorize`, then in `authenticate` binds as
//! that entry with the password the NAS sent; every guess is a bind at the directory.
//! Everything else as packaged: the module's connection pool sized by the thread pool
//! (`${thread[pool].*}`), the stock thread pool (`max_servers = 32`), referrals off (the
//! lab's directory has none). The result timeout is the relay's hold plus a margin, so a
//! held failure is answered as the directory answers it, not as a timeout.

use std::path::Path;
use std::time::Duration;

use super::DirectorySetup;
use super::fr_files::{fr_err, write};
use portcullis_lab::LabError;

/// The module file (`mods-enabled/ldap`) and the virtual server, in `dir` (a copy of the
/// packaged configuration); the site listens on `port`.
pub(super) fn configure(dir: &Path, d: &DirectorySetup, port: u16) -> Result<(), LabError> {
    if !dir.join("mods-available/ldap").is_file() {
        return Err(fr_err(
            "its ldap module is missing (Debian package freeradius-ldap)",
        ));
    }
    write(&dir.join("mods-enabled/ldap"), &module(d)?)?;
    write(&dir.join("sites-enabled/demo"), &site(port))?;
    Ok(())
}

/// A value for a single-quoted string of the module's configuration.
fn quoted(what: &str, value: &str) -> Result<String, LabError> {
    if value.contains(['\'', '\\', '\n', '"']) {
        return Err(fr_err(format!(
            "the directory's {what} cannot go in its configuration"
        )));
    }
    Ok(format!("'{value}'"))
}

fn module(d: &DirectorySetup) -> Result<String, LabError> {
    let (host, port) = d
        .addr
        .to_string()
        .rsplit_once(':')
        .map(|(h, p)| (h.to_owned(), p.to_owned()))
        .ok_or_else(|| fr_err("bad directory address"))?;
    let timeout = (d.answer_timeout.as_secs_f64().ceil() as u64).max(1);
    Ok(format!(
        "ldap {{\n\tserver = {}\n\tport = {port}\n\tidentity = {}\n\tpassword = {}\n\tbase_dn = {}\n\tuser_dn = \"LDAP-UserDn\"\n\tuser {{\n\t\tbase_dn = {}\n\t\tfilter = \"(uid=%{{%{{Stripped-User-Name}}:-%{{User-Name}}}})\"\n\t}}\n\toptions {{\n\t\tchase_referrals = no\n\t\trebind = no\n\t\tres_timeout = {timeout}\n\t\tsrv_timelimit = {timeout}\n\t\tnet_timeout = 1\n\t\tidle = 60\n\t\tprobes = 3\n\t\tinterval = 3\n\t\tldap_debug = 0x0000\n\t}}\n\tpool {{\n\t\tstart = ${{thread[pool].start_servers}}\n\t\tmin = ${{thread[pool].min_spare_servers}}\n\t\tmax = ${{thread[pool].max_servers}}\n\t\tspare = ${{thread[pool].max_spare_servers}}\n\t\tuses = 0\n\t\tretry_delay = 30\n\t\tlifetime = 0\n\t\tidle_timeout = 60\n\t}}\n}}\n",
        quoted("host", &host)?,
        quoted("service DN", &d.service_dn)?,
        quoted("service password", &d.service_password)?,
        quoted("base", &d.base)?,
        quoted("search base", &d.people)?,
    ))
}

/// `authorize` finds the entry and sends PAP to the module; `authenticate` binds as it.
fn site(port: u16) -> String {
    format!(
        "server demo {{\n  listen {{\n    type = auth\n    ipaddr = 127.0.0.1\n    port = {port}\n  }}\n  authorize {{\n    ldap\n    if ((ok || updated) && User-Password) {{\n      update control {{\n        &Auth-Type := ldap\n      }}\n    }}\n  }}\n  authenticate {{\n    Auth-Type LDAP {{\n      ldap\n    }}\n  }}\n}}\n"
    )
}

/// The directory's answer timeout for a relay that holds failed binds `delay`.
pub fn answer_timeout(delay: Duration) -> Duration {
    delay + Duration::from_secs(5)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> DirectorySetup {
        DirectorySetup {
            addr: "127.0.0.1:3890".parse().unwrap(),
            base: "dc=example,dc=org".into(),
            people: "ou=people,dc=example,dc=org".into(),
            user_dn_template: "uid={user},ou=people,dc=example,dc=org".into(),
            service_dn: "cn=portcullis,ou=services,dc=example,dc=org".into(),
            service_password: "0123abcd".into(),
            answer_timeout: Duration::from_millis(10_500),
            lockout_threshold: Some(5),
        }
    }

    #[test]
    fn the_module_binds_through_the_relay_with_the_service_account() {
        let m = module(&setup()).unwrap();
        for want in [
            "server = '127.0.0.1'",
            "port = 3890",
            "identity = 'cn=portcullis,ou=services,dc=example,dc=org'",
            "base_dn = 'ou=people,dc=example,dc=org'",
            "res_timeout = 11",
            "max = ${thread[pool].max_servers}",
        ] {
            assert!(m.contains(want), "{want} missing from\n{m}");
        }
        let mut bad = setup();
        bad.service_password = "it's".into();
        assert!(module(&bad).is_err());
    }
}
