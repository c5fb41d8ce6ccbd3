//! `portcullis demo`: start the naive baseline and Portcullis in-process on loopback with
//! temporary data, run the built-in scenarios against both, and write one report comparing
//! them side by side.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use portcullis_demo::{self as demo, BaselineServer, DemoOptions, DemoServer, FreeRadiusServer};

/// Arguments of `portcullis demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Output directory (default ./lab-out/demo-<UTC time>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Short version: fewer, shorter scenarios (under 2 minutes in all on 2 cores with
    /// FreeRADIUS installed; the full demo about 7.5 with slapd installed).
    #[arg(long)]
    pub quick: bool,
    /// No live progress line.
    #[arg(long)]
    pub quiet: bool,
    /// Leave FreeRADIUS out of the RADIUS sections even when it is installed.
    #[arg(long)]
    pub no_freeradius: bool,
    /// Run only these sections, by scenario name (comma-separated; e.g.
    /// `slow-directory,directory-lockout`, `acct-storm-beside-logins`, or
    /// `ldap-binds-wave`: Portcullis' LDAP binds beside slapd).
    #[arg(long, value_name = "SECTIONS", value_delimiter = ',')]
    pub only: Vec<String>,
}

/// Run `portcullis demo`.
pub fn run(args: DemoArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return super::fail(format_args!("cannot start the async runtime: {e}")),
    };
    let baseline = BaselineServer { workers: 16 };
    let portcullis = ours::PortcullisServer::default();
    // FreeRADIUS joins the RADIUS sections when it is installed (issue 12's comparison);
    // the demo never installs anything itself.
    let freeradius = if args.no_freeradius {
        Err("left out by --no-freeradius".to_string())
    } else {
        FreeRadiusServer::find()
    };
    let mut servers: Vec<&dyn DemoServer> = vec![&baseline, &portcullis];
    if let Ok(fr) = &freeradius {
        servers.push(fr);
    }
    let opts = DemoOptions {
        quick: args.quick,
        progress: !args.quiet,
        verify_target: Duration::from_millis(4),
        only: args.only,
    };
    eprintln!(
        "portcullis demo: {} scenarios against the naive baseline and Portcullis{}...",
        if args.quick { "quick" } else { "full" },
        if freeradius.is_ok() {
            " (and FreeRADIUS in the RADIUS ones)"
        } else {
            ""
        }
    );
    // Each part's tables as it ends (the headline first), so the terminal shows results
    // within the first minute rather than one report at the end.
    let mut print = |part: &demo::Finished| {
        for t in &part.tables {
            println!("\n{}", t.to_text());
        }
    };
    let mut report = match rt.block_on(demo::run(&servers, &opts, &mut print)) {
        Ok(r) => r,
        Err(e) => return super::fail(e),
    };
    if let Err(why) = &freeradius {
        report.notes.push(format!(
            "FreeRADIUS is not in the RADIUS sections: {why}. `scripts/radius-tools --server` installs Debian's package; the next demo then runs it beside Portcullis."
        ));
    }
    let out = args.out.unwrap_or_else(|| super::lab::default_out("demo"));
    let path = match report.write(&out) {
        Ok(p) => p,
        Err(e) => return super::fail(e),
    };
    for n in &report.notes {
        println!("{n}");
    }
    println!("report: {}", path.display());
    // The demo's job is to show both; the baseline failing its thresholds is the point.
    ExitCode::SUCCESS
}

/// Portcullis as a demo server: the real token server, started in-process on a loopback
/// port with a temporary data directory and the demo's clients.
mod ours {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU32, Ordering};

    use portcullis_demo::{
        Accounting, BoxFuture, DemoServer, DirectorySetup, LdapSetup, LdapStarted, Setup, Started,
    };
    use portcullis_hash::{Policy, Prf};
    use portcullis_lab::LabError;
    use portcullis_server::{Config, Server};
    use portcullis_store::{ClientRecord, DataDir, Grant, NasRecord, NasStore, UserRecord};

    #[derive(Debug, Default)]
    pub struct PortcullisServer {
        /// Distinguishes the temporary data directories of successive starts.
        starts: AtomicU32,
    }

    fn err(e: impl std::fmt::Display) -> LabError {
        LabError::Target(format!("portcullis: {e}"))
    }

    impl DemoServer for PortcullisServer {
        fn label(&self) -> String {
            "portcullis".into()
        }

        fn about(&self) -> String {
            "portcullis: async front ends (HTTP, and RADIUS over UDP), dedicated hash pool (one thread per core), admission control with fast 503s (RADIUS: early drops), reject delays as timers; IPv4 sources grouped per /32 for the demo so each loopback address counts as its own source; in the 802.1X section [radius.eap] with the demo's certificates and its defaults (EAP-TLS and TTLS/PAP, TLS 1.2 and 1.3, resumption on)".into()
        }

        fn speaks_tls(&self) -> bool {
            true
        }

        fn speaks_eap(&self) -> bool {
            true
        }

        fn speaks_accounting(&self) -> bool {
            true
        }

        fn speaks_directory(&self) -> bool {
            true
        }

        fn speaks_ldap(&self) -> bool {
            true
        }

        fn start_ldap(&self, setup: LdapSetup) -> BoxFuture<Result<LdapStarted, LabError>> {
            let n = self.starts.fetch_add(1, Ordering::Relaxed);
            Box::pin(crate::cli::demo_ldap::start(setup, n))
        }

        fn start(&self, setup: Setup) -> BoxFuture<Result<Started, LabError>> {
            let n = self.starts.fetch_add(1, Ordering::Relaxed);
            Box::pin(async move {
                let dir: PathBuf = std::env::temp_dir()
                    .join(format!("portcullis-demo-{}-{n}", std::process::id()));
                let _ = std::fs::remove_dir_all(&dir);
                let policy = Policy::Pbkdf2 {
                    prf: Prf::Sha256,
                    iterations: setup.iterations,
                };
                let mut verifier = portcullis_core::VerifierConfig {
                    reject_delay_ms: setup.reject_delay.as_millis() as u64,
                    ..Default::default()
                };
                // Every loopback address is a distinct client machine in these scenarios.
                verifier.ipv4_prefix_len = 32;
                let mut config = Config {
                    data_dir: dir.clone(),
                    // Same cost as the stored hashes, so rehash-on-login has nothing to do.
                    policy: policy.clone(),
                    verifier,
                    ..Config::default()
                };
                if let Some(d) = &setup.directory {
                    config.directories = directories(d)?;
                }
                if let Some(secret) = &setup.radius_secret {
                    // One NAS for every loopback source, registered before the server
                    // loads its NAS table; the same delay as the baseline, no jitter.
                    config.radius.listen = vec![std::net::SocketAddr::from(([127, 0, 0, 1], 0))];
                    config.radius.reject_delay = setup.reject_delay;
                    config.radius.reject_jitter = std::time::Duration::ZERO;
                    if setup.accounting {
                        // The same NAS sends accounting to its own loopback port, with
                        // the [accounting] defaults (SQLite, durable group commits).
                        config.radius.accounting_listen =
                            vec![std::net::SocketAddr::from(([127, 0, 0, 1], 0))];
                    }
                    let data = DataDir::open(&dir).await.map_err(err)?;
                    let nas = NasRecord {
                        name: "demo-nas".into(),
                        cidr: portcullis_store::nas::parse_nas_cidr("127.0.0.0/8").map_err(err)?,
                        secret_sealed: NasRecord::seal_secret(
                            data.master_key(),
                            "demo-nas",
                            secret,
                        )
                        .map_err(err)?,
                        require_message_authenticator: true,
                        created_at: portcullis_lab::clock::unix_now(),
                        certificate: None,
                    };
                    let stored = data.store().put_nas(&nas).await;
                    data.close().await;
                    stored.map_err(err)?;
                }
                if let Some(eap) = &setup.eap {
                    // 802.1X with the demo's certificates: EAP-TLS and TTLS/PAP, every
                    // other [radius.eap] setting at its default (resumption on).
                    let file = portcullis_server::radius::eap::config::FileEap {
                        cert: Some(eap.server.cert.clone()),
                        key: Some(eap.server.key.clone()),
                        client_ca: Some(eap.ca.clone()),
                        methods: vec!["tls".into(), "ttls".into()],
                        ..Default::default()
                    };
                    config.radius.eap =
                        portcullis_server::radius::eap::config::EapConfig::from_file(file)
                            .map_err(err)?;
                }
                if let Some(pair) = &setup.tls {
                    config.tls = Some(portcullis_server::tls::TlsSettings::new(
                        pair.cert.clone(),
                        pair.key.clone(),
                    ));
                }
                // Generated secrets are stored as HMAC under the data directory's pepper.
                let pepper = if setup.generated_secrets {
                    let data = DataDir::open(&dir).await.map_err(err)?;
                    let key = data.peppers().current().cloned();
                    data.close().await;
                    Some(
                        key.ok_or("the data directory has no pepper key")
                            .map_err(err)?,
                    )
                } else {
                    None
                };
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .map_err(err)?;
                let server = Server::start(config, Some(listener)).await.map_err(err)?;
                let clients = setup.clients;
                let hashes = tokio::task::spawn_blocking(move || {
                    clients
                        .into_iter()
                        .map(|(id, secret)| match &pepper {
                            Some(k) => Ok((
                                id,
                                portcullis_hash::pepper::PepperedHmac::create(k, secret.as_bytes()),
                            )),
                            None => policy.hash(secret.as_bytes()).map(|h| (id, h)),
                        })
                        .collect::<Result<Vec<_>, _>>()
                })
                .await
                .map_err(err)?
                .map_err(err)?;
                let now = portcullis_lab::clock::unix_now();
                for (id, hash) in hashes {
                    let rec = ClientRecord {
                        id,
                        auth: portcullis_store::ClientAuth::Secret,
                        secret_hashes: vec![hash],
                        // In front of a directory the clients are applications its
                        // users log in through (the password grant).
                        grants: match setup.directory {
                            Some(_) => vec![Grant::ClientCredentials, Grant::Password],
                            None => vec![Grant::ClientCredentials],
                        },
                        scopes: Vec::new(),
                        token_lifetime: 300,
                        created_at: now,
                    };
                    if setup.radius_secret.is_some() && setup.directory.is_none() {
                        // RADIUS users log in with the same names and passwords.
                        let user =
                            UserRecord::new(rec.id.clone(), rec.secret_hashes[0].clone(), now)
                                .map_err(err)?;
                        server.parts().store.put_user(&user).await.map_err(err)?;
                    }
                    server.parts().store.put_client(&rec).await.map_err(err)?;
                }
                let scheme = if setup.tls.is_some() { "https" } else { "http" };
                let url = format!("{scheme}://{}", server.local_addr());
                let radius = server
                    .radius_addrs()
                    .first()
                    .map(|a| format!("radius://{a}"));
                let accounting = server.accounting_addrs().first().map(|a| {
                    let store = server.parts().store.clone();
                    Accounting {
                        url: format!("radius://{a}"),
                        stored: Box::new(move || -> BoxFuture<Result<u64, LabError>> {
                            let store = store.clone();
                            Box::pin(async move {
                                let records =
                                    store.acct_records_since(0, u32::MAX).await.map_err(err)?;
                                Ok(records.len() as u64)
                            })
                        }),
                    }
                });
                Ok(Started {
                    url,
                    metrics: "/metrics".into(),
                    radius,
                    replies_lack_message_authenticator: false,
                    accounting,
                    pool_state: None,
                    stop: Box::new(move || -> BoxFuture<()> {
                        Box::pin(async move {
                            let _ = server.shutdown().await;
                            let _ = std::fs::remove_dir_all(&dir);
                        })
                    }),
                })
            })
        }
    }

    /// The demo's directory as one `[[directory]]` section, written as an operator would:
    /// search-then-bind with the service account (as FreeRADIUS's rlm_ldap beside it),
    /// plain LDAP on loopback, the directory's lockout threshold when it has one, and
    /// timeouts that outlast the relay's hold (a held failure is an answer, not a fault);
    /// everything else at its default.
    fn directories(
        d: &DirectorySetup,
    ) -> Result<Vec<portcullis_server::upstream::FileDirectory>, LabError> {
        let ms = d.answer_timeout.as_millis();
        let lockout = d
            .lockout_threshold
            .map(|n| format!("lockout_threshold = {n}\n"))
            .unwrap_or_default();
        // Debug form of these ASCII strings is a TOML basic string.
        let text = format!(
            "[[directory]]\nname = \"demo-slapd\"\nservers = [\"ldap://{}\"]\nstarttls = false\nallow_plaintext = true\n{lockout}[directory.search]\nbase = {:?}\nfilter = \"(uid={{user}})\"\nservice_dn = {:?}\nservice_password = {:?}\n[directory.timeouts]\nbind_ms = {ms}\nsearch_ms = {ms}\ncheck_ms = {}\n",
            d.addr,
            d.people,
            d.service_dn,
            d.service_password,
            ms + 2000,
        );
        Config::parse(&text).map(|c| c.directories).map_err(err)
    }
}
