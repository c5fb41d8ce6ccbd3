//! `portcullis registration token create | list | revoke`: initial access tokens for RFC
//! 7591 dynamic client registration (`[registration]` in the server's configuration).
//!
//! A token is printed once on stdout as `<id>.<secret>`; the store keeps the id, the
//! SHA-256 of the secret, its expiry, how many registrations it allows and what those
//! clients may be given. The id is what audit events and `list` show.

use std::process::ExitCode;
use std::time::Duration;

use portcullis_store::registration::{
    DEFAULT_REGISTRATION_AUTH_METHODS, generate_token_id, generate_token_secret, hash_token,
};
use portcullis_store::{Grant, InitialAccessToken};

use super::common::{DataDirArg, block_on, now, open, open_or_create, print_table};

/// `portcullis registration` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RegistrationCommand {
    /// Initial access tokens.
    #[command(subcommand)]
    Token(TokenCommand),
}

/// `portcullis registration token` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TokenCommand {
    /// Make an initial access token; prints it once on stdout.
    Create(CreateArgs),
    /// List initial access tokens (ids, uses, expiry; never the secrets).
    List(ListArgs),
    /// Remove an initial access token (clients it registered stay).
    Revoke(RevokeArgs),
}

/// Arguments of `registration token create`.
#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// How long it can be used, e.g. `1h`, `7d` (humantime).
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = humantime::parse_duration)]
    expires_in: Duration,
    /// How many clients it may register.
    #[arg(long, value_name = "N", default_value_t = 1)]
    uses: u32,
    /// A scope its clients may be given (repeat for several; none: no scopes).
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
    /// A grant type its clients may use: client_credentials (default) or password.
    #[arg(long = "grant", value_name = "GRANT")]
    grants: Vec<String>,
    /// A token_endpoint_auth_method its clients may use (default: client_secret_basic,
    /// client_secret_post, private_key_jwt; also tls_client_auth,
    /// self_signed_tls_client_auth).
    #[arg(long = "auth-method", value_name = "METHOD")]
    auth_methods: Vec<String>,
    /// Who it is for (shown by `list`).
    #[arg(long, default_value = "")]
    description: String,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `registration token list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `registration token revoke`.
#[derive(Debug, clap::Args)]
pub struct RevokeArgs {
    /// The token's id (the part before the dot).
    id: String,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Run a `registration` subcommand.
pub fn run(cmd: RegistrationCommand) -> ExitCode {
    block_on(async move {
        match cmd {
            RegistrationCommand::Token(TokenCommand::Create(a)) => create(a).await,
            RegistrationCommand::Token(TokenCommand::List(a)) => list(a).await,
            RegistrationCommand::Token(TokenCommand::Revoke(a)) => revoke(a).await,
        }
    })
}

async fn create(a: CreateArgs) -> Result<ExitCode, String> {
    let grants = if a.grants.is_empty() {
        vec![Grant::ClientCredentials]
    } else {
        a.grants
            .iter()
            .map(|g| g.parse::<Grant>().map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?
    };
    let auth_methods = if a.auth_methods.is_empty() {
        DEFAULT_REGISTRATION_AUTH_METHODS
            .map(str::to_owned)
            .to_vec()
    } else {
        a.auth_methods
    };
    let created_at = now();
    let secs = i64::try_from(a.expires_in.as_secs()).map_err(|_| "--expires-in is too long")?;
    let secret = generate_token_secret().map_err(|e| e.to_string())?;
    let token = InitialAccessToken {
        id: generate_token_id().map_err(|e| e.to_string())?,
        secret_hash: hash_token(&secret),
        description: a.description,
        created_at,
        expires_at: created_at.saturating_add(secs),
        max_uses: a.uses,
        uses: 0,
        scopes: a.scopes,
        grants,
        auth_methods,
    };
    // Refuse bad input before the data directory is created or anything is printed.
    token.validate().map_err(|e| e.to_string())?;
    let dir = open_or_create(&a.dir).await?;
    let stored = dir.store().put_initial_access_token(&token).await;
    dir.close().await;
    stored.map_err(|e| e.to_string())?;
    println!("{}.{}", token.id, secret.as_str());
    eprintln!(
        "portcullis: initial access token {} made ({} registration(s) until {}). It is shown \
         only this once.",
        token.id,
        token.max_uses,
        humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH
                + Duration::from_secs(u64::try_from(token.expires_at).unwrap_or(0))
        )
    );
    Ok(ExitCode::SUCCESS)
}

async fn list(a: ListArgs) -> Result<ExitCode, String> {
    let dir = open(&a.dir).await?;
    let tokens = dir.store().list_initial_access_tokens().await;
    dir.close().await;
    let tokens = tokens.map_err(|e| e.to_string())?;
    let now = now();
    if a.json {
        let rows: Vec<serde_json::Value> = tokens
            .iter()
            .map(|t| {
                serde_json::json!({
                    "id": t.id,
                    "description": t.description,
                    "created_at": t.created_at,
                    "expires_at": t.expires_at,
                    "max_uses": t.max_uses,
                    "uses": t.uses,
                    "usable": t.usable(now),
                    "scopes": t.scopes,
                    "grants": t.grants.iter().map(|g| g.as_str()).collect::<Vec<_>>(),
                    "auth_methods": t.auth_methods,
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(rows));
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 5]> = tokens
        .iter()
        .map(|t| {
            [
                t.id.clone(),
                format!("{}/{}", t.uses, t.max_uses),
                if t.usable(now) { "usable" } else { "spent" }.to_owned(),
                if t.scopes.is_empty() {
                    "-".to_owned()
                } else {
                    t.scopes.join(" ")
                },
                t.description.clone(),
            ]
        })
        .collect();
    print_table(&["ID", "USES", "STATE", "SCOPES", "DESCRIPTION"], &rows);
    Ok(ExitCode::SUCCESS)
}

async fn revoke(a: RevokeArgs) -> Result<ExitCode, String> {
    let dir = open(&a.dir).await?;
    let removed = dir.store().remove_initial_access_token(&a.id).await;
    dir.close().await;
    if removed.map_err(|e| e.to_string())? {
        eprintln!("portcullis: initial access token {} removed.", a.id);
        Ok(ExitCode::SUCCESS)
    } else {
        Err(format!("initial access token {:?} not found", a.id))
    }
}
