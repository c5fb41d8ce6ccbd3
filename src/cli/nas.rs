//! `portcullis nas add | list | remove | rotate-secret | set | certificate`: manage RADIUS
//! clients (NAS) in the embedded store (`--data-dir`).
//!
//! A NAS shared secret keys the packet authenticators, so it is sealed under the data
//! directory's master key rather than hashed (see `portcullis_store::nas`). Generated
//! secrets (the default) are 32 random base64url characters shown once on stdout; a chosen
//! one (`--secret-stdin`, for a NAS already configured with it) is read from stdin, never
//! from arguments, and a short one draws a warning (one captured Access-Request lets an
//! attacker test guesses offline).

use std::process::ExitCode;

use portcullis_store::nas::{
    GENERATED_NAS_SECRET_LEN, WEAK_NAS_SECRET_LEN, generate_nas_secret, is_weak_nas_secret,
    parse_nas_cidr, validate_nas_name, validate_nas_secret,
};
use portcullis_store::{Backend, NasCertificate, NasRecord, StoreError};
use zeroize::Zeroizing;

use super::common::{
    DataDirArg, block_on, created_note, now, open, open_or_create, print_table, read_stdin_secret,
};

/// `portcullis nas` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum NasCommand {
    /// Register a RADIUS client. Prints its generated shared secret once on stdout.
    Add(AddArgs),
    /// List RADIUS clients (never their secrets).
    List(ListArgs),
    /// Delete a RADIUS client: its packets are dropped from then on.
    Remove(NameArgs),
    /// Give a RADIUS client a new shared secret (printed once unless read from stdin).
    /// The old one stops working as soon as running servers reload the NAS table
    /// (`radius.nas_refresh_secs`), so configure the NAS right after.
    RotateSecret(RotateArgs),
    /// Change a RADIUS client's settings.
    Set(SetArgs),
    /// Name a RADIUS client by its RadSec (RADIUS over TLS) client certificate, or stop.
    /// Running servers use it from their next NAS table refresh; connections that no
    /// longer match are closed at their next request.
    Certificate(CertificateArgs),
}

/// How a NAS's RadSec client certificate is recognised (at most one).
#[derive(Debug, clap::Args)]
#[group(multiple = false)]
pub struct CertificateChoice {
    /// RadSec: the NAS's client certificate (PEM or DER; the first certificate of a PEM
    /// chain). Its SHA-256 is pinned: exactly that certificate (chained to
    /// `radius.radsec.client_ca`) names this NAS; a renewed one needs `nas certificate`.
    #[arg(long, value_name = "FILE")]
    certificate: Option<std::path::PathBuf>,
    /// RadSec: any certificate from `radius.radsec.client_ca` whose subjectAltName
    /// dNSName (or, without one, subject CN) is NAME names this NAS (renewals keep
    /// working).
    #[arg(long, value_name = "NAME")]
    certificate_name: Option<String>,
}

impl CertificateChoice {
    fn read(&self) -> Result<Option<NasCertificate>, String> {
        match (&self.certificate, &self.certificate_name) {
            (Some(file), _) => portcullis_server::door::tls::pin::pin_file(file)
                .map(Some)
                .map_err(|e| format!("--certificate: {e}")),
            (None, Some(name)) => NasCertificate::name(name)
                .map(Some)
                .map_err(|e| format!("--certificate-name: {e}")),
            (None, None) => Ok(None),
        }
    }
}

/// Arguments of `nas certificate`.
#[derive(Debug, clap::Args)]
pub struct CertificateArgs {
    /// Name of the NAS.
    name: String,
    #[command(flatten)]
    choice: CertificateChoice,
    /// Forget its certificate: it can no longer connect over RadSec.
    #[arg(long, conflicts_with_all = ["certificate", "certificate_name"])]
    none: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `nas add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Name of the NAS (1-64 of A-Z a-z 0-9 . _ -; used in metrics and logs).
    name: String,
    /// Source addresses it sends from: a CIDR (`10.0.0.0/24`, `2001:db8::/64`) or one
    /// address. A request belongs to the most specific NAS containing its source.
    #[arg(long, value_name = "CIDR")]
    address: String,
    /// Read the shared secret (1-128 octets, one line) from stdin instead of generating
    /// one.
    #[arg(long)]
    secret_stdin: bool,
    /// Accept Access-Requests without a Message-Authenticator from this NAS (only for
    /// equipment that cannot send one: it reopens the BlastRADIUS forgery).
    #[arg(long)]
    no_message_authenticator: bool,
    #[command(flatten)]
    certificate: CertificateChoice,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `nas list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print JSON (one array of objects) instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments that name one NAS.
#[derive(Debug, clap::Args)]
pub struct NameArgs {
    /// Name of the NAS.
    name: String,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `nas rotate-secret`.
#[derive(Debug, clap::Args)]
pub struct RotateArgs {
    /// Name of the NAS.
    name: String,
    /// Read the new shared secret (one line) from stdin instead of generating one.
    #[arg(long)]
    secret_stdin: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `nas set`.
#[derive(Debug, clap::Args)]
pub struct SetArgs {
    /// Name of the NAS.
    name: String,
    /// Whether Access-Requests without a valid Message-Authenticator are discarded.
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    require_message_authenticator: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Run a `nas` subcommand.
pub fn run(cmd: NasCommand) -> ExitCode {
    block_on(async move {
        match cmd {
            NasCommand::Add(a) => add(a).await,
            NasCommand::List(a) => list(a).await,
            NasCommand::Remove(a) => remove(a).await,
            NasCommand::RotateSecret(a) => rotate(a).await,
            NasCommand::Set(a) => set(a).await,
            NasCommand::Certificate(a) => certificate(a).await,
        }
    })
}

/// The secret to use: read from stdin (checked, warned about if weak) or generated (to be
/// shown once).
fn new_secret(from_stdin: bool) -> Result<(Zeroizing<Vec<u8>>, bool), String> {
    if from_stdin {
        let secret = read_stdin_secret("shared secret")?;
        validate_nas_secret(&secret).map_err(|e| e.to_string())?;
        if is_weak_nas_secret(&secret) {
            eprintln!(
                "portcullis: warning: a shared secret of {WEAK_NAS_SECRET_LEN} octets or fewer \
                 can be recovered offline from one captured Access-Request; prefer a generated \
                 one ({GENERATED_NAS_SECRET_LEN} characters)."
            );
        }
        Ok((secret, false))
    } else {
        let generated = generate_nas_secret().map_err(|e| e.to_string())?;
        Ok((Zeroizing::new(generated.as_bytes().to_vec()), true))
    }
}

async fn add(args: AddArgs) -> Result<ExitCode, String> {
    // Refuse bad input before reading stdin or creating the data dir.
    validate_nas_name(&args.name).map_err(|e| e.to_string())?;
    let cidr = parse_nas_cidr(&args.address).map_err(|e| e.to_string())?;
    let certificate = args.certificate.read()?;
    let (secret, show) = new_secret(args.secret_stdin)?;
    let dir = open_or_create(&args.dir).await?;
    let record = NasRecord {
        secret_sealed: NasRecord::seal_secret(dir.master_key(), &args.name, &secret)
            .map_err(|e| e.to_string())?,
        name: args.name,
        cidr,
        require_message_authenticator: !args.no_message_authenticator,
        created_at: now(),
        certificate,
    };
    let stored = dir.store().put_nas(&record).await;
    finish(dir).await;
    stored.map_err(|e| e.to_string())?;
    if show {
        print_secret(&secret)?;
        eprintln!(
            "portcullis: NAS {:?} ({}) added. The shared secret above is shown only this once; \
             configure the NAS with it now.",
            record.name, record.cidr
        );
    } else {
        eprintln!("portcullis: NAS {:?} ({}) added.", record.name, record.cidr);
    }
    if let Some(c) = &record.certificate {
        eprintln!("portcullis: NAS {:?}: RadSec certificate {c}.", record.name);
    }
    if args.no_message_authenticator {
        eprintln!(
            "portcullis: warning: NAS {:?} may send Access-Requests without a \
             Message-Authenticator; its replies can be forged (BlastRADIUS, CVE-2024-3596).",
            record.name
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn list(args: ListArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let all = dir.store().list_nas().await;
    dir.close().await;
    let all = all.map_err(|e| e.to_string())?;
    if args.json {
        let rows: Vec<serde_json::Value> = all
            .iter()
            .map(|n| {
                serde_json::json!({
                    "name": n.name,
                    "address": n.cidr.to_string(),
                    "require_message_authenticator": n.require_message_authenticator,
                    "created_at": n.created_at,
                    "certificate": n.certificate.as_ref().map(ToString::to_string),
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(rows));
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 4]> = all
        .iter()
        .map(|n| {
            [
                n.name.clone(),
                n.cidr.to_string(),
                if n.require_message_authenticator {
                    "required".into()
                } else {
                    "optional".into()
                },
                n.certificate
                    .as_ref()
                    .map_or_else(|| "-".into(), ToString::to_string),
            ]
        })
        .collect();
    print_table(
        &[
            "NAS",
            "ADDRESS",
            "MESSAGE_AUTHENTICATOR",
            "RADSEC_CERTIFICATE",
        ],
        &rows,
    );
    Ok(ExitCode::SUCCESS)
}

async fn remove(args: NameArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let removed = dir.store().remove_nas(&args.name).await;
    dir.close().await;
    if !removed.map_err(|e| e.to_string())? {
        return Err(StoreError::NotFound(format!("NAS {:?}", args.name)).to_string());
    }
    eprintln!("portcullis: NAS {:?} removed.", args.name);
    Ok(ExitCode::SUCCESS)
}

async fn rotate(args: RotateArgs) -> Result<ExitCode, String> {
    validate_nas_name(&args.name).map_err(|e| e.to_string())?;
    let dir = open(&args.dir).await?;
    // Check the NAS exists before a secret is read or shown.
    let exists = dir.store().get_nas(&args.name).await;
    if exists.map_err(|e| e.to_string())?.is_none() {
        dir.close().await;
        return Err(StoreError::NotFound(format!("NAS {:?}", args.name)).to_string());
    }
    let (secret, show) = match new_secret(args.secret_stdin) {
        Ok(s) => s,
        Err(e) => {
            dir.close().await;
            return Err(e);
        }
    };
    let sealed = NasRecord::seal_secret(dir.master_key(), &args.name, &secret);
    let stored = match sealed {
        Ok(sealed) => dir.store().set_nas_secret(&args.name, &sealed).await,
        Err(e) => Err(e),
    };
    dir.close().await;
    stored.map_err(|e| e.to_string())?;
    if show {
        print_secret(&secret)?;
    }
    eprintln!(
        "portcullis: NAS {:?}: new shared secret{} is current; running servers use it from \
         their next NAS table refresh.",
        args.name,
        if show {
            " (shown above, only this once)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

async fn set(args: SetArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let done = dir
        .store()
        .set_nas_require_message_authenticator(&args.name, args.require_message_authenticator)
        .await;
    dir.close().await;
    done.map_err(|e| e.to_string())?;
    eprintln!(
        "portcullis: NAS {:?}: Message-Authenticator {}.",
        args.name,
        if args.require_message_authenticator {
            "required"
        } else {
            "optional (replies can be forged: BlastRADIUS)"
        }
    );
    Ok(ExitCode::SUCCESS)
}

async fn certificate(args: CertificateArgs) -> Result<ExitCode, String> {
    let chosen = args.choice.read()?;
    if chosen.is_none() && !args.none {
        return Err(
            "name the certificate (--certificate FILE or --certificate-name NAME) or pass --none"
                .into(),
        );
    }
    let dir = open(&args.dir).await?;
    let done = dir
        .store()
        .set_nas_certificate(&args.name, chosen.as_ref())
        .await;
    dir.close().await;
    done.map_err(|e| e.to_string())?;
    match chosen {
        Some(c) => eprintln!("portcullis: NAS {:?}: RadSec certificate {c}.", args.name),
        None => eprintln!("portcullis: NAS {:?}: no RadSec certificate.", args.name),
    }
    Ok(ExitCode::SUCCESS)
}

/// Close the store, telling the operator if this command created its secrets.
async fn finish(dir: Backend) {
    let created = dir.created().then(|| created_note(&dir));
    dir.close().await;
    if let Some(note) = created {
        eprintln!("{note}");
    }
}

fn print_secret(secret: &[u8]) -> Result<(), String> {
    // Generated secrets are base64url, so this never fails for them.
    let text = std::str::from_utf8(secret).map_err(|_| "generated secret is not text")?;
    println!("{text}");
    Ok(())
}
