//! `vecflow collect`: an sFlow collector. Listens on UDP (IPv4 and IPv6) or reads a pcap file,
//! prints each datagram as sflowtool-style text or as JSON lines, or (`--summary`) prints
//! per-agent, per-interface and top-N flow estimates with their error bounds at the end, or
//! (`--kafka`) produces every sample as a row to Kafka, the decoder tier of the flow pipeline.

mod accumulate;
mod capped;
mod direction;
mod escape;
mod input;
mod kafka;
mod limits;
mod packet;
mod polled;
mod reasons;
mod report;
mod rows;
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
    /// Share the UDP port with other `vecflow collect` instances (SO_REUSEPORT): the kernel
    /// gives each sender to one of them, and a stopping one's senders to the others.
    #[arg(long)]
    reuse_port: bool,
    /// The UDP socket's receive buffer in bytes, which takes bursts and the pauses of a busy
    /// host (beyond net.core.rmem_max only with CAP_NET_ADMIN; a smaller one is reported).
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20, value_parser = clap::value_parser!(u32).range(65536..=1 << 30))]
    receive_buffer: u32,
    /// Produce every flow, discard and counter sample as a JSON row to these Kafka brokers
    /// (`host:port[,host:port…]`), one message each keyed by its agent, with
    /// acknowledgements from all in-sync replicas; prints nothing on standard output.
    #[arg(long, value_name = "BROKERS", conflicts_with_all = ["json", "summary"])]
    kafka: Option<String>,
    /// The Kafka topic; with several (comma-separated), each agent's datagrams always go to
    /// the same one (one topic per ClickHouse shard).
    #[arg(long, value_name = "TOPIC[,TOPIC...]", default_value = "flows", value_delimiter = ',', requires = "kafka")]
    topic: Vec<String>,
    /// A librdkafka producer setting, applied after vecflow's own (repeatable), e.g.
    /// `--kafka-option linger.ms=50`.
    #[arg(long = "kafka-option", value_name = "KEY=VALUE", value_parser = key_value, requires = "kafka")]
    kafka_option: Vec<(String, String)>,
}

/// Parses `KEY=VALUE`.
fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{s}: expected KEY=VALUE (a librdkafka setting, such as linger.ms=50)")),
    }
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

/// Handles each datagram: prints it, adds it to the summary or produces its rows to Kafka.
struct Sink {
    json: bool,
    summary: Option<Summary>,
    kafka: Option<kafka::Sink>,
    out: std::io::BufWriter<std::io::Stdout>,
    text: String,
    /// A row for Kafka.
    rows: Vec<u8>,
    /// Datagrams handled, and of them not decodable.
    datagrams: u64,
    errors: u64,
}

impl Sink {
    fn handle(&mut self, r: &Received<'_>) -> anyhow::Result<()> {
        let decoded = sflow::decode(r.bytes);
        self.datagrams += 1;
        self.errors += u64::from(decoded.is_err());
        if let Some(k) = &mut self.kafka {
            match &decoded {
                Ok(d) => {
                    let to = k.route(d.agent);
                    rows::each_row(&mut self.rows, r.unix_secs, d, |row| k.send(&to, row));
                }
                Err(e) => eprintln!("vecflow collect: datagram from {} ({} bytes): {e}", r.from, r.bytes.len()),
            }
            return Ok(());
        }
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
        Ok(self.out.flush()?)
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
    let kafka = match &args.kafka {
        Some(brokers) => Some(kafka::Sink::open(kafka::Options {
            brokers: brokers.clone(),
            topics: args.topic.clone(),
            settings: args.kafka_option.clone(),
        })?),
        None => None,
    };
    let mut sink = Sink {
        json: args.json,
        summary: args.summary.then(Summary::default),
        kafka,
        out: std::io::BufWriter::new(std::io::stdout()),
        text: String::new(),
        rows: Vec::new(),
        datagrams: 0,
        errors: 0,
    };
    let limit = args.count.unwrap_or(u64::MAX);
    let mut seen = 0u64;
    let mut on_datagram = |r: &Received<'_>| -> anyhow::Result<bool> {
        sink.handle(r)?;
        seen += 1;
        Ok(seen < limit)
    };
    let received = match &args.pcap {
        Some(path) => input::pcap(path, args.port, &mut on_datagram),
        None => {
            let deadline = args.duration.map(|d| std::time::Instant::now() + Duration::from_secs_f64(d));
            let listen = input::Listen {
                addr: args.bind,
                port: args.port.unwrap_or(sflow::DEFAULT_PORT),
                reuse_port: args.reuse_port,
                receive_buffer: args.receive_buffer as usize,
            };
            input::udp(&listen, &stop, deadline, &mut on_datagram)
        }
    };
    if let Some(k) = sink.kafka.take() {
        // However the run ended, what was produced gets its minute to reach Kafka.
        eprintln!("vecflow collect: {} datagrams received, {} not decodable", sink.datagrams, sink.errors);
        let finished = k.finish();
        received?;
        return finished;
    }
    received?;
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
