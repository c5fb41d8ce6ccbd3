//! Clients that authenticate without a shared secret (issue 14): `client add
//! --auth-method private_key_jwt --public-key FILE` (PEM or JWKS), `--auth-method
//! self_signed_tls_client_auth --public-key CERT.pem`, `--auth-method tls_client_auth
//! --tls-subject-dn DN`, and `client set-key` to replace their keys. The key material is
//! checked (key types, sizes, no private parts; certificates parse; the DN is RFC 4514)
//! before anything is written, and only public material is stored.

use std::path::PathBuf;
use std::process::ExitCode;

use portcullis_server::client_auth;
use portcullis_store::{ClientAuth, ClientRecord, StoreError};

use super::common::{DataDirArg, open, open_or_create, put_new_client};

/// The key options of `client add`.
#[derive(Debug, clap::Args)]
pub struct KeyArgs {
    /// How the client authenticates at the token endpoint: client_secret_basic (default;
    /// client_secret_post works for the same client), private_key_jwt (RFC 7523 assertions,
    /// with --public-key), self_signed_tls_client_auth (RFC 8705, with --public-key
    /// CERT.pem) or tls_client_auth (RFC 8705, with --tls-subject-dn; the certificate
    /// must chain to [tls] client_ca).
    #[arg(long, value_name = "METHOD", default_value = "client_secret_basic")]
    auth_method: String,
    /// private_key_jwt: the client's public key(s) as PEM (PUBLIC KEY or CERTIFICATE) or
    /// JWKS JSON; self_signed_tls_client_auth: its certificate(s), PEM.
    #[arg(long, value_name = "FILE")]
    public_key: Option<PathBuf>,
    /// tls_client_auth: the subject DN its certificate must carry, e.g.
    /// "CN=billing,O=Example".
    #[arg(long, value_name = "DN")]
    tls_subject_dn: Option<String>,
}

/// Arguments of `client set-key`.
#[derive(Debug, clap::Args)]
pub struct SetKeyArgs {
    /// The client id.
    id: String,
    /// New public key(s) or certificate(s) (private_key_jwt, self_signed_tls_client_auth).
    #[arg(long, value_name = "FILE", conflicts_with = "tls_subject_dn")]
    public_key: Option<PathBuf>,
    /// New subject DN (tls_client_auth).
    #[arg(long, value_name = "DN")]
    tls_subject_dn: Option<String>,
    #[command(flatten)]
    dir: DataDirArg,
}

fn read(path: &std::path::Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.len() > portcullis_store::record::MAX_AUTH_KEY_LEN as u64 {
        return Err(format!(
            "{}: larger than {} bytes",
            path.display(),
            portcullis_store::record::MAX_AUTH_KEY_LEN
        ));
    }
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn material(
    method: &str,
    public_key: Option<&PathBuf>,
    dn: Option<&String>,
) -> Result<ClientAuth, String> {
    let text = match (method, public_key, dn) {
        ("tls_client_auth", None, Some(dn)) => dn.clone(),
        ("tls_client_auth", _, _) => {
            return Err("tls_client_auth needs --tls-subject-dn (and no --public-key)".into());
        }
        (_, Some(p), None) => read(p)?,
        (m, _, _) => {
            return Err(format!(
                "{m} needs --public-key FILE (and no --tls-subject-dn)"
            ));
        }
    };
    client_auth::registration(method, &text)
}

impl KeyArgs {
    /// `None` for a secret client; else the checked registration to store.
    pub fn registration(&self) -> Result<Option<ClientAuth>, String> {
        match self.auth_method.as_str() {
            "client_secret_basic" | "client_secret_post" => {
                if self.public_key.is_some() || self.tls_subject_dn.is_some() {
                    return Err(format!(
                        "{} takes no --public-key or --tls-subject-dn",
                        self.auth_method
                    ));
                }
                Ok(None)
            }
            m => material(m, self.public_key.as_ref(), self.tls_subject_dn.as_ref()).map(Some),
        }
    }
}

/// Store a client that has no secret (nothing to show once).
pub async fn add_keyed(client: ClientRecord, dir: &DataDirArg) -> Result<ExitCode, String> {
    client.validate().map_err(|e| e.to_string())?;
    put_new_client(open_or_create(dir).await?, &client).await?;
    eprintln!(
        "portcullis: client {:?} added; it authenticates with {} (no secret).",
        client.id,
        client.auth.method()
    );
    Ok(ExitCode::SUCCESS)
}

/// `client set-key`.
pub async fn set_key(args: SetKeyArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let store = dir.store();
    let client = store
        .get_client(&args.id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| StoreError::NotFound(format!("client {:?}", args.id)).to_string())?;
    if client.auth == ClientAuth::Secret {
        return Err(format!(
            "client {:?} authenticates with a secret; use `client rotate-secret`",
            args.id
        ));
    }
    let auth = material(
        client.auth.method(),
        args.public_key.as_ref(),
        args.tls_subject_dn.as_ref(),
    )?;
    store
        .set_client_auth(&args.id, &auth)
        .await
        .map_err(|e| e.to_string())?;
    dir.close().await;
    eprintln!(
        "portcullis: client {:?}: {} key material replaced (running servers pick it up \
         within the client cache lifetime).",
        args.id,
        auth.method()
    );
    Ok(ExitCode::SUCCESS)
}
