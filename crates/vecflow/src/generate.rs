//! `vecflow generate`: the man pages (`vecflow.1`, `vecflow-run.1`, one per subcommand) and
//! the bash and zsh completions, generated from the same clap definitions the program parses
//! with, so they never drift from it. `scripts/build-deb.sh` runs it to fill the package.

use anyhow::Context;
use clap_complete::Shell;
use std::path::PathBuf;

/// Options of `vecflow generate`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

/// What to generate.
#[derive(clap::Subcommand)]
enum What {
    /// Write the man pages (section 1) into DIR.
    Man {
        /// Directory to write `vecflow.1` and `vecflow-SUBCOMMAND.1` into (created if missing).
        dir: PathBuf,
    },
    /// Print the completion script of SHELL to stdout.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: Shell,
    },
}

/// Generates what `args` asks for from `cli`, the program's command definition.
pub fn run(args: Args, cli: clap::Command) -> anyhow::Result<()> {
    match args.what {
        What::Man { dir } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(cli, &dir).with_context(|| format!("writing man pages into {}", dir.display()))?;
        }
        What::Completions { shell } => {
            let mut cli = cli;
            clap_complete::generate(shell, &mut cli, "vecflow", &mut std::io::stdout());
        }
    }
    Ok(())
}
