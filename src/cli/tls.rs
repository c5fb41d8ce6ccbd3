//! `portcullis tls check --cert C --key K [--suites ...] [--versions ...]`: the start-up
//! check of report 002 on its own, before a certificate is deployed. It loads the chain
//! and key exactly as `serve` would, checks that the key matches the certificate, that
//! KeyUsage allows digitalSignature and ExtendedKeyUsage serverAuth, and that every
//! enabled suite can be served with the key's type; prints the certificate's facts and
//! the suites `serve` would enable. Exit 0 when `serve` would start with it, 2 (and the
//! mismatch on stderr) when it would refuse.

use std::path::PathBuf;
use std::process::ExitCode;

use portcullis_server::tls::{self, TlsSettings, TlsVersion};

/// `portcullis tls` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TlsCommand {
    /// Check a certificate and key against the suites and versions `serve` would enable.
    Check(CheckArgs),
    /// Write a throwaway CA, a server certificate for 127.0.0.1 and localhost, client
    /// certificates (CA-issued and self-signed) and private_key_jwt signing keys into a
    /// directory, for trying HTTPS, mutual TLS and private_key_jwt locally. Not for
    /// production.
    TestPki {
        /// Directory to write into (created).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

/// Arguments of `tls check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// PEM certificate chain, leaf first.
    #[arg(long, value_name = "FILE")]
    cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// Cipher suites by IANA name, comma-separated (default: every suite fit for the
    /// key, as `[tls] cipher_suites = []`).
    #[arg(long, value_name = "SUITES", value_delimiter = ',')]
    suites: Vec<String>,
    /// Versions, comma-separated: 1.2, 1.3 (default both).
    #[arg(
        long,
        value_name = "VERSIONS",
        value_delimiter = ',',
        default_value = "1.2,1.3"
    )]
    versions: Vec<String>,
}

/// Run a `tls` subcommand.
pub fn run(cmd: TlsCommand) -> ExitCode {
    match cmd {
        TlsCommand::Check(a) => check(a),
        TlsCommand::TestPki { out } => match test_pki(&out) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => super::fail(e),
        },
    }
}

fn check(a: CheckArgs) -> ExitCode {
    let mut versions = Vec::new();
    for v in &a.versions {
        match TlsVersion::parse(v.trim()) {
            Some(v) => versions.push(v),
            None => {
                return super::fail(format_args!(
                    "--versions: unsupported version {:?} (use 1.2 and/or 1.3)",
                    v.trim()
                ));
            }
        }
    }
    let settings = TlsSettings {
        versions,
        cipher_suites: a.suites.iter().map(|s| s.trim().to_owned()).collect(),
        // The check is about the server certificate; no client CA file is read.
        client_ca: None,
        ..TlsSettings::new(a.cert.clone(), a.key.clone())
    };
    // Facts first, so a refused certificate still shows what it is.
    let facts = tls::facts::CertFacts::of_pem_file(&a.cert).ok();
    if let Some(f) = &facts {
        println!("{f}");
    }
    match tls::server_config(&settings, None) {
        Ok(server) => {
            println!(
                "suites:             {}",
                tls::suite_names(&server.config).join(", ")
            );
            if facts.as_ref().is_some_and(|f| f.expires_in_secs < 0) {
                eprintln!("portcullis: warning: the certificate has expired");
            }
            println!("ok: `portcullis serve` would start with this certificate and key");
            ExitCode::SUCCESS
        }
        Err(e) => super::fail(format_args!("{}: {e}", a.cert.display())),
    }
}

fn test_pki(out: &std::path::Path) -> Result<(), String> {
    use portcullis_lab::certs;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let e = |e: portcullis_lab::LabError| e.to_string();
    let ca = certs::TestCa::new(out, "ca").map_err(e)?;
    let server = ca
        .server("server", &["127.0.0.1", "localhost"])
        .map_err(e)?;
    let client = ca.client("client", "lab-client").map_err(e)?;
    let own = certs::self_signed_client(out, "self-signed", "lab-self-signed").map_err(e)?;
    let mut keys = Vec::new();
    for alg in ["EdDSA", "ES256", "RS256"] {
        keys.push(certs::signing_key(out, &format!("jwt-{}", alg.to_lowercase()), alg).map_err(e)?);
    }
    println!("CA (tls.ca, [tls] client_ca):    {}", ca.cert.display());
    println!(
        "server ([tls] cert, key):         {} {}",
        server.cert.display(),
        server.key.display()
    );
    println!(
        "client, CN=lab-client (tls_client_auth): {} {}",
        client.cert.display(),
        client.key.display()
    );
    println!(
        "self-signed client:               {} {}",
        own.cert.display(),
        own.key.display()
    );
    for k in keys {
        println!(
            "private_key_jwt key / public key: {} {}",
            k.key.display(),
            k.cert.display()
        );
    }
    Ok(())
}
