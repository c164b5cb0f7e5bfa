//! `vecflow demo`: runs a lab configuration for a while, prints a status line per second and
//! ends with `show interface`, `show errors` and `show runtime`.

use anyhow::Context;
use dataplane::cli::Registry;
use dataplane::{Config, Dataplane};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The lab the demo runs when no `--config` is given.
pub const LAB_YAML: &str = include_str!("../../../examples/lab.yaml");

/// Options of `vecflow demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Seconds to run.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    duration: u64,
    /// Configuration file (YAML); default: the built-in copy of examples/lab.yaml.
    #[arg(long)]
    config: Option<PathBuf>,
}

/// Runs the demo.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (text, source) = match &args.config {
        Some(p) => {
            (std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?, p.display().to_string())
        }
        None => (LAB_YAML.to_string(), "examples/lab.yaml (built in)".to_string()),
    };
    let config = Config::load(&text).with_context(|| format!("in {source}"))?;
    let mut dp = Dataplane::start(&config).with_context(|| format!("starting {source}"))?;
    println!(
        "vecflow demo: {} interfaces, {} worker(s), {} s — config {source}",
        dp.interfaces().len(),
        config.workers.count,
        args.duration
    );
    let start = Instant::now();
    let mut prev = totals(&dp);
    for sec in 1..=args.duration {
        std::thread::sleep((start + Duration::from_secs(sec)).saturating_duration_since(Instant::now()));
        let now = totals(&dp);
        println!(
            "[{sec:>3}s] rx {:>7.3} Mpps  tx {:>7.3} Mpps  tx {:>8.1} Mbit/s  drops {:>9}/s",
            (now.0 - prev.0) as f64 / 1e6,
            (now.1 - prev.1) as f64 / 1e6,
            (now.2 - prev.2) as f64 * 8.0 / 1e6,
            now.3 - prev.3
        );
        prev = now;
    }
    dp.stop().context("stopping workers")?;
    let registry = Registry::with_builtins();
    for cmd in ["show interface", "show errors", "show runtime"] {
        let reply = registry.execute(&dp, cmd).map_err(anyhow::Error::msg)?;
        println!("\nvecflow# {cmd}\n{}", reply.text);
    }
    Ok(())
}

/// (rx packets, tx packets, tx octets, drops) over all interfaces.
fn totals(dp: &Dataplane) -> (u64, u64, u64, u64) {
    dp.interfaces().iter().map(|i| dp.interface_stats(i.index)).fold((0, 0, 0, 0), |a, s| {
        (
            a.0 + s.rx_packets,
            a.1 + s.tx_packets,
            a.2 + s.tx_octets,
            a.3 + s.in_discards + s.in_errors + s.in_unknown_protos + s.out_discards,
        )
    })
}
