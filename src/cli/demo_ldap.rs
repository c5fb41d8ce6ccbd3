//! Portcullis in the demo's "LDAP binds under a guessing wave" section: `portcullis serve`
//! (this very binary) with `[ldap]`, started as a child process. The rest of the demo runs
//! Portcullis inside its own process, but this section reports the server's CPU per bind
//! from `/proc/PID/stat` beside slapd's: in-process, the door's tasks would run on the
//! same runtime threads as the lab's load generator and could not be told apart.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use portcullis_demo::{BoxFuture, LdapSetup, LdapStarted};
use portcullis_hash::{Policy, Prf};
use portcullis_lab::LabError;
use portcullis_lab::relay::simple_bind;
use portcullis_store::{DataDir, UserRecord, UserStore};

/// How long the child may take to answer its first bind.
const READY_WITHIN: Duration = Duration::from_secs(60);
/// How long it may take to stop after SIGTERM before it is killed.
const STOP_WITHIN: Duration = Duration::from_secs(20);

fn err(e: impl std::fmt::Display) -> LabError {
    LabError::Target(format!("portcullis (LDAP): {e}"))
}

/// Starts `portcullis serve` in a fresh temporary directory (start number `n`) with
/// `setup`'s users and a plain LDAP listener on loopback.
pub async fn start(setup: LdapSetup, n: u32) -> Result<LdapStarted, LabError> {
    let dir = std::env::temp_dir().join(format!("portcullis-demo-ldap-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    let started = provision_and_spawn(&setup, &dir).await;
    if started.is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    started
}

async fn provision_and_spawn(setup: &LdapSetup, dir: &Path) -> Result<LdapStarted, LabError> {
    let data = dir.join("data");
    provision(setup, &data).await?;
    // A free port now; the child binds it a moment later (as scripts/ldap-bench does).
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(err)?;
    let config = dir.join("portcullis.toml");
    std::fs::write(&config, config_text(setup, addr)).map_err(err)?;
    let log = std::fs::File::create(dir.join("portcullis.log")).map_err(err)?;
    let exe = std::env::current_exe().map_err(err)?;
    let child = Command::new(exe)
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .arg("--data-dir")
        .arg(&data)
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(err)?)
        .stderr(log)
        .spawn()
        .map_err(err)?;
    let pid = child.id();
    let mut child = Some(child);
    if let Err(e) = ready(&mut child, setup, addr, dir).await {
        if let Some(c) = child {
            stop_child(c).await;
        }
        return Err(e);
    }
    let dir = dir.to_path_buf();
    Ok(LdapStarted {
        addr,
        pid,
        stop: Box::new(move || -> BoxFuture<()> {
            Box::pin(async move {
                if let Some(c) = child {
                    stop_child(c).await;
                }
                let _ = std::fs::remove_dir_all(&dir);
            })
        }),
    })
}

/// The users, hashed as the policy stores them, written before the server starts.
async fn provision(setup: &LdapSetup, data: &Path) -> Result<(), LabError> {
    let policy = Policy::Pbkdf2 {
        prf: Prf::Sha256,
        iterations: setup.iterations,
    };
    let users = setup.users.clone();
    // PBKDF2 x600,000 per user is CPU work: keep it off the runtime.
    let hashes = tokio::task::spawn_blocking(move || {
        users
            .into_iter()
            .map(|(name, password)| policy.hash(password.as_bytes()).map(|h| (name, h)))
            .collect::<Result<Vec<_>, _>>()
    })
    .await
    .map_err(err)?
    .map_err(err)?;
    let store = DataDir::open(data).await.map_err(err)?;
    let now = portcullis_lab::clock::unix_now();
    let mut written = Ok(());
    for (name, hash) in hashes {
        written = match UserRecord::new(name, hash, now) {
            Ok(u) => store.store().put_user(&u).await.map_err(err),
            Err(e) => Err(err(e)),
        };
        if written.is_err() {
            break;
        }
    }
    store.close().await;
    written
}

/// `[ldap]` on `addr`, plain binds allowed (as slapd allows them), the policy of the
/// stored hashes (so rehash-on-login has nothing to do), every loopback address a
/// client machine of its own as in the rest of the demo; everything else at its default.
fn config_text(setup: &LdapSetup, addr: std::net::SocketAddr) -> String {
    format!(
        "[verifier]\nipv4_prefix_len = 32\n\n[policy]\nalgorithm = \"pbkdf2-sha256\"\niterations = {}\n\n[ldap]\nbase_dn = {:?}\nlisten = \"{addr}\"\nallow_plain_binds = true\n",
        setup.iterations, setup.base_dn
    )
}

/// Waits until a user's bind succeeds (the door is up and reads its users), or the child
/// exits, or [`READY_WITHIN`] passes.
async fn ready(
    child: &mut Option<Child>,
    setup: &LdapSetup,
    addr: std::net::SocketAddr,
    dir: &Path,
) -> Result<(), LabError> {
    let (name, password) = setup.users.last().ok_or_else(|| err("no users to serve"))?;
    let dn = format!("uid={name},ou=people,{}", setup.base_dn);
    let deadline = Instant::now() + READY_WITHIN;
    loop {
        if let Some(c) = child.as_mut()
            && let Ok(Some(status)) = c.try_wait()
        {
            *child = None;
            let log = std::fs::read_to_string(dir.join("portcullis.log")).unwrap_or_default();
            let tail: String = log
                .chars()
                .rev()
                .take(2000)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            return Err(err(format!(
                "portcullis serve exited with {status}: {tail}"
            )));
        }
        if let Ok(0) = simple_bind(addr, &dn, password, Duration::from_secs(5)).await {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(err(format!(
                "no bind as {name} succeeded on {addr} within {} s",
                READY_WITHIN.as_secs()
            )));
        }
        // Polling a starting process, not synchronising a test.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// SIGTERM (the server's graceful stop), then SIGKILL after [`STOP_WITHIN`].
async fn stop_child(mut child: Child) {
    let _ = tokio::task::spawn_blocking(move || {
        if let Ok(pid) = libc::pid_t::try_from(child.id()) {
            // SAFETY: kill(2) with our own child's pid, not yet reaped (so not reused).
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + STOP_WITHIN;
        while Instant::now() < deadline {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    })
    .await;
}
