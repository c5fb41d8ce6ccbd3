//! `portcullis generate man DIR` / `generate completions DIR` (hidden): the man pages
//! (clap_mangen, one per command and subcommand) and shell completions (clap_complete:
//! bash, zsh, fish) from the same clap tree the binary parses, so they never drift from
//! `--help`. `scripts/deb` runs it when packaging; no build script slows other builds.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap_complete::Shell;

/// What to generate.
#[derive(Debug, clap::Subcommand)]
pub enum GenerateCommand {
    /// Write portcullis.1 and portcullis-SUB[-SUB].1 for every subcommand into DIR.
    Man {
        /// Output directory (created).
        dir: PathBuf,
    },
    /// Write portcullis.bash, _portcullis (zsh) and portcullis.fish into DIR.
    Completions {
        /// Output directory (created).
        dir: PathBuf,
    },
}

/// Run `portcullis generate`; `cmd` is the binary's whole clap command.
pub fn run(what: GenerateCommand, cmd: clap::Command) -> ExitCode {
    let result = match what {
        GenerateCommand::Man { dir } => man(cmd, &dir),
        GenerateCommand::Completions { dir } => completions(cmd, &dir),
    };
    match result {
        Ok(n) => {
            println!("wrote {n} files");
            ExitCode::SUCCESS
        }
        Err(e) => super::fail(e),
    }
}

fn create(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

fn man(cmd: clap::Command, dir: &Path) -> Result<usize, String> {
    create(dir)?;
    let mut cmd = cmd;
    // Subcommands get their full names ("portcullis-hash-create") only once built.
    cmd.build();
    let mut written = 0;
    write_pages(&cmd, dir, &mut written)?;
    Ok(written)
}

fn write_pages(cmd: &clap::Command, dir: &Path, written: &mut usize) -> Result<(), String> {
    if cmd.is_hide_set() {
        return Ok(());
    }
    let name = cmd
        .get_display_name()
        .unwrap_or_else(|| cmd.get_name())
        .to_owned();
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .title(name.to_uppercase())
        .render(&mut page)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(&path, page).map_err(|e| format!("{}: {e}", path.display()))?;
    *written += 1;
    for sub in cmd.get_subcommands() {
        if sub.get_name() != "help" {
            write_pages(sub, dir, written)?;
        }
    }
    Ok(())
}

fn completions(cmd: clap::Command, dir: &Path) -> Result<usize, String> {
    create(dir)?;
    let mut cmd = cmd;
    let mut written = 0;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut cmd, "portcullis", dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        written += 1;
    }
    Ok(written)
}
