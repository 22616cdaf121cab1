//! `detpath generate`: writes the man pages and shell completions of this CLI,
//! from the same clap definitions that parse the command line, so they never
//! drift from `--help`. Hidden: it is for packaging (`make deb`), not users.
//!
//! ```text
//! detpath generate man DIR                 # detpath.1, detpath-bench.1, detpath-bench-server.1, ...
//! detpath generate completions bash DIR    # DIR/detpath (bash-completion's file name)
//! detpath generate completions zsh DIR     # DIR/_detpath
//! detpath generate completions fish DIR    # DIR/detpath.fish
//! ```

use anyhow::Context;
use clap::CommandFactory;
use clap_complete::Shell;
use std::path::{Path, PathBuf};

/// Arguments of `detpath generate`: what to write (man pages, or one shell's
/// completions) and into which directory.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand)]
enum What {
    /// One man page per (sub)command into DIR (section 1: detpath.1, detpath-bench.1, ...).
    #[command(after_help = crate::vocab::EXIT_0_2)]
    Man {
        /// Directory to write the pages to (created if missing).
        dir: PathBuf,
    },
    /// The completion script for SHELL into DIR, under the name that shell's loader looks for.
    #[command(after_help = crate::vocab::EXIT_0_2)]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: Shell,
        /// Directory to write the script to (created if missing).
        dir: PathBuf,
    },
}

/// The file name each shell's completion loader expects for the command `detpath`.
fn completion_file(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => "detpath",
        Shell::Zsh => "_detpath",
        Shell::Fish => "detpath.fish",
        Shell::Elvish => "detpath.elv",
        Shell::PowerShell => "_detpath.ps1",
        _ => "detpath.completion",
    }
}

fn make_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// Runs `generate` for the CLI `C` (the top-level parser, passed in by `main`).
pub fn run<C: CommandFactory>(a: Args) -> anyhow::Result<i32> {
    let cmd = C::command();
    match a.what {
        What::Man { dir } => {
            make_dir(&dir)?;
            // Recurses into every visible subcommand; hidden ones (this one) get no page.
            clap_mangen::generate_to(cmd, &dir).with_context(|| format!("writing man pages to {}", dir.display()))?;
            let mut pages: Vec<String> = std::fs::read_dir(&dir)?.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
            pages.sort();
            println!("{} man page(s) in {}", pages.len(), dir.display());
        }
        What::Completions { shell, dir } => {
            make_dir(&dir)?;
            let path = dir.join(completion_file(shell));
            let mut file = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
            let mut cmd = cmd;
            clap_complete::generate(shell, &mut cmd, "detpath", &mut file);
            println!("{shell} completion in {}", path.display());
        }
    }
    Ok(0)
}
