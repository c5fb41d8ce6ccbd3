//! Issue 29: the container image and the compose setup, checked without building an image
//! (a release build inside a container does not fit the suite's time, and this machine
//! cannot pull base images). The Containerfile's final stage runs as a non-root user, keeps
//! its data in a volume, is health-checked by `portcullis healthcheck` and configured by
//! environment variables the binary really reads: the test runs the binary as the image's
//! user on a volume owned like the image's, with the image's own ENV, ENTRYPOINT/CMD and
//! HEALTHCHECK command, and gets "ready". The compose
//! setup's shared configuration passes `config check`.

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
