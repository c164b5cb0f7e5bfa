//! `vecflow demo`: runs a lab configuration for a while, prints a status line per second and
//! ends with `show interface`, `show errors`, `show runtime` and, when the lab has sFlow, `show
//! sflow` and what a collector made of it: the lab's sFlow goes over real UDP to a collector
//! (`collect --summary`) running in this process, and the demo ends with its report and
//! estimated against true packets per sampled interface, with the 95 % error bound.

use crate::collect::summary::Summary;
use anyhow::Context;
use dataplane::config::Collector;
use dataplane::control::cli::Registry;
use dataplane::{Config, Dataplane};
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
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
    /// Where sFlow goes and the in-process collector listens (replaces the config's collectors).
    #[arg(long, default_value = "127.0.0.1:6343")]
    collector: SocketAddr,
}

/// Runs the demo.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (text, source) = match &args.config {
        Some(p) => {
            (std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?, p.display().to_string())
        }
        None => (LAB_YAML.to_string(), "examples/lab.yaml (built in)".to_string()),
    };
    let mut config = Config::load(&text).with_context(|| format!("in {source}"))?;
    let collector = match &mut config.sflow {
        Some(sf) => {
            sf.collectors = vec![Collector { address: args.collector.ip(), port: args.collector.port() }];
            Some(InProcessCollector::start(args.collector).with_context(|| format!("--collector {}", args.collector))?)
        }
        None => None,
    };
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
    let mut commands = vec!["show interface", "show errors", "show runtime"];
    if collector.is_some() {
        commands.push("show sflow");
    }
    for cmd in commands {
        let reply = registry.execute(&mut dp, cmd).map_err(anyhow::Error::msg)?;
        println!("\nvecflow# {cmd}\n{}", reply.text);
    }
    if let Some(c) = collector {
        let summary = c.finish();
        let report = summary.report(10);
        println!("\n== what the collector on {} saw (vecflow collect --summary)\n{}", args.collector, report.text());
        println!("{}", estimates_vs_truth(&dp, &report));
    }
    Ok(())
}

/// A `collect --summary` collector on a UDP port, in a thread of this process.
struct InProcessCollector {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Summary>,
}

impl InProcessCollector {
    fn start(at: SocketAddr) -> anyhow::Result<Self> {
        let socket = UdpSocket::bind(at)
            .context("binding the in-process collector (is the port in use? pick another with --collector)")?;
        socket.set_read_timeout(Some(Duration::from_millis(100)))?;
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut summary = Summary::default();
            let mut buf = [0u8; 65536];
            loop {
                match socket.recv(&mut buf) {
                    Ok(n) => match sflow::decode(&buf[..n]) {
                        Ok(d) => summary.add(&d),
                        Err(_) => summary.error(),
                    },
                    Err(_) if st.load(Relaxed) => break,
                    Err(_) => {}
                }
            }
            summary
        });
        Ok(InProcessCollector { stop, thread })
    }

    /// Stops listening (after the datagrams already queued) and returns the summary.
    fn finish(self) -> Summary {
        self.stop.store(true, Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// Per sampled interface: what the dataplane counted against what the samples estimate.
fn estimates_vs_truth(dp: &Dataplane, report: &crate::collect::summary::Report) -> String {
    use std::fmt::Write;
    let mut out = String::from("== estimated vs true packets per sampled interface (received, 95 % bound 196/√c)\n");
    let _ = writeln!(
        out,
        "{:<12} {:>12} {:>12} {:>9} {:>9} {:>9}",
        "interface", "true", "estimated", "samples", "error %", "bound %"
    );
    let Some((_, _, rows)) = dp.sflow() else { return out };
    for r in rows.iter().filter(|r| r.sampler.taken > 0) {
        let Some(i) = report.interfaces.iter().find(|i| i.source == format!("0:{}", r.if_index)) else { continue };
        let truth = dp.interface_stats(r.if_index).rx_packets as f64;
        let e = &i.ingress;
        let err = 100.0 * (e.packets - truth).abs() / truth.max(1.0);
        let _ = writeln!(
            out,
            "{:<12} {:>12.0} {:>12.0} {:>9} {:>9.2} {:>9.2}",
            r.interface,
            truth,
            e.packets,
            e.samples,
            err,
            e.error_pct()
        );
    }
    out
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
