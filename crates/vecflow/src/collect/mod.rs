//! `vecflow collect`: an sFlow collector. Listens on UDP (IPv4 and IPv6) or reads a pcap file,
//! prints each datagram as sflowtool-style text or as JSON lines, or (`--summary`) prints
//! per-agent, per-interface and top-N flow estimates with their error bounds at the end.

mod accumulate;
mod capped;
mod direction;
mod escape;
mod input;
mod limits;
mod packet;
mod polled;
mod reasons;
mod report;
mod sequence;
pub mod summary;
mod text;

use anyhow::Context;
use serde_json::json;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};
use summary::Summary;

/// Options of `vecflow collect`.
#[derive(clap::Args)]
pub struct Args {
    /// UDP port to listen on (default 6343; 0 lets the kernel pick a free one, printed on
    /// standard error); with --pcap, the destination port that selects datagrams (default: any
    /// UDP datagram that starts like sFlow v5).
    #[arg(long)]
    port: Option<u16>,
    /// Address to listen on. Default: [::] (IPv6 and IPv4), or 0.0.0.0 where IPv6 is off.
    #[arg(long)]
    bind: Option<IpAddr>,
    /// Read datagrams from this pcap file (Ethernet, Linux cooked or raw IP) instead of listening.
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    /// Print one JSON object per line instead of text.
    #[arg(long)]
    json: bool,
    /// Print no datagrams; at the end print per-agent, per-interface and top-N flow estimates
    /// with their 95 % error bounds, and counter deltas.
    #[arg(long)]
    summary: bool,
    /// Flows in the summary's top list.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Stop after this many datagrams.
    #[arg(long)]
    count: Option<u64>,
    /// Stop after this many seconds (listening only).
    #[arg(long)]
    duration: Option<f64>,
}

/// Where a datagram came from and when.
pub struct Received<'a> {
    /// Sender.
    pub from: SocketAddr,
    /// Seconds since the UNIX epoch.
    pub unix_secs: u64,
    /// The UDP payload.
    pub bytes: &'a [u8],
}

/// Handles each datagram: prints it or adds it to the summary.
struct Sink {
    json: bool,
    summary: Option<Summary>,
    out: std::io::BufWriter<std::io::Stdout>,
    text: String,
}

impl Sink {
    fn handle(&mut self, r: &Received<'_>) -> std::io::Result<()> {
        let decoded = sflow::decode(r.bytes);
        if let Some(s) = &mut self.summary {
            match &decoded {
                Ok(d) => s.add(d),
                Err(_) => s.error(),
            }
            return Ok(());
        }
        match (decoded, self.json) {
            (Ok(d), true) => {
                let line = json!({"source": r.from.to_string(), "unix_secs": r.unix_secs, "size": r.bytes.len(), "datagram": d});
                writeln!(self.out, "{line}")?;
            }
            (Ok(d), false) => {
                self.text.clear();
                text::datagram(&mut self.text, r.from, r.unix_secs, r.bytes.len(), &d);
                self.out.write_all(self.text.as_bytes())?;
            }
            (Err(e), true) => {
                let line = json!({"source": r.from.to_string(), "unix_secs": r.unix_secs, "size": r.bytes.len(), "error": e.to_string()});
                writeln!(self.out, "{line}")?;
            }
            (Err(e), false) => eprintln!("vecflow collect: datagram from {} ({} bytes): {e}", r.from, r.bytes.len()),
        }
        self.out.flush()
    }
}

/// Runs the collector.
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.duration.is_some_and(|d| !(d > 0.0 && d <= 31_536_000.0)) {
        anyhow::bail!("--duration must be more than 0 and at most a year, in seconds");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    ctrlc::set_handler(move || s.store(true, Ordering::Relaxed)).context("installing the Ctrl-C handler")?;
    let mut sink = Sink {
        json: args.json,
        summary: args.summary.then(Summary::default),
        out: std::io::BufWriter::new(std::io::stdout()),
        text: String::new(),
    };
    let limit = args.count.unwrap_or(u64::MAX);
    let mut seen = 0u64;
    let mut on_datagram = |r: &Received<'_>| -> anyhow::Result<bool> {
        sink.handle(r)?;
        seen += 1;
        Ok(seen < limit)
    };
    match &args.pcap {
        Some(path) => input::pcap(path, args.port, &mut on_datagram)?,
        None => {
            let deadline = args.duration.map(|d| std::time::Instant::now() + Duration::from_secs_f64(d));
            input::udp(args.bind, args.port.unwrap_or(sflow::DEFAULT_PORT), &stop, deadline, &mut on_datagram)?;
        }
    }
    if let Some(s) = &sink.summary {
        let report = s.report(args.top);
        if args.json {
            writeln!(sink.out, "{}", serde_json::to_string(&report)?)?;
        } else {
            sink.out.write_all(report.text().as_bytes())?;
        }
    }
    sink.out.flush()?;
    Ok(())
}

/// Seconds since the UNIX epoch, now.
fn now_unix() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
