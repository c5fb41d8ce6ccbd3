//! `portcullis user add | list | show | set | remove | disable | enable | set-password |
//! import`: manage users in the embedded store (`--data-dir`), with their directory
//! attributes (issue 39; flags and import columns in [`super::user_attrs`]).
//!
//! Passwords are read from stdin only and hashed under the current KDF policy; `import`
//! brings existing hashes from other systems over unchanged (they are upgraded on the
//! user's next login by rehash-on-login).

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use portcullis_hash::{Credential, Format, Policy};
use portcullis_server::admin::directory::Attributes;
use portcullis_store::{StoreError, UserAttributes, UserRecord};

use super::user_attrs::{self, AttrArgs, Unset};

use super::common::{
    DataDirArg, block_on, created_note, now, open, open_or_create, print_table, read_stdin_secret,
};

/// `portcullis user` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum UserCommand {
    /// Add a user with a password read from stdin.
    Add(AddArgs),
    /// List users (never their hashes).
    List(ListArgs),
    /// Show one user: entryUUID, directory attributes, groups (never its hash).
    Show(ShowArgs),
    /// Set or clear a user's directory attributes (names, mail, POSIX account).
    Set(SetArgs),
    /// Delete a user.
    Remove(NameArgs),
    /// Disable a user: logins are rejected as if the user did not exist.
    Disable(NameArgs),
    /// Re-enable a disabled user.
    Enable(NameArgs),
    /// Replace a user's password with one read from stdin.
    SetPassword(SetPasswordArgs),
    /// Import users with their existing password hashes from another system: a file of
    /// `username<TAB>stored-hash` lines (optionally followed by `<TAB>key=value`
    /// columns: cn, sn, given_name, display_name, mail, uid_number, gid_number,
    /// home_directory, login_shell), or a Keycloak realm export (JSON; firstName,
    /// lastName, email and the uidNumber/gidNumber/homeDirectory/loginShell attributes
    /// are taken).
    ///
    /// Hashes are kept as they are and upgraded to the current policy on each user's next
    /// login. Prints how many users were imported; each refused entry is reported on
    /// stderr with its line number and reason. Exit status: 0 all imported, 1 some
    /// entries refused, 2 the file could not be read at all.
    Import(ImportArgs),
}

/// Arguments of `user import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Read every hash as this format instead of detecting it (phc, bcrypt, passlib,
    /// django, aspnet, freeradius, werkzeug, keycloak, ldap).
    #[arg(long)]
    format: Option<String>,
    /// The file to import.
    file: PathBuf,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `user add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The username (1-255 characters, no control characters).
    name: String,
    /// Read the password as one line from stdin (required: passwords never go in
    /// arguments, which other users can read in the process table).
    #[arg(long, required = true)]
    password_stdin: bool,
    /// Create the user disabled.
    #[arg(long)]
    disabled: bool,
    #[command(flatten)]
    attrs: AttrArgs,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `user show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The username.
    name: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `user set`.
#[derive(Debug, clap::Args)]
pub struct SetArgs {
    /// The username.
    name: String,
    #[command(flatten)]
    attrs: AttrArgs,
    /// Clear an attribute (repeatable; `posix` clears the whole POSIX account).
    #[arg(long, value_enum)]
    unset: Vec<Unset>,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `user list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print JSON (one array of objects) instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// A username and the data directory.
#[derive(Debug, clap::Args)]
pub struct NameArgs {
    /// The username.
    name: String,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `user set-password`.
#[derive(Debug, clap::Args)]
pub struct SetPasswordArgs {
    /// The username.
    name: String,
    /// Read the new password as one line from stdin (required).
    #[arg(long, required = true)]
    password_stdin: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Run a `user` subcommand.
pub fn run(cmd: UserCommand) -> ExitCode {
    block_on(async move {
        match cmd {
            UserCommand::Add(a) => add(a).await,
            UserCommand::List(a) => list(a).await,
            UserCommand::Show(a) => show(a).await,
            UserCommand::Set(a) => set(a).await,
            UserCommand::Remove(a) => remove(a).await,
            UserCommand::Disable(a) => set_disabled(a, true).await,
            UserCommand::Enable(a) => set_disabled(a, false).await,
            UserCommand::SetPassword(a) => set_password(a).await,
            UserCommand::Import(a) => import(a).await,
        }
    })
}

/// Hash a password from stdin under the current policy.
fn hash_stdin_password() -> Result<String, String> {
    let password = read_stdin_secret("password")?;
    Policy::default().hash(&password).map_err(|e| e.to_string())
}

async fn add(args: AddArgs) -> Result<ExitCode, String> {
    // Check the name before spending a KDF run or touching the data directory.
    portcullis_store::record::validate_name("username", &args.name).map_err(|e| e.to_string())?;
    let mut attributes = UserAttributes::default();
    args.attrs.apply(&mut attributes, &[])?;
    let password_hash = hash_stdin_password()?;
    let mut user = UserRecord::new(args.name, password_hash, now()).map_err(|e| e.to_string())?;
    user.disabled = args.disabled;
    user.attributes = attributes;
    let dir = open_or_create(&args.dir).await?;
    dir.store()
        .put_user(&user)
        .await
        .map_err(|e| e.to_string())?;
    let created = dir.created().then(|| created_note(&dir));
    dir.close().await;
    if let Some(note) = created {
        eprintln!("{note}");
    }
    eprintln!("portcullis: user {:?} added.", user.username);
    Ok(ExitCode::SUCCESS)
}

async fn list(args: ListArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let users = dir.store().list_users().await.map_err(|e| e.to_string())?;
    dir.close().await;
    let algorithm = |u: &UserRecord| {
        Credential::parse(&u.password_hash).map_or("unrecognised", |c| c.algorithm())
    };
    if args.json {
        let rows: Vec<serde_json::Value> = users
            .iter()
            .map(|u| {
                serde_json::json!({
                    "username": u.username,
                    "disabled": u.disabled,
                    "algorithm": algorithm(u),
                    "created_at": u.created_at,
                    "entry_uuid": u.entry_uuid.to_string(),
                    "attributes": Attributes::from_store(&u.attributes),
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(rows));
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 3]> = users
        .iter()
        .map(|u| {
            [
                u.username.clone(),
                if u.disabled { "disabled" } else { "enabled" }.to_owned(),
                algorithm(u).to_owned(),
            ]
        })
        .collect();
    print_table(&["USERNAME", "STATUS", "HASH"], &rows);
    Ok(ExitCode::SUCCESS)
}

async fn show(args: ShowArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let store = dir.store();
    let found = store
        .get_user(&args.name)
        .await
        .map_err(|e| e.to_string())?;
    let groups = store
        .groups_of_user(&args.name)
        .await
        .map_err(|e| e.to_string())?;
    dir.close().await;
    let u =
        found.ok_or_else(|| StoreError::NotFound(format!("user {:?}", args.name)).to_string())?;
    let a = &u.attributes;
    if args.json {
        let v = serde_json::json!({
            "username": u.username,
            "disabled": u.disabled,
            "created_at": u.created_at,
            "entry_uuid": u.entry_uuid.to_string(),
            "attributes": Attributes::from_store(a),
            "groups": groups,
        });
        println!("{v}");
        return Ok(ExitCode::SUCCESS);
    }
    let posix = a.posix.as_ref();
    let rows: Vec<[String; 2]> = [
        ("username", Some(u.username.clone())),
        (
            "status",
            Some(if u.disabled { "disabled" } else { "enabled" }.into()),
        ),
        ("entryUUID", Some(u.entry_uuid.to_string())),
        ("cn", Some(a.common_name(&u.username).to_owned())),
        ("sn", Some(a.surname(&u.username).to_owned())),
        ("givenName", a.given_name.clone()),
        ("displayName", a.display_name.clone()),
        ("mail", a.mail.clone()),
        ("uidNumber", posix.map(|p| p.uid_number.to_string())),
        ("gidNumber", posix.map(|p| p.gid_number.to_string())),
        ("homeDirectory", posix.map(|p| p.home_directory.clone())),
        ("loginShell", posix.and_then(|p| p.login_shell.clone())),
        ("memberOf", Some(groups.join(", "))),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| [k.to_owned(), v]))
    .collect();
    print_table(&["ATTRIBUTE", "VALUE"], &rows);
    Ok(ExitCode::SUCCESS)
}

async fn set(args: SetArgs) -> Result<ExitCode, String> {
    if args.attrs.is_empty() && args.unset.is_empty() {
        return Err("nothing to set: give attribute flags or --unset".into());
    }
    let dir = open(&args.dir).await?;
    let store = dir.store();
    let user = store
        .get_user(&args.name)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| StoreError::NotFound(format!("user {:?}", args.name)).to_string())?;
    let mut attributes = user.attributes;
    args.attrs.apply(&mut attributes, &args.unset)?;
    let r = store.set_user_attributes(&args.name, &attributes).await;
    dir.close().await;
    r.map_err(|e| e.to_string())?;
    eprintln!("portcullis: attributes of user {:?} set.", args.name);
    Ok(ExitCode::SUCCESS)
}

async fn remove(args: NameArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let removed = dir
        .store()
        .remove_user(&args.name)
        .await
        .map_err(|e| e.to_string())?;
    dir.close().await;
    if !removed {
        return Err(StoreError::NotFound(format!("user {:?}", args.name)).to_string());
    }
    eprintln!("portcullis: user {:?} removed.", args.name);
    Ok(ExitCode::SUCCESS)
}

async fn set_disabled(args: NameArgs, disabled: bool) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    dir.store()
        .set_user_disabled(&args.name, disabled)
        .await
        .map_err(|e| e.to_string())?;
    dir.close().await;
    eprintln!(
        "portcullis: user {:?} {}.",
        args.name,
        if disabled { "disabled" } else { "enabled" }
    );
    Ok(ExitCode::SUCCESS)
}

async fn set_password(args: SetPasswordArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    // Fail on an unknown user before reading the password and running the KDF.
    if dir
        .store()
        .get_user(&args.name)
        .await
        .map_err(|e| e.to_string())?
        .is_none()
    {
        return Err(StoreError::NotFound(format!("user {:?}", args.name)).to_string());
    }
    let hash = hash_stdin_password()?;
    dir.store()
        .set_user_password(&args.name, &hash)
        .await
        .map_err(|e| e.to_string())?;
    dir.close().await;
    eprintln!("portcullis: password of user {:?} replaced.", args.name);
    Ok(ExitCode::SUCCESS)
}

/// Refuse, with their line, entries whose uidNumber another user holds (stored, or an
/// earlier line), so one clash does not refuse the whole import; entries whose username
/// is taken pass (the store leaves them unchanged and says so).
fn uid_clashes(
    lines: Vec<usize>,
    users: Vec<UserRecord>,
    existing: &[UserRecord],
    rejected: &mut Vec<(usize, String)>,
) -> (Vec<usize>, Vec<UserRecord>) {
    let uid = |u: &UserRecord| u.attributes.posix.as_ref().map(|p| p.uid_number);
    let mut held: std::collections::HashMap<u32, String> = existing
        .iter()
        .filter_map(|u| Some((uid(u)?, u.username.clone())))
        .collect();
    let taken: std::collections::HashSet<&str> =
        existing.iter().map(|u| u.username.as_str()).collect();
    let mut keep = (Vec::new(), Vec::new());
    for (line, user) in lines.into_iter().zip(users) {
        if let Some(n) = uid(&user).filter(|_| !taken.contains(user.username.as_str())) {
            if let Some(owner) = held.get(&n) {
                rejected.push((line, format!("uidNumber {n} is already user {owner:?}'s")));
                continue;
            }
            held.insert(n, user.username.clone());
        }
        keep.0.push(line);
        keep.1.push(user);
    }
    keep
}

/// Per accepted line, the attributes beside its hash or why they were refused.
type ExtraMap = std::collections::HashMap<usize, Result<UserAttributes, String>>;

/// The hashes of an import file and the attributes beside them.
fn read_import(
    input: &[u8],
    format: Option<Format>,
) -> (portcullis_hash::import::ImportReport, ExtraMap) {
    let body = input.strip_prefix(b"\xef\xbb\xbf").unwrap_or(input);
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        let report = portcullis_hash::import::import(body, format);
        // The export's user objects are matched to accepted entries by username.
        let mut by_user = user_attrs::from_keycloak(body);
        let extra = report
            .accepted
            .iter()
            .filter_map(|(line, user, _)| by_user.remove(user).map(|a| (*line, a)))
            .collect();
        return (report, extra);
    }
    let (lines, extra) = user_attrs::split_text(body);
    (portcullis_hash::import::import_lines(&lines, format), extra)
}

/// Largest import file read, in bytes (a million users is well under 200 MiB).
const MAX_IMPORT_BYTES: u64 = 1 << 30;

async fn import(args: ImportArgs) -> Result<ExitCode, String> {
    let format = args
        .format
        .as_deref()
        .map(str::parse::<Format>)
        .transpose()
        .map_err(|e| e.to_string())?;
    let mut input = Vec::new();
    std::fs::File::open(&args.file)
        .and_then(|f| f.take(MAX_IMPORT_BYTES + 1).read_to_end(&mut input))
        .map_err(|e| format!("reading {}: {e}", args.file.display()))?;
    if input.len() as u64 > MAX_IMPORT_BYTES {
        return Err(format!(
            "{} is larger than {MAX_IMPORT_BYTES} bytes",
            args.file.display()
        ));
    }
    let (report, mut extra) = read_import(&input, format);
    drop(input);
    let mut rejected = report.rejected;
    let created_at = now();
    let mut lines = Vec::with_capacity(report.accepted.len());
    let mut users = Vec::with_capacity(report.accepted.len());
    for (line, username, password_hash) in report.accepted {
        let mut user =
            UserRecord::new(username, password_hash, created_at).map_err(|e| e.to_string())?;
        match extra.remove(&line) {
            Some(Ok(a)) => user.attributes = a,
            Some(Err(e)) => {
                rejected.push((line, e));
                continue;
            }
            None => {}
        }
        // The store's own rules (e.g. its name length limit) may be stricter than the
        // parser's; such entries are refused here, with their line, not by the store.
        match user.validate() {
            Ok(()) => {
                lines.push(line);
                users.push(user);
            }
            Err(e) => rejected.push((line, e.to_string())),
        }
    }
    let dir = open_or_create(&args.dir).await?;
    let existing = dir.store().list_users().await;
    let existing = match existing {
        Ok(e) => e,
        Err(e) => {
            dir.close().await;
            return Err(e.to_string());
        }
    };
    let (lines, users) = uid_clashes(lines, users, &existing, &mut rejected);
    let inserted = dir.store().put_users(&users).await;
    let inserted = match inserted {
        Ok(i) => i,
        Err(e) => {
            dir.close().await;
            return Err(e.to_string());
        }
    };
    let created = dir.created().then(|| created_note(&dir));
    dir.close().await;
    if let Some(note) = created {
        eprintln!("{note}");
    }
    let mut imported = 0usize;
    for ((line, user), done) in lines.iter().zip(&users).zip(inserted) {
        if done {
            imported += 1;
        } else {
            rejected.push((
                *line,
                format!("user {:?} already exists; left unchanged", user.username),
            ));
        }
    }
    // Lines whose columns were refused never reached the hash reader.
    rejected.extend(
        extra
            .into_iter()
            .filter_map(|(l, a)| a.err().map(|e| (l, e))),
    );
    rejected.sort_by_key(|(line, _)| *line);
    for (line, reason) in &rejected {
        eprintln!("{}:{line}: {reason}", args.file.display());
    }
    println!(
        "imported {imported} user{}; {} entr{} refused",
        if imported == 1 { "" } else { "s" },
        rejected.len(),
        if rejected.len() == 1 { "y" } else { "ies" }
    );
    Ok(if rejected.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
