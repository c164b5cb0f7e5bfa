//! `vecflow`: the command-line front end.
//!
//! - `vecflow run` is the daemon: it forwards between real interfaces until stopped.
//! - `vecflow ctl` talks to a running daemon through its API socket; `vecflow plan` and
//!   `vecflow apply` change it to what a configuration file says.
//! - `vecflow demo` runs the example lab on generator interfaces and shows what flows.
//! - `vecflow bench` measures cycles per packet of the forwarding paths and the sFlow codec.
//! - `vecflow collect` receives sFlow and prints it or summarises it with estimates.
//! - `vecflow check` validates a configuration file offline.
//! - `vecflow generate` writes the man pages and shell completions (for packages).

#![deny(clippy::undocumented_unsafe_blocks)]

mod bench;
mod check;
mod classifier_bench;
mod codec_bench;
mod collect;
mod ctl;
mod declare;
mod demo;
mod generate;
mod metrics;
mod run;
mod sample_bench;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

/// Userspace vector packet dataplane with a built-in sFlow v5 agent.
#[derive(Parser)]
#[command(name = "vecflow", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the dataplane from a YAML configuration until SIGINT or SIGTERM (or, replaying
    /// captures, until they end).
    Run(run::Args),
    /// Talk to a running `vecflow run`: one command (`vecflow ctl show runtime`) or a console.
    Ctl(ctl::Args),
    /// Show what applying a configuration file to the running daemon would change.
    Plan(declare::Args),
    /// Apply a configuration file to the running daemon, all or nothing.
    Apply(declare::Args),
    /// Run a lab config on generator interfaces for a while and show what flowed.
    Demo(demo::Args),
    /// Measure cycles per packet of the forwarding paths (one worker, in memory) and the sFlow codec.
    Bench(bench::Args),
    /// Receive sFlow (UDP or pcap) and print it, or summarise it with estimates and error bounds.
    Collect(collect::Args),
    /// Validate a configuration file without a running daemon (as `run` reads it at start).
    Check(check::Args),
    /// Write the man pages or a shell's completions (what a package installs).
    Generate(generate::Args),
}

fn main() -> ExitCode {
    // Like other Unix tools, end quietly when the reader of our output goes away
    // (`vecflow collect | head`) instead of failing on a broken pipe.
    // SAFETY: resetting a signal to its default action at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Ctl(a) => ctl::run(a),
        Command::Plan(a) => declare::run(a, false),
        Command::Apply(a) => declare::run(a, true),
        Command::Demo(a) => demo::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Collect(a) => collect::run(a),
        Command::Check(a) => check::run(a),
        Command::Generate(a) => generate::run(a, Cli::command()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vecflow: {e:#}");
            ExitCode::FAILURE
        }
    }
}
