//! Throwaway OpenLDAP slapd instances for the demo's directory sections ("a slow
//! directory behind the door" and "LDAP binds under a guessing wave"): where
//! `scripts/slapd` is and whether Debian's slapd is installed ([`find_slapd`]), and one
//! instance made, read and removed by that script ([`Slapd`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use portcullis_lab::LabError;
use portcullis_lab::scenario::DirectorySpec;
use portcullis_lab::scenario::directory::USER_PREFIX;

fn err(msg: impl std::fmt::Display) -> LabError {
    LabError::Target(format!("slapd: {msg}"))
}

/// Debian's slapd.
pub const SLAPD: &str = "/usr/sbin/slapd";
/// slapd-contrib's PBKDF2 module.
pub const PW_PBKDF2: &str = "/usr/lib/ldap/pw-pbkdf2.so";

/// Where `scripts/slapd` is: `$PORTCULLIS_SLAPD`, else `scripts/slapd` under the current
/// directory or one above the executable (a build in the source tree); and whether
/// Debian's slapd and its PBKDF2 module are installed. The demo installs nothing: without
/// them the sections that need slapd are left out, with this reason.
pub fn find_slapd() -> Result<PathBuf, String> {
    let script = std::env::var_os("PORTCULLIS_SLAPD").map(PathBuf::from);
    find_slapd_with(Path::new(SLAPD), Path::new(PW_PBKDF2), script)
}

/// [`find_slapd`] with the paths it checks given: slapd, its PBKDF2 module, and the
/// script when one was named (`$PORTCULLIS_SLAPD`).
pub fn find_slapd_with(
    slapd: &Path,
    pw_pbkdf2: &Path,
    script: Option<PathBuf>,
) -> Result<PathBuf, String> {
    if !slapd.is_file() {
        return Err(format!(
            "Debian's slapd is not installed ({} is missing; scripts/slapd install)",
            slapd.display()
        ));
    }
    if !pw_pbkdf2.is_file() {
        return Err(format!(
            "slapd-contrib (pw-pbkdf2) is not installed ({} is missing; scripts/slapd install)",
            pw_pbkdf2.display()
        ));
    }
    if let Some(p) = script {
        return match p.is_file() {
            true => Ok(p),
            false => Err(format!("PORTCULLIS_SLAPD names no file ({})", p.display())),
        };
    }
    let mut roots: Vec<PathBuf> = std::env::current_dir().into_iter().collect();
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    roots
        .iter()
        .map(|r| r.join("scripts/slapd"))
        .find(|p| p.is_file())
        .ok_or_else(|| "scripts/slapd is not found (run the demo from the source tree, or set PORTCULLIS_SLAPD)".into())
}

/// A throwaway slapd made by `scripts/slapd`, stopped and removed on [`Slapd::stop`].
pub struct Slapd {
    script: PathBuf,
    dir: PathBuf,
    env: HashMap<String, String>,
}

impl Slapd {
    /// Builds and starts an instance for `spec` in a fresh temporary directory.
    pub fn start(script: &Path, spec: &DirectorySpec, tag: &str) -> Result<Slapd, LabError> {
        let dir = std::env::temp_dir().join(format!(
            "portcullis-demo-slapd-{}-{tag}",
            std::process::id()
        ));
        let mut cmd = Command::new(script);
        cmd.arg("start")
            .arg(&dir)
            .args(["--users", &spec.users.to_string()])
            .args(["--pbkdf2-iterations", &spec.pbkdf2_iterations.to_string()]);
        if let Some(n) = spec.ppolicy_max_failure {
            cmd.args(["--ppolicy", &n.to_string()]);
        }
        let out = cmd
            .output()
            .map_err(|e| err(format!("{}: {e}", script.display())))?;
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(err(format!(
                "scripts/slapd start failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let env = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let slapd = Slapd {
            script: script.to_path_buf(),
            dir,
            env,
        };
        // Every key the section reads must be there, or the instance is useless.
        for key in ["port", "base", "service_dn", "service_password"] {
            if let Err(e) = slapd.get(key) {
                slapd.stop();
                return Err(e);
            }
        }
        Ok(slapd)
    }

    /// A `key=value` line `scripts/slapd start` printed.
    pub fn get(&self, key: &str) -> Result<&str, LabError> {
        self.env
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| err(format!("scripts/slapd printed no {key}")))
    }

    /// slapd's own `ldap://` address.
    pub fn addr(&self) -> Result<SocketAddr, LabError> {
        let port: u16 = self.get("port")?.parse().map_err(err)?;
        Ok(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    /// The DN of `user<n>`.
    pub fn user_dn(&self, n: usize) -> Result<String, LabError> {
        Ok(format!(
            "uid={USER_PREFIX}{n},ou=people,{}",
            self.get("base")?
        ))
    }

    /// slapd's process id (its CPU time is read from `/proc/PID/stat`).
    pub fn pid(&self) -> Result<u32, LabError> {
        self.get("pid")?.parse().map_err(err)
    }

    /// Stops slapd and removes its directory.
    pub fn stop(self) {
        let _ = Command::new(&self.script)
            .arg("stop")
            .arg(&self.dir)
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
