//! `portcullis group add | remove | set | member add | member remove | list | show`:
//! groups of users in the embedded store (`--data-dir`), as an LDAP door shows them
//! (issue 39): a name, an optional POSIX `gidNumber`, a description and members.

use std::process::ExitCode;

use portcullis_store::{GroupRecord, StoreError};

use super::common::{DataDirArg, block_on, now, open, print_table};

/// `portcullis group` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum GroupCommand {
    /// Add a group (optionally with members, each an existing user).
    Add(AddArgs),
    /// Remove a group (its members stay users).
    Remove(NameArgs),
    /// Set or clear a group's gidNumber and description.
    Set(SetArgs),
    /// Add or remove members.
    #[command(subcommand)]
    Member(MemberCommand),
    /// List groups with their members.
    List(ListArgs),
    /// Show one group.
    Show(ShowArgs),
}

/// `portcullis group member` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum MemberCommand {
    /// Make users members of a group.
    Add(MemberArgs),
    /// End users' membership of a group.
    Remove(MemberArgs),
}

/// Arguments of `group add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The group name (1-255 characters, no control characters).
    name: String,
    /// POSIX gidNumber (1-2147483647, unique among groups).
    #[arg(long)]
    gid_number: Option<u32>,
    /// A description.
    #[arg(long)]
    description: Option<String>,
    /// A member's username (repeatable).
    #[arg(long = "member")]
    members: Vec<String>,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `group set`.
#[derive(Debug, clap::Args)]
pub struct SetArgs {
    /// The group name.
    name: String,
    /// New gidNumber.
    #[arg(long, conflicts_with = "clear_gid_number")]
    gid_number: Option<u32>,
    /// Clear the gidNumber.
    #[arg(long)]
    clear_gid_number: bool,
    /// New description.
    #[arg(long, conflicts_with = "clear_description")]
    description: Option<String>,
    /// Clear the description.
    #[arg(long)]
    clear_description: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// A group, users and the data directory.
#[derive(Debug, clap::Args)]
pub struct MemberArgs {
    /// The group name.
    group: String,
    /// Usernames.
    #[arg(required = true)]
    users: Vec<String>,
    #[command(flatten)]
    dir: DataDirArg,
}

/// A group name and the data directory.
#[derive(Debug, clap::Args)]
pub struct NameArgs {
    /// The group name.
    name: String,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `group list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print JSON (one array of objects) instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Arguments of `group show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The group name.
    name: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dir: DataDirArg,
}

/// Run a `group` subcommand.
pub fn run(cmd: GroupCommand) -> ExitCode {
    block_on(async move {
        match cmd {
            GroupCommand::Add(a) => add(a).await,
            GroupCommand::Remove(a) => remove(a).await,
            GroupCommand::Set(a) => set(a).await,
            GroupCommand::Member(MemberCommand::Add(a)) => members(a, true).await,
            GroupCommand::Member(MemberCommand::Remove(a)) => members(a, false).await,
            GroupCommand::List(a) => list(a).await,
            GroupCommand::Show(a) => show(a).await,
        }
    })
}

fn json(g: &GroupRecord) -> serde_json::Value {
    serde_json::json!({
        "name": g.name,
        "gid_number": g.gid_number,
        "description": g.description,
        "members": g.members,
        "created_at": g.created_at,
    })
}

fn not_found(name: &str) -> String {
    StoreError::NotFound(format!("group {name:?}")).to_string()
}

async fn add(args: AddArgs) -> Result<ExitCode, String> {
    let mut members = args.members;
    members.sort();
    members.dedup();
    let group = GroupRecord {
        name: args.name,
        gid_number: args.gid_number,
        description: args.description,
        members,
        created_at: now(),
    };
    group.validate().map_err(|e| e.to_string())?;
    let dir = open(&args.dir).await?;
    let r = dir.store().put_group(&group).await;
    dir.close().await;
    r.map_err(|e| e.to_string())?;
    eprintln!("portcullis: group {:?} added.", group.name);
    Ok(ExitCode::SUCCESS)
}

async fn remove(args: NameArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let r = dir.store().remove_group(&args.name).await;
    dir.close().await;
    if !r.map_err(|e| e.to_string())? {
        return Err(not_found(&args.name));
    }
    eprintln!("portcullis: group {:?} removed.", args.name);
    Ok(ExitCode::SUCCESS)
}

async fn set(args: SetArgs) -> Result<ExitCode, String> {
    let nothing = args.gid_number.is_none()
        && args.description.is_none()
        && !args.clear_gid_number
        && !args.clear_description;
    if nothing {
        return Err("nothing to set: give --gid-number, --description or a --clear-* flag".into());
    }
    let dir = open(&args.dir).await?;
    let store = dir.store();
    let r = async {
        let g = store.get_group(&args.name).await?;
        let Some(g) = g else {
            return Err(StoreError::NotFound(format!("group {:?}", args.name)));
        };
        let gid = if args.clear_gid_number {
            None
        } else {
            args.gid_number.or(g.gid_number)
        };
        let description = if args.clear_description {
            None
        } else {
            args.description.or(g.description)
        };
        store
            .set_group_details(&args.name, gid, description.as_deref())
            .await
    }
    .await;
    dir.close().await;
    r.map_err(|e| e.to_string())?;
    eprintln!("portcullis: group {:?} changed.", args.name);
    Ok(ExitCode::SUCCESS)
}

async fn members(args: MemberArgs, add: bool) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let store = dir.store();
    let mut changed = 0usize;
    let mut result = Ok(());
    for u in &args.users {
        let r = if add {
            store.add_group_member(&args.group, u).await
        } else {
            store.remove_group_member(&args.group, u).await
        };
        match r {
            Ok(true) => changed += 1,
            Ok(false) if add => eprintln!("portcullis: {u:?} is a member already."),
            Ok(false) => eprintln!("portcullis: {u:?} was not a member."),
            Err(e) => {
                result = Err(e.to_string());
                break;
            }
        }
    }
    dir.close().await;
    result?;
    eprintln!(
        "portcullis: group {:?}: {changed} member{} {}.",
        args.group,
        if changed == 1 { "" } else { "s" },
        if add { "added" } else { "removed" }
    );
    Ok(ExitCode::SUCCESS)
}

async fn list(args: ListArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let groups = dir.store().list_groups().await;
    dir.close().await;
    let groups = groups.map_err(|e| e.to_string())?;
    if args.json {
        println!(
            "{}",
            serde_json::Value::Array(groups.iter().map(json).collect())
        );
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 3]> = groups
        .iter()
        .map(|g| {
            [
                g.name.clone(),
                g.gid_number
                    .map_or_else(|| "-".to_owned(), |n| n.to_string()),
                g.members.join(","),
            ]
        })
        .collect();
    print_table(&["GROUP", "GID", "MEMBERS"], &rows);
    Ok(ExitCode::SUCCESS)
}

async fn show(args: ShowArgs) -> Result<ExitCode, String> {
    let dir = open(&args.dir).await?;
    let g = dir.store().get_group(&args.name).await;
    dir.close().await;
    let g = g
        .map_err(|e| e.to_string())?
        .ok_or_else(|| not_found(&args.name))?;
    if args.json {
        println!("{}", json(&g));
        return Ok(ExitCode::SUCCESS);
    }
    let rows = vec![
        ["name".to_owned(), g.name.clone()],
        [
            "gidNumber".to_owned(),
            g.gid_number
                .map_or_else(|| "-".to_owned(), |n| n.to_string()),
        ],
        [
            "description".to_owned(),
            g.description.clone().unwrap_or_default(),
        ],
        ["members".to_owned(), g.members.join(", ")],
    ];
    print_table(&["ATTRIBUTE", "VALUE"], &rows);
    Ok(ExitCode::SUCCESS)
}
