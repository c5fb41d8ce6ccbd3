//! `portcullis client add | list | remove | rotate-secret`: manage OAuth clients in the
//! embedded store (`--data-dir`).
//!
//! Generated secrets (the default) are 256 random bits shown once on stdout and stored as
//! HMAC-SHA256 under the data directory's pepper, so verifying them costs microseconds
//! and a database dump alone cannot be used to check guesses. A secret chosen by the
//! operator (`--secret-stdin`) may be guessable, so it is stored under the slow KDF
//! policy instead. Secrets are read from stdin only, never from arguments.
//!
//! Also holds the helpers the `user` commands share (runtime, stdin, clock).

use std::process::ExitCode;

use portcullis_hash::pepper::PepperedHmac;
use portcullis_hash::{Credential, Policy};
use portcullis_store::record::{validate_name, validate_settings};
use portcullis_store::{
    Backend, ClientRecord, DEFAULT_TOKEN_LIFETIME, Grant, StoreError, generate_client_secret,
};
use zeroize::Zeroizing;

use super::common::{
    DataDirArg, block_on, now, open, open_or_create, print_table, put_new_client, read_stdin_secret,
};

/// `portcullis client` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ClientCommand {
    /// Register a client. Prints its generated secret once on stdout.
    Add(AddArgs),
    /// List clients (never their secrets).
    List(ListArgs),
    /// Change a client's scopes, grants or token lifetime (options not given are kept;
    /// its secrets are untouched).
    Update(UpdateArgs),
    /// Delete a client.
    Remove(RemoveArgs),
    /// Give a client a new secret; the previous one stays valid until `--finish` or the
    /// next rotation, so deployed copies can be updated without downtime.
    RotateSecret(RotateArgs),
    /// Replace the public keys, certificates or subject DN of a client that
    /// authenticates without a secret (same method; a JWKS may hold the old and the new
    /// key during a rotation).
    SetKey(super::client_keys::SetKeyArgs),
    /// Add a new pepper key to the data directory's secrets file and make it current.
    /// Secrets generated afterwards are hashed under it; existing ones keep verifying
    /// under their old key. Send running servers SIGHUP (or restart them) so they load it.
    RotatePepper(RotatePepperArgs),
}

/// Arguments of `client rotate-pepper`.
#[derive(Debug, clap::Args)]
pub struct RotatePepperArgs {
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `client add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The client id (1-255 characters, no control characters).
    id: String,
    /// A scope the client may request (repeat for several).
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
    /// A grant type the client may use: client_credentials (default) or password
    /// (repeat for several).
    #[arg(long = "grant", value_name = "GRANT")]
    grants: Vec<String>,
    /// Lifetime of its access tokens in seconds (60-86400).
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_TOKEN_LIFETIME)]
    token_lifetime: u32,
    /// Read a chosen secret as one line from stdin instead of generating one (stored
    /// under the slow KDF policy, since a chosen secret may be guessable).
    #[arg(long, conflicts_with_all = ["public_key", "tls_subject_dn"])]
    secret_stdin: bool,
    #[command(flatten)]
    keyed: super::client_keys::KeyArgs,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `client update`.
#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// The client id.
    id: String,
    /// Replace the client's scopes with these (repeat for several).
    #[arg(long = "scope", value_name = "SCOPE", conflicts_with = "clear_scopes")]
    scopes: Vec<String>,
    /// Remove all of the client's scopes.
    #[arg(long)]
    clear_scopes: bool,
    /// Replace the client's grant types with these (repeat for several).
    #[arg(long = "grant", value_name = "GRANT")]
    grants: Vec<String>,
    /// New lifetime of its access tokens in seconds (60-86400).
    #[arg(long, value_name = "SECS")]
    token_lifetime: Option<u32>,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `client list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print JSON (one array of objects) instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `client remove`.
#[derive(Debug, clap::Args)]
pub struct RemoveArgs {
    /// The client id.
    id: String,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `client rotate-secret`.
#[derive(Debug, clap::Args)]
pub struct RotateArgs {
    /// The client id.
    id: String,
    /// Read the new secret as one line from stdin instead of generating one.
    #[arg(long, conflicts_with = "finish")]
    secret_stdin: bool,
    /// End the rotation: drop the previous secret, keep only the current one.
    #[arg(long)]
    finish: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Run a `client` subcommand.
pub fn run(cmd: ClientCommand) -> ExitCode {
    block_on(async move {
        match cmd {
            ClientCommand::Add(a) => add(a).await,
            ClientCommand::List(a) => list(a).await,
            ClientCommand::Update(a) => update(a).await,
            ClientCommand::Remove(a) => remove(a).await,
            ClientCommand::RotateSecret(a) => rotate(a).await,
            ClientCommand::SetKey(a) => super::client_keys::set_key(a).await,
            ClientCommand::RotatePepper(a) => rotate_pepper(a).await,
        }
    })
}

async fn add(args: AddArgs) -> Result<ExitCode, String> {
    let grants = if args.grants.is_empty() {
        vec![Grant::ClientCredentials]
    } else {
        parse_grants(&args.grants)?
    };
    let scopes = dedup(args.scopes);
    // Refuse bad input before reading stdin, running a KDF or creating the data dir.
    validate_name("client id", &args.id).map_err(|e| e.to_string())?;
    validate_settings(&grants, &scopes, args.token_lifetime).map_err(|e| e.to_string())?;
    if let Some(auth) = args.keyed.registration()? {
        let client = ClientRecord {
            id: args.id,
            auth,
            secret_hashes: Vec::new(),
            grants,
            scopes,
            token_lifetime: args.token_lifetime,
            created_at: now(),
        };
        return super::client_keys::add_keyed(client, &args.dir).await;
    }
    let chosen = if args.secret_stdin {
        Some(hash_stdin_secret()?)
    } else {
        None
    };
    let dir = open_or_create(&args.dir).await?;
    let (hash, shown) = match chosen {
        Some(hash) => (hash, None),
        None => generate_secret_hash(&dir)?,
    };
    let client = ClientRecord {
        id: args.id,
        auth: portcullis_store::ClientAuth::Secret,
        secret_hashes: vec![hash],
        grants,
        scopes,
        token_lifetime: args.token_lifetime,
        created_at: now(),
    };
    // Validate before anything is printed, so a refused client never shows a secret.
    put_new_client(dir, &client).await?;
    if let Some(secret) = shown {
        println!("{}", secret.as_str());
        eprintln!(
            "portcullis: client {:?} added. The secret above is shown only this once; store it now.",
            client.id
        );
    } else {
        eprintln!("portcullis: client {:?} added.", client.id);
    }
    Ok(ExitCode::SUCCESS)
}

async fn list(args: ListArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let clients = dir
        .store()
        .list_clients()
        .await
        .map_err(|e| e.to_string())?;
    dir.close().await;
    if args.json {
        let rows: Vec<serde_json::Value> = clients
            .iter()
            .map(|c| {
                serde_json::json!({
                    "client_id": c.id,
                    "grants": c.grants.iter().map(|g| g.as_str()).collect::<Vec<_>>(),
                    "scopes": c.scopes,
                    "token_lifetime": c.token_lifetime,
                    "auth_method": c.auth.method(),
                    "secrets": c.secret_hashes.len(),
                    "secret_kind": c.secret_hashes.first().map(|h| secret_kind(h)),
                    "created_at": c.created_at,
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(rows));
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 5]> = clients
        .iter()
        .map(|c| {
            [
                c.id.clone(),
                join(c.grants.iter().map(|g| g.as_str()), ","),
                if c.scopes.is_empty() {
                    "-".to_owned()
                } else {
                    c.scopes.join(" ")
                },
                c.token_lifetime.to_string(),
                match c.secret_hashes.as_slice() {
                    [] => c.auth.method().to_owned(),
                    [h] => secret_kind(h).to_owned(),
                    [h, ..] => format!("{} (rotating)", secret_kind(h)),
                },
            ]
        })
        .collect();
    print_table(
        &[
            "CLIENT_ID",
            "GRANTS",
            "SCOPES",
            "LIFETIME",
            "AUTHENTICATION",
        ],
        &rows,
    );
    Ok(ExitCode::SUCCESS)
}

async fn update(args: UpdateArgs) -> Result<ExitCode, String> {
    if args.scopes.is_empty()
        && !args.clear_scopes
        && args.grants.is_empty()
        && args.token_lifetime.is_none()
    {
        return Err(
            "nothing to update: give --scope, --clear-scopes, --grant or --token-lifetime".into(),
        );
    }
    let dir = open(&args.dir).await?;
    let store = dir.store();
    let client = store
        .get_client(&args.id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| StoreError::NotFound(format!("client {:?}", args.id)).to_string())?;
    let grants = if args.grants.is_empty() {
        client.grants
    } else {
        parse_grants(&args.grants)?
    };
    let scopes = if args.clear_scopes {
        Vec::new()
    } else if args.scopes.is_empty() {
        client.scopes
    } else {
        dedup(args.scopes)
    };
    let lifetime = args.token_lifetime.unwrap_or(client.token_lifetime);
    store
        .update_client_settings(&args.id, &grants, &scopes, lifetime)
        .await
        .map_err(|e| e.to_string())?;
    dir.close().await;
    eprintln!("portcullis: client {:?} updated.", args.id);
    Ok(ExitCode::SUCCESS)
}

fn parse_grants(names: &[String]) -> Result<Vec<Grant>, String> {
    let mut grants = Vec::new();
    for g in names {
        let g: Grant = g.parse().map_err(|e: StoreError| e.to_string())?;
        if !grants.contains(&g) {
            grants.push(g);
        }
    }
    Ok(grants)
}

/// Drop repeated values, keeping the first occurrence's order.
fn dedup(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for s in items {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

async fn remove(args: RemoveArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let removed = dir
        .store()
        .remove_client(&args.id)
        .await
        .map_err(|e| e.to_string())?;
    dir.close().await;
    if !removed {
        return Err(StoreError::NotFound(format!("client {:?}", args.id)).to_string());
    }
    eprintln!("portcullis: client {:?} removed.", args.id);
    Ok(ExitCode::SUCCESS)
}

async fn rotate(args: RotateArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let store = dir.store();
    if args.finish {
        let dropped = store
            .finish_client_rotation(&args.id)
            .await
            .map_err(|e| e.to_string())?;
        dir.close().await;
        if dropped {
            eprintln!(
                "portcullis: client {:?}: previous secret dropped; only the current one is valid.",
                args.id
            );
        } else {
            eprintln!(
                "portcullis: client {:?} has no previous secret; nothing to finish.",
                args.id
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let client = store
        .get_client(&args.id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| StoreError::NotFound(format!("client {:?}", args.id)).to_string())?;
    if client.auth != portcullis_store::ClientAuth::Secret {
        return Err(format!(
            "client {:?} authenticates with {} and has no secret; use `client set-key`",
            args.id,
            client.auth.method()
        ));
    }
    let (hash, shown) = if args.secret_stdin {
        (hash_stdin_secret()?, None)
    } else {
        generate_secret_hash(&dir)?
    };
    // The new secret becomes current and the current one previous, in one atomic step
    // (a concurrent rotation cannot make a printed secret silently invalid); an older
    // previous secret is dropped, so at most two are ever valid.
    store
        .rotate_client_secret(&args.id, &hash)
        .await
        .map_err(|e| e.to_string())?;
    dir.close().await;
    if let Some(secret) = shown {
        println!("{}", secret.as_str());
    }
    eprintln!(
        "portcullis: client {:?}: new secret is current{}; the previous one stays valid until \
         `portcullis client rotate-secret {} --finish` or the next rotation.",
        args.id,
        if args.secret_stdin {
            ""
        } else {
            " (shown above, only this once)"
        },
        args.id
    );
    if secret_kind(&hash) != "generated" && secret_kind(&client.secret_hashes[0]) != "generated" {
        eprintln!(
            "portcullis: note: the new and the previous secret are both KDF-hashed, so until \
             `--finish` a wrong secret costs two KDF runs instead of one."
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn rotate_pepper(args: RotatePepperArgs) -> Result<ExitCode, String> {
    let mut dir = open(&args.dir).await?;
    let id = dir.rotate_pepper().map_err(|e| e.to_string())?;
    dir.close().await;
    eprintln!(
        "portcullis: pepper {id:?} is now current for new client secrets; older peppers are \
         kept for existing secrets. Send running servers SIGHUP (kill -HUP PID) to load it."
    );
    Ok(ExitCode::SUCCESS)
}

/// Read a chosen secret from stdin and hash it under the KDF policy (a chosen secret may
/// be guessable, so it gets the slow hash).
fn hash_stdin_secret() -> Result<String, String> {
    let secret = read_stdin_secret("secret")?;
    Policy::default().hash(&secret).map_err(|e| e.to_string())
}

/// Generate a secret and hash it under the data directory's current pepper; the secret
/// is returned for display.
fn generate_secret_hash(dir: &Backend) -> Result<(String, Option<Zeroizing<String>>), String> {
    let secret = generate_client_secret().map_err(|e| e.to_string())?;
    let peppers = dir.peppers();
    let key = peppers
        .current()
        .ok_or("the data directory has no current pepper key")?;
    Ok((PepperedHmac::create(key, secret.as_bytes()), Some(secret)))
}

/// "generated" for peppered HMAC secrets, else the KDF's name.
fn secret_kind(hash: &str) -> &'static str {
    match Credential::parse(hash) {
        Ok(Credential::Peppered(_)) => "generated",
        Ok(c) => c.algorithm(),
        Err(_) => "unrecognised",
    }
}

fn join<'a>(items: impl Iterator<Item = &'a str>, sep: &str) -> String {
    items.collect::<Vec<_>>().join(sep)
}
