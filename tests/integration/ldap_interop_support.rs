//! Issue 39's third-party LDAP clients, the machinery: a directory to point them at (a
//! throwaway OpenLDAP slapd from `scripts/slapd`, the reference, or Portcullis' LDAP door),
//! Apache httpd with `mod_authnz_ldap` and SSSD (with `pam_sss` through `pamtester`), each
//! started on free loopback ports with its own files in a temp dir and stopped on drop.
//!
//! SSSD has no per-instance sockets: its NSS and PAM responders listen on
//! `/var/lib/sss/pipes`, which `getent -s sss` and `pam_sss.so` reach. So an [`Sssd`] holds
//! a machine-wide file lock while it runs, refuses to start beside a system sssd, keeps its
//! memory cache off, and on drop removes every file it created under `/var/lib/sss` and the
//! PAM service file it wrote under `/etc/pam.d`. `/etc/nsswitch.conf` is never touched:
//! lookups name the `sss` service themselves.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use portcullis_store::testing::free_port;

use crate::server_support::{basic_header, parse_answer};

/// Where an LDAP client finds a directory, and the service account it searches with.
#[derive(Clone, Debug)]
pub struct Directory {
    /// `ldap://127.0.0.1:PORT` (StartTLS on it).
    pub ldap_url: String,
    /// `ldaps://127.0.0.1:PORT`.
    pub ldaps_url: String,
    /// The CA (PEM) that signed the directory's certificate.
    pub ca_file: PathBuf,
    /// The base DN.
    pub base: String,
    /// The service account's DN and password.
    pub service_dn: String,
    /// The service account's password.
    pub service_password: String,
}

/// A throwaway OpenLDAP slapd (`scripts/slapd start DIR ARGS`), stopped on drop.
pub struct Slapd {
    dir: tempfile::TempDir,
    env: HashMap<String, String>,
}

fn slapd_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/slapd")
}

impl Slapd {
    /// Start one with `args` (for example `--posix`); users user1..userN with passwords
    /// password1..passwordN, user1 alone in `admins`, everyone in `users`.
    pub fn start(args: &[&str]) -> Slapd {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(slapd_script())
            .arg("start")
            .arg(dir.path())
            .args(args)
            .output()
            .expect("scripts/slapd");
        assert!(
            out.status.success(),
            "scripts/slapd start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let env = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Slapd { dir, env }
    }

    fn get(&self, key: &str) -> String {
        self.env
            .get(key)
            .unwrap_or_else(|| panic!("scripts/slapd printed no {key}"))
            .clone()
    }

    /// The instance as a [`Directory`].
    pub fn directory(&self) -> Directory {
        Directory {
            ldap_url: self.get("ldap_url"),
            ldaps_url: self.get("ldaps_url"),
            ca_file: self.get("ca_file").into(),
            base: self.get("base"),
            service_dn: self.get("service_dn"),
            service_password: self.get("service_password"),
        }
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        let _ = Command::new(slapd_script())
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}

/// Wait (bounded) until `ready` says yes; panics with `what` and `log()` otherwise.
pub fn wait_until(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process stopped (SIGTERM, then SIGKILL after a bounded wait) and reaped on drop.
pub struct Owned(pub Child);

impl Drop for Owned {
    fn drop(&mut self) {
        // SIGTERM first, so daemons shut down their own children; SIGKILL if it lingers.
        let pid = self.0.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.0.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Apache httpd (`apache2 -X`, Debian's build) with `mod_authnz_ldap` in front of a
/// directory: Basic authentication checked by a search as the service account, then a
/// bind as the user; `/starttls/` over ldap:// with StartTLS, `/ldaps/` over ldaps://,
/// `/admins/` (StartTLS) requires `ldap-group cn=admins,ou=groups,BASE` (a Compare of its
/// `member` with the user's DN), `/posix/` (LDAPS) the same group by `memberUid` (the
/// user's name, RFC 2307). The LDAP caches are off, so every request reaches the
/// directory.
pub struct Apache {
    port: u16,
    dir: tempfile::TempDir,
    _child: Owned,
}

const MODULES: &str = "/usr/lib/apache2/modules";

fn apache_conf(root: &Path, port: u16, d: &Directory) -> String {
    let root = root.display();
    let people = format!("ou=people,{}?uid", d.base);
    let location = |path: &str, url: &str, tls: &str, require: &str| {
        format!(
            "<Location /{path}/>\n  AuthType Basic\n  AuthName {path}\n  \
             AuthBasicProvider ldap\n  AuthLDAPURL \"{url}\" {tls}\n  \
             AuthLDAPBindDN \"{}\"\n  AuthLDAPBindPassword \"{}\"\n  Require {require}\n\
             </Location>\n",
            d.service_dn, d.service_password
        )
    };
    let modules: String = [
        ("mpm_prefork", "mpm_prefork"),
        ("authz_core", "authz_core"),
        ("authz_user", "authz_user"),
        ("authn_core", "authn_core"),
        ("auth_basic", "auth_basic"),
        ("ldap", "ldap"),
        ("authnz_ldap", "authnz_ldap"),
    ]
    .iter()
    .map(|(name, file)| format!("LoadModule {name}_module {MODULES}/mod_{file}.so\n"))
    .collect();
    // Apache started as root serves as www-data (Debian's user); as anyone else it stays.
    let user = if is_root() {
        "User www-data\nGroup www-data\n"
    } else {
        ""
    };
    format!(
        "ServerRoot {root}\nServerName 127.0.0.1\nListen 127.0.0.1:{port}\n\
         PidFile {root}/httpd.pid\nDefaultRuntimeDir {root}\nErrorLog {root}/error.log\n\
         LogLevel warn ldap:debug authnz_ldap:debug\n{modules}{user}\
         DocumentRoot {root}/htdocs\n\
         LDAPTrustedGlobalCert CA_BASE64 {ca}\nLDAPVerifyServerCert On\n\
         LDAPCacheEntries 0\nLDAPOpCacheEntries 0\nLDAPSharedCacheSize 0\n\
         LDAPConnectionTimeout 5\nLDAPTimeout 10\n{}{}{}{}",
        location(
            "starttls",
            &format!("{}/{people}", d.ldap_url),
            "STARTTLS",
            "valid-user"
        ),
        location(
            "ldaps",
            &format!("{}/{people}", d.ldaps_url),
            "",
            "valid-user"
        ),
        location(
            "admins",
            &format!("{}/{people}", d.ldap_url),
            "STARTTLS",
            &format!("ldap-group cn=admins,ou=groups,{}", d.base)
        ),
        // RFC 2307 groups: the user's name compared with `memberUid`.
        location(
            "posix",
            &format!("{}/{people}", d.ldaps_url),
            "",
            &format!(
                "ldap-group cn=admins,ou=groups,{}\n  AuthLDAPGroupAttribute memberUid\n  \
                 AuthLDAPGroupAttributeIsDN off",
                d.base
            )
        ),
        ca = d.ca_file.display(),
    )
}

/// Whether the tests run as root (SSSD and a PAM service file need it).
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the process's effective user.
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Apache on `port` with its files in `root`, once it accepts connections; why not if it
/// exited first (its port taken, for example).
fn launch_apache(root: &Path, port: u16, d: &Directory) -> Result<Owned, String> {
    let conf = root.join("httpd.conf");
    std::fs::write(&conf, apache_conf(root, port, d)).unwrap();
    std::fs::set_permissions(&conf, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let child = Command::new("apache2")
        .arg("-X")
        .arg("-f")
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("apache2 (scripts/ldap-clients installs it)");
    let mut child = Owned(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.0.try_wait() {
            let mut err = String::new();
            let _ = child.0.stderr.take().unwrap().read_to_string(&mut err);
            return Err(format!("apache2 exited with {status}: {err}"));
        }
        assert!(
            Instant::now() < deadline,
            "apache2 did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    Ok(child)
}

impl Apache {
    /// Start Apache in front of `d`; returns once it accepts connections.
    pub fn start(d: &Directory) -> Apache {
        let dir = tempfile::tempdir().unwrap();
        // The www-data worker reads the documents (the config it reads as root, 0600).
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        for page in ["starttls", "ldaps", "admins", "posix"] {
            let p = dir.path().join("htdocs").join(page);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("index.html"), format!("{page} page\n")).unwrap();
        }
        // A free port may be taken between the probe and Apache's bind: a few attempts.
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port();
            match launch_apache(dir.path(), port, d) {
                Ok(child) => {
                    return Apache {
                        port,
                        dir,
                        _child: child,
                    };
                }
                Err(e) => last = e,
            }
        }
        panic!("{last}");
    }

    /// GET `/{path}/index.html` with Basic credentials (or none): the HTTP status.
    pub fn get(&self, path: &str, credentials: Option<(&str, &str)>) -> u16 {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let auth = credentials
            .map(|(u, p)| format!("Authorization: {}\r\n", basic_header(u, p)))
            .unwrap_or_default();
        write!(
            s,
            "GET /{path}/index.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{auth}\r\n"
        )
        .unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).unwrap();
        parse_answer(&buf).status
    }

    /// The end of Apache's error log (what mod_ldap said), for failure messages.
    pub fn log(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default();
        let start = log.len().saturating_sub(4000);
        log.get(start..).unwrap_or(&log).to_owned()
    }
}
