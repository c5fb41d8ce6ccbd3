//! FreeRADIUS 3.2 (Debian's `freeradius` package) as a demo server for the RADIUS
//! scenarios, so the demo report holds the side-by-side table of issue 12: what users run
//! today next to Portcullis, on the same machine, in the same run.
//!
//! It is set up the way `scripts/freeradius` sets it up for `scripts/radius-bench`: PAP
//! against the demo's users stored as `{X-PBKDF2}` PBKDF2-HMAC-SHA256 hashes with the
//! demo's iteration count (`Password-With-Header`, only the hash is written), its stock
//! thread pool, one NAS covering loopback that must send Message-Authenticator, the
//! demo's reject delay. Each start copies the packaged configuration into a fresh temp
//! directory and runs `freeradius -f` as a child process on a free loopback port; stop
//! kills it and removes the directory. Nothing is installed here: when the package is
//! missing, [`FreeRadiusServer::find`] says so and the demo leaves the column out. The
//! 802.1X section adds the EAP module (`super::freeradius_eap`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use portcullis_hash::Prf;
use portcullis_hash::pbkdf2::pbkdf2_hmac;

use super::fr_files::{fr_err, write};
use super::{BoxFuture, DemoServer, Setup, Started};
use portcullis_lab::LabError;

/// Where Debian's package keeps the configuration the demo copies.
const PACKAGED_CONFIG: &str = "/etc/freeradius/3.0";
/// Debian's dictionary directory (`-D`).
const DICTIONARIES: &str = "/usr/share/freeradius";
/// How long a start may take before the demo gives up (config parse, module load).
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// FreeRADIUS, found installed on this machine.
#[derive(Debug)]
pub struct FreeRadiusServer {
    /// The `freeradius` executable.
    binary: PathBuf,
    /// `FreeRADIUS Version 3.2.1` and the like, for the report.
    version: String,
    /// Replies carry no Message-Authenticator (releases before 3.2.5, the BlastRADIUS
    /// fix): the lab then checks the Response Authenticator only.
    replies_lack_message_authenticator: bool,
    /// Distinguishes the temp directories of successive starts.
    starts: AtomicU32,
}

impl FreeRadiusServer {
    /// FreeRADIUS from `$PATH` with Debian's configuration, or why it cannot be used.
    pub fn find() -> Result<FreeRadiusServer, String> {
        let binary = std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|d| d.join("freeradius"))
            .find(|p| p.is_file())
            .ok_or("`freeradius` is not on PATH (Debian package freeradius)")?;
        if !Path::new(PACKAGED_CONFIG).join("radiusd.conf").is_file() {
            return Err(format!("{PACKAGED_CONFIG}/radiusd.conf is missing"));
        }
        let out = Command::new(&binary)
            .arg("-v")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", binary.display()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let version = text
            .lines()
            .find_map(|l| l.find("FreeRADIUS Version").map(|i| &l[i..]))
            .map(|l| l.split(',').next().unwrap_or(l).trim().to_string())
            .unwrap_or_else(|| "FreeRADIUS (version unknown)".into());
        let replies_lack_message_authenticator = !version_at_least(&version, (3, 2, 5));
        Ok(FreeRadiusServer {
            binary,
            version,
            replies_lack_message_authenticator,
            starts: AtomicU32::new(0),
        })
    }
}

/// Whether "FreeRADIUS Version a.b.c" is at least `min`; unknown counts as older.
fn version_at_least(version: &str, min: (u32, u32, u32)) -> bool {
    let Some(v) = version.split_whitespace().nth(2) else {
        return false;
    };
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next(), parts.next(), parts.next()) {
        (Some(Some(a)), Some(Some(b)), Some(Some(c))) => (a, b, c) >= min,
        _ => false,
    }
}

impl DemoServer for FreeRadiusServer {
    fn label(&self) -> String {
        "freeradius".into()
    }

    fn about(&self) -> String {
        format!(
            "freeradius: {} from Debian's package, stock thread pool (PAP hashes on its worker threads), users as {{X-PBKDF2}} PBKDF2-HMAC-SHA256 with the same iteration count, Message-Authenticator required from the NAS{}; RADIUS scenarios only; in the 802.1X section its packaged EAP module set up as scripts/freeradius-eap does (stock: the demo's certificates, no PEAP/MSCHAPv2, TLS session cache off as shipped)",
            self.version,
            if self.replies_lack_message_authenticator {
                "; this release sends none in its replies (it predates the BlastRADIUS fix), so the lab checks their Response Authenticator only"
            } else {
                ""
            }
        )
    }

    fn radius_only(&self) -> bool {
        true
    }

    fn speaks_eap(&self) -> bool {
        true
    }

    fn speaks_directory(&self) -> bool {
        // rlm_ldap comes in Debian's freeradius-ldap, a package of its own.
        Path::new("/usr/lib/freeradius/rlm_ldap.so").is_file()
    }

    fn start(&self, setup: Setup) -> BoxFuture<Result<Started, LabError>> {
        let n = self.starts.fetch_add(1, Ordering::Relaxed);
        let binary = self.binary.clone();
        let lacks_ma = self.replies_lack_message_authenticator;
        Box::pin(async move {
            let dir = std::env::temp_dir().join(format!(
                "portcullis-demo-freeradius-{}-{n}",
                std::process::id()
            ));
            // Hashing the users and copying the tree are blocking work: off the runtime.
            let prepared = {
                let dir = dir.clone();
                tokio::task::spawn_blocking(move || prepare(&dir, &setup))
                    .await
                    .map_err(|e| fr_err(e.to_string()))?
            };
            let (port, status_port) = match prepared {
                Ok(p) => p,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    return Err(e);
                }
            };
            let child = match spawn(&binary, &dir) {
                Ok(c) => c,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    return Err(e);
                }
            };
            let mut running = Running { child, dir };
            if let Err(e) = running.wait_listening(port).await {
                running.stop();
                return Err(e);
            }
            let url = format!("radius://127.0.0.1:{port}");
            let pid = running.child.id();
            Ok(Started {
                url: url.clone(),
                metrics: "off".into(),
                radius: Some(url),
                replies_lack_message_authenticator: lacks_ma,
                accounting: None,
                pool_state: status_port.map(|p| -> super::PoolProbe {
                    std::sync::Arc::new(move || super::freeradius_status::sample(p, pid))
                }),
                stop: Box::new(move || -> BoxFuture<()> {
                    Box::pin(async move {
                        let _ = tokio::task::spawn_blocking(move || running.stop()).await;
                    })
                }),
            })
        })
    }
}

/// The child process and its temp directory.
struct Running {
    child: Child,
    dir: PathBuf,
}

impl Running {
    /// Wait until the child has bound `port` on 127.0.0.1 (it answers nothing to a probe
    /// we could send without a user, so the kernel's socket table is the signal).
    async fn wait_listening(&mut self, port: u16) -> Result<(), LabError> {
        let needle = format!("0100007F:{port:04X}");
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(fr_err(format!(
                    "exited at start-up ({status}); its log: {}",
                    self.log_tail()
                )));
            }
            let table = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
            if table
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some(needle.as_str()))
            {
                return Ok(());
            }
            if start.elapsed() > START_TIMEOUT {
                return Err(fr_err(format!(
                    "not listening on 127.0.0.1:{port} after {}s; its log: {}",
                    START_TIMEOUT.as_secs(),
                    self.log_tail()
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("output.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(8)..].join(" | ")
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Run `freeradius -f` on the configuration in `dir`. Its output goes to a file, never a
/// pipe: nobody would drain a pipe while the lab runs, and a full one blocks the server.
fn spawn(binary: &Path, dir: &Path) -> Result<Child, LabError> {
    let log = std::fs::File::create(dir.join("output.log")).map_err(fr_err)?;
    let log2 = log.try_clone().map_err(fr_err)?;
    Command::new(binary)
        .arg("-f")
        .arg("-l")
        .arg(dir.join("radius.log"))
        .arg("-d")
        .arg(dir)
        .args(["-n", "radiusd", "-D", DICTIONARIES])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| fr_err(format!("{}: {e}", binary.display())))
}

/// Write the configuration into `dir`; returns the port it will listen on, and its status
/// server's (in front of a directory only).
fn prepare(dir: &Path, setup: &Setup) -> Result<(u16, Option<u16>), LabError> {
    let secret = setup
        .radius_secret
        .as_deref()
        .ok_or_else(|| fr_err("started for a scenario without RADIUS"))?;
    let secret = std::str::from_utf8(secret)
        .ok()
        .filter(|s| !s.contains(['"', '\\', '\n']))
        .ok_or_else(|| fr_err("the NAS secret must be plain text for clients.conf"))?;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(fr_err)?;
    let copied = Command::new("cp")
        .arg("-a")
        .arg(format!("{PACKAGED_CONFIG}/."))
        .arg(dir)
        .status()
        .map_err(fr_err)?;
    if !copied.success() {
        return Err(fr_err(format!("cannot copy {PACKAGED_CONFIG}")));
    }
    // Keep only what PAP needs (and EAP, for the 802.1X section): no SQL/LDAP/MS-CHAP,
    // our own virtual servers.
    let eap = setup.eap.is_some();
    let ldap = setup.directory.is_some();
    for entry in std::fs::read_dir(dir.join("mods-enabled")).map_err(fr_err)? {
        let entry = entry.map_err(fr_err)?;
        let name = entry.file_name();
        let keep = matches!(name.to_str(), Some("pap" | "files" | "always" | "expr"))
            || (eap && name.to_str() == Some("eap"));
        let keep = keep && !(ldap && name.to_str() == Some("files"));
        if !keep {
            std::fs::remove_file(entry.path()).map_err(fr_err)?;
        }
    }
    for entry in std::fs::read_dir(dir.join("sites-enabled")).map_err(fr_err)? {
        std::fs::remove_file(entry.map_err(fr_err)?.path()).map_err(fr_err)?;
    }
    let port = free_udp_port()?;
    let mut status_port = None;
    let site = format!(
        "server demo {{\n  listen {{\n    type = auth\n    ipaddr = 127.0.0.1\n    port = {port}\n  }}\n  authorize {{\n    files\n    pap\n  }}\n  authenticate {{\n    Auth-Type PAP {{\n      pap\n    }}\n  }}\n}}\n"
    );
    match (&setup.eap, &setup.directory) {
        (Some(e), _) => super::freeradius_eap::configure(dir, e, port)?,
        (None, Some(d)) => {
            super::freeradius_ldap::configure(dir, d, port)?;
            let status = free_udp_port()?;
            super::freeradius_status::configure(dir, status)?;
            status_port = Some(status);
        }
        (None, None) => write(&dir.join("sites-enabled/demo"), &site)?,
    }
    write(
        &dir.join("clients.conf"),
        &format!(
            "client lab {{\n  ipaddr = 127.0.0.0/8\n  secret = \"{secret}\"\n  require_message_authenticator = yes\n}}\n"
        ),
    )?;
    write(
        &dir.join("mods-config/files/authorize"),
        &users(&setup.clients, setup.iterations)?,
    )?;
    let conf_path = dir.join("radiusd.conf");
    let conf = std::fs::read_to_string(&conf_path).map_err(fr_err)?;
    write(&conf_path, &radiusd_conf(&conf, setup.reject_delay))?;
    for sub in ["run", "log"] {
        std::fs::create_dir_all(dir.join(sub)).map_err(fr_err)?;
    }
    Ok((port, status_port))
}

/// A free UDP port now; the kernel does not hand it out again this soon.
fn free_udp_port() -> Result<u16, LabError> {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map_err(fr_err)
        .map(|a| a.port())
}

/// The packaged radiusd.conf, run as the invoking user (no `user`/`group` switch) with
/// the demo's reject delay.
fn radiusd_conf(conf: &str, reject_delay: Duration) -> String {
    let delay = reject_delay.as_secs_f64();
    let delay = if delay.fract() == 0.0 {
        format!("{}", reject_delay.as_secs())
    } else {
        format!("{delay:.3}")
    };
    let mut out = String::with_capacity(conf.len());
    for line in conf.lines() {
        let t = line.trim_start();
        if t.starts_with("user = ") || t.starts_with("group = ") {
            out.push('#');
            out.push_str(line);
        } else if t.starts_with("reject_delay = ") {
            let _ = write!(out, "\treject_delay = {delay}");
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// `mods-config/files/authorize`: each user's password as FreeRADIUS's `{X-PBKDF2}`
/// (digest, base64 big-endian iteration count, base64 salt, base64 key).
fn users(clients: &[(String, String)], iterations: u32) -> Result<String, LabError> {
    let mut out = String::new();
    for (name, password) in clients {
        if name.contains(['"', '\\', '\n']) {
            return Err(fr_err(format!(
                "user name {name:?} cannot go in a users file"
            )));
        }
        let mut salt = [0u8; 16];
        portcullis_hash::os_random(&mut salt).map_err(fr_err)?;
        let mut key = [0u8; 32];
        pbkdf2_hmac(
            Prf::Sha256,
            password.as_bytes(),
            &salt,
            iterations,
            &mut key,
        );
        let _ = writeln!(
            out,
            "\"{name}\" Password-With-Header := \"{{X-PBKDF2}}HMACSHA2+256:{}:{}:{}\"",
            B64.encode(iterations.to_be_bytes()),
            B64.encode(salt),
            B64.encode(key)
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_3_2_5_is_the_first_with_message_authenticator_in_replies() {
        assert!(!version_at_least("FreeRADIUS Version 3.2.1", (3, 2, 5)));
        assert!(version_at_least("FreeRADIUS Version 3.2.5", (3, 2, 5)));
        assert!(version_at_least("FreeRADIUS Version 3.10.0", (3, 2, 5)));
        assert!(!version_at_least("FreeRADIUS Version unknown", (3, 2, 5)));
    }

    #[test]
    fn radiusd_conf_drops_the_user_switch_and_sets_the_delay() {
        let conf = "security {\n\tuser = freerad\n\tgroup = freerad\n\treject_delay = 1\n}\n";
        let out = radiusd_conf(conf, Duration::from_millis(500));
        assert!(out.contains("#\tuser = freerad"));
        assert!(out.contains("#\tgroup = freerad"));
        assert!(out.contains("\treject_delay = 0.500"));
        assert!(radiusd_conf(conf, Duration::from_secs(2)).contains("reject_delay = 2\n"));
    }

    /// The layout FreeRADIUS's pap module decodes: digest name, big-endian count, salt and
    /// key in base64, the key being PBKDF2 of the password over that salt.
    #[test]
    fn users_file_holds_verifiable_x_pbkdf2_hashes_and_no_password() {
        let text = users(&[("alice".into(), "passwd".into())], 1).unwrap();
        assert!(!text.contains("passwd"));
        let value = text
            .split("{X-PBKDF2}")
            .nth(1)
            .unwrap()
            .trim_end_matches("\"\n");
        let parts: Vec<&str> = value.split(':').collect();
        assert_eq!(parts[0], "HMACSHA2+256");
        assert_eq!(B64.decode(parts[1]).unwrap(), 1u32.to_be_bytes());
        let salt = B64.decode(parts[2]).unwrap();
        let key = B64.decode(parts[3]).unwrap();
        let mut expect = [0u8; 32];
        pbkdf2_hmac(Prf::Sha256, b"passwd", &salt, 1, &mut expect);
        assert_eq!(key, expect);
        assert!(users(&[("a\"b".into(), "x".into())], 1).is_err());
    }
}
