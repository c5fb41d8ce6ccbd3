//! SSSD (Debian's `sssd`, `libnss-sss`, `libpam-sss`) in front of a directory, for issue
//! 39's interop tests: `sssd -i` with a config of its own (LDAP id and auth providers,
//! StartTLS with the directory's CA, the service account for searches), `getent -s sss`
//! (glibc's NSS with the `sss` service named, so `/etc/nsswitch.conf` is not involved) and
//! `pamtester` on a PAM service file of the test's own using `pam_sss.so`.
//!
//! SSSD's responders listen on machine-wide sockets (`/var/lib/sss/pipes`), so: one
//! instance at a time on the machine (an exclusive lock on a file under /tmp, held until
//! drop), none beside a system sssd (refused with a clear failure), its in-memory cache
//! (`/var/lib/sss/mc`) off, and on drop the daemon stopped (SIGTERM to the monitor, which
//! stops its responders and back end) and every file it created under `/var/lib/sss`
//! removed, with the PAM service file.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::ldap_interop_support::{Directory, Owned, is_root, wait_until};

/// The PAM service file the tests write (and remove).
pub const PAM_SERVICE: &str = "portcullis-ldap-test";
const LOCK: &str = "/tmp/portcullis-sssd-test.lock";
const SSS_DIRS: [&str; 4] = [
    "/var/lib/sss/db",
    "/var/lib/sss/mc",
    "/var/lib/sss/pipes",
    "/var/lib/sss/pipes/private",
];
const DOMAIN: &str = "portcullistest";

/// A running SSSD; stopped and cleaned up on drop.
pub struct Sssd {
    dir: tempfile::TempDir,
    child: Option<Owned>,
    existed: BTreeSet<PathBuf>,
    _lock: std::fs::File,
}

fn files_under_sss() -> BTreeSet<PathBuf> {
    SSS_DIRS
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
        .map(|e| e.path())
        .collect()
}

/// A running sssd process (the monitor, a responder or a back end), if any: its pid.
fn running_sssd() -> Option<String> {
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(Result::ok)
        .find_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // `pid (comm) state ...`: a zombie is gone already.
            let (comm, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            let sssd = comm == "sssd" || comm.starts_with("sssd_");
            (sssd && !rest.starts_with('Z')).then(|| e.file_name().to_string_lossy().into_owned())
        })
}

/// How SSSD reaches the directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// ldap:// with StartTLS (`ldap_id_use_start_tls`), SSSD's usual setting.
    StartTls,
    /// ldaps://.
    Ldaps,
}

fn config(d: &Directory, transport: Transport) -> String {
    let (uri, start_tls) = match transport {
        Transport::StartTls => (&d.ldap_url, true),
        Transport::Ldaps => (&d.ldaps_url, false),
    };
    format!(
        "[sssd]\nservices = nss, pam\ndomains = {DOMAIN}\n\n\
         [nss]\nmemcache_timeout = 0\nentry_negative_timeout = 0\n\n[pam]\n\n\
         [domain/{DOMAIN}]\nid_provider = ldap\nauth_provider = ldap\n\
         access_provider = permit\nchpass_provider = none\n\
         ldap_uri = {uri}\nldap_id_use_start_tls = {start_tls}\nldap_tls_cacert = {}\n\
         ldap_tls_reqcert = demand\nldap_search_base = {base}\n\
         ldap_user_search_base = ou=people,{base}\nldap_group_search_base = ou=groups,{base}\n\
         ldap_default_bind_dn = {}\nldap_default_authtok = {}\nldap_schema = rfc2307\n\
         cache_credentials = false\nenumerate = false\nldap_network_timeout = 5\n",
        d.ca_file.display(),
        d.service_dn,
        d.service_password,
        base = d.base,
    )
}

impl Sssd {
    /// Start SSSD against `d` over `transport` and write the PAM service file; returns
    /// once its NSS responder resolves `ready_user` (a user the directory has) through
    /// `getent`. One at a time: a second `start` waits until the first is dropped.
    pub fn start(d: &Directory, transport: Transport, ready_user: &str) -> Sssd {
        assert!(is_root(), "the SSSD test needs root (sssd, /etc/pam.d)");
        let lock = std::fs::File::create(LOCK).unwrap();
        lock.lock().unwrap();
        if let Some(pid) = running_sssd() {
            panic!("an sssd (pid {pid}) already runs on this machine: its sockets are ours");
        }
        let existed = files_under_sss();
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("sssd.conf");
        std::fs::write(&conf, config(d, transport)).unwrap();
        // sssd reads only a root-owned configuration no one else may read.
        std::fs::set_permissions(&conf, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        std::fs::write(
            Path::new("/etc/pam.d").join(PAM_SERVICE),
            "auth required pam_sss.so\naccount required pam_sss.so\n",
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("sssd.log")).unwrap();
        let child = Command::new("sssd")
            .args(["-i", "--logger=stderr", "-d", "0x0070", "-c"])
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("sssd (scripts/ldap-clients installs it)");
        let mut s = Sssd {
            dir,
            child: Some(Owned(child)),
            existed,
            _lock: lock,
        };
        wait_until(
            &format!("sssd resolving {ready_user} ({})", s.log()),
            Duration::from_secs(30),
            || {
                if let Some(Owned(c)) = s.child.as_mut()
                    && let Ok(Some(st)) = c.try_wait()
                {
                    panic!("sssd exited with {st}: {}", s.log());
                }
                getent("passwd", ready_user).0 == 0
            },
        );
        s
    }

    /// The end of sssd's log (stderr of the monitor, responders and back end).
    pub fn log(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("sssd.log")).unwrap_or_default();
        let start = log.len().saturating_sub(4000);
        log.get(start..).unwrap_or(&log).to_owned()
    }
}

impl Drop for Sssd {
    fn drop(&mut self) {
        drop(self.child.take());
        // The monitor waits for its children, but a back end may still be exiting.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while running_sssd().is_some() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        for path in files_under_sss() {
            if !self.existed.contains(&path) {
                let _ = std::fs::remove_file(path);
            }
        }
        let _ = std::fs::remove_file(Path::new("/etc/pam.d").join(PAM_SERVICE));
    }
}

/// `getent -s sss DB KEY`: its exit status (0 found, 2 not found) and output.
pub fn getent(db: &str, key: &str) -> (i32, String) {
    let out = Command::new("getent")
        .args(["-s", "sss", db, key])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
    )
}

/// `pamtester` through the test's PAM service (pam_sss): `authenticate` then
/// `acct_mgmt` as `user`, `password` typed on its standard input. Whether both succeeded,
/// and what it said.
pub fn pamtester(user: &str, password: &str) -> (bool, String) {
    let mut child = Command::new("pamtester")
        .args([PAM_SERVICE, user, "authenticate", "acct_mgmt"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pamtester (scripts/ldap-clients installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{password}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}
