//! Helpers of the upstream-directory tests (issue 40): throwaway slapd instances from
//! `scripts/slapd` and the `[[directory]]` sections that point at them.
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use portcullis_server::Config;

/// PBKDF2 iterations of the directory's users: cheap, in the module's real format.
const ITERATIONS: &str = "2000";

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/slapd")
}

fn run(args: &[&str]) -> String {
    let out = Command::new(script()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "scripts/slapd {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One slapd (users user1..user10 with passwords password1..password10); stopped on drop.
pub struct Slapd {
    dir: tempfile::TempDir,
    env: HashMap<String, String>,
}

impl Slapd {
    /// A new instance; `extra` are `scripts/slapd start` options (`--ppolicy 5`).
    pub fn start(extra: &[&str]) -> Slapd {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap().to_owned();
        let mut args = vec!["start", &path, "--users", "10", "--pbkdf2-iterations"];
        args.push(ITERATIONS);
        args.extend_from_slice(extra);
        let env = run(&args)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Slapd { dir, env }
    }

    /// A value `scripts/slapd` printed (`ldap_url`, `ldaps_url`, `ca_file`, ...).
    pub fn get(&self, key: &str) -> &str {
        self.env.get(key).map(String::as_str).unwrap()
    }

    /// Stops slapd (its data stays).
    pub fn stop(&self) {
        run(&["stop", self.dir.path().to_str().unwrap()]);
    }

    /// Whether `user`'s entry carries `pwdAccountLockedTime` (ppolicy locked it).
    pub fn locked(&self, user: &str) -> bool {
        let out = Command::new("ldapsearch")
            .args(["-x", "-ZZ", "-LLL", "-H", self.get("ldap_url"), "-D"])
            .arg(self.get("admin_dn"))
            .arg("-w")
            .arg(self.get("admin_password"))
            .arg("-b")
            .arg(format!("uid={user},ou=people,{}", self.get("base")))
            .args(["-s", "base", "(objectClass=*)", "pwdAccountLockedTime"])
            .env("LDAPTLS_CACERT", self.get("ca_file"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).contains("pwdAccountLockedTime:")
    }

    /// `[[directory]]` lines in DN-template mode over `servers`.
    pub fn dn_template(&self, servers: &[&str]) -> String {
        format!(
            "name = \"corp\"\nservers = {servers:?}\nca_file = \"{ca}\"\n\
             bind_dn_template = \"uid={{user}},ou=people,{base}\"\n",
            ca = self.get("ca_file"),
            base = self.get("base"),
        )
    }

    /// `[[directory]]` lines in search-then-bind mode over `servers`.
    pub fn search(&self, servers: &[&str]) -> String {
        format!(
            "name = \"corp\"\nservers = {servers:?}\nca_file = \"{ca}\"\n\
             [directory.search]\nbase = \"{base}\"\n\
             filter = \"(&(objectClass=inetOrgPerson)(uid={{user}}))\"\n\
             service_dn = \"{dn}\"\nservice_password = \"{pw}\"\n",
            ca = self.get("ca_file"),
            base = self.get("base"),
            dn = self.get("service_dn"),
            pw = self.get("service_password"),
        )
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .args(["stop", self.dir.path().to_str().unwrap()])
            .output();
    }
}

/// Installs the `[[directory]]` section `body` (with `extra` lines before any sub-table)
/// into `config`, through the same parser as a configuration file.
pub fn with_directory(config: &mut Config, body: &str) {
    let parsed = Config::parse(&format!("[[directory]]\n{body}"))
        .unwrap_or_else(|e| panic!("[[directory]] refused: {e}\n{body}"));
    config.directories = parsed.directories;
}
