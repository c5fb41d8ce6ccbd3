//! Issue 29: the Debian package, built by `scripts/deb --binary` from the debug binary this
//! suite already built (no release build) with the assets of `[package.metadata.deb]`.
//! The test checks its layout, installs it with `dpkg -i`, has `systemd-analyze` verify
//! the installed unit and score it, runs the installed binary the way the unit does (its
//! `User=`, `WorkingDirectory=`, `UMask=` and `ExecStart=`, read from the installed unit)
//! and gets a token, upgrades to a newer build (data, secrets and the client kept), and
//! purges (the data left, and said so). Needs root, dpkg and systemd-analyze
//! (`scripts/test` installs them); it cleans up the package, the data and the user.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::process_support::{BIN, post};

const STATE: &str = "/var/lib/portcullis";
const CONF: &str = "/etc/portcullis/portcullis.toml";
const UNIT: &str = "/usr/lib/systemd/system/portcullis.service";
/// The versions the test builds: "~suite" marks them as the suite's own.
const OLD: &str = "0.1.0-0~suite1";
const NEW: &str = "0.1.0-0~suite2";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn sh(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

fn ok(cmd: &str, args: &[&str]) -> String {
    let out = sh(cmd, args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd} {args:?}: {text}");
    text
}

/// The installed package's version, if any.
fn installed() -> Option<String> {
    let out = sh(
        "dpkg-query",
        &["-W", "-f", "${Status} ${Version}", "portcullis"],
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.strip_prefix("install ok installed ")
        .map(str::to_owned)
}

/// Removes what the test installed, whatever happened (also on a failed assertion).
struct Cleanup;

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = sh("dpkg", &["--purge", "portcullis"]);
        let _ = std::fs::remove_dir_all(STATE);
        let _ = sh("userdel", &["portcullis"]);
        let _ = sh("groupdel", &["portcullis"]);
    }
}

fn build(generated: &Path, out: &Path, version: &str) {
    let status = Command::new(repo().join("scripts/deb"))
        .args(["--binary", BIN, "--out"])
        .arg(out)
        .args(["--version", version])
        .env("GENERATED", generated)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "scripts/deb failed");
}

/// `Key=value` of the installed unit (the first one).
fn unit_value(unit: &str, key: &str) -> String {
    unit.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in the unit"))
        .to_owned()
}

/// Run `args` the way the unit runs its commands: as `User=`, in `WorkingDirectory=`, with
/// `UMask=`. The only change is the listen address (port 0, so no fixed port is needed).
fn as_the_unit(unit: &str, args: &[&str]) -> Command {
    let user = unit_value(unit, "User");
    let umask = unit_value(unit, "UMask");
    let mut c = Command::new("runuser");
    c.args([
        "-u",
        &user,
        "--",
        "sh",
        "-c",
        &format!("umask {umask}; exec \"$@\""),
        "sh",
    ])
    .args(args)
    .current_dir(unit_value(unit, "WorkingDirectory"))
    .env("PORTCULLIS_HTTP", "127.0.0.1:0")
    .env_remove("PORTCULLIS_CONFIG")
    .env_remove("PORTCULLIS_DATA_DIR")
    .env_remove("RUST_LOG");
    c
}

/// Start the unit's `ExecStart=` and wait (bounded) for its listening address.
fn start(unit: &str) -> (Child, SocketAddr) {
    let exec = unit_value(unit, "ExecStart");
    let args: Vec<&str> = exec.split_whitespace().collect();
    let mut child = as_the_unit(unit, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = crate::process_support::listening_addr(&mut child);
    (child, addr)
}

fn token(addr: SocketAddr, secret: &str) {
    let (status, _, body) = post(
        addr,
        "/oauth2/token",
        ("svc", secret),
        "grant_type=client_credentials",
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"access_token\""), "{body}");
}

fn stop(mut child: Child) {
    ok("kill", &["-TERM", &child.id().to_string()]);
    child.wait().unwrap();
}

fn mode_owner(path: &str) -> (u32, String) {
    let meta = std::fs::metadata(path).unwrap();
    let owner = ok("id", &["-nu", &meta.uid().to_string()]);
    (meta.permissions().mode() & 0o777, owner.trim().to_owned())
}

#[test]
fn issue_29_the_package_installs_runs_as_the_unit_upgrades_and_purges() {
    let _one = crate::server_support::exclusive();
    match installed() {
        None => {}
        Some(v) if v.contains("~suite") => {
            drop(Cleanup);
        }
        Some(v) => panic!(
            "portcullis {v} is installed on this machine; this test installs and purges its own package"
        ),
    }
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old.deb"), dir.path().join("new.deb"));
    build(&dir.path().join("gen-old"), &old, OLD);
    build(&dir.path().join("gen-new"), &new, NEW);

    // Layout: every file where the unit and the man/completion tools look.
    let listing = ok("dpkg-deb", &["-c", old.to_str().unwrap()]);
    for path in [
        "./usr/bin/portcullis",
        "./usr/lib/systemd/system/portcullis.service",
        "./usr/lib/sysusers.d/portcullis.conf",
        "./usr/lib/tmpfiles.d/portcullis.conf",
        "./usr/share/man/man1/portcullis.1.gz",
        "./usr/share/man/man1/portcullis-doctor.1.gz",
        "./usr/share/man/man1/portcullis-serve.1.gz",
        "./usr/share/bash-completion/completions/portcullis",
        "./usr/share/zsh/vendor-completions/_portcullis",
        "./usr/share/fish/vendor_completions.d/portcullis.fish",
    ] {
        assert!(
            listing.lines().any(|l| l.ends_with(path)),
            "{path} missing:\n{listing}"
        );
    }
    assert!(
        listing
            .lines()
            .any(|l| l.starts_with("-rw-r-----") && l.ends_with("./etc/portcullis/portcullis.toml")),
        "{listing}"
    );
    let conffiles = ok("dpkg-deb", &["-I", old.to_str().unwrap(), "conffiles"]);
    assert_eq!(conffiles.trim(), CONF);

    let _cleanup = Cleanup;
    let out = ok("dpkg", &["-i", old.to_str().unwrap()]);
    // Installed, not started, not enabled: it needs configuring first.
    assert!(out.contains("installed, not started"), "{out}");
    assert!(!Path::new("/etc/systemd/system/multi-user.target.wants/portcullis.service").exists());
    assert_eq!(mode_owner(STATE), (0o700, "portcullis".into()));
    let conf = std::fs::metadata(CONF).unwrap();
    assert_eq!(conf.permissions().mode() & 0o777, 0o640);
    let config = std::fs::read_to_string(CONF).unwrap();
    assert!(
        config.contains("\ndata_dir = \"/var/lib/portcullis\"\n"),
        "{config}"
    );

    // systemd accepts the installed unit and scores its hardening "OK" (below 2.0).
    // `verify` also loads the units ours refers to (targets, and on a machine with other
    // packages their units): only what it says of ours counts.
    let verify = sh("systemd-analyze", &["verify", UNIT]);
    let stderr = String::from_utf8_lossy(&verify.stderr);
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("portcullis"))
        .collect();
    assert!(verify.status.success() && ours.is_empty(), "{stderr}");
    let security = ok("systemd-analyze", &["security", "--offline=true", UNIT]);
    let score: f64 = security
        .lines()
        .find_map(|l| l.split("portcullis.service: ").nth(1))
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in:\n{security}"));
    assert!(score < 2.0, "exposure {score}:\n{security}");

    // The installed binary as the unit runs it: the doctor is happy, a client is added,
    // the server starts on the package's config and state directory and issues a token.
    let unit = std::fs::read_to_string(UNIT).unwrap();
    let doctor = as_the_unit(&unit, &["/usr/bin/portcullis", "doctor", "--config", CONF])
        .output()
        .unwrap();
    assert!(
        doctor.status.success(),
        "{}",
        String::from_utf8_lossy(&doctor.stdout)
    );
    let add = as_the_unit(
        &unit,
        &[
            "/usr/bin/portcullis",
            "client",
            "add",
            "svc",
            "--config",
            CONF,
        ],
    )
    .output()
    .unwrap();
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let secret = String::from_utf8(add.stdout).unwrap().trim().to_owned();
    let (child, addr) = start(&unit);
    token(addr, &secret);
    stop(child);
    let secrets_path = format!("{STATE}/secrets.toml");
    assert_eq!(mode_owner(&secrets_path), (0o600, "portcullis".into()));
    let secrets_before = std::fs::read(&secrets_path).unwrap();

    // Upgrade over the older build: same data and secrets, the client still works.
    ok("dpkg", &["-i", new.to_str().unwrap()]);
    assert_eq!(installed().as_deref(), Some(NEW));
    assert_eq!(std::fs::read(&secrets_path).unwrap(), secrets_before);
    assert!(PathBuf::from(format!("{STATE}/portcullis.db")).exists());
    let (child, addr) = start(&unit);
    token(addr, &secret);
    stop(child);

    // Purge: the configuration goes, the data stays, and the operator is told.
    let out = ok("dpkg", &["--purge", "portcullis"]);
    assert!(
        out.contains("Left in place") && out.contains(STATE),
        "{out}"
    );
    assert!(!Path::new(CONF).exists());
    assert_eq!(std::fs::read(&secrets_path).unwrap(), secrets_before);
}
