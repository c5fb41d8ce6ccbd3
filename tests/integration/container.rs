//! Issue 29: the container image and the compose setup. The registry-based `Containerfile`
//! is not built here (a release build inside a container does not fit the suite's time,
//! and this machine cannot pull base images): its final stage runs as a non-root user,
//! keeps its data in a volume, is health-checked by `portcullis healthcheck` and configured
//! by environment variables the binary really reads; the first test runs the binary as the
//! image's user on a volume owned like the image's, with the image's own ENV,
//! ENTRYPOINT/CMD and HEALTHCHECK command, and gets "ready". The compose setup's shared
//! configuration passes `config check`.
//!
//! The image itself is built, registry-free: `scripts/image` lays the suite's debug binary,
//! its shared libraries and the image's files out for `Containerfile.local` (`FROM
//! scratch`, the same settings as the `Containerfile`'s final stage, which the script
//! enforces) and builds it with buildah. Containers cannot run on this machine (crun
//! refuses cgroups hybrid mode), so the test runs the image's own root filesystem with
//! `chroot` as the image's user: a token from it proves the image holds everything the
//! binary needs, and the built image's metadata is compared with the `Containerfile`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::process_support::BIN;

fn repo_file(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The instructions of the Containerfile's last stage, continuation lines joined.
fn final_stage() -> Vec<String> {
    let text = repo_file("Containerfile").replace("\\\n", " ");
    let lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    let last_from = lines.iter().rposition(|l| l.starts_with("FROM ")).unwrap();
    lines[last_from..].to_vec()
}

fn instruction<'a>(stage: &'a [String], name: &str) -> Vec<&'a str> {
    stage
        .iter()
        .filter_map(|l| l.strip_prefix(&format!("{name} ")))
        .map(str::trim)
        .collect()
}

/// A JSON-array instruction (`["a", "b"]`) as its words.
fn exec_form(s: &str) -> Vec<String> {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not an exec-form array: {s}: {e}"))
}

/// `ENV A=1 B=2` pairs of the stage.
fn env_of(stage: &[String]) -> Vec<(String, String)> {
    instruction(stage, "ENV")
        .iter()
        .flat_map(|l| l.split_whitespace())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

#[test]
fn issue_29_the_image_is_non_root_with_a_volume_and_a_healthcheck_that_works() {
    let stage = final_stage();
    // A minimal base with CA certificates, not a distribution with a shell.
    assert!(stage[0].contains("distroless/cc"), "{}", stage[0]);
    let user = instruction(&stage, "USER");
    assert_eq!(user.len(), 1);
    let uid = user[0].split(':').next().unwrap();
    assert!(uid != "0" && uid != "root", "runs as {uid}");
    assert_eq!(
        exec_form(instruction(&stage, "VOLUME")[0]),
        ["/var/lib/portcullis"]
    );
    let entry = exec_form(instruction(&stage, "ENTRYPOINT")[0]);
    assert_eq!(entry, ["/usr/bin/portcullis"]);
    let cmd = exec_form(instruction(&stage, "CMD")[0]);
    assert_eq!(cmd, ["serve"]);
    let health = instruction(&stage, "HEALTHCHECK")[0];
    let check = exec_form(health.split_once("CMD ").unwrap().1);
    assert_eq!(check, ["/usr/bin/portcullis", "healthcheck"]);
    // The data volume belongs to the runtime user (a fresh named volume inherits it).
    assert!(
        stage.iter().any(|l| l.starts_with("COPY")
            && l.contains(&format!("--chown={}", user[0]))
            && l.ends_with("/var/lib/portcullis")),
        "{stage:?}"
    );
    // The build stage makes the release binary the final stage copies.
    let text = repo_file("Containerfile");
    assert!(text.contains("cargo build --release --locked -p portcullis"));

    // Every PORTCULLIS_* the Containerfile documents is one the binary reads.
    let help = Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let documented: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("PORTCULLIS_"))
        .collect();
    assert!(documented.len() >= 5, "{documented:?}");
    for var in documented {
        assert!(
            help.contains(&format!("env: {var}=")),
            "{var} is not read:\n{help}"
        );
    }

    // The image's configuration, run here: ENV + ENTRYPOINT + CMD serve on 0.0.0.0 with
    // the data in the volume path (a temporary directory standing in), and the
    // HEALTHCHECK command with the same environment answers "ready" over loopback.
    let dir = tempfile::tempdir().unwrap();
    let env = env_of(&stage);
    let with_env = |c: &mut Command| {
        c.env_remove("PORTCULLIS_CONFIG").env_remove("RUST_LOG");
        for (k, v) in &env {
            match k.as_str() {
                "PORTCULLIS_DATA_DIR" => c.env(k, dir.path().join("volume")),
                // Port 0: the test cannot hold 8080.
                "PORTCULLIS_HTTP" => c.env(k, v.replace(":8080", ":0")),
                _ => c.env(k, v),
            };
        }
    };
    assert!(
        env.iter()
            .any(|(k, v)| k == "PORTCULLIS_HTTP" && v == "0.0.0.0:8080")
    );
    // The volume as the image has it: owned by the runtime user, 0700; the server runs as
    // that user (setpriv, like USER), so a non-root server on this volume is what is tested.
    let (uid, gid) = user[0].split_once(':').unwrap();
    let volume = dir.path().join("volume");
    std::fs::create_dir(&volume).unwrap();
    std::os::unix::fs::chown(&volume, uid.parse().ok(), gid.parse().ok()).unwrap();
    std::fs::set_permissions(&volume, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let mut serve = Command::new("setpriv");
    serve.args(["--reuid", uid, "--regid", gid, "--clear-groups", BIN]);
    with_env(&mut serve);
    let mut child = serve
        .args(&cmd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = crate::process_support::listening_addr(&mut child);
    assert!(addr.ip().is_unspecified(), "{addr}");
    let mut probe = Command::new(BIN);
    with_env(&mut probe);
    let out = probe
        .args(&check[1..])
        .env("PORTCULLIS_HTTP", addr.to_string())
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ready"));
    let secrets = std::fs::metadata(volume.join("secrets.toml")).unwrap();
    assert_eq!(
        secrets.uid().to_string(),
        uid,
        "the server ran as the image's user"
    );
    assert_eq!(secrets.permissions().mode() & 0o777, 0o600);
}

#[test]
fn issue_29_compose_runs_three_instances_behind_haproxy_on_one_valid_configuration() {
    let compose = repo_file("deploy/compose.yaml");
    for service in [
        "postgres:",
        "redis:",
        "bootstrap:",
        "portcullis-1:",
        "portcullis-2:",
        "portcullis-3:",
        "haproxy:",
    ] {
        assert!(compose.contains(&format!("\n  {service}\n")), "{service}");
    }
    assert!(compose.contains("dockerfile: Containerfile"));
    assert!(compose.contains("condition: service_completed_successfully"));
    // The shared configuration is valid as it stands (a shared store with an issuer).
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/compose/portcullis.toml");
    let out = Command::new(BIN)
        .args(["config", "check", "--offline"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let toml = repo_file("deploy/compose/portcullis.toml");
    // The trusted proxy is HAProxy's fixed address in compose.yaml.
    assert!(toml.contains("trusted_proxies = [\"10.89.29.10\"]"));
    assert!(compose.contains("ipv4_address: 10.89.29.10"));
    let haproxy = repo_file("deploy/compose/haproxy.cfg");
    for i in 1..=3 {
        assert!(
            haproxy.contains(&format!("server p{i} portcullis-{i}:8080 check")),
            "{haproxy}"
        );
    }
    assert!(haproxy.contains("option httpchk GET /readyz"));
}

/// A tool's output, or a test failure naming the tool, its arguments and what it said (a
/// tool refusing at the environment level must fail the test, not skip it).
fn tool(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| {
        panic!("{cmd} cannot run ({e}): scripts/test installs buildah and podman")
    });
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The built image and the working container made from it, removed however the test ends.
struct Image {
    tag: String,
    container: Option<String>,
}

impl Drop for Image {
    fn drop(&mut self) {
        if let Some(c) = &self.container {
            let _ = Command::new("buildah").args(["rm", c]).output();
        }
        let _ = Command::new("podman")
            .args(["rmi", "--force", &self.tag])
            .output();
    }
}

/// A server stopped however the test ends (declared after [`Image`], so dropped before
/// the working container it runs in is removed).
struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `chroot --userspec=UID:GID ROOT ARGS...` with exactly the environment `env`, as the
/// image's USER runs its commands (no /proc or /dev in the root: the binary needs neither).
fn in_image(root: &str, user: &str, env: &[(String, String)], args: &[String]) -> Command {
    // By path: the cleared environment's PATH would be the one searched.
    let mut c = Command::new("/usr/sbin/chroot");
    c.arg(format!("--userspec={user}"))
        .arg(root)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)));
    c
}

#[test]
fn issue_29_the_image_builds_without_a_registry_and_its_root_filesystem_serves_a_token() {
    let stage = final_stage();
    let unique = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let mut image = Image {
        tag: format!("localhost/portcullis-test:{unique}"),
        container: None,
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/image");
    let built = tool(
        script.to_str().unwrap(),
        &["--binary", BIN, "--tag", &image.tag],
    );
    assert_eq!(built.trim(), image.tag);

    // The built image's configuration is the Containerfile's final stage.
    let inspect: serde_json::Value =
        serde_json::from_str(&tool("podman", &["image", "inspect", &image.tag])).unwrap();
    let config = &inspect[0]["Config"];
    let user = instruction(&stage, "USER")[0];
    assert_eq!(user, "65532:65532");
    assert_eq!(config["User"], user);
    assert_eq!(
        config["Volumes"],
        serde_json::json!({"/var/lib/portcullis": {}})
    );
    assert_eq!(config["WorkingDir"], instruction(&stage, "WORKDIR")[0]);
    assert_eq!(config["WorkingDir"], "/var/lib/portcullis");
    let entry = exec_form(instruction(&stage, "ENTRYPOINT")[0]);
    assert_eq!(config["Entrypoint"], serde_json::json!(entry));
    let cmd = exec_form(instruction(&stage, "CMD")[0]);
    assert_eq!(config["Cmd"], serde_json::json!(cmd));
    assert_eq!(entry, ["/usr/bin/portcullis"]);
    assert_eq!(cmd, ["serve"]);
    let ports: Vec<&String> = config["ExposedPorts"].as_object().unwrap().keys().collect();
    assert_eq!(ports, ["1812/udp", "8080/tcp"]);
    // Docker format: an OCI image would have silently lost the HEALTHCHECK.
    let health = &inspect[0]["Healthcheck"];
    let check: Vec<String> = serde_json::from_value(health["Test"].clone()).unwrap();
    assert_eq!(check, ["CMD", "/usr/bin/portcullis", "healthcheck"]);
    assert_eq!(health["Interval"], 10_000_000_000_u64);
    assert_eq!(health["Retries"], 3);
    let image_env: Vec<(String, String)> = config["Env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| {
            let (k, v) = kv.as_str().unwrap().split_once('=').unwrap();
            (k.to_owned(), v.to_owned())
        })
        .collect();
    for kv in env_of(&stage) {
        assert!(image_env.contains(&kv), "{kv:?} not in {image_env:?}");
    }

    // The image's root filesystem, writable (a working container's), laid out as promised.
    let name = format!("portcullis-test-{unique}");
    tool("buildah", &["from", "--name", &name, &image.tag]);
    image.container = Some(name.clone());
    let root = tool("buildah", &["mount", &name]).trim().to_owned();
    let at = |p: &str| Path::new(&root).join(p.trim_start_matches('/'));
    let volume = std::fs::metadata(at("/var/lib/portcullis")).unwrap();
    assert_eq!((volume.uid(), volume.gid()), (65532, 65532));
    assert_eq!(volume.permissions().mode() & 0o7777, 0o700);
    assert_eq!(std::fs::metadata(at("/var/lib")).unwrap().uid(), 0);
    assert!(
        std::fs::read_to_string(at("/etc/passwd"))
            .unwrap()
            .contains(":65532:65532:")
    );
    assert!(
        std::fs::read_to_string(at("/etc/group"))
            .unwrap()
            .contains(":65532:")
    );
    let certs = std::fs::read_to_string(at("/etc/ssl/certs/ca-certificates.crt")).unwrap();
    assert!(certs.contains("BEGIN CERTIFICATE"));
    // Minimal: no shell, no package manager.
    assert!(!at("/bin/sh").exists() && !at("/usr/bin/dpkg").exists());

    // The image's binary on the image's libraries, as the image's user, with the image's
    // environment (the HTTP port 0: the test cannot hold 8080): a client is added to the
    // volume, the server starts from ENTRYPOINT + CMD and issues a token.
    let env: Vec<(String, String)> = image_env
        .iter()
        .map(|(k, v)| match k.as_str() {
            "PORTCULLIS_HTTP" => (k.clone(), v.replace(":8080", ":0")),
            _ => (k.clone(), v.clone()),
        })
        .collect();
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let add = in_image(
        &root,
        user,
        &env,
        &words(&["/usr/bin/portcullis", "client", "add", "svc"]),
    )
    .output()
    .unwrap();
    assert!(
        add.status.success(),
        "the image's binary cannot run in its own root: {}",
        String::from_utf8_lossy(&add.stderr)
    );
    let secret = String::from_utf8(add.stdout).unwrap().trim().to_owned();
    let mut server = Kill(
        in_image(&root, user, &env, &[entry, cmd].concat())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let addr = crate::process_support::listening_addr(&mut server.0);
    assert!(addr.ip().is_unspecified(), "{addr}");
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], addr.port()));
    let (status, _, body) = crate::process_support::post(
        loopback,
        "/oauth2/token",
        ("svc", &secret),
        "grant_type=client_credentials",
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"access_token\""), "{body}");
    // The HEALTHCHECK command, run the same way, finds it ready.
    let mut probe_env = env.clone();
    for (k, v) in &mut probe_env {
        if k == "PORTCULLIS_HTTP" {
            *v = addr.to_string();
        }
    }
    let probe = in_image(&root, user, &probe_env, &check[1..])
        .output()
        .unwrap();
    assert!(
        probe.status.success(),
        "{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    assert!(String::from_utf8_lossy(&probe.stdout).contains("ready"));
    // The server wrote its data into the image's volume as the image's user.
    let secrets = std::fs::metadata(at("/var/lib/portcullis/secrets.toml")).unwrap();
    assert_eq!(
        (secrets.uid(), secrets.permissions().mode() & 0o777),
        (65532, 0o600)
    );
}
