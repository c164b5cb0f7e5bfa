//! `vecflow check -c FILE`: validates a configuration without a running daemon (unlike
//! `plan`), the way `run` would read it at start: every key, value, range and
//! cross-reference. What only the running machine can tell (does a host interface exist, is
//! a port free) is left to `run`, which names the field too.

use anyhow::Context;
use dataplane::Config;
use std::path::PathBuf;

/// Options of `vecflow check`.
#[derive(clap::Args)]
pub struct Args {
    /// The configuration file (YAML) to check.
    #[arg(short = 'c', long)]
    config: PathBuf,
}

/// Prints `FILE: ok` and a one-line summary, or fails with the error naming the field.
pub fn run(args: Args) -> anyhow::Result<()> {
    let source = args.config.display().to_string();
    let text = std::fs::read_to_string(&args.config).with_context(|| format!("reading {source}"))?;
    let config = Config::load(&text).with_context(|| source.clone())?;
    println!(
        "{source}: ok ({} interface(s), {} route(s), {} neighbor(s), {} worker(s), sFlow {})",
        config.interfaces.len(),
        config.routes.len(),
        config.neighbors.len(),
        config.workers.count,
        if config.sflow.is_some() { "on" } else { "off" }
    );
    Ok(())
}
