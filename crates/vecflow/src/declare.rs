//! `vecflow plan` and `vecflow apply`: the configuration file as the source of truth.
//!
//! `plan -c new.yaml` prints what applying the file to the running daemon would change, as
//! the commands that would make the change (nothing when it already runs that). `apply -c
//! new.yaml` sends the file to the daemon, which validates all of it first and then applies
//! it all or nothing; it prints the commands it applied. `vecflow ctl show config` prints the
//! running configuration in the form both take.

use anyhow::Context;
use api::DEFAULT_SOCKET;
use api::client::{CallError, Client};
use std::path::PathBuf;

/// Options of `vecflow plan` and `vecflow apply`.
#[derive(clap::Args)]
pub struct Args {
    /// The configuration file (YAML) the daemon should run.
    #[arg(short = 'c', long)]
    config: PathBuf,
    /// The daemon's API socket.
    #[arg(long, default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Plans (`apply` false) or applies the file.
pub fn run(args: Args, apply: bool) -> anyhow::Result<()> {
    let source = args.config.display().to_string();
    let yaml = std::fs::read_to_string(&args.config).with_context(|| format!("reading {source}"))?;
    let mut client = Client::connect(&args.socket)?;
    let method = if apply { "apply" } else { "plan" };
    let result = client.call(method, serde_json::json!({ "config": yaml })).map_err(|e| match e {
        CallError::Api(e) => anyhow::anyhow!("{source}: {}", e.message),
        CallError::Transport(e) => e,
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result["json"])?);
    } else {
        let text = result["text"].as_str().unwrap_or_default();
        match (text.is_empty(), apply) {
            (true, _) => println!("no changes: vecflow runs {source} already"),
            (false, true) => print!("applied:\n{text}"),
            (false, false) => print!("{text}"),
        }
    }
    Ok(())
}
